//! Exit codes, as documented in the README and `hx agent --help`.

pub const ANSWERED: i32 = 0;
pub const FAILED: i32 = 1;
pub const USAGE: i32 = 2;
pub const MAX_TURNS: i32 = 3;

/// 128 + the signal: SIGHUP 129, SIGINT 130, SIGTERM 143.
pub const fn signalled(sig: i32) -> i32 {
    128 + sig
}
