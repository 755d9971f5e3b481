//! End-to-end tests of the bash sandbox: the real binary, the fake server, the real kernel
//! (Landlock). Each asserts on the tool result hx sends back in the next request and on what
//! is, or is not, on disk.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::Stdio;

use crate::support::pty::run_on_terminal;
use crate::support::{outside_tmp, tool_results, Call, FakeServer, Hx, Reply, Run};
use serde_json::{json, Value};

const NOTE: &str = "[sandbox] hx's sandbox refused the write to ";

/// Runs one turn of bash calls and returns each call's tool message, in call order, with the
/// finished run.
fn bash_turn(hx: &mut Hx, commands: &[&str]) -> (Vec<String>, Run) {
    let calls: Vec<Call> = Call::bash_each(commands);
    let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "run the commands"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    (tool_results(&reqs[1].body), run)
}

/// A write the sandbox refused: the pod's read-only mounts answer `EROFS` first; Landlock,
/// where no pod could be made, `EACCES`.
fn assert_refused(result: &str, note: &str) {
    assert!(
        (result.contains("Permission denied") || result.contains("Read-only file system"))
            && result.ends_with("[exit code: 1]"),
        "{result}"
    );
    assert_eq!(result.matches("[sandbox]").count(), 1, "{result}");
    assert!(result.contains(note), "{result}");
}

#[test]
fn the_default_mode_confines_writes_to_the_workspace_and_tmp() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let ws = hx.workspace().to_path_buf();
    let top = ws.parent().expect("test root").to_path_buf();
    let elsewhere = top.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, ws.join("link")).expect("symlink");
    let (out, run) = bash_turn(
        &mut hx,
        &[
            "touch ../outside",
            "echo x > \"$HOME/x\"",
            "echo in > inside.txt && cat inside.txt",
            "f=$(mktemp /tmp/hx-sandbox-XXXXXX) && echo t > \"$f\" && cat \"$f\" && rm \"$f\"",
            "python3 -c \"open('../py_outside', 'w')\"",
            "echo x > link/through",
            "echo x > /dev/null && echo out > /dev/stdout && echo err > /dev/stderr",
        ],
    );
    let home = hx.home().to_path_buf();
    assert_refused(
        &out[0],
        &format!("{NOTE}{}:", top.join("outside").display()),
    );
    assert_refused(&out[1], &format!("{NOTE}{}:", home.join("x").display()));
    assert_eq!(out[2], "in\n");
    assert_eq!(out[3], "t\n");
    assert!(
        out[4].contains("PermissionError") || out[4].contains("Read-only file system"),
        "{}",
        out[4]
    );
    assert_refused(
        &out[4],
        &format!("{NOTE}{}:", top.join("py_outside").display()),
    );
    assert_refused(
        &out[5],
        &format!("{NOTE}{}:", elsewhere.join("through").display()),
    );
    assert_eq!(out[6], "out\nerr\n");
    for p in [
        top.join("outside"),
        home.join("x"),
        top.join("py_outside"),
        elsewhere.join("through"),
    ] {
        assert!(!p.exists(), "{} was created\n{}", p.display(), run.dump());
    }
    assert_eq!(hx.read_file("inside.txt"), "in\n");
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn read_only_refuses_writes_in_the_workspace_too() {
    let mut hx = Hx::new_offline();
    let out = {
        let server = FakeServer::start(vec![
            Reply::tool_calls(vec![
                Call::new(
                    "c0",
                    "bash",
                    &json!({"command": "echo x > a.txt"}).to_string(),
                ),
                Call::new(
                    "c1",
                    "bash",
                    &json!({"command": "touch /tmp/hx-read-only-$$"}).to_string(),
                ),
                Call::new(
                    "c2",
                    "bash",
                    &json!({"command": "echo x > /dev/null && echo fine"}).to_string(),
                ),
            ]),
            Reply::text("done"),
        ]);
        hx.env("DEEPSEEK_BASE_URL", server.url()).args([
            "agent",
            "--sandbox",
            "read-only",
            "write",
        ]);
        hx.run().assert_code(0);
        tool_results(&server.requests()[1].body)
    };
    for r in &out[..2] {
        assert_refused(r, "hx's sandbox is read-only for this run");
        assert!(r.contains("--sandbox workspace-write"), "{r}");
    }
    assert_eq!(out[2], "fine\n");
    assert!(!hx.workspace().join("a.txt").exists());
}

