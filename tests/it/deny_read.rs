//! Files the agent must not read (issue 32, item 12): `.hxignore` and Claude Code's
//! `permissions.deny` `Read(...)` rules keep a secret out of read_file, edit_file, glob and
//! (in the run's pod) out of commands. Each scenario asserts that the secret's bytes are in no
//! request the model server received, as root and as an unprivileged user.

use crate::support::calls::call;
use crate::support::user::as_unprivileged_user;
use crate::support::{tool_answer, FakeServer, Hx, Reply, Run};
use serde_json::json;

const SECRET: &str = "sk-live-7c1d0e5a-not-for-models";
const KEY: &str = "BEGIN-PRIVATE-KEY-b9f3";

/// A workspace with a secret `.env` denied by `.claude/settings.json`, a `secrets/` folder
/// denied by `.hxignore`, and a file anyone may read.
fn workspace(hx: &mut Hx) {
    hx.write_file(".env", &format!("API_KEY={SECRET}\n"))
        .write_file("secrets/deploy.pem", &format!("{KEY}\n"))
        .write_file("notes.txt", "public\n")
        .write_file(".hxignore", "# keys stay home\nsecrets/\n")
        .write_file(
            ".claude/settings.json",
            r#"{"permissions":{"deny":["Read(./.env)","Bash(curl:*)"]}}"#,
        );
    // A link to the secret under another name is as denied as the secret.
    std::os::unix::fs::symlink(".env", hx.workspace().join("link")).expect("link");
}

/// One turn in which the model tries every way in, then an answer; `start` runs hx (itself,
/// or as another user). Returns the next request's answers by call id and the run.
fn try_every_way(hx: &mut Hx, start: impl FnOnce(&Hx) -> Run) -> (Vec<String>, Run) {
    let calls = vec![
        call("read", "read_file", json!({ "path": ".env" })),
        call("read_link", "read_file", json!({ "path": "link" })),
        call(
            "read_dir",
            "read_file",
            json!({ "path": "secrets/deploy.pem" }),
        ),
        call(
            "edit",
            "edit_file",
            json!({ "path": ".env", "old_text": "API", "new_text": "X" }),
        ),
        call("glob", "glob", json!({ "pattern": "**/*" })),
        call(
            "bash",
            "bash",
            json!({ "command": "cat .env link; cat secrets/deploy.pem; ls -A secrets; cat notes.txt" }),
        ),
        call("public", "read_file", json!({ "path": "notes.txt" })),
        call("cat", "bash", json!({ "command": "cat link" })),
    ];
    let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "read the secrets"]);
    let run = start(hx);
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    for r in &reqs {
        assert!(
            !r.raw_body.contains(SECRET),
            "the secret was sent: {}",
            r.raw_body
        );
        assert!(
            !r.raw_body.contains(KEY),
            "the key was sent: {}",
            r.raw_body
        );
    }
    let body = &reqs[1].body;
    let answers = [
        "read",
        "read_link",
        "read_dir",
        "edit",
        "glob",
        "bash",
        "public",
        "cat",
    ]
    .iter()
    .map(|id| tool_answer(body, id).to_string())
    .collect();
    (answers, run)
}

/// What every run here must have answered, whoever ran it.
fn assert_refused(a: &[String]) {
    for (i, rule) in [
        (0, "`Read(./.env)`"),
        (1, "`Read(./.env)`"),
        (2, "`secrets/`"),
    ] {
        assert!(
            a[i].starts_with("Error:")
                && a[i].contains("denied to the model")
                && a[i].contains(rule),
            "{}",
            a[i]
        );
    }
    assert!(a[0].contains(".claude/settings.json"), "{}", a[0]);
    assert!(a[2].contains(".hxignore"), "{}", a[2]);
    assert!(a[3].contains("denied to the model"), "{}", a[3]);
    assert!(a[4].contains("notes.txt"), "{}", a[4]);
    assert!(
        !a[4].contains(".env") && !a[4].contains("deploy.pem"),
        "{}",
        a[4]
    );
    // In the pod the denied file (and the link to it) is unreadable and the denied folder
    // empty (`ls -A` lists nothing).
    for line in [
        "cat: .env: Permission denied",
        "cat: link: Permission denied",
        "cat: secrets/deploy.pem: No such file or directory",
    ] {
        assert!(a[5].contains(line), "{}", a[5]);
    }
    assert!(a[5].ends_with("directory\npublic\n"), "{}", a[5]);
    assert_eq!(a[6].trim_end(), "public", "{}", a[6]);
    // A failed read of a hidden file says why, so the model does not try again.
    assert!(
        a[7].contains("[sandbox]") && a[7].contains("link is denied to the model"),
        "{}",
        a[7]
    );
}

