//! The command line: clap's definitions of every command, its flags and its help.

use clap::{Args, Parser, Subcommand};

const TOP_HELP: &str = "\
Without a command, on a terminal, hx starts a conversation (hx chat), with hx chat's options:
hx -c goes on with the newest session, hx -r ID with that one, hx -m NAME talks to that model.
Run 'hx agent --help' for the agent's options, configuration and exit codes.";

#[derive(Debug, Parser)]
#[command(
    name = "hx",
    version,
    about = "A coding agent for the terminal",
    long_about = "hx runs an agent loop against an OpenAI-compatible chat-completions API \
                  (DeepSeek by default): the model calls tools (bash, read_file, write_file, \
                  edit_file, glob, todo_write, task, load_skill), hx runs them in the working \
                  directory and sends the results back, until the model answers in plain text. \
                  Project rules live in skills (.agents/skills/NAME/SKILL.md): the model sees \
                  their names and descriptions and loads one when the task needs it.",
    after_help = TOP_HELP,
    // The flattened chat options bring hx chat's long help; hx --help keeps its own.
    after_long_help = TOP_HELP
)]
pub struct Cli {
    /// Run as if hx had been started in DIR
    #[arg(short = 'C', value_name = "DIR", global = true)]
    pub dir: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `hx -c` is `hx chat -c`, as Claude Code users type it. Before a command (`hx -m x
    /// agent`) these are refused: they belong after it.
    #[command(
        flatten,
        next_help_heading = "Options of hx chat (hx without a command)"
    )]
    pub chat: ChatArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the agent on a task until it answers
    Agent(AgentArgs),
    /// Talk with the agent in the terminal: each message a turn of one session (also: hx
    /// with no arguments, on a terminal)
    Chat(ChatArgs),
    /// List, show and check the skills the agent can load (no API key needed)
    Skills(SkillsArgs),
    /// List, show and check the subagent types of agent files (.claude/agents/*.md; no API
    /// key needed)
    Agents(AgentsArgs),
    /// List and show the commands /NAME runs (.claude/commands/*.md; no API key needed)
    Commands(CommandsArgs),
    /// List and show the recorded sessions of this workspace (no API key needed)
    Sessions(SessionsArgs),
    /// Show this project's config (.hx/config.toml), hooks (.hx/hooks.json), MCP servers
    /// (.mcp.json) and what its command files run (.claude/commands), then allow them as
    /// they are now
    Trust(TrustArgs),
    /// Show what the bash sandbox would enforce on this machine (no API key needed)
    Sandbox(SandboxArgs),
    /// Print the system prompt a run here would start with, and the size of each part of it
    /// (no API key needed)
    Context(ContextArgs),
    /// List the MCP servers a run here would start, their state and their tools (no API key
    /// needed)
    Mcp(McpArgs),
    /// Print the effective configuration here, each value with where it came from (a
    /// default, the user's file, the project's, the environment, a flag; no API key needed)
    Config(ConfigArgs),
    /// List the models the provider's server offers (its /models endpoint), the configured
    /// one marked with *
    Models(ModelsArgs),
    /// Serve the Agent Client Protocol on stdin and stdout, for editors (Zed, JetBrains,
    /// Neovim): each session a session of hx in the editor's folder
    #[command(after_long_help = ACP_HELP)]
    Acp(AcpArgs),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell)
    #[command(after_long_help = COMPLETIONS_HELP)]
    Completions {
        /// The shell the script is for
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print hx's manual page (roff, for man), or write one page per command into a folder
    Man {
        /// Write hx.1, hx-agent.1, ... into DIR instead of printing hx.1
        #[arg(long = "dir", value_name = "DIR")]
        into: Option<std::path::PathBuf>,
    },
    /// Show what the agent changed in this workspace: the newest session's changes as a
    /// unified diff that git apply accepts
    Diff(DiffArgs),
    /// List the newest session's checkpoints, or put the files (and the conversation) back
    /// as they were at one
    Rewind(RewindArgs),
    /// Show this workspace's checkpoint store (path, size, sessions, checkpoints), or prune it
    /// now
    Checkpoints(CheckpointsArgs),
}

