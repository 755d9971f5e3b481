//! `hx-pod`: hx's sandbox launcher (`hx-pod __sandbox init`), which hx starts for the run's
//! pod. The same code as `hx __sandbox`, in a small program, which takes less to exec.

use std::io::Write;

fn main() {
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == "__sandbox") {
        let rest: Vec<std::ffi::OsString> = args.collect();
        std::process::exit(hx::sandbox::pod::main(&rest));
    }
    let _ = writeln!(
        std::io::stderr(),
        "hx-pod: hx's sandbox launcher, started by hx itself; it is not a command"
    );
    std::process::exit(2);
}
