//! Why a turn ended without an answer, as one stable word a program can branch on
//! (`turn.failed`'s `error.kind`, the session's `end` line): a model error's kind is decided
//! here from the typed error, the others (the turn limit, a hook, a signal) where the run's
//! ending is mapped. Named in the model layer, the lowest that needs it, so the session and
//! the views can name it too.

use super::ModelError;

/// The kind of a failed turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// 429: too many requests, after the retries.
    RateLimit,
    /// 402, or a server's words for a balance or quota that is used up: no retry helps
    /// until someone pays.
    Quota,
    /// 503, 529, or a server that says it is overloaded.
    Overloaded,
    /// Any other 5xx.
    Server,
    /// The conversation does not fit the model's context window.
    ContextOverflow,
    /// 401, 403: the key was refused.
    Auth,
    /// 404 (or DeepSeek's 400 "Model Not Exist"): no such model or endpoint.
    NotFound,
    /// Any other 4xx.
    BadRequest,
    /// The server was not reached, or the connection failed or timed out (408 included).
    Network,
    /// The server reported an error inside a stream it had begun with 200.
    Stream,
    /// A response broke one of hx's own limits (size, time, tool calls).
    ResponseLimit,
    /// `--max-turns`.
    MaxTurns,
    /// `--max-cost`.
    MaxCost,
    /// The model kept making the same call (`[loop]`).
    Loop,
    /// The goal's command (`--until`) still failed when its rounds ran out.
    GoalUnmet,
    /// A hook stopped the run.
    Hook,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) cut the run short.
    Interrupted,
    /// Anything else (a redirect, a front end that could not go on).
    Other,
}

impl FailureKind {
    /// The word programs read: stable, snake_case.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::RateLimit => "rate_limit",
            FailureKind::Quota => "quota",
            FailureKind::Overloaded => "overloaded",
            FailureKind::Server => "server",
            FailureKind::ContextOverflow => "context_overflow",
            FailureKind::Auth => "auth",
            FailureKind::NotFound => "not_found",
            FailureKind::BadRequest => "bad_request",
            FailureKind::Network => "network",
            FailureKind::Stream => "stream",
            FailureKind::ResponseLimit => "response_limit",
            FailureKind::MaxTurns => "max_turns",
            FailureKind::MaxCost => "max_cost",
            FailureKind::Loop => "loop",
            FailureKind::GoalUnmet => "goal_unmet",
            FailureKind::Hook => "hook",
            FailureKind::Interrupted => "interrupted",
            FailureKind::Other => "other",
        }
    }
}

/// Lowercase phrases of servers whose balance or quota is used up, whatever status they send
/// it with: DeepSeek (402 `Insufficient Balance`), OpenAI (429 `You exceeded your current
/// quota`), OpenRouter (402 `Insufficient credits`), Anthropic's compatible API (400 `Your
/// credit balance is too low`).
const QUOTA: [&str; 4] = [
    "insufficient balance",
    "exceeded your current quota",
    "insufficient credits",
    "credit balance is too low",
];

/// DeepSeek answers an unknown model name with a 400 that says only this.
const NO_MODEL: &str = "model not exist";

impl ModelError {
    /// The kind of failure this error is: the one place it is decided.
    pub fn kind(&self) -> FailureKind {
        match self {
            ModelError::Api { status, message } => api_kind(*status, message),
            ModelError::Stream(_) => FailureKind::Stream,
            ModelError::Transport(_) | ModelError::Unreachable { .. } => FailureKind::Network,
            ModelError::ContextOverflow { .. } | ModelError::TooLarge(_) => {
                FailureKind::ContextOverflow
            }
            ModelError::Limit(_) => FailureKind::ResponseLimit,
        }
    }

    /// The HTTP status the server answered with, when the error is one. An error inside a 200
    /// stream has none: 200 is not what went wrong.
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Api { status, .. } | ModelError::ContextOverflow { status, .. } => {
                Some(*status).filter(|s| !(200..300).contains(s))
            }
            _ => None,
        }
    }
}

/// The kind of a refusal with `status`; `message` is the server's words (with hx's hint after
/// a 401 or 403, which is why those are decided first).
fn api_kind(status: u16, message: &str) -> FailureKind {
    let lower = message.to_ascii_lowercase();
    let says = |phrases: &[&str]| phrases.iter().any(|p| lower.contains(p));
    match status {
        401 | 403 => FailureKind::Auth,
        402 => FailureKind::Quota,
        _ if says(&QUOTA) => FailureKind::Quota,
        404 => FailureKind::NotFound,
        400 if says(&[NO_MODEL]) => FailureKind::NotFound,
        // The server gave up waiting for the request: a slow link, as a timeout is.
        408 => FailureKind::Network,
        503 | 529 => FailureKind::Overloaded,
        429 | 500..=599 if says(&["overloaded"]) => FailureKind::Overloaded,
        429 => FailureKind::RateLimit,
        500..=599 => FailureKind::Server,
        400..=499 => FailureKind::BadRequest,
        _ => FailureKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, message: &str) -> ModelError {
        ModelError::Api {
            status,
            message: message.into(),
        }
    }

    #[test]
    fn a_refusal_s_kind_follows_its_status_then_the_server_s_words() {
        let cases = [
            (429, "Too Many Requests: slow down", "rate_limit"),
            (
                429,
                "Too Many Requests: You exceeded your current quota",
                "quota",
            ),
            (
                429,
                "Too Many Requests: The engine is currently overloaded",
                "overloaded",
            ),
            (402, "Payment Required: Insufficient Balance", "quota"),
            (400, "Bad Request: Your credit balance is too low", "quota"),
            (503, "Service Unavailable: busy", "overloaded"),
            (529, "", "overloaded"),
            (500, "Internal Server Error: Overloaded", "overloaded"),
            (500, "Internal Server Error: oops", "server"),
            (502, "Bad Gateway", "server"),
            (
                401,
                "Unauthorized: bad key (the key in K was refused)",
                "auth",
            ),
            (403, "Forbidden", "auth"),
            (404, "Not Found: model 'x' not found", "not_found"),
            (400, "Bad Request: Model Not Exist", "not_found"),
            (400, "Bad Request: invalid tools", "bad_request"),
            (422, "Unprocessable Entity", "bad_request"),
            (408, "Request Timeout", "network"),
            (301, "the server redirects to https://x", "other"),
        ];
        for (status, message, kind) in cases {
            let e = api(status, message);
            assert_eq!((e.kind().as_str(), e.status()), (kind, Some(status)), "{e}");
        }
    }

    #[test]
    fn errors_without_a_status_have_their_own_kinds() {
        let cases = [
            (ModelError::Stream("boom".into()), "stream"),
            (ModelError::Transport("cut".into()), "network"),
            (
                ModelError::Unreachable {
                    message: "refused".into(),
                    dns: false,
                },
                "network",
            ),
            (ModelError::TooLarge("the task".into()), "context_overflow"),
            (ModelError::Limit("too big".into()), "response_limit"),
        ];
        for (e, kind) in cases {
            assert_eq!((e.kind().as_str(), e.status()), (kind, None), "{e}");
        }
    }

    #[test]
    fn an_overflow_keeps_its_status_unless_it_came_inside_a_stream() {
        let overflow = |status| ModelError::ContextOverflow {
            status,
            message: "too long".into(),
            window: None,
        };
        assert_eq!(overflow(400).kind(), FailureKind::ContextOverflow);
        assert_eq!(overflow(400).status(), Some(400));
        assert_eq!(overflow(200).status(), None);
    }
}
