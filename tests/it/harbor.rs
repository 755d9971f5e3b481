//! hx in Harbor, the framework benchmarks run agents in: `harbor run` as a user runs it, with
//! the adapter of `integrations/harbor` (`-a hx_harbor:HxAgent`), on the tasks of
//! `bench/tasks`, in its engine-free environment (`-e hx_harbor.host:HostEnvironment`),
//! against the fake server on loopback. Each trial is read back from the job folder Harbor
//! writes: its reward, the tokens and cost the adapter reported, its exception.
//!
//! Harbor's own ACP agent (`-a acp`) runs hx the same way from its ACP registry entry,
//! `integrations/acp/agent.json`.
//!
//! Needs a Python with Harbor, the adapter and `agent-client-protocol` (the ACP agent's
//! runner) installed, named by `HX_TEST_HARBOR_PYTHON` (`.ci/run` makes one), and
//! bubblewrap. Without the variable the tests say so and pass.

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
/// deepseek-v4-pro's, the same way.
const PRO_PRICE: (f64, f64, f64) = (0.022e-6, 0.66e-6, 1.98e-6);
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

/// What `requests` requests cost at `price` when each is priced off-peak or at DeepSeek's
/// peak (twice that): one of these, exactly, whichever hours the run fell in.
fn possible_costs(requests: u64, price: (f64, f64, f64)) -> Vec<f64> {
    let (prompt, hit, out) = USAGE;
    let one = hit as f64 * price.0 + (prompt - hit) as f64 * price.1 + out as f64 * price.2;
    (0..=requests)
        .map(|peak| one * (requests + peak) as f64)
        .collect()
}

fn assert_cost(what: &str, cost: &Value, requests: u64) {
    assert_cost_at(what, cost, requests, PRICE);
}

