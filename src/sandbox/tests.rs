use super::*;

fn settings(mode: Mode, network: bool, required: bool) -> Settings {
    Settings {
        mode,
        network,
        required,
        ..Settings::default()
    }
}

fn env(pairs: &[(&str, &str)]) -> Env {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Why the tests' pod-less plans have no pod.
const NO_POD: &str = "unshare: Operation not permitted";

/// Without the pod and without the seccomp filter, so that what Landlock alone gives shows.
fn no_pod(settings: &Settings, ws: &Path, kernel: Kernel) -> Plan {
    Plan::build(settings, ws, &env(&[]), kernel, false, Some(NO_POD), None)
}

/// What a run without the pod cannot enforce beyond Landlock's part, as its gaps say it.
const POD_GAPS: &str = "hiding the terminals (/dev/pts, /dev/tty*, /dev/console) (needs user \
     namespaces); ending what commands started when hx is killed (needs user namespaces); \
     refusing chmod, chown, touch and xattrs outside the writable folders (needs user \
     namespaces); hiding other programs' Unix sockets (tmux, D-Bus, ssh-agent, Docker) (needs \
     user namespaces); keeping .git/config, hooks and info read-only (needs user namespaces)";

const TRUNCATE: &str = "refusing to truncate files outside the writable folders (needs ABI 3)";
const TCP: &str = "refusing IPv4 and IPv6 sockets (needs ABI 4)";
const SIGNALS: &str = "refusing signals to processes outside the command (needs ABI 6)";
const SOCKETS: &str =
    "refusing connections to abstract Unix sockets made outside the command (needs ABI 6)";

/// The protections Landlock (and the capability drop) give without the pod, first in
/// `Protection::ALL`.
const LANDLOCK_PROTECTIONS: usize = 5;

/// Each of those protections' status without the pod and without the seccomp filter, in
/// `Protection::ALL`'s order.
fn statuses(mode: Mode, network: bool, kernel: Kernel) -> Vec<Status> {
    let checks = assess(mode, network, kernel, false, false);
    let order: Vec<Protection> = checks.iter().map(|c| c.protection).collect();
    assert_eq!(order, Protection::ALL);
    checks
        .into_iter()
        .take(LANDLOCK_PROTECTIONS)
        .map(|c| c.status)
        .collect()
}

#[test]
fn what_each_kernel_enforces() {
    use Status::*;
    let abi = |needs, has| Missing(Why::Abi { needs, has });
    let (files, tcp) = (
        Enforced("Landlock file rights"),
        Partial {
            by: "Landlock TCP rights",
            gap: "refusing UDP, TCP Fast Open and MPTCP",
            why: Why::NoSeccomp,
        },
    );
    let signals = Enforced("Landlock signal scope");
    let sockets = Enforced("Landlock abstract Unix socket scope");
    let caps = Enforced("every capability dropped before the command starts");
    for mode in [Mode::WorkspaceWrite, Mode::ReadOnly] {
        for kernel in [Kernel::Missing, Kernel::NotEnabled] {
            let none = Missing(Why::NoLandlock);
            assert_eq!(
                statuses(mode, false, kernel),
                [none.clone(), none.clone(), none.clone(), none, caps.clone()]
            );
        }
        for has in [1, 2] {
            let truncate = Partial {
                by: "Landlock file rights",
                gap: "refusing to truncate files outside the writable folders",
                why: Why::Abi { needs: 3, has },
            };
            assert_eq!(
                statuses(mode, false, Kernel::Abi(has)),
                [
                    truncate,
                    abi(4, has),
                    abi(6, has),
                    abi(6, has),
                    caps.clone()
                ]
            );
        }
        for has in [4, 5] {
            assert_eq!(
                statuses(mode, false, Kernel::Abi(has)),
                [
                    files.clone(),
                    tcp.clone(),
                    abi(6, has),
                    abi(6, has),
                    caps.clone()
                ]
            );
        }
        for has in 6..=9 {
            for (network, net) in [(false, tcp.clone()), (true, Allowed)] {
                let all = [
                    files.clone(),
                    net,
                    signals.clone(),
                    sockets.clone(),
                    caps.clone(),
                ];
                assert_eq!(statuses(mode, network, Kernel::Abi(has)), all);
            }
        }
    }
    for kernel in [Kernel::Missing, Kernel::Abi(1), Kernel::Abi(7)] {
        let off = statuses(Mode::Off, false, kernel);
        assert!(off.iter().all(|s| *s == Missing(Why::Off)), "{off:?}");
        // With the seccomp filter (and no pod), no IP traffic whatever Landlock offers; `off`
        // is still off.
        for mode in [Mode::WorkspaceWrite, Mode::ReadOnly, Mode::Off] {
            let net = &assess(mode, false, kernel, true, false)[1];
            assert_eq!(net.protection, Protection::Network);
            let expected = match mode {
                Mode::Off => Missing(Why::Off),
                _ => Enforced(BY_SECCOMP),
            };
            assert_eq!(net.status, expected, "{mode:?} {kernel:?}");
            if mode != Mode::Off {
                assert!(assess(mode, true, kernel, true, false)[1].status.holds());
            }
        }
    }
}

#[test]
fn what_is_missing_in_sum() {
    let sum = |mode, network, kernel| {
        let landlock: Vec<Check> = assess(mode, network, kernel, true, false)
            .into_iter()
            .take(LANDLOCK_PROTECTIONS)
            .collect();
        Enforcement::of(mode, &landlock)
    };
    assert_eq!(
        sum(Mode::WorkspaceWrite, true, Kernel::Abi(1)),
        Enforcement::Partial(vec![TRUNCATE.into(), SIGNALS.into(), SOCKETS.into()])
    );
    assert_eq!(
        sum(Mode::ReadOnly, false, Kernel::Abi(5)),
        Enforcement::Partial(vec![SIGNALS.into(), SOCKETS.into()])
    );
    assert_eq!(
        sum(Mode::WorkspaceWrite, false, Kernel::Abi(6)),
        Enforcement::Full
    );
    assert_eq!(sum(Mode::Off, false, Kernel::Missing), Enforcement::Off);
    let Enforcement::Partial(gaps) = sum(Mode::WorkspaceWrite, true, Kernel::Missing) else {
        panic!("no Landlock is partial: the capabilities are still dropped");
    };
    assert_eq!(
        gaps[0],
        "refusing writes outside the writable folders (needs Landlock)"
    );
    assert_eq!(gaps.len(), 3, "{gaps:?}");
}

#[test]
fn without_landlock_a_run_warns_once_and_drops_only_the_capabilities() {
    let ws = tempfile::tempdir().unwrap();
    for kernel in [Kernel::Missing, Kernel::NotEnabled] {
        let plan = no_pod(&Settings::default(), ws.path(), kernel);
        assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
        let w = &plan.warnings[0];
        assert!(
            w.starts_with(&format!(
                "the sandbox is partial: hx cannot make its pod of namespaces here ({NO_POD}) \
                 and this kernel has"
            )),
            "{w}"
        );
        assert!(
            w.contains(
                "so bash runs with only its capabilities dropped: its writes, signals, abstract \
                 sockets, terminals, leftovers, metadata, pathname sockets and git metadata are \
                 not confined"
            ),
            "{w}"
        );
        assert_eq!(plan.refusal, None);
        // Only the capabilities are dropped: no ruleset, so no write is blamed on it.
        let sb = plan.sandbox().unwrap().unwrap();
        assert!(sb.confinement.is_none());
        assert_eq!(sb.denial_note("bash: /etc/hx-x: Permission denied"), None);
    }
    // With network = false, the warning names the network too.
    let plan = no_pod(
        &settings(Mode::WorkspaceWrite, false, false),
        ws.path(),
        Kernel::Missing,
    );
    assert!(
        plan.warnings[0].contains("its writes, network, signals, abstract sockets, terminals"),
        "{:?}",
        plan.warnings
    );
    assert!(plan.sandbox().unwrap().unwrap().filter.is_none());
    // With the filter, the network holds without Landlock.
    let no_net = settings(Mode::WorkspaceWrite, false, false);
    let plan = Plan::build(
        &no_net,
        ws.path(),
        &env(&[]),
        Kernel::Missing,
        true,
        Some(NO_POD),
        None,
    );
    assert!(
        plan.warnings[0].contains(
            "with only its capabilities dropped and its IP sockets refused: its writes, signals, \
             abstract sockets, terminals"
        ),
        "{:?}",
        plan.warnings
    );
    assert!(plan.sandbox().unwrap().unwrap().filter.is_some());
}

#[test]
fn required_turns_a_gap_into_a_refusal() {
    let ws = tempfile::tempdir().unwrap();
    let required = settings(Mode::WorkspaceWrite, false, true);
    for kernel in [
        Kernel::Missing,
        Kernel::Abi(2),
        Kernel::Abi(3),
        Kernel::Abi(5),
        Kernel::Abi(7),
    ] {
        let plan = no_pod(&required, ws.path(), kernel);
        let r = plan.sandbox().expect_err("refused");
        assert!(r.starts_with("sandbox.required is set, but "), "{r}");
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    }
    // With the pod, Landlock is a second wall only: every kernel enforces network = false.
    for kernel in [Kernel::Missing, Kernel::Abi(2), Kernel::Abi(5)] {
        let plan = Plan::new(&required, ws.path(), &env(&[]), kernel);
        assert!(plan.sandbox().unwrap().is_some(), "{kernel:?}");
    }
    // But the abstract sockets of hx's own network namespace need the scope (ABI 6) when the
    // pod shares it.
    let allowed = settings(Mode::WorkspaceWrite, true, true);
    let plan = Plan::new(&allowed, ws.path(), &env(&[]), Kernel::Abi(5));
    assert_eq!(
        plan.sandbox().expect_err("refused"),
        format!(
            "sandbox.required is set, but this kernel's Landlock (ABI 5) cannot enforce all of \
             workspace-write: {SOCKETS}; refusing to run (use --sandbox off to run unconfined)"
        )
    );
    let plan = Plan::new(&required, ws.path(), &env(&[]), Kernel::Abi(6));
    assert!(plan.sandbox().unwrap().is_some());
    // `off` is an explicit choice that `required` does not overrule.
    let off = settings(Mode::Off, true, true);
    let plan = Plan::new(&off, ws.path(), &env(&[]), Kernel::Missing);
    assert!(plan.sandbox().unwrap().is_none());
    assert!(plan.warnings.is_empty());
}

#[test]
fn network_false_with_the_sandbox_off_is_not_silently_ignored() {
    let ws = tempfile::tempdir().unwrap();
    let plan = Plan::new(
        &settings(Mode::Off, false, false),
        ws.path(),
        &env(&[]),
        Kernel::Abi(7),
    );
    assert_eq!(
        plan.warnings,
        ["sandbox.network = false has no effect while the sandbox is off: TCP is not refused"]
    );
}

#[test]
fn a_partial_kernel_still_confines_and_says_what_is_missing() {
    let ws = tempfile::tempdir().unwrap();
    let plan = no_pod(
        &settings(Mode::WorkspaceWrite, false, false),
        ws.path(),
        Kernel::Abi(3),
    );
    assert_eq!(
        plan.warnings,
        [format!(
            "the sandbox is partial: hx cannot make its pod of namespaces here ({NO_POD}), so it \
             cannot enforce all of workspace-write: {TCP}; {SIGNALS}; {SOCKETS}; {POD_GAPS} (set \
             sandbox.required = true to refuse to run instead)"
        )]
    );
    assert!(plan.sandbox().unwrap().is_some());
    // With the pod, ABI 5 lacks only the abstract-socket scope, which a pod that shares hx's
    // network namespace needs.
    let plan = Plan::new(&Settings::default(), ws.path(), &env(&[]), Kernel::Abi(5));
    assert_eq!(
        plan.warnings,
        [format!(
            "the sandbox is partial: this kernel's Landlock (ABI 5) cannot enforce all of \
             workspace-write: {SOCKETS} (set sandbox.required = true to refuse to run instead)"
        )]
    );
    let plan = Plan::with_seccomp(
        &settings(Mode::WorkspaceWrite, false, false),
        ws.path(),
        &env(&[]),
        Kernel::Abi(3),
        false,
    );
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn writable_roots_resolve_against_home_and_the_workspace() {
    let top = tempfile::tempdir().unwrap();
    let top = top.path().canonicalize().unwrap();
    let (ws, home, tmpdir) = (top.join("ws"), top.join("home"), top.join("t"));
    for d in [
        &ws,
        &home.join("cache"),
        &tmpdir,
        &ws.join("sub"),
        &top.join("sibling"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    let s = Settings {
        writable_roots: vec![
            "~/cache".into(),
            "sub".into(),
            "../sibling".into(),
            top.join("sibling").display().to_string(),
            "missing".into(),
        ],
        ..Settings::default()
    };
    let e = env(&[
        ("HOME", home.to_str().unwrap()),
        ("TMPDIR", tmpdir.to_str().unwrap()),
    ]);
    let plan = Plan::new(&s, &ws, &e, Kernel::Abi(7));
    let got: Vec<(PathBuf, &str)> = plan
        .writable
        .iter()
        .map(|r| (r.path.clone(), r.why))
        .collect();
    let tmp = Path::new("/tmp").canonicalize().unwrap();
    assert_eq!(
        got,
        [
            (ws.clone(), "the workspace"),
            (tmp, "the temporary folder"),
            (tmpdir, "$TMPDIR"),
            (home.join("cache"), "sandbox.writable_roots"),
            (ws.join("sub"), "sandbox.writable_roots"),
            (top.join("sibling"), "sandbox.writable_roots"),
        ]
    );
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert!(
        plan.warnings[0].starts_with("sandbox.writable_roots: \"missing\" (")
            && plan.warnings[0].ends_with(") does not exist; it is not writable"),
        "{}",
        plan.warnings[0]
    );
    // Without HOME a `~/` root is a warning too.
    let plan = Plan::new(&s, &ws, &env(&[]), Kernel::Abi(7));
    assert!(plan.warnings.iter().any(|w| w.contains("needs HOME")));
    // read-only: nothing but the devices.
    let ro = Settings {
        mode: Mode::ReadOnly,
        ..s
    };
    let plan = Plan::new(&ro, &ws, &e, Kernel::Abi(7));
    assert!(plan.writable.is_empty());
    assert!(plan.devices.contains(&PathBuf::from("/dev/null")));
}

/// The decision hx makes from the ABI agrees with what the landlock crate itself reports when
/// it enforces on this kernel, protection by protection (each alone: the rights or the scope
/// it needs), and for the whole ruleset a command enters. Each in a throwaway thread: Landlock
/// confines only the calling thread (and what it starts later).
#[test]
fn the_assessment_matches_what_the_kernel_enforces() {
    use landlock::{BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetStatus, Scope};
    fn enforce(fs: bool, net: bool, scopes: BitFlags<Scope>) -> RulesetStatus {
        std::thread::spawn(move || {
            let mut r = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
            if fs {
                r = r.handle_access(handled_fs()).unwrap();
            }
            if net {
                r = r.handle_access(handled_net()).unwrap();
            }
            if !scopes.is_empty() {
                r = r.scope(scopes).unwrap();
            }
            r.create().unwrap().restrict_self().unwrap().ruleset
        })
        .join()
        .unwrap()
    }
    let kernel = Kernel::detect();
    // Landlock's part: what a run enforces without the pod.
    let checks = assess(Mode::WorkspaceWrite, false, kernel, true, false);
    let none = BitFlags::EMPTY;
    for check in &checks {
        let status = match check.protection {
            Protection::Writes => enforce(true, false, none),
            Protection::Network => enforce(false, true, none),
            Protection::Signals => enforce(false, false, Scope::Signal.into()),
            Protection::AbstractSockets => enforce(false, false, Scope::AbstractUnixSocket.into()),
            // Not Landlock's: `a_sandboxed_child_has_no_capabilities` checks it, and the rest
            // are the pod's.
            _ => continue,
        };
        let expected = match check.status {
            // Landlock's part of it, whole; the rest is the seccomp filter's.
            Status::Partial {
                why: Why::NoSeccomp,
                ..
            } => RulesetStatus::FullyEnforced,
            Status::Enforced(_) => RulesetStatus::FullyEnforced,
            Status::Partial { .. } => RulesetStatus::PartiallyEnforced,
            Status::Missing(_) | Status::Allowed => RulesetStatus::NotEnforced,
        };
        assert_eq!(status, expected, "{check:?}");
    }
    // What `Confinement::build` asks for, against the sum.
    for network in [true, false] {
        let whole = enforce(true, !network, handled_scopes());
        let landlock: Vec<Check> = assess(Mode::WorkspaceWrite, network, kernel, true, false)
            .into_iter()
            .take(LANDLOCK_PROTECTIONS)
            .collect();
        let expected = match Enforcement::of(Mode::WorkspaceWrite, &landlock) {
            _ if kernel.why_missing().is_some() => RulesetStatus::NotEnforced,
            Enforcement::Full => RulesetStatus::FullyEnforced,
            _ => RulesetStatus::PartiallyEnforced,
        };
        assert_eq!(whole, expected, "network {network}");
    }
}

#[test]
fn a_confined_child_writes_only_beneath_its_roots() {
    assert_eq!(
        Kernel::detect().why_missing(),
        None,
        "these tests need a kernel with Landlock"
    );
    let top = tempfile::tempdir().unwrap();
    let top = top.path().canonicalize().unwrap();
    let ws = top.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let c = Confinement::build(&[ws.clone(), PathBuf::from("/dev/null")], true)
        .unwrap()
        .unwrap();
    let run = |script: &str| {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(script).current_dir(&ws);
        let (fd, caps) = (c.raw_fd(), CapDrop::detect());
        // SAFETY: `enter` is async-signal-safe (see `Sandbox::apply`).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                enter(Some(fd), caps, None)
            });
        }
        cmd.output().unwrap()
    };
    let out = run("echo in > inside; echo x > /dev/null; touch ../outside");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
    assert!(ws.join("inside").exists());
    assert!(!top.join("outside").exists());
    // hx itself stays free.
    std::fs::write(top.join("parent"), "x").unwrap();
}

/// The capability sets a child shows in `/proc/self/status`, by name.
fn child_caps(sb: &Sandbox) -> Vec<(String, u64)> {
    let mut cmd = std::process::Command::new("grep");
    cmd.args(["^Cap", "/proc/self/status"]);
    sb.apply(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (name, hex) = l.split_once(':').unwrap();
            (
                name.to_string(),
                u64::from_str_radix(hex.trim(), 16).unwrap(),
            )
        })
        .collect()
}

