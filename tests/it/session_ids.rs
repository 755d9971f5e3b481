//! Sessions a person can find (issue 23): short ids in every listing and line, any unique
//! part of an id taken by -r, ambiguous ids listed one per line, sessions that belong to the
//! project rather than the folder hx started in, and ids found from any workspace.

use std::path::Path;

use crate::support::{messages, FakeServer, Hx, Reply};

use crate::support::{session_id as id_of, short_id as short};

#[test]
fn the_short_id_is_shown_everywhere_and_continues_its_session() {
    let server = FakeServer::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "first task"]);
    let first = hx.run();
    first.assert_success();
    hx.clear_args().args(["agent", "second task"]);
    hx.run().assert_success();
    let files = hx.session_files();
    assert_eq!(files.len(), 2);
    let (id, other) = (id_of(&files[0]), id_of(&files[1]));
    assert!(
        first.stderr.contains(&format!(
            "hx: session {} · continue with: hx agent -r {} ",
            short(&id),
            short(&id)
        )),
        "{}",
        first.stderr
    );
    // No line of the listing shows more of an id than its short form.
    let list = hx.run_args(&["sessions", "list"]);
    assert!(list.stdout.contains(short(&id)), "{}", list.stdout);
    assert!(!list.stdout.contains(&id), "{}", list.stdout);

    // The short id, or any other unique part, picks the session: -r goes on with the first
    // one, not the newest.
    hx.clear_args()
        .args(["agent", "-r", short(&id), "third task"]);
    hx.run().assert_success();
    let third = &server.requests()[2].body;
    let sent = messages(third);
    assert_eq!(sent[1]["content"], "first task", "{third}");
    assert_ne!(id, other);
}

#[test]
fn an_ambiguous_id_lists_at_most_ten_candidates_one_per_line() {
    let replies: Vec<Reply> = (0..12)
        .map(|i| Reply::text(&format!("answer {i}")))
        .collect();
    let server = FakeServer::start(replies);
    let mut hx = Hx::new(&server);
    for i in 0..12 {
        hx.clear_args().args(["agent", &format!("task number {i}")]);
        hx.run().assert_success();
    }
    let files = hx.session_files();
    assert_eq!(files.len(), 12);
    // UUIDv7 ids begin with the time, so ids made minutes apart share a beginning: the
    // longest all twelve share (its length depends on where the clock stood; its first 8
    // characters change every 65 s, so it cannot be a fixed 8).
    let ids: Vec<String> = files.iter().map(|f| id_of(f).to_string()).collect();
    let common = ids.iter().skip(1).fold(ids[0].len(), |n, id| {
        ids[0]
            .bytes()
            .zip(id.bytes())
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    });
    let shared = &ids[0][..common.min(8)];
    assert!(!shared.is_empty(), "{ids:?}");
    let run = hx.run_args(&["agent", "-r", shared, "go on"]);
    run.assert_code(2);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines[0].contains("ambiguous: 12 sessions"),
        "{}",
        run.stderr
    );
    let candidates: Vec<&&str> = lines.iter().filter(|l| l.contains("task number")).collect();
    assert_eq!(candidates.len(), 10, "{}", run.stderr);
    // The newest first, each with its short id and first message.
    let newest = id_of(&files[11]);
    assert!(candidates[0].contains(short(&newest)), "{}", run.stderr);
    assert!(candidates[0].contains("task number 11"), "{}", run.stderr);
    assert!(run.stderr.contains("and 2 more"), "{}", run.stderr);
    // Nothing was sent for it.
    assert_eq!(server.requests().len(), 12);
}

#[test]
fn continue_in_a_subfolder_goes_on_with_the_projects_newest_session() {
    let server = FakeServer::start(vec![Reply::text("One."), Reply::text("Two.")]);
    let mut hx = Hx::new(&server);
    std::fs::create_dir(hx.workspace().join(".git")).expect("mkdir .git");
    hx.args(["agent", "task at the root"]);
    hx.run().assert_success();
    hx.current_dir_rel("src/deep");
    hx.clear_args().args(["agent", "-c", "and from below"]);
    hx.run().assert_success();
    assert_eq!(hx.session_files().len(), 1);
    let sent = messages(&server.requests()[1].body).clone();
    assert_eq!(sent[1]["content"], "task at the root");
}

