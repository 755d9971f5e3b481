//! Item 5 of issue 19 in what hx itself decides: `sandbox.allow_sockets`, and the variables
//! that point a command at another program's Unix socket (an ssh agent, the D-Bus session
//! bus, tmux, a container engine, the display), which a sandboxed command does not get
//! unless they name an allowed socket. The real binary, the fake server, the real kernel.

use std::os::unix::net::UnixListener;

use serde_json::Value;

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
