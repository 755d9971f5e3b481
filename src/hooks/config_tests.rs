//! Tests of hooks.json parsing, matchers and loading with trust.

use super::*;
use crate::trust::TrustStore;

fn parse(text: &str) -> Result<Vec<Entry>, Vec<String>> {
    parse_file(Path::new("/p/hooks.json"), Path::new("/p"), text)
}

fn entries(text: &str) -> Vec<Entry> {
    parse(text).unwrap_or_else(|p| panic!("{text}: {p:?}"))
}

fn problems(text: &str) -> Vec<String> {
    match parse(text) {
        Ok(e) => panic!("{text}: no problem found, {} entries", e.len()),
        Err(p) => p,
    }
}

/// [`super::load`], with its warnings as the lines the user reads.
fn load(cwd: &Path, env: &Env) -> Result<(Vec<Entry>, Vec<String>), String> {
    let (entries, warnings) = super::load(cwd, env)?;
    Ok((entries, warnings.iter().map(ToString::to_string).collect()))
}

#[test]
fn matcher_kinds() {
    assert!(matches!(Matcher::parse("").expect("empty"), Matcher::All));
    assert!(matches!(Matcher::parse(" * ").expect("star"), Matcher::All));
    let names = Matcher::parse("bash | write_file").expect("list");
    assert!(matches!(&names, Matcher::Names(n) if n == &["bash", "write_file"]));
    assert!(names.matches("bash", None));
    assert!(names.matches("write_file", None));
    assert!(!names.matches("bas", None));
    assert!(!names.matches("read_file", None));

    let re = Matcher::parse("read_.*|gl.b").expect("regex");
    assert!(matches!(re, Matcher::Regex(_)));
    assert!(re.matches("read_file", None));
    assert!(re.matches("glob", None));
    // Anchored: a part of the name is not a match.
    assert!(!Matcher::parse("as.").expect("regex").matches("bash", None));
    assert!(!Matcher::parse("ba.h")
        .expect("regex")
        .matches("bash2", None));
}

#[test]
fn matcher_text_is_what_was_written() {
    let text = |m: &str| Matcher::parse(m).expect("matcher").text();
    assert_eq!(text(""), "*");
    assert_eq!(text(" * "), "*");
    assert_eq!(text("bash | write_file"), "bash|write_file");
    assert_eq!(text("read_.*|gl.b"), "read_.*|gl.b");
}

#[test]
fn claude_names_are_aliases() {
    // The names the tools themselves give (see each tool's `Tool::claude`).
    let alias = |t: &str| -> Option<&'static str> {
        let standard = crate::tools::Registry::standard().claude_names();
        standard.get(t).copied().or(match t {
            "todo_write" => Some("TodoWrite"),
            "task" => Some("Task"),
            "load_skill" => Some("Skill"),
            _ => None,
        })
    };
    let matches = |m: &Matcher, t: &str| m.matches(t, alias(t));
    let m = Matcher::parse("Bash").expect("list");
    assert!(matches(&m, "bash"));
    assert!(!matches(&m, "read_file"));
    let m = Matcher::parse("Write|Edit").expect("list");
    assert!(matches(&m, "write_file") && matches(&m, "edit_file") && !matches(&m, "bash"));
    let m = Matcher::parse("Todo.*|Skill").expect("regex");
    assert!(matches(&m, "todo_write") && matches(&m, "load_skill") && !matches(&m, "task"));
    assert!(matches(&Matcher::parse("Task").expect("list"), "task"));
    assert!(matches(&Matcher::parse("Read|Glob").expect("list"), "glob"));
    assert_eq!(alias("read_file"), Some("Read"));
    // Without the alias the Claude name does not match.
    assert!(!Matcher::parse("Bash").expect("list").matches("bash", None));
}

#[test]
fn invalid_regex_is_an_error() {
    let err = Matcher::parse("ba(sh").expect_err("invalid");
    assert!(err.starts_with("invalid matcher regex \"ba(sh\""), "{err}");
}

