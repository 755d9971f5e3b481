//! `hx sandbox`: what a run here would enforce, without an API key.

use serde_json::{json, Value};

use super::{exit, fail, SandboxArgs};
use crate::config::{process_env, Flags};
use crate::sandbox::{Check, Enforcement, Kernel, Plan, Protection, Status, Why};
use crate::text::Warning;

pub(super) fn sandbox_command(args: SandboxArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let flags = Flags {
        sandbox: args.sandbox,
        ..Flags::default()
    };
    // An untrusted project file's sandbox settings do not count; `hx sandbox` says so.
    let config = match super::load_config(&cwd, &env, &flags) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The same root the tools use, so the paths shown are the ones the kernel is given.
    let workspace = match cwd.canonicalize() {
        Ok(w) => w,
        Err(e) => return fail(exit::USAGE, format!("cannot open the workspace: {e}")),
    };
    let plan = Plan::probed(&config.sandbox, &workspace, &env, Kernel::detect());
    if args.json {
        outln!("{}", to_json(&plan));
    } else {
        super::out_text(&to_text(&plan));
        for w in &plan.warnings {
            errln!("{}", Warning::new(w));
        }
    }
    exit::ANSWERED
}

fn enforced(plan: &Plan) -> String {
    match (&plan.enforcement, &plan.refusal) {
        (_, Some(r)) => format!("no: a run would refuse to start ({r})"),
        (Enforcement::Off, _) => "no: the mode is off".into(),
        (Enforcement::Full, _) => "fully".into(),
        (Enforcement::Partial(missing), _) => format!("partly: not {}", missing.join("; not ")),
    }
}

/// One protection's line: whether it holds, by what, or why not.
fn status_text(check: &Check) -> String {
    match &check.status {
        Status::Enforced(by) => format!("enforced ({by})"),
        Status::Partial { by, gap, why } => format!("partly ({by}): not {gap}: {why}"),
        Status::Missing(why) => format!("missing: {why}"),
        Status::Allowed => "allowed (sandbox.network = true)".into(),
    }
}

fn status_json(check: &Check) -> Value {
    let why = |why: &Why| {
        let mut v = json!({ "why": why.to_string() });
        if let Why::Abi { needs, .. } = why {
            v["needs_abi"] = json!(needs);
        }
        v
    };
    match &check.status {
        Status::Enforced(by) => json!({ "status": "enforced", "by": by }),
        Status::Partial { by, gap, why: w } => {
            let mut v = why(w);
            v["status"] = json!("partial");
            v["by"] = json!(by);
            v["not"] = json!(gap);
            v
        }
        Status::Missing(w) => {
            let mut v = why(w);
            v["status"] = json!("missing");
            v
        }
        Status::Allowed => json!({ "status": "allowed" }),
    }
}

fn landlock(kernel: Kernel) -> String {
    match kernel.why_missing() {
        None => format!("ABI {}", kernel.abi()),
        Some(why) => format!("none: {why}"),
    }
}

fn to_text(plan: &Plan) -> String {
    let s = &plan.settings;
    let mut out = format!(
        "landlock: {}\nmode:     {} ({})\n",
        landlock(plan.kernel),
        s.mode.name(),
        s.source
    );
    let mut lead = "writable:";
    for r in &plan.writable {
        // In the pod, /tmp (and $TMPDIR, which commands see as /tmp) is the run's own.
        let (path, why) = match r.why {
            "the temporary folder" if plan.pod => (
                "/tmp".to_string(),
                "the run's own: a new folder in $TMPDIR each run, removed at its end",
            ),
            "$TMPDIR" if plan.pod => continue,
            why => (r.path.display().to_string(), why),
        };
        out.push_str(&format!("{lead} {path} ({why})\n"));
        lead = "         ";
    }
    if plan.writable.is_empty() {
        let none = match s.mode {
            crate::sandbox::Mode::Off => "everything (the mode is off)",
            _ => "nothing but the devices below",
        };
        out.push_str(&format!("writable: {none}\n"));
    }
    let devices: Vec<String> = plan
        .devices
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    out.push_str(&format!("devices:  {}\n", devices.join(" ")));
    let network = match (s.mode, s.network) {
        (crate::sandbox::Mode::Off, _) | (_, true) => "allowed".to_string(),
        (_, false) if plan.pod => {
            "none: a network namespace of the run's, with only loopback".into()
        }
        (_, false) if plan.seccomp => "no IPv4 or IPv6 socket: TCP, UDP and the command's own \
            loopback servers refused (pathname Unix sockets are not confined)"
            .into(),
        (_, false) => {
            "TCP connect and bind refused (UDP and pathname Unix sockets are not confined)".into()
        }
    };
    out.push_str(&format!("network:  {network}\n"));
    out.push_str(&sockets_text(s));
    out.push_str(&format!(
        "required: {}\n",
        if s.required { "yes" } else { "no" }
    ));
    out.push_str(&format!("processes: {}\n", processes_text(plan)));
    out.push_str(&format!("denied:   {}\n", denied_text(plan)));
    out.push_str("protections:\n");
    let width = Protection::ALL
        .iter()
        .map(|p| p.name().len())
        .max()
        .unwrap_or(0)
        + 1;
    for check in &plan.protections {
        let label = format!("{}:", check.protection.name());
        out.push_str(&format!("  {label:<width$} {}\n", status_text(check)));
    }
    out.push_str(&format!("enforced: {}\n", enforced(plan)));
    out
}

