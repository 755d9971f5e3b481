//! What a model name decides for the agent that talks to it: the name its requests carry,
//! what they say of thinking, the prices they cost, the window they must fit and whether
//! assistant messages carry their reasoning back.
//!
//! One value, so that a change of model is one change: the main agent's, `/model` and
//! `/effort` in a chat, a command's `model:` for one message, and a typed
//! subagent's `model:` each get a whole `Profile` from the config layer (`Config::profile`
//! and `Profiles`, which map a retired name and find the price and the window) instead of
//! patching some of its parts. It lives
//! here, beside the types it is made of, so that a tool's call can carry its caller's
//! profile (`tools::ToolContext::profile`: the `task` tool starts its subagent from it).

use super::{Effort, Price, ReasoningEcho, Thinking};

#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    model: String,
    thinking: Option<Thinking>,
    price: Option<Price>,
    window: u64,
    reasoning_echo: ReasoningEcho,
}

impl Profile {
    /// Made by the config layer (`Config::profile` and its kin), which knows the prices and
    /// windows; elsewhere only tests make one by hand.
    pub fn new(
        model: impl Into<String>,
        thinking: Option<Thinking>,
        price: Option<Price>,
        window: u64,
        reasoning_echo: ReasoningEcho,
    ) -> Profile {
        Profile {
            model: model.into(),
            thinking,
            price,
            window,
            reasoning_echo,
        }
    }

    /// The model the requests name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// What the requests say of thinking; `None`: nothing, the model's default holds.
    pub fn thinking(&self) -> Option<Thinking> {
        self.thinking
    }

    /// The effort the requests are sent with, as session files record it.
    pub fn effort(&self) -> Option<Effort> {
        self.thinking.map(|t| t.effort)
    }

    /// The prices of its requests; `None`: unknown, so their costs are too.
    pub fn price(&self) -> Option<&Price> {
        self.price.as_ref()
    }

    /// Tokens the model accepts in one request (prompt and answer).
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Whether assistant messages carry `reasoning_content` back.
    pub fn reasoning_echo(&self) -> ReasoningEcho {
        self.reasoning_echo
    }
}
