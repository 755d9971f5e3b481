//! Command-line definitions and subcommand dispatch.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};

use crate::agent::{prompt, Agent, Outcome};
use crate::config::{process_env, Config, Flags};
use crate::hooks::{self, trace::TraceHook, user::CommandHooks, GuardHook, HookContext, Hooks};
use crate::model::OpenAiClient;
use crate::term::{Renderer, Term};
use crate::tools::task::{self, Task};
use crate::tools::todo::{TodoList, TodoWrite};
use crate::tools::{Registry, ToolContext, ToolSet, Workspace};

/// Exit codes, as documented in the README.
pub mod exit {
    pub const ANSWERED: i32 = 0;
    pub const FAILED: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const MAX_TURNS: i32 = 3;
    pub const INTERRUPTED: i32 = 130;
}

#[derive(Debug, Parser)]
#[command(
    name = "hx",
    version,
    about = "A coding agent for the terminal",
    long_about = "hx runs an agent loop against an OpenAI-compatible chat-completions API \
                  (DeepSeek by default): the model calls tools (bash, read_file, write_file, \
                  edit_file, glob), hx runs them in the working directory and sends the results \
                  back, until the model answers in plain text.",
    after_help = "Run 'hx agent --help' for the agent's options, configuration and exit codes."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the agent on a task until it answers
    Agent(AgentArgs),
    /// Allow this project's hooks (.hx/hooks.json) to run, as they are now
    Trust(TrustArgs),
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// List the trusted hooks files
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Stop trusting this project's hooks file
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Args)]
#[command(after_long_help = AGENT_HELP)]
pub struct AgentArgs {
    /// The task, as words. Without words the task is read from stdin; with both, stdin is
    /// appended to the task as a <stdin> block.
    #[arg(value_name = "TASK")]
    pub task: Vec<String>,
    /// Model name [default: deepseek-v4-flash, or HX_MODEL]
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Base URL of the API; requests go to {base}/chat/completions
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Stop after this many model requests (exit code 3) [default: 200]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Provider: deepseek, openai, openrouter, ollama, or a [providers.NAME] from a config file
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Show the model's reasoning, dimmed, on stderr
    #[arg(long)]
    pub show_reasoning: bool,
    /// Turn off the built-in guard that refuses destructive bash commands (rm -rf /, sudo,
    /// mkfs, ...)
    #[arg(long)]
    pub no_guard: bool,
}

const AGENT_HELP: &str = "\
Environment:
  DEEPSEEK_API_KEY   API key for the default provider (required for it)
  DEEPSEEK_BASE_URL  base URL of the deepseek provider [default: https://api.deepseek.com]
  HX_MODEL           model name for any provider
  HX_PROVIDER        provider to use when --provider is not given
  NO_COLOR           disable colour on stderr

Configuration files (TOML; later ones win, then environment, then flags):
  $XDG_CONFIG_HOME/hx/config.toml (or ~/.config/hx/config.toml)
  .hx/config.toml in the working directory or the nearest parent that has one

  provider = \"ollama\"
  [providers.ollama]
  base_url = \"http://localhost:11434/v1\"
  model = \"qwen3-coder\"        # no api_key_env: no Authorization header

Output:
  stdout carries the final answer only; traces, reasoning and warnings go to stderr.

Exit codes:
  0 answered   1 run failed (API or network)   2 usage or configuration error
  3 stopped at --max-turns   130 interrupted (Ctrl-C)";

/// Parses argv and runs the command; returns the process exit code.
pub fn main_with_args() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help and version to stdout with exit 0, errors to stderr with 2.
            let _ = e.print();
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::ANSWERED
            };
        }
    };
    match cli.command {
        Command::Agent(args) => agent_command(args),
        Command::Trust(args) => trust_command(args),
    }
}

fn trust_command(args: TrustArgs) -> i32 {
    use crate::hooks::trust::{run, TrustAction};
    let action = match (args.list, args.revoke) {
        (true, _) => TrustAction::List,
        (_, true) => TrustAction::Revoke,
        _ => TrustAction::Trust,
    };
    match std::env::current_dir() {
        Ok(cwd) => run(action, &cwd, &process_env()),
        Err(e) => fail(
            exit::USAGE,
            format!("cannot read the working directory: {e}"),
        ),
    }
}

fn fail(code: i32, msg: impl std::fmt::Display) -> i32 {
    eprintln!("hx: {msg}");
    code
}