/// A command keeps no capability, with Landlock or without, whoever hx runs as; a root hx
/// also empties the bounding set, so no program the command runs can get one back.
#[test]
fn a_sandboxed_child_has_no_capabilities() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    for kernel in [Kernel::detect(), Kernel::Missing] {
        let plan = Plan::new(&Settings::default(), &ws, &env(&[]), kernel);
        let sb = plan.sandbox().unwrap().unwrap();
        let caps = child_caps(&sb);
        assert_eq!(caps.len(), 5, "{caps:?}");
        for (name, set) in &caps {
            if name != "CapBnd" || root {
                assert_eq!(*set, 0, "{name} with {kernel:?}: {caps:?}");
            }
        }
    }
}

#[test]
fn the_note_names_the_path_and_how_to_allow_it() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    let plan = Plan::new(&Settings::default(), &ws, &env(&[]), Kernel::Abi(7));
    let sb = plan.sandbox().unwrap().unwrap();
    let note = sb
        .denial_note("bash: /etc/hx-x: Permission denied\n[exit code: 1]")
        .unwrap();
    assert!(note.starts_with("[sandbox] hx's sandbox refused the write to /etc/hx-x:"));
    assert!(note.contains("sandbox.writable_roots") && note.contains("--sandbox off"));
    assert!(!note.contains('\n'));
    assert_eq!(sb.denial_note("bash: ./x: Permission denied"), None);
    let ro = Plan::new(
        &settings(Mode::ReadOnly, true, false),
        &ws,
        &env(&[]),
        Kernel::Abi(7),
    );
    let note = ro
        .sandbox()
        .unwrap()
        .unwrap()
        .denial_note("bash: ./x: Permission denied")
        .unwrap();
    assert!(note.contains("read-only") && note.contains("--sandbox workspace-write"));
}

