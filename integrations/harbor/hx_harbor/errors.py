"""hx's failures as Harbor's exception classes.

Harbor's retry policy and reports key on the exception's type (`harbor run --max-retries 3
--retry-include ApiRateLimitError`), so a rate limit must surface as ApiRateLimitError, not as
a generic non-zero exit. An hx whose `turn.failed` carries `error.kind` and `error.status` is
classified from them; an older hx, whose error is a message only, from the message: the
status hx puts in it (`API error 429: ...`) first, then its wording.
"""

import re

from harbor.agents.installed.base import (
    AgentAuthenticationError,
    ApiConnectionClosedError,
    ApiInternalServerError,
    ApiOverloadedError,
    ApiRateLimitError,
    ApiUsageLimitError,
    ContextWindowExceededError,
    ModelNotFoundError,
    NetworkConnectionError,
    NonZeroAgentExitCodeError,
    UnknownApiError,
)

from hx_harbor.events import Failure

type ErrorClass = type[NonZeroAgentExitCodeError]

# `turn.failed`'s `error.kind`, as hx names it. Kinds that are not a provider's answer (a
# hook that stopped the run, a signal, hx's own response limits) stay generic: no retry
# policy should take them for a flaky API.
KINDS: dict[str, ErrorClass] = {
    "rate_limit": ApiRateLimitError,
    "quota": ApiUsageLimitError,
    "overloaded": ApiOverloadedError,
    "server": ApiInternalServerError,
    "context_overflow": ContextWindowExceededError,
    "auth": AgentAuthenticationError,
    "not_found": ModelNotFoundError,
    "bad_request": UnknownApiError,
    "network": NetworkConnectionError,
    # The server reported an error inside a 200 stream: Harbor's "Server error mid-response".
    "stream": ApiInternalServerError,
    "response_limit": NonZeroAgentExitCodeError,
    "max_turns": NonZeroAgentExitCodeError,
    "max_cost": NonZeroAgentExitCodeError,
    "loop": NonZeroAgentExitCodeError,
    "hook": NonZeroAgentExitCodeError,
    "interrupted": NonZeroAgentExitCodeError,
}

# A provider that says "quota" or "balance" in a 429 (DeepSeek's 402, OpenAI's
# insufficient_quota) means an exhausted account, which no retry fixes.
_QUOTA = re.compile(r"quota|insufficient.?balance|insufficient_quota|billing|credit", re.I)
_OVERFLOW = re.compile(
    r"maximum context length|context.?window|context_length_exceeded|too many tokens"
    r"|prompt is too long|cannot fit",
    re.I,
)
# hx's own words for a connection that was never made (src/model/client/describe.rs),
# and for one lost on the way.
_NETWORK = re.compile(
    r"cannot connect to|connection refused|cannot resolve|dns error|connect(?:ion)? timed out"
    r"|no answer from",
    re.I,
)
_CLOSED = re.compile(r"connection (?:closed|reset)|stream ended|unexpected eof", re.I)
_STATUS = re.compile(r"\bAPI error (\d{3})\b")
# hx's words for an error the server reported inside a 200 stream (ModelError::Stream).
_IN_STREAM = re.compile(r"\bAPI error in stream\b")


def from_status(status: int, message: str) -> ErrorClass | None:
    """The class of an HTTP status from the provider."""
    if status == 429:
        return ApiUsageLimitError if _QUOTA.search(message) else ApiRateLimitError
    if status == 402:
        return ApiUsageLimitError
    if status in (401, 403):
        return AgentAuthenticationError
    if status == 404:
        return ModelNotFoundError
    if status in (400, 413, 422) and _OVERFLOW.search(message):
        return ContextWindowExceededError
    if status == 500:
        return ApiInternalServerError
    if status in (502, 503, 504, 529):
        return ApiOverloadedError
    if 400 <= status < 600:
        return UnknownApiError
    return None


def classify(failure: Failure) -> ErrorClass:
    """The Harbor exception class for a run that gave no answer."""
    if failure.kind is not None and failure.kind in KINDS:
        by_kind = KINDS[failure.kind]
        # A 429 that is an exhausted account is a usage limit whatever the kind says.
        if by_kind is ApiRateLimitError and _QUOTA.search(failure.message):
            return ApiUsageLimitError
        return by_kind
    status = failure.status
    if status is None and (match := _STATUS.search(failure.message)):
        status = int(match.group(1))
    if status is not None and (by_status := from_status(status, failure.message)):
        return by_status
    if _OVERFLOW.search(failure.message):
        return ContextWindowExceededError
    if _IN_STREAM.search(failure.message):
        return ApiInternalServerError
    if _NETWORK.search(failure.message):
        return NetworkConnectionError
    if _CLOSED.search(failure.message):
        return ApiConnectionClosedError
    return NonZeroAgentExitCodeError
