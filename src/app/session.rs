//! Finding, opening and closing the session a run works on.

use std::path::{Path, PathBuf};

use super::Failure;
use crate::config::{Env, Flags};
use crate::model::{Effort, Profile};
use crate::session::{self, Recorder, Session, SessionLog, Store};
use crate::text::Warning;

/// A recorded session to continue: its file, as read, and (when this run records) the file
/// still open under the lock it was read with, so that no other run can write to it before
/// this one appends.
pub struct Resumed {
    pub path: PathBuf,
    pub loaded: session::Loaded,
    pub locked: Option<std::fs::File>,
    /// Found among another workspace's sessions (`-r ID` from anywhere): that workspace, to
    /// be said.
    pub elsewhere: Option<String>,
}

impl Resumed {
    /// A continued session keeps its provider, model and effort unless a flag says otherwise,
    /// so that its requests go on as they were (the prompt cache keeps hitting). An effort
    /// this hx does not know (a newer one wrote it) is left to the config files.
    pub fn keep_provider(&self, flags: &mut Flags) {
        if flags.provider.is_none() {
            flags.provider = Some(self.loaded.provider.clone());
            if flags.model.is_none() {
                flags.model = Some(self.loaded.model.clone());
            }
            if flags.effort.is_none() {
                flags.session_effort = match self.loaded.effort.as_deref().map(Effort::parse) {
                    None => Some(None),
                    Some(Ok(e)) => Some(Some(e)),
                    Some(Err(_)) => None,
                };
            }
        }
    }

    pub fn id(&self) -> &str {
        &self.loaded.header.id
    }
}

/// Which recorded session a command names.
#[derive(Debug, Clone, Copy)]
pub enum Pick<'a> {
    /// `-c`: the newest of the workspace.
    Newest,
    /// `-r ID`: an id or a unique prefix of one.
    Id(&'a str),
}

impl<'a> Pick<'a> {
    /// What `-c` and `-r ID` ask for; `None` for a new session.
    pub fn from_flags(continue_: bool, resume: Option<&'a str>) -> Option<Pick<'a>> {
        match (continue_, resume) {
            (_, Some(id)) => Some(Pick::Id(id)),
            (true, None) => Some(Pick::Newest),
            (false, None) => None,
        }
    }
}

/// The store of the project hx runs in from `cwd`: sessions belong to the folder AGENTS.md
/// and skills are found from (the git root), so `-c` in a subfolder continues the project's
/// newest.
pub fn store_for(root: &Path, cwd: &Path) -> Store {
    let ws = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    Store::new(root, &crate::context::instructions::project_root(&ws))
}

/// The ids of every session recorded, in every workspace: what the checkpoints' prune keeps
/// (a checkpoint is of no use once its session is gone). `None` when that cannot be known
/// (no place for sessions, a folder that cannot be read), so nothing is dropped for it; no
/// folder of sessions at all is none recorded.
pub fn recorded_ids(env: &Env) -> Option<std::collections::BTreeSet<String>> {
    let root = session::store::sessions_root(env)?;
    let folders = match std::fs::read_dir(&root) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Default::default()),
        Err(_) => return None,
    };
    let mut ids = std::collections::BTreeSet::new();
    for entry in folders {
        let dir = entry.ok()?.path();
        if dir.is_dir() {
            std::fs::read_dir(&dir).ok()?;
            ids.extend(Store::at(&dir).ids());
        }
    }
    Some(ids)
}

/// The file of the session `id` names: in `store`, else (when no id there holds it) in the
/// one other workspace under `root` that has it.
pub fn locate(root: &Path, store: &Store, id: &str) -> Result<PathBuf, Failure> {
    match store.find(id) {
        Ok(p) => Ok(p),
        Err(e) if store.matching(id.trim()).is_empty() => {
            match find_anywhere(root, store, id.trim()).map_err(Failure::usage)? {
                Some(p) => Ok(p),
                None => Err(Failure::usage(e)),
            }
        }
        Err(e) => Err(Failure::usage(e)),
    }
}

