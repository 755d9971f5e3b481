//! Issue 32, items 1 and 2: nothing hx itself runs outside the sandbox comes from where the
//! model writes. The model plants a program where hx (not a command) would find it: a `git`
//! in a folder on `PATH` that lies in the workspace (an activated virtualenv's `.venv/bin`,
//! direnv's `node_modules/.bin`) or that `PATH` names relatively (`./node_modules/.bin`), the
//! shell hx starts hooks with, a `sandbox = "off"` MCP server's program, and hx's own
//! launcher when hx runs from the workspace or a writable root. Each planted program notes
//! its run in a file outside every writable folder (the test's HOME), which a command in the
//! sandbox cannot write: the note proves it ran outside. The real binary, the fake server,
//! the real kernel; as root and as a throwaway unprivileged user.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::containment::{direct, turn};
use crate::support::hooks::{groups, user_hooks};
use crate::support::user::{as_unprivileged_user, User};
use crate::support::{Hx, Run};

/// `program`'s absolute path on the test's own PATH (the planted ones run it after noting).
fn real(program: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no {program} on PATH"))
}

/// A shell script that appends `ran` to `marker`, then runs `then` with its arguments.
fn noting(marker: &Path, then: &Path) -> String {
    format!(
        "#!/bin/sh\necho ran >> '{}'\nexec '{}' \"$@\"\n",
        marker.display(),
        then.display()
    )
}

/// The command that writes `script` at `at` (relative to the workspace), executable.
fn plant(at: &str, script: &str) -> String {
    format!(
        "mkdir -p \"$(dirname {at})\" && cat > {at} <<'HXEOF'\n{script}HXEOF\nchmod +x {at} && echo planted"
    )
}

/// What the planted programs noted: nothing, when hx never ran one.
fn assert_not_run(marker: &Path, run: &Run) {
    let noted = std::fs::read_to_string(marker).unwrap_or_default();
    assert!(
        noted.is_empty(),
        "a program the model wrote ran outside the sandbox ({} times)\n{}",
        noted.lines().count(),
        run.dump()
    );
}

fn prepend_path(hx: &mut Hx, entry: &str) {
    let path = std::env::var("PATH").unwrap_or_default();
    hx.env("PATH", format!("{entry}:{path}"));
}

/// Item 1, checkpoints: with a folder of the workspace on PATH (absolute, as a virtualenv
/// or direnv puts it, or relative), the model writes a `git` there; hx's checkpoints must
/// still use the real one, and hx warns about the entry.
fn checkpoints_git(new_hx: &dyn Fn() -> Hx, run: &dyn Fn(&Hx) -> Run) {
    for (folder, entry) in [
        (".venv/bin", None),
        ("node_modules/.bin", Some("./node_modules/.bin")),
    ] {
        let mut hx = new_hx();
        // A repository of its own: the unprivileged user's workspace lies in the suite's
        // folder, which the checkout around it ignores (`target/`), and a checkpoint of an
        // ignored folder holds nothing.
        let init = std::process::Command::new(real("git"))
            .args(["init", "-q"])
            .arg(hx.workspace())
            .status()
            .expect("git init");
        assert!(init.success());
        let marker = hx.home().join("git-ran");
        let entry = entry.map_or_else(
            || hx.workspace().join(folder).display().to_string(),
            String::from,
        );
        prepend_path(&mut hx, &entry);
        let command = plant(&format!("{folder}/git"), &noting(&marker, &real("git")));
        let (out, ran) = turn(&mut hx, &[&command], run);
        assert_eq!(out[0], "planted\n", "{}", ran.dump());
        assert_not_run(&marker, &ran);
        // Checkpoints still work, with the real git.
        assert!(ran.stderr.contains("1 file changed"), "{}", ran.dump());
        assert!(
            ran.stderr.contains("PATH holds") && ran.stderr.contains(&entry),
            "no warning about {entry}\n{}",
            ran.dump()
        );
    }
}

#[test]
fn checkpoints_never_run_a_git_the_model_wrote() {
    checkpoints_git(&Hx::new_offline, &direct);
}

