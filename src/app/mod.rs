//! The application: what every front end of hx (`hx agent`, `hx chat`, `hx mcp list`, and
//! the editor protocol to come) does the same way. Building an agent from the config and the
//! flags ([`build`]), loading the config ([`config`]), finding, opening and closing a session
//! ([`session`]), running one task to its end ([`run`]), the one guarded runtime every
//! command that starts processes runs in ([`runtime`]), the signals that cancel a run
//! ([`signals`]), and how a run's ending maps to an exit code, the end of the user's turn
//! and the session's outcome ([`outcome`], [`exit`]).
//!
//! Nothing here prints: what goes wrong before a run has views is a [`Failure`] for the
//! command to show, and what happens during one is an event.

pub mod build;
pub mod config;
pub mod conversation;
pub mod exit;
pub mod invoke;
pub mod outcome;
pub mod rewind;
pub mod run;
pub mod runtime;
pub mod session;
pub mod signals;
pub mod skill_eval;
pub mod window;

pub use build::{build_agent, build_agent_with};
pub use conversation::{Closed, Conversation, Outgoing, Switched};

use crate::text::Warning;

/// Why a command cannot go on: its exit code, the line that says why, and the warnings that
/// came before it (shown first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: i32,
    pub message: String,
    pub warnings: Vec<Warning>,
}

impl Failure {
    /// A usage or configuration error (exit 2).
    pub fn usage(message: impl std::fmt::Display) -> Failure {
        Failure::new(exit::USAGE, message)
    }

    /// A failure of the run itself (exit 1).
    pub fn failed(message: impl std::fmt::Display) -> Failure {
        Failure::new(exit::FAILED, message)
    }

    pub fn new(code: i32, message: impl std::fmt::Display) -> Failure {
        Failure {
            code,
            message: message.to_string(),
            warnings: Vec::new(),
        }
    }

    /// The same failure, with `warnings` shown before it.
    pub fn after(mut self, warnings: Vec<Warning>) -> Failure {
        self.warnings = warnings;
        self
    }
}
