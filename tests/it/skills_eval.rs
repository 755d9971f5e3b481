//! `hx skills eval`: the real binary against a fake model that loads the skill for some
//! queries and answers others in text; what it sends (a real run's first request), what it
//! counts, what it prints and exits with, and that it runs nothing and writes nothing.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::mcp::{lingering_table, pids};
use crate::support::{
    ends_within, system_prompt, tool_names, Call, FakeServer, Hx, Recorded, Reply, Run,
};
use serde_json::{json, Value};

const DEPLOY: &str =
    "---\nname: deploy\ndescription: Ship the service to production.\n---\nRun scripts/ship.\n";
const REVIEW: &str = "---\nname: review\ndescription: Review a change.\n---\nRead the diff.\n";

/// The query of a recorded request: its user message.
fn query(r: &Recorded) -> String {
    r.body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn load(name: &str) -> Reply {
    Reply::tool_calls(vec![Call::new(
        "l1",
        "load_skill",
        &json!({ "name": name }).to_string(),
    )])
}

/// The scripted model, by what the query says: `[always]` loads deploy, `[twice]` loads it
/// on a query's first two requests only, `[other]` loads review, `[tools]` calls bash and
/// write_file, anything else is answered in text. Every reply reports 1,000,000 prompt
/// tokens (900,000 hits) and 10,000 out: $0.0237 off-peak.
fn model(delay: Duration) -> FakeServer {
    let seen: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    FakeServer::start_with(move |r| {
        let q = query(r);
        let n = {
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            let n = seen.entry(q.clone()).or_default();
            *n += 1;
            *n
        };
        let reply = if q.contains("[always]") || (q.contains("[twice]") && n <= 2) {
            load("deploy")
        } else if q.contains("[other]") {
            load("review")
        } else if q.contains("[tools]") {
            Reply::tool_calls(vec![
                Call::new("b1", "bash", r#"{"command": "touch ran-bash"}"#),
                Call::new(
                    "w1",
                    "write_file",
                    r#"{"path": "written.txt", "content": "x"}"#,
                ),
            ])
        } else {
            Reply::text("Here is my answer.")
        };
        reply.with_usage(1_000_000, 900_000, 10_000).delay(delay)
    })
}

fn fixture(hx: &mut Hx) {
    hx.write_file(".agents/skills/deploy/SKILL.md", DEPLOY)
        .write_file(".agents/skills/review/SKILL.md", REVIEW);
}

fn eval_set(cases: &[(&str, bool)]) -> String {
    let list: Vec<Value> = cases
        .iter()
        .map(|(q, t)| json!({"query": q, "should_trigger": t}))
        .collect();
    Value::Array(list).to_string()
}

/// Every file under `root` with its bytes: what a run must leave as it was.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.insert(path.display().to_string(), bytes);
            }
        }
    }
    out
}

/// `hx skills eval` with `words` (split at whitespace) after it.
fn eval(hx: &Hx, words: &str) -> Run {
    let args: Vec<&str> = ["skills", "eval"]
        .into_iter()
        .chain(words.split_whitespace())
        .collect();
    hx.run_args(&args)
}