#[derive(Debug, Args)]
#[command(
    after_help = "Only paths the session's turns changed are shown (commands' changes \
                  included), as they are now. Coloured on a terminal, plain in a pipe: \
                  hx diff | git apply -R undoes it. Binary files are named, not dumped."
)]
pub struct DiffArgs {
    /// The session with this id (or unique prefix) instead of the newest
    #[arg(short = 'r', long = "resume", value_name = "ID")]
    pub session: Option<String>,
    /// Only what the turns changed from checkpoint N to the next one (numbers: hx rewind)
    #[arg(long, value_name = "N")]
    pub turn: Option<u32>,
    /// A summary: each file with its lines added and removed
    #[arg(long)]
    pub stat: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Without N: the checkpoints, one a line: number, time, what it \
                  precedes, files that differ from it now.\n\n\
                  hx rewind N gives every path the session's turns changed after checkpoint N \
                  its content and mode at N back: files they created are removed, files they \
                  deleted come back, other paths are left alone. A path also changed outside \
                  hx's turns (by you, between messages) stops the rewind, which lists it: \
                  --force overwrites it. What a rewind replaces is kept as a checkpoint first: \
                  hx rewind --undo puts it back.\n\n\
                  A conversation rewind is a line in the session file: the next hx agent -c \
                  goes on from before checkpoint N."
)]
pub struct RewindArgs {
    /// The checkpoint to go back to (1 is the session's oldest)
    #[arg(value_name = "N")]
    pub n: Option<u32>,
    /// The session with this id (or unique prefix) instead of the newest
    #[arg(short = 'r', long = "resume", value_name = "ID")]
    pub session: Option<String>,
    /// Only the files (the conversation goes on as it is)
    #[arg(long, conflicts_with = "conversation")]
    pub code: bool,
    /// Only the conversation (the files stay as they are)
    #[arg(long)]
    pub conversation: bool,
    /// Overwrite files changed outside hx's turns too
    #[arg(long)]
    pub force: bool,
    /// Put back the files the last rewind replaced
    #[arg(long, conflicts_with_all = ["n", "conversation"])]
    pub undo: bool,
    /// Do not ask (needed without a terminal)
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct CheckpointsArgs {
    #[command(subcommand)]
    pub command: Option<CheckpointsCommand>,
}

#[derive(Debug, Subcommand)]
pub enum CheckpointsCommand {
    /// Drop the checkpoints of sessions past checkpoints.keep_sessions or older than
    /// checkpoints.keep_days, and pack the store (also done once a day without asking)
    Prune,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The options of a run, to see what they change
    #[command(flatten)]
    pub run: RunArgs,
    /// Machine-readable output: one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Provider whose server to ask
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Base URL of the API; the list is asked of {base}/models
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Machine-readable output: one JSON object
    #[arg(long)]
    pub json: bool,
}

const COMPLETIONS_HELP: &str = "\
Install the script where your shell looks for completions, for example:
  bash  hx completions bash > ~/.local/share/bash-completion/completions/hx
  zsh   hx completions zsh > ~/.zfunc/_hx   (with fpath+=~/.zfunc before compinit)
  fish  hx completions fish > ~/.config/fish/completions/hx.fish";

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Provider whose model and context window to show
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model whose context window to show
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Leave the AGENTS.md (CLAUDE.md) files out, as hx agent --no-project-doc does
    #[arg(long)]
    pub no_project_doc: bool,
}

#[derive(Debug, Args)]
#[command(after_long_help = MCP_HELP)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured server as a run would, then list each one: its state (started,
    /// failed and why, disabled, untrusted), its start time and its tools
    List {
        /// Machine-readable output: a JSON array
        #[arg(long)]
        json: bool,
    },
}

const MCP_HELP: &str = "\
MCP servers come from [mcp_servers.NAME] tables of the config files (command, args, env, cwd,
enabled, startup_timeout_sec, tool_timeout_sec, enabled_tools, disabled_tools, subagents; or
url, bearer_token_env_var, http_headers) and from a project's .mcp.json (Claude Code's
format), whose servers start only after 'hx trust'. Their tools reach the model as
mcp__SERVER__TOOL.";

