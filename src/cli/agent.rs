//! `hx agent`: build the agent for the working directory and run one task.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{exit, fail, AgentArgs};
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::agent::compact::Ended;
use crate::agent::task::Task;
use crate::agent::{prompt, Agent, Outcome};
use crate::config::{process_env, Config, Env, Flags};
use crate::context::instructions;
use crate::hooks::{self, trace::TraceHook, user::CommandHooks, HookContext, Hooks};
use crate::mcp::{self, Mcp};
use crate::model::{OpenAiClient, ReasoningEcho};
use crate::process::{self, signal_name};

use crate::sandbox::{Kernel, Plan};
use crate::session::{self, Recorder, Session, SessionLog, Store};
use crate::skills::{self, LoadSkill};
use crate::term::{Renderer, Term};
use crate::tools::todo::{TodoList, TodoWrite};
use crate::tools::{Registry, ToolContext, ToolSet, Workspace};

pub(super) fn agent_command(args: AgentArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let mut flags = Flags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        max_turns: args.max_turns,
        show_reasoning: args.show_reasoning,
        no_guard: args.no_guard,
        sandbox: args.sandbox,
        no_project_doc: args.no_project_doc,
    };
    let env = process_env();
    if args.compact && !args.continue_ && args.resume.is_none() {
        return fail(
            exit::USAGE,
            "--compact compacts a recorded session: name it with -c (the newest) or -r ID",
        );
    }
    let resume = match find_resumed(&args, &cwd, &env) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Some(r) = &resume {
        // A continued session keeps its provider and model unless a flag says otherwise.
        if flags.provider.is_none() {
            flags.provider = Some(r.loaded.provider.clone());
            if flags.model.is_none() {
                flags.model = Some(r.loaded.model.clone());
            }
        }
    }
    let config = match super::load_config(&cwd, &env, &flags) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Err(e) = config.require_key() {
        return fail(exit::USAGE, e);
    }
    // `--compact` has no task: it compacts the session and stops.
    let task = match args.compact {
        true => None,
        false => match read_task(&args.task) {
            Ok(t) => Some(t),
            Err(e) => return fail(exit::USAGE, e),
        },
    };
    // The key is in `config` now: blank the secrets in hx's own environment, where a command
    // could read them back (/proc/$PPID/environ). Nothing else runs yet.
    // SAFETY: single-threaded here; the runtime and its threads start below.
    unsafe { process::env::scrub_own_environ(&config.shell_env) };
    // Orphans of the commands hx runs come back to hx, so that none outlives it. Declared
    // before the runtime, so it ends them after the runtime is gone (also when unwinding).
    process::cleanup::become_subreaper();
    // Not dumpable: a command running as the same user (outside the sandbox, or with it off)
    // cannot read the API key from hx's memory through /proc/PID/mem.
    process::not_dumpable();
    let _end = EndAll {
        keep_background: config.keep_background,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(exit::FAILED, format!("cannot start the async runtime: {e}")),
    };
    // A panic outside a tool call (a bug) must still end in the cleanup below and the drop
    // guard above, not in the runtime waiting on blocking work while unwinding; the panic hook
    // has printed its line.
    let run = std::panic::AssertUnwindSafe(|| {
        runtime.block_on(run_agent(config, cwd, env, task, resume, args.ephemeral))
    });
    let code = std::panic::catch_unwind(run).unwrap_or(exit::FAILED);
    // Do not wait for blocking work still in flight (a read stuck on a FIFO, a slow walk):
    // after a signal or an answer nothing it could produce is wanted.
    runtime.shutdown_background();
    code
}

/// Ends everything hx started when `hx agent` returns, on every path; `[tools]
/// keep_background` keeps what is still running instead.
pub(super) struct EndAll {
    pub(super) keep_background: bool,
}

impl Drop for EndAll {
    fn drop(&mut self) {
        if !self.keep_background {
            process::cleanup::end_all();
        }
    }
}

/// A recorded session to continue: its file, as read, and (when this run records) the file
/// still open under the lock it was read with, so that no other run can write to it before
/// this one appends.
pub struct Resumed {
    pub path: PathBuf,
    pub loaded: session::Loaded,
    pub locked: Option<std::fs::File>,
}

