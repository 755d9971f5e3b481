//! The command line: clap's definitions of every command, its flags and its help; those of
//! the commands that run the agent are in `args/run.rs`.

use clap::{Args, Parser, Subcommand};

use run::ACP_HELP;
pub use run::*;

mod run;

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
    /// Show what the bash sandbox would enforce on this machine, and whether it hides the
    /// files denied to the model (.hxignore, Read(...) deny rules) from commands (no API key
    /// needed)
    Sandbox(SandboxArgs),
    /// Print the system prompt a run here would start with, the size of each part of it,
    /// and the files denied to the model (.hxignore, Read(...) deny rules; no API key needed)
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
    /// Drop the checkpoints of sessions that are gone, past checkpoints.keep_sessions or
    /// older than checkpoints.keep_days, and pack the store (also done once a day without
    /// asking)
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
.hx/hooks.json and a .claude/settings.json with hooks (they run commands) and .mcp.json (its
MCP servers are commands, or endpoints that get the model's tool calls) come with the repository, so hx ignores them, with one
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
    /// Write one session out for another program or person: as an ATIF trajectory, a
    /// Markdown document or the session file's own lines (nothing is uploaded)
    #[command(after_long_help = EXPORT_HELP)]
    Export {
        /// The session's id, or any unique part of it (the short id of a listing)
        id: String,
        /// What to write
        #[arg(long, value_name = "FORMAT")]
        format: ExportFormat,
        /// Write to FILE (replaced whole, atomically) instead of stdout
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Remove sessions (with their subagents' files and their checkpoints); one in use by a
    /// running hx is left
    Rm {
        /// Ids, or unique parts of them
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Remove the sessions of this workspace not written for a while, and their checkpoints
    Prune {
        /// Age, as 30d, 12h or 2w
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: std::time::Duration,
        /// Every workspace's sessions
        #[arg(long)]
        all: bool,
    },
}

/// What `hx sessions export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Harbor's Agent Trajectory Interchange Format (ATIF v1.7), one JSON document, the
    /// subagents' sessions embedded
    Atif,
    /// A readable document: each message, tool call and result, for people
    Markdown,
    /// The session file's lines as recorded
    Jsonl,
}

const EXPORT_HELP: &str = "\
Formats:
  atif      One JSON document in Harbor's Agent Trajectory Interchange Format (ATIF v1.7),
            as Harbor writes trajectory.json: the system prompt and each user message a
            step, each model response an agent step with its reasoning, tool calls (their
            arguments as JSON) and results (its observation), and the tokens and cost of its
            request; totals in final_metrics. A compaction or a rewind is a system step
            (extra.context_management), and the history a compaction put in place follows it
            as steps marked is_copied_context: steps are what happened, in order. Subagents'
            sessions are embedded (subagent_trajectories), referred to from the task call
            that started each. Harbor checks one with:
              python -m harbor.utils.trajectory_validator FILE
  markdown  A document for people: the task as its title, model, provider, start and
            figures, then each user message, the model's reasoning and text, its tool calls
            and results in fenced blocks (results, arguments and reasoning longer than 4,000
            characters keep their start and end), compactions, rewinds and runs in line,
            subagents under the call that started them. The system prompt is left out.
  jsonl     The session file's complete lines, byte for byte, once the whole file reads as
            a session (a last line cut short by a crash is left out, with a warning).
Session text is never run or fetched; on a terminal, control characters are shown, not
obeyed. Without -o the document goes to stdout.";

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
    /// Provider: deepseek, openai, openrouter, ollama, llamacpp, vllm, or a [providers.NAME] from a config file
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