#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// The mode to show instead of the configured one
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<crate::sandbox::Mode>,
    /// Machine-readable output: one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_long_help = TRUST_HELP)]
pub struct TrustArgs {
    /// Trust without asking (required when stdin is not a terminal)
    #[arg(long, short = 'y', conflicts_with_all = ["list", "revoke"])]
    pub yes: bool,
    /// List the trusted files of every project
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Stop trusting this project's files
    #[arg(long)]
    pub revoke: bool,
}

const TRUST_HELP: &str = "\
A project's .hx/config.toml (it can send your API key to another server or turn the guard off),
.hx/hooks.json (it runs commands) and .mcp.json (its MCP servers are commands, or endpoints
that get the model's tool calls) come with the repository, so hx ignores them, with one
warning, until you approve their content here; so do the !`command`s of the command files in
.claude/commands and .agents/commands, which stay text until then. hx trust shows each file's
path, hash and content (or its commands, or each command file's !`command`s), then asks. Any
change to a file (to a command a command file runs) needs approving again; the user's own
files (~/.config/hx, ~/.claude/commands) and the environment need no trust.";

#[derive(Debug, Args)]
#[command(after_long_help = SESSIONS_HELP)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// The sessions of this workspace, newest first: id, start, turns, outcome, task
    List {
        /// Every workspace's sessions
        #[arg(long)]
        all: bool,
        /// Machine-readable output: a JSON array
        #[arg(long)]
        json: bool,
    },
    /// A readable transcript of one session, its subagents nested
    Show {
        /// The session's id, or any unique part of it (the short id of a listing)
        id: String,
        /// Print the session file's lines as they are
        #[arg(long)]
        json: bool,
    },
    /// Remove sessions (with their subagents' files); one in use by a running hx is left
    Rm {
        /// Ids, or unique parts of them
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Remove the sessions of this workspace not written for a while
    Prune {
        /// Age, as 30d, 12h or 2w
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: std::time::Duration,
        /// Every workspace's sessions
        #[arg(long)]
        all: bool,
    },
}

fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e} (for example 30d, 12h, 2w)"))
}

const SESSIONS_HELP: &str = "\
Every run is recorded (unless --ephemeral or sessions = false) in
$XDG_STATE_HOME/hx/sessions/<workspace>/<id>.jsonl (default ~/.local/state/hx/...).
Continue the newest with 'hx agent -c \"...\"', or any with 'hx agent -r ID \"...\"'.
A session belongs to the project (the git root, else the folder hx ran in): -c in a subfolder
goes on with the project's newest. An id is shown by its last 8 characters; -r, show and rm
take any unique part of one, and find an id of another workspace when only it has it.
Old sessions go with 'hx sessions prune --older-than 30d', or by themselves with
[sessions] keep_days = 30 in a config file.";

#[derive(Debug, Args)]
#[command(after_long_help = SKILLS_HELP)]
pub struct SkillsArgs {
    #[command(subcommand)]
    pub command: SkillsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List the skills visible from here: name, source, path and description
    List {
        /// Machine-readable output: a JSON array of {name, source, path, description}
        #[arg(long)]
        json: bool,
    },
    /// Print a skill exactly as load_skill gives it to the model
    Show {
        /// The skill's name
        name: String,
    },
    /// Validate skills against the Agent Skills specification (exit 1 on any error)
    Check {
        /// A skills folder, a skill's folder or a SKILL.md [default: every skills root
        /// visible from here]
        path: Option<std::path::PathBuf>,
    },
    /// Measure whether a skill's description makes the model load it: each query of an eval
    /// set sent as a run's first request, the share of answers that call load_skill with
    /// it (costs QUERIES x RUNS requests)
    #[command(after_long_help = SKILLS_EVAL_HELP)]
    Eval(SkillsEvalArgs),
}

