use super::*;

use proptest::prelude::*;

fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect()
}

fn names(env: &ToolEnv) -> Vec<String> {
    env.vars()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

const HOST: [(&str, &str); 10] = [
    ("PATH", "/usr/bin"),
    ("HOME", "/home/u"),
    ("LC_ALL", "C.UTF-8"),
    ("EDITOR", "vi"),
    ("DEEPSEEK_API_KEY", "sk-1"),
    ("GITHUB_TOKEN", "ghp"),
    ("my_password", "pw"),
    ("AWS_SECRET_ACCESS_KEY", "aws"),
    ("Keyboard", "us"),
    ("WORK_LLM_CRED", "work"),
];

#[test]
fn default_keeps_everything_but_secrets() {
    let env = EnvPolicy::default().apply(vars(&HOST));
    // Name order (the map is sorted); KEY matches Keyboard too, as documented.
    assert_eq!(
        names(&env),
        ["EDITOR", "HOME", "LC_ALL", "PATH", "WORK_LLM_CRED"]
    );
}

#[test]
fn configured_key_variables_are_dropped_by_exact_name() {
    let keys = BTreeSet::from(["WORK_LLM_CRED".to_string()]);
    let p = EnvPolicy::new(Inherit::All, false, &[], &[], BTreeMap::new(), keys).unwrap();
    let env = p.apply(vars(&HOST));
    assert_eq!(names(&env), ["EDITOR", "HOME", "LC_ALL", "PATH"]);
}

#[test]
fn ignore_default_excludes_keeps_secrets() {
    let keys = BTreeSet::from(["WORK_LLM_CRED".to_string()]);
    let p = EnvPolicy::new(Inherit::All, true, &[], &[], BTreeMap::new(), keys).unwrap();
    assert_eq!(
        p.apply(vars(&HOST)).get("GITHUB_TOKEN"),
        Some("ghp".as_ref())
    );
    assert_eq!(
        p.apply(vars(&HOST)).get("WORK_LLM_CRED"),
        Some("work".as_ref())
    );
}

#[test]
fn core_keeps_the_listed_names_and_locale() {
    let p = EnvPolicy::new(
        Inherit::Core,
        false,
        &[],
        &[],
        BTreeMap::new(),
        BTreeSet::new(),
    );
    let env = p.unwrap().apply(vars(&HOST));
    assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
}

#[test]
fn none_gives_only_what_set_gives() {
    let set = BTreeMap::from([("CI".to_string(), "1".to_string())]);
    let p = EnvPolicy::new(Inherit::None, false, &[], &[], set, BTreeSet::new()).unwrap();
    assert_eq!(names(&p.apply(vars(&HOST))), ["CI"]);
}

#[test]
fn exclude_and_include_only_ignore_case_and_set_comes_last() {
    let set = BTreeMap::from([
        ("GITHUB_TOKEN".to_string(), "given".to_string()),
        ("NEW".to_string(), "x".to_string()),
    ]);
    let p = EnvPolicy::new(
        Inherit::All,
        false,
        &strings(&["lc_*"]),
        &strings(&["path", "Home", "lc_all", "edit?r"]),
        set,
        BTreeSet::new(),
    )
    .unwrap();
    let env = p.apply(vars(&HOST));
    // LC_ALL is excluded before include_only could keep it; set overrides the default
    // exclude of GITHUB_TOKEN and is not filtered by include_only.
    assert_eq!(
        names(&env),
        ["EDITOR", "GITHUB_TOKEN", "HOME", "NEW", "PATH"]
    );
    assert_eq!(env.get("GITHUB_TOKEN"), Some("given".as_ref()));
}

#[test]
fn bad_rules_are_errors_naming_them() {
    let e = EnvPolicy::new(
        Inherit::All,
        false,
        &strings(&["[unclosed"]),
        &[],
        BTreeMap::new(),
        BTreeSet::new(),
    )
    .unwrap_err();
    assert!(e.starts_with("exclude: bad pattern \"[unclosed\""), "{e}");
    for bad in ["", "A=B", "A\0B"] {
        let set = BTreeMap::from([(bad.to_string(), "v".to_string())]);
        let e = EnvPolicy::new(Inherit::All, false, &[], &[], set, BTreeSet::new()).unwrap_err();
        assert!(e.starts_with("set: "), "{e}");
    }
    let set = BTreeMap::from([("A".to_string(), "v\0".to_string())]);
    let e = EnvPolicy::new(Inherit::All, false, &[], &[], set, BTreeSet::new()).unwrap_err();
    assert_eq!(e, "set: the value of A contains NUL");
}

#[test]
fn non_utf8_names_are_matched_lossily_and_kept_intact() {
    use std::os::unix::ffi::OsStringExt;
    let odd = OsString::from_vec(b"ODD_\xff".to_vec());
    let secret = OsString::from_vec(b"\xffTOKEN".to_vec());
    let env = EnvPolicy::default().apply([(odd.clone(), "1".into()), (secret, "2".into())]);
    let kept: Vec<_> = env.vars().map(|(k, _)| k.to_os_string()).collect();
    assert_eq!(kept, [odd]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the host has, no name that looks like a secret survives the default policy.
    #[test]
    fn no_secret_looking_name_survives(
        names in proptest::collection::vec("[A-Za-z_]{0,6}(key|Secret|TOKEN|passWord)?[A-Za-z_]{0,6}", 0..12)
    ) {
        let host: Vec<(OsString, OsString)> =
            names.iter().map(|n| (n.into(), "v".into())).collect();
        let env = EnvPolicy::default().apply(host);
        for (k, _) in env.vars() {
            let up = k.to_string_lossy().to_uppercase();
            for word in ["KEY", "SECRET", "TOKEN", "PASSWORD"] {
                prop_assert!(!up.contains(word), "{} survived", up);
            }
        }
    }
}

/// Every socket variable, as a desktop session over ssh with tmux and Docker sets them.
const SOCKETS: [(&str, &str); 18] = [
    ("SSH_AUTH_SOCK", "/tmp/ssh-XYZ/agent.12"),
    ("SSH_AGENT_PID", "13"),
    ("GPG_AGENT_INFO", "/run/user/1000/gnupg/S.gpg-agent:0:1"),
    (
        "DBUS_SESSION_BUS_ADDRESS",
        "unix:path=/run/user/1000/bus,guid=abc",
    ),
    ("XDG_RUNTIME_DIR", "/run/user/1000"),
    ("TMUX", "/tmp/tmux-1000/default,4242,0"),
    ("TMUX_PANE", "%1"),
    ("STY", "4243.pts-0.host"),
    ("DOCKER_HOST", "unix:///var/run/docker.sock"),
    ("CONTAINER_HOST", "unix:///run/user/1000/podman/podman.sock"),
    ("WAYLAND_DISPLAY", "wayland-0"),
    ("DISPLAY", ":0.0"),
    ("XAUTHORITY", "/home/u/.Xauthority"),
    ("KITTY_LISTEN_ON", "unix:/tmp/kitty-1"),
    ("NVIM", "/run/user/1000/nvim.1.0"),
    ("SWAYSOCK", "/run/user/1000/sway-ipc.sock"),
    ("PULSE_SERVER", "unix:/run/user/1000/pulse/native"),
    ("VSCODE_IPC_HOOK_CLI", "/run/user/1000/vscode-ipc.sock"),
];

fn sandboxed(allowed: &[&str]) -> Vec<String> {
    let mut host = vars(&SOCKETS);
    host.push(("PATH".into(), "/usr/bin".into()));
    let allowed: Vec<PathBuf> = allowed.iter().map(PathBuf::from).collect();
    names(&EnvPolicy::default().apply_sandboxed(host, &allowed))
}

#[test]
fn socket_variables_are_dropped_for_sandboxed_commands() {
    assert_eq!(sandboxed(&[]), ["PATH"]);
    // Every one of them is listed, so each is covered.
    for (name, _) in SOCKETS {
        assert!(SOCKET_VARS.contains(&name), "{name}");
    }
    // With the sandbox off they pass as before.
    let env = EnvPolicy::default().apply(vars(&SOCKETS));
    assert_eq!(names(&env).len(), SOCKETS.len());
}

#[test]
fn a_socket_variable_naming_an_allowed_socket_is_kept() {
    // The agent, with its companion; the others still go.
    assert_eq!(
        sandboxed(&["/tmp/ssh-XYZ//agent.12"]),
        ["PATH", "SSH_AGENT_PID", "SSH_AUTH_SOCK"]
    );
    // D-Bus in its `unix:path=` form: the bus, and the runtime folder that holds it.
    assert_eq!(
        sandboxed(&["/run/user/1000/bus"]),
        ["DBUS_SESSION_BUS_ADDRESS", "PATH", "XDG_RUNTIME_DIR"]
    );
    assert_eq!(
        sandboxed(&["/tmp/tmux-1000/default", "/var/run/docker.sock"]),
        ["DOCKER_HOST", "PATH", "TMUX", "TMUX_PANE"]
    );
    // Wayland's name is relative to the runtime folder; X's display is a socket number.
    assert_eq!(
        sandboxed(&["/run/user/1000/wayland-0", "/tmp/.X11-unix/X0"]),
        [
            "DISPLAY",
            "PATH",
            "WAYLAND_DISPLAY",
            "XAUTHORITY",
            "XDG_RUNTIME_DIR"
        ]
    );
}

#[test]
fn socket_values_are_read_as_their_programs_read_them() {
    let t = |n: &str, v: &str| socket_target(n, v, Some("/run/user/7"));
    let one = |p: &str| Target::Sockets(vec![PathBuf::from(p)]);
    let none = Target::Sockets(Vec::new());
    assert_eq!(
        t(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/a,guid=1;unix:path=/b"
        ),
        Target::Sockets(vec!["/a".into(), "/b".into()])
    );
    // An abstract or TCP address is not a socket anyone can allow.
    assert_eq!(
        t("DBUS_SESSION_BUS_ADDRESS", "unix:path=/a;unix:abstract=/x"),
        none
    );
    assert_eq!(t("DBUS_SESSION_BUS_ADDRESS", "tcp:host=h,port=1"), none);
    assert_eq!(t("DOCKER_HOST", "tcp://127.0.0.1:2375"), none);
    assert_eq!(t("DISPLAY", "host:0"), none);
    assert_eq!(t("DISPLAY", "unix:12"), one("/tmp/.X11-unix/X12"));
    assert_eq!(t("WAYLAND_DISPLAY", "/abs/w"), one("/abs/w"));
    assert_eq!(
        t("PIPEWIRE_REMOTE", "pipewire-0"),
        one("/run/user/7/pipewire-0")
    );
    assert_eq!(socket_target("WAYLAND_DISPLAY", "wayland-0", None), none);
    assert_eq!(t("KITTY_LISTEN_ON", "unix:@kitty"), one("@kitty"));
    assert_eq!(t("WAYLAND_SOCKET", "3"), none);
    // A relative name never matches an allowed (absolute) socket.
    let allowed = Allowed::new(&[PathBuf::from("/x/agent")]);
    assert!(!allowed.has(Path::new("agent")) && !allowed.has(Path::new("/x/../x/agent")));
    assert!(allowed.has(Path::new("/x/./agent")) && allowed.beneath(Path::new("/x")));
    assert!(!allowed.beneath(Path::new("/x/agent/deeper")));
    // screen's session is a socket's file name.
    let mut host = vars(&[("STY", "4243.pts-0.host")]);
    let env = EnvPolicy::default()
        .apply_sandboxed(host.clone(), &["/run/screen/S-u/4243.pts-0.host".into()]);
    assert_eq!(names(&env), ["STY"]);
    // A companion without the variable it goes with is dropped.
    host = vars(&[("SSH_AGENT_PID", "13")]);
    assert!(names(&EnvPolicy::default().apply_sandboxed(host, &[])).is_empty());
}

#[test]
fn a_socket_variable_set_on_purpose_arrives() {
    let set = BTreeMap::from([("SSH_AUTH_SOCK".to_string(), "/mine".to_string())]);
    let p = EnvPolicy::new(Inherit::All, false, &[], &[], set, BTreeSet::new()).unwrap();
    let env = p.apply_sandboxed(vars(&SOCKETS), &[]);
    assert_eq!(names(&env), ["SSH_AUTH_SOCK"]);
    assert_eq!(env.get("SSH_AUTH_SOCK"), Some("/mine".as_ref()));
}