#[test]
fn off_allows_everything_by_flag_or_config() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let top = hx.workspace().parent().expect("root").to_path_buf();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c0",
            "bash",
            &json!({"command": "touch ../by_flag && echo x > \"$HOME/x\""}).to_string(),
        )]),
        Reply::text("done"),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "--sandbox", "off", "write"]);
    hx.run().assert_code(0);
    assert_eq!(tool_results(&server.requests()[1].body), ["(no output)"]);
    assert!(top.join("by_flag").exists() && hx.home().join("x").exists());

    hx.write_user_config("config.toml", "sandbox = \"off\"\n");
    hx.clear_args();
    let (out, _) = bash_turn(&mut hx, &["touch ../by_config"]);
    assert_eq!(out, ["(no output)"]);
    assert!(top.join("by_config").exists());
}

/// With `network = false` a connect to a server outside fails (the pod's network namespace
/// has only its own loopback), while binding a server of the command's own still works.
#[test]
fn network_false_refuses_tcp_connect_and_bind() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('connected')\""
    );
    let bind =
        "python3 -c \"import socket; socket.socket().bind(('127.0.0.1', 0)); print('bound')\"";

    let mut hx = Hx::new_offline();
    let (out, _) = bash_turn(&mut hx, &[&connect, bind]);
    assert_eq!(out, ["connected\n", "bound\n"]);
    listener.set_nonblocking(true).expect("nonblocking");
    while listener.accept().is_ok() {}

    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "[sandbox]\nnetwork = false\n");
    let (out, _) = bash_turn(&mut hx, &[&connect, bind]);
    assert!(
        out[0].contains("ConnectionRefusedError") && out[0].ends_with("[exit code: 1]"),
        "{}",
        out[0]
    );
    assert!(!out[0].contains("connected"), "{}", out[0]);
    assert_eq!(out[1], "bound\n");
    assert!(listener.accept().is_err(), "a connection reached the host");
}

#[test]
fn writable_roots_from_config_and_a_missing_one_warns_once() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let top = hx.workspace().parent().expect("root").to_path_buf();
    std::fs::create_dir_all(hx.home().join("cache")).expect("mkdir");
    std::fs::create_dir_all(top.join("sibling")).expect("mkdir");
    hx.write_user_config(
        "config.toml",
        "sandbox.writable_roots = [\"~/cache\", \"../sibling\", \"nope\"]\n",
    );
    let (out, run) = bash_turn(
        &mut hx,
        &[
            "echo a > \"$HOME/cache/a\" && echo b > ../sibling/b && echo ok",
            "echo c > \"$HOME/c\"",
        ],
    );
    assert_eq!(out[0], "ok\n");
    assert_refused(&out[1], NOTE);
    assert!(hx.home().join("cache/a").exists() && top.join("sibling/b").exists());
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].starts_with("hx: warning: sandbox.writable_roots: \"nope\""),
        "{}",
        warnings[0]
    );
}

#[test]
fn a_subagents_bash_is_confined_the_same_way() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let top = hx.workspace().parent().expect("root").to_path_buf();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "t1",
            "task",
            &json!({"description": "write", "prompt": "write outside"}).to_string(),
        )]),
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            &json!({"command": "touch ../from_child"}).to_string(),
        )]),
        Reply::text("the child could not write"),
        Reply::text("done"),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "delegate"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", run.dump());
    // The subagent's second request carries its bash result.
    let child = tool_results(&reqs[2].body);
    assert_eq!(child.len(), 1);
    assert_refused(
        &child[0],
        &format!("{NOTE}{}:", top.join("from_child").display()),
    );
    assert!(!top.join("from_child").exists());
}

