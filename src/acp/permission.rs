//! Where `hx chat` would ask at the terminal (a call the guard would refuse, as
//! src/chat/approve.rs does), `hx acp` asks the client with `session/request_permission`: allow
//! once, allow always (this exact command, for the rest of the session), reject. A rejection,
//! a cancelled question or a client that cannot answer is the guard's refusal, as in chat;
//! every answer is kept for the session file.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    CLIENT_METHOD_NAMES,
};
use futures_util::future::BoxFuture;

use super::rpc::{Output, Pending};
use super::view::{call_id, text_content};
use crate::hooks::ledger::Ledger;
use crate::hooks::{Approval, Approver, HookContext};
use crate::model::ToolCall;
use crate::session::ApprovalLine;

pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT: &str = "reject_once";

pub struct Permissions {
    session_id: String,
    out: Output,
    pending: Pending,
    ledger: Ledger,
    /// One question at a time: concurrent subagents wait their turn.
    asking: tokio::sync::Mutex<()>,
}

impl Permissions {
    pub fn new(session_id: &str, out: Output, pending: Pending) -> Arc<Permissions> {
        Arc::new(Permissions {
            session_id: session_id.to_string(),
            out,
            pending,
            ledger: Ledger::default(),
            asking: tokio::sync::Mutex::new(()),
        })
    }

    /// The answers given since the last call, oldest first, for the session.
    pub fn take_answered(&self) -> Vec<ApprovalLine> {
        self.ledger.take_answered()
    }

    async fn ask(
        &self,
        call: &ToolCall,
        command: &str,
        reason: &str,
        cx: &HookContext,
    ) -> Approval {
        let _one = self.asking.lock().await;
        if let Some(before) = self.ledger.allowed_before(call, command, reason) {
            return before;
        }
        let fields = ToolCallUpdateFields::new()
            .title(title(command, reason))
            .kind(ToolKind::Execute)
            .status(ToolCallStatus::Pending)
            .content(vec![text_content(&format!(
                "The guard would refuse this command: {reason}\n\n{command}"
            ))]);
        let id = call_id(&cx.scope, call);
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            ToolCallUpdate::new(id, fields),
            vec![
                PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    ALLOW_ALWAYS,
                    "Allow always (this session)",
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        let answer = self
            .pending
            .request(
                &self.out,
                CLIENT_METHOD_NAMES.session_request_permission,
                request,
            )
            .await;
        let outcome = answer
            .ok()
            .and_then(|v| serde_json::from_value::<RequestPermissionResponse>(v).ok())
            .map(|r| r.outcome);
        let approval = match outcome {
            Some(RequestPermissionOutcome::Selected(s)) => match &*s.option_id.0 {
                ALLOW_ONCE => Approval::Once,
                ALLOW_ALWAYS => Approval::Always,
                _ => Approval::Refused,
            },
            _ => Approval::Refused,
        };
        self.ledger.answered(call, command, reason, approval);
        approval
    }
}

/// The question's title: the guard's reason first, then the command with every run of blanks
/// (newlines and Unicode spaces too) made one space, so that a long run cannot push the end of
/// the command out of an editor's one-line view (`ls -la` and 150 spaces before `; rm -rf ~`).
/// The whole command, as the model wrote it, is in the question's content.
fn title(command: &str, reason: &str) -> String {
    let command = command.split_whitespace().collect::<Vec<_>>().join(" ");
    let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::one_line(&format!("{reason}: {command}"), 200)
}

impl Approver for Permissions {
    fn approve<'a>(
        &'a self,
        call: &'a ToolCall,
        command: &'a str,
        reason: &'a str,
        cx: &'a HookContext,
    ) -> BoxFuture<'a, Approval> {
        Box::pin(self.ask(call, command, reason, cx))
    }
}

#[cfg(test)]
mod tests {
    use super::title;

    #[test]
    fn a_title_leads_with_the_reason_and_collapses_blanks() {
        let command = format!("ls -la{}; cd ~ &&\n\t rm -rf .\u{2003}x", " ".repeat(150));
        assert_eq!(
            title(&command, "deletes  your home"),
            "deletes your home: ls -la ; cd ~ && rm -rf . x"
        );
    }
}