fn agent_command(args: AgentArgs) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            return fail(
                exit::USAGE,
                format!("cannot read the working directory: {e}"),
            )
        }
    };
    let flags = Flags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        max_turns: args.max_turns,
        show_reasoning: args.show_reasoning,
        no_guard: args.no_guard,
    };
    let config = match Config::load(&cwd, &process_env(), &flags) {
        Ok(c) => c,
        Err(e) => return fail(exit::USAGE, e),
    };
    if let Err(e) = config.require_key() {
        return fail(exit::USAGE, e);
    }
    let task = match read_task(&args.task) {
        Ok(t) => t,
        Err(e) => return fail(exit::USAGE, e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(exit::FAILED, format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(run_agent(config, cwd, task))
}

/// Builds the task from the words and stdin.
fn read_task(words: &[String]) -> Result<String, String> {
    let words = words.join(" ");
    let stdin_piped = !std::io::stdin().is_terminal();
    let stdin = if stdin_piped {
        let mut buf = Vec::new();
        // Bounded: a task is text for a model, not a data pipe.
        const MAX: u64 = 8 * 1024 * 1024;
        std::io::stdin()
            .take(MAX + 1)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        if buf.len() as u64 > MAX {
            return Err("stdin is larger than 8 MiB; pass a file path in the task instead".into());
        }
        String::from_utf8(buf).map_err(|_| "stdin is not valid UTF-8 text".to_string())?
    } else {
        String::new()
    };
    let task =
        match (words.trim().is_empty(), stdin.trim().is_empty()) {
            (false, false) => format!(
                "{}\n\n<stdin>\n{}\n</stdin>",
                words.trim(),
                stdin.trim_end()
            ),
            (false, true) => words.trim().to_string(),
            (true, false) => stdin.trim().to_string(),
            (true, true) => return Err(
                "no task given: pass it as words (hx agent \"fix the failing test\") or on stdin"
                    .into(),
            ),
        };
    Ok(task)
}

/// The main agent for `cwd`: every tool, the trace hook, the guard, the user's command hooks
/// (hooks.json; load warnings go to `term`), the base system prompt. The subagent that `task`
/// starts shares its model, hooks and workspace.
pub fn build_agent(config: &Config, cwd: &Path, term: Arc<Term>) -> Result<Agent, String> {
    let workspace = Workspace::new(cwd.to_path_buf())
        .map_err(|e| format!("cannot open the workspace {}: {e}", cwd.display()))?;
    let root: PathBuf = workspace.root().to_path_buf();
    let client = OpenAiClient::new(config.client_options())?;
    let mut hooks = Hooks::new().with_trace(Arc::new(TraceHook::new(term.clone())));
    if config.guard {
        hooks = hooks.with_guard(Arc::new(GuardHook));
    }
    let (entries, warnings) = hooks::config::load(&root, &process_env());
    for w in warnings {
        term.line(&w);
    }
    let user_hooks = CommandHooks::new(entries, term.clone());
    if !user_hooks.is_empty() {
        hooks.push_user(Arc::new(user_hooks));
    }
    let mut registry = Registry::standard();
    let child = Agent {
        model: Arc::new(client),
        model_name: config.model.clone(),
        tools: ToolSet::new(registry.clone(), &task::SUBAGENT_TOOLS),
        tool_cx: ToolContext {
            workspace,
            limits: config.limits.clone(),
        },
        hooks,
        hook_cx: HookContext {
            cwd: root.clone(),
            prefix: String::new(),
            session_id: session_id(),
        },
        system_prompt: prompt::subagent(&root),
        max_turns: config.subagent_max_turns,
        reminders: Vec::new(),
        is_subagent: true,
    };
    let todos = TodoList::new();
    registry.register(Arc::new(TodoWrite::new(todos.clone(), term)));
    registry.register(Arc::new(Task::new(child.clone())));
    Ok(Agent {
        tools: ToolSet::new(registry, &PARENT_TOOLS),
        system_prompt: prompt::assemble(prompt::base(&root), &[]),
        max_turns: config.max_turns,
        reminders: vec![todos],
        is_subagent: false,
        ..child
    })
}

/// The main agent's tools, in the order their specs are sent.
pub const PARENT_TOOLS: [&str; 7] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "todo_write",
    "task",
];

async fn run_agent(config: Config, cwd: PathBuf, task: String) -> i32 {
    let term = Term::detect();
    let agent = match build_agent(&config, &cwd, term.clone()) {
        Ok(a) => a,
        Err(e) => return fail(exit::USAGE, e),
    };
    let mut renderer = Renderer::new(term.clone(), config.show_reasoning);
    let result = tokio::select! {
        r = agent.run(&task, &mut renderer) => r,
        _ = tokio::signal::ctrl_c() => {
            // Dropping the run future kills any running command's process group.
            return fail(exit::INTERRUPTED, "interrupted");
        }
    };
    match result {
        Ok(report) => match report.outcome {
            Outcome::Answered(text) => {
                if renderer.streamed_answer() {
                    if !text.ends_with('\n') {
                        term.out_raw("\n");
                    }
                } else if !text.is_empty() {
                    term.out_raw(&format!("{}\n", text.trim_end_matches('\n')));
                }
                exit::ANSWERED
            }
            Outcome::Stopped(reason) => fail(exit::FAILED, format!("stopped by a hook: {reason}")),
            Outcome::MaxTurns(_) => fail(
                exit::MAX_TURNS,
                format!(
                    "stopped after {} turns (--max-turns) without a final answer",
                    config.max_turns
                ),
            ),
        },
        Err(e) => fail(exit::FAILED, e),
    }
}

/// A random id for this run, given to command hooks as `session_id`. Never part of a prompt,
/// so it cannot spoil the request prefix cache.
fn session_id() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}