/// Installs, in the child about to become hx, a seccomp filter that makes this machine look
/// like one without Landlock (`ENOSYS` to its three syscalls, as an old or unconfigured
/// kernel says) and, with `userns`, without user namespaces too (`EPERM` to `unshare` and
/// `clone` with `CLONE_NEWUSER`, as Ubuntu's AppArmor default or Docker's seccomp profile
/// answer; `ENOSYS` to `clone3`, whose flags a filter cannot read). Nothing in hx knows about
/// it: the shipped binary has no switch for this.
pub(crate) fn degrade(cmd: &mut std::process::Command, landlock: bool, userns: bool) {
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const NEVER: u32 = u32::MAX;
    let ld = 0x20; // BPF_LD | BPF_W | BPF_ABS
    let jeq = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    let jset = 0x45; // BPF_JMP | BPF_JSET | BPF_K
    let ret = 0x06; // BPF_RET | BPF_K
    let f = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    // landlock_create_ruleset, _add_rule and _restrict_self are 444-446 on every
    // architecture that has them.
    let ll = |n: u32| if landlock { n } else { NEVER };
    let ns = |n: libc::c_long| if userns { n as u32 } else { NEVER };
    let filter = vec![
        f(ld, 0, 0, 0),
        f(jeq, 10, 0, ll(444)),
        f(jeq, 9, 0, ll(445)),
        f(jeq, 8, 0, ll(446)),
        f(jeq, 3, 0, ns(libc::SYS_unshare)),
        f(jeq, 2, 0, ns(libc::SYS_clone)),
        f(jeq, 5, 0, ns(libc::SYS_clone3)),
        f(ret, 0, 0, RET_ALLOW),
        // The flags: the low half of the first argument.
        f(ld, 0, 0, 16),
        f(jset, 0, 1, libc::CLONE_NEWUSER as u32),
        f(ret, 0, 0, RET_ERRNO | libc::EPERM as u32),
        f(ret, 0, 0, RET_ALLOW),
        f(ret, 0, 0, RET_ERRNO | libc::ENOSYS as u32),
    ];
    // SAFETY: the closure makes two prctl calls with a filter made before the fork: no
    // allocation, nothing that is unsafe after fork.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// hx run where it has neither Landlock nor user namespaces (see [`degrade`]).
fn run_without_landlock(hx: &Hx) -> Run {
    run_degraded(hx, true, true)
}

pub(crate) fn run_degraded(hx: &Hx, landlock: bool, userns: bool) -> Run {
    let mut cmd = hx.command();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    degrade(&mut cmd, landlock, userns);
    let run = Run::wait(
        cmd.spawn().expect("spawn hx"),
        crate::support::DEFAULT_TIMEOUT,
    );
    assert!(!run.timed_out, "{}", run.dump());
    run
}

/// Without Landlock, writes are not confined and no note blames the sandbox, but the
/// commands' capabilities are still dropped.
#[test]
fn without_landlock_a_run_warns_once_and_bash_runs_without_capabilities_only() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let top = hx.workspace().parent().expect("root").to_path_buf();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new(
                "c0",
                "bash",
                &json!({"command": "touch ../one"}).to_string(),
            ),
            Call::new(
                "c1",
                "bash",
                &json!({"command": "touch ../two"}).to_string(),
            ),
            Call::new(
                "c2",
                "bash",
                &json!({"command": "grep CapEff /proc/self/status"}).to_string(),
            ),
        ]),
        Reply::text("done"),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "write"]);
    let run = run_without_landlock(&hx);
    run.assert_code(0);
    assert_eq!(
        tool_results(&server.requests()[1].body),
        ["(no output)", "(no output)", "CapEff:\t0000000000000000\n"]
    );
    assert!(top.join("one").exists() && top.join("two").exists());
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: warning:"))
        .collect();
    assert_eq!(
        warnings,
        [
            "hx: warning: the sandbox is partial: hx cannot make its pod of namespaces here \
          (unshare: Operation not permitted (os error 1)) and this kernel has no Landlock (it \
          needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK), so bash runs with only \
          its capabilities dropped: its writes, signals, abstract sockets, terminals, leftovers, \
          metadata, pathname sockets and git metadata are not confined (set sandbox = \"off\" to \
          silence this, or sandbox.required = true to refuse to run)"
        ],
        "{}",
        run.stderr
    );

    // `hx sandbox` says the same without an API key.
    hx.clear_args()
        .args(["sandbox", "--json"])
        .env_remove("DEEPSEEK_API_KEY");
    let run = run_without_landlock(&hx);
    run.assert_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["landlock_abi"], Value::Null);
    assert_eq!(v["enforcement"], "partial");
    for name in ["writes", "signals", "abstract_sockets"] {
        assert_eq!(v["protections"][name]["status"], "missing", "{v}");
        assert_eq!(
            v["protections"][name]["why"], "this kernel has no Landlock",
            "{v}"
        );
    }
    assert_eq!(v["protections"]["network"]["status"], "allowed", "{v}");
    assert_eq!(
        v["protections"]["capabilities"]["status"], "enforced",
        "{v}"
    );
}