#[test]
fn checkpoints_never_run_a_git_the_model_wrote_as_an_unprivileged_user() {
    as_unprivileged_user(
        "checkpoints_never_run_a_git_the_model_wrote_as_an_unprivileged_user",
        |user| checkpoints_git(&|| user.hx(), &|hx| user.run(hx)),
    );
}

/// Item 1, hooks: the shell hx starts a hook with is not one the model wrote in a folder of
/// the workspace on PATH.
fn hooks_shell(hx: &mut Hx, run: &dyn Fn(&Hx) -> Run) {
    let marker = hx.home().join("shell-ran");
    prepend_path(hx, &hx.workspace().join(".venv/bin").display().to_string());
    user_hooks(
        hx,
        json!({
            "PostToolUse": groups("Bash", &["true"], None),
            "Stop": groups("", &["true"], None),
        }),
    );
    let bash = plant(".venv/bin/bash", &noting(&marker, &real("bash")));
    let sh = plant(".venv/bin/sh", &noting(&marker, &real("sh")));
    let (out, ran) = turn(hx, &[&bash, &sh, "echo third"], run);
    // The later commands run the planted shells too, in the sandbox, where the note is
    // refused: that is the sandbox's business, and they still work.
    assert_eq!(out[0], "planted\n", "{}", ran.dump());
    assert!(out[2].ends_with("third\n"), "{}", ran.dump());
    assert_not_run(&marker, &ran);
}

#[test]
fn hooks_never_start_with_a_shell_the_model_wrote() {
    hooks_shell(&mut Hx::new_offline(), &direct);
}

#[test]
fn hooks_never_start_with_a_shell_the_model_wrote_as_an_unprivileged_user() {
    as_unprivileged_user(
        "hooks_never_start_with_a_shell_the_model_wrote_as_an_unprivileged_user",
        |user| hooks_shell(&mut user.hx(), &|hx| user.run(hx)),
    );
}

/// Item 1, MCP: a `sandbox = "off"` server's program, named without a folder, is found on
/// PATH's folders outside the workspace or not at all: one a model planted (in an earlier
/// run) in `.venv/bin` is refused with a clear error, and the run goes on without it.
fn mcp_off_program(hx: &mut Hx, run: &dyn Fn(&Hx) -> Run) {
    let marker = hx.home().join("server-ran");
    let server = crate::support::mcp::server_path();
    let planted = hx.workspace().join(".venv/bin/hx-test-server");
    std::fs::create_dir_all(planted.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&planted, noting(&marker, server)).expect("plant");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    prepend_path(hx, &hx.workspace().join(".venv/bin").display().to_string());
    hx.write_user_config(
        "config.toml",
        "[mcp_servers.srv]\ncommand = \"hx-test-server\"\nsandbox = \"off\"\n",
    );
    let (out, ran) = turn(hx, &["echo hi"], run);
    assert_eq!(out[0], "hi\n");
    assert_not_run(&marker, &ran);
    assert!(
        ran.stderr.contains("MCP server srv failed to start")
            && ran.stderr.contains("hx-test-server")
            && ran.stderr.contains("the workspace"),
        "{}",
        ran.dump()
    );
}

#[test]
fn an_mcp_server_outside_the_sandbox_never_runs_a_program_the_model_wrote() {
    mcp_off_program(&mut Hx::new_offline(), &direct);
}

#[test]
fn an_mcp_server_outside_the_sandbox_never_runs_a_program_the_model_wrote_as_an_unprivileged_user()
{
    as_unprivileged_user(
        "an_mcp_server_outside_the_sandbox_never_runs_a_program_the_model_wrote_as_an_unprivileged_user",
        |user| mcp_off_program(&mut user.hx(), &|hx| user.run(hx)),
    );
}

/// `from` at `to`: a hard link where the file systems allow it (no copy of a large debug
/// build), else a copy.
fn link_or_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().expect("a folder")).expect("mkdir");
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).expect("copy");
    }
}