#[test]
fn deny_read_keeps_the_secret_from_tools_and_commands() {
    let mut hx = Hx::new_offline();
    workspace(&mut hx);
    let (answers, run) = try_every_way(&mut hx, Hx::run);
    assert_refused(&answers);
    // The file was neither edited nor hidden from the user's own view.
    assert_eq!(hx.read_file(".env"), format!("API_KEY={SECRET}\n"));
    // The other tools' rule is named once, and the run went on.
    assert_eq!(
        run.stderr.matches("ignored: Bash(curl:*)").count(),
        1,
        "{}",
        run.dump()
    );
}

#[test]
fn deny_read_as_an_unprivileged_user() {
    as_unprivileged_user("deny_read_as_an_unprivileged_user", |user| {
        let mut hx = user.hx();
        workspace(&mut hx);
        let (answers, _) = try_every_way(&mut hx, |hx| user.run(hx));
        assert_refused(&answers);
    });
}

/// A malformed settings file is one warning; `.hxignore` and the user's own rules still
/// apply, and the run goes on.
#[test]
fn deny_read_malformed_settings_warn_once_and_the_run_goes_on() {
    let mut hx = Hx::new_offline();
    hx.write_file(".env", &format!("API_KEY={SECRET}\n"))
        .write_file(".hxignore", ".env\n")
        .write_file(".claude/settings.json", "{ \"permissions\": { \"deny\": [");
    let home_rules = hx.home().join(".claude");
    std::fs::create_dir_all(&home_rules).expect("home .claude");
    std::fs::write(
        home_rules.join("settings.json"),
        r#"{"permissions":{"deny":["Read(./notes.txt)"]}}"#,
    )
    .expect("user settings");
    hx.write_file("notes.txt", "mine\n");
    let calls = vec![
        call("env", "read_file", json!({ "path": ".env" })),
        call("notes", "read_file", json!({ "path": "notes.txt" })),
    ];
    let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "read"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "done\n", "{}", run.dump());
    let warned: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("settings.json is not valid JSON"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", run.dump());
    let reqs = server.requests();
    assert!(reqs.iter().all(|r| !r.raw_body.contains(SECRET)));
    let env = tool_answer(&reqs[1].body, "env");
    assert!(env.contains("`.env` in .hxignore"), "{env}");
    let notes = tool_answer(&reqs[1].body, "notes");
    assert!(notes.contains("`Read(./notes.txt)`"), "{notes}");
}

/// `hx context` lists each rule, its file and what it matches now; `hx sandbox` says what
/// commands can still read.
#[test]
fn deny_read_context_and_sandbox_say_what_is_denied() {
    let mut hx = Hx::new_offline();
    workspace(&mut hx);
    let run = hx.run_args(&["context"]);
    run.assert_code(0);
    assert!(
        run.stdout
            .contains("Read(./.env)  (.claude/settings.json; matches 1 existing path)"),
        "{}",
        run.dump()
    );
    assert!(
        run.stdout
            .contains("its patterns  (.hxignore; matches 1 existing path)"),
        "{}",
        run.dump()
    );
    // `hx context` shows no commands' sandbox: no line about what commands can read.
    assert!(
        !run.stderr.contains("commands can read them"),
        "{}",
        run.dump()
    );
    let run = hx.run_args(&["sandbox", "--sandbox", "off"]);
    assert_eq!(
        run.stderr
            .matches("commands can read them: the sandbox is off")
            .count(),
        1,
        "{}",
        run.dump()
    );
    assert!(
        run.stdout
            .contains("denied:   2 rules refused by the file tools; not hidden from commands: the sandbox is off"),
        "{}",
        run.dump()
    );
    let run = hx.run_args(&["sandbox", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["denied"]["rules"], 2, "{}", run.dump());
    if v["protections"]["terminals"]["status"] == "enforced" {
        // With a pod: the two paths found at the start are hidden.
        let hidden = v["denied"]["hidden_in_pod"].as_array().expect("list");
        assert_eq!(hidden.len(), 2, "{}", run.dump());
    }
}
