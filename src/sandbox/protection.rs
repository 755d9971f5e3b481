//! What the sandbox protects against, one protection at a time, and whether the running
//! kernel enforces each: a pure function of the mode, `network`, the Landlock ABI and whether
//! seccomp filters can be had and whether the run has its pod of namespaces, so that every
//! kernel can be tested on any kernel.

use super::{Kernel, Mode};

/// One thing the sandbox keeps a command from doing to the rest of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Writing outside the writable folders (Landlock file rights).
    Writes,
    /// Any IPv4 or IPv6 traffic, when `network = false`: TCP, UDP, Fast Open, MPTCP (the
    /// seccomp filter refuses IP sockets; Landlock's TCP rights stand behind it).
    Network,
    /// Signalling processes it did not start: hx, the user's other programs (Landlock scope).
    Signals,
    /// Connecting to abstract Unix sockets made outside it (Landlock scope).
    AbstractSockets,
    /// Using the capabilities of the user hx runs as (a root hx's, in CI).
    Capabilities,
    /// Opening terminal devices: the user's other tabs, the console (the pod's `/dev`).
    Terminals,
    /// Outliving hx, however hx ends (the pod's PID namespace, ended with hx).
    Leftovers,
    /// chmod, chown, utimes and xattrs outside the writable folders (read-only mounts).
    Metadata,
    /// Connecting to other programs' pathname Unix sockets: tmux, D-Bus, ssh-agent, Docker.
    PathnameSockets,
    /// Planting code in `.git` (config, hooks, info) that the user's own git then runs.
    GitMetadata,
}

impl Protection {
    pub const ALL: [Protection; 10] = [
        Protection::Writes,
        Protection::Network,
        Protection::Signals,
        Protection::AbstractSockets,
        Protection::Capabilities,
        Protection::Terminals,
        Protection::Leftovers,
        Protection::Metadata,
        Protection::PathnameSockets,
        Protection::GitMetadata,
    ];

    /// Its name in `hx sandbox` and in warnings.
    pub fn name(self) -> &'static str {
        match self {
            Protection::Writes => "writes",
            Protection::Network => "network",
            Protection::Signals => "signals",
            Protection::AbstractSockets => "abstract sockets",
            Protection::Capabilities => "capabilities",
            Protection::Terminals => "terminals",
            Protection::Leftovers => "leftovers",
            Protection::Metadata => "metadata",
            Protection::PathnameSockets => "pathname sockets",
            Protection::GitMetadata => "git metadata",
        }
    }

    /// Its key in `hx sandbox --json`.
    pub fn key(self) -> &'static str {
        match self {
            Protection::AbstractSockets => "abstract_sockets",
            Protection::PathnameSockets => "pathname_sockets",
            Protection::GitMetadata => "git_metadata",
            p => p.name(),
        }
    }

    /// What it refuses, in the words a list of gaps uses ("not refusing ...").
    pub fn refusal(self) -> &'static str {
        match self {
            Protection::Writes => "refusing writes outside the writable folders",
            Protection::Network => "refusing IPv4 and IPv6 sockets",
            Protection::Signals => "refusing signals to processes outside the command",
            Protection::AbstractSockets => {
                "refusing connections to abstract Unix sockets made outside the command"
            }
            Protection::Capabilities => "dropping every capability",
            Protection::Terminals => "hiding the terminals (/dev/pts, /dev/tty*, /dev/console)",
            Protection::Leftovers => "ending what commands started when hx ends, however it ends",
            Protection::Metadata => {
                "refusing chmod, chown, touch and xattrs outside the writable folders"
            }
            Protection::PathnameSockets => {
                "hiding other programs' Unix sockets (tmux, D-Bus, ssh-agent, Docker)"
            }
            Protection::GitMetadata => "keeping .git/config, hooks and info read-only",
        }
    }
}

