//! The same call made again and again. Small models repeat themselves (29 identical `git
//! clone`s in one subagent, to its turn limit; 19 identical `glob`s; ten empty `todo_write`s in
//! a row), and each repetition is a request paid for nothing. The loop watches every call's
//! tool, arguments and result: from `[loop] repeats` identical calls in a row on, the model is
//! told so in a user message after the turn's tool messages (appended, as reminders are, so the
//! prompt cache keeps hitting and no call is parted from its result), and `stop_after` more end
//! the run ([`Outcome::Looped`]).
//!
//! The result is part of what must repeat: the same command giving another output (a build
//! that progresses, a file that changed) is work, not a loop.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::{Agent, Outcome, Run};
use crate::config::LoopSettings;
use crate::model::{Message, ToolCall};
use crate::session::Session;
use crate::tools::output::quote;

/// How the message telling the model begins: hx's words, which a summary does not carry over
/// as the user's.
pub const NOTICE: &str = "[hx: the same call again] ";

/// The calls of one run, watched for repetition.
#[derive(Debug)]
pub struct Repeats {
    limits: LoopSettings,
    /// A digest of the last call (tool, arguments, result), and how many in a row had it.
    last: Option<u64>,
    streak: u32,
}

/// What the repetition of a call calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// Tell the model: this is the Nth identical call in a row.
    Tell(u32),
    /// End the run: the Nth, and the model was told before.
    Stop(u32),
}

impl Verdict {
    fn rank(self) -> u8 {
        match self {
            Verdict::Fine => 0,
            Verdict::Tell(_) => 1,
            Verdict::Stop(_) => 2,
        }
    }
}

impl Repeats {
    pub fn new(limits: LoopSettings) -> Repeats {
        Repeats {
            limits,
            last: None,
            streak: 0,
        }
    }

    /// One answered call: its tool, its arguments as the model sent them, and the result it
    /// was given.
    pub fn call(&mut self, name: &str, arguments: &str, result: &str) -> Verdict {
        if self.limits.repeats == 0 {
            return Verdict::Fine;
        }
        let digest = digest(name, arguments, result);
        if self.last == Some(digest) {
            self.streak = self.streak.saturating_add(1);
        } else {
            self.last = Some(digest);
            self.streak = 1;
        }
        let n = self.streak;
        let end = self.limits.repeats.saturating_add(self.limits.stop_after);
        if n < self.limits.repeats {
            Verdict::Fine
        } else if self.limits.stop_after > 0 && n >= end {
            Verdict::Stop(n)
        } else {
            Verdict::Tell(n)
        }
    }

    /// Identical calls after the `n`th that end the run; `None`: none do.
    fn left(&self, n: u32) -> Option<u32> {
        (self.limits.stop_after > 0).then(|| {
            self.limits
                .repeats
                .saturating_add(self.limits.stop_after)
                .saturating_sub(n)
        })
    }
}

/// A digest of one call. Arguments that are JSON are hashed as values, keys in any order and
/// spacing aside: a model that writes the same object twice made the same call.
fn digest(name: &str, arguments: &str, result: &str) -> u64 {
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    match serde_json::from_str::<Value>(arguments) {
        Ok(v) => hash_value(&v, &mut h),
        Err(_) => arguments.hash(&mut h),
    }
    result.hash(&mut h);
    h.finish()
}