#[derive(Debug, Args)]
pub struct SkillsEvalArgs {
    /// The skill's name
    pub name: String,
    /// The eval set: a JSON list of {"query": "...", "should_trigger": true|false} [default:
    /// evals/trigger.json in the skill's folder]
    #[arg(long, value_name = "FILE")]
    pub eval_set: Option<std::path::PathBuf>,
    /// Requests per query: its trigger rate is the share of them that load the skill
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=crate::app::skill_eval::MAX_RUNS as i64))]
    pub runs: u32,
    /// Queries asked at once (each query's runs go one after another)
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=crate::app::skill_eval::MAX_JOBS as i64))]
    pub jobs: u16,
    /// A query that should trigger passes at this trigger rate or above; one that should not,
    /// below it
    #[arg(long, value_name = "RATE", default_value_t = 0.5, value_parser = parse_rate)]
    pub threshold: f64,
    /// Try this description instead of the one in the skill's SKILL.md (the file is not
    /// changed)
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
    /// Leave only this skill in the catalog (by default the others stay, and compete with
    /// it as in a real run)
    #[arg(long)]
    pub only: bool,
    /// skill-creator's result as JSON on stdout (skill_name, description, results, summary),
    /// with precision, recall, the requests made, their tokens and their cost
    #[arg(long)]
    pub json: bool,
    /// Model name [default: the provider's, or HX_MODEL]
    #[arg(short = 'm', long, value_name = "NAME")]
    pub model: Option<String>,
    /// Provider: deepseek, openai, openrouter, ollama, or a [providers.NAME] from a config file
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// How hard the model thinks before it answers, as for hx agent
    #[arg(long, value_name = "EFFORT")]
    pub effort: Option<crate::model::Effort>,
}

/// A rate between 0 and 1.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err("a rate between 0 and 1, such as 0.5".into()),
    }
}

const SKILLS_EVAL_HELP: &str = "\
The method of Anthropic's skill-creator (run_eval.py), built in. For each query of the eval
set, hx sends the first request a run here would send: the system prompt with the skill
catalog, the tools (MCP servers' included: they are started as for a run), and the query as
the user's message. A response that calls load_skill with the skill's name is a trigger;
the query's trigger rate is triggers / runs. No tool is run, no hook, nothing is recorded,
and no file changes. The other skills stay in the catalog unless --only.

Cost: QUERIES x RUNS requests (3 per query by default), each of a few thousand tokens
(hx context shows how many) of which all but the query are the same for every request. A
query's runs go one after another, so each repeats a request whose input the provider's
prompt cache has just stored; --jobs queries go at once. The answer is the model's first
response only. The tokens and the cost are printed at the end; max_cost in a config file
stops the eval once passed.

Output: per query PASS or FAIL, triggers/runs and what was expected; then how many passed,
precision (of the runs that loaded the skill, the share that should have) and recall (of the
runs that should have, the share that did). --json prints the same as one JSON object.

Exit codes: 0 every query passed   1 a query failed, or a request failed (API, network)
  2 usage error: no such skill, an eval set that is missing or not valid, a bad flag";

const SKILLS_HELP: &str = "\
Skills are read from, highest precedence first:
  .agents/skills and .claude/skills in the nearest folder at or above the working directory
  that has either (the project), then ~/.agents/skills and ~/.claude/skills (the user).
Each skill is a folder with a SKILL.md: YAML frontmatter with name and description, then the
instructions in Markdown. The agent sees only the names and descriptions until it calls
load_skill.";

#[derive(Debug, Args)]
#[command(after_long_help = AGENTS_HELP)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: AgentsCommand,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List the subagent types visible from here: name, source, tools after mapping, model,
    /// path, and the agent files that could not be read
    List {
        /// Machine-readable output: a JSON array of {name, source, path, description, tools,
        /// model, notes}, then the files not read
        #[arg(long)]
        json: bool,
    },
    /// Print a subagent type: where it came from, its tools and model, what was left out, and
    /// the instructions it starts with
    Show {
        /// The agent's name
        name: String,
    },
    /// Read agent files and report every problem (exit 1 when a file cannot be used)
    Check {
        /// An agent file or a folder of them [default: every agents folder visible from here]
        path: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Args)]
#[command(after_long_help = COMMANDS_HELP)]
pub struct CommandsArgs {
    #[command(subcommand)]
    pub command: CommandsCommand,
}

