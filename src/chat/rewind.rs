//! `/diff` and `/rewind` in `hx chat`: the same as `hx diff` and `hx rewind` (see
//! `app::rewind`), on the conversation's own session, with the rewound message put back in
//! the input line.

use super::conversation::Chat;
use super::editor::Read;
use super::terminal::SavedTerminal;
use crate::app::rewind::{self, Refused};
use crate::app::signals::Signals;
use crate::model::Message;
use crate::session::RewindLine;

impl Chat {
    /// `/diff`: what this session's turns changed, plain.
    pub(super) async fn diff(&mut self) {
        let lines = self.diff_text().await;
        self.say(lines.trim_end());
    }

    async fn diff_text(&self) -> String {
        let (Some(agent), Some(session)) = (self.conversation.agent(), self.conversation.session())
        else {
            return "no change yet: this conversation has no checkpoint".into();
        };
        let Some(cps) = agent.checkpoints() else {
            return "checkpoints are off".into();
        };
        let say = |l: &str| self.say(l);
        let Some(store) = cps.store(&say).await else {
            return "checkpoints are off".into();
        };
        match rewind::diff(store, session.id(), session.checkpoints(), None, false).await {
            Ok(b) if b.is_empty() => "no change by this session's turns".into(),
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => format!("hx: {e}"),
        }
    }

    /// `/rewind [N] [--code|--conversation] [--force]`: without N, the list and a question.
    /// `Err`: a signal ended the program while it asked.
    pub(super) async fn rewind(
        &mut self,
        arg: Option<String>,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Result<(), i32> {
        let words: Vec<String> = arg
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let code_only = words.iter().any(|w| w == "--code");
        let conversation_only = words.iter().any(|w| w == "--conversation");
        let force = words.iter().any(|w| w == "--force");
        let mut n = words.iter().find_map(|w| w.parse::<u32>().ok());
        if n.is_none() {
            let listed = self.list_text().await;
            self.say(listed.trim_end());
            if listed.starts_with("hx:") || listed.starts_with("no ") {
                return Ok(());
            }
            let answer = self
                .read("rewind to (number; empty: none) › ", ends, terminal)
                .await?;
            n = match answer {
                Read::Line(l) => l.trim().parse().ok(),
                _ => None,
            };
            let Some(_) = n else {
                self.say("nothing rewound");
                return Ok(());
            };
        }
        let n = n.unwrap_or(0);
        let said = self
            .rewind_to(n, !conversation_only, !code_only, force)
            .await;
        for line in said {
            self.say(&line);
        }
        self.conversation.history_changed();
        Ok(())
    }

    async fn list_text(&self) -> String {
        let (Some(agent), Some(session)) = (self.conversation.agent(), self.conversation.session())
        else {
            return "no checkpoints yet: send a message first".into();
        };
        let Some(cps) = agent.checkpoints() else {
            return "hx: checkpoints are off".into();
        };
        let say = |l: &str| self.say(l);
        let Some(store) = cps.store(&say).await else {
            return "hx: checkpoints are off".into();
        };
        match rewind::list(store, session.id(), session.checkpoints()).await {
            Ok(l) if l.is_empty() => "no checkpoints yet".into(),
            Ok(l) => l
                .iter()
                .map(rewind::listed_line)
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("hx: {e}"),
        }
    }

    /// Rewinds the files (`code`), the conversation, or both to checkpoint `n`; the lines to
    /// show.
    async fn rewind_to(
        &mut self,
        n: u32,
        code: bool,
        conversation: bool,
        force: bool,
    ) -> Vec<String> {
        let mut said = Vec::new();
        let Some(agent) = self.conversation.agent() else {
            return vec!["no checkpoints yet: send a message first".into()];
        };
        let checkpoints = agent.checkpoints().cloned();
        let Some(session) = self.conversation.session_mut() else {
            return vec!["no checkpoints yet: send a message first".into()];
        };
        let at = match rewind::find(session.checkpoints(), n) {
            Ok(i) => i,
            Err(e) => return vec![format!("hx: {e}")],
        };
        let target = session.checkpoints()[at].clone();
        if conversation && !target.conversation_ok {
            return vec![format!(
                "hx: the conversation was compacted or rewound past checkpoint {n} since; /rewind {n} --code rewinds the files only"
            )];
        }
        let next = session.next_checkpoint();
        let mut safety = None;
        let mut paths = 0;
        if code {
            let Some(cps) = &checkpoints else {
                return vec!["hx: checkpoints are off".into()];
            };
            let term = self.term.clone();
            let say = move |l: &str| term.line(l);
            let Some(store) = cps.store(&say).await else {
                return vec!["hx: checkpoints are off".into()];
            };
            match rewind::rewind_code(store, session.id(), session.checkpoints(), n, force).await {
                Ok(r) => {
                    for p in rewind::shown(store, &r.restored.written) {
                        said.push(format!("restored {p}"));
                    }
                    for p in rewind::shown(store, &r.restored.removed) {
                        said.push(format!("removed {p}"));
                    }
                    for p in rewind::shown(store, &r.restored.refused) {
                        said.push(format!(
                            "hx: left alone (a link or a file is where a folder on its way was): {p}"
                        ));
                    }
                    paths = r.restored.written.len() + r.restored.removed.len();
                    for line in rewind::lines_of(&r, n, next, session.messages().len()) {
                        session.record_checkpoint(line);
                    }
                    safety = Some(next);
                }
                Err(Refused::Conflicts(list)) => {
                    said.push(format!(
                        "hx: changed outside hx's turns after checkpoint {n}, so not rewound: {}",
                        list.join(", ")
                    ));
                    said.push(format!("hx: /rewind {n} --force overwrites them"));
                    return said;
                }
                Err(e) => return vec![format!("hx: {e}")],
            }
        }
        let at_message = target.line.at_message;
        let taken_back = match session.messages().get(at_message) {
            // A message sent for `/NAME args` comes back as typed, to invoke it again.
            Some(Message::User(text)) if conversation => {
                Some(session.typed_for(text).unwrap_or(text).to_string())
            }
            _ => None,
        };
        session.record_rewind(&RewindLine {
            to: n,
            code,
            conversation,
            at_message: conversation.then_some(at_message),
            safety,
            paths,
            at: crate::session::store::now_rfc3339(),
        });
        said.push(format!("rewound to checkpoint {n}"));
        if let Some(s) = safety {
            said.push(format!(
                "what was replaced is checkpoint {s}: /rewind {s} --code puts it back"
            ));
        }
        if let Some(text) = taken_back {
            // The message it preceded, ready to edit and send again.
            self.editor.put_back(&text);
        }
        said
    }
}
