//! `hx trust`: show, then approve, list or revoke this project's files that need trust (the
//! kinds, the store and the rules are in `crate::trust`).

use std::io::{BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};

use super::exit;
use crate::config::Env;
use crate::trust::{self, key_of, Kind, TrustState, TrustStore};

/// Every kind of project file that needs trust, in the order `hx trust` shows them. Each is
/// defined by the module that reads the file; a new kind is one more entry here.
pub const KINDS: [&Kind; 6] = [
    &crate::config::TRUST,
    &crate::hooks::config::TRUST,
    &crate::hooks::config::TRUST_CLAUDE,
    &crate::mcp::config::TRUST,
    &crate::commands::TRUST_CLAUDE,
    &crate::commands::TRUST_AGENTS,
];

/// Hex digits of the hash shown to the user: enough to compare by eye.
const SHOWN_HASH: usize = 12;
/// The most of an answer to `[y/N]` that is read.
const MAX_ANSWER_BYTES: u64 = 64;

fn short(hash: &str) -> &str {
    hash.get(..SHOWN_HASH).unwrap_or(hash)
}

/// What `hx trust` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustAction {
    /// Show the files, then trust them: after `y` on a terminal, or at once with `yes`.
    Trust {
        yes: bool,
    },
    List,
    Revoke,
}

/// One project file `hx trust` found.
struct Found {
    kind: &'static Kind,
    path: PathBuf,
    /// The canonical path: the store's key, and what the user is shown.
    key: String,
    /// Only an approval is left (`--revoke` only).
    gone: bool,
}

/// `hx trust`: prints results on stdout, problems on stderr; returns the exit code (2 for
/// usage problems such as nothing to trust or a file that is not valid, 1 when the store
/// cannot be read or written or the user said no).
pub fn run(action: TrustAction, cwd: &Path, env: &Env) -> i32 {
    let Some(store_path) = TrustStore::path_for(env) else {
        errln!("hx: no user config dir (set HOME or XDG_CONFIG_HOME) to keep trusted files in");
        return exit::USAGE;
    };
    let mut store = match TrustStore::load(&store_path) {
        Ok(s) => s,
        Err(e) => {
            errln!("hx: {e}; fix or delete it to start over");
            return exit::FAILED;
        }
    };
    if action == TrustAction::List {
        if store.entries().is_empty() {
            outln!("no trusted files");
        }
        for (file, hash) in store.entries() {
            outln!("{}  {file}", short(hash));
        }
        return exit::ANSWERED;
    }
    let verb = match action {
        TrustAction::Revoke => "revoke",
        _ => "trust",
    };
    let approvals = (action == TrustAction::Revoke).then_some(&store);
    let found = match find_all(cwd, verb, approvals) {
        Ok(f) => f,
        Err(code) => return code,
    };
    match action {
        TrustAction::Revoke => revoke(&mut store, &found),
        TrustAction::Trust { yes } => approve(&mut store, &found, yes),
        TrustAction::List => exit::ANSWERED,
    }
}

/// The nearest file of each kind, each checked for links; an `Err` is the exit code, the
/// reason printed.
///
/// With `approvals` (`--revoke`), also every file of each kind that is gone but still approved
/// and would count here if it came back: in a folder at or above `cwd` nearer than the file
/// found (anywhere above when none is), nearest first. Left in the store, such an approval
/// would trust the same content again without asking, the day a branch or a pull restores it.
fn find_all(cwd: &Path, verb: &str, approvals: Option<&TrustStore>) -> Result<Vec<Found>, i32> {
    let mut found = Vec::new();
    for kind in KINDS {
        let present = kind.find(cwd);
        if let Some(store) = approvals {
            let stop = present.as_deref().map(|p| kind.project_dir(p));
            for dir in cwd.ancestors().take_while(|d| Some(*d) != stop) {
                if let Some(key) = kind.key_in(dir).filter(|k| store.holds(k)) {
                    let path = dir.join(kind.path);
                    found.push(Found {
                        kind,
                        path,
                        key,
                        gone: true,
                    });
                }
            }
        }
        let Some(path) = present else {
            continue;
        };
        // Refused for --revoke too: the key of a link is its target's, so revoking through it
        // would revoke another project's approval.
        if let Some(problem) = kind.link_problem(&path) {
            errln!("hx: cannot {verb} {}: {problem}", path.display());
            return Err(exit::USAGE);
        }
        let Some(key) = key_of(&path) else {
            errln!("hx: cannot resolve the path of {}", path.display());
            return Err(exit::FAILED);
        };
        found.push(Found {
            kind,
            path,
            key,
            gone: false,
        });
    }
    if found.is_empty() {
        let names: Vec<&str> = KINDS.iter().map(|k| k.path).collect();
        errln!(
            "hx: nothing to {verb}: no {} in {} or any parent",
            names.join(" or "),
            cwd.display()
        );
        return Err(exit::USAGE);
    }
    Ok(found)
}