#[derive(Debug, Subcommand)]
pub enum CommandsCommand {
    /// List the commands visible from here: name, source, argument hint, model, tools after
    /// mapping, path, and the command files that could not be read
    List {
        /// Machine-readable output: {commands: [{name, source, path, root, description,
        /// argument_hint, model, tools, notes}], not_read: [...]}
        #[arg(long)]
        json: bool,
    },
    /// Print a command: where it came from, its fields after mapping, what was left out, and
    /// its body as written
    Show {
        /// The command's name (dir:name for a subfolder's file)
        name: String,
    },
}

const COMMANDS_HELP: &str = "\
Command files (Claude Code's format) are read from, highest precedence first:
  .agents/commands and .claude/commands in the nearest folder at or above the working
  directory that has either (the project), then ~/.agents/commands and ~/.claude/commands.
A file dir/name.md is /dir:name. Optional frontmatter: description, argument-hint, model (for
that message only; Claude's models mean the configured one), allowed-tools (the tools that
message may use). In the body $ARGUMENTS and $1..$9 are the words after the name; a
!`command` runs and is replaced by its output, in a project only once `hx trust` approved
what its commands folder runs.";

const AGENTS_HELP: &str = "\
Agent files (Claude Code's subagent format) are read from, highest precedence first:
  .agents/agents and .claude/agents in the nearest folder at or above the working directory
  that has either (the project), then ~/.agents/agents and ~/.claude/agents (the user).
Each *.md file has YAML frontmatter with name, description, optional tools (Claude's names
Bash, Read, Write, Edit, MultiEdit, Glob and LS map to hx's tools; mcp__SERVER__TOOL to that
MCP tool) and optional model (Claude's models mean the configured one), then the subagent's
instructions. The model starts one with task's subagent_type. A subagent never gets task,
todo_write or load_skill.";

/// The options `hx agent` and `hx chat` share: where requests go and what tools may do.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Model name [default: the provider's, or HX_MODEL]
    #[arg(short = 'm', long, value_name = "NAME")]
    pub model: Option<String>,
    /// Base URL of the API; requests go to {base}/chat/completions
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Stop after this many model requests for one task or message: hx agent then exits
    /// with code 3; hx chat ends that message, says so, and waits for the next one, which
    /// gets as many again [default: 200]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// End the run after the request that takes its cost past AMOUNT (in the model's price
    /// currency, dollars for DeepSeek; hx agent then exits with code 3); needs a priced model
    /// (built in for DeepSeek, [pricing."MODEL"] for others) [default: max_cost, or none]
    #[arg(long, value_name = "AMOUNT")]
    pub max_cost: Option<f64>,
    /// Provider: deepseek, openai, openrouter, ollama, or a [providers.NAME] from a config file
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// How hard the model thinks before it answers ('hx agent --help': Effort) [default: none
    /// sent, so the model's own holds; DeepSeek V4: thinking on, at high]
    #[arg(long, value_name = "EFFORT")]
    pub effort: Option<crate::model::Effort>,
    /// Show the model's reasoning on stderr: dimmed, or after `thinking:` without colour
    #[arg(long)]
    pub show_reasoning: bool,
    /// Turn off the built-in guard that refuses destructive bash commands (rm -rf /, sudo,
    /// mkfs, ...); hx chat then asks nothing either
    #[arg(long)]
    pub no_guard: bool,
    /// What bash may write: workspace-write (the workspace, the temporary folder and
    /// sandbox.writable_roots), read-only (nothing, and write_file and edit_file refuse),
    /// or off [default: workspace-write]
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<crate::sandbox::Mode>,
    /// Leave the AGENTS.md (CLAUDE.md) files out of the system prompt
    #[arg(long)]
    pub no_project_doc: bool,
}

impl RunArgs {
    pub fn flags(&self) -> crate::config::Flags {
        crate::config::Flags {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            max_turns: self.max_turns,
            max_cost: self.max_cost,
            show_reasoning: self.show_reasoning,
            no_guard: self.no_guard,
            sandbox: self.sandbox,
            no_project_doc: self.no_project_doc,
            effort: self.effort,
            session_effort: None,
        }
    }
}

