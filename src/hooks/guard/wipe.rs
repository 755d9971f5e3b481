//! `truncate` and `shred` of a file the machine or the user's shell depends on.

use super::paths::{is_protected_file, resolve, shown, Place};

/// `truncate` (to any size: a config file grown with zero bytes is as broken) or `shred` of a
/// file directly in `/` or a home folder (`~/.bashrc`), in `~/.ssh`, or in a system folder
/// (`/etc/passwd`).
pub(super) fn check_wipe(name: &str, args: &[&str], cwd: &Place) -> Option<String> {
    let takes_value: &[&str] = match name {
        "truncate" => &["-s", "--size", "-r", "--reference"],
        _ => &["-n", "--iterations", "-s", "--size", "--random-source"],
    };
    let mut files = Vec::new();
    let mut it = args.iter();
    let mut options_done = false;
    while let Some(&a) = it.next() {
        if options_done || !a.starts_with('-') || a == "-" {
            files.push(a);
        } else if a == "--" {
            options_done = true;
        } else if takes_value.contains(&a) {
            it.next();
        }
    }
    files
        .iter()
        .find(|f| is_protected_file(&resolve(f, cwd)))
        .map(|f| {
            format!(
                "{name} of {}, a file of the system or of a home folder",
                shown(f, cwd)
            )
        })
}
