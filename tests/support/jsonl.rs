//! JSON Lines as hx writes them: session files and the `--json` output.

use serde_json::Value;
use std::path::Path;

/// Every line of `text` as JSON; panics, naming the line, on one that does not parse.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The lines of a session file as JSON.
pub fn session_lines(path: &Path) -> Vec<Value> {
    json_lines(&std::fs::read_to_string(path).expect("read the session file"))
}

/// The id of the session whose file is `path`: its name without `.jsonl`.
pub fn session_id(path: &Path) -> String {
    path.file_stem()
        .expect("a session file name")
        .to_string_lossy()
        .into_owned()
}

/// A session id as hx shows it: its last 8 characters (unique in a test's workspace).
pub fn short_id(id: &str) -> &str {
    &id[id.len().saturating_sub(8)..]
}
