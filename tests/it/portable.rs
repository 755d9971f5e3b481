//! The portable build (`scripts/portable-build`): hx and hx-pod need no glibc newer than the
//! floor, and start and run a task in an old system's root file system (`scripts/old-rootfs`:
//! Debian 11, glibc 2.31).
//!
//! Both need what only `.ci/run` makes, a release build linked by zig and a debootstrap root:
//! `HX_PORTABLE_DIR` names the folder of the two binaries, `HX_OLD_ROOTFS` the root. Without
//! them each test says what it needs on stderr and passes; `.ci/run` sets both.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{tool_results, Call, FakeServer, Reply};

/// The newest glibc the portable binaries may need: the target `scripts/portable-build`
/// names (`x86_64-unknown-linux-gnu.2.17`).
const FLOOR: (u32, u32) = (2, 17);

fn env_path(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            eprintln!(
                "skipped: {var} is not set ({what}); .ci/run sets it, or run \
                 scripts/portable-build and scripts/old-rootfs yourself"
            );
            None
        }
    }
}

/// Every glibc symbol version `binary` asks for, as (major, minor).
fn glibc_versions(binary: &Path) -> Vec<(u32, u32)> {
    let out = Command::new("objdump")
        .arg("-T")
        .arg(binary)
        .output()
        .expect("objdump (binutils) runs");
    assert!(out.status.success(), "objdump -T {}", binary.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut versions: Vec<(u32, u32)> = text
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|w| w.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut parts = v.split('.');
            let major = parts.next()?.parse().ok()?;
            let minor = parts.next().unwrap_or("0").parse().ok()?;
            Some((major, minor))
        })
        .collect();
    versions.sort_unstable();
    versions.dedup();
    versions
}

#[test]
fn the_portable_binaries_need_no_glibc_newer_than_the_floor() {
    let Some(dir) = env_path(
        "HX_PORTABLE_DIR",
        "the folder of the portable hx and hx-pod",
    ) else {
        return;
    };
    for name in ["hx", "hx-pod"] {
        let versions = glibc_versions(&dir.join(name));
        // Linked against glibc at all: a binary without any version would mean the check
        // read nothing.
        assert!(!versions.is_empty(), "{name} asks for no glibc symbol");
        let newest = versions.last().copied().unwrap_or_default();
        assert!(
            newest <= FLOOR,
            "{name} needs glibc {}.{}, newer than the floor {}.{}: {versions:?}",
            newest.0,
            newest.1,
            FLOOR.0,
            FLOOR.1
        );
    }
}

#[test]
fn the_portable_hx_runs_a_task_in_its_pod_in_a_debian_11_root() {
    let Some(dir) = env_path(
        "HX_PORTABLE_DIR",
        "the folder of the portable hx and hx-pod",
    ) else {
        return;
    };
    let Some(root) = env_path("HX_OLD_ROOTFS", "a Debian 11 root file system") else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: chroot needs root");
        return;
    }
    let bin = root.join("usr/local/bin");
    for name in ["hx", "hx-pod"] {
        std::fs::copy(dir.join(name), bin.join(name)).expect("copy the binary into the root");
    }
    let workspace = "/root/portable-ws";
    std::fs::create_dir_all(root.join(workspace.trim_start_matches('/'))).expect("workspace");
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            r#"{"command":"cat /etc/debian_version >/dev/null && echo ran in the old root"}"#,
        )]),
        Reply::text("Done."),
    ]);
    // The old root as the root of a mount namespace of the test's (pivot_root, not chroot:
    // the kernel refuses user namespaces, so hx's pod, to a chrooted process), with its own
    // /proc; nothing of it outlives the run on the host. The loopback network is the host's,
    // where the fake server listens.
    let inside = format!(
        "mount -t proc proc /proc && umount -l /.oldroot && cd {workspace} && exec env -i \
         HOME=/root PATH=/usr/local/bin:/usr/bin:/bin DEEPSEEK_API_KEY=test-key \
         DEEPSEEK_BASE_URL={url} HX_NOW=2026-12-02T12:00:00Z hx agent --ephemeral 'run it'",
        url = server.url()
    );
    std::fs::create_dir_all(root.join(".oldroot")).expect("a place for the old root");
    let script = "mount --bind \"$0\" \"$0\" && cd \"$0\" && pivot_root . .oldroot && cd / && \
                  exec /bin/sh -c \"$1\"";
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script])
        .arg(&root)
        .arg(&inside)
        .output()
        .expect("unshare runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Done.\n", "{stderr}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{stderr}");
    assert_eq!(tool_results(&reqs[1].body), ["ran in the old root\n"]);
    // The default sandbox, pod and all, works in the old system: nothing is said of it.
    assert!(!stderr.contains("warning"), "{stderr}");
}