#[test]
fn required_without_landlock_refuses_before_any_request() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    hx.write_user_config("config.toml", "[sandbox]\nrequired = true\n");
    let server = FakeServer::start(vec![Reply::text("never")]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "write"]);
    let run = run_without_landlock(&hx);
    run.assert_code(2);
    assert!(server.requests().is_empty());
    assert!(
        run.stderr.starts_with("hx: sandbox.required is set, but ")
            && run.stderr.contains("this kernel has no Landlock"),
        "{}",
        run.stderr
    );
    // With a kernel that has it, the same configuration runs.
    let (out, _) = bash_turn(hx.clear_args(), &["echo ok"]);
    assert_eq!(out, ["ok\n"]);
}

#[test]
fn hx_sandbox_shows_the_mode_its_source_and_the_roots() {
    let mut hx = Hx::new_offline();
    hx.env_remove("DEEPSEEK_API_KEY");
    std::fs::create_dir_all(hx.home().join("cache")).expect("mkdir");
    hx.write_user_config(
        "config.toml",
        "[sandbox]\nmode = \"workspace-write\"\nwritable_roots = [\"~/cache\"]\nnetwork = false\nrequired = true\n",
    );
    let config = hx.user_config_dir().join("config.toml");
    hx.args(["sandbox", "--json"]);
    let run = hx.run();
    run.assert_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    let ws = hx.workspace().canonicalize().expect("ws");
    assert_eq!(v["mode"], "workspace-write");
    assert_eq!(v["mode_source"], config.display().to_string());
    assert!(v["landlock_abi"].as_i64().is_some_and(|a| a >= 4), "{v}");
    assert_eq!(v["enforcement"], "full");
    assert_eq!(v["writable_roots"][0]["path"], ws.display().to_string());
    let roots: Vec<&str> = v["writable_roots"]
        .as_array()
        .expect("roots")
        .iter()
        .map(|r| r["path"].as_str().expect("path"))
        .collect();
    let cache = hx.home().join("cache").canonicalize().expect("cache");
    assert!(roots.contains(&cache.to_str().expect("utf-8")), "{v}");
    assert_eq!(
        (v["network"].clone(), v["required"].clone()),
        (json!(false), json!(true))
    );

    hx.clear_args().args(["sandbox", "--sandbox", "read-only"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stdout.contains("mode:     read-only (--sandbox)\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("writable: nothing but the devices below\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.starts_with("landlock: ABI "), "{}", run.stdout);
}

#[test]
fn bad_sandbox_settings_are_configuration_errors() {
    for (text, needle) in [
        ("sandbox = \"workspace\"\n", "workspace-write"),
        ("[sandbox]\nnetwrok = false\n", "netwrok"),
    ] {
        let mut hx = Hx::new_offline();
        hx.write_user_config("config.toml", text);
        hx.args(["agent", "hi"]);
        let run = hx.run();
        run.assert_code(2);
        assert!(run.stderr.contains(needle), "{}", run.stderr);
    }
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--sandbox", "nope", "hi"]);
    hx.run().assert_code(2);
}

/// A workspace whose parent is writable (here the temporary folder) can be swapped for a link
/// by one command; the next command must still not write where the link points: the ruleset
/// binds the folders as they were when the run began.
#[test]
fn a_workspace_swapped_for_a_link_does_not_move_the_sandbox() {
    let mut hx = Hx::new_offline();
    let ws = hx.workspace().to_path_buf();
    let outside = tempfile::Builder::new()
        .prefix("hx-swap-")
        .tempdir_in(outside_tmp())
        .expect("outside folder");
    let swap = format!(
        "cd .. && mv workspace workspace.real && ln -s {} workspace && echo swapped",
        outside.path().display()
    );
    let (out, _) = bash_turn(&mut hx, &[&swap, "echo pwned > x; ls -d \"$PWD\""]);
    // In the pod the workspace is a mount point, which cannot be moved at all; without one,
    // the ruleset still holds the folder it was given.
    if out[0].contains("Device or resource busy") {
        assert!(
            out[1].starts_with(&format!("{}\n", ws.display())),
            "{}",
            out[1]
        );
    } else {
        assert!(out[0].starts_with("swapped"), "{}", out[0]);
        assert!(out[1].contains("Permission denied"), "{}", out[1]);
    }
    assert!(
        !outside.path().join("x").exists(),
        "the second command wrote beyond the link"
    );
    // Put it back, so the test's own clean-up finds the workspace.
    let _ = std::fs::remove_file(&ws);
    let _ = std::fs::rename(ws.with_file_name("workspace.real"), &ws);
}

/// A command has no controlling terminal: it cannot open `/dev/tty` to type into the user's
/// shell (TIOCSTI) or write escape sequences to it.
#[test]
fn a_command_cannot_reach_the_users_terminal() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({"command": "if exec 3>/dev/tty; then echo opened; else echo refused; fi"})
                .to_string(),
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "look"]);
    run_on_terminal(&hx).assert_code(0);
    let reqs = server.requests();
    let out = &tool_results(&reqs[1].body)[0];
    assert!(out.contains("refused") && !out.contains("opened"), "{out}");
}

