//! `/NAME args` in the chat: a command file or a skill made into a message
//! (`app::invoke`), then sent like a typed one, with the command's model and tools for that
//! message alone.

use tokio::signal::unix::{signal, SignalKind};

use super::conversation::Chat;
use super::terminal::SavedTerminal;
use crate::app::invoke::{self, Target};
use crate::app::signals::Signals;
use crate::text::Warning;

impl Chat {
    /// Runs `/name args`: an unknown name is a line saying so (nothing is sent); Ctrl-C
    /// while the command's `` !`cmd` `` spans run sends nothing either. `Some`: a signal
    /// ended the program, its exit code.
    pub(super) async fn invoke(
        &mut self,
        name: &str,
        args: &str,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Option<i32> {
        let invocables = self.invocables();
        let Some(target) = invocables.find(name) else {
            self.say(&format!(
                "hx: {}; /help lists them",
                invocables.unknown(name)
            ));
            return None;
        };
        let notes = match target {
            Target::Command(c) => self.noted.insert(c.name.clone()),
            Target::Skill(_) => false,
        };
        let agent = self.conversation.agent()?;
        let root = agent.tool_cx().workspace.root().to_path_buf();
        let prepared = invoke::prepare(target, args, &self.skills, &root, &self.env, notes);
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                self.say(&format!("hx: {e}"));
                return None;
            }
        };
        for w in &prepared.warnings {
            self.say(&w.to_string());
        }
        let (model, tools) = (prepared.model.clone(), prepared.tools.clone());
        let shown = prepared.shown.clone();
        let cx = agent.tool_cx().clone();
        let invocation = if prepared.runs() {
            let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
                return None;
            };
            tokio::select! {
                inv = prepared.finish(&cx) => inv,
                _ = sigint.recv() => {
                    self.say(&format!("hx: {shown} interrupted; nothing sent"));
                    return None;
                }
                sig = ends.recv() => return Some(self.end_by_signal(sig, terminal).await),
            }
        } else {
            prepared.finish(&cx).await
        };
        let agent = self.conversation.agent()?;
        let mut warnings: Vec<Warning> = Vec::new();
        let outgoing = invocation.outgoing(agent, &self.config, &mut warnings);
        for w in warnings {
            self.say(&w.to_string());
        }
        if let Some(m) = &model {
            self.term
                .dim_line(&format!("{shown}: this message goes to {m}"));
        }
        if let Some(t) = &tools {
            self.term.dim_line(&format!(
                "{shown}: this message may use only {}",
                if t.is_empty() {
                    "no tools".to_string()
                } else {
                    t.join(", ")
                }
            ));
        }
        self.send(&outgoing, ends, terminal).await
    }
}
