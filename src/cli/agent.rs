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
use crate::events::{Event, Events, HumanView, JsonView, Scope, Start, TurnEnd, Verbosity};
use crate::hooks::{self, user::CommandHooks, HookContext, Hooks};
use crate::mcp::{self, Mcp};
use crate::model::{OpenAiClient, ReasoningEcho};
use crate::process::{self, signal_name};
use crate::sandbox::{Kernel, Plan};
use crate::session::{self, Recorder, Session, SessionLog, Store};
use crate::skills::{self, LoadSkill};
use crate::tools::todo::{TodoList, TodoWrite};
use crate::tools::workspace::Dir;
use crate::tools::{Registry, ToolContext, ToolSet, Workspace};

pub(super) fn agent_command(args: AgentArgs) -> i32 {
    super::JSON_ERRORS.store(args.json, std::sync::atomic::Ordering::Relaxed);
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let mut flags = args.run.flags();
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
        r.keep_provider(&mut flags);
    }
    // The config's warnings are shown by the views (in `--json`, as items), once they exist;
    // a config that cannot be used is the error, its warnings printed before it.
    let mut warnings = Vec::new();
    let config = match Config::load(&cwd, &env, &flags, &mut warnings) {
        Ok(c) => c,
        Err(e) => {
            for w in warnings {
                errln!("{w}");
            }
            return fail(exit::USAGE, e);
        }
    };
    if let Err(e) = config.require_key() {
        return fail(exit::USAGE, e);
    }
    // Resolved before any request: a typo in the path must not cost a run, and nothing the
    // model does can move it.
    let output_file = match args.output_last_message.as_deref().map(open_output_file) {
        None => None,
        Some(Ok(f)) => Some(f),
        Some(Err(e)) => return fail(exit::USAGE, e),
    };
    // `--compact` has no task: it compacts the session and stops.
    let task = match args.compact {
        true => None,
        false => match read_task(&args.task, !args.no_stdin) {
            Ok(t) => Some(t),
            Err(e) => return fail(exit::USAGE, e),
        },
    };
    let view = ViewOptions {
        json: args.json,
        verbosity: match (args.quiet, args.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        },
        output_last_message: output_file,
        warnings,
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
        runtime.block_on(run_agent(
            config,
            cwd,
            env,
            task,
            resume,
            args.ephemeral,
            view,
        ))
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

impl Resumed {
    /// A continued session keeps its provider and model unless a flag says otherwise.
    pub(super) fn keep_provider(&self, flags: &mut Flags) {
        if flags.provider.is_none() {
            flags.provider = Some(self.loaded.provider.clone());
            if flags.model.is_none() {
                flags.model = Some(self.loaded.model.clone());
            }
        }
    }
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

/// How the run is shown, from the flags.
struct ViewOptions {
    json: bool,
    verbosity: Verbosity,
    output_last_message: Option<OutputFile>,
    /// The config's warnings, shown once the views exist.
    warnings: Vec<String>,
}

/// Where `-o FILE` goes, fixed before the model runs anything: the folder, held open, and the
/// name in it. Resolved later, a link the model made in the workspace (which its sandbox lets
/// it do) would send hx's own unsandboxed write wherever the model chose.
struct OutputFile {
    /// The path as given, for messages.
    given: PathBuf,
    dir: Dir,
    name: std::ffi::OsString,
}

/// Resolves `-o FILE` as `> FILE` would now: a link to its target (which need not exist yet),
/// a missing folder or a folder given as the file an error.
fn open_output_file(file: &Path) -> Result<OutputFile, String> {
    let what = |why: &str| format!("--output-last-message {}: {why}", file.display());
    let target = match file.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(file) {
            Ok(t) => t,
            // A link to a file not there yet: the file it names.
            Err(_) => match std::fs::read_link(file) {
                Ok(t) => file.parent().unwrap_or(Path::new("")).join(t),
                Err(e) => return Err(what(&e.to_string())),
            },
        },
        _ => file.to_path_buf(),
    };
    if target.is_dir() {
        return Err(what("is a folder; give a file path"));
    }
    let (Some(name), dir) = (target.file_name(), target.parent()) else {
        return Err(what("is not a file path"));
    };
    let dir = match dir {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let opened = std::fs::canonicalize(dir).and_then(|real| Dir::open_real(&real));
    let dir = opened.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
            what(&format!("the folder {} does not exist", dir.display()))
        }
        _ => what(&format!("cannot open the folder {}: {e}", dir.display())),
    })?;
    Ok(OutputFile {
        given: file.to_path_buf(),
        dir,
        name: name.to_os_string(),
    })
}

