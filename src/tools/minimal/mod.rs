//! The `minimal` tool profile (`[tools] profile = "minimal"`, `--tools minimal`): the two tools
//! DeepSeek's Terminal-Bench "minimal mode" offers, one persistent `bash` ([`shell`]) and a
//! `str_replace_editor` ([`editor`]), and nothing else: no subagents, no skills, no todo list.
//! Both run through the machinery the default tools use (the sandbox and the pod, the
//! workspace's path checks, atomic writes), so the profile changes what the model is offered,
//! never what it may do.

use std::sync::Arc;

pub mod editor;
pub mod shell;

pub use editor::StrReplaceEditor;
pub use shell::PersistentBash;

/// Which tools a run offers the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Every tool of hx (bash, the file tools, background shells, todo_write, task,
    /// load_skill, MCP servers' tools)
    #[default]
    Default,
    /// Exactly two tools: a persistent bash and str_replace_editor (DeepSeek's Terminal-Bench
    /// setting)
    Minimal,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Minimal => "minimal",
        }
    }
}

/// The minimal profile's tools, in the order their specs are sent.
pub fn registry() -> super::Registry {
    let mut r = super::Registry::new();
    r.register(Arc::new(PersistentBash::new()));
    r.register(Arc::new(StrReplaceEditor::new()));
    r
}