fn assert_cost_at(what: &str, cost: &Value, requests: u64, price: (f64, f64, f64)) {
    let cost = cost
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no cost_usd"));
    let possible = possible_costs(requests, price);
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

/// The model Harbor's ACP agent asks hx for. hx starts a session with its configured model,
/// deepseek-flash; a request naming this one shows that Harbor's choice went through
/// `session/set_config_option` to the server.
const ACP_MODEL: &str = "deepseek-v4-pro";
/// The folder the hx under test is in, inside the environment, before the system's.
const ACP_BIN: &str = "/opt/hx/bin";

/// What a task's image would give Harbor's ACP agent and the host environment cannot, in a
/// folder bound as the environment's `/opt` (Harbor's `--mounts`, which the host environment
/// binds as a container engine would), with the `--mounts` that bring it in.
///
/// - `hx` on the `PATH`, as the registry entry's `local` distribution runs it:
///   `/opt/hx/bin/hx`, a link to the binary under test, whose folder is bound read-only at
///   its own path, wherever the checkout is (the host environment hides this machine's /tmp
///   and /root).
/// - `apt-get`: the ACP agent's setup runs `apt-get update` and `apt-get install python3
///   curl ca-certificates tar` first, which cannot write this machine's /usr here; those
///   are on this machine already, so a stand-in beside `hx` answers.
/// - The runner's venv, `/opt/harbor-acp-venv`, which the setup keeps when its Python is
///   3.12 or newer and imports `acp`, rather than downloading uv and a Python: a venv of
///   Harbor's own Python whose packages (agent-client-protocol among them) are Harbor's
///   venv's, both bound read-only at the paths the venv names. uv is a stand-in that says
///   so if it is ever run.
fn acp_stage(python: &Path) -> (tempfile::TempDir, String) {
    let stage = tempfile::tempdir().expect("a stage folder");
    let opt = stage.path().join("opt");
    let bin = opt.join("hx/bin");
    std::fs::create_dir_all(&bin).expect("mkdir opt/hx/bin");
    let hx = Path::new(env!("CARGO_BIN_EXE_hx"));
    std::os::unix::fs::symlink(hx, bin.join("hx")).expect("link hx");
    let hx_dir = hx
        .parent()
        .expect("hx's folder")
        .to_str()
        .expect("a UTF-8 path");
    write_script(
        &bin.join("apt-get"),
        "#!/bin/sh\n# tests/it/harbor.rs: nothing can be installed in the host environment, and \
         what Harbor's ACP setup asks for is on this machine.\necho \"apt-get stand-in: $*\" >&2\n",
    );
    let tools = opt.join("harbor-acp-tools");
    std::fs::create_dir_all(&tools).expect("mkdir opt/harbor-acp-tools");
    write_script(
        &tools.join("uv"),
        "#!/bin/sh\necho \"uv stand-in: offline, the runner's venv is in place: $*\" >&2\nexit 1\n",
    );
    std::fs::create_dir_all(opt.join("harbor-acp-python")).expect("mkdir harbor-acp-python");
    std::fs::create_dir_all(opt.join("harbor-site-packages")).expect("mkdir site-packages");

    let where_ = Command::new(python)
        .args([
            "-c",
            "import sys, sysconfig; print(sys.base_prefix); print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .expect("ask Harbor's Python where it is");
    let where_ = String::from_utf8_lossy(&where_.stdout).into_owned();
    let mut lines = where_.lines();
    let (base_prefix, site_packages) = (
        lines.next().expect("sys.base_prefix").to_string(),
        lines.next().expect("purelib").to_string(),
    );
    let venv = opt.join("harbor-acp-venv");
    let made = Command::new(python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .expect("make the runner's venv");
    assert!(
        made.status.success(),
        "python -m venv: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    // Its site-packages, as its Python names it (lib/python3.X/site-packages).
    let venv_site = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .expect("ask the runner's venv for its site-packages");
    let venv_site = PathBuf::from(String::from_utf8_lossy(&venv_site.stdout).trim());
    assert!(venv_site.is_dir(), "no {}", venv_site.display());
    // Where Harbor's venv's packages are bound in the environment.
    std::fs::write(venv_site.join("harbor.pth"), "/opt/harbor-site-packages\n")
        .expect("write harbor.pth");

    let bind = |source: &str, target: &str, read_only: bool| {
        let mut mount = json!({"type": "bind", "source": source, "target": target});
        if read_only {
            mount["read_only"] = json!(true);
        }
        mount
    };
    let mounts = json!([
        bind(opt.to_str().expect("a UTF-8 path"), "/opt", false),
        bind(hx_dir, hx_dir, true),
        bind(&site_packages, "/opt/harbor-site-packages", true),
        bind(&base_prefix, &base_prefix, true),
    ]);
    (stage, mounts.to_string())
}

fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

#[test]
fn harbors_acp_agent_runs_hx_from_its_registry_entry() {
    let Some(python) = harbor_python() else {
        return;
    };
    let check = Command::new(&python)
        .args(["-c", "import acp"])
        .output()
        .expect("run HX_TEST_HARBOR_PYTHON");
    assert!(
        check.status.success(),
        "HX_TEST_HARBOR_PYTHON={} cannot import acp, the runner of Harbor's ACP agent: pip \
         install agent-client-protocol into it, as .ci/run does: {}",
        python.display(),
        String::from_utf8_lossy(&check.stderr)
    );
    let server = FakeServer::start_with(|req| {
        // A request for any other model gets an answer that leaves the test failing.
        if req.body["model"] != ACP_MODEL {
            return Reply::text(&format!("wrong model: {}", req.body["model"]));
        }
        script(req)
    });
    let url = server.url();
    let (_stage, mounts) = acp_stage(&python);
    let entry = repo().join("integrations/acp/agent.json");
    let entry = format!("registry_entry_path={}", entry.display());
    let model = format!("deepseek/{ACP_MODEL}");
    let path =
        format!("PATH={ACP_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    let job = harbor_run(
        &python,
        &repo().join("bench/tasks/fix-failing-test"),
        // The key in the env file, as a user keeps it; `--ae` below hands it to the agent.
        &[
            ("DEEPSEEK_API_KEY", "sk-harbor-test"),
            ("DEEPSEEK_BASE_URL", &url),
        ],
        &[
            "-a",
            "acp",
            "--ak",
            &entry,
            // hx's one auth method (of kind `agent`, which Harbor's `auto` policy passes
            // over): Harbor calls `authenticate`, which hx answers only when the key is set.
            "--ak",
            "authenticate_method_id=api-key",
            "-m",
            &model,
            // Harbor's ACP agent passes into the environment only what --ae gives it.
            "--ae",
            "DEEPSEEK_API_KEY=${DEEPSEEK_API_KEY}",
            "--ae",
            "DEEPSEEK_BASE_URL=${DEEPSEEK_BASE_URL}",
            "--ae",
            &path,
            "--mounts",
            &mounts,
        ],
    );
    assert!(job.out.status.success(), "{}", job.dump());
    let trials = job.trials();
    let trial = trials
        .get("fix-failing-test")
        .unwrap_or_else(|| panic!("no trial\n{}", job.dump()));
    let trial_dir = job
        .dir
        .join(trial["trial_name"].as_str().expect("trial_name"));
    let summary = std::fs::read_to_string(trial_dir.join("agent/acp-summary.json"))
        .unwrap_or_else(|e| panic!("acp-summary.json: {e}\n{trial:#}\n{}", job.dump()));
    let summary: Value = serde_json::from_str(&summary).expect("acp-summary.json");
    assert_eq!(
        reward(trial),
        Some(1.0),
        "{trial:#}\n{summary:#}\n{}",
        job.dump()
    );
    assert!(trial["exception_info"].is_null(), "{trial:#}");
    assert_eq!(trial["agent_info"]["name"], "hx", "{trial:#}");
    assert_eq!(trial["agent_info"]["version"], env!("CARGO_PKG_VERSION"));

    // Every chat request named the model Harbor asked for, with the key it passed.
    let requests = server.completions();
    let (prompt, hit, out) = USAGE;
    let n = requests.len() as u64;
    assert_eq!(n, 3, "{summary:#}");
    for req in &requests {
        assert_eq!(req.body["model"], ACP_MODEL);
        assert_eq!(req.header("authorization"), Some("Bearer sk-harbor-test"));
    }

    // The figures Harbor took from the prompt's `usage` and the last `usage_update`'s cost.
    let agent = &trial["agent_result"];
    assert_eq!(
        [
            &agent["n_input_tokens"],
            &agent["n_cache_tokens"],
            &agent["n_output_tokens"]
        ],
        [&json!(prompt * n), &json!(hit * n), &json!(out * n)],
        "{agent:#}"
    );
    assert_cost_at("acp", &agent["cost_usd"], n, PRO_PRICE);

    // The model was set through the session's config option: Harbor's summary says by
    // which mechanism, and result.json keeps hx's answer.
    assert_eq!(
        summary["set_model_mechanism"], "session_config_option",
        "{summary:#}"
    );
    let acp = &agent["metadata"]["acp"];
    assert_eq!(acp["requested_model"], model.as_str(), "{acp:#}");
    assert_eq!(acp["resolved_session_model_id"], ACP_MODEL, "{acp:#}");
    assert!(acp["set_model_error"].is_null(), "{acp:#}");
    let options = acp["set_model_response"]["configOptions"]
        .as_array()
        .unwrap_or_else(|| panic!("no configOptions: {acp:#}"));
    let model_option = options
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap_or_else(|| panic!("no model option: {acp:#}"));
    assert_eq!(model_option["currentValue"], ACP_MODEL, "{model_option:#}");
    assert_eq!(acp["registry_entry_id"], "hx", "{acp:#}");
    assert_eq!(acp["selected_distribution"], "local", "{acp:#}");
    assert_eq!(acp["selected_authenticate_method_id"], "api-key", "{acp:#}");
    assert_eq!(acp["authenticate_response"], json!({}), "{acp:#}");
    assert_eq!(acp["prompt_response"]["stopReason"], "end_turn", "{acp:#}");

    // The trajectory Harbor made of hx's session updates passes Harbor's own validator.
    let trajectory = trial_dir.join("agent/trajectory.json");
    let check = Command::new(&python)
        .args(["-m", "harbor.utils.trajectory_validator"])
        .arg(&trajectory)
        .output()
        .expect("run the validator");
    assert!(
        check.status.success(),
        "Harbor's validator refused {}: {}{}",
        trajectory.display(),
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
