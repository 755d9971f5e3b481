//! The window of the server a run talks to, asked of the server itself: once per run, beside
//! the build, bounded, and remembered per base URL and model in hx's cache folder.
//!
//! Asked only when hx cannot know the window otherwise: no `context_window` is configured
//! (which always wins), the model is not one whose window hx knows (DeepSeek's), and the
//! server is not DeepSeek's, OpenAI's or OpenRouter's API (which state none, or state it in
//! their documentation). The question runs on a thread of its own, so a server that does not
//! answer holds a run up no longer than [`GRACE`], the build's wait for it (a local server
//! answers in milliseconds, so the first request is planned for the window it states); an
//! answer that comes later applies from the next request on (`Agent::window_teller`). The whole question, every
//! endpoint it asks, takes at most [`PROBE_TIME`].
//!
//! The cache file (`$XDG_CACHE_HOME/hx/server-windows.json`) is hx's own: written atomically,
//! read within [`MAX_CACHE_BYTES`] and checked entry by entry, so a damaged file costs a
//! question, never a wrong window. A stated window is believed for [`FRESH_SECS`] (`hx models`
//! asks afresh and renews it); an answer stating none, or none in time, for
//! [`FRESH_NONE_SECS`], so a server that keeps quiet costs the wait once an hour at most. A
//! server that refused the connection is asked again at the next run.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::config::{Config, Env};
use crate::model::window::{Stated, MAX_NAME_CHARS, MAX_STATED, MIN_STATED};
use crate::model::{ModelError, OpenAiClient};

/// The whole question, every endpoint it asks, from the first byte sent to the last read.
pub const PROBE_TIME: Duration = Duration::from_secs(2);
/// How long the build waits for the answer (counted from the question's start) before the
/// run goes on with the assumed window.
pub const GRACE: Duration = Duration::from_millis(300);
/// The cache file's name in hx's cache folder.
pub const CACHE_FILE: &str = "server-windows.json";
/// Largest cache file read; a larger one is dropped (and rewritten smaller).
pub const MAX_CACHE_BYTES: u64 = 256 * 1024;
/// Entries kept, newest first.
pub const MAX_ENTRIES: usize = 256;
/// How long a stated window is believed.
pub const FRESH_SECS: u64 = 24 * 3600;
/// How long an answer stating none, or no answer in time, is.
pub const FRESH_NONE_SECS: u64 = 3600;
/// Bumped when an entry's shape or meaning changes.
const FORMAT: u32 = 1;
/// Characters of a source (`/v1/models meta.n_ctx`) kept.
const MAX_FROM_CHARS: usize = 200;
/// The hosted APIs, never asked: their windows are known, or stated nowhere they answer.
const HOSTED: [&str; 3] = ["api.deepseek.com", "api.openai.com", "openrouter.ai"];

/// What became of the question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not asked (see the module's doc).
    NotAsked,
    /// Still out.
    Pending,
    /// The server stated this window; `cached`: an earlier run's answer.
    Stated { stated: Stated, cached: bool },
    /// The server answered, and states none.
    NoneStated { cached: bool },
    /// No answer in time (`cached`: an earlier run's silence), or no connection.
    NoAnswer { cached: bool },
}

impl Outcome {
    pub fn stated(&self) -> Option<&Stated> {
        match self {
            Outcome::Stated { stated, .. } => Some(stated),
            _ => None,
        }
    }
}

/// Called with the stated window when it comes after the build.
type Then = Box<dyn FnOnce(&Stated) + Send>;

struct Slot {
    outcome: Outcome,
    then: Option<Then>,
}

/// The question of one run (or of one `hx context`).
pub struct Probe {
    shared: Arc<(Mutex<Slot>, Condvar)>,
    started: Instant,
}

/// Whether a run with `config` asks its server for the window (see the module's doc).
pub fn asks(config: &Config) -> bool {
    !config.window_configured
        && crate::context::builtin_window(&config.model).is_none()
        && !hosted(&config.base_url)
}

/// Whether `base_url` is one of the hosted APIs (or no URL at all, which is asked nothing).
pub fn hosted(base_url: &str) -> bool {
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .is_none_or(|h| HOSTED.contains(&h.as_str()))
}