/// One turn of file tool calls that would change `a.txt` (whose content is `old`) and create
/// `b.txt`, and a subagent asked to do the same; returns the main agent's and the subagent's
/// tool messages. The files must be as they were.
fn file_tool_turn(hx: &mut Hx, run: impl Fn(&Hx) -> Run) -> (Vec<String>, Vec<String>) {
    let write = |id: &str, path: &str| {
        Call::new(
            id,
            "write_file",
            &json!({"path": path, "content": "new\n"}).to_string(),
        )
    };
    let edit = Call::new(
        "e1",
        "edit_file",
        &json!({"path": "a.txt", "old_text": "old", "new_text": "new"}).to_string(),
    );
    let task = Call::new(
        "t1",
        "task",
        &json!({"description": "write", "prompt": "write a.txt"}).to_string(),
    );
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![write("w1", "a.txt"), edit, write("w2", "b.txt"), task]),
        Reply::tool_calls(vec![write("s1", "a.txt"), write("s2", "c.txt")]),
        Reply::text("the child could not write"),
        Reply::text("done"),
    ]);
    hx.write_file("a.txt", "old\n")
        .env("DEEPSEEK_BASE_URL", server.url());
    let done = run(&*hx);
    done.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", done.dump());
    assert_eq!(hx.read_file("a.txt"), "old\n");
    for f in ["b.txt", "c.txt"] {
        assert!(!hx.workspace().join(f).exists(), "{f} was created");
    }
    (tool_results(&reqs[3].body), tool_results(&reqs[2].body))
}

fn assert_read_only_refusals(results: &[String], tools: &[&str], set_by: &str) {
    assert_eq!(results.len(), tools.len(), "{results:?}");
    for (r, tool) in results.iter().zip(tools) {
        let head =
            format!("Error: {tool} refused: the sandbox is read-only ({set_by}); no file may be");
        assert!(r.starts_with(&head), "{r}");
        assert!(r.contains("--sandbox workspace-write"), "{r}");
    }
}

/// `read-only` is a setting of the run, not only of bash's kernel sandbox: the file tools
/// refuse too, the subagent's included, set by the flag or by a config file, and whether or
/// not the kernel has Landlock.
#[test]
fn read_only_file_tools_refuse_and_leave_files_untouched() {
    let main_tools = ["write_file", "edit_file", "write_file"];
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--sandbox", "read-only", "write"]);
    let (main, child) = file_tool_turn(&mut hx, Hx::run);
    assert_read_only_refusals(&main[..3], &main_tools, "--sandbox read-only");
    assert_eq!(main[3], "the child could not write");
    assert_read_only_refusals(&child, &["write_file"; 2], "--sandbox read-only");

    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "sandbox.mode = \"read-only\"\n")
        .args(["agent", "write"]);
    let config = hx.user_config_dir().join("config.toml");
    let set_by = format!("set in {}", config.display());
    let (main, child) = file_tool_turn(&mut hx, Hx::run);
    assert_read_only_refusals(&main[..3], &main_tools, &set_by);
    assert_read_only_refusals(&child, &["write_file"; 2], &set_by);

    let mut hx = Hx::new_offline();
    hx.args(["agent", "--sandbox", "read-only", "write"]);
    let (main, child) = file_tool_turn(&mut hx, run_without_landlock);
    assert_read_only_refusals(&main[..3], &main_tools, "--sandbox read-only");
    assert_read_only_refusals(&child, &["write_file"; 2], "--sandbox read-only");

    // Writes are the file tools' own business in the other modes.
    let mut hx = Hx::new_offline();
    hx.write_file("a.txt", "old\n");
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "w1",
            "write_file",
            &json!({"path": "a.txt", "content": "new\n"}).to_string(),
        )]),
        Reply::text("done"),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "--sandbox", "off", "write"]);
    hx.run().assert_code(0);
    assert_eq!(hx.read_file("a.txt"), "new\n");
}