#[test]
fn rates_passes_precision_recall_and_the_json_shape() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    let set = eval_set(&[
        ("ship the service [always]", true),
        ("roll out v2 [twice]", true),
        ("write a poem about the sea", false),
        ("look over my diff [other]", false),
        ("deploy the docs site [always]", false),
    ]);
    hx.write_file("set.json", &set);
    let run = eval(&hx, "deploy --eval-set set.json --json");
    // One query fails (it should not trigger, and always does): exit 1.
    run.assert_code(1);
    let out: Value = serde_json::from_str(&run.stdout).expect("one JSON object on stdout");
    assert_eq!(out["skill_name"], "deploy");
    assert_eq!(out["description"], "Ship the service to production.");
    let results = out["results"].as_array().expect("results");
    let row = |i: usize| {
        let r = &results[i];
        (
            r["query"].as_str().unwrap_or_default().to_string(),
            r["should_trigger"].as_bool(),
            r["triggers"].as_u64(),
            r["runs"].as_u64(),
            r["pass"].as_bool(),
        )
    };
    // In the eval set's order, whatever order they finished in.
    assert_eq!(
        (0..5).map(row).collect::<Vec<_>>(),
        [
            (
                "ship the service [always]".into(),
                Some(true),
                Some(3),
                Some(3),
                Some(true)
            ),
            (
                "roll out v2 [twice]".into(),
                Some(true),
                Some(2),
                Some(3),
                Some(true)
            ),
            (
                "write a poem about the sea".into(),
                Some(false),
                Some(0),
                Some(3),
                Some(true)
            ),
            (
                "look over my diff [other]".into(),
                Some(false),
                Some(0),
                Some(3),
                Some(true)
            ),
            (
                "deploy the docs site [always]".into(),
                Some(false),
                Some(3),
                Some(3),
                Some(false)
            ),
        ]
    );
    assert_eq!(results[0]["trigger_rate"], 1.0);
    assert_eq!(results[1]["trigger_rate"], 2.0 / 3.0);
    assert_eq!(results[2]["trigger_rate"], 0.0);
    for r in results {
        let keys: Vec<&str> = r
            .as_object()
            .expect("object")
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut keys = keys;
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "pass",
                "query",
                "runs",
                "should_trigger",
                "trigger_rate",
                "triggers"
            ]
        );
    }
    assert_eq!(out["summary"]["total"], 5);
    assert_eq!(out["summary"]["passed"], 4);
    assert_eq!(out["summary"]["failed"], 1);
    // 5 wanted triggers of 8; 5 of the 6 runs that should trigger did.
    assert_eq!(out["summary"]["precision"], 5.0 / 8.0);
    assert_eq!(out["summary"]["recall"], 5.0 / 6.0);
    assert_eq!(out["threshold"], 0.5);
    assert_eq!(out["requests"], 15);
    assert_eq!(
        server.requests().len(),
        15,
        "one request per run, nothing more"
    );
    // The tokens of every response, and what they cost at $0.0237 each.
    let usage = &out["usage"];
    assert_eq!(usage["input_tokens"], 15_000_000);
    assert_eq!(usage["cached_input_tokens"], 13_500_000);
    assert_eq!(usage["output_tokens"], 150_000);
    assert_eq!(usage["cost"], 0.3555);
    assert_eq!(usage["currency"], "USD");
    assert!(
        run.stderr
            .contains("hx: skill deploy: 5 queries x 3 runs = 15 requests to deepseek-flash, 4 queries at a time"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_text_report_and_exit_0_when_every_query_passes() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    let set = eval_set(&[
        ("ship the service [always]", true),
        ("write a poem\nabout the sea", false),
    ]);
    hx.write_file(".agents/skills/deploy/evals/trigger.json", &set)
        .args(["skills", "eval", "deploy", "--runs", "2"]);
    let run = hx.run();
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "PASS      2/2  should trigger      ship the service [always]",
            "PASS      0/2  should not trigger  write a poem about the sea",
            "deploy: 2 of 2 queries passed (threshold 0.5); precision 100%, recall 100%",
            "4 requests: prompt_tokens=4000000, cache_hit_tokens=3600000, \
             completion_tokens=40000, cost=$0.0948 cache=90%",
        ],
        "{}",
        run.stderr
    );
    // A rate equal to the threshold passes a query that should trigger.
    let run = eval(&hx, "deploy --runs 1 --threshold 1");
    run.assert_code(0);
    // And a threshold of 0 fails every query that should not trigger.
    let run = eval(&hx, "deploy --runs 1 --threshold 0");
    run.assert_code(1);
    assert!(
        run.stdout.contains("FAIL      0/1  should not trigger"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_request_is_a_real_runs_first_request_byte_for_byte() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    hx.write_file("AGENTS.md", "Be brief.\n");
    let q = "please ship the service to production";
    hx.args(["agent", q]);
    hx.run().assert_code(0);
    let agent = server.requests();
    assert_eq!(agent.len(), 1);
    hx.write_file("set.json", &eval_set(&[(q, false)]));
    let run = eval(&hx, "deploy --eval-set set.json --runs 1");
    run.assert_code(0);
    let all = server.requests();
    assert_eq!(all.len(), 2, "{}", run.stderr);
    // The same bytes: model, messages (the system prompt with the catalog and the project
    // instructions, the query), tools, settings.
    assert_eq!(all[1].raw_body, agent[0].raw_body);
    let system = system_prompt(&all[1].body);
    assert!(
        system.contains("- deploy: Ship the service to production."),
        "{system}"
    );
    assert!(system.contains("Be brief."), "{system}");
    // With an effort, the eval sends it as the run does.
    hx.clear_args().args(["agent", "--effort", "low", q]);
    hx.run().assert_code(0);
    let run = eval(&hx, "deploy --eval-set set.json --runs 1 --effort low");
    run.assert_code(0);
    let all = server.requests();
    assert_eq!(all.len(), 4);
    assert_eq!(all[3].raw_body, all[2].raw_body);
    assert_ne!(all[3].raw_body, all[1].raw_body);
}

#[test]
fn description_replaces_the_catalog_line_and_only_leaves_the_skill_alone() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    hx.write_file("set.json", &eval_set(&[("ship it [always]", true)]));
    // One argument, with a line break in it: made one line as discovery makes one.
    let run = hx.run_args(&[
        "skills",
        "eval",
        "deploy",
        "--eval-set=set.json",
        "--runs=1",
        "--json",
        "--description=Roll out\n  the web app.",
    ]);
    run.assert_code(0);
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(out["description"], "Roll out the web app.");
    let system = system_prompt(&server.requests()[0].body);
    assert!(
        system.contains("\n- deploy: Roll out the web app.\n"),
        "{system}"
    );
    assert!(!system.contains("Ship the service"), "{system}");
    assert!(system.contains("\n- review: Review a change."), "{system}");
    assert_eq!(hx.read_file(".agents/skills/deploy/SKILL.md"), DEPLOY);

    let run = eval(&hx, "deploy --eval-set set.json --runs 1 --only");
    run.assert_code(0);
    let system = system_prompt(&server.requests()[1].body);
    assert!(
        system.contains("\n- deploy: Ship the service to production."),
        "{system}"
    );
    assert!(!system.contains("review"), "{system}");
}

