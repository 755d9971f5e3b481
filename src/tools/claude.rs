//! How Claude Code knows hx's tools. Hook matchers and the agent and command files users bring
//! from Claude Code name tools by Claude Code's names; each tool states its own next to its
//! code, as a [`Claude`] const, so that neither the hooks nor the reading of those files
//! restates which name is which tool.

/// One of hx's tools as Claude Code knows it, and what hx can honour of a Claude Code file
/// that asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claude {
    /// hx's name of the tool (the one its spec gives).
    pub tool: &'static str,
    /// Claude Code's names that mean this tool: its own first (the one hook matchers name),
    /// then those of Claude Code tools whose work it does (`MultiEdit` for `edit_file`).
    pub names: &'static [&'static str],
    /// Whether subagents get it as well as the main agent ([`super::Tool::for_subagents`]):
    /// an agent file that asks for a tool they never get is told so.
    pub for_subagents: bool,
    /// Whether Claude Code's files may limit it to some commands (`Bash(git add:*)`), which
    /// hx cannot: such an ask is left out for a subagent and given whole for a message.
    pub by_command: bool,
}

impl Claude {
    /// Claude Code's own name for the tool, the one hook matchers use.
    pub fn name(&self) -> Option<&'static str> {
        self.names.first().copied()
    }

    /// Whether `name`, Claude Code's or hx's, means this tool.
    pub fn means(&self, name: &str) -> bool {
        self.tool == name || self.names.contains(&name)
    }

    /// Whether `name` is this tool limited to some commands (`Bash(git add:*)`).
    pub fn limited(&self, name: &str) -> bool {
        self.by_command
            && self
                .name()
                .and_then(|own| name.strip_prefix(own))
                .is_some_and(|rest| rest.starts_with('('))
    }
}