#[test]
fn an_id_unique_across_workspaces_is_found_from_any_folder() {
    let server = FakeServer::start(vec![Reply::text("One."), Reply::text("Two.")]);
    let mut hx = Hx::new(&server);
    hx.current_dir_rel("project-a");
    hx.args(["agent", "work in a"]);
    hx.run().assert_success();
    let id = id_of(&hx.session_files()[0]);

    hx.current_dir_rel("project-b");
    let show = hx.run_args(&["sessions", "show", short(&id)]);
    show.assert_success();
    assert!(show.stdout.contains("user: work in a"), "{}", show.dump());
    assert!(show.stdout.contains("project-a"), "{}", show.stdout);

    hx.clear_args().args(["agent", "-r", short(&id), "more"]);
    let run = hx.run();
    run.assert_success();
    assert!(
        run.stderr.contains("belongs to the workspace") && run.stderr.contains("project-a"),
        "{}",
        run.stderr
    );
    let sent = messages(&server.requests()[1].body).clone();
    assert_eq!(sent[1]["content"], "work in a");
}

/// Sets a file's modification time `days` ago.
fn age(path: &Path, days: u32) {
    let status = std::process::Command::new("touch")
        .arg("-d")
        .arg(format!("{days} days ago"))
        .arg(path)
        .status()
        .expect("touch");
    assert!(status.success());
}

#[test]
fn sessions_rm_removes_what_it_names_and_nothing_else() {
    let server = FakeServer::start(vec![Reply::text("One."), Reply::text("Two.")]);
    let mut hx = Hx::new(&server);
    for task in ["first", "second"] {
        hx.clear_args().args(["agent", task]);
        hx.run().assert_success();
    }
    let files = hx.session_files();
    let id = id_of(&files[0]);
    let run = hx.run_args(&["sessions", "rm", short(&id)]);
    run.assert_success();
    assert!(
        run.stdout
            .contains(&format!("removed session {}", short(&id))),
        "{}",
        run.dump()
    );
    assert_eq!(hx.session_files(), vec![files[1].clone()]);
    // An id no session has is an error, and removes nothing.
    let run = hx.run_args(&["sessions", "rm", "zzzzzzzz"]);
    run.assert_code(2);
    assert_eq!(hx.session_files().len(), 1);
}

#[test]
fn prune_and_keep_days_remove_only_old_sessions() {
    let server = FakeServer::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
        Reply::text("Four."),
    ]);
    let mut hx = Hx::new(&server);
    for task in ["old", "new"] {
        hx.clear_args().args(["agent", task]);
        hx.run().assert_success();
    }
    let files = hx.session_files();
    age(&files[0], 40);
    let run = hx.run_args(&["sessions", "prune", "--older-than", "30d"]);
    run.assert_success();
    assert!(
        run.stdout.contains("removed 1 session file"),
        "{}",
        run.dump()
    );
    assert_eq!(hx.session_files(), vec![files[1].clone()]);
    let run = hx.run_args(&["sessions", "prune", "--older-than", "soon"]);
    run.assert_code(2);
    assert!(run.stderr.contains("for example 30d"), "{}", run.dump());

    // With keep_days, a run that records removes what is older by itself.
    hx.write_user_config("config.toml", "[sessions]\nkeep_days = 7\n");
    age(&files[1], 8);
    hx.clear_args().args(["agent", "newest"]);
    hx.run().assert_success();
    let left = hx.session_files();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_ne!(left[0], files[1]);
}

#[test]
fn a_run_that_never_reached_the_model_leaves_no_session() {
    // Nothing listens at the base URL.
    let mut hx = Hx::new_offline();
    hx.args(["agent", "hello"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(hx.session_files().is_empty(), "{:?}", hx.session_files());
    assert!(!run.stderr.contains("continue with"), "{}", run.stderr);

    // A key the server refuses: the same.
    let server = FakeServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"Authentication Fails"}}"#,
    )]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "hello"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(hx.session_files().is_empty(), "{:?}", hx.session_files());
    assert!(!run.stderr.contains("continue with"), "{}", run.stderr);
    // The error says where the key came from, and for what.
    assert!(
        run.stderr.contains(&format!(
            "the key in DEEPSEEK_API_KEY was refused by provider deepseek at {}",
            server.url()
        )),
        "{}",
        run.stderr
    );

    // A server that answered, even with an error, leaves the session to go on with.
    let server = FakeServer::start(vec![Reply::status(500, r#"{"error":{"message":"boom"}}"#)]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "hello"]);
    hx.write_user_config("config.toml", "[network]\nretries = 0\n");
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(hx.session_files().len(), 1, "{}", run.dump());
    assert!(run.stderr.contains("continue with"), "{}", run.stderr);
}