/// Why a protection is not enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The mode is `off`.
    Off,
    /// The kernel has no Landlock at all.
    NoLandlock,
    /// The kernel's Landlock is older than the protection needs.
    Abi { needs: i32, has: i32 },
    /// No seccomp filter here: the kernel has none, or hx none for this architecture.
    NoSeccomp,
    /// It needs the run's pod, which needs user namespaces hx cannot make here.
    NoPod,
    /// The workspace has more folders than hx looks through, at the start, for the git
    /// folders of nested repositories (`gitdirs::MAX_FOLDERS`).
    Bounded,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Why::Off => f.write_str("the sandbox is off"),
            Why::NoLandlock => f.write_str("this kernel has no Landlock"),
            Why::Abi { needs, has } => {
                write!(f, "needs Landlock ABI {needs}; this kernel has ABI {has}")
            }
            Why::NoSeccomp => f.write_str(
                "needs a seccomp filter, which this kernel (or hx on this architecture) lacks",
            ),
            Why::NoPod => f.write_str("needs the run's pod, which needs user namespaces"),
            Why::Bounded => write!(
                f,
                "the workspace has more than the {} folders hx looks through for nested \
                 repositories when a run starts",
                super::gitdirs::MAX_FOLDERS
            ),
        }
    }
}

/// Whether a protection holds for every command of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Enforced, by this.
    Enforced(&'static str),
    /// Enforced but for a part (`gap`), which needs a newer Landlock (or the pod).
    Partial {
        by: &'static str,
        gap: &'static str,
        why: Why,
    },
    /// Not enforced.
    Missing(Why),
    /// Not asked for: `sandbox.network = true` allows TCP.
    Allowed,
}

impl Status {
    /// Enforced whole, or not asked for: nothing to warn about.
    pub fn holds(&self) -> bool {
        matches!(self, Status::Enforced(_) | Status::Allowed)
    }
}

/// One protection and its status on this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub protection: Protection,
    pub status: Status,
}

impl Check {
    /// What is not enforced and what it needs, as a warning lists it; `None` when nothing is
    /// missing.
    pub fn gap(&self) -> Option<String> {
        let needs = |why: &Why| match why {
            Why::Abi { needs, .. } => format!(" (needs ABI {needs})"),
            Why::NoLandlock => " (needs Landlock)".into(),
            Why::NoSeccomp => " (needs seccomp)".into(),
            Why::NoPod => " (needs user namespaces)".into(),
            Why::Bounded => format!(" (past {} folders)", super::gitdirs::MAX_FOLDERS),
            Why::Off => String::new(),
        };
        match &self.status {
            Status::Enforced(_) | Status::Allowed => None,
            Status::Partial { gap, why, .. } => Some(format!("{gap}{}", needs(why))),
            Status::Missing(why) => Some(format!("{}{}", self.protection.refusal(), needs(why))),
        }
    }
}

/// The Landlock ABI that truncation needs (`LANDLOCK_ACCESS_FS_TRUNCATE`); writes are refused
/// from ABI 1 on.
const TRUNCATE_ABI: i32 = 3;
/// TCP bind and connect rights.
const NETWORK_ABI: i32 = 4;
/// Signal and abstract Unix socket scopes.
const SCOPES_ABI: i32 = 6;

/// How the pod keeps the user's git from running what a command wrote (issue 32, item 3).
pub const GIT_BY: &str = "the git folders found at the start (.git, submodules', worktrees', \
    nested repositories') with config, hooks and info mounted read-only, .git files and \
    worktrees' commondir read-only, a commondir a command makes removed after it";
/// What is left when the walk for nested repositories stopped at its bound.
pub const GIT_GAP: &str = "protecting repositories nested past the folders looked through";

/// How the seccomp filter enforces `network = false`.
pub const BY_SECCOMP: &str =
    "seccomp filter: no IPv4 or IPv6 socket, the command's own loopback servers included";
