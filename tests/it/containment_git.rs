//! Issue 32, item 3: the user's git cannot be redirected to config the model wrote. Besides
//! `.git/config`, hooks and info, git reads config from places a command could write: a
//! `commondir` file it creates in `.git`, a submodule's git folder (`.git/modules/NAME`), a
//! linked worktree's `.git` file and its `commondir` under `.git/worktrees/NAME`, and a
//! repository nested in the workspace (`vendor/lib/.git`). Each command below tries one; after
//! the run, the user's git, in each repository, must read no `core.fsmonitor` (the program
//! `git status` runs) and run nothing the model wrote. The real binary, the fake server, the
//! real kernel; as root and as a throwaway unprivileged user.

use std::path::Path;
use std::process::Command;

use crate::containment::{direct, turn};
use crate::support::confine::skip;
use crate::support::user::as_unprivileged_user;
use crate::support::{Hx, Run};

/// git in `dir`, as root, reading repositories whoever owns them; its output.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "protocol.file.allow=always"])
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git")
}

fn git_ok(dir: &Path, args: &[&str]) {
    let out = git(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {}: {out:?}",
        dir.display()
    );
}

/// The workspace: a repository with a submodule (`sub`), a linked worktree (`wt`) and a
/// nested repository (`vendor/lib`); the submodule's upstream lies outside, in HOME.
fn repositories(hx: &Hx) {
    let ws = hx.workspace().to_path_buf();
    let upstream = hx.home().join("upstream");
    std::fs::create_dir_all(&upstream).expect("mkdir");
    git_ok(&upstream, &["init", "-q", "."]);
    std::fs::write(upstream.join("u"), "u\n").expect("u");
    git_ok(&upstream, &["add", "u"]);
    git_ok(&upstream, &["commit", "-qm", "u"]);
    git_ok(&ws, &["init", "-q", "."]);
    std::fs::write(ws.join("f"), "f\n").expect("f");
    git_ok(&ws, &["add", "f"]);
    git_ok(&ws, &["commit", "-qm", "f"]);
    let up = upstream.display().to_string();
    git_ok(&ws, &["submodule", "add", "-q", &up, "sub"]);
    git_ok(&ws, &["commit", "-qm", "sub"]);
    git_ok(&ws, &["worktree", "add", "-q", "wt"]);
    let lib = ws.join("vendor/lib");
    std::fs::create_dir_all(&lib).expect("mkdir");
    git_ok(&lib, &["init", "-q", "."]);
}

/// The script git would run as `core.fsmonitor`: it notes its run in `marker` (outside every
/// writable folder) and says it knows nothing.
fn monitor(marker: &Path) -> String {
    format!(
        "printf '#!/bin/sh\\necho ran >> {}\\nexit 1\\n' > evil.sh && chmod +x evil.sh",
        marker.display()
    )
}

/// The attacks, one command each; `$PWD` is the workspace (the same path in the pod).
fn attacks(marker: &Path) -> Vec<String> {
    let evil = "git config -f \"$1\" core.fsmonitor \"$PWD/evil.sh\"";
    vec![
        monitor(marker),
        format!("cat > set.sh <<'EOF'\n{evil}\nEOF\necho set"),
        // A copy of .git that names the monitor, and .git's commondir pointing at it.
        "cp -r .git common && sh set.sh common/config && echo \"$PWD/common\" > .git/commondir; \
         echo \"commondir: $?\""
            .into(),
        // The submodule's own config, in the superproject's .git.
        "sh set.sh .git/modules/sub/config; echo \"modules: $?\"".into(),
        // The linked worktree: its .git file pointed at the copy, or its commondir.
        "echo \"gitdir: $PWD/common\" > wt/.git; echo \"worktree: $?\"".into(),
        "echo \"$PWD/common\" > .git/worktrees/wt/commondir; echo \"worktree commondir: $?\""
            .into(),
        // The nested repository's config.
        "sh set.sh vendor/lib/.git/config; echo \"nested: $?\"".into(),
    ]
}

fn scenario(hx: &mut Hx, run: &dyn Fn(&Hx) -> Run) {
    repositories(hx);
    let marker = hx.home().join("monitor-ran");
    let commands = attacks(&marker);
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let (out, ran) = turn(hx, &commands, run);
    assert_eq!(out[1].trim_end(), "set", "{}", ran.dump());
    let ws = hx.workspace().to_path_buf();
    // The user's git, after the run, in every repository of the workspace; every leak is
    // named at once.
    let mut leaks = Vec::new();
    for dir in ["", "sub", "wt", "vendor/lib"] {
        let at = ws.join(dir);
        let got = git(&at, &["config", "--get", "core.fsmonitor"]);
        if !got.stdout.is_empty() {
            leaks.push(format!(
                "git in {dir:?} reads core.fsmonitor = {}",
                String::from_utf8_lossy(&got.stdout).trim_end()
            ));
        }
        let _ = git(&at, &["status", "--short"]);
    }
    assert!(
        leaks.is_empty(),
        "{}\n{}\n{}",
        leaks.join("\n"),
        out.join("---\n"),
        ran.dump()
    );
    let _ = git(&ws, &["status", "--recurse-submodules"]);
    let noted = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(
        noted.is_empty(),
        "the model's fsmonitor ran\n{}",
        ran.dump()
    );
    assert!(!ws.join(".git/commondir").exists(), "{}", ran.dump());
    // Said to the model, in the result of the command that made it.
    assert!(
        out[2].contains(".git/commondir"),
        "the removal is not said\n{}\n{}",
        out[2],
        ran.dump()
    );
}

