//! Item 5 of issue 19 in what hx itself decides: `sandbox.allow_sockets`, and the variables
//! that point a command at another program's Unix socket (an ssh agent, the D-Bus session
//! bus, tmux, a container engine, the display), which a sandboxed command does not get
//! unless they name an allowed socket. The real binary, the fake server, the real kernel.

use std::os::unix::net::UnixListener;

use serde_json::Value;

use crate::containment::{direct, turn};
use crate::support::Hx;

/// `hx sandbox` shows each allowed socket expanded (`~/`, `$NAME`), whether it is one now, and
/// the entries left out because their variable is not set; `--json` the same as lists.
#[test]
fn hx_sandbox_shows_the_allowed_sockets() {
    let mut hx = Hx::new_offline();
    let agent = hx.home().join("agent.sock");
    let _listener = UnixListener::bind(&agent).expect("listen");
    hx.env_remove("DEEPSEEK_API_KEY")
        .env("HX_TEST_AGENT", &agent)
        .env_remove("HX_TEST_UNSET")
        .write_user_config(
            "config.toml",
            "[sandbox]\nallow_sockets = [\"$HX_TEST_AGENT\", \"~/later.sock\", \"${HX_TEST_UNSET}/x\"]\n",
        )
        .args(["sandbox"]);
    let run = hx.run();
    run.assert_code(0);
    let later = hx.home().join("later.sock");
    let expected = format!(
        "sockets:  {} (allowed)\n          {} (allowed, not there now)\n          ${{HX_TEST_UNSET}}/x (left out: a variable it names is not set)\n",
        agent.display(),
        later.display()
    );
    assert!(
        run.stdout.contains(&expected),
        "{expected}\nin\n{}",
        run.stdout
    );

    hx.clear_args().args(["sandbox", "--json"]);
    let run = hx.run();
    run.assert_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        v["allow_sockets"],
        serde_json::json!([agent.display().to_string(), later.display().to_string()])
    );
    assert_eq!(
        v["allow_sockets_unset"],
        serde_json::json!(["${HX_TEST_UNSET}/x"])
    );

    // None configured: said so.
    let mut hx = Hx::new_offline();
    hx.env_remove("DEEPSEEK_API_KEY").args(["sandbox"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("sockets:  none (sandbox.allow_sockets)\n"),
        "{}",
        run.stdout
    );
}

/// A relative entry is a configuration error that names it, before anything runs.
#[test]
fn a_relative_allowed_socket_is_refused() {
    let mut hx = Hx::new_offline();
    hx.env_remove("DEEPSEEK_API_KEY")
        .write_user_config(
            "config.toml",
            "[sandbox]\nallow_sockets = [\"agent.sock\"]\n",
        )
        .args(["sandbox"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains(
            "sandbox.allow_sockets: \"agent.sock\" is \"agent.sock\", not an absolute path"
        ),
        "{}",
        run.dump()
    );
}

/// What hx's environment points at: an ssh agent, D-Bus, tmux, Docker, the display.
const POINTERS: [(&str, &str); 12] = [
    ("SSH_AUTH_SOCK", "/tmp/ssh-hxtest/agent.1"),
    ("SSH_AGENT_PID", "1"),
    ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/4242/bus"),
    ("XDG_RUNTIME_DIR", "/run/user/4242"),
    ("TMUX", "/tmp/tmux-4242/default,1,0"),
    ("TMUX_PANE", "%0"),
    ("DOCKER_HOST", "unix:///var/run/docker.sock"),
    ("CONTAINER_HOST", "unix:///run/user/4242/podman/podman.sock"),
    ("WAYLAND_DISPLAY", "wayland-0"),
    ("DISPLAY", ":0"),
    ("GPG_AGENT_INFO", "/run/user/4242/gnupg/S.gpg-agent:0:1"),
    ("KITTY_LISTEN_ON", "unix:/tmp/kitty-hxtest"),
];

/// The `NAME=` lines of `env`'s output that are among [`POINTERS`], sorted.
pub(crate) fn pointers_seen(env: &str) -> Vec<String> {
    let mut seen: Vec<String> = env
        .lines()
        .filter(|l| {
            POINTERS
                .iter()
                .any(|(n, _)| l.starts_with(&format!("{n}=")))
        })
        .map(String::from)
        .collect();
    seen.sort();
    seen
}

pub(crate) fn with_pointers(hx: &mut Hx) {
    for (name, value) in POINTERS {
        hx.env(name, value);
    }
}

/// A sandboxed command does not get the variables that lead to other programs' sockets; one
/// that names a socket of `sandbox.allow_sockets` (here the ssh agent, by its variable, and
/// the D-Bus bus in its `unix:path=` form) does, with what goes with it. With the sandbox
/// off, everything passes as before.
#[test]
fn socket_variables_reach_a_command_only_when_allowed() {
    let mut hx = Hx::new_offline();
    with_pointers(&mut hx);
    let (out, _) = turn(&mut hx, &["env"], direct);
    assert_eq!(pointers_seen(&out[0]), Vec::<String>::new(), "{}", out[0]);
    assert!(out[0].contains("\nPATH="), "{}", out[0]);

    let mut hx = Hx::new_offline();
    with_pointers(&mut hx);
    hx.write_user_config(
        "config.toml",
        "[sandbox]\nallow_sockets = [\"$SSH_AUTH_SOCK\", \"/run/user/4242/bus\"]\n",
    );
    let (out, _) = turn(&mut hx, &["env"], direct);
    assert_eq!(
        pointers_seen(&out[0]),
        [
            "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/4242/bus",
            "SSH_AGENT_PID=1",
            "SSH_AUTH_SOCK=/tmp/ssh-hxtest/agent.1",
            "XDG_RUNTIME_DIR=/run/user/4242",
        ],
        "{}",
        out[0]
    );

    let mut hx = Hx::new_offline();
    with_pointers(&mut hx);
    hx.write_user_config("config.toml", "sandbox = \"off\"\n");
    let (out, _) = turn(&mut hx, &["env"], direct);
    assert_eq!(pointers_seen(&out[0]).len(), POINTERS.len(), "{}", out[0]);
}
