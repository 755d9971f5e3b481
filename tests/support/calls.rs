//! Tool calls the scripted model makes in several test modules.

use super::Call;
use serde_json::{json, Value};

/// A call of `name` with `args` as its JSON arguments.
pub fn call(id: &str, name: &str, args: Value) -> Call {
    Call::new(id, name, &args.to_string())
}

/// A `load_skill` call for the skill `name`.
pub fn load_skill(id: &str, name: &str) -> Call {
    Call::new(id, "load_skill", &json!({ "name": name }).to_string())
}

/// A bash call printing `n` bytes (`a`s), for output of a known size.
pub fn bash_printing(id: &str, n: usize) -> Call {
    let cmd = format!("head -c {n} /dev/zero | tr '\\0' a");
    Call::new(id, "bash", &json!({ "command": cmd }).to_string())
}
