//! hx in Harbor, the framework benchmarks run agents in: `harbor run` as a user runs it, with
//! the adapter of `integrations/harbor` (`-a hx_harbor:HxAgent`), on the tasks of
//! `bench/tasks`, in its engine-free environment (`-e hx_harbor.host:HostEnvironment`),
//! against the fake server on loopback. Each trial is read back from the job folder Harbor
//! writes: its reward, the tokens and cost the adapter reported, its exception.
//!
//! Needs a Python with Harbor and the adapter installed, named by `HX_TEST_HARBOR_PYTHON`
//! (`.ci/run` makes one), and bubblewrap. Without the variable the tests say so and pass.

use crate::support::{
    mcp, messages, system_prompt, tool_names, tool_results, Call, FakeServer, Recorded, Reply,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const TASKS: [&str; 3] = ["create-file", "fix-failing-test", "release-notes-skill"];
/// Usage every scripted reply reports (the fake's default): prompt, cache hits, completion.
const USAGE: (u64, u64, u64) = (1200, 1024, 150);
/// deepseek-flash's off-peak prices per token (README, Cost): cache hit, miss, output. In
/// DeepSeek's peak hours each is twice that.
const PRICE: (f64, f64, f64) = (0.003e-6, 0.15e-6, 0.60e-6);
/// Model requests of each task's script below.
const REQUESTS: [(&str, u64); 3] = [
    ("create-file", 3),
    ("fix-failing-test", 3),
    ("release-notes-skill", 3),
];
/// One `harbor run` of three trials takes seconds; this bounds a hung one.
const JOB_TIMEOUT: Duration = Duration::from_secs(600);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Harbor's Python, or None (with the reason printed) when this machine has none.
fn harbor_python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("HX_TEST_HARBOR_PYTHON") else {
        eprintln!(
            "skipped: HX_TEST_HARBOR_PYTHON is not set (.ci/run sets it to a Python >= 3.12 \
             with harbor and ./integrations/harbor installed)"
        );
        return None;
    };
    let python = PathBuf::from(python);
    let check = Command::new(&python)
        .args(["-c", "import harbor, hx_harbor, hx_harbor.host"])
        .output()
        .expect("run HX_TEST_HARBOR_PYTHON");
    assert!(
        check.status.success(),
        "HX_TEST_HARBOR_PYTHON={} cannot import harbor and hx_harbor: {}",
        python.display(),
        String::from_utf8_lossy(&check.stderr)
    );
    Some(python)
}

/// One `harbor run`, and the folder it wrote its job into.
struct Job {
    out: Output,
    dir: PathBuf,
    _root: tempfile::TempDir,
}

impl Job {
    fn dump(&self) -> String {
        format!(
            "harbor exited {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.out.status,
            String::from_utf8_lossy(&self.out.stdout),
            String::from_utf8_lossy(&self.out.stderr)
        )
    }

    /// Each trial's result.json, by task name.
    fn trials(&self) -> BTreeMap<String, Value> {
        let mut trials = BTreeMap::new();
        let entries = std::fs::read_dir(&self.dir)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", self.dir.display(), self.dump()));
        for entry in entries {
            let path = entry.expect("job folder entry").path().join("result.json");
            if let Ok(text) = std::fs::read_to_string(&path) {
                let result: Value = serde_json::from_str(&text).expect("trial result.json");
                // `hx/create-file`: the [task] name of bench/tasks/create-file.
                let name = result["task_name"].as_str().expect("task_name");
                let task = name.rsplit('/').next().unwrap_or(name).to_string();
                trials.insert(task, result);
            }
        }
        trials
    }

    /// The job's own result.json.
    fn result(&self) -> Value {
        let text = std::fs::read_to_string(self.dir.join("result.json"))
            .unwrap_or_else(|e| panic!("job result.json: {e}\n{}", self.dump()));
        serde_json::from_str(&text).expect("job result.json")
    }
}