/// The session `-c` or `-r ID` names, read; `None` for a new session. Problems are reported
/// here: an unknown or ambiguous id is a usage error (2), a damaged file a failure (1).
fn find_resumed(args: &AgentArgs, cwd: &Path, env: &Env) -> Result<Option<Resumed>, i32> {
    find_session(
        args.continue_,
        args.resume.as_deref(),
        !args.ephemeral,
        cwd,
        env,
    )
}

/// The session `continue_` (the newest) or `resume` (an id or prefix) names, read; locked
/// first when this run will `record` to it.
pub(super) fn find_session(
    continue_: bool,
    resume: Option<&str>,
    record: bool,
    cwd: &Path,
    env: &Env,
) -> Result<Option<Resumed>, i32> {
    if !continue_ && resume.is_none() {
        return Ok(None);
    }
    let Some(root) = session::store::sessions_root(env) else {
        return Err(fail(
            exit::USAGE,
            "no place for sessions: set HOME or XDG_STATE_HOME",
        ));
    };
    let store = super::sessions::store_for(&root, cwd);
    let path =
        match resume {
            Some(id) => store.find(id).map_err(|e| fail(exit::USAGE, e))?,
            None => match store.newest() {
                Ok(Some(p)) => p,
                Ok(None) => return Err(fail(
                    exit::USAGE,
                    "no session to continue in this workspace; start one with hx agent \"TASK\"",
                )),
                Err(warnings) => {
                    for w in warnings {
                        errln!("hx: warning: {w}");
                    }
                    return Err(fail(
                        exit::FAILED,
                        "no readable session to continue in this workspace",
                    ));
                }
            },
        };
    let cannot = |e: &dyn std::fmt::Display| {
        fail(
            exit::FAILED,
            format!("cannot resume {}: {e}", path.display()),
        )
    };
    // Locked before it is read: a run still writing it must finish first, and nothing may be
    // added between this read and this run's first line.
    let locked = if record {
        Some(session::log::open_locked(&path).map_err(|e| cannot(&e))?)
    } else {
        None
    };
    let loaded = match &locked {
        Some(f) => session::record::read_file(f),
        None => session::record::read(&path),
    }
    .map_err(|e| cannot(&e))?;
    if loaded.header.parent_id.is_some() {
        return Err(fail(
            exit::USAGE,
            format!(
                "session {} is a subagent's; continue the session that started it",
                loaded.header.id
            ),
        ));
    }
    Ok(Some(Resumed {
        path,
        loaded,
        locked,
    }))
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
/// (hooks.json; load warnings go to `term`, and a file that is not valid is the error), the
/// project instructions, the skill catalog. The subagent that `task` starts shares its model,
/// hooks, workspace and project instructions.
pub fn build_agent(
    config: &Config,
    cwd: &Path,
    env: &Env,
    term: Arc<Term>,
    recorder: Recorder,
    session_id: &str,
) -> Result<Agent, String> {
    let mut warnings = Vec::new();
    let built = build_agent_with(
        config,
        cwd,
        env,
        term.clone(),
        recorder,
        session_id,
        None,
        &mut warnings,
    );
    for w in warnings {
        term.line(&w);
    }
    built.map(|b| b.agent)
}

/// The parts of the main agent's system prompt, in order, as (what, text): for `hx context`.
pub type PromptParts = Vec<(String, String)>;

/// The main agent, and what building it found besides.
pub struct Built {
    pub agent: Agent,
    /// The skills (for completion and `/skills` in `hx chat`).
    pub skills: Arc<skills::SkillRegistry>,
    /// What the system prompt was assembled from (`hx context`).
    pub parts: PromptParts,
}

/// [`build_agent`] with someone to put the guard's refusals to (`hx chat`; subagents ask
/// too). Its warnings are added to `warnings` rather than printed: `hx chat` builds while its
/// prompt is up.
#[allow(clippy::too_many_arguments)]
pub(super) fn build_agent_with(
    config: &Config,
    cwd: &Path,
    env: &Env,
    term: Arc<Term>,
    recorder: Recorder,
    session_id: &str,
    approver: Option<Arc<dyn hooks::Approver>>,
    warnings: &mut Vec<String>,
) -> Result<Built, String> {
    let workspace = Workspace::new(cwd)
        .map_err(|e| format!("cannot open the workspace {}: {e}", cwd.display()))?;
    let root: PathBuf = workspace.root().to_path_buf();
    let home = super::home_dir();
    let discovery = skills::discover(&root, home.as_deref());
    // The folders of the catalog's skills outside the workspace (the user's, or a project's
    // above a subfolder) stay readable, since load_skill lists their files for the model to
    // read; nothing else of a skills root is.
    let workspace = workspace.with_read_only(discovery.registry.folders_outside(&root));
    // Decided once per run, here in hx: its warnings print once, and a refusal (exit 2) comes
    // before any request.
    let plan = Plan::new(&config.sandbox, &root, env, Kernel::detect());
    for w in &plan.warnings {
        warnings.push(format!("hx: warning: {w}"));
    }
    let sandbox = plan.sandbox()?;
    let client = OpenAiClient::new(config.client_options())?;
    let mut hooks = Hooks::new()
        .with_trace(Arc::new(TraceHook::new(term.clone())))
        .with_guard(config.guard)
        .with_approver(approver);
    let (entries, hook_warnings) = hooks::config::load(&root, env)?;
    warnings.extend(hook_warnings);
    let user_hooks =
        CommandHooks::new(entries, term.clone()).with_output_chars(config.limits.output_chars);
    if !user_hooks.is_empty() {
        hooks = hooks.with_user(Arc::new(user_hooks));
    }
    // Read once: the system prompt must stay the same for the whole run (prefix cache).
    let instructions = if config.project_doc {
        instructions::discover(
            &root,
            crate::paths::user_config_dir(env).as_deref(),
            config.project_doc_max_bytes,
        )
    } else {
        instructions::Instructions::default()
    };
    for w in &instructions.warnings {
        warnings.push(format!("hx: warning: {w}"));
    }
    let project_doc = instructions.section();
    let mut registry = Registry::standard();
    // MCP servers start with the run (the first turn), their tools after the built-in ones;
    // subagents get those of the servers that say `subagents = true`.
    let planned = mcp::config::plan(&config.mcp_servers, &root, env, home.as_deref(), warnings)?;
    let for_subagents = planned.iter().any(|p| p.config.subagents);
    let mcp = (!planned.is_empty()).then(|| Mcp::new(planned, env.clone(), term.clone()));
    let mut child_registry = registry.clone();
    if let Some(m) = mcp.as_ref().filter(|_| for_subagents) {
        child_registry.set_source(m.source(true));
    }
    if let Some(m) = &mcp {
        registry.set_source(m.source(false));
    }
    let child = Agent {
        model: Arc::new(client),
        model_name: config.model.clone(),
        tools: ToolSet::for_subagents(child_registry),
        tool_cx: ToolContext {
            limits: config.limits.clone(),
            env: config.shell_env.apply(process::env::original_vars()),
            sandbox,
            ..ToolContext::new(workspace)
        },
        hooks,
        hook_cx: HookContext {
            cwd: root.clone(),
            prefix: String::new(),
            session_id: session_id.to_string(),
            tool_aliases: Arc::new(registry.claude_names()),
        },
        // The same project, so the same instructions; no skill catalog (no load_skill).
        system_prompt: prompt::assemble(
            prompt::subagent(&root),
            std::slice::from_ref(&project_doc),
        ),
        max_turns: config.subagent_max_turns,
        reasoning_echo: config.reasoning_echo,
        reminders: Vec::new(),
        is_subagent: true,
        recorder,
        context: config.context,
        restore: Vec::new(),
    };
    for w in &discovery.warnings {
        warnings.push(format!("hx: warning: {w}"));
    }
    let skills = Arc::new(discovery.registry);
    let catalog = skills.catalog(config.skills_catalog_budget);
    // The main agent has every tool, in this order: the five above, then these.
    let todos = TodoList::new();
    let echo_term = term.clone();
    let echo: crate::tools::Echo = Arc::new(move |text: &str| echo_term.line(text));
    registry.register(Arc::new(TodoWrite::new(todos.clone(), echo)));
    registry.register(Arc::new(Task::new(child.clone())));
    let load_skill = Arc::new(LoadSkill::new(skills.clone()));
    registry.register(load_skill.clone());
    let hook_cx = HookContext {
        tool_aliases: Arc::new(registry.claude_names()),
        ..child.hook_cx.clone()
    };
    let base = prompt::base(&root);
    let mut parts: PromptParts = vec![("hx's own instructions".into(), base.clone())];
    if !instructions.is_empty() {
        parts.push((
            "project instructions heading".into(),
            instructions::Instructions::heading().into(),
        ));
        parts.extend(instructions.parts());
    }
    parts.push(("skill catalog".into(), catalog.clone()));
    let agent = Agent {
        tools: ToolSet::all(registry),
        hook_cx,
        system_prompt: prompt::assemble(base, &[project_doc, catalog]),
        max_turns: config.max_turns,
        reminders: vec![todos.clone()],
        is_subagent: false,
        restore: vec![load_skill, todos],
        ..child
    };
    Ok(Built {
        agent,
        skills,
        parts,
    })
}

/// Where sessions of this run are recorded (nothing when `ephemeral` or `sessions = false`).
pub(super) fn recorder(config: &Config, workspace: &Path, env: &Env, ephemeral: bool) -> Recorder {
    let store = (!ephemeral && config.sessions)
        .then(|| session::store::sessions_root(env))
        .flatten()
        .map(|root| Store::new(&root, workspace));
    Recorder {
        store,
        workspace: workspace.display().to_string(),
        model: config.model.clone(),
        provider: config.provider.clone(),
        base_url: recorded_url(&config.base_url),
    }
}

/// The base URL as a session file keeps it: without user, password, query or fragment, where
/// a key is sometimes put (`?key=...`); session files never hold a key.
fn recorded_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => String::new(),
    }
}

