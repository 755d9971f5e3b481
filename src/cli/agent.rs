//! `hx agent`: build the agent for the working directory and run one task.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{exit, fail, AgentArgs};
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::agent::{prompt, Agent, Outcome};
use crate::config::{process_env, Config, Env, Flags};
use crate::events::{Event, Events, HumanView, JsonView, Scope, Start, TurnEnd, Verbosity};
use crate::hooks::{self, user::CommandHooks, HookContext, Hooks};
use crate::model::{OpenAiClient, ReasoningEcho};
use crate::process;
use crate::sandbox::{Kernel, Plan};
use crate::session::{self, Recorder, Session, SessionLog, Store};
use crate::skills::{self, LoadSkill};
use crate::term::Term;
use crate::tools::task::{self, Task};
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
    };
    let env = process_env();
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
    let mut warnings = Vec::new();
    let config = match Config::load(&cwd, &env, &flags, &mut warnings) {
        Ok(c) => c,
        Err(e) => {
            for w in warnings {
                eprintln!("{}", crate::term::escape_controls(&w));
            }
            return fail(exit::USAGE, e);
        }
    };
    if let Err(e) = config.require_key() {
        return fail(exit::USAGE, e);
    }
    // Checked before any request: a typo in the path must not cost a run.
    if let Some(file) = &args.output_last_message {
        if let Err(e) = check_output_file(file) {
            return fail(exit::USAGE, e);
        }
    }
    let task = match read_task(&args.task, !args.no_stdin) {
        Ok(t) => t,
        Err(e) => return fail(exit::USAGE, e),
    };
    let view = ViewOptions {
        json: args.json,
        verbosity: match (args.quiet, args.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        },
        output_last_message: args.output_last_message.clone(),
        warnings,
    };
    // The key is in `config` now: blank the secrets in hx's own environment, where a command
    // could read them back (/proc/$PPID/environ). Nothing else runs yet.
    // SAFETY: single-threaded here; the runtime and its threads start below.
    unsafe { process::env::scrub_own_environ(&config.shell_env) };
    // Orphans of the commands hx runs come back to hx, so that none outlives it. Declared
    // before the runtime, so it ends them after the runtime is gone (also when unwinding).
    process::cleanup::become_subreaper();
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
    let code = runtime.block_on(run_agent(
        config,
        cwd,
        env,
        task,
        resume,
        args.ephemeral,
        view,
    ));
    // Do not wait for blocking work still in flight (a read stuck on a FIFO, a slow walk):
    // after a signal or an answer nothing it could produce is wanted.
    runtime.shutdown_background();
    code
}

/// Ends everything hx started when `hx agent` returns, on every path; `[tools]
/// keep_background` keeps what is still running instead.
struct EndAll {
    keep_background: bool,
}

impl Drop for EndAll {
    fn drop(&mut self) {
        if !self.keep_background {
            process::cleanup::end_all();
        }
    }
}

/// A recorded session to continue: its file, as read.
pub struct Resumed {
    pub path: PathBuf,
    pub loaded: session::Loaded,
}

