//! Spotting a write the sandbox refused in a failed command's output, so the model is told
//! once, in words, instead of retrying blindly.

use std::path::{Path, PathBuf};

/// The texts a refused write produces: Landlock answers `EACCES`; `EROFS` is what a read-only
/// mount (another sandbox, a container) answers, which the model should treat the same way.
const MARKERS: [&str; 2] = ["Permission denied", "Read-only file system"];
/// At most this many marked lines are examined, and this many candidate paths resolved: the
/// output is already capped, but each candidate costs a few `lstat` calls.
const MAX_LINES: usize = 32;
const MAX_CANDIDATES: usize = 64;
/// A candidate longer than this is not a path (PATH_MAX).
const MAX_PATH_LEN: usize = 4096;

/// Whether `output` shows a refused write. With `read_only`, any marker counts (nothing may be
/// written). Otherwise a marker counts only with a path on its line that really lies outside
/// every folder in `writable` (relative paths are taken from `cwd`; symlinks are followed), so
/// a permission error inside the workspace gets no note. Returns the offending path when one
/// was named.
pub fn refused_write(
    output: &str,
    cwd: &Path,
    writable: &[PathBuf],
    read_only: bool,
) -> Option<Option<PathBuf>> {
    let mut budget = MAX_CANDIDATES;
    let marked = output
        .lines()
        .filter(|l| MARKERS.iter().any(|m| l.contains(m)))
        .take(MAX_LINES);
    let mut any = false;
    for line in marked {
        any = true;
        for candidate in candidates(line) {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let Ok(real) = crate::paths::real_path(&cwd.join(candidate)) else {
                continue;
            };
            if !writable.iter().any(|w| real.starts_with(w)) {
                return Some(Some(real));
            }
        }
    }
    (read_only && any).then_some(None)
}

/// The first path a `Permission denied` line names that the pod hid from commands (a denied
/// file, or one in a denied folder), bounded as [`refused_write`].
pub fn hidden_read(output: &str, cwd: &Path, hidden: &[PathBuf]) -> Option<PathBuf> {
    if hidden.is_empty() {
        return None;
    }
    output
        .lines()
        .filter(|l| l.contains(MARKERS[0]))
        .take(MAX_LINES)
        .flat_map(candidates)
        .take(MAX_CANDIDATES)
        .find_map(|c| {
            // As named (a denied name), and where it leads (a link to a denied file).
            let named = cwd.join(c);
            let real = crate::paths::real_path(&named).ok();
            let is_hidden = |p: &Path| hidden.iter().any(|h| p.starts_with(h));
            (is_hidden(&named) || real.as_deref().is_some_and(is_hidden)).then_some(named)
        })
}

/// The paths a marked line may name: every quoted part (`'x'`, `"x"`, `‘x’`, `` `x' ``), or,
/// when nothing is quoted, the part just before the marker (`bash: x: Permission denied`).
fn candidates(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find(['\'', '"', '‘', '`']) {
        let open = rest[start..].chars().next().unwrap_or('\'');
        let after = &rest[start + open.len_utf8()..];
        let closers: &[char] = match open {
            '‘' => &['’'],
            '`' => &['\'', '`'],
            '"' => &['"'],
            _ => &['\''],
        };
        let Some(end) = after.find(closers) else {
            break;
        };
        out.push(&after[..end]);
        let close_len = after[end..].chars().next().map_or(1, char::len_utf8);
        rest = &after[end + close_len..];
    }
    if out.is_empty() {
        let at = MARKERS
            .iter()
            .filter_map(|m| line.find(m))
            .min()
            .unwrap_or(0);
        let before = line[..at].trim_end().trim_end_matches(':');
        // `bash: line 1: ./x: Permission denied`: the last `: `-separated part.
        if let Some(last) = before.rsplit(": ").next() {
            out.push(last.trim());
        }
    }
    out.retain(|c| !c.is_empty() && c.len() <= MAX_PATH_LEN && !c.contains('\0'));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(output: &str, read_only: bool) -> Option<Option<PathBuf>> {
        let ws = PathBuf::from("/ws/project");
        let writable = [ws.clone(), PathBuf::from("/tmp")];
        refused_write(output, &ws, &writable, read_only)
    }

    #[test]
    fn paths_outside_the_writable_roots_are_found() {
        for (out, path) in [
            (
                "touch: cannot touch '../outside': Permission denied",
                "/ws/outside",
            ),
            ("bash: /home/u/x: Permission denied", "/home/u/x"),
            ("bash: line 1: /etc/x: Permission denied", "/etc/x"),
            (
                "PermissionError: [Errno 13] Permission denied: '/home/u/.bashrc'",
                "/home/u/.bashrc",
            ),
            (
                "mkdir: cannot create directory ‘/opt/new’: Permission denied",
                "/opt/new",
            ),
            (
                "cp: cannot create regular file \"/var/x\": Read-only file system",
                "/var/x",
            ),
        ] {
            let text = format!("some output\n{out}\n[exit code: 1]");
            assert_eq!(
                check(&text, false),
                Some(Some(PathBuf::from(path))),
                "{out}"
            );
        }
    }

    #[test]
    fn no_note_inside_the_workspace_or_tmp_or_without_a_path() {
        for out in [
            "bash: ./script.sh: Permission denied",
            "touch: cannot touch 'locked/file': Permission denied",
            "rm: cannot remove '/tmp/other-users-file': Operation not permitted\nbash: /tmp/x: Permission denied",
            "error: Permission denied",
            "all fine",
            "",
        ] {
            assert_eq!(check(out, false), None, "{out}");
        }
    }

    #[test]
    fn read_only_notes_any_refusal() {
        let ws = PathBuf::from("/ws/project");
        let got = refused_write("bash: a.txt: Permission denied", &ws, &[], true);
        assert_eq!(got, Some(Some(ws.join("a.txt"))));
        assert!(refused_write("error: Permission denied", &ws, &[], true).is_some());
        assert_eq!(refused_write("nothing refused", &ws, &[], true), None);
    }

    #[test]
    fn a_symlink_out_of_the_workspace_counts_as_outside() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let ws_real = ws.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(out.path(), ws_real.join("link")).unwrap();
        let got = refused_write(
            "bash: link/x: Permission denied",
            &ws_real,
            std::slice::from_ref(&ws_real),
            false,
        );
        assert_eq!(
            got,
            Some(Some(out.path().canonicalize().unwrap().join("x")))
        );
    }

    #[test]
    fn quoted_parts_are_candidates() {
        assert_eq!(candidates("cp: cannot stat 'a': x 'b c'"), ["a", "b c"]);
        assert_eq!(candidates("ln: `x': Permission denied"), ["x"]);
        assert_eq!(candidates("sh: 1: y: Permission denied"), ["y"]);
        assert_eq!(
            candidates("'unterminated: Permission denied"),
            ["'unterminated"]
        );
    }
}