/// The session this run works on: the resumed one (its calls left open answered) or a new
/// one. `Err` is an exit code, the problem reported.
pub(super) fn open_session(
    recorder: &Recorder,
    id: String,
    resume: Option<Resumed>,
    echo: ReasoningEcho,
    term: &Term,
) -> Result<Session, i32> {
    let Some(Resumed {
        path,
        loaded,
        locked,
    }) = resume
    else {
        let (session, unrecorded) = recorder.start_with_id(id, None);
        if let Some(why) = unrecorded {
            term.line(&format!("hx: warning: {why}"));
        }
        return Ok(session);
    };
    for w in &loaded.warnings {
        term.line(&format!("hx: warning: {}: {w}", path.display()));
    }
    let log = match (&recorder.store, locked) {
        (None, _) => None,
        (Some(_), Some(file)) => Some(
            SessionLog::append_locked(&path, file, loaded.valid_len).map_err(|e| {
                fail(
                    exit::FAILED,
                    format!("cannot continue session {}: {e}", loaded.header.id),
                )
            })?,
        ),
        (Some(_), None) => Some(SessionLog::append(&path, loaded.valid_len).map_err(|e| {
            fail(
                exit::FAILED,
                format!("cannot continue session {}: {e}", loaded.header.id),
            )
        })?),
    };
    let switched = loaded.provider != recorder.provider;
    let (mut session, repaired) = Session::resume(loaded, recorder.run_info(), log);
    if repaired > 0 {
        term.line(&format!(
            "hx: session {}: {repaired} tool call(s) had no result (the run ended during them); \
             they are answered as not run",
            session.id()
        ));
    }
    if switched {
        // The history was written for another server: DeepSeek answers 400 to a tool-calling
        // turn without `reasoning_content`, strict servers to one with it.
        session.adapt_reasoning(echo);
    }
    Ok(session)
}