#[test]
fn settings_shape_and_bare_map() {
    let wrapped = r#"{"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [
        {"type": "command", "command": "./a.sh", "timeout": 5}]}]}}"#;
    let e = entries(wrapped);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].event, EventKind::PreToolUse);
    assert_eq!(e[0].command, "./a.sh");
    assert_eq!(e[0].timeout, Duration::from_secs(5));
    assert_eq!(e[0].source, Path::new("/p/hooks.json"));

    let bare = r#"{"Stop": [{"hooks": [{"type": "command", "command": "x"}]}],
                   "SessionStart": [{"matcher": "ignored(", "hooks": [{"type": "command", "command": "y"}]}]}"#;
    let e = entries(bare);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].timeout, DEFAULT_TIMEOUT);
    assert_eq!(e[1].event, EventKind::SessionStart);
    assert!(matches!(e[1].matcher, Matcher::All));
}

/// Every problem that would lose a hook, or change how one runs, is reported, and nothing of
/// the file loads.
#[test]
fn every_problem_is_reported_and_nothing_loads() {
    let text = r#"{"hooks": {
        "PreToolUse": [
            {"matcher": "bash", "hooks": [
                {"type": "prompt", "prompt": "x"},
                {"type": "command"},
                {"type": "command", "command": "ok1", "timeout": -1},
                "nope",
                {"type": "command", "command": "ok2"}
            ]},
            {"matcher": 3, "hooks": []},
            {"matcher": "a(", "hooks": [{"type": "command", "command": "never"}]},
            {"matcher": "bash"}
        ],
        "PostToolUse": {"not": "an array"},
        "BeforeEverything": []
    }}"#;
    let p = problems(text);
    let expected = [
        "PreToolUse[0].hooks[0]: unsupported hook type \"prompt\" (hx runs \"command\" hooks only)",
        "PreToolUse[0].hooks[1]: \"command\" must be a non-empty string",
        "PreToolUse[0].hooks[2]: \"timeout\" must be seconds between 0 and 86400, got -1",
        "PreToolUse[0].hooks[3]: expected an object",
        "PreToolUse[1]: \"matcher\" must be a string",
    ];
    assert_eq!(&p[..5], &expected[..]);
    assert!(
        p[5].starts_with("PreToolUse[2]: invalid matcher regex \"a(\""),
        "{}",
        p[5]
    );
    assert!(!p[5].contains('\n'));
    assert_eq!(p[6], "PreToolUse[3]: expected \"hooks\": an array of hooks");
    assert_eq!(p[7], "PostToolUse: expected an array of matcher groups");
    assert!(
        p[8].starts_with("unknown hook event \"BeforeEverything\""),
        "{}",
        p[8]
    );
    assert_eq!(p.len(), 9);
}

#[test]
fn invalid_json_is_one_problem() {
    for text in [
        "{not json",
        "",
        "[1]",
        r#"{"hooks": []}"#,
        r#"{"Stop": []} x"#,
    ] {
        let p = problems(text);
        assert_eq!(p.len(), 1, "{text}: {p:?}");
    }
    assert!(problems("{not json")[0].starts_with("not valid JSON ("));
}

/// serde_json keeps the last of two equal keys; the first one's hooks would be lost unseen.
#[test]
fn a_key_given_twice_is_a_problem() {
    let text = r#"{"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [
        {"type": "command", "command": "./guard.sh"}]}], "PreToolUse": []}}"#;
    let p = problems(text);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("not valid JSON (the key \"PreToolUse\" appears twice"),
        "{}",
        p[0]
    );
    // At any depth.
    let text = r#"{"Stop": [{"hooks": [{"type": "command", "command": "a", "command": "b"}]}]}"#;
    assert_eq!(problems(text).len(), 1);
}