/// `-r ID` of a session in no workspace but `store`'s: the one file under `root` whose id
/// holds `id`, with its workspace. `Err` lists the candidates when there are several.
fn find_anywhere(root: &Path, store: &Store, id: &str) -> Result<Option<PathBuf>, String> {
    let Ok(folders) = std::fs::read_dir(root) else {
        return Ok(None);
    };
    let mut found = Vec::new();
    for dir in folders.filter_map(Result::ok).map(|e| e.path()) {
        if dir.is_dir() && dir != store.dir() {
            found.extend(Store::at(&dir).matching(id));
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        n => Err(format!(
            "session id {id:?} is in no session of this workspace and is ambiguous in others ({n} hold it); type more of it, or run from its workspace"
        )),
    }
}

/// The session `pick` names, read; locked first when this run will `record` to it. An
/// unknown or ambiguous id is a usage error (2), a damaged file a failure (1).
pub fn find(pick: Pick<'_>, record: bool, cwd: &Path, env: &Env) -> Result<Resumed, Failure> {
    let Some(root) = session::store::sessions_root(env) else {
        return Err(Failure::usage(
            "no place for sessions: set HOME or XDG_STATE_HOME",
        ));
    };
    let store = store_for(&root, cwd);
    let path =
        match pick {
            Pick::Id(id) => locate(&root, &store, id)?,
            Pick::Newest => match store.newest() {
                Ok(Some(p)) => p,
                Ok(None) => return Err(Failure::usage(
                    "no session to continue in this workspace; start one with hx agent \"TASK\"",
                )),
                Err(warnings) => {
                    let warnings = warnings.iter().map(Warning::new).collect();
                    return Err(Failure::failed(
                        "no readable session to continue in this workspace",
                    )
                    .after(warnings));
                }
            },
        };
    let cannot = |e: &dyn std::fmt::Display| {
        Failure::failed(format!("cannot resume {}: {e}", path.display()))
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
        return Err(Failure::usage(format!(
            "session {} is a subagent's; continue the session that started it",
            loaded.header.id
        )));
    }
    let elsewhere = (path.parent() != Some(store.dir())).then(|| loaded.header.workspace.clone());
    Ok(Resumed {
        path,
        loaded,
        locked,
        elsewhere,
    })
}

/// [`find`] for what `-c` / `-r ID` ask, `None` when they ask for nothing.
pub fn find_picked(
    pick: Option<Pick<'_>>,
    record: bool,
    cwd: &Path,
    env: &Env,
) -> Result<Option<Resumed>, Failure> {
    pick.map(|p| find(p, record, cwd, env)).transpose()
}

/// The session a run works on: the resumed one (its calls left open answered) or a new one
/// with the id `id`; warnings are pushed to `warnings`. `Err` is why the session cannot be
/// continued.
pub fn open(
    recorder: &Recorder,
    id: String,
    resume: Option<Resumed>,
    profile: &Profile,
    warnings: &mut Vec<Warning>,
) -> Result<Session, String> {
    let Some(Resumed {
        path,
        loaded,
        locked,
        elsewhere,
    }) = resume
    else {
        let (session, unrecorded) = recorder.start_with_id(id, None, profile);
        if let Some(why) = unrecorded {
            warnings.push(Warning::new(why));
        }
        return Ok(session);
    };
    for w in &loaded.warnings {
        warnings.push(Warning::new(format!("{}: {w}", path.display())));
    }
    if let Some(workspace) = elsewhere {
        warnings.push(Warning::notice(format!(
            "session {} belongs to the workspace {workspace}; it goes on here",
            Store::at(path.parent().unwrap_or(&path)).short(&loaded.header.id)
        )));
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
    let (mut session, repaired) = Session::resume(loaded, recorder.run_info(profile), log);
    if repaired > 0 {
        warnings.push(Warning::notice(format!(
            "session {}: {repaired} tool call(s) had no result (the run ended during them); \
             they are answered as not run",
            session.id()
        )));
    }
    if switched {
        // The history was written for another server: DeepSeek answers 400 to a tool-calling
        // turn without `reasoning_content`, strict servers to one with it.
        session.adapt_reasoning(profile.reasoning_echo());
    }
    Ok(session)
}

/// The recorded session's id as the user types it, unique among its workspace's; `None`
/// when nothing is recorded.
pub fn short_id(session: &Session) -> Option<String> {
    let dir = session.path()?.parent()?;
    Some(Store::at(dir).short(session.id()))
}