async fn run_agent(
    config: Config,
    cwd: PathBuf,
    env: Env,
    task: Option<String>,
    resume: Option<Resumed>,
    ephemeral: bool,
) -> i32 {
    let term = Term::detect();
    let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    let recorder = recorder(&config, &workspace, &env, ephemeral);
    // The agent first, so a run that cannot start (a broken hooks file) records nothing.
    let id = match &resume {
        Some(r) => r.loaded.header.id.clone(),
        None => session::store::new_id(),
    };
    let agent = match build_agent(&config, &cwd, &env, term.clone(), recorder.clone(), &id) {
        Ok(a) => a,
        Err(e) => return fail(exit::USAGE, e),
    };
    let mut session = match open_session(&recorder, id, resume, config.reasoning_echo, &term) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // What the tools remember (skills loaded, the todo list) follows the history they see.
    for r in &agent.restore {
        r.restore(session.messages());
    }
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            session.end("error", Some(&e.to_string()));
            close_session(&mut session, &term);
            return fail(exit::FAILED, format!("cannot watch signals: {e}"));
        }
    };
    let reaper = tokio::spawn(reap_orphans());
    let mut renderer = Renderer::new(term.clone(), config.show_reasoning);
    let work = async {
        match &task {
            Some(task) => agent.run(&mut session, task, &mut renderer).await.map(Some),
            None => match agent.compact_now(&mut session, &mut renderer).await {
                Ok(()) => Ok(None),
                Err(Ended::Stopped(reason)) => Ok(Some(Outcome::Stopped(reason))),
                Err(Ended::Error(e)) => Err(e),
            },
        }
    };
    let result = tokio::select! {
        r = work => Ok(r),
        sig = signals.recv() => Err(sig),
    };
    // The run is over, or was just dropped: that killed the running commands' process groups
    // and the subagents, and the session still holds everything it appended. The handlers
    // stay installed, so a second signal (a closing terminal sends SIGHUP twice) cannot cut
    // the cleanup short: the session's last lines and the end of everything hx started, which
    // take at most about 2 s.
    drop(signals);
    reaper.abort();
    let (code, message, outcome, detail) = match result {
        Err(sig) => {
            let stop = agent.stop_line_event(&session.stats);
            agent.hooks.trace_only(&stop, &agent.hook_cx);
            let message = match sig {
                libc::SIGINT => "interrupted".to_string(),
                other => format!("terminated by {}", signal_name(other)),
            };
            (
                exit::signalled(sig),
                Some(message),
                "interrupted",
                Some(signal_name(sig).to_string()),
            )
        }
        Ok(Ok(Some(Outcome::Answered(text)))) => {
            // A streamed answer is on the screen already, its line closed.
            if !renderer.streamed_answer() && !text.is_empty() {
                term.out_raw(&format!("{}\n", text.trim_end_matches('\n')));
            }
            (exit::ANSWERED, None, "answered", None)
        }
        Ok(Ok(None)) => (exit::ANSWERED, None, "compacted", None),
        Ok(Ok(Some(Outcome::Stopped(reason)))) => (
            exit::FAILED,
            Some(format!("stopped by a hook: {reason}")),
            "stopped",
            Some(reason),
        ),
        Ok(Ok(Some(Outcome::MaxTurns(_)))) => (
            exit::MAX_TURNS,
            Some(format!(
                "stopped after {} turns (--max-turns) without a final answer",
                config.max_turns
            )),
            "max_turns",
            None,
        ),
        Ok(Err(e)) => (
            exit::FAILED,
            Some(e.to_string()),
            "error",
            Some(e.to_string()),
        ),
    };
    session.end(outcome, detail.as_deref());
    if let Some(m) = message {
        term.line(&format!("hx: {m}"));
    }
    close_session(&mut session, &term);
    code
}

