//! `hx trust`: approve, list or revoke a project's `.hx/hooks.json` (the store and the rules
//! are in `hooks::trust`).

use std::path::Path;

use super::exit;
use crate::config::Env;
use crate::hooks::config::{parse_file, project_dir, project_hooks_file, Entry};
use crate::hooks::trust::{key_of, link_problem, TrustStore};

/// Hex digits of the hash shown to the user: enough to compare by eye.
const SHOWN_HASH: usize = 12;

fn short(hash: &str) -> &str {
    hash.get(..SHOWN_HASH).unwrap_or(hash)
}

/// What `hx trust` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustAction {
    Trust,
    List,
    Revoke,
}

/// `hx trust`: prints results on stdout, problems on stderr; returns the exit code (2 for
/// usage problems such as no hooks file, 1 when the store cannot be read or written).
pub fn run(action: TrustAction, cwd: &Path, env: &Env) -> i32 {
    let Some(store_path) = TrustStore::path_for(env) else {
        eprintln!("hx: no user config dir (set HOME or XDG_CONFIG_HOME) to keep trusted files in");
        return exit::USAGE;
    };
    let mut store = match TrustStore::load(&store_path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hx: {e}; fix or delete it to start over");
            return exit::FAILED;
        }
    };
    if action == TrustAction::List {
        if store.entries().is_empty() {
            println!("no trusted hooks files");
        }
        for (file, hash) in store.entries() {
            println!("{}  {file}", short(hash));
        }
        return exit::ANSWERED;
    }
    let Some(file) = project_hooks_file(cwd) else {
        eprintln!(
            "hx: no project hooks file: no .hx/hooks.json in {} or any parent",
            cwd.display()
        );
        return exit::USAGE;
    };
    // Refused for --revoke too: the key of a link is its target's, so revoking through it would
    // revoke another project's approval.
    if let Some(problem) = link_problem(&file) {
        let verb = if action == TrustAction::Revoke {
            "revoke"
        } else {
            "trust"
        };
        eprintln!("hx: cannot {verb} {}: {problem}", file.display());
        return exit::USAGE;
    }
    let Some(key) = key_of(&file) else {
        eprintln!("hx: cannot resolve the path of {}", file.display());
        return exit::FAILED;
    };
    if action == TrustAction::Revoke {
        if !store.revoke(&file) {
            println!("{key} was not trusted");
            return exit::ANSWERED;
        }
        if let Err(e) = store.save() {
            eprintln!("hx: {e}");
            return exit::FAILED;
        }
        println!("revoked {key}");
        return exit::ANSWERED;
    }
    let content = match std::fs::read(&file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hx: cannot read {}: {e}", file.display());
            return exit::FAILED;
        }
    };
    // Show what is being trusted, so the approval is of commands seen, not of a file name.
    let mut warnings = Vec::new();
    let text = String::from_utf8_lossy(&content);
    let entries = parse_file(&file, project_dir(&file), &text, &mut warnings);
    for w in &warnings {
        eprintln!("{w}");
    }
    let hash = match store.trust(&file, &content) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("hx: {e}");
            return exit::FAILED;
        }
    };
    if let Err(e) = store.save() {
        eprintln!("hx: {e}");
        return exit::FAILED;
    }
    println!("trusted {key} (sha256 {})", short(&hash));
    for e in &entries {
        println!("{}", shown_entry(e));
    }
    exit::ANSWERED
}

/// One line of what `hx trust` approved. The command and matcher come from the repository, so
/// they are shown escaped (`{:?}`): printed raw, a `\r` or an escape sequence could make
/// `touch PWNED #\r./scripts/lint.sh` look like `./scripts/lint.sh` on a terminal, and the user
/// would approve what they did not see.
fn shown_entry(e: &Entry) -> String {
    let command = e.command.as_str();
    if e.event.uses_matcher() {
        let matcher = e.matcher.text();
        format!("  {:?}, matcher {matcher:?}: {command:?}", e.event)
    } else {
        format!("  {:?}: {command:?}", e.event)
    }
}