/// What Landlock's TCP rights leave to the seccomp filter.
const PAST_TCP: &str = "refusing UDP, TCP Fast Open and MPTCP";

/// What `kernel` enforces of `mode` with `network`, protection by protection, in
/// [`Protection::ALL`]'s order; `seccomp`: whether commands get the seccomp filter; `pod`:
/// whether the run's commands run in a pod (user namespaces usable here).
pub fn assess(mode: Mode, network: bool, kernel: Kernel, seccomp: bool, pod: bool) -> Vec<Check> {
    let abi = kernel.abi();
    const MOUNTS: &str = "read-only mounts outside the writable folders";
    let by_pod = |by: &'static str| {
        if mode == Mode::Off {
            Status::Missing(Why::Off)
        } else if pod {
            Status::Enforced(by)
        } else {
            Status::Missing(Why::NoPod)
        }
    };
    let landlock = |needs: i32, by: &'static str| {
        if mode == Mode::Off {
            Status::Missing(Why::Off)
        } else if kernel.why_missing().is_some() {
            Status::Missing(Why::NoLandlock)
        } else if abi < needs {
            Status::Missing(Why::Abi { needs, has: abi })
        } else {
            Status::Enforced(by)
        }
    };
    Protection::ALL
        .into_iter()
        .map(|protection| {
            let status = match protection {
                _ if mode == Mode::Off => Status::Missing(Why::Off),
                Protection::Writes if pod => Status::Enforced(MOUNTS),
                Protection::Network if pod && !network => {
                    Status::Enforced("a network namespace of the run's, with only loopback")
                }
                Protection::Signals if pod => Status::Enforced("the run's PID namespace"),
                Protection::AbstractSockets if pod && !network => {
                    Status::Enforced("the run's network namespace")
                }
                Protection::Terminals => {
                    by_pod("a /dev of the run's own, without the host's terminals")
                }
                Protection::Leftovers if pod => {
                    Status::Enforced("the run's PID namespace, which ends with hx")
                }
                Protection::Leftovers => Status::Partial {
                    by: "hx's sweep when it exits",
                    gap: "ending what commands started when hx is killed",
                    why: Why::NoPod,
                },
                Protection::Metadata => by_pod(MOUNTS),
                Protection::PathnameSockets => by_pod(
                    "a /tmp of the run's own, /run hidden, /dev/null over other programs' sockets",
                ),
                Protection::GitMetadata => by_pod(GIT_BY),
                Protection::Writes => match landlock(TRUNCATE_ABI, "Landlock file rights") {
                    Status::Missing(Why::Abi { needs, has }) => Status::Partial {
                        by: "Landlock file rights",
                        gap: "refusing to truncate files outside the writable folders",
                        why: Why::Abi { needs, has },
                    },
                    s => s,
                },
                Protection::Network if network => Status::Allowed,
                Protection::Network if mode == Mode::Off => Status::Missing(Why::Off),
                Protection::Network if seccomp => Status::Enforced(BY_SECCOMP),
                Protection::Network => match landlock(NETWORK_ABI, "Landlock TCP rights") {
                    Status::Enforced(by) => Status::Partial {
                        by,
                        gap: PAST_TCP,
                        why: Why::NoSeccomp,
                    },
                    // Neither: the gap is every socket, and Landlock is what is missing.
                    s => s,
                },
                Protection::Signals => landlock(SCOPES_ABI, "Landlock signal scope"),
                Protection::AbstractSockets => {
                    landlock(SCOPES_ABI, "Landlock abstract Unix socket scope")
                }
                // Plain prctl and capset calls, which every Linux has: only the mode decides.
                Protection::Capabilities if mode == Mode::Off => Status::Missing(Why::Off),
                Protection::Capabilities => {
                    Status::Enforced("every capability dropped before the command starts")
                }
            };
            Check { protection, status }
        })
        .collect()
}

/// `a`, `a and b`, `a, b and c`.
pub(super) fn and_list(items: &[&str]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}
