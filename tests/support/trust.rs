//! What `hx trust` shows and stores, computed apart from hx, and the project files it approves.

use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};

/// The SHA-256 in hex, computed by the system's sha256sum so the tests do not trust hx's own
/// hashing.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("write");
    let out = child.wait_with_output().expect("sha256sum output");
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

/// The first 12 hex digits of the SHA-256, as `hx trust` shows them.
pub fn sha256_prefix(bytes: &[u8]) -> String {
    sha256_hex(bytes)[..12].to_string()
}

/// A hooks.json with one PreToolUse hook on `bash` running `command`.
pub fn project_hooks(command: &str) -> String {
    json!({"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [
        {"type": "command", "command": command}]}]}})
    .to_string()
}