fn revoke(store: &mut TrustStore, found: &[Found]) -> i32 {
    let mut lines = Vec::new();
    for f in found {
        lines.push(if f.gone && store.revoke_key(&f.key) {
            format!("revoked {} (the file is gone)", f.key)
        } else if !f.gone && store.revoke(&f.path) {
            format!("revoked {}", f.key)
        } else {
            format!("{} was not trusted", f.key)
        });
    }
    if lines.iter().any(|l| l.starts_with("revoked ")) {
        if let Err(e) = store.save() {
            errln!("hx: {e}");
            return exit::FAILED;
        }
    }
    for l in lines {
        outln!("{l}");
    }
    exit::ANSWERED
}

/// Reads and checks every file, shows each, asks once, then trusts those not already
/// trusted. Nothing is trusted unless every file is valid: the user approves what was shown.
fn approve(store: &mut TrustStore, found: &[Found], yes: bool) -> i32 {
    let mut shown = Vec::new();
    let mut pending = Vec::new();
    let mut problems = 0;
    for f in found {
        let bytes = match f.kind.read(&f.path) {
            Ok(Some(b)) => b,
            Ok(None) => {
                errln!("hx: cannot trust {}: it is gone", f.key);
                problems += 1;
                continue;
            }
            Err(e) => {
                errln!("hx: cannot trust {}: {e}", f.key);
                problems += 1;
                continue;
            }
        };
        let review = match std::str::from_utf8(&bytes) {
            Ok(text) => (f.kind.review)(&f.path, text),
            Err(_) => Err(vec!["not UTF-8 text".to_string()]),
        };
        let lines = match review {
            Ok(lines) => lines,
            Err(p) => {
                for line in trust::problem_lines(&p) {
                    errln!("hx: cannot trust {}: {line}", f.key);
                }
                problems += 1;
                continue;
            }
        };
        let hash = trust::sha256_hex(&bytes);
        let header = format!("{} {} (sha256 {})", f.kind.label, f.key, short(&hash));
        if store.state(&f.path, &bytes) == TrustState::Trusted {
            shown.push(format!("{header}: already trusted"));
            continue;
        }
        shown.push(format!("{header}:"));
        if lines.is_empty() {
            shown.push("  (empty)".into());
        }
        shown.extend(lines.iter().map(|l| format!("  {l}")));
        pending.push((f, bytes));
    }
    if problems > 0 {
        return exit::USAGE;
    }
    for line in &shown {
        outln!("{line}");
    }
    if pending.is_empty() {
        return exit::ANSWERED;
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            errln!(
                "hx: stdin is not a terminal, so hx cannot ask; run `hx trust --yes` to trust what is shown"
            );
            return exit::USAGE;
        }
        let question = match pending.len() {
            1 => "Trust this file?".to_string(),
            n => format!("Trust these {n} files?"),
        };
        if !ask(&question) {
            errln!("hx: nothing trusted");
            return exit::FAILED;
        }
    }
    // The bytes shown are the bytes hashed: an edit since they were read is not approved.
    for (f, bytes) in &pending {
        if let Err(e) = store.trust(&f.path, bytes) {
            errln!("hx: {e}");
            return exit::FAILED;
        }
    }
    if let Err(e) = store.save() {
        errln!("hx: {e}");
        return exit::FAILED;
    }
    for (f, _) in &pending {
        outln!("trusted {}", f.key);
    }
    exit::ANSWERED
}

/// Asks a yes/no question on stderr; only `y` or `yes` is a yes.
pub(super) fn ask(question: &str) -> bool {
    {
        use std::io::Write;
        let mut e = std::io::stderr();
        let _ = write!(e, "{question} [y/N] ");
        let _ = e.flush();
    }
    let mut answer = String::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_ANSWER_BYTES)
        .read_line(&mut answer);
    read.is_ok() && matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