#[derive(Debug, Args)]
#[command(after_long_help = AGENT_HELP)]
pub struct AgentArgs {
    /// The task, as words. Without words the task is read from stdin. With both, a piped
    /// stdin is read to its end and appended to the task as a <stdin> block (so in a `while
    /// read` loop hx would eat the loop's input: pass --no-stdin there)
    #[arg(value_name = "TASK")]
    pub task: Vec<String>,
    /// Never read stdin: the task is the words alone
    #[arg(long)]
    pub no_stdin: bool,
    #[command(flatten)]
    pub run: RunArgs,
    /// No trace on stderr: only warnings, errors and the answer
    #[arg(short = 'q', long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Whole tool results in the trace instead of their first and last lines, and every
    /// retry in full
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Events as JSON Lines on stdout, one per line (schema in the README); stderr gets only
    /// fatal errors
    #[arg(long, conflicts_with_all = ["quiet", "verbose"])]
    pub json: bool,
    /// Also write the final answer to FILE (replaced atomically; only when the model answers)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_last_message: Option<std::path::PathBuf>,
    /// Continue the newest session of this workspace: TASK is its next user message
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_: bool,
    /// Continue the session with this id (a unique prefix is enough; 'hx sessions list')
    #[arg(short = 'r', long, value_name = "ID")]
    pub resume: Option<String>,
    /// Record nothing: no session file for this run
    #[arg(long)]
    pub ephemeral: bool,
    /// Compact the session given with -c or -r (summarise its history to free the context
    /// window) and stop, without a task
    #[arg(long, conflicts_with_all = ["task", "ephemeral"])]
    pub compact: bool,
}

#[derive(Debug, Args, Default)]
pub struct AcpArgs {
    #[command(flatten)]
    pub run: RunArgs,
}

const ACP_HELP: &str = "\
An editor starts hx acp and speaks ACP v1 to it (JSON-RPC, one message a line; stdout carries
nothing else, logs go to stderr). Sessions are recorded like any run: hx agent -c or hx chat -c
goes on with one in a terminal, and session/load reopens it in the editor. Where hx chat would
ask (a command the guard refuses), the editor asks. The flags apply to every session; the key
comes from the config and the environment, as for hx agent.";

#[derive(Debug, Args, Default)]
#[command(after_long_help = CHAT_HELP)]
pub struct ChatArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Continue the newest session of this workspace
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_: bool,
    /// Continue the session with this id (a unique prefix is enough)
    #[arg(short = 'r', long, value_name = "ID")]
    pub resume: Option<String>,
    /// Record nothing: no session file
    #[arg(long)]
    pub ephemeral: bool,
}

const CHAT_HELP: &str = "\
Type a message and press Enter; the answer streams as it arrives. Alt-Enter or a trailing \\
starts a new line, a pasted block is one message, Ctrl-R searches the history
($XDG_STATE_HOME/hx/history), Tab completes commands and skill names.

Ctrl-C stops the running turn (its commands and subagents too) and gives the prompt back;
at an empty prompt, Ctrl-C twice, Ctrl-D or /exit leaves. /help lists the commands.

When the guard would refuse a command, hx asks: y runs it once, a runs this exact command
for the rest of the session, n (or Enter) refuses. A hook's block is never asked about.

The conversation is a session like any other: hx agent -c \"...\" or hx chat -c goes on with it.";

