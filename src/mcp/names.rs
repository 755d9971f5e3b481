//! The names MCP tools get in the request: `mcp__SERVER__TOOL`, the form Claude Code and Codex
//! use, so hooks written for them (`mcp__.*`, `mcp__fs__.*`) match here too.
//!
//! A function name in the OpenAI format is at most 64 characters of `[A-Za-z0-9_-]`. A
//! server's tool name may hold anything, so other characters become `_`; a name that is then
//! too long, or that another tool already took, keeps its start and ends in `_` and eight hex
//! digits of the SHA-256 of the server and tool names, which stay the same from run to run.

use sha2::{Digest, Sha256};

/// The longest function name the OpenAI format (and DeepSeek) accepts.
pub const MAX_NAME_CHARS: usize = 64;

/// The prefix every MCP tool's name starts with.
pub const PREFIX: &str = "mcp__";

/// What [`valid_server_name`] asks, for messages.
pub const SERVER_NAME_RULE: &str =
    "1 to 32 characters of letters, digits, '_' and '-', without '__' and not ending in '_'";

/// Whether `name` is a valid server name: what is allowed in a function name, at most 32
/// characters (so a tool name keeps room), not empty, and without `__` or a final `_`, so
/// that `mcp__SERVER__TOOL` splits one way only (the `--json` view names the server).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name.chars().all(allowed)
        && !name.contains("__")
        && !name.ends_with('_')
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The request name of `tool` of `server`; `taken` says whether a name is already used by an
/// earlier tool, which then pushes this one to its hashed form.
pub fn qualified(server: &str, tool: &str, taken: impl Fn(&str) -> bool) -> String {
    let clean: String = tool
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    let plain = format!("{PREFIX}{server}__{clean}");
    if plain.len() <= MAX_NAME_CHARS && !clean.is_empty() && !taken(&plain) {
        return plain;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let suffix = crate::text::hex(&digest[..4]);
    // ASCII only by now, so byte lengths are character counts.
    let keep = MAX_NAME_CHARS - suffix.len() - 1;
    let mut name = plain;
    name.truncate(keep);
    format!("{name}_{suffix}")
}

/// The tool's part of `name`, the request name [`qualified`] gave a tool of `server`: what
/// follows `mcp__SERVER__` (cleaned, and hashed when it had to be).
pub fn tool_part<'a>(server: &str, name: &'a str) -> Option<&'a str> {
    name.strip_prefix(PREFIX)?
        .strip_prefix(server)?
        .strip_prefix("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_gives_back_the_tool_s_part_of_it() {
        let name = qualified("git-2", "log all", |_| false);
        assert_eq!(tool_part("git-2", &name), Some("log_all"));
        assert_eq!(tool_part("git", &name), None);
        assert_eq!(tool_part("git-2", "read_file"), None);
        let long = qualified("s", &"x".repeat(100), |_| false);
        assert!(
            tool_part("s", &long).is_some_and(|t| t.starts_with("xxx")),
            "{long}"
        );
    }

    #[test]
    fn plain_names_are_prefixed_and_kept() {
        assert_eq!(
            qualified("fs", "read_file", |_| false),
            "mcp__fs__read_file"
        );
        assert_eq!(
            qualified("git-2", "log-all", |_| false),
            "mcp__git-2__log-all"
        );
    }

    #[test]
    fn other_characters_become_underscores() {
        assert_eq!(
            qualified("fs", "files.read/all é", |_| false),
            "mcp__fs__files_read_all__"
        );
    }

    #[test]
    fn long_and_taken_names_get_a_stable_hash_suffix() {
        let long = "x".repeat(100);
        let a = qualified("server", &long, |_| false);
        assert_eq!(a.len(), MAX_NAME_CHARS);
        assert!(a.starts_with("mcp__server__xxx"), "{a}");
        assert_eq!(a, qualified("server", &long, |_| false), "stable");
        assert_ne!(a, qualified("server", &"x".repeat(101), |_| false));

        // `a.b` and `a_b` both clean to `a_b`: the second one gets a suffix.
        let first = qualified("s", "a_b", |_| false);
        let second = qualified("s", "a.b", |n| n == first);
        assert_eq!(first, "mcp__s__a_b");
        assert!(
            second.starts_with("mcp__s__a_b_") && second.len() == 20,
            "{second}"
        );
        // A name that cleans to nothing still gets a usable one.
        assert!(qualified("s", "", |_| false).starts_with("mcp__s___"));
    }

    #[test]
    fn server_names_are_checked() {
        assert!(valid_server_name("fs"));
        assert!(valid_server_name("my_server-2"));
        assert!(!valid_server_name(""));
        assert!(!valid_server_name("a.b"));
        assert!(!valid_server_name("a b"));
        assert!(!valid_server_name(&"a".repeat(33)));
        assert!(!valid_server_name("a__b"));
        assert!(!valid_server_name("a_"));
    }
}
