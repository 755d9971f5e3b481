//! Building the agent of a run from the config: tools, hooks, guard, sandbox, MCP servers,
//! project instructions, the skill catalog, and the subagent `task` starts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::task::Task;
use crate::agent::{prompt, Agent, Role};
use crate::checkpoint::{Checkpoints, Kept};
use crate::config::{Config, Env};
use crate::context::instructions;
use crate::events::{Events, Scope};
use crate::hooks::{self, user::CommandHooks, HookContext, Hooks};
use crate::mcp::{self, Mcp};
use crate::model::OpenAiClient;
use crate::process;
use crate::sandbox::{Kernel, Plan};
use crate::session::{self, Recorder};
use crate::skills::{self, LoadSkill};
use crate::text::Warning;
use crate::tools::minimal::Profile;
use crate::tools::todo::{TodoList, TodoWrite};
use crate::tools::{Editor, FileWrites, Registry, Shells, ToolContext, ToolSet, Workspace};

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
    warnings: &mut Vec<Warning>,
) -> Result<Agent, String> {
    build_agent_with(
        config,
        cwd,
        env,
        events,
        recorder,
        session_id,
        Asks::default(),
        warnings,
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
    /// The question of the server's window (`hx context` waits for its answer).
    pub window: super::window::Probe,
}

/// Who a run asks, besides the model: whom the guard's refusals are put to (`hx chat`'s user,
/// `hx acp`'s client; subagents ask too), and the editor whose files the file tools use.
#[derive(Default)]
pub struct Asks {
    pub approver: Option<Arc<dyn hooks::Approver>>,
    pub editor: Editor,
}

/// [`build_agent`] with whom to ask (see [`Asks`]), and what else the build found.
#[allow(clippy::too_many_arguments)]
pub fn build_agent_with(
    config: &Config,
    cwd: &Path,
    env: &Env,
    events: Events,
    recorder: Recorder,
    session_id: &str,
    asks: Asks,
    warnings: &mut Vec<Warning>,
) -> Result<Built, String> {
    let same = |r| r;
    build_editing_skills(
        config, cwd, env, events, recorder, session_id, asks, &same, warnings,
    )
}

/// [`build_agent_with`] whose skill registry `edit` changes before anything uses it: `hx
/// skills eval` tries another description, or one skill alone, in the catalog a run would
/// have, without restating how that catalog and the rest of the agent are made.
#[allow(clippy::too_many_arguments)]
pub fn build_editing_skills(
    config: &Config,
    cwd: &Path,
    env: &Env,
    events: Events,
    recorder: Recorder,
    session_id: &str,
    asks: Asks,
    edit: &dyn Fn(skills::SkillRegistry) -> skills::SkillRegistry,
    warnings: &mut Vec<Warning>,
) -> Result<Built, String> {
    let Asks { approver, editor } = asks;
    // Asked first, so that the server answers while the rest is built.
    let probe = super::window::Probe::start(config, env);
    let workspace = Workspace::new(cwd)
        .map_err(|e| format!("cannot open the workspace {}: {e}", cwd.display()))?;
    let root: PathBuf = workspace.root().to_path_buf();
    let home = crate::paths::home_dir();
    // The agent files are read on a second thread while the skills are found and the pod
    // starts: 500 of them take about 11 ms, which would otherwise add to every start.
    // What files are unchanged since a run read them comes from hx's cache (`agents::cache`).
    let agent_cache = crate::paths::cache_dir(env).map(|d| d.join(crate::agents::cache::FILE_NAME));
    let agent_files = {
        let (root, home, cache) = (root.clone(), home.clone(), agent_cache.clone());
        std::thread::Builder::new()
            .name("hx-agent-files".into())
            .spawn(move || crate::agents::discover_cached(&root, home.as_deref(), cache.as_deref()))
            .ok()
    };
    // The sandbox's plan (its walk for nested git folders) and the pod's start (a fork and
    // a wait for its report) need nothing of the skills: they go on a second thread while
    // the skills are found, since in a workspace of 2,000 skill folders both are walks of
    // the same tree, one after the other (issue 33).
    //
    // The checkpoints start there too, once the plan says where git may be taken from: a
    // recorded run's store is opened and the workspace looked at ahead of the first
    // checkpoint, beside the rest of the skills' discovery (`Checkpoints::ahead`).
    let runtime = tokio::runtime::Handle::try_current().ok();
    let recorded = recorder.store.is_some();
    let checkpoints = |plan: &Plan, git: crate::checkpoint::git::Program, kept: Option<Kept>| {
        config.checkpoints.enabled.then(|| {
            let ids = env.clone();
            let checkpoints = Checkpoints::with_git(&root, env, &config.checkpoints, git)
                .recorded(Arc::new(move || super::session::recorded_ids(&ids)))
                .with_kept(kept);
            // A run the plan refuses ends before its first request: nothing to look at. (A
            // pod that then fails to start may still make a run refuse: the look is made,
            // and writes objects and the index, never a ref, as for a blocked message.)
            match runtime
                .as_ref()
                .filter(|_| recorded && plan.refusal.is_none())
            {
                Some(runtime) => checkpoints.ahead(runtime),
                None => Arc::new(checkpoints),
            }
        })
    };
    // What hx runs itself outside the sandbox (git, the hooks' shell, a `sandbox = "off"` MCP
    // server) is looked up now, never where a command may write.
    let sandbox = || {
        // The folders' listings the checkpoints' last look kept spare the sandbox's walk
        // most of its listing (issue 33); read only where that walk is made, and handed to
        // the look made ahead, which would read and parse them again.
        let kept = (config.sandbox.mode != crate::sandbox::Mode::Off)
            .then(|| crate::checkpoint::kept_listings(&root, env, &config.checkpoints))
            .flatten();
        let plan = Plan::with_kept(
            &config.sandbox,
            &root,
            env,
            Kernel::detect(),
            kept.as_ref()
                .map(|k| k as &dyn crate::sandbox::gitdirs::Listed),
        );
        // The look made ahead goes on beside the pod's start (6 ms, mostly waiting for the
        // pod's report): the git it may run is the one the run's host path gives, known once
        // the pod has started or failed to (`Program::later`).
        let path = env.get("PATH").map(String::as_str);
        let (git, finder) =
            crate::checkpoint::git::Program::later(&plan.narrowest_host_path(env), path);
        let checkpoints = checkpoints(&plan, git, kept);
        let (plan, pod) = plan.with_pod(env);
        let host = plan.host_path(env);
        finder.find(&host, path);
        (plan, pod, host, checkpoints)
    };
    let (mut discovery, (plan, pod, host, checkpoints)) = std::thread::scope(|scope| {
        let started = std::thread::Builder::new()
            .name("hx-sandbox".into())
            .spawn_scoped(scope, sandbox);
        let discovery = skills::discover(&root, home.as_deref());
        let planned = match started {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            // No thread to be had: the same work here.
            Err(_) => sandbox(),
        };
        (discovery, planned)
    });
    discovery.registry = edit(std::mem::take(&mut discovery.registry));
    // The folders of the catalog's skills outside the workspace (the user's, or a project's
    // above a subfolder) stay readable, since load_skill lists their files for the model to
    // read; nothing else of a skills root is.
    let workspace = workspace.with_read_only(discovery.registry.folders_outside(&root));
    // The logs of the run's background shells, which read_file pages through.
    let shells = Arc::new(Shells::new(shells_dir(env, session_id)));
    let workspace = workspace.with_read_only_later(shells.dir());
    // Decided once per run, here in hx (above): its warnings print once, and a refusal
    // (exit 2) comes before any request.
    warnings.extend(plan.warnings.iter().map(Warning::new));
    // The files the model must not read: the file tools refuse them whatever the sandbox.
    let workspace = workspace.with_deny(plan.deny.clone());
    let sandbox = plan.sandbox_in(pod)?;
    let client = OpenAiClient::new(config.client_options())?;
    let mut hooks = Hooks::new()
        .with_guard(config.guard)
        .with_approver(approver);
    let (entries, hook_warnings) = hooks::config::load(&root, env)?;
    warnings.extend(hook_warnings);
    let shell = hooks::command::shell(&host, env.get("PATH").map(String::as_str));
    let user_hooks = CommandHooks::new(entries, events.clone(), shell)
        .with_output_chars(config.limits.output_chars);
    // The trace shows the steps of the events the user hooked, whatever its level.
    events.emit(
        &Scope::default(),
        &crate::events::Event::UserHooks(&user_hooks.events()),
    );
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
    warnings.extend(instructions.warnings.iter().map(Warning::new));
    let project_doc = instructions.section();
    // The minimal profile offers its two tools and nothing else: no MCP server's either.
    let minimal = config.tool_profile == Profile::Minimal;
    let mut registry = if minimal {
        crate::tools::minimal::registry()
    } else {
        Registry::standard()
    };
    // MCP servers start with the run (the first turn), their tools after the built-in ones;
    // subagents get those of the servers that say `subagents = true`.
    let planned = mcp::config::plan(&config.mcp_servers, &root, env, home.as_deref(), warnings)?;
    let for_subagents = planned.iter().any(|p| p.config.subagents);
    let servers = Servers {
        configured: planned.iter().map(|p| p.config.name.clone()).collect(),
        for_subagents: planned
            .iter()
            .filter(|p| p.config.subagents)
            .map(|p| p.config.name.clone())
            .collect(),
    };
    // Computed once: every command of the run, and every local MCP server, gets the same.
    let tool_env = process::env::for_tools(&config.shell_env, &config.sandbox);
    if minimal && !planned.is_empty() {
        warnings.push(Warning::new(
            "the minimal tool profile offers bash and str_replace_editor only: the MCP \
             servers configured are not started",
        ));
    }
    let mcp = (!planned.is_empty() && !minimal).then(|| {
        let (events, scope) = (events.clone(), Scope::default());
        let warn: mcp::Warn = Arc::new(move |w: &Warning| events.warn(&scope, w));
        let local = mcp::Local {
            env: tool_env.clone(),
            sandbox: sandbox.clone(),
            writable: plan.written_by_commands(),
        };
        Mcp::new(planned, env.clone(), local, warn)
    });
    let mut child_registry = registry.clone();
    if let Some(m) = mcp.as_ref().filter(|_| for_subagents) {
        child_registry.set_source(m.source(true));
    }
    if let Some(m) = &mcp {
        registry.set_source(m.source(false));
    }
    // The window the server stated, when it did within the grace: the profiles, the main
    // agent's and its subagents', are made for it, so the first request is planned for it.
    let stated = probe.wait(super::window::GRACE).stated().cloned();
    let profiles = config.profiles().with_server(&config.model, stated);
    let main_profile = profiles.make(&config.model, config.main_effort());
    // The subagent's own profile is made from its caller's when `task` starts it; this one
    // is the template's until then.
    let (child_profile, _) = profiles.subagent(&main_profile, None);
    let tool_cx = ToolContext {
        limits: config.limits.clone(),
        env: tool_env,
        sandbox,
        // From the setting, not the plan: read-only holds even where the kernel cannot
        // enforce it for bash.
        file_writes: FileWrites::of(&config.sandbox),
        editor,
        shells: shells.clone(),
        ..ToolContext::new(workspace)
    };
    let hook_cx = HookContext {
        cwd: root.clone(),
        scope: Scope::default(),
        session_id: session_id.to_string(),
        tool_aliases: Arc::new(registry.claude_names()),
    };
    // One builder for both: the main agent and its subagents share a budget and what is
    // learned of the window.
    let common = Agent::builder(
        Arc::new(client),
        child_profile,
        ToolSet::for_subagents(child_registry),
        tool_cx,
        events,
    )
    .recorder(recorder)
    .compact_at(config.context.compact_at)
    .loops(config.loops)
    .budget(
        config.max_cost,
        env.get("HX_NOW").and_then(|v| fixed_now(v)),
    );
    let child = common
        .clone()
        .hooks(hooks.clone(), hook_cx.clone())
        // The same project, so the same instructions; no skill catalog (no load_skill).
        .system_prompt(prompt::assemble(
            prompt::subagent(&root),
            std::slice::from_ref(&project_doc),
        ))
        .max_turns(config.subagent_max_turns)
        .role(Role::Subagent)
        .build();
    // Skills and agent files mean nothing where no tool offers them: no warning of theirs.
    if !minimal {
        warnings.extend(discovery.warnings.iter().map(Warning::new));
    }
    let skills = Arc::new(discovery.registry);
    let catalog = skills.catalog(config.skills_catalog_budget);
    // The main agent has every tool, in this order: the five above, then these.
    // The list is shown by the views, from the call's arguments (see `crate::events`).
    let todos = TodoList::new();
    // A thread that could not start or panicked: read them here.
    let found = agent_files.and_then(|t| t.join().ok()).unwrap_or_else(|| {
        crate::agents::discover_cached(&root, home.as_deref(), agent_cache.as_deref())
    });
    let types = if minimal {
        Vec::new()
    } else {
        subagent_types(found, &servers, warnings)
    };
    let load_skill = Arc::new(LoadSkill::new(skills.clone()));
    if !minimal {
        registry.register(Arc::new(TodoWrite::new(todos.clone())));
        registry.register(Arc::new(Task::new(child, profiles, types)));
        registry.register(load_skill.clone());
    }
    let hook_cx = HookContext {
        tool_aliases: Arc::new(registry.claude_names()),
        ..hook_cx
    };
    // Without load_skill there is no catalog to offer.
    let (base, catalog) = if minimal {
        (prompt::minimal(&root), String::new())
    } else {
        (prompt::base(&root), catalog)
    };
    let mut parts: PromptParts = vec![("hx's own instructions".into(), base.clone())];
    if !instructions.is_empty() {
        parts.push((
            "project instructions heading".into(),
            instructions::Instructions::heading().into(),
        ));
        parts.extend(instructions.parts());
    }
    if !minimal {
        parts.push(("skill catalog".into(), catalog.clone()));
    }
    let agent = common
        .profile(main_profile)
        .tools(ToolSet::all(registry))
        .hooks(hooks, hook_cx)
        .system_prompt(prompt::assemble(base, &[project_doc, catalog]))
        .max_turns(config.max_turns)
        .reminders(if minimal {
            Vec::new()
        } else {
            vec![todos.clone(), shells]
        })
        .restore(if minimal {
            Vec::new()
        } else {
            vec![load_skill, todos]
        })
        .checkpoints(checkpoints)
        .build();
    // What the agent and every agent sharing what it learns (its subagents, the next
    // messages, another profile) plan for; an answer after the grace applies from their next
    // request on.
    let (tell, model) = (agent.window_teller(), config.model.clone());
    probe.then(move |stated| tell(&model, stated.tokens));
    Ok(Built {
        agent,
        skills,
        parts,
        window: probe,
    })
}

/// Where a run's background shells keep their output: beside the sessions, in a folder of
/// the session's (its parent made now, so that read_file may be allowed into it before the
/// first shell makes it); the system's temporary folder without a state folder.
fn shells_dir(env: &Env, session_id: &str) -> PathBuf {
    let name = format!("{session_id}-{}", std::process::id());
    let parent = crate::paths::state_dir(env)
        .map(|d| d.join("shells"))
        .filter(|d| {
            use std::os::unix::fs::DirBuilderExt;
            let mut b = std::fs::DirBuilder::new();
            b.recursive(true).mode(0o700).create(d).is_ok()
        })
        .unwrap_or_else(std::env::temp_dir);
    parent.join(name)
}

/// The MCP servers of a run by name, and those offered to subagents (`subagents = true`).
struct Servers {
    configured: Vec<String>,
    for_subagents: Vec<String>,
}

/// The subagent types of the agent files `found` (`crate::agents`); `task` makes each one's
/// subagent from the generic one when it starts (`agent::task::Task`, from its caller's profile). What the files ask
/// for and cannot have is said once, grouped; so is an MCP tool of a server that is not
/// configured or not offered to subagents (`subagents = true`): a project's file cannot widen
/// what the user's config gives subagents.
fn subagent_types(
    mut found: crate::agents::Discovery,
    servers: &Servers,
    warnings: &mut Vec<Warning>,
) -> Vec<crate::agents::Definition> {
    for def in &mut found.agents {
        for tool in def.tools.iter().flatten() {
            let Some(rest) = tool.strip_prefix(mcp::names::PREFIX) else {
                continue;
            };
            let server = rest.split("__").next().unwrap_or_default();
            if !servers.configured.iter().any(|n| n == server) {
                def.notes.push(format!(
                    "tool {tool}: no MCP server {server} is configured, left out"
                ));
            } else if !servers.for_subagents.iter().any(|n| n == server) {
                def.notes.push(format!(
                    "tool {tool}: MCP server {server} is not offered to subagents \
                     (subagents = true in its config), left out"
                ));
            }
        }
    }
    warnings.extend(found.run_warnings());
    found.agents
}

/// Where sessions of this run are recorded (nothing when `ephemeral` or `sessions = false`).
pub fn recorder(config: &Config, workspace: &Path, env: &Env, ephemeral: bool) -> Recorder {
    let store = (!ephemeral && config.sessions)
        .then(|| session::store::sessions_root(env))
        .flatten()
        // The project's store, the one `-c` and `-r` look in.
        .map(|root| super::session::store_for(&root, workspace));
    // `sessions.keep_days`: old sessions go when a run that records starts, as a cache's
    // old entries would; nothing is said unless asked (`hx sessions prune` says what).
    if let (Some(store), Some(days)) = (&store, config.sessions_keep_days) {
        store.prune(std::time::Duration::from_secs(u64::from(days) * 86_400));
    }
    Recorder {
        store,
        workspace: workspace.display().to_string(),
        provider: config.provider.clone(),
        base_url: recorded_url(&config.base_url),
    }
}

/// The base URL as a session file keeps it: without user, password, query or fragment, where
/// a key is sometimes put (`?key=...`); session files never hold a key.
pub(super) fn recorded_url(url: &str) -> String {
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

/// `HX_NOW`: the time to price every request at, as Unix seconds or RFC 3339 (UTC); for
/// tests of peak and off-peak prices. Anything else is the clock's time.
fn fixed_now(v: &str) -> Option<u64> {
    let v = v.trim();
    v.parse::<u64>().ok().or_else(|| {
        humantime::parse_rfc3339(v)
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs())
    })
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
