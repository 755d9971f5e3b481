//! `/model` and `/effort` in `hx chat`: the config's choice changed, and the conversation
//! goes on with the profile made from it (`app::Conversation::set_profile`): the same agent,
//! tools, MCP servers and history, another model or effort. The subagents it starts follow,
//! since each starts from its caller's profile. And `/goal`, the command each answer must
//! pass from then on.

use super::conversation::Chat;
use crate::agent::goal::Goal;
use crate::app::Switched;
use crate::model::Effort;

/// How long `/model` waits for the server's list of models.
const MODELS_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Longest model name `/model` takes.
const MAX_MODEL_CHARS: usize = 200;

impl Chat {
    /// `/model` alone: the model, then the ones the provider's server lists to switch to.
    pub(super) async fn offer_models(&mut self) {
        self.say(&format!(
            "model: {} (provider {})",
            self.config.model, self.config.provider
        ));
        let client = match crate::model::OpenAiClient::new(self.config.client_options()) {
            Ok(c) => c,
            Err(e) => return self.say(&format!("hx: {e}")),
        };
        let listed = tokio::time::timeout(MODELS_WAIT, client.list_models()).await;
        let models = match listed {
            Ok(Ok(m)) if !m.is_empty() => m,
            Ok(Ok(_)) => return self.say("the server lists no models; /model NAME switches"),
            Ok(Err(e)) => return self.say(&format!("hx: cannot list the models: {e}")),
            Err(_) => {
                return self.say(&format!(
                    "hx: the server did not list its models within {} s; /model NAME switches",
                    MODELS_WAIT.as_secs()
                ))
            }
        };
        let mut text = String::from("the provider offers (/model NAME switches):");
        for m in &models {
            let mark = if *m == self.config.model { "*" } else { " " };
            text.push_str(&format!("\n{mark} {m}"));
        }
        self.say(&text);
    }

    /// `/model [NAME]`: shows the model, or goes on with another (recorded in the session).
    pub(super) fn model(&mut self, name: Option<String>) {
        let Some(name) = name else {
            self.say(&format!(
                "model: {} (provider {})",
                self.config.model, self.config.provider
            ));
            return;
        };
        if name.chars().count() > MAX_MODEL_CHARS || name.chars().any(char::is_control) {
            self.say(&format!(
                "hx: a model name is one word of at most {MAX_MODEL_CHARS} characters"
            ));
            return;
        }
        if name.contains(char::is_whitespace) {
            self.say("hx: a model name is one word");
            return;
        }
        // A retired DeepSeek name is the model that answers it now, thinking as it did.
        let mut next = self.config.clone();
        let retired = next.set_model(&name);
        // The conversation's cost limit holds on: a model without a price would leave it
        // unreachable, so the switch is refused and the conversation stays as it was.
        if let Err(e) = next.require_price() {
            self.say(&format!("hx: {e}"));
            return;
        }
        self.config = next;
        if let Some(r) = retired {
            self.say(&r.to_string());
        }
        self.say(&format!("model: {}", self.config.model));
        // Last, as it says what the switch costs: the next request misses the cache.
        let profile = self.config.profile();
        self.conversation.set_profile(profile, Switched::Model);
    }

    /// `/effort [EFFORT]`: shows how hard the model thinks, or goes on at another effort
    /// (recorded in the session, so that `-c` goes on with it).
    pub(super) fn effort(&mut self, name: Option<String>) {
        let Some(name) = name else {
            self.say(&super::effort_text(&self.config));
            return;
        };
        let effort = match Effort::parse(&name) {
            Ok(e) => e,
            Err(e) => {
                self.say(&format!("hx: {e}"));
                return;
            }
        };
        self.config.set_effort(effort);
        let profile = self.config.profile();
        self.conversation.set_profile(profile, Switched::Effort);
        self.say(&super::effort_text(&self.config));
    }

    /// `/goal CMD`: from the next message on, each answer must pass CMD (as `hx agent
    /// --until` does); `/goal off` ends that; `/goal` says what holds. The user typed the
    /// command, so it needs no trust, as a message asking for it would not.
    pub(super) fn goal(&mut self, command: Option<String>) {
        match command.as_deref().map(str::trim) {
            None => {}
            Some("off") => self.conversation.set_goal(None),
            Some(c) => self.conversation.set_goal(Some(Goal::new(c))),
        }
        let shown = match self.conversation.goal() {
            Some(g) => format!(
                "goal: each answer must pass {} (at most {} rounds a message; /goal off ends it)",
                crate::term::one_line(&g.command, 120),
                g.max_rounds
            ),
            None => "goal: none (/goal CMD: each answer must pass CMD)".to_string(),
        };
        self.say(&shown);
    }
}
