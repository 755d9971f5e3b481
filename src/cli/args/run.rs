//! The options of the commands that run the agent (`hx agent`, `hx chat`, `hx acp`): what
//! they share, what each adds, and their long help.

use clap::Args;

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
    /// (built in for DeepSeek, [pricing."MODEL"] for others): refused at start without one
    /// [default: max_cost, or none]
    #[arg(long, value_name = "AMOUNT")]
    pub max_cost: Option<f64>,
    /// Provider: deepseek, openai, openrouter, ollama, llamacpp, vllm, or a [providers.NAME] from a config file
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
    /// The tools the model is offered: default (every tool), or minimal (exactly two: a
    /// persistent bash whose folder and variables carry over between calls, and
    /// str_replace_editor; DeepSeek's Terminal-Bench setting) [default: [tools] profile, or
    /// default]
    #[arg(long, value_name = "PROFILE")]
    pub tools: Option<crate::tools::minimal::Profile>,
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
            tools: self.tools,
            session_effort: None,
        }
    }
}

#[derive(Debug, Args)]
#[command(after_long_help = AGENT_HELP)]
pub struct AgentArgs {
    /// The task, as words. Without words the task is read from stdin. With both, a piped
    /// stdin is read to its end and appended to the task as a <stdin> block, if it starts
    /// within 3 s (so in a `while read` loop hx would eat the loop's input: pass --no-stdin
    /// there)
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
    /// The whole trace: every hook step as a [HOOK] line (UserPromptSubmit, PreToolUse,
    /// PostToolUse with output_chars, PreCompact), whole tool results, every retry in full
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
    #[arg(long, conflicts_with_all = ["task", "ephemeral", "until"])]
    pub compact: bool,
    /// When the model answers, run CMD (bash -c, in the sandbox, in the workspace): if it
    /// fails, its output goes back to the model and the run goes on, until CMD passes (exit
    /// 0), or --max-turns, --max-cost or 10 rounds end the run (exit 3)
    #[arg(long, value_name = "CMD", value_parser = parse_command)]
    pub until: Option<String>,
}

/// A command for `--until`: something to run, not blank.
fn parse_command(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("give a command to run, such as 'cargo test'".into());
    }
    Ok(text.to_string())
}

#[derive(Debug, Args, Default)]
pub struct AcpArgs {
    #[command(flatten)]
    pub run: RunArgs,
}

pub(super) const ACP_HELP: &str = "\
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

pub(in crate::cli) const AGENT_HELP: &str = "\
Providers (--provider, HX_PROVIDER, or provider = \"...\" in a config file):
  deepseek    https://api.deepseek.com      key DEEPSEEK_API_KEY, URL DEEPSEEK_BASE_URL
              (the default; model deepseek-flash, or deepseek-v4-pro; the old
              deepseek-v4-flash still works; the retired deepseek-chat and
              deepseek-reasoner are deepseek-flash thinking off and on)
  openai      https://api.openai.com/v1     key OPENAI_API_KEY, URL OPENAI_BASE_URL
  openrouter  https://openrouter.ai/api/v1  key OPENROUTER_API_KEY
  ollama      http://localhost:11434/v1     no key (start the server with 'ollama serve')
  llamacpp    http://127.0.0.1:8080/v1      no key (llama.cpp: 'llama-server --jinja -m M.gguf')
  vllm        http://localhost:8000/v1      no key ('vllm serve MODEL'; tool calls need
              --enable-auto-tool-choice and --tool-call-parser)
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
  it past AMOUNT, and is refused at start for a model without a price.

Sandbox (Landlock; 'hx sandbox' shows what this machine enforces):
  bash and what it starts may write only in the workspace, /tmp, $TMPDIR and
  sandbox.writable_roots (--sandbox workspace-write, the default), nowhere (read-only), or
  anywhere (off). [sandbox] network = false refuses IPv4 and IPv6 sockets (TCP, UDP).

Tools (--tools PROFILE; [tools] profile = \"...\" in a config file):
  default: every tool (bash, read_file, write_file, edit_file, glob, background shells,
  todo_write, task, load_skill, MCP servers' tools). minimal: exactly two, DeepSeek's
  Terminal-Bench setting: a persistent bash (one shell for the run: a cd or an export holds
  for the next call; a timeout kills it and the next call starts a new one) and
  str_replace_editor (view, create, str_replace, insert, undo_edit; absolute paths in the
  workspace). No subagents, skills or MCP servers then. The sandbox is the same for both.

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
  on a terminal a spinner shows what hx waits for. The trace says what happened: a '> TOOL
  ARGS' line per call, a short line under one that failed or was refused, the plan, the Stop
  line with the run's figures; [HOOK] lines only for the events your hooks listen to.
  -q: no trace; -v: every hook step and whole tool results; trace = \"hooks\" in a config
  file: every hook step, results previewed (the first and last lines).
  --json: stdout is JSON Lines events (thread.started, turn.started, item.started,
  item.updated, item.completed, turn.completed, turn.failed, error; the README has the
  schema), stderr only fatal errors. -o FILE also writes the answer to FILE.

Stdin:
  A piped stdin is read to its end and added to the task. Beside words, a stdin that gives
  nothing (no byte, no end) within 3 s is left unread, with a notice. Inside a 'while read'
  loop that would eat the loop's input: pass --no-stdin (or < /dev/null).

Goal (--until CMD):
  After each answer hx runs CMD as the bash tool would (bash -c, in the workspace, in the
  sandbox, its output cut as a tool result is, killed after 600 s). Exit 0 passes: the answer
  stands. Otherwise CMD's output goes to the model as the next user message and the run goes
  on; --max-turns and --max-cost count the whole run, every round. After 10 failed rounds the
  run ends with exit 3. The trace shows a 'goal:' line per round, --json a goal_check item.

Exit codes:
  0 answered (with --until: and CMD passed)   1 run failed (API, network, or stopped by a hook)
  2 usage or configuration error
  3 stopped at --max-turns, --max-cost, [loop] stop_after (the same call over and over) or
    --until's 10th failed round
  130 SIGINT (Ctrl-C)   143 SIGTERM   129 SIGHUP
  A signal kills the running commands, and hx ends everything it started before it exits.";
