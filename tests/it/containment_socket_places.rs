//! Item 4 of issue 32: other programs' Unix sockets that `/proc/net/unix` of hx's network
//! namespace does not list at the path a command connects to. One bound at a temporary name
//! and linked into place (OpenSSH's ControlMaster makes `~/.ssh/cm-*` so), one linked into
//! `~/.ssh` or `~/.docker` while the name it was bound at stays, one bound by a relative path,
//! one bound through a linked folder, one bound in another network namespace (a rootless
//! container's), with and without a mount namespace of its own. A command reaches none of
//! them; with the sandbox off it reaches them all. The real binary, the fake server, the real
//! kernel; as root and as a throwaway unprivileged user.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::containment::turn;
use crate::support::user::{as_unprivileged_user, User};
use crate::support::{Hx, Run};

/// A victim server: `serve.py MODE READY PATH [BOUND]` listens on a Unix socket reached at
/// PATH, says `hello` to whoever connects, and creates READY once listening.
const SERVE: &str = r#"
import os, socket, sys, threading, time
mode, ready, path = sys.argv[1:4]
def listen(addr):
    s = socket.socket(socket.AF_UNIX)
    s.bind(addr)
    s.listen(8)
    def serve():
        while True:
            c, _ = s.accept()
            c.sendall(b"hello")
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    return s
if mode == "moved":
    tmp = path + ".tmp7Qx2"
    keep = listen(tmp)
    os.link(tmp, path)
    os.unlink(tmp)
elif mode == "linked":
    keep = listen(sys.argv[4])
    os.link(sys.argv[4], path)
elif mode == "relative":
    os.chdir(os.path.dirname(path))
    keep = listen(os.path.basename(path))
else:
    keep = listen(path)
open(ready, "w").close()
time.sleep(600)
"#;

/// Connects to each argument; one line each: `CONNECTED PATH` or `refused PATH: WHY`.
const CONNECT: &str = r#"python3 - "$@" <<'PY'
import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    try:
        s.connect(p)
        s.recv(5)
        print("CONNECTED", p)
    except OSError as e:
        print("refused", p + ":", e.strerror)
PY"#;

/// The servers of one test, killed when it ends.
struct Victims(Vec<Child>);