impl Probe {
    /// The question for `config`'s model: answered at once from the cache, not asked at all,
    /// or asked on a thread of its own.
    pub fn start(config: &Config, env: &Env) -> Probe {
        let started = Instant::now();
        if !asks(config) {
            return Probe::ready(Outcome::NotAsked, started);
        }
        let key = Key::of(config);
        let cache = crate::paths::cache_dir(env).map(|d| d.join(CACHE_FILE));
        if let Some(hit) = cache.as_deref().and_then(|c| cached(c, &key, now_secs())) {
            return Probe::ready(hit, started);
        }
        let probe = Probe::ready(Outcome::Pending, started);
        let shared = probe.shared.clone();
        let options = config.client_options();
        let spawned = std::thread::Builder::new()
            .name("hx-window".into())
            .spawn(move || {
                let (outcome, keep) = ask(options, &key.model);
                if let Some(cache) = cache.as_deref().filter(|_| keep) {
                    remember(cache, &key, &outcome, now_secs());
                }
                land(&shared, outcome);
            });
        if spawned.is_err() {
            return Probe::ready(Outcome::NoAnswer { cached: false }, started);
        }
        probe
    }

    fn ready(outcome: Outcome, started: Instant) -> Probe {
        Probe {
            shared: Arc::new((
                Mutex::new(Slot {
                    outcome,
                    then: None,
                }),
                Condvar::new(),
            )),
            started,
        }
    }

    /// The outcome once it is in, or as it stands `after` the question's start.
    pub fn wait(&self, after: Duration) -> Outcome {
        let (lock, cv) = &*self.shared;
        let until = self.started + after;
        let mut slot = guard(lock);
        while slot.outcome == Outcome::Pending {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            slot = cv
                .wait_timeout(slot, left)
                .map_or_else(|e| e.into_inner().0, |(s, _)| s);
        }
        slot.outcome.clone()
    }

    /// Calls `f` with the stated window when it comes: now, if it has, or when the question
    /// now out is answered.
    pub fn then(&self, f: impl FnOnce(&Stated) + Send + 'static) {
        let mut slot = guard(&self.shared.0);
        match &slot.outcome {
            Outcome::Pending => slot.then = Some(Box::new(f)),
            Outcome::Stated { stated, .. } => {
                let stated = stated.clone();
                drop(slot);
                f(&stated);
            }
            _ => {}
        }
    }
}