/// A writable root that holds a folder on PATH lets a command plant a program there, which
/// the user's hooks and shell then run outside the sandbox: the run says so once at start,
/// and `hx sandbox` says it too. A root beside the programs (`~/.cargo/registry`) is fine.
#[test]
fn a_writable_root_holding_a_folder_on_path_warns_once() {
    let mut hx = Hx::new_offline();
    let cargo = hx.home().join(".cargo");
    for sub in ["bin", "registry"] {
        std::fs::create_dir_all(cargo.join(sub)).expect("mkdir");
    }
    let cargo = cargo.canonicalize().expect("canonical");
    let path = format!(
        "{}:{}",
        cargo.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    hx.env("PATH", &path).write_user_config(
        "config.toml",
        "sandbox.writable_roots = [\"~/.cargo\", \"~/.cargo/registry\"]\n",
    );
    let expected = format!(
        "hx: warning: sandbox.writable_roots: \"~/.cargo\" ({}) holds {}, a folder on PATH: a \
         command could put a program there that your hooks and your shell then run outside \
         the sandbox; allow a folder inside it that holds no programs instead (such as \
         ~/.cargo/registry rather than ~/.cargo)",
        cargo.display(),
        cargo.join("bin").display()
    );
    let (out, run) = bash_turn(&mut hx, &["echo ok"]);
    assert_eq!(out, ["ok\n"]);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: warning:"))
        .collect();
    assert_eq!(warnings, [expected.as_str()], "{}", run.stderr);

    hx.clear_args()
        .args(["sandbox"])
        .env_remove("DEEPSEEK_API_KEY");
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stderr, format!("{expected}\n"));

    // Only the registry: nothing to say.
    hx.write_user_config(
        "config.toml",
        "sandbox.writable_roots = [\"~/.cargo/registry\"]\n",
    );
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stderr, "");
}

/// `hx mcp list` starts local servers in the run's sandbox, so it shares the run's verdict:
/// without Landlock it warns as a run does and the server runs with only its capabilities
/// dropped; with `sandbox.required` it refuses before starting anything.
#[test]
fn mcp_list_without_landlock_warns_or_refuses_as_a_run_does() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let pid_file = hx.home().join("t.pid");
    let table = crate::support::mcp::server_table(
        "t",
        &[("MCP_TEST_PID_FILE", &pid_file.display().to_string())],
        "",
    );
    hx.write_user_config("config.toml", &table)
        .env_remove("DEEPSEEK_API_KEY")
        .args(["mcp", "list"]);
    let run = run_without_landlock(&hx);
    run.assert_code(0);
    assert!(run.stdout.starts_with("t: started in "), "{}", run.dump());
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: warning: the sandbox is partial: hx cannot make its pod"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.dump());

    std::fs::remove_file(&pid_file).expect("the server wrote its pid");
    hx.write_user_config("config.toml", &format!("sandbox.required = true\n{table}"));
    let run = run_without_landlock(&hx);
    run.assert_code(2);
    assert!(
        run.stderr.starts_with("hx: sandbox.required is set, but ")
            && run.stderr.contains("this kernel has no Landlock"),
        "{}",
        run.dump()
    );
    assert_eq!(run.stdout, "");
    assert!(!pid_file.exists(), "a server started");
}