/// The deny rules (`.hxignore`, Claude Code's `Read(...)`): the file tools refuse what they
/// match in every mode; what commands can still read is the sandbox's to say.
fn denied_text(plan: &Plan) -> String {
    let n = plan.deny.rules().len();
    if n == 0 {
        return "no deny rules (.hxignore, Read(...) in .claude/settings.json)".into();
    }
    format!(
        "{} refused by the file tools; {}",
        crate::text::count(n as u64, "rule"),
        plan.denied_in_commands()
    )
}

/// The bound on the pod's processes, and whether this kernel gives it.
fn processes_text(plan: &Plan) -> String {
    let n = crate::text::thousands(u64::from(plan.settings.max_processes));
    if plan.settings.mode == crate::sandbox::Mode::Off || !plan.pod {
        "not bounded (needs the run's pod)".into()
    } else if crate::sandbox::pod::own_pid_max() {
        format!("at most {n}, threads included (the pod's pid_max; sandbox.max_processes)")
    } else {
        format!("not bounded: {n} is set, but needs Linux 6.14 (a pid_max of the pod's own)")
    }
}

/// The `sockets:` lines: each allowed socket and whether it is one here, then the entries left
/// out; `none` without any.
fn sockets_text(s: &crate::sandbox::Settings) -> String {
    let mut lines: Vec<String> = s
        .allow_sockets
        .iter()
        .map(|p| format!("{} ({})", p.display(), socket_state(p)))
        .collect();
    lines.extend(
        s.allow_sockets_unset
            .iter()
            .map(|w| format!("{w} (left out: a variable it names is not set)")),
    );
    if lines.is_empty() {
        lines.push("none (sandbox.allow_sockets)".into());
    }
    let mut out = String::new();
    let mut lead = "sockets: ";
    for l in lines {
        out.push_str(&format!("{lead} {l}\n"));
        lead = "         ";
    }
    out
}

/// What is at an allowed socket's path now: it may be made later (an agent started after).
fn socket_state(path: &std::path::Path) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_socket() => "allowed",
        Ok(_) => "allowed, but not a socket now",
        Err(_) => "allowed, not there now",
    }
}

fn to_json(plan: &Plan) -> Value {
    let s = &plan.settings;
    let (status, missing): (&str, &[String]) = match &plan.enforcement {
        Enforcement::Off => ("off", &[]),
        Enforcement::Full => ("full", &[]),
        Enforcement::Partial(m) => ("partial", m),
    };
    let protections: serde_json::Map<String, Value> = plan
        .protections
        .iter()
        .map(|c| (c.protection.key().to_string(), status_json(c)))
        .collect();
    json!({
        "landlock_abi": plan.kernel.why_missing().is_none().then(|| plan.kernel.abi()),
        "landlock_missing": plan.kernel.why_missing(),
        "mode": s.mode.name(),
        "mode_source": s.source.to_string(),
        "writable_roots": plan.writable.iter().map(|r| json!({
            "path": r.path.display().to_string(),
            "why": r.why,
        })).collect::<Vec<_>>(),
        "devices": plan.devices.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
        "network": s.network,
        "required": s.required,
        "max_processes": s.max_processes,
        "processes_bounded": s.mode != crate::sandbox::Mode::Off
            && plan.pod
            && crate::sandbox::pod::own_pid_max(),
        "allow_sockets": s.allow_sockets.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "allow_sockets_unset": s.allow_sockets_unset,
        "denied": {
            "rules": plan.deny.rules().len(),
            "hidden_in_pod": plan.denied.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "hidden_partly": plan.denied.bounded,
            "in_commands": plan.denied_in_commands(),
        },
        "protections": protections,
        "enforcement": status,
        "not_enforced": missing,
        "refusal": plan.refusal,
        "warnings": plan.warnings,
    })
}
