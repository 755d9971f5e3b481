//! What a tool says about itself to those who show its calls: the views (the trace, `--json`)
//! and, coming, an editor speaking the Agent Client Protocol. The loop looks a call's tool up
//! and hands this along with the call's events, so no view ever matches on a tool's name.

use super::Tool;

/// What a call of the tool does, in words an editor maps onto the Agent Client Protocol's
/// `ToolKind` (its icon, its permission prompt): each value is one of ACP's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Reads files or data (ACP `read`).
    Read,
    /// Changes files (ACP `edit`).
    Edit,
    /// Looks for files or text (ACP `search`).
    Search,
    /// Runs a command (ACP `execute`).
    Execute,
    /// Anything else (ACP `other`).
    #[default]
    Other,
}

impl Kind {
    /// The Agent Client Protocol's name for it.
    pub fn acp_name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Edit => "edit",
            Kind::Search => "search",
            Kind::Execute => "execute",
            Kind::Other => "other",
        }
    }
}

/// How the views show a tool's calls: the shapes that have an item type of their own in
/// `--json` and a rendering of their own in the trace. Each names the arguments it reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Shown {
    /// A shell command, its `command` argument: shown with its output and exit code
    /// (`command_execution`; `declined` when refused).
    Command,
    /// Writes the whole file at its `path` argument (`file_change`, `add` when the file is new).
    FileWrite,
    /// Changes the file at its `path` argument (`file_change`, `update`).
    FileEdit,
    /// The model's plan: its arguments are a todo list as [`super::todo::parse_todos`] reads
    /// it, which the views show instead of the result (`todo_list`, once the call succeeded).
    Plan,
    /// Loads the skill its `name` argument names (`load_skill`).
    Skill,
    /// Starts a subagent with its `description` and `prompt` (`task`).
    Subagent,
    /// A tool of an MCP server: the server's name and the tool's part of the request name
    /// (`mcp_tool_call`).
    Mcp { server: String, tool: String },
    /// Any other tool, shown by its name and arguments (`tool_call`).
    #[default]
    Other,
}

/// Everything a tool says about itself to the views, taken from it once per call. A call of a
/// tool the set does not have is [`About::default`]: any other tool, of kind other.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct About {
    pub kind: Kind,
    pub shown: Shown,
}

impl About {
    pub fn of(tool: &dyn Tool) -> About {
        About {
            kind: tool.kind(),
            shown: tool.shown(),
        }
    }
}