/// Commands start as programs expect to, with no signal ignored or blocked, in the pod, under
/// Landlock alone and with the sandbox off: not with SIGPIPE ignored as the pod's launcher (a
/// Rust program) has it, so `yes | head -3` ends quietly, nor with what hx inherited ignored
/// (here SIGHUP, SIGINT and SIGQUIT, as `nohup` and a script's `&` leave them); nor do the
/// user's hooks.
#[test]
fn commands_start_with_default_signals_in_and_out_of_the_sandbox() {
    const SIGNALS: &str = "grep -E '^Sig(Blk|Ign):' /proc/self/status";
    const PIPE: &str = "yes | head -3";
    let quiet = "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n";
    for (mode, no_pod) in [
        ("workspace-write", false),
        ("workspace-write", true),
        ("off", false),
    ] {
        let calls = Call::bash_each(&[SIGNALS, PIPE]);
        let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
        let mut hx = Hx::new_offline_in(&outside_tmp());
        hx.env("DEEPSEEK_BASE_URL", server.url())
            .write_user_config("config.toml", &format!("sandbox = {mode:?}\n"))
            .args(["agent", "run the commands"]);
        let hook = crate::support::hooks::script(
            &hx,
            "post.sh",
            &format!("cat >/dev/null\n{SIGNALS} > hook-signals.txt"),
        );
        crate::support::hooks::user_hooks(
            &hx,
            json!({ "PostToolUse": crate::support::hooks::groups("Bash", &[&hook], None) }),
        );
        let mut cmd = hx.command();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if no_pod {
            // No user namespace: no pod, Landlock only.
            degrade(&mut cmd, false, true);
        }
        // SAFETY: signal() on three signal numbers in the forked child before exec.
        unsafe {
            cmd.pre_exec(|| {
                for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT] {
                    libc::signal(sig, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        let run = Run::wait(
            cmd.spawn().expect("spawn hx"),
            crate::support::DEFAULT_TIMEOUT,
        );
        run.assert_code(0);
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2, "{}", run.dump());
        let out = tool_results(&reqs[1].body);
        let case = format!("{mode}, no pod: {no_pod}\n{}", run.dump());
        assert_eq!(out[0], quiet, "{case}");
        assert_eq!(out[1], "y\ny\ny\n", "{case}");
        assert_eq!(hx.read_file("hook-signals.txt"), quiet, "{case}");
    }
}

/// The pids of the children of `pid`, of all its threads (a child is listed under the thread
/// that forked it).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// A command's launcher in the pod is a fork of hx itself (issue 33), a copy of its memory
/// for as long as the command runs: it keeps none of hx's descriptors (its stdio is
/// /dev/null, so a pipe's end-of-file is the command's alone) and no capability.
#[test]
fn a_commands_launcher_keeps_no_descriptor_or_capability_of_hx() {
    let mut hx = Hx::new_offline();
    let server = FakeServer::start(vec![
        Reply::tool_calls(Call::bash_each(&["touch started && sleep 4"])),
        Reply::text("done"),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "run it"]);
    let child = hx.spawn();
    let hx_pid = child.id();
    let started = hx.workspace().join("started");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // bash execs its last command: the command's process becomes `sleep` soon after the
    // file is made (a loaded machine may not have got there yet, so it is waited for).
    let command = |pid: &u32| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"sleep\x004\x00")
    };
    let launcher = loop {
        let found = children_of(hx_pid)
            .into_iter()
            .find(|&l| children_of(l).iter().any(command));
        if let Some(l) = found {
            break l;
        }
        if std::time::Instant::now() >= deadline {
            let kids: Vec<(u32, Vec<u32>)> = children_of(hx_pid)
                .into_iter()
                .map(|k| (k, children_of(k)))
                .collect();
            panic!("no process of hx's runs the command in the pod: {kids:?}")
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut fds: Vec<(String, String)> = std::fs::read_dir(format!("/proc/{launcher}/fd"))
        .expect("the launcher's descriptors")
        .flatten()
        .map(|e| {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            (
                e.file_name().to_string_lossy().into_owned(),
                target.display().to_string(),
            )
        })
        .collect();
    fds.sort();
    let null = |n: &str| (n.to_string(), "/dev/null".to_string());
    assert_eq!(fds, vec![null("0"), null("1"), null("2")]);
    let status = std::fs::read_to_string(format!("/proc/{launcher}/status")).expect("status");
    for set in ["CapPrm:", "CapEff:", "CapBnd:"] {
        let line = status.lines().find(|l| l.starts_with(set)).expect(set);
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    let run = Run::wait(child, std::time::Duration::from_secs(60));
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
}