/// `harbor run -p PATH -e hx_harbor.host:HostEnvironment -n 1 ARGS`, with the variables
/// of `env` in an --env-file, as a user keeps a key.
fn harbor_run(python: &Path, path: &Path, env: &[(&str, &str)], args: &[&str]) -> Job {
    let root = tempfile::tempdir().expect("temp folder");
    let env_file = root.path().join("harbor.env");
    let lines: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(&env_file, lines).expect("write the env file");
    let jobs = root.path().join("jobs");
    let harbor = python.with_file_name("harbor");
    let mut command = Command::new(&harbor);
    command
        .arg("run")
        .arg("-p")
        .arg(path)
        .args([
            "-e",
            "hx_harbor.host:HostEnvironment",
            "-n",
            "1",
            "-y",
            "-q",
        ])
        .args(["--job-name", "job", "-o"])
        .arg(&jobs)
        .arg("--env-file")
        .arg(&env_file)
        .args(args)
        .current_dir(root.path())
        // Harbor's caches and settings in a home of the test's own; no request at start.
        .env("HOME", root.path())
        .env("HARBOR_TELEMETRY", "0")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("DEEPSEEK_BASE_URL");
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", harbor.display()));
    let out = wait(child, JOB_TIMEOUT);
    Job {
        out,
        dir: jobs.join("job"),
        _root: root,
    }
}

fn wait(mut child: std::process::Child, timeout: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait for harbor").is_none() {
        if start.elapsed() > timeout {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().expect("harbor's output")
}

fn hx_args<'a>(hx: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-a",
        "hx_harbor:HxAgent",
        "-m",
        "deepseek/deepseek-flash",
        "--ak",
        hx,
    ];
    args.extend_from_slice(extra);
    args
}

fn hx_binary_arg() -> String {
    format!("hx_binary={}", env!("CARGO_BIN_EXE_hx"))
}

fn reward(trial: &Value) -> Option<f64> {
    trial["verifier_result"]["rewards"]["reward"].as_f64()
}

/// The text of the request's first user message: the task's instruction.
fn task_of(req: &Recorded) -> String {
    messages(&req.body)
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply::tool_calls(vec![Call::new(id, name, &args.to_string())])
}