fn hash_value(v: &Value, h: &mut DefaultHasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(m) => {
            (5u8, m.len()).hash(h);
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            for (k, x) in entries {
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}

impl Agent {
    /// After a turn's `calls` were answered (their tool messages from `at` on, in call order):
    /// the model told when it made the same call again, or the run's end when it went on
    /// after being told.
    pub(super) async fn watch_repeats(
        &self,
        session: &mut Session,
        run: &mut Run<'_>,
        calls: &[ToolCall],
        at: usize,
    ) -> Option<Outcome> {
        let results = session.messages().get(at..).unwrap_or_default();
        let mut worst = (Verdict::Fine, None);
        for (call, m) in calls.iter().zip(results) {
            let Message::Tool { content, .. } = m else {
                continue;
            };
            let v = run.repeats.call(&call.name, &call.arguments, content);
            // The gravest of the turn's, and of those the last: its count is the streak's.
            if v != Verdict::Fine && v.rank() >= worst.0.rank() {
                worst = (v, Some(call));
            }
        }
        let (verdict, Some(call)) = worst else {
            return None;
        };
        let name = quote(&call.name);
        match verdict {
            Verdict::Fine => None,
            Verdict::Tell(n) => {
                let then = match run.repeats.left(n) {
                    Some(k) => format!(
                        " {} more such {} will end the run.",
                        k,
                        if k == 1 { "call" } else { "calls" }
                    ),
                    None => String::new(),
                };
                session.push(Message::User(format!(
                    "{NOTICE}You have called {name} with the same arguments {n} times in a row, \
                     and it gave the same result each time: calling it again will not change \
                     it. Use that result, try something different, or give your final answer \
                     if you are done.{then}"
                )));
                session.stats.loop_notices = session.stats.loop_notices.saturating_add(1);
                self.notice(&format!(
                    "the model called {name} {n} times in a row with the same arguments and \
                     result; it is told so ([loop] repeats)"
                ));
                None
            }
            Verdict::Stop(n) => {
                // The turn's checkpoint first: the Stop hooks may run commands.
                self.after_recorded(session, run).await;
                self.stop(session, run.began, false).await;
                Some(Outcome::Looped(format!(
                    "the model called {name} {n} times in a row with the same arguments and \
                     result, and went on after it was told ([loop] stop_after)"
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(repeats: u32, stop_after: u32) -> LoopSettings {
        LoopSettings {
            repeats,
            stop_after,
        }
    }

    #[test]
    fn the_same_call_is_told_then_stopped_and_anything_else_starts_over() {
        let mut r = Repeats::new(limits(3, 2));
        let glob = |r: &mut Repeats| r.call("glob", r#"{"pattern":"*.rs"}"#, "a.rs");
        assert_eq!(glob(&mut r), Verdict::Fine);
        assert_eq!(glob(&mut r), Verdict::Fine);
        assert_eq!(glob(&mut r), Verdict::Tell(3));
        assert_eq!(r.left(3), Some(2));
        // The same object written otherwise is the same call.
        assert_eq!(
            r.call("glob", "{ \"pattern\" : \"*.rs\" }", "a.rs"),
            Verdict::Tell(4)
        );
        assert_eq!(glob(&mut r), Verdict::Stop(5));
        // Another result is another call: the count starts over.
        assert_eq!(
            r.call("glob", r#"{"pattern":"*.rs"}"#, "a.rs\nb.rs"),
            Verdict::Fine
        );
        assert_eq!(
            r.call("glob", r#"{"pattern":"*.md"}"#, "a.rs"),
            Verdict::Fine
        );
        assert_eq!(
            r.call("read_file", r#"{"pattern":"*.md"}"#, "a.rs"),
            Verdict::Fine
        );
    }

    #[test]
    fn zero_turns_either_step_off() {
        let mut off = Repeats::new(limits(0, 2));
        let mut tell_only = Repeats::new(limits(2, 0));
        for i in 0..10 {
            assert_eq!(
                off.call("todo_write", "{\"todos\":[]}", "ok"),
                Verdict::Fine
            );
            let v = tell_only.call("todo_write", "{\"todos\":[]}", "ok");
            assert_eq!(
                v,
                if i == 0 {
                    Verdict::Fine
                } else {
                    Verdict::Tell(i + 1)
                }
            );
        }
        assert_eq!(tell_only.left(5), None);
    }

    #[test]
    fn keys_in_another_order_are_the_same_arguments() {
        assert_eq!(
            digest("bash", r#"{"a":1,"b":[1,{"c":null}]}"#, "x"),
            digest("bash", r#"{"b":[1,{"c":null}],"a":1}"#, "x")
        );
        assert_ne!(
            digest("bash", r#"{"a":1}"#, "x"),
            digest("bash", r#"{"a":"1"}"#, "x")
        );
        assert_ne!(
            digest("bash", "not json", "x"),
            digest("bash", "not  json", "x")
        );
    }
}