fn guard(lock: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

/// Puts the answer in, wakes whoever waits, and tells whoever asked to be told.
fn land(shared: &(Mutex<Slot>, Condvar), outcome: Outcome) {
    let then = {
        let mut slot = guard(&shared.0);
        slot.outcome = outcome.clone();
        slot.then.take()
    };
    shared.1.notify_all();
    if let (Some(f), Some(stated)) = (then, outcome.stated()) {
        f(stated);
    }
}

/// The question itself, on a runtime of its own (the thread's), within [`PROBE_TIME`]; and
/// whether its outcome is worth remembering.
fn ask(options: crate::model::ClientOptions, model: &str) -> (Outcome, bool) {
    let silent = Outcome::NoAnswer { cached: false };
    let Ok(client) = OpenAiClient::new(options) else {
        return (silent, false);
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return (silent, false);
    };
    runtime.block_on(async {
        let until = tokio::time::Instant::now() + PROBE_TIME;
        let asked = tokio::time::timeout_at(until, client.server_window(model, until)).await;
        match asked {
            Ok(Ok(Some(stated))) => (
                Outcome::Stated {
                    stated,
                    cached: false,
                },
                true,
            ),
            Ok(Ok(None)) => (Outcome::NoneStated { cached: false }, true),
            // Nothing listens there (yet): the next run asks again.
            Ok(Err(ModelError::Unreachable { .. })) => (silent, false),
            Ok(Err(_)) | Err(_) => (silent, true),
        }
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What the cache keeps an answer under.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    /// The base URL without user, password or query (where keys are sometimes put).
    base_url: String,
    model: String,
}

impl Key {
    fn of(config: &Config) -> Key {
        Key {
            base_url: super::build::recorded_url(&config.base_url),
            model: config.model.clone(),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    format: u32,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    base_url: String,
    model: String,
    /// When it was asked, in Unix seconds.
    at: u64,
    /// The window stated; `None`: none stated, or no answer in time (`silent`).
    window: Option<u64>,
    #[serde(default)]
    from: String,
    #[serde(default)]
    silent: bool,
}

impl Entry {
    /// Whether the entry holds what hx itself would have written.
    fn sane(&self) -> bool {
        self.window
            .is_none_or(|w| (MIN_STATED..=MAX_STATED).contains(&w))
            && self.base_url.len() <= 2_048
            && self.model.chars().count() <= MAX_NAME_CHARS
            && self.from.chars().count() <= MAX_FROM_CHARS
    }

    fn fresh(&self, now: u64) -> bool {
        let life = if self.window.is_some() {
            FRESH_SECS
        } else {
            FRESH_NONE_SECS
        };
        // A time ahead of the clock (the clock was set back) is not believed either.
        self.at <= now.saturating_add(60) && now.saturating_sub(self.at) < life
    }
}

/// The cache's entries, or none when the file is missing, too large or damaged.
fn read(path: &Path) -> Vec<Entry> {
    let Ok(Some(bytes)) = crate::paths::read_regular(path, MAX_CACHE_BYTES) else {
        return Vec::new();
    };
    match serde_json::from_slice::<CacheFile>(&bytes) {
        Ok(f) if f.format == FORMAT => f.entries.into_iter().filter(Entry::sane).collect(),
        _ => Vec::new(),
    }
}

/// The cached answer for `key`, when one is fresh.
fn cached(path: &Path, key: &Key, now: u64) -> Option<Outcome> {
    let e = read(path)
        .into_iter()
        .find(|e| e.base_url == key.base_url && e.model == key.model && e.fresh(now))?;
    Some(match e.window {
        Some(tokens) => Outcome::Stated {
            stated: Stated {
                tokens,
                from: e.from,
            },
            cached: true,
        },
        None if e.silent => Outcome::NoAnswer { cached: true },
        None => Outcome::NoneStated { cached: true },
    })
}

/// Keeps the answer for `key`, with the other fresh entries (newest first, at most
/// [`MAX_ENTRIES`]). Nothing is kept of a server that was not there; a cache that cannot be
/// written is asked again next time.
fn remember(path: &Path, key: &Key, outcome: &Outcome, now: u64) {
    let (window, from, silent) = match outcome {
        Outcome::Stated { stated, .. } => (
            Some(stated.tokens),
            crate::text::one_line(&stated.from, MAX_FROM_CHARS),
            false,
        ),
        Outcome::NoneStated { .. } => (None, String::new(), false),
        Outcome::NoAnswer { .. } => (None, String::new(), true),
        Outcome::NotAsked | Outcome::Pending => return,
    };
    let mut entries: Vec<Entry> = read(path)
        .into_iter()
        .filter(|e| e.fresh(now) && !(e.base_url == key.base_url && e.model == key.model))
        .collect();
    entries.push(Entry {
        base_url: key.base_url.clone(),
        model: key.model.clone(),
        at: now,
        window,
        from,
        silent,
    });
    entries.sort_by_key(|e| std::cmp::Reverse(e.at));
    entries.truncate(MAX_ENTRIES);
    let file = CacheFile {
        format: FORMAT,
        entries,
    };
    if let Ok(bytes) = serde_json::to_vec(&file) {
        let _ = crate::paths::write_atomic(path, &bytes);
    }
}

/// Keeps what `hx models` found of the configured model, when a run would ask for it: asked
/// afresh, it renews what runs believe.
pub fn renew(config: &Config, env: &Env, stated: Option<Stated>) {
    if !asks(config) {
        return;
    }
    if let Some(cache) = crate::paths::cache_dir(env).map(|d| d.join(CACHE_FILE)) {
        let outcome = match stated {
            Some(stated) => Outcome::Stated {
                stated,
                cached: false,
            },
            None => Outcome::NoneStated { cached: false },
        };
        remember(&cache, &Key::of(config), &outcome, now_secs());
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