pub(super) const AGENT_HELP: &str = "\
Providers (--provider, HX_PROVIDER, or provider = \"...\" in a config file):
  deepseek    https://api.deepseek.com      key DEEPSEEK_API_KEY, URL DEEPSEEK_BASE_URL
              (the default; model deepseek-flash, or deepseek-v4-pro; the old
              deepseek-v4-flash still works; the retired deepseek-chat and
              deepseek-reasoner are deepseek-flash thinking off and on)
  openai      https://api.openai.com/v1     key OPENAI_API_KEY, URL OPENAI_BASE_URL
  openrouter  https://openrouter.ai/api/v1  key OPENROUTER_API_KEY
  ollama      http://localhost:11434/v1     no key (start the server with 'ollama serve')
  Other than deepseek, give a model (-m NAME, HX_MODEL, or model = \"...\"). Any other
  OpenAI-compatible server: --base-url URL, or a [providers.NAME] table (below).

Environment:
  HX_MODEL           model name for any provider
  HX_PROVIDER        provider to use when --provider is not given
  NO_COLOR           no colour and no spinner on stderr
  TERM=dumb          no escape codes at all

Configuration files (TOML; later ones win, then environment, then flags):
  $XDG_CONFIG_HOME/hx/config.toml (or ~/.config/hx/config.toml)
  .hx/config.toml in the working directory or the nearest parent that has one

  provider = \"ollama\"
  [providers.ollama]
  base_url = \"http://localhost:11434/v1\"
  model = \"qwen3-coder\"        # no api_key_env: no Authorization header

  The project file applies only after 'hx trust' (and again after each change to it).

Effort (--effort; effort = \"...\" in a config file or a [providers.NAME] table; /effort in
hx chat):
  off, low, high or max: how long the model thinks before it answers. Thinking costs output
  tokens and time; a quick edit needs little, a hard bug may need max. Without a setting hx
  sends none and the model's default holds (DeepSeek V4: thinking on, at high).
  deepseek    off: \"thinking\": {\"type\": \"disabled\"}; the others: \"thinking\":
              {\"type\": \"enabled\"} and \"reasoning_effort\": low, high or max
  openai      \"reasoning_effort\": none, low, high or xhigh
  openrouter  \"reasoning\": {\"effort\": none, low, high or xhigh}
  Other servers may refuse a key they do not know: they get an effort (as reasoning_effort)
  only from --effort or their own table. subagent_effort = \"...\" sets the subagents'
  (default: the main agent's).

Cost:
  Each request is priced from the usage the server reported, at its time: built in for
  DeepSeek (deepseek-flash, deepseek-v4-pro; twice the price 01:00-04:00 and 06:00-10:00 UTC
  on weekdays), [pricing.\"MODEL\"] in a config file for others; a model without a price
  shows cost=unknown. The Stop line, --json's usage, hx chat and 'hx sessions list' say what
  a run cost; --max-cost AMOUNT (max_cost = AMOUNT) ends the run after the request that takes
  it past AMOUNT.

Sandbox (Landlock; 'hx sandbox' shows what this machine enforces):
  bash and what it starts may write only in the workspace, /tmp, $TMPDIR and
  sandbox.writable_roots (--sandbox workspace-write, the default), nowhere (read-only), or
  anywhere (off). [sandbox] network = false refuses IPv4 and IPv6 sockets (TCP, UDP).

Hooks (Claude Code's hooks.json format):
  ~/.config/hx/hooks.json always runs; .hx/hooks.json of the project runs only after
  'hx trust' (and again after each change to it). A hooks file that is not valid stops the
  run before its first request.

Sessions:
  Every run is recorded in $XDG_STATE_HOME/hx/sessions (default ~/.local/state/hx/sessions)
  unless --ephemeral or 'sessions = false'. -c continues the newest session of this
  workspace, -r ID a given one; a continued session keeps its model, provider and effort
  unless --model, --provider or --effort says otherwise. 'hx sessions list' and
  'hx sessions show ID'.

Output:
  stdout carries the final answer only; the trace, reasoning and warnings go to stderr, and
  on a terminal a spinner shows what hx waits for. -q: no trace; -v: whole tool results.
  --json: stdout is JSON Lines events (thread.started, turn.started, item.started,
  item.updated, item.completed, turn.completed, turn.failed, error; the README has the
  schema), stderr only fatal errors. -o FILE also writes the answer to FILE.

Stdin:
  A piped stdin is read to its end and added to the task. Inside a 'while read' loop that
  would eat the loop's input: pass --no-stdin (or < /dev/null).

Exit codes:
  0 answered   1 run failed (API, network, or stopped by a hook)   2 usage or configuration error
  3 stopped at --max-turns or --max-cost   130 SIGINT (Ctrl-C)   143 SIGTERM   129 SIGHUP
  A signal kills the running commands, and hx ends everything it started before it exits.";