#[test]
fn a_writable_root_holding_a_folder_on_path_is_named() {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().canonicalize().unwrap();
    for sub in [".cargo/bin", ".cargo/registry", "bin", "tools"] {
        std::fs::create_dir_all(home_path.join(sub)).unwrap();
    }
    std::os::unix::fs::symlink(home_path.join("tools"), home_path.join("tools-link")).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let h = |rel: &str| home_path.join(rel).display().to_string();
    // The PATH as written: a link to a root, a folder that does not exist yet, a relative
    // entry and the empty one (both name no fixed folder), a `..` beyond what exists.
    let path = [
        h(".cargo/bin"),
        h("tools-link/bin"),
        h(".local/bin"),
        "bin".to_string(),
        String::new(),
        h("gone/../bin2"),
        "/usr/bin".to_string(),
    ]
    .join(":");
    let folders = roots::path_folders(&path);
    assert_eq!(
        folders,
        [
            home_path.join(".cargo/bin"),
            home_path.join("tools/bin"),
            home_path.join(".local/bin"),
            Path::new("/usr/bin").canonicalize().unwrap(),
        ]
    );
    let roots = [
        "~/.cargo",
        "~/.cargo/registry",
        "~/bin",
        "~/tools",
        "~/.cargo/bin",
    ];
    let s = Settings {
        writable_roots: roots.iter().map(|r| r.to_string()).collect(),
        ..Settings::default()
    };
    let e = env(&[("HOME", &h("")), ("PATH", &path)]);
    let plan = Plan::new(&s, ws.path(), &e, Kernel::Abi(6));
    let tail = ": a command could put a program there that your hooks and your shell then run \
                outside the sandbox; allow a folder inside it that holds no programs instead \
                (such as ~/.cargo/registry rather than ~/.cargo)";
    assert_eq!(
        plan.warnings,
        [
            format!(
                "sandbox.writable_roots: \"~/.cargo\" ({}) holds {}, a folder on PATH{tail}",
                h(".cargo"),
                h(".cargo/bin")
            ),
            format!(
                "sandbox.writable_roots: \"~/tools\" ({}) holds {}, a folder on PATH{tail}",
                h("tools"),
                h("tools/bin")
            ),
            format!(
                "sandbox.writable_roots: \"~/.cargo/bin\" ({}) is a folder on PATH{tail}",
                h(".cargo/bin")
            ),
            // Issue 32: relative entries name the workspace for hooks; said once, together.
            "PATH holds the relative entries \"bin\", \"\" (the current folder), which name \
             whatever folder a program runs in (the workspace, for your hooks): your hooks and \
             your shell would run a program a command puts there; hx itself never looks a \
             program up through them"
                .to_string(),
        ]
    );
    // Still writable: the warning names a risk the user chose, it does not undo the choice.
    assert!(plan
        .writable
        .iter()
        .any(|r| r.path == home_path.join(".cargo")));
    // The home folder holds two of them; and no PATH at all, nothing to say.
    let s = Settings {
        writable_roots: vec!["~".into()],
        ..Settings::default()
    };
    let plan = Plan::new(&s, ws.path(), &e, Kernel::Abi(6));
    // The second is the relative entries' (above).
    assert_eq!(plan.warnings.len(), 2, "{:?}", plan.warnings);
    assert!(
        plan.warnings[0].contains(&format!(
            "holds {}, {}, {}, folders on PATH",
            h(".cargo/bin"),
            h("tools/bin"),
            h(".local/bin")
        )),
        "{}",
        plan.warnings[0]
    );
    let plan = Plan::new(&s, ws.path(), &env(&[("HOME", &h(""))]), Kernel::Abi(6));
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}
