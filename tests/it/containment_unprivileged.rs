//! The containment scenarios that depend on who runs hx, run as a throwaway unprivileged
//! user (`tests/support/user.rs`): to an ordinary user the kernel lets a command signal every
//! process of the user, write every file of the user, and so on, which a root hx (CI) hides.
//! Each test makes its own user and removes it; when the suite does not run as root, each
//! says why it is skipped and passes.

use std::path::Path;

use crate::containment::turn;
use crate::containment_network::{assert_nothing_left, Listeners};
use crate::containment_sockets::{pointers_seen, with_pointers};
use crate::support::confine::{no_scopes, skip};
use crate::support::user::as_unprivileged_user;
use crate::support::{tool_answer, Call, FakeServer, Reply};
use serde_json::json;

/// Whether the process `child` is still running (not exited, not a zombie).
fn alive(child: &mut std::process::Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}

/// `kill -9 -1` and `kill -9 $PPID` from a command reach neither hx nor another process of
/// the same user. The user is fresh, so were the sandbox broken, they would reach only hx
/// and the test's `sleep`, never the test runner.
#[test]
fn containment_as_an_unprivileged_user_signals() {
    const NAME: &str = "containment_as_an_unprivileged_user_signals";
    if let Some(why) = no_scopes() {
        return skip(NAME, &why);
    }
    as_unprivileged_user(NAME, |user| {
        let mut victim = user.spawn(&["sleep", "300"]);
        let mut hx = user.hx();
        // The guard refuses `kill -1` in words; the kernel must refuse it without the guard.
        hx.write_user_config("config.toml", "guard = false\n");
        let (out, _) = turn(
            &mut hx,
            &[
                "kill -9 -1; echo \"kill: $?\"",
                "kill -9 $PPID; echo \"kill: $?\"",
                "id -u",
            ],
            |hx| user.run(hx),
        );
        let still = alive(&mut victim);
        let _ = victim.kill();
        let _ = victim.wait();
        // The run went on (hx was not killed): in the run's pod `kill -9 -1` reaches only the
        // run's own processes and `$PPID` is 0 (the command's own group); without a pod
        // Landlock's signal scope refuses both.
        assert!(out[0].contains("kill: "), "{}", out[0]);
        assert!(
            out[1].is_empty()
                || out[1].contains("killed by signal 9")
                || (out[1].contains("Operation not permitted") && out[1].ends_with("kill: 1\n")),
            "{}",
            out[1]
        );
        assert_eq!(out[2], format!("{}\n", user.uid));
        assert!(still, "the user's other process was killed");
    });
}

/// A command may not write outside the writable folders, though the user owns the folder
/// (HOME); inside the workspace it may.
#[test]
fn containment_as_an_unprivileged_user_writes() {
    as_unprivileged_user("containment_as_an_unprivileged_user_writes", |user| {
        let mut hx = user.hx();
        let outside = hx.home().join("outside");
        let (out, _) = turn(
            &mut hx,
            &[
                &format!("echo x > {}; echo \"rc $?\"", outside.display()),
                "echo in > inside && cat inside",
            ],
            |hx| user.run(hx),
        );
        // `Read-only file system` in the pod, `Permission denied` from Landlock without one.
        assert!(
            out[0].contains("Read-only file system") || out[0].contains("Permission denied"),
            "{}",
            out[0]
        );
        assert!(!outside.exists(), "a command wrote in the user's HOME");
        assert_eq!(out[1], "in\n");
    });
}

/// A local MCP server (a stand-in for `npx` running a repository's code) gets no secret of
/// hx's and cannot write outside, as the user too.
#[test]
fn containment_as_an_unprivileged_user_mcp_server() {
    as_unprivileged_user("containment_as_an_unprivileged_user_mcp_server", |user| {
        let mut hx = user.hx();
        let out = hx.workspace().join("server.env");
        let escape = hx.home().join("escaped");
        hx.env("OTHER_SECRET", "hidden").write_user_config(
            "config.toml",
            &crate::mcp::recording_table("rec", &out, &escape, ""),
        );
        let server = FakeServer::start(vec![
            Reply::tool_calls(vec![Call::new(
                "c1",
                "mcp__rec__echo",
                &json!({"text": "hi"}).to_string(),
            )]),
            Reply::text("done"),
        ]);
        hx.env("DEEPSEEK_BASE_URL", server.url())
            .args(["agent", "say hi"]);
        let run = user.run(&hx);
        run.assert_success();
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2, "{}", run.dump());
        assert_eq!(tool_answer(&reqs[1].body, "c1"), "echo: hi");
        let lines = std::fs::read_to_string(&out).expect("the server recorded its environment");
        for secret in ["DEEPSEEK_API_KEY=", "OTHER_SECRET="] {
            assert!(
                !lines.lines().any(|l| l.starts_with(secret)),
                "{secret} reached the server: {lines}"
            );
        }
        assert!(lines.ends_with("escape: refused\n"), "{lines}");
        assert!(!escape.exists());
    });
}

/// The socket variables stay out of a command's environment unless allowed, as the user too.
#[test]
fn containment_as_an_unprivileged_user_socket_variables() {
    as_unprivileged_user(
        "containment_as_an_unprivileged_user_socket_variables",
        |user| {
            let mut hx = user.hx();
            with_pointers(&mut hx);
            let (out, _) = turn(&mut hx, &["env"], |hx| user.run(hx));
            assert_eq!(pointers_seen(&out[0]), Vec::<String>::new(), "{}", out[0]);

            let mut hx = user.hx();
            with_pointers(&mut hx);
            hx.write_user_config(
                "config.toml",
                "[sandbox]\nallow_sockets = [\"$SSH_AUTH_SOCK\"]\n",
            );
            let (out, _) = turn(&mut hx, &["env"], |hx| user.run(hx));
            assert_eq!(
                pointers_seen(&out[0]),
                ["SSH_AGENT_PID=1", "SSH_AUTH_SOCK=/tmp/ssh-hxtest/agent.1"],
                "{}",
                out[0]
            );
        },
    );
}

/// With `network = false`, no IP traffic reaches the test's loopback listeners, as the user
/// too.
#[test]
fn containment_as_an_unprivileged_user_network() {
    as_unprivileged_user("containment_as_an_unprivileged_user_network", |user| {
        let listeners = Listeners::start();
        let mut hx = user.hx();
        hx.write_user_config("config.toml", "[sandbox]\nnetwork = false\n");
        let (out, _) = turn(&mut hx, &[&listeners.command()], |hx| user.run(hx));
        assert_nothing_left(&out[0], &listeners.received(), listeners.ipv6());
    });
}

/// The harness itself: the user is made, runs hx as itself with no supplementary group, and
/// is gone afterwards, its account files as they were.
#[test]
fn the_throwaway_user_is_made_and_removed() {
    let mut name = None;
    as_unprivileged_user("the_throwaway_user_is_made_and_removed", |user| {
        name = Some(user.name.clone());
        let mut hx = user.hx();
        let (out, _) = turn(&mut hx, &["id -u; id -g; id -G; echo $HOME"], |hx| {
            user.run(hx)
        });
        assert_eq!(
            out[0],
            format!(
                "{uid}\n{gid}\n{gid}\n{}\n",
                hx.home().display(),
                uid = user.uid,
                gid = user.gid
            )
        );
        assert!(Path::new(env!("CARGO_BIN_EXE_hx")).exists());
    });
    if let Some(name) = name {
        let passwd = std::fs::read_to_string("/etc/passwd").expect("passwd");
        assert!(
            !passwd.contains(&format!("\n{name}:")),
            "{name} is still there"
        );
    }
}