/// The session `-c` or `-r ID` names, read; `None` for a new session. Problems are reported
/// here: an unknown or ambiguous id is a usage error (2), a damaged file a failure (1).
fn find_resumed(args: &AgentArgs, cwd: &Path, env: &Env) -> Result<Option<Resumed>, i32> {
    if !args.continue_ && args.resume.is_none() {
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
        match &args.resume {
            Some(id) => store.find(id).map_err(|e| fail(exit::USAGE, e))?,
            None => match store.newest() {
                Ok(Some(p)) => p,
                Ok(None) => return Err(fail(
                    exit::USAGE,
                    "no session to continue in this workspace; start one with hx agent \"TASK\"",
                )),
                Err(warnings) => {
                    for w in warnings {
                        eprintln!("hx: warning: {w}");
                    }
                    return Err(fail(
                        exit::FAILED,
                        "no readable session to continue in this workspace",
                    ));
                }
            },
        };
    let loaded = session::record::read(&path).map_err(|e| {
        fail(
            exit::FAILED,
            format!("cannot resume {}: {e}", path.display()),
        )
    })?;
    if loaded.header.parent_id.is_some() {
        return Err(fail(
            exit::USAGE,
            format!(
                "session {} is a subagent's; continue the session that started it",
                loaded.header.id
            ),
        ));
    }
    Ok(Some(Resumed { path, loaded }))
}

/// How the run is shown, from the flags.
struct ViewOptions {
    json: bool,
    verbosity: Verbosity,
    output_last_message: Option<PathBuf>,
    /// The config's warnings, shown once the views exist.
    warnings: Vec<String>,
}

/// `-o FILE` can be written: its folder exists. The file itself is written when the answer
/// is known.
fn check_output_file(file: &Path) -> Result<(), String> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if file.is_dir() {
        return Err(format!(
            "--output-last-message {}: is a folder; give a file path",
            file.display()
        ));
    }
    if !dir.is_dir() {
        return Err(format!(
            "--output-last-message {}: the folder {} does not exist",
            file.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// Writes the final answer to `file` as stdout would hold it, atomically: a temporary file in
/// the same folder, renamed over it, so a reader never sees half an answer.
fn write_last_message(file: &Path, answer: &str) -> Result<(), String> {
    use std::io::Write;
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let text = if answer.is_empty() {
        String::new()
    } else {
        format!("{}\n", answer.trim_end_matches('\n'))
    };
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", file.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(".hx-answer-")
        .tempfile_in(dir)
        .map_err(fail)?;
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(file).map_err(|e| fail(e.error))?;
    Ok(())
}

/// Builds the task from the words and, unless `read_stdin` is off, a piped stdin.
fn read_task(words: &[String], read_stdin: bool) -> Result<String, String> {
    let words = words.join(" ");
    let stdin_piped = read_stdin && !std::io::stdin().is_terminal();
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
            (true, true) if !read_stdin => return Err(
                "no task given: pass it as words (hx agent \"fix the failing test\"); --no-stdin \
                 leaves stdin unread"
                    .into(),
            ),
            (true, true) => return Err(
                "no task given: pass it as words (hx agent \"fix the failing test\") or on stdin"
                    .into(),
            ),
        };
    Ok(task)
}

/// The main agent for `cwd`: every tool, the guard, the user's command hooks (hooks.json; a
/// file that is not valid is the error), the skill catalog; what happens goes to `events`.
/// Warnings while building it are pushed to `warnings`, for the caller to show once it knows
/// whether the run starts. The subagent that `task` starts shares its model, hooks, events
/// and workspace.
pub fn build_agent(
    config: &Config,
    cwd: &Path,
    env: &Env,
    events: Events,
    recorder: Recorder,
    session_id: &str,
    warnings: &mut Vec<String>,
) -> Result<Agent, String> {
    let main = Scope::default();
    let mut warn = |w: &str| warnings.push(w.to_string());
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
        warn(&format!("hx: warning: {w}"));
    }
    let sandbox = plan.sandbox()?;
    let client = OpenAiClient::new(config.client_options())?;
    let mut hooks = Hooks::new().with_guard(config.guard);
    let (entries, hook_warnings) = hooks::config::load(&root, env)?;
    for w in hook_warnings {
        warn(&w);
    }
    let user_hooks =
        CommandHooks::new(entries, events.clone()).with_output_chars(config.limits.output_chars);
    if !user_hooks.is_empty() {
        hooks = hooks.with_user(Arc::new(user_hooks));
    }
    let mut registry = Registry::standard();
    let child = Agent {
        model: Arc::new(client),
        model_name: config.model.clone(),
        tools: ToolSet::new(registry.clone(), &task::SUBAGENT_TOOLS),
        tool_cx: ToolContext {
            limits: config.limits.clone(),
            env: config.shell_env.apply(process::env::original_vars()),
            sandbox,
            ..ToolContext::new(workspace)
        },
        hooks,
        hook_cx: HookContext {
            cwd: root.clone(),
            scope: main.clone(),
            session_id: session_id.to_string(),
        },
        events: events.clone(),
        system_prompt: prompt::subagent(&root),
        max_turns: config.subagent_max_turns,
        reasoning_echo: config.reasoning_echo,
        reminders: Vec::new(),
        is_subagent: true,
        recorder,
    };
    for w in &discovery.warnings {
        warn(&format!("hx: warning: {w}"));
    }
    let skills = Arc::new(discovery.registry);
    let catalog = skills.catalog(config.skills_catalog_budget);
    registry.register(Arc::new(LoadSkill::new(skills)));
    let todos = TodoList::new();
    registry.register(Arc::new(TodoWrite::new(todos.clone())));
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

/// Where sessions of this run are recorded (nothing when `ephemeral` or `sessions = false`).
fn recorder(config: &Config, workspace: &Path, env: &Env, ephemeral: bool) -> Recorder {
    let store = (!ephemeral && config.sessions)
        .then(|| session::store::sessions_root(env))
        .flatten()
        .map(|root| Store::new(&root, workspace));
    Recorder {
        store,
        workspace: workspace.display().to_string(),
        model: config.model.clone(),
        provider: config.provider.clone(),
        base_url: config.base_url.clone(),
    }
}

/// The session this run works on: the resumed one (its calls left open answered) or a new
/// one; warnings are pushed to `warnings`. `Err` is why the session cannot be continued.
fn open_session(
    recorder: &Recorder,
    id: String,
    resume: Option<Resumed>,
    echo: ReasoningEcho,
    warnings: &mut Vec<String>,
) -> Result<Session, String> {
    let Some(Resumed { path, loaded }) = resume else {
        let (session, unrecorded) = recorder.start_with_id(id, None);
        if let Some(why) = unrecorded {
            warnings.push(format!("hx: warning: {why}"));
        }
        return Ok(session);
    };
    for w in &loaded.warnings {
        warnings.push(format!("hx: warning: {}: {w}", path.display()));
    }
    let log = match &recorder.store {
        None => None,
        Some(_) => Some(
            SessionLog::append(&path, loaded.valid_len)
                .map_err(|e| format!("cannot continue session {}: {e}", loaded.header.id))?,
        ),
    };
    let switched = loaded.provider != recorder.provider;
    let (mut session, repaired) = Session::resume(loaded, recorder.run_info(), log);
    if repaired > 0 {
        warnings.push(format!(
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

/// The views of this run, as one stream of events: the trace and answer for a person, or
/// JSON Lines for a program.
fn views(config: &Config, options: &ViewOptions) -> Events {
    let term = Term::detect();
    if options.json {
        Events::new(Arc::new(JsonView::stdout(term)))
    } else {
        Events::new(Arc::new(HumanView::new(
            term,
            config.show_reasoning,
            options.verbosity,
        )))
    }
}

async fn run_agent(
    config: Config,
    cwd: PathBuf,
    env: Env,
    task: String,
    resume: Option<Resumed>,
    ephemeral: bool,
    options: ViewOptions,
) -> i32 {
    let events = views(&config, &options);
    let main = Scope::default();
    let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    let recorder = recorder(&config, &workspace, &env, ephemeral);
    // The agent first, so a run that cannot start (a broken hooks file) records nothing.
    let id = match &resume {
        Some(r) => r.loaded.header.id.clone(),
        None => session::store::new_id(),
    };
    // What building the run says is shown once it is known whether the run starts: after
    // the line saying where it goes, or before the error that stops it.
    let mut warnings = options.warnings.clone();
    let fatal = |code: i32, message: &str, warnings: &[String]| {
        for w in warnings {
            events.warn(&main, w);
        }
        events.emit(&main, &Event::Error(message));
        code
    };
    let agent = match build_agent(
        &config,
        &cwd,
        &env,
        events.clone(),
        recorder.clone(),
        &id,
        &mut warnings,
    ) {
        Ok(a) => a,
        Err(e) => return fatal(exit::USAGE, &e, &warnings),
    };
    let resumed = resume.is_some();
    let session = open_session(&recorder, id, resume, config.reasoning_echo, &mut warnings);
    let mut session = match session {
        Ok(s) => s,
        Err(e) => return fatal(exit::FAILED, &e, &warnings),
    };
    events.emit(
        &main,
        &Event::Started(&Start {
            session_id: session.id(),
            model: &config.model,
            provider: &config.provider,
            base_url: &config.base_url,
            resumed,
        }),
    );
    for w in &warnings {
        events.warn(&main, w);
    }
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            session.end("error", Some(&e.to_string()));
            close_session(&mut session, &events);
            return fatal(exit::FAILED, &format!("cannot watch signals: {e}"), &[]);
        }
    };
    let reaper = tokio::spawn(reap_orphans());
    let result = tokio::select! {
        r = agent.run(&mut session, &task) => Ok(r),
        sig = signals.recv() => Err(sig),
    };
    // The run is over, or was just dropped: that killed the running commands' process groups
    // and the subagents, and the session still holds everything it appended. From here a
    // signal takes its default action, so a second one ends hx at once, even while it cleans
    // up.
    drop(signals);
    restore_default_signals();
    reaper.abort();
    let (code, end, outcome, detail) = match result {
        Err(sig) => {
            agent.stopped(&session);
            let message = match sig {
                libc::SIGINT => "interrupted".to_string(),
                other => format!("terminated by {}", signal_name(other)),
            };
            (
                exit::signalled(sig),
                TurnEnd::Failed(message),
                "interrupted",
                Some(signal_name(sig).to_string()),
            )
        }
        Ok(Ok(Outcome::Answered(text))) => {
            (exit::ANSWERED, TurnEnd::Answered(text), "answered", None)
        }
        Ok(Ok(Outcome::Stopped(reason))) => (
            exit::FAILED,
            TurnEnd::Failed(format!("stopped by a hook: {reason}")),
            "stopped",
            Some(reason),
        ),
        Ok(Ok(Outcome::MaxTurns(_))) => (
            exit::MAX_TURNS,
            TurnEnd::Failed(format!(
                "stopped after {} turns (--max-turns) without a final answer",
                config.max_turns
            )),
            "max_turns",
            None,
        ),
        Ok(Err(e)) => (
            exit::FAILED,
            TurnEnd::Failed(e.to_string()),
            "error",
            Some(e.to_string()),
        ),
    };
    session.end(outcome, detail.as_deref());
    events.emit(&main, &Event::TurnEnded(&end));
    let mut code = code;
    if let (Some(file), TurnEnd::Answered(text)) = (&options.output_last_message, &end) {
        if let Err(e) = write_last_message(file, text) {
            code = fatal(exit::FAILED, &e, &[]);
        }
    }
    close_session(&mut session, &events);
    code
}

/// Writes the session out and names it, with how to go on from it.
fn close_session(session: &mut Session, events: &Events) {
    let main = Scope::default();
    let recorded = session.path().is_some();
    if let Some(e) = session.close() {
        events.warn(&main, &format!("hx: warning: {e}"));
    }
    if recorded {
        events.emit(&main, &Event::SessionSaved { id: session.id() });
    }
}

/// The signals that cancel a run: Ctrl-C, `kill`, and the terminal going away.
const CANCELLING: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

struct Signals(Vec<(i32, Signal)>);

impl Signals {
    fn new() -> std::io::Result<Signals> {
        CANCELLING
            .iter()
            .map(|&n| Ok((n, signal(SignalKind::from_raw(n))?)))
            .collect::<std::io::Result<_>>()
            .map(Signals)
    }

    /// The number of the first cancelling signal to arrive.
    async fn recv(&mut self) -> i32 {
        let waits = self.0.iter_mut().map(|(n, s)| {
            Box::pin(async move {
                s.recv().await;
                *n
            })
        });
        futures_util::future::select_all(waits).await.0
    }
}

/// Gives the cancelling signals back their default action (end the process).
fn restore_default_signals() {
    for sig in CANCELLING {
        // SAFETY: SIG_DFL is always a valid disposition; tokio's handler simply stops being
        // called.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}

/// Reaps orphans re-parented to hx as they end, for the whole run.
async fn reap_orphans() {
    let Ok(mut sigchld) = signal(SignalKind::child()) else {
        return;
    };
    while sigchld.recv().await.is_some() {
        process::cleanup::reap_orphans();
    }
}