/// Item 2: hx runs from a folder commands may write; the model replaces the launcher hx
/// starts every command with (`hx-pod` beside hx, or hx itself), by a rename, as a build
/// would. The next command must still run in the pod, and hx warns at start.
fn launcher(hx: &mut Hx, run: &dyn Fn(&Hx) -> Run, launcher: &Path, where_: &str) {
    let marker = hx.home().join("launcher-ran");
    let script = format!("#!/bin/sh\necho ran >> '{}'\n", marker.display());
    let replace = format!(
        "cat > {l}.new <<'HXEOF'\n{script}HXEOF\nchmod +x {l}.new && mv {l}.new {l} && echo replaced",
        l = launcher.display()
    );
    let outside = hx.home().join("written");
    let (out, ran) = turn(
        hx,
        &[
            &replace,
            &format!("echo x > {}; echo second", outside.display()),
        ],
        run,
    );
    assert_eq!(out[0], "replaced\n", "{}", ran.dump());
    assert_not_run(&marker, &ran);
    assert!(out[1].ends_with("second\n"), "{}", ran.dump());
    assert!(!outside.exists(), "the second command ran outside the pod");
    assert!(
        ran.stderr.contains("hx's program") && ran.stderr.contains(where_),
        "no warning that hx lies in {where_}\n{}",
        ran.dump()
    );
}

/// hx and `hx-pod` in the workspace's `target/release` (working on hx itself).
#[test]
fn the_launcher_cannot_be_replaced_when_hx_runs_from_the_workspace() {
    let mut hx = Hx::new_offline();
    let release = hx.workspace().join("target/release");
    link_or_copy(Path::new(env!("CARGO_BIN_EXE_hx")), &release.join("hx"));
    link_or_copy(
        Path::new(env!("CARGO_BIN_EXE_hx-pod")),
        &release.join("hx-pod"),
    );
    hx.program(release.join("hx"));
    launcher(&mut hx, &direct, &release.join("hx-pod"), "the workspace");
}

/// A folder like `~/.cargo` made writable (`sandbox.writable_roots`), holding hx alone (so
/// hx is its own launcher), outside the test's folder, owned by `user` when given: its
/// files are hard links that must keep their owner.
fn cargo_root(hx: &mut Hx, user: Option<&User>) -> (tempfile::TempDir, PathBuf) {
    let base = hx
        .workspace()
        .parent()
        .and_then(Path::parent)
        .expect("the tests' folder");
    let root = tempfile::Builder::new()
        .prefix("hx-ct-cargo-")
        .tempdir_in(base)
        .expect("tempdir");
    let bin = root.path().join("bin");
    link_or_copy(Path::new(env!("CARGO_BIN_EXE_hx")), &bin.join("hx"));
    for dir in [root.path(), &bin] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        if let Some(u) = user {
            std::os::unix::fs::chown(dir, Some(u.uid), Some(u.gid)).expect("chown");
        }
    }
    hx.program(bin.join("hx")).write_user_config(
        "config.toml",
        &format!(
            "[sandbox]\nwritable_roots = [{}]\n",
            crate::support::mcp::toml_str(&root.path().display().to_string())
        ),
    );
    (root, bin.join("hx"))
}

#[test]
fn the_launcher_cannot_be_replaced_when_hx_lies_in_a_writable_root() {
    let mut hx = Hx::new_offline();
    let (_root, program) = cargo_root(&mut hx, None);
    launcher(&mut hx, &direct, &program, "sandbox.writable_roots");
}

#[test]
fn the_launcher_cannot_be_replaced_when_hx_lies_in_a_writable_root_as_an_unprivileged_user() {
    as_unprivileged_user(
        "the_launcher_cannot_be_replaced_when_hx_lies_in_a_writable_root_as_an_unprivileged_user",
        |user| {
            let mut hx = user.hx();
            let (_root, program) = cargo_root(&mut hx, Some(user));
            launcher(
                &mut hx,
                &|hx| user.run(hx),
                &program,
                "sandbox.writable_roots",
            );
        },
    );
}