/// Writes the final answer as stdout would hold it, atomically, in the held folder (see
/// [`Dir::write_atomic`]: an existing file keeps its mode, a new one gets the umask's, and
/// whatever the name holds by then, a link included, is replaced, never followed).
fn write_last_message(out: &OutputFile, answer: &str) -> Result<(), String> {
    let text = if answer.is_empty() {
        String::new()
    } else {
        format!("{}\n", answer.trim_end_matches('\n'))
    };
    out.dir
        .write_atomic(&out.name, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", out.given.display()))
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
/// file that is not valid is the error), the project instructions, the skill catalog; what
/// happens goes to `events`. Warnings while building it are pushed to `warnings`, for the
/// caller to show once it knows whether the run starts. The subagent that `task` starts
/// shares its model, hooks, events, workspace and project instructions.
pub fn build_agent(
    config: &Config,
    cwd: &Path,
    env: &Env,
    events: Events,
    recorder: Recorder,
    session_id: &str,
    warnings: &mut Vec<String>,
) -> Result<Agent, String> {
    build_agent_with(
        config, cwd, env, events, recorder, session_id, None, warnings,
    )
    .map(|b| b.agent)
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
/// too), and what else the build found.
#[allow(clippy::too_many_arguments)]
pub(super) fn build_agent_with(
    config: &Config,
    cwd: &Path,
    env: &Env,
    events: Events,
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
        .with_guard(config.guard)
        .with_approver(approver);
    let (entries, hook_warnings) = hooks::config::load(&root, env)?;
    warnings.extend(hook_warnings);
    let user_hooks =
        CommandHooks::new(entries, events.clone()).with_output_chars(config.limits.output_chars);
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
    let mcp = (!planned.is_empty()).then(|| {
        let (events, scope) = (events.clone(), Scope::default());
        let warn: mcp::Warn = Arc::new(move |line: &str| events.warn(&scope, line));
        Mcp::new(planned, env.clone(), warn)
    });
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
            scope: Scope::default(),
            session_id: session_id.to_string(),
            tool_aliases: Arc::new(registry.claude_names()),
        },
        events,
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
        learned: Default::default(),
        restore: Vec::new(),
    };
    for w in &discovery.warnings {
        warnings.push(format!("hx: warning: {w}"));
    }
    let skills = Arc::new(discovery.registry);
    let catalog = skills.catalog(config.skills_catalog_budget);
    // The main agent has every tool, in this order: the five above, then these.
    // The list is shown by the views, from the call's arguments (see `crate::events`).
    let todos = TodoList::new();
    registry.register(Arc::new(TodoWrite::new(todos.clone())));
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
/// one; warnings are pushed to `warnings`. `Err` is why the session cannot be continued.
pub(super) fn open_session(
    recorder: &Recorder,
    id: String,
    resume: Option<Resumed>,
    echo: ReasoningEcho,
    warnings: &mut Vec<String>,
) -> Result<Session, String> {
    let Some(Resumed {
        path,
        loaded,
        locked,
    }) = resume
    else {
        let (session, unrecorded) = recorder.start_with_id(id, None);
        if let Some(why) = unrecorded {
            warnings.push(format!("hx: warning: {why}"));
        }
        return Ok(session);
    };
    for w in &loaded.warnings {
        warnings.push(format!("hx: warning: {}: {w}", path.display()));
    }
    let cannot =
        |e: session::log::OpenError| format!("cannot continue session {}: {e}", loaded.header.id);
    let log = match (&recorder.store, locked) {
        (None, _) => None,
        (Some(_), Some(file)) => {
            Some(SessionLog::append_locked(&path, file, loaded.valid_len).map_err(cannot)?)
        }
        (Some(_), None) => Some(SessionLog::append(&path, loaded.valid_len).map_err(cannot)?),
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
    let term = super::shared_term();
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

#[allow(clippy::too_many_arguments)]
async fn run_agent(
    config: Config,
    cwd: PathBuf,
    env: Env,
    task: Option<String>,
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
    // What the tools remember (skills loaded, the todo list) follows the history they see.
    for r in &agent.restore {
        r.restore(session.messages());
    }
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            session.end("error", Some(&e.to_string()));
            let code = fatal(exit::FAILED, &format!("cannot watch signals: {e}"), &[]);
            close_session(&mut session, &events);
            return code;
        }
    };
    let reaper = tokio::spawn(reap_orphans());
    let began = std::time::Instant::now();
    let work = async {
        match &task {
            Some(task) => agent.run(&mut session, task).await.map(Some),
            None => {
                // A compaction on its own is the run's one turn.
                events.emit(&main, &Event::TurnStarted);
                match agent.compact_now(&mut session).await {
                    Ok(()) => Ok(None),
                    Err(Ended::Stopped(reason)) => Ok(Some(Outcome::Stopped(reason))),
                    Err(Ended::Error(e)) => Err(e),
                }
            }
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
    let (code, end, outcome, detail) = match result {
        Err(sig) => {
            agent.stopped(&session, began.elapsed());
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
        Ok(Ok(Some(Outcome::Answered(text)))) => {
            (exit::ANSWERED, TurnEnd::Answered(text), "answered", None)
        }
        // The compaction's lines said what it did; there is no answer.
        Ok(Ok(None)) => (
            exit::ANSWERED,
            TurnEnd::Answered(String::new()),
            "compacted",
            None,
        ),
        Ok(Ok(Some(Outcome::Stopped(reason)))) => (
            exit::FAILED,
            TurnEnd::Failed(format!("stopped by a hook: {reason}")),
            "stopped",
            Some(reason),
        ),
        Ok(Ok(Some(Outcome::MaxTurns(_)))) => (
            exit::MAX_TURNS,
            TurnEnd::Failed(format!(
                "stopped after {} (--max-turns) without a final answer",
                crate::text::count(config.max_turns.into(), "turn")
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
    if let (Some(file), TurnEnd::Answered(text), Some(_)) =
        (&options.output_last_message, &end, &task)
    {
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
