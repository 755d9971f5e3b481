//! The `hx` binary: parse arguments, run, map the outcome to an exit code.

use std::io::Write;

fn main() {
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