/// The model's side of the three tasks, step by step. Each step checks what the previous one
/// brought back, and answers wrongly when it is not there, so a trial passes only when the
/// environment, the adapter and hx did their part: the test ran in the task's folder, the
/// skill was in the catalog and its body came back from load_skill.
fn script(req: &Recorded) -> Reply {
    let task = task_of(req);
    let step = messages(&req.body)
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    let last = tool_results(&req.body).pop().unwrap_or_default();
    if task.contains("greeting.txt") {
        // This trial also has an MCP server of the job's (--mcp-config): its tool first.
        return match step {
            0 if tool_names(&req.body).contains(&"mcp__probe__echo".to_string()) => {
                call("call_1", "mcp__probe__echo", json!({"text": "from harbor"}))
            }
            0 => Reply::text("The probe MCP server is not there."),
            1 if last.contains("echo: from harbor") => call(
                "call_2",
                "write_file",
                json!({"path": "greeting.txt", "content": "Hello, Harbor!\n"}),
            ),
            1 => Reply::text(&format!("The MCP call failed: {last}")),
            _ => Reply::text("Created greeting.txt."),
        };
    }
    if task.contains("calc.py") {
        return match step {
            0 => call(
                "call_1",
                "bash",
                json!({"command": "python3 -m unittest 2>&1 | tail -n 3"}),
            ),
            1 if last.contains("FAILED (failures=1)") => call(
                "call_2",
                "edit_file",
                json!({"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}),
            ),
            1 => Reply::text(&format!("The tests did not run: {last}")),
            _ => Reply::text("Fixed add: it subtracted."),
        };
    }
    if task.contains("release note") {
        return match step {
            0 if system_prompt(&req.body).contains("- release-notes:") => {
                call("call_1", "load_skill", json!({"name": "release-notes"}))
            }
            0 => Reply::text("There is no release-notes skill."),
            1 if last.contains("| 4 | Kestrel |") => call(
                "call_2",
                "write_file",
                json!({"path": "RELEASE.md", "content": "# Release 2.4.0 \"Kestrel\"\n\n## Changes\n- Faster startup\n- Fix crash on empty input\n\nSigned-off-by: release-bot <release@hx.invalid>\n"}),
            ),
            1 => Reply::text(&format!("The skill did not load: {last}")),
            _ => Reply::text("Wrote RELEASE.md."),
        };
    }
    Reply::text(&format!("unknown task: {task}"))
}

/// What `requests` requests cost when each is priced off-peak or at DeepSeek's peak (twice
/// that): one of these, exactly, whichever hours the run fell in.
fn possible_costs(requests: u64) -> Vec<f64> {
    let (prompt, hit, out) = USAGE;
    let one = hit as f64 * PRICE.0 + (prompt - hit) as f64 * PRICE.1 + out as f64 * PRICE.2;
    (0..=requests)
        .map(|peak| one * (requests + peak) as f64)
        .collect()
}

fn assert_cost(what: &str, cost: &Value, requests: u64) {
    let cost = cost
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no cost_usd"));
    let possible = possible_costs(requests);
    assert!(
        possible.iter().any(|c| (c - cost).abs() < 1e-12),
        "{what}: cost_usd {cost}, expected one of {possible:?}"
    );
}

#[test]
fn the_adapters_own_tests_pass() {
    let Some(python) = harbor_python() else {
        return;
    };
    let out = Command::new(&python)
        .args(["-m", "unittest", "discover", "-s"])
        .arg(repo().join("integrations/harbor/tests"))
        .env("HARBOR_TELEMETRY", "0")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the adapter's unit tests");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains("\nOK") && !stderr.contains("Ran 0 tests"),
        "{stderr}"
    );
}

#[test]
fn oracle_solves_every_task() {
    let Some(python) = harbor_python() else {
        return;
    };
    let job = harbor_run(&python, &repo().join("bench/tasks"), &[], &["-a", "oracle"]);
    assert!(job.out.status.success(), "{}", job.dump());
    let trials = job.trials();
    assert_eq!(trials.keys().collect::<Vec<_>>(), TASKS, "{}", job.dump());
    for (task, trial) in &trials {
        assert_eq!(reward(trial), Some(1.0), "{task}: {trial:#}");
        assert!(trial["exception_info"].is_null(), "{task}: {trial:#}");
    }
}

#[test]
fn hx_solves_every_task_and_reports_its_usage() {
    let Some(python) = harbor_python() else {
        return;
    };
    let server = FakeServer::start_with(script);
    let url = server.url();
    let hx = hx_binary_arg();
    // An MCP server for every trial, as `--mcp-config` gives one (a task's
    // [[environment.mcp_servers]] go the same way). The host environment shows this
    // machine's files read-only, but has a /tmp and /root of its own: the server is copied
    // where it can be seen, whatever folder the checkout is in.
    let probe = tempfile::tempdir_in("/var/tmp").expect("a folder in /var/tmp");
    let probe_server = probe.path().join("mcp_test_server");
    std::fs::copy(mcp::server_path(), &probe_server).expect("copy the MCP test server");
    let mcp_config = probe.path().join("mcp.json");
    let mcp_json = json!({"mcpServers": {"probe": {"command": probe_server, "args": []}}});
    std::fs::write(&mcp_config, mcp_json.to_string()).expect("write the MCP config");
    let mcp_config = mcp_config.to_str().expect("a UTF-8 path");
    let job = harbor_run(
        &python,
        &repo().join("bench/tasks"),
        &[
            ("DEEPSEEK_API_KEY", "sk-harbor-test"),
            ("DEEPSEEK_BASE_URL", &url),
        ],
        &hx_args(&hx, &["--mcp-config", mcp_config]),
    );
    assert!(job.out.status.success(), "{}", job.dump());
    let trials = job.trials();
    assert_eq!(trials.keys().collect::<Vec<_>>(), TASKS, "{}", job.dump());
    let (prompt, hit, out) = USAGE;
    for (task, requests) in REQUESTS {
        let trial = &trials[task];
        let agent = &trial["agent_result"];
        assert_eq!(
            reward(trial),
            Some(1.0),
            "{task}: {trial:#}\n{}",
            job.dump()
        );
        assert!(trial["exception_info"].is_null(), "{task}: {trial:#}");
        assert_eq!(trial["agent_info"]["name"], "hx", "{task}");
        assert_eq!(
            [
                &agent["n_input_tokens"],
                &agent["n_cache_tokens"],
                &agent["n_output_tokens"]
            ],
            [
                &json!(prompt * requests),
                &json!(hit * requests),
                &json!(out * requests)
            ],
            "{task}: {agent:#}"
        );
        assert_cost(task, &agent["cost_usd"], requests);
        assert_eq!(agent["metadata"]["hx_exit_code"], 0, "{task}: {agent:#}");
        assert!(
            agent["metadata"]["hx_session_id"].is_string(),
            "{task}: {agent:#}"
        );
    }
    // The job's totals add the trials' up.
    let total: u64 = REQUESTS.iter().map(|(_, n)| n).sum();
    let stats = &job.result()["stats"];
    assert_eq!(stats["n_input_tokens"], json!(prompt * total), "{stats:#}");
    assert_eq!(stats["n_cache_tokens"], json!(hit * total), "{stats:#}");
    assert_eq!(stats["n_output_tokens"], json!(out * total), "{stats:#}");
    assert_cost("job", &stats["cost_usd"], total);
    assert_eq!(server.requests().len() as u64, total);
    // Every request went out as hx sends it: the model named, hx's sandbox off.
    for req in server.requests() {
        assert_eq!(req.body["model"], "deepseek-flash");
        assert_eq!(req.header("authorization"), Some("Bearer sk-harbor-test"));
    }

    // Each trial's trajectory, as the adapter exported it, passes Harbor's own validator.
    for task in TASKS {
        let trial_dir = job
            .dir
            .join(trials[task]["trial_name"].as_str().expect("trial_name"));
        let trajectory = trial_dir.join("agent/trajectory.json");
        assert!(trajectory.is_file(), "{task}: no {}", trajectory.display());
        let check = Command::new(&python)
            .args(["-m", "harbor.utils.trajectory_validator"])
            .arg(&trajectory)
            .output()
            .expect("run the validator");
        assert!(
            check.status.success(),
            "{task}: Harbor's validator refused {}: {}{}",
            trajectory.display(),
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[test]
fn a_rate_limit_is_harbors_rate_limit_error() {
    let Some(python) = harbor_python() else {
        return;
    };
    let server = FakeServer::start_with(|_| {
        Reply::status(
            429,
            r#"{"error":{"message":"Rate limit reached for requests","type":"rate_limit_error"}}"#,
        )
    });
    let url = server.url();
    let hx = hx_binary_arg();
    let job = harbor_run(
        &python,
        &repo().join("bench/tasks/create-file"),
        &[
            ("DEEPSEEK_API_KEY", "sk-harbor-test"),
            ("DEEPSEEK_BASE_URL", &url),
        ],
        // No retry in hx: Harbor's --max-retries is the place for them.
        &hx_args(&hx, &["--ak", "retries=0"]),
    );
    assert!(job.out.status.success(), "{}", job.dump());
    let trials = job.trials();
    let trial = &trials["create-file"];
    assert_eq!(
        trial["exception_info"]["exception_type"], "ApiRateLimitError",
        "{trial:#}"
    );
    let message = trial["exception_info"]["exception_message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("429"), "{message}");
    // The verifier still graded what the agent left: nothing.
    assert_eq!(reward(trial), Some(0.0), "{trial:#}");
    let metadata = &trial["agent_result"]["metadata"];
    assert_eq!(metadata["hx_exit_code"], 1, "{metadata:#}");
    // hx's turn.failed names the kind and status of its error; the adapter classifies from
    // them.
    let error = &metadata["hx_error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("429"),
        "{error:#}"
    );
    assert_eq!(
        (&error["kind"], &error["status"]),
        (&json!("rate_limit"), &json!(429))
    );
    assert_eq!(server.requests().len(), 1, "retries = 0 sends one request");
}

#[test]
fn a_missing_key_or_binary_stops_the_job_before_any_trial() {
    let Some(python) = harbor_python() else {
        return;
    };
    let task = repo().join("bench/tasks/create-file");
    let hx = hx_binary_arg();
    let no_key = harbor_run(&python, &task, &[], &hx_args(&hx, &[]));
    let stdout = String::from_utf8_lossy(&no_key.out.stdout);
    assert_eq!(no_key.out.status.code(), Some(1), "{}", no_key.dump());
    assert!(
        stdout.contains("hx needs DEEPSEEK_API_KEY for provider deepseek"),
        "{}",
        no_key.dump()
    );
    assert!(!no_key.dir.exists() || no_key.trials().is_empty());

    let key = [("DEEPSEEK_API_KEY", "sk-harbor-test")];
    let missing = "hx_binary=/nonexistent/hx";
    let no_binary = harbor_run(&python, &task, &key, &hx_args(missing, &[]));
    assert_eq!(no_binary.out.status.code(), Some(1), "{}", no_binary.dump());
    assert!(
        String::from_utf8_lossy(&no_binary.out.stdout)
            .contains("--ak hx_binary=/nonexistent/hx: no such file"),
        "{}",
        no_binary.dump()
    );
}
