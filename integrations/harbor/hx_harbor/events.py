"""What an `hx agent --json` run said about itself, read from its JSON Lines.

The stream's schema is in hx's README ("For programs: --json"). Only the events that
describe the run as a whole are read here: `thread.started` (the session id, which
`hx sessions export` takes), `turn.completed` / `turn.failed` (the run's usage and cost) and
`error` without `retry` (a run that could not start). Items carry tool output and model
text, which must never be mistaken for hx's own words about a failure.
"""

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    """A run's totals, as `turn.completed` / `turn.failed` give them."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    # None when a request had no price (a model hx has no price for) or none reported usage.
    cost: float | None = None
    currency: str | None = None
    subagent_cost: float | None = None


@dataclass
class Failure:
    """Why the run gave no answer: `turn.failed`'s error, or a fatal `error` event."""

    message: str
    # Set by an hx whose `turn.failed` carries them (rate_limit, quota, overloaded, ...).
    kind: str | None = None
    status: int | None = None


@dataclass
class Run:
    session_id: str | None = None
    hx_version: str | None = None
    model: str | None = None
    provider: str | None = None
    usage: Usage | None = None
    failure: Failure | None = None
    answered: bool = False
    errors: list[str] = field(default_factory=list)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    cost = raw.get("cost")
    subagent_cost = raw.get("subagent_cost")
    currency = raw.get("currency")
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        cached_input_tokens=_int(raw.get("cached_input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        reasoning_output_tokens=_int(raw.get("reasoning_output_tokens")),
        cost=float(cost) if isinstance(cost, (int, float)) else None,
        currency=currency if isinstance(currency, str) else None,
        subagent_cost=(
            float(subagent_cost) if isinstance(subagent_cost, (int, float)) else None
        ),
    )


def _failure(raw: Any) -> Failure:
    if isinstance(raw, str):
        return Failure(message=raw)
    if not isinstance(raw, dict):
        return Failure(message="hx reported a failure without a message")
    message = raw.get("message")
    kind = raw.get("kind")
    status = raw.get("status")
    return Failure(
        message=message if isinstance(message, str) else "",
        kind=kind if isinstance(kind, str) else None,
        status=status if isinstance(status, int) and not isinstance(status, bool) else None,
    )


def parse(stdout: str | None) -> Run:
    """Reads the events of one run; lines that are not JSON objects are skipped."""
    run = Run()
    for line in (stdout or "").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "thread.started":
            run.session_id = _str(event.get("thread_id"))
            run.hx_version = _str(event.get("hx_version"))
            run.model = _str(event.get("model"))
            run.provider = _str(event.get("provider"))
        elif kind == "turn.completed":
            run.usage = _usage(event.get("usage"))
            run.answered = True
        elif kind == "turn.failed":
            run.usage = _usage(event.get("usage"))
            run.failure = _failure(event.get("error"))
        elif kind == "error" and "retry" not in event:
            # A run that cannot start (no key, a bad config) says so here, and exits.
            message = _str(event.get("message"))
            if message:
                run.errors.append(message)
    if run.failure is None and run.errors:
        run.failure = Failure(message=run.errors[-1])
    return run


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
