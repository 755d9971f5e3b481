//! `hx agent`: build the agent for the working directory and run one task.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{exit, fail, AgentArgs};
use crate::agent::{prompt, Agent, Outcome};
use crate::config::{process_env, Config, Env, Flags};
use crate::hooks::{self, trace::TraceHook, user::CommandHooks, HookContext, Hooks};
use crate::model::OpenAiClient;
use crate::skills::{self, LoadSkill};
use crate::term::{Renderer, Term};
use crate::tools::task::{self, Task};
use crate::tools::todo::{TodoList, TodoWrite};
use crate::tools::{Registry, ToolContext, ToolSet, Workspace};

pub(super) fn agent_command(args: AgentArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let flags = Flags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        max_turns: args.max_turns,
        show_reasoning: args.show_reasoning,
        no_guard: args.no_guard,
    };
    let env = process_env();
    let config = match Config::load(&cwd, &env, &flags) {
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
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(exit::FAILED, format!("cannot start the async runtime: {e}")),
    };
    let code = runtime.block_on(run_agent(config, cwd, env, task));
    // Do not wait for blocking work still in flight (a read stuck on a FIFO, a slow walk):
    // after Ctrl-C or an answer nothing it could produce is wanted.
    runtime.shutdown_background();
    code
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
/// (hooks.json; load warnings go to `term`), the skill catalog. The subagent that `task`
/// starts shares its model, hooks and workspace.
pub fn build_agent(
    config: &Config,
    cwd: &Path,
    env: &Env,
    term: Arc<Term>,
) -> Result<Agent, String> {
    let workspace = Workspace::new(cwd)
        .map_err(|e| format!("cannot open the workspace {}: {e}", cwd.display()))?;
    let root: PathBuf = workspace.root().to_path_buf();
    let home = super::home_dir();
    let skill_roots = skills::skill_roots(&root, home.as_deref());
    // Skill folders outside the workspace (the user's, or a project's above a subfolder) stay
    // readable, since load_skill lists their files for the model to read.
    let workspace = workspace.with_read_only(skill_roots.iter().map(|r| r.path.clone()));
    let client = OpenAiClient::new(config.client_options())?;
    let mut hooks = Hooks::new()
        .with_trace(Arc::new(TraceHook::new(term.clone())))
        .with_guard(config.guard);
    let (entries, warnings) = hooks::config::load(&root, env);
    for w in warnings {
        term.line(&w);
    }
    let user_hooks =
        CommandHooks::new(entries, term.clone()).with_output_chars(config.limits.output_chars);
    if !user_hooks.is_empty() {
        hooks = hooks.with_user(Arc::new(user_hooks));
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
        reasoning_echo: config.reasoning_echo,
        reminders: Vec::new(),
        is_subagent: true,
    };
    let discovery = skills::discover_roots(&skill_roots);
    for w in &discovery.warnings {
        term.line(&format!("hx: warning: {w}"));
    }
    let skills = Arc::new(discovery.registry);
    let catalog = skills.catalog(config.skills_catalog_budget);
    registry.register(Arc::new(LoadSkill::new(skills)));
    let todos = TodoList::new();
    registry.register(Arc::new(TodoWrite::new(todos.clone(), term)));
    registry.register(Arc::new(Task::new(child.clone())));
    Ok(Agent {
        tools: ToolSet::new(registry, &PARENT_TOOLS),
        system_prompt: prompt::assemble(prompt::base(&root), &[catalog]),
        max_turns: config.max_turns,
        reminders: vec![todos],
        is_subagent: false,
        ..child
    })
}

/// The main agent's tools, in the order their specs are sent.
pub const PARENT_TOOLS: [&str; 8] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "todo_write",
    "task",
    "load_skill",
];

async fn run_agent(config: Config, cwd: PathBuf, env: Env, task: String) -> i32 {
    let term = Term::detect();
    let agent = match build_agent(&config, &cwd, &env, term.clone()) {
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
                // A streamed answer is on the screen already, its line closed.
                if !renderer.streamed_answer() && !text.is_empty() {
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