#[test]
fn nothing_runs_nothing_is_written_and_no_session_is_recorded() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    hx.write_file(
        ".agents/skills/deploy/evals/trigger.json",
        &eval_set(&[("tidy up the repo [tools]", false), ("ship [always]", true)]),
    );
    let root = hx.workspace().parent().expect("test root").to_path_buf();
    let before = tree(&root);
    let run = eval(&hx, "deploy");
    run.assert_code(0);
    // The calls were counted, not run: no result went back, no file appeared.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    assert!(reqs
        .iter()
        .all(|r| r.body["messages"].as_array().map(Vec::len) == Some(2)));
    assert!(!hx.workspace().join("ran-bash").exists());
    assert!(!hx.workspace().join("written.txt").exists());
    assert!(hx.session_files().is_empty());
    assert_eq!(tree(&root), before, "the eval changed a file");
}

#[test]
fn a_querys_runs_go_one_after_another_and_jobs_queries_at_once() {
    let server = model(Duration::from_millis(300));
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    let qs = ["a [never]", "b [never]", "c [never]", "d [never]"];
    let set: Vec<(&str, bool)> = qs.iter().map(|q| (*q, false)).collect();
    hx.write_file("set.json", &eval_set(&set));
    let run = eval(&hx, "deploy --eval-set set.json --runs 2");
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 8);
    // Each reply waits 300 ms before its headers: times of arrival tell what overlapped.
    let gap = Duration::from_millis(300);
    // The four queries' first requests all went before any of them was answered.
    let firsts: Vec<&Recorded> = qs
        .iter()
        .filter_map(|q| reqs.iter().find(|r| query(r) == *q))
        .collect();
    let start = firsts.iter().map(|r| r.arrived).min().expect("requests");
    assert!(firsts.iter().all(|r| r.arrived < start + gap));
    // Each query's second request went after its first was answered: a repeat of the request
    // the cache has just stored.
    for q in qs {
        let mine: Vec<&Recorded> = reqs.iter().filter(|r| query(r) == q).collect();
        assert_eq!(mine.len(), 2);
        assert!(mine[1].arrived >= mine[0].arrived + gap, "{q}");
    }
    // One job: no two requests overlap.
    let run = eval(&hx, "deploy --eval-set set.json --runs 1 --jobs 1");
    run.assert_code(0);
    let reqs = server.requests();
    let one = &reqs[8..];
    assert_eq!(one.len(), 4);
    for pair in one.windows(2) {
        assert!(pair[1].arrived >= pair[0].arrived + gap);
    }
}