#[test]
fn the_users_git_cannot_be_redirected_to_config_the_model_wrote() {
    scenario(&mut Hx::new_offline(), &direct);
}

#[test]
fn the_users_git_cannot_be_redirected_to_config_the_model_wrote_as_an_unprivileged_user() {
    const NAME: &str =
        "the_users_git_cannot_be_redirected_to_config_the_model_wrote_as_an_unprivileged_user";
    if Command::new("git").arg("--version").output().is_err() {
        return skip(NAME, "no git");
    }
    as_unprivileged_user(NAME, |user| scenario(&mut user.hx(), &|hx| user.run(hx)));
}

/// `hx sandbox` says what it protects of git, and says it is partial where the walk for
/// nested repositories stopped at its bound (10,000 folders): a repository past it is not
/// protected.
#[test]
fn hx_sandbox_says_when_git_protection_is_partial() {
    let mut hx = Hx::new_offline();
    let ws = hx.workspace().to_path_buf();
    git_ok(&ws, &["init", "-q", "."]);
    hx.args(["sandbox"]);
    let run = hx.run();
    run.assert_code(0);
    if !run.stdout.contains("git metadata:     enforced") {
        // No pod here (no user namespaces): nothing of this is enforced, which says so.
        return skip(
            "hx_sandbox_says_when_git_protection_is_partial",
            &run.stdout,
        );
    }
    assert!(
        run.stdout.contains("nested repositories'"),
        "{}",
        run.stdout
    );
    for i in 0..10_001 {
        std::fs::create_dir_all(ws.join(format!("d{}/{i}", i / 100))).expect("mkdir");
    }
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("git metadata:     partly (the git folders found at the start")
            && run.stdout.contains(
                "not protecting repositories nested past the folders looked through: the \
             workspace has more than the 10000 folders hx looks through"
            ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("enforced: partly"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("the sandbox is partial: the workspace has more than"),
        "{}",
        run.stderr
    );
}

/// The workspace is itself a linked worktree of a repository outside (in HOME): its `.git`
/// file, rewritten to name a copy of the git folder with a `core.fsmonitor`, would send the
/// user's git there. `hx sandbox` says git is protected there, and it is.
fn workspace_worktree(hx: &mut Hx, run: &dyn Fn(&Hx) -> Run) {
    let ws = hx.workspace().to_path_buf();
    let main = hx.home().join("main");
    std::fs::create_dir_all(&main).expect("mkdir");
    git_ok(&main, &["init", "-q", "."]);
    std::fs::write(main.join("f"), "f\n").expect("f");
    git_ok(&main, &["add", "f"]);
    git_ok(&main, &["commit", "-qm", "f"]);
    git_ok(&main, &["worktree", "add", "-q", &ws.display().to_string()]);
    let marker = hx.home().join("monitor-ran");
    let evil = "cp -r \"$(git rev-parse --git-common-dir)\" common && git config -f \
                common/config core.fsmonitor \"$PWD/evil.sh\" && echo \"gitdir: $PWD/common\" \
                > .git; echo \"worktree: $?\"";
    let (out, ran) = turn(hx, &[&monitor(&marker), evil], run);
    assert!(out[1].contains("worktree: "), "{}", ran.dump());
    let got = git(&ws, &["config", "--get", "core.fsmonitor"]);
    assert!(
        got.stdout.is_empty(),
        "git in the workspace reads core.fsmonitor = {}\n{}",
        String::from_utf8_lossy(&got.stdout),
        ran.dump()
    );
    let _ = git(&ws, &["status", "--short"]);
    let noted = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(
        noted.is_empty(),
        "the model's fsmonitor ran\n{}",
        ran.dump()
    );
    hx.clear_args().args(["sandbox"]);
    let said = run(hx);
    assert!(
        said.stdout
            .contains("git metadata:     enforced (the git folders found at the start"),
        "{}",
        said.stdout
    );
}

#[test]
fn a_workspace_that_is_a_linked_worktree_keeps_its_git_file() {
    // Outside /tmp, which the pod replaces: the main repository must be there to copy.
    let mut hx = Hx::new_offline_in(&crate::support::outside_tmp());
    workspace_worktree(&mut hx, &direct);
}

#[test]
fn a_workspace_that_is_a_linked_worktree_keeps_its_git_file_as_an_unprivileged_user() {
    as_unprivileged_user(
        "a_workspace_that_is_a_linked_worktree_keeps_its_git_file_as_an_unprivileged_user",
        |user| workspace_worktree(&mut user.hx(), &|hx| user.run(hx)),
    );
}
