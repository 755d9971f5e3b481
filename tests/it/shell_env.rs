//! End-to-end tests of the environment tool commands run with (`[shell_env]`): what a `bash`
//! call's `env` sends back to the model, for the agent and its subagents, and what hooks see.

use crate::support::hooks::{groups, script, tool_message, user_hooks};
use crate::support::{messages, Call, FakeServer, Hx, Reply};
use serde_json::json;

/// Values that must never reach the model; each is unique so a match cannot be chance.
const SECRETS: [(&str, &str); 4] = [
    ("DEEPSEEK_API_KEY", "sk-deepseek-5c1e0d"),
    ("GITHUB_TOKEN", "ghp-a81f3b"),
    ("MY_PASSWORD", "pw-77d2e4"),
    ("aws_secret_access_key", "aws-0b9c11"),
];

fn env_call(id: &str) -> Call {
    Call::new(id, "bash", r#"{"command":"env"}"#)
}

fn with_secrets(hx: &mut Hx) -> &mut Hx {
    for (k, v) in SECRETS {
        hx.env(k, v);
    }
    hx.env("HX_TEST_PLAIN", "plain-3e6a")
}

fn assert_no_secret(text: &str) {
    for (name, value) in SECRETS {
        assert!(
            !text.contains(value),
            "{name}'s value reached the model:\n{text}"
        );
        assert!(
            !text.contains(&format!("{name}=")),
            "{name} reached the model:\n{text}"
        );
    }
}

#[test]
fn bash_does_not_see_keys_tokens_or_passwords() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![env_call("c1")]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    with_secrets(&mut hx).args(["agent", "show env"]);
    hx.run().assert_success();
    let out = tool_message(&server, 1);
    assert_no_secret(&out);
    // The rest of the environment is there.
    assert!(out.contains("HX_TEST_PLAIN=plain-3e6a\n"), "{out}");
    assert!(
        out.contains(&format!("HOME={}\n", hx.home().display())),
        "{out}"
    );
}

#[test]
fn a_configured_api_key_env_is_dropped_whatever_its_name() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![env_call("c1")]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        &format!(
            "provider = \"work\"\n[providers.work]\nbase_url = \"{}\"\napi_key_env = \"WORK_LLM_CRED\"\nmodel = \"m\"\n",
            server.url()
        ),
    );
    hx.env("WORK_LLM_CRED", "cred-41aa90")
        .args(["agent", "show env"]);
    hx.run().assert_success();
    assert_eq!(
        server.completions()[0].header("authorization"),
        Some("Bearer cred-41aa90")
    );
    let out = tool_message(&server, 1);
    assert!(!out.contains("cred-41aa90"), "{out}");
}

#[test]
fn include_only_and_set_shape_the_environment() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![env_call("c1")]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "[shell_env]\ninclude_only = [\"PATH\", \"hx_test_*\"]\nexclude = [\"*_DROPPED\"]\n\
         set = { HX_SET_VAR = \"from-config\", GITHUB_TOKEN = \"given-on-purpose\" }\n",
    );
    with_secrets(&mut hx)
        .env("HX_TEST_DROPPED", "gone-9f")
        .env("OTHER_VAR", "other-1d")
        .args(["agent", "show env"]);
    hx.run().assert_success();
    let out = tool_message(&server, 1);
    assert!(out.contains("HX_TEST_PLAIN=plain-3e6a\n"), "{out}");
    assert!(out.contains("HX_SET_VAR=from-config\n"), "{out}");
    assert!(out.contains("GITHUB_TOKEN=given-on-purpose\n"), "{out}");
    assert!(out.contains("\nPATH=") || out.starts_with("PATH="), "{out}");
    for gone in [
        "other-1d",
        "gone-9f",
        "HOME=",
        "ghp-a81f3b",
        "sk-deepseek-5c1e0d",
    ] {
        assert!(!out.contains(gone), "{gone} is there:\n{out}");
    }
}

#[test]
fn inherit_none_and_a_bad_pattern() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            r#"{"command":"echo \"home=$HOME plain=$HX_TEST_PLAIN ci=$CI\""}"#,
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "[shell_env]\ninherit = \"none\"\nset = { CI = \"1\" }\n",
    );
    with_secrets(&mut hx).args(["agent", "show env"]);
    hx.run().assert_success();
    assert_eq!(tool_message(&server, 1), "home= plain= ci=1\n");

    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "[shell_env]\nexclude = [\"[oops\"]\n");
    let run = hx.args(["agent", "x"]).run();
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("[shell_env] exclude: bad pattern \"[oops\""),
        "{}",
        run.stderr
    );
}

#[test]
fn a_subagents_bash_does_not_see_them_either() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "t1",
            "task",
            &json!({"description": "env", "prompt": "Run env."}).to_string(),
        )]),
        Reply::tool_calls(vec![env_call("c1")]),
        Reply::text("The child ran env."),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    with_secrets(&mut hx).args(["agent", "delegate"]);
    hx.run().assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    // Request 2 is the subagent's second turn, carrying its env output.
    let child = messages(&reqs[2].body);
    let out = child.last().expect("tool message")["content"]
        .as_str()
        .expect("text")
        .to_string();
    assert!(out.contains("HX_TEST_PLAIN=plain-3e6a\n"), "{out}");
    assert_no_secret(&out);
}

#[test]
fn hooks_keep_the_whole_environment() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![env_call("c1")]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let s = script(&hx, "env.sh", "env > \"$HX_PROJECT_DIR/hook_env.txt\"");
    user_hooks(&hx, json!({ "PreToolUse": groups("bash", &[&s], None) }));
    with_secrets(&mut hx).args(["agent", "show env"]);
    hx.run().assert_success();
    let seen = hx.read_file("hook_env.txt");
    for (name, value) in SECRETS {
        assert!(
            seen.contains(&format!("{name}={value}\n")),
            "{name}:\n{seen}"
        );
    }
    assert_no_secret(&tool_message(&server, 1));
}

#[test]
fn nor_can_bash_read_them_back_from_hx_s_own_environ() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            r#"{"command":"tr '\\0' '\\n' < /proc/$PPID/environ"}"#,
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    // hx is not dumpable, so reading its environ takes CAP_SYS_PTRACE, which only a root
    // command outside the sandbox keeps (the sandbox drops every capability: see
    // containment.rs). That is the case where the blanking is what protects the secrets.
    hx.write_user_config("config.toml", "sandbox = \"off\"\n");
    with_secrets(&mut hx).args(["agent", "read the parent's environment"]);
    hx.run().assert_success();
    let out = tool_message(&server, 1);
    // It did read hx's environment, minus the secrets' values.
    assert!(out.contains("HX_TEST_PLAIN=plain-3e6a\n"), "{out}");
    for (name, value) in SECRETS {
        assert!(!out.contains(value), "{name}'s value is readable:\n{out}");
    }
    // hx itself still had its key.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-deepseek-5c1e0d")
    );
}

#[test]
fn ignore_default_excludes_gives_commands_the_real_values() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![env_call("c1")]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "[shell_env]\nignore_default_excludes = true\n",
    );
    with_secrets(&mut hx).args(["agent", "show env"]);
    hx.run().assert_success();
    let out = tool_message(&server, 1);
    for (name, value) in SECRETS {
        assert!(out.contains(&format!("{name}={value}\n")), "{name}:\n{out}");
    }
}