impl Drop for Victims {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn python() -> &'static str {
    // The user's copy of Python may lie under root's home, which the test user cannot enter.
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// Where the sockets are reached, and how each server is started (argv).
struct Scenario {
    what: &'static str,
    reached: PathBuf,
    argv: Vec<String>,
}

/// Sets the victims up around `hx` (folders beside its workspace, its HOME): the paths a
/// command tries, and the servers' commands. `unshare -Ur` makes the user namespace the
/// other namespaces need, for root and for a user alike.
fn scenarios(hx: &Hx) -> Vec<Scenario> {
    let top = hx.workspace().parent().expect("test root").join("victim");
    let home = hx.home().to_path_buf();
    for d in [
        "ctl", "bound", "rel", "real", "ns", "hostdir", "mp", "ready",
    ] {
        std::fs::create_dir_all(top.join(d)).expect("victim folder");
    }
    for d in [".ssh", ".docker/run"] {
        std::fs::create_dir_all(home.join(d)).expect("home folder");
    }
    std::os::unix::fs::symlink(top.join("real"), top.join("link")).expect("link");
    let script = top.join("serve.py");
    std::fs::write(&script, SERVE).expect("server script");
    let serve = |mode: &str, ready: &str, path: &Path, extra: Option<&Path>| {
        let mut v = vec![
            python().to_string(),
            script.display().to_string(),
            mode.to_string(),
            top.join("ready").join(ready).display().to_string(),
            path.display().to_string(),
        ];
        v.extend(extra.map(|p| p.display().to_string()));
        v
    };
    let ssh = home.join(".ssh/cm-git@github.com:22");
    let docker = home.join(".docker/run/docker.sock");
    let in_ns = top.join("ns/ns.sock");
    let mapped = top.join("hostdir/c.sock");
    let mut netns = vec!["unshare".to_string(), "-Urn".to_string()];
    netns.extend(serve("plain", "ns", &in_ns, None));
    let inner = serve("plain", "mnt", &top.join("mp/c.sock"), None).join(" ");
    let mntns = vec![
        "unshare".to_string(),
        "-Urnm".to_string(),
        "sh".to_string(),
        "-c".to_string(),
        format!(
            "mount --bind '{}' '{}' && exec {inner}",
            top.join("hostdir").display(),
            top.join("mp").display()
        ),
    ];
    vec![
        Scenario {
            what: "bound at a temporary name, then linked into place",
            reached: top.join("ctl/cm-user@host:22"),
            argv: serve("moved", "moved", &top.join("ctl/cm-user@host:22"), None),
        },
        Scenario {
            what: "linked into ~/.ssh",
            reached: ssh.clone(),
            argv: serve("linked", "ssh", &ssh, Some(&top.join("bound/a.sock"))),
        },
        Scenario {
            what: "linked into ~/.docker",
            reached: docker.clone(),
            argv: serve("linked", "docker", &docker, Some(&top.join("bound/b.sock"))),
        },
        Scenario {
            what: "bound by a relative path",
            reached: top.join("rel/rel.sock"),
            argv: serve("relative", "rel", &top.join("rel/rel.sock"), None),
        },
        Scenario {
            what: "bound through a linked folder",
            reached: top.join("link/s.sock"),
            argv: serve("plain", "link", &top.join("link/s.sock"), None),
        },
        Scenario {
            what: "bound in another network namespace",
            reached: in_ns,
            argv: netns,
        },
        Scenario {
            what: "bound in another network and mount namespace",
            reached: mapped,
            argv: mntns,
        },
    ]
}

/// Starts every server (through `prepare`, which may make it run as a user) and waits until
/// each listens.
fn start(hx: &Hx, scenarios: &[Scenario], prepare: impl Fn(&mut Command)) -> Victims {
    let ready = hx
        .workspace()
        .parent()
        .expect("test root")
        .join("victim/ready");
    let mut victims = Victims(Vec::new());
    for s in scenarios {
        let mut cmd = Command::new(&s.argv[0]);
        cmd.args(&s.argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .current_dir("/");
        prepare(&mut cmd);
        victims
            .0
            .push(cmd.spawn().unwrap_or_else(|e| panic!("{}: {e}", s.what)));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(&ready).map_or(0, |d| d.count()) < scenarios.len() {
        for (c, s) in victims.0.iter_mut().zip(scenarios) {
            if let Ok(Some(status)) = c.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = c.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("the server {} exited ({status}): {err}", s.what);
            }
        }
        assert!(Instant::now() < deadline, "the servers did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    victims
}

fn connect_command(scenarios: &[Scenario]) -> String {
    let paths: Vec<String> = scenarios
        .iter()
        .map(|s| format!("'{}'", s.reached.display()))
        .collect();
    format!("set -- {}\n{CONNECT}", paths.join(" "))
}

/// Asserts what the command printed: each socket refused (`sandboxed`) or reached.
fn assert_reached(out: &str, scenarios: &[Scenario], sandboxed: bool) {
    for s in scenarios {
        let path = s.reached.display().to_string();
        let line = out
            .lines()
            .find(|l| l.ends_with(&path) || l.contains(&format!(" {path}:")))
            .unwrap_or_else(|| panic!("{}: no line in {out}", s.what));
        if sandboxed {
            assert!(line.starts_with("refused "), "{}: {line}\n{out}", s.what);
        } else {
            assert!(line.starts_with("CONNECTED "), "{}: {line}\n{out}", s.what);
        }
    }
}

/// Runs the attack in a sandboxed run and, as the control, in a run with the sandbox off.
/// `own` gives the victims' folders to whoever runs the servers, once they are made.
fn attack(
    mut hx: Hx,
    mut control: Hx,
    own: impl Fn(&Hx),
    start_as: impl Fn(&mut Command),
    run: impl Fn(&Hx) -> Run,
) {
    let scenarios = scenarios(&hx);
    own(&hx);
    let _victims = start(&hx, &scenarios, &start_as);
    let (out, _) = turn(&mut hx, &[&connect_command(&scenarios)], &run);
    assert_reached(&out[0], &scenarios, true);
    // The same servers, reached from a run without the sandbox: the refusals are the pod's.
    control.write_user_config("config.toml", "sandbox = \"off\"\n");
    let (out, _) = turn(&mut control, &[&connect_command(&scenarios)], &run);
    assert_reached(&out[0], &scenarios, false);
}

#[test]
fn sockets_not_bound_at_their_final_path_cannot_be_reached() {
    let hx = Hx::new_offline_in(&crate::support::outside_tmp());
    // The control runs in another test folder but connects to the same sockets.
    let control = Hx::new_offline_in(&crate::support::outside_tmp());
    attack(hx, control, |_| {}, |_| {}, |hx| hx.run());
}

#[test]
fn sockets_not_bound_at_their_final_path_cannot_be_reached_as_an_unprivileged_user() {
    as_unprivileged_user(
        "sockets_not_bound_at_their_final_path_cannot_be_reached_as_an_unprivileged_user",
        |user: &User| {
            let hx = user.hx();
            let control = user.hx();
            // The victims' folders are the user's, so that the user's servers can bind there.
            attack(
                hx,
                control,
                |hx| user.hand_over(hx),
                |cmd| user.as_user(cmd),
                |hx| user.run(hx),
            );
        },
    );
}