/// Writes the session out and names it, with how to go on from it.
fn close_session(session: &mut Session, term: &Term) {
    let recorded = session.path().is_some();
    if let Some(e) = session.close() {
        term.line(&format!("hx: warning: {e}"));
    }
    if recorded {
        term.line(&format!(
            "hx: session {id} · continue with: hx agent -r {id} \"...\"",
            id = session.id()
        ));
    }
}

/// The signals that cancel a run: Ctrl-C, `kill`, the terminal going away, and Ctrl-\.
pub(super) const CANCELLING: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

pub(super) struct Signals(Vec<(i32, Signal)>);

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Self::of(&CANCELLING)
    }

    /// Watches `signals`: from here on they no longer take their default action.
    pub(super) fn of(signals: &[i32]) -> std::io::Result<Signals> {
        signals
            .iter()
            .map(|&n| Ok((n, signal(SignalKind::from_raw(n))?)))
            .collect::<std::io::Result<_>>()
            .map(Signals)
    }

    /// The number of the first cancelling signal to arrive.
    pub(super) async fn recv(&mut self) -> i32 {
        let waits = self.0.iter_mut().map(|(n, s)| {
            Box::pin(async move {
                s.recv().await;
                *n
            })
        });
        futures_util::future::select_all(waits).await.0
    }
}

/// Reaps orphans re-parented to hx as they end, for the whole run.
pub(super) async fn reap_orphans() {
    let Ok(mut sigchld) = signal(SignalKind::child()) else {
        return;
    };
    while sigchld.recv().await.is_some() {
        process::cleanup::reap_orphans();
    }
}

#[cfg(test)]
mod tests {
    use super::recorded_url;

    #[test]
    fn a_recorded_url_holds_no_credentials() {
        assert_eq!(
            recorded_url("https://user:pw@llm.example/v1?key=sk-1#x"),
            "https://llm.example/v1"
        );
        assert_eq!(
            recorded_url("https://api.deepseek.com"),
            "https://api.deepseek.com"
        );
        assert_eq!(recorded_url("not a url"), "");
    }
}