#[test]
fn a_bad_eval_set_or_skill_is_a_usage_error_before_any_request() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    // What follows `hx skills eval`, and what the error says.
    let cases = [
        ("nope", "no skill is named nope; hx skills list lists them"),
        (
            "deploy",
            "skill deploy has no eval set: give one with --eval-set FILE, or write",
        ),
        (
            "deploy --eval-set missing.json",
            "missing.json: no such file",
        ),
        ("deploy --eval-set bad.json", "bad.json: not valid JSON ("),
        (
            "deploy --eval-set shape.json",
            "shape.json: entry 2 has no \"should_trigger\"",
        ),
        (
            "deploy --eval-set empty.json",
            "empty.json: the list is empty",
        ),
        (
            "deploy --eval-set ok.json --description=",
            "--description is empty",
        ),
        (
            "deploy --eval-set ok.json --threshold 1.5",
            "a rate between 0 and 1",
        ),
        ("deploy --eval-set ok.json --runs 0", "--runs"),
        ("deploy --eval-set ok.json --jobs 33", "--jobs"),
    ];
    hx.write_file("bad.json", "[{\"query\": ")
        .write_file(
            "shape.json",
            r#"[{"query": "a", "should_trigger": true}, {"query": "b"}]"#,
        )
        .write_file("empty.json", "[]")
        .write_file("ok.json", &eval_set(&[("a", true)]));
    for (args, said) in cases {
        let run = eval(&hx, args);
        run.assert_code(2);
        assert!(run.stderr.contains(said), "{args:?}: {}", run.stderr);
    }
    // A skill that did not parse is named as such.
    hx.write_file(
        ".agents/skills/broken/SKILL.md",
        "---\nname: broken\n---\nbody\n",
    );
    let run = eval(&hx, "broken --eval-set ok.json");
    run.assert_code(2);
    assert!(
        run.stderr.contains("skill broken is not loaded"),
        "{}",
        run.stderr
    );
    // A skill only the user invokes is never loaded by the model: nothing to measure.
    hx.write_file(
        ".agents/skills/ship/SKILL.md",
        "---\nname: ship\ndescription: Ship it.\ndisable-model-invocation: true\n---\nbody\n",
    );
    let run = eval(&hx, "ship --eval-set ok.json");
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("skill ship says disable-model-invocation: true"),
        "{}",
        run.stderr
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_failed_request_fails_the_eval() {
    let server = FakeServer::start_with(|_| {
        Reply::status(400, r#"{"error":{"message":"bad model","type":"invalid"}}"#)
    });
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    hx.write_file("set.json", &eval_set(&[("ship [always]", true)]));
    let run = eval(&hx, "deploy --eval-set set.json --json");
    run.assert_code(1);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("hx: query 1: API error 400: Bad Request: bad model"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests().len(), 1);
    // Without a key nothing is sent.
    hx.env_remove("DEEPSEEK_API_KEY");
    let run = eval(&hx, "deploy --eval-set set.json");
    run.assert_code(2);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn mcp_servers_tools_are_offered_as_in_a_run_and_the_servers_end_with_the_eval() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    // In the workspace, where the sandboxed server may write.
    let pid_file = hx.workspace().join("t.pid");
    hx.write_user_config("config.toml", &lingering_table("t", &pid_file));
    let q = "ship the service";
    hx.args(["agent", q]);
    hx.run().assert_code(0);
    std::fs::remove_file(&pid_file).expect("the run's server wrote its pids");
    hx.write_file("set.json", &eval_set(&[(q, false)]));
    let run = eval(&hx, "deploy --eval-set set.json --runs 1");
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.stderr);
    assert!(
        tool_names(&reqs[1].body).contains(&"mcp__t__echo".to_string()),
        "{}",
        reqs[1].body["tools"]
    );
    assert_eq!(reqs[1].raw_body, reqs[0].raw_body);
    // The server (and the child it leaves behind) ended with hx.
    let ps = pids(&pid_file);
    assert!(!ps.is_empty());
    for p in ps {
        assert!(
            ends_within(p, Duration::from_secs(10)),
            "pid {p} outlived hx"
        );
    }
}