#[test]
fn odd_timeouts_never_panic() {
    for t in ["1e300", "0", "\"10\"", "86401", "-0.0"] {
        let text = format!(
            r#"{{"Stop": [{{"hooks": [{{"type": "command", "command": "x", "timeout": {t}}}]}}]}}"#
        );
        let p = problems(&text);
        assert!(
            p[0].starts_with("Stop[0].hooks[0]: \"timeout\" must be seconds"),
            "{t}: {p:?}"
        );
    }
    let e =
        entries(r#"{"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0.5}]}]}"#);
    assert_eq!(e[0].timeout, Duration::from_millis(500));
}

#[test]
fn review_shows_each_hook_escaped() {
    let text = r#"{"PreToolUse": [{"matcher": "Bash|\u001bx", "hooks": [
        {"type": "command", "command": "touch PWNED #\r./lint.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "done"}]}]}"#;
    let lines = review(Path::new("/p/.hx/hooks.json"), text).expect("valid");
    assert_eq!(
        lines,
        [
            r#"PreToolUse, matcher "Bash|^[x": "touch PWNED #^M./lint.sh""#,
            r#"Stop: "done""#
        ]
    );
    assert!(review(Path::new("/p/.hx/hooks.json"), "{").is_err());
}

const ONE_HOOK: &str = r#"{"Stop": [{"hooks": [{"type": "command", "command": "project-hook"}]}]}"#;

fn env_for(home: &Path) -> Env {
    let mut env = Env::new();
    env.insert("HOME".into(), home.display().to_string());
    env
}

#[test]
fn load_user_always_project_only_when_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let project = dir.path().join("proj");
    let cwd = project.join("sub");
    std::fs::create_dir_all(home.join(".config/hx")).expect("mkdir");
    std::fs::create_dir_all(project.join(".hx")).expect("mkdir");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    std::fs::write(
        home.join(".config/hx/hooks.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "user-hook"}]}]}}"#,
    )
    .expect("write");
    let project_file = project.join(".hx/hooks.json");
    std::fs::write(&project_file, ONE_HOOK).expect("write");
    let env = env_for(&home);
    let commands = |e: &[Entry]| e.iter().map(|e| e.command.clone()).collect::<Vec<_>>();

    let (e, w) = load(&cwd, &env).expect("load");
    assert_eq!(commands(&e), ["user-hook"]);
    assert_eq!(w.len(), 1);
    assert!(
        w[0].contains("project hooks skipped: not trusted"),
        "{}",
        w[0]
    );
    assert!(w[0].contains("`hx trust`"), "{}", w[0]);

    let store_path = TrustStore::path_for(&env).expect("store path");
    let mut store = TrustStore::load(&store_path).expect("store");
    store
        .trust(&project_file, ONE_HOOK.as_bytes())
        .expect("trust");
    store.save().expect("save");
    let (e, w) = load(&cwd, &env).expect("load");
    assert_eq!(commands(&e), ["user-hook", "project-hook"]);
    assert!(w.is_empty(), "{w:?}");
    // User hooks run where hx started; project hooks in the folder holding `.hx`.
    let dirs: Vec<&Path> = e.iter().map(|e| e.dir.as_path()).collect();
    assert_eq!(dirs, [cwd.as_path(), project.as_path()]);

    std::fs::write(&project_file, ONE_HOOK.replace("project-hook", "evil")).expect("write");
    let (e, w) = load(&cwd, &env).expect("load");
    assert_eq!(commands(&e), ["user-hook"]);
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("changed since trusted"), "{}", w[0]);
}

/// A repository could ship `.hx/hooks.json` (or `.hx`) as a link to a hooks file the user
/// trusted elsewhere; the approval, keyed by the canonical path, must not carry over.
#[test]
fn a_linked_project_file_or_folder_is_not_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let trusted = dir.path().join("trusted");
    std::fs::create_dir_all(trusted.join(".hx")).expect("mkdir");
    let trusted_file = trusted.join(".hx/hooks.json");
    std::fs::write(&trusted_file, ONE_HOOK).expect("write");
    let env = env_for(&home);
    let store_path = TrustStore::path_for(&env).expect("store path");
    let mut store = TrustStore::load(&store_path).expect("store");
    store
        .trust(&trusted_file, ONE_HOOK.as_bytes())
        .expect("trust");
    store.save().expect("save");

    // The file is a link.
    let linked_file = dir.path().join("a");
    std::fs::create_dir_all(linked_file.join(".hx")).expect("mkdir");
    std::os::unix::fs::symlink(&trusted_file, linked_file.join(".hx/hooks.json")).expect("ln");
    let (e, w) = load(&linked_file, &env).expect("load");
    assert!(e.is_empty(), "{e:?}");
    let p = linked_file.join(".hx/hooks.json");
    assert_eq!(
        w,
        [format!(
            "hx: {}: project hooks skipped: .hx/hooks.json is a symbolic link, and a link could \
             borrow the approval of the file it points to; make it a real file",
            p.display()
        )]
    );

    // The folder is a link.
    let linked_dir = dir.path().join("b");
    std::fs::create_dir_all(&linked_dir).expect("mkdir");
    std::os::unix::fs::symlink(trusted.join(".hx"), linked_dir.join(".hx")).expect("ln");
    let (e, w) = load(&linked_dir, &env).expect("load");
    assert!(e.is_empty(), "{e:?}");
    let p = linked_dir.join(".hx/hooks.json");
    assert_eq!(
        w,
        [format!(
            "hx: {}: project hooks skipped: .hx is a symbolic link, and a link could borrow \
             the approval of the file it points to; make it a real folder",
            p.display()
        )]
    );

    // The real file is still trusted.
    let (e, w) = load(&trusted, &env).expect("load");
    assert_eq!(e.len(), 1);
    assert!(w.is_empty(), "{w:?}");
}

