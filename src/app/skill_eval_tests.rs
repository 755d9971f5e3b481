use super::*;
use crate::model::ToolCall;

fn parse(text: &str) -> Result<Vec<Case>, String> {
    parse_eval_set(text.as_bytes())
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(cases) => panic!("{text} parsed: {cases:?}"),
        Err(e) => e,
    }
}

#[test]
fn an_eval_set_is_a_list_of_queries_and_expectations() {
    let cases = parse(
        r#"[{"query": "ship it", "should_trigger": true, "note": "kept aside"},
            {"query": "write a poem", "should_trigger": false}]"#,
    )
    .expect("valid");
    assert_eq!(
        cases,
        vec![
            Case {
                query: "ship it".into(),
                should_trigger: true
            },
            Case {
                query: "write a poem".into(),
                should_trigger: false
            },
        ]
    );
}

#[test]
fn what_is_wrong_with_an_eval_set_is_named() {
    assert!(
        err("[{").starts_with("not valid JSON (EOF while parsing"),
        "{}",
        err("[{")
    );
    assert!(err(r#"{"query": "x"}"#).starts_with("not a list; an eval set is a JSON list"));
    assert!(err(r#"{"skill_name": "x", "evals": []}"#).contains("skill-creator's evals.json"));
    assert!(err("[]").starts_with("the list is empty"));
    assert_eq!(
        err(r#"[{"query": "a", "should_trigger": true}, 3]"#),
        format!("entry 2 is not an object; {SHAPE}")
    );
    assert_eq!(
        err(r#"[{"should_trigger": true}]"#),
        "entry 1 has no \"query\""
    );
    assert_eq!(
        err(r#"[{"query": " \n", "should_trigger": true}]"#),
        "entry 1: \"query\" is empty"
    );
    assert_eq!(
        err(r#"[{"query": ["a"], "should_trigger": true}]"#),
        "entry 1: \"query\" is not a string"
    );
    assert_eq!(
        err(r#"[{"query": "a"}]"#),
        "entry 1 has no \"should_trigger\""
    );
    assert_eq!(
        err(r#"[{"query": "a", "should_trigger": "yes"}]"#),
        "entry 1: \"should_trigger\" is not true or false"
    );
    assert_eq!(
        err(
            r#"[{"query": "a", "should_trigger": true}, {"query": "b", "should_trigger": true},
               {"query": "a", "should_trigger": false}]"#
        ),
        "entry 3 repeats the query of entry 1"
    );
}

#[test]
fn an_eval_set_is_bounded() {
    let long =
        serde_json::json!([{"query": "x".repeat(MAX_QUERY_CHARS + 1), "should_trigger": true}]);
    assert!(err(&long.to_string()).contains(&format!("at most {MAX_QUERY_CHARS}")));
    let at_most =
        serde_json::json!([{"query": "é".repeat(MAX_QUERY_CHARS), "should_trigger": true}]);
    assert!(parse(&at_most.to_string()).is_ok());
    let many: Vec<Value> = (0..=MAX_QUERIES)
        .map(|i| serde_json::json!({"query": format!("q{i}"), "should_trigger": true}))
        .collect();
    assert_eq!(
        err(&Value::Array(many).to_string()),
        format!("1001 queries; an eval set holds at most {MAX_QUERIES}")
    );
}

#[test]
fn a_file_too_large_or_not_regular_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; MAX_EVAL_SET_BYTES as usize + 1]).expect("write");
    let e = read_eval_set(&big).expect_err("too large");
    assert!(
        e.ends_with("larger than 1024 KiB, the most hx reads of an eval set"),
        "{e}"
    );
    let e = read_eval_set(dir.path()).expect_err("a folder");
    assert!(e.ends_with(": not a regular file"), "{e}");
    let e = read_eval_set(&dir.path().join("none.json")).expect_err("missing");
    assert!(e.ends_with("none.json: no such file"), "{e}");
}

fn skill(name: &str, description: &str) -> Skill {
    crate::skills::test_util::project_skill(name, description)
}

#[test]
fn the_catalog_is_edited_for_the_skill_under_test() {
    let reg = SkillRegistry::new([skill("deploy", "Ship it"), skill("review", "Review it")]);
    let tried = edited(reg.clone(), "deploy", Some("Roll out"), false);
    assert_eq!(
        tried.get("deploy").map(|s| s.description.as_str()),
        Some("Roll out")
    );
    assert_eq!(tried.get("review"), reg.get("review"));
    let alone = edited(reg.clone(), "deploy", None, true);
    assert_eq!(alone.names().collect::<Vec<_>>(), ["deploy"]);
    assert_eq!(alone.get("deploy"), reg.get("deploy"));
    assert_eq!(edited(reg.clone(), "deploy", None, false), reg);
}

#[test]
fn a_description_to_try_is_one_line_and_bounded() {
    assert_eq!(
        description_to_try("  Ship\n  it  ").as_deref(),
        Ok("Ship it")
    );
    assert_eq!(
        description_to_try(" \n ").expect_err("empty"),
        "--description is empty"
    );
    let long = "x".repeat(skills::MAX_DESCRIPTION_CHARS + 1);
    assert!(description_to_try(&long)
        .expect_err("long")
        .starts_with("--description has 1025 characters"));
}

fn turn(calls: &[(&str, &str)]) -> AssistantTurn {
    AssistantTurn {
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("c{i}"),
                name: (*name).into(),
                arguments: (*arguments).into(),
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn a_trigger_is_a_load_skill_call_naming_the_skill() {
    assert!(triggered(
        &turn(&[("load_skill", r#"{"name": "deploy"}"#)]),
        "deploy"
    ));
    assert!(triggered(
        &turn(&[("load_skill", r#"{"name": " deploy "}"#)]),
        "deploy"
    ));
    assert!(triggered(
        &turn(&[("glob", "{}"), ("load_skill", r#"{"name":"deploy"}"#)]),
        "deploy"
    ));
    assert!(!triggered(
        &turn(&[("load_skill", r#"{"name": "review"}"#)]),
        "deploy"
    ));
    assert!(!triggered(
        &turn(&[("load_skill", r#"{"name": "deplo"#)]),
        "deploy"
    ));
    assert!(!triggered(
        &turn(&[("read_file", r#"{"name": "deploy"}"#)]),
        "deploy"
    ));
    assert!(!triggered(&turn(&[]), "deploy"));
}

#[test]
fn rates_passes_precision_and_recall() {
    let case = |q: &str, should_trigger| Case {
        query: q.into(),
        should_trigger,
    };
    let tally = |triggers, runs| Tally {
        triggers,
        runs,
        usage: Usage {
            prompt_tokens: 10,
            ..Default::default()
        },
    };
    let cases = [
        case("a", true),
        case("b", true),
        case("c", false),
        case("d", false),
    ];
    let tallies = vec![
        (&cases[0], tally(3, 3)),
        (&cases[1], tally(1, 3)),
        (&cases[2], tally(2, 3)),
        (&cases[3], tally(0, 3)),
    ];
    let r = Report::new("deploy", "Ship it", 0.5, tallies, Spend::default());
    let passes: Vec<bool> = r.results.iter().map(|q| q.pass).collect();
    assert_eq!(passes, [true, false, false, true]);
    assert!((r.results[1].trigger_rate - 1.0 / 3.0).abs() < 1e-12);
    // 4 wanted triggers of 6 triggers; 4 of 6 runs that should trigger did.
    assert!((r.summary.precision - 4.0 / 6.0).abs() < 1e-12);
    assert!((r.summary.recall - 4.0 / 6.0).abs() < 1e-12);
    assert_eq!(
        (r.summary.total, r.summary.passed, r.summary.failed),
        (4, 2, 2)
    );
    assert_eq!(r.requests, 12);
    assert_eq!(r.usage.prompt_tokens, 40);
    assert!(!r.all_passed());
    // The threshold itself passes a query that should trigger, and fails one that should not.
    let edge = vec![(&cases[0], tally(1, 2)), (&cases[2], tally(1, 2))];
    let r = Report::new("deploy", "Ship it", 0.5, edge, Spend::default());
    assert_eq!(
        r.results.iter().map(|q| q.pass).collect::<Vec<_>>(),
        [true, false]
    );
    // Nothing triggered, nothing wanted: both figures are 1, as skill-creator counts them.
    let none = vec![(&cases[3], tally(0, 3))];
    let r = Report::new("deploy", "Ship it", 0.5, none, Spend::default());
    assert_eq!((r.summary.precision, r.summary.recall), (1.0, 1.0));
    assert!(r.all_passed());
}

#[test]
fn a_catalog_that_does_not_show_the_whole_description_is_said() {
    let reg = SkillRegistry::new([skill("deploy", "Ship it to production"), skill("dep", "x")]);
    let full = reg.catalog(skills::DEFAULT_CATALOG_BUDGET);
    assert_eq!(catalog_note(&full, "deploy", "Ship it to production"), None);
    assert_eq!(catalog_note(&full, "dep", "x"), None);
    // Cut evenly by the budget: the line is there, shorter.
    let cut = reg.catalog(full.chars().count() - 5);
    assert!(cut.contains("- deploy: Ship it to pro"), "{cut}");
    let note = catalog_note(&cut, "deploy", "Ship it to production").expect("a note");
    assert!(
        note.starts_with("the catalog shows skill deploy's description cut to"),
        "{note}"
    );
    // Names only: no description at all.
    let names = format!("{}\n\n- dep\n- deploy", skills::catalog::CATALOG_INTRO);
    assert!(catalog_note(&names, "deploy", "Ship it to production")
        .expect("a note")
        .contains("cut to 0 of its 21 characters"));
    assert!(
        catalog_note(skills::catalog::NO_SKILLS, "deploy", "Ship it")
            .expect("a note")
            .starts_with("skill deploy is not listed in the catalog")
    );
}
