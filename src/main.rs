//! The `hx` binary: parse arguments, run, map the outcome to an exit code.

use std::io::Write;

fn main() {
    // The sandbox's own processes (`hx __sandbox init|exec`, started by hx itself) come first:
    // before clap, the runtime or any thread, since a process with threads cannot make a user
    // namespace and a launcher must cost little more than an exec. Hidden from --help.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == "__sandbox") {
        let rest: Vec<std::ffi::OsString> = args.collect();
        std::process::exit(hx::sandbox::pod::main(&rest));
    }
    // At most two malloc arenas, before any thread starts: glibc gives each thread that
    // finds the others' busy an arena of its own (up to eight per core), and the short-lived
    // threads of a run's start (the skills' readers, the checkpoints' look and walk, the
    // sandbox's plan) each kept theirs. hx's own work runs on one thread; two arenas keep
    // the start's threads from waiting on one lock. In a workspace of 2,000 skill folders
    // this took the first run's peak RSS from 16.2 to 15.2 MiB (issue 33; medians of 7 runs
    // of `cargo bench --bench protections`, this build and the one before alternating).
    #[cfg(target_env = "gnu")]
    // SAFETY: a plain setting of the allocator, made while this process has one thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    // A bug must still end in one readable line, never a backtrace dump.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        // The message may quote the input that caused it. Not eprintln!: a panic while
        // printing (stderr gone) would abort.
        // Bounded too: a panic message can quote megabytes of input.
        let msg = hx::text::one_line(&hx::term::escape_controls(&msg), 1000);
        let _ = writeln!(
            std::io::stderr(),
            "hx: internal error (a bug in hx, please report it): {msg}{at}"
        );
    }));
    std::process::exit(hx::cli::main_with_args());
}