/// The hooks JSON reader on random and mutated files: it never panics, and a file it accepts
/// gives exactly the hooks the file holds, in order: none made up, none lost.
mod properties {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const EVENTS: [&str; 8] = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SubagentStop",
        "preToolUse",
        "Notification",
    ];

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~]{0,10}",
            prop::sample::select(vec![
                "",
                "*",
                "bash",
                "Bash|Write",
                "read_.*",
                "ba(sh",
                "hooks",
                "command",
                "type",
                "matcher",
                "timeout",
                "PreToolUse",
                "Stop",
                " ",
                "\u{1b}",
                "é",
            ])
            .prop_map(String::from),
        ]
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1e6f64..1e6).prop_map(|f| json!(f)),
            word().prop_map(Value::String),
        ]
    }

    fn any_json() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((word(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// A field that is usually right, sometimes wrong, sometimes missing.
    fn field(right: BoxedStrategy<Value>) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![6 => right.prop_map(Some), 1 => Just(None), 1 => leaf().prop_map(Some)]
    }

    fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
        Value::Object(
            fields
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_string(), v?)))
                .collect(),
        )
    }

    fn hook() -> impl Strategy<Value = Value> {
        let shaped = (
            field(Just(json!("command")).boxed()),
            field("[ -~]{1,12}".prop_map(Value::String).boxed()),
            prop::option::of(field((0.001f64..100.0).prop_map(|t| json!(t)).boxed())),
        )
            .prop_map(|(t, c, timeout)| {
                object(vec![
                    ("type", t),
                    ("command", c),
                    ("timeout", timeout.flatten()),
                ])
            });
        prop_oneof![8 => shaped, 1 => any_json()]
    }

    fn group() -> impl Strategy<Value = Value> {
        let shaped = (
            prop::option::of(field(word().prop_map(Value::String).boxed())),
            field(
                prop::collection::vec(hook(), 0..3)
                    .prop_map(Value::Array)
                    .boxed(),
            ),
        )
            .prop_map(|(m, h)| object(vec![("matcher", m.flatten()), ("hooks", h)]));
        prop_oneof![8 => shaped, 1 => any_json()]
    }

    fn hooks_file() -> impl Strategy<Value = Value> {
        let events = prop::collection::vec(
            (
                prop::sample::select(EVENTS.to_vec()),
                prop_oneof![
                    8 => prop::collection::vec(group(), 0..3).prop_map(Value::Array),
                    1 => any_json(),
                ],
            ),
            0..4,
        )
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
        prop_oneof![
            4 => events.clone().prop_map(|e| json!({ "hooks": e })),
            2 => events,
            1 => any_json(),
        ]
    }

    /// An edit of the text: delete a character, insert a token, or repeat a stretch (which can
    /// give an object the same key twice).
    #[derive(Debug, Clone)]
    enum Edit {
        Delete(usize),
        Insert(usize, &'static str),
        Repeat(usize, usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        let token = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            "\"",
            ",",
            ":",
            " ",
            "\\",
            "null",
            "1e400",
            "-",
            "\u{0}",
            "\"PreToolUse\":",
            "\"command\":",
            "\"hooks\":[]",
            "é",
        ]);
        prop_oneof![
            any::<usize>().prop_map(Edit::Delete),
            (any::<usize>(), token).prop_map(|(at, t)| Edit::Insert(at, t)),
            (any::<usize>(), 1usize..40).prop_map(|(at, n)| Edit::Repeat(at, n)),
        ]
    }

    fn apply(text: &str, edits: &[Edit]) -> String {
        let mut chars: Vec<char> = text.chars().collect();
        for e in edits {
            let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
            match *e {
                Edit::Delete(i) if !chars.is_empty() => {
                    let i = i % chars.len();
                    chars.remove(i);
                }
                Edit::Delete(_) => {}
                Edit::Insert(i, t) => {
                    let i = at(i, chars.len());
                    chars.splice(i..i, t.chars());
                }
                Edit::Repeat(i, n) => {
                    let i = at(i, chars.len());
                    let end = (i + n).min(chars.len());
                    let stretch: Vec<char> = chars[i..end].to_vec();
                    chars.splice(end..end, stretch);
                }
            }
        }
        chars.into_iter().collect()
    }

    /// What the file holds, read without the reader under test: for every element of every
    /// "hooks" array, its event, its command (if it has a string one) and its group's matcher.
    fn held(text: &str) -> Vec<(String, Option<String>, Option<String>)> {
        let Ok(Value::Object(top)) = serde_json::from_str::<Value>(text) else {
            return Vec::new();
        };
        let events = match top.get("hooks") {
            Some(Value::Object(m)) => m,
            _ => &top,
        };
        let mut held = Vec::new();
        for (name, groups) in events {
            for group in groups.as_array().into_iter().flatten() {
                let matcher = group.get("matcher").and_then(Value::as_str);
                let hooks = group.get("hooks").and_then(Value::as_array);
                for hook in hooks.into_iter().flatten() {
                    let command = hook.get("command").and_then(Value::as_str);
                    held.push((
                        name.clone(),
                        command.map(String::from),
                        matcher.map(String::from),
                    ));
                }
            }
        }
        held
    }

    fn check(text: &str) -> Result<(), TestCaseError> {
        let path = Path::new("/p/.hx/hooks.json");
        match parse_file(path, Path::new("/p"), text) {
            Err(problems) => prop_assert!(!problems.is_empty()),
            Ok(entries) => {
                let held = held(text);
                prop_assert_eq!(entries.len(), held.len(), "{}", text);
                for (e, (event, command, matcher)) in entries.iter().zip(held) {
                    prop_assert_eq!(format!("{:?}", e.event), event);
                    prop_assert_eq!(Some(&e.command), command.as_ref());
                    if e.event.uses_matcher() {
                        let written = Matcher::parse(matcher.as_deref().unwrap_or(""));
                        prop_assert_eq!(written.map(|m| m.text()), Ok(e.matcher.text()));
                    }
                    prop_assert_eq!(e.source.as_path(), path);
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_hooks_files(file in hooks_file()) {
            check(&file.to_string())?;
        }

        #[test]
        fn mutated_hooks_files(
            file in hooks_file(),
            edits in prop::collection::vec(edit(), 1..6),
        ) {
            check(&apply(&file.to_string(), &edits))?;
        }

        #[test]
        fn arbitrary_text(text in "\\PC{0,200}") {
            check(&text)?;
        }
    }
}