#[test]
fn a_description_the_catalog_cuts_is_said_before_it_is_measured() {
    let server = model(Duration::ZERO);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    hx.write_file("set.json", &eval_set(&[("ship [always]", true)]));
    let run = eval(&hx, "deploy --eval-set set.json --runs 1");
    run.assert_code(0);
    assert!(!run.stderr.contains("catalog"), "{}", run.stderr);
    // A budget a little short of the whole catalog: every description is cut.
    let system = system_prompt(&server.requests()[0].body);
    let catalog = &system[system
        .find("These are the available skills.")
        .expect("catalog")..];
    let budget = catalog.trim_end().chars().count() - 10;
    hx.write_user_config(
        "config.toml",
        &format!("skills_catalog_budget = {budget}\n"),
    );
    let run = eval(&hx, "deploy --eval-set set.json --runs 1");
    run.assert_code(0);
    assert!(
        run.stderr.contains(
            "hx: warning: the catalog shows skill deploy's description cut to 20 of its 31 \
             characters (skills_catalog_budget)"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_querys_repeats_hit_the_prompt_cache_whole() {
    // DeepSeek's cache as the fake models it: a request hits a stored whole request input.
    let server = FakeServer::start_cached_with(|r| {
        if query(r).contains("[always]") {
            load("deploy")
        } else {
            Reply::text("Here is my answer.")
        }
    });
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    let set = eval_set(&[
        ("ship the service [always]", true),
        ("write a poem", false),
        ("tidy the readme", false),
    ]);
    hx.write_file("set.json", &set);
    let run = eval(&hx, "deploy --eval-set set.json --json");
    run.assert_code(0);
    let priced = server.cache().priced();
    assert_eq!(priced.len(), 9);
    let reqs = server.requests();
    for q in [
        "ship the service [always]",
        "write a poem",
        "tidy the readme",
    ] {
        let mine: Vec<_> = reqs
            .iter()
            .zip(&priced)
            .filter(|(r, _)| query(r) == q)
            .map(|(_, p)| *p)
            .collect();
        assert_eq!(mine.len(), 3);
        // The first of a query's runs may hit nothing of the others (their user messages
        // differ); the two after it hit their whole input.
        assert!(mine[0].hit < mine[0].prompt, "{q}: {mine:?}");
        assert!(mine[1..].iter().all(|p| p.hit == p.prompt), "{q}: {mine:?}");
    }
    let out: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let (input, hits) = priced
        .iter()
        .fold((0, 0), |(i, h), p| (i + p.prompt, h + p.hit));
    assert_eq!(out["usage"]["input_tokens"], input);
    assert_eq!(out["usage"]["cached_input_tokens"], hits);
}
