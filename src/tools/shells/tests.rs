use std::time::Duration;

use serde_json::json;

use super::*;
use crate::tools::{Tool, ToolResult, Workspace};

fn cx(dir: &tempfile::TempDir) -> ToolContext {
    let mut cx = ToolContext::new(Workspace::new(dir.path()).unwrap());
    cx.shells = Arc::new(Shells::new(dir.path().join("logs")));
    cx
}

async fn bash(cx: &ToolContext, args: serde_json::Value) -> ToolResult {
    crate::tools::bash::Bash.call(args, cx).await
}

async fn output(cx: &ToolContext, args: serde_json::Value) -> ToolResult {
    BashOutput.call(args, cx).await
}

#[tokio::test]
async fn starts_at_once_and_reads_new_output_in_pieces() {
    let d = tempfile::tempdir().unwrap();
    let cx = cx(&d);
    std::fs::write(d.path().join("go"), "").unwrap();
    let cmd = "echo one; while [ -e go ]; do sleep 0.02; done; echo two";
    let r = bash(&cx, json!({"command": cmd, "run_in_background": true})).await;
    assert!(
        r.content.starts_with("Started background shell bg1."),
        "{r:?}"
    );
    let r = output(&cx, json!({"shell_id": "bg1", "wait": 10})).await;
    let log = d.path().join("logs").join("bg1.log");
    assert_eq!(
        r.content,
        format!("one\n[bg1 running; 4 bytes of output in {}]", log.display())
    );
    std::fs::remove_file(d.path().join("go")).unwrap();
    let r = output(
        &cx,
        json!({"shell_id": "bg1", "wait": 10, "pattern": "^tw"}),
    )
    .await;
    let r = if r.content.contains("running") {
        // The line came before the exit: the next read sees the end.
        output(&cx, json!({"shell_id": "bg1", "wait": 10})).await
    } else {
        r
    };
    assert!(
        r.content.ends_with(&format!(
            "[bg1 ended: exit code 0; 8 bytes of output in {}]",
            log.display()
        )),
        "{r:?}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
    // The read saw the end: no note follows.
    assert_eq!(cx.shells.before_request(), None);
}

#[tokio::test]
async fn an_end_nobody_read_is_noted_once() {
    let d = tempfile::tempdir().unwrap();
    let cx = cx(&d);
    let cmd = "for i in 1 2 3 4 5 6 7; do echo line $i; done; exit 3";
    bash(&cx, json!({"command": cmd, "run_in_background": true})).await;
    let shell = cx.shells.get("bg1").unwrap();
    tokio::time::timeout(Duration::from_secs(10), shell.ended())
        .await
        .unwrap();
    assert_eq!(
        cx.shells.before_request().as_deref(),
        Some(
            "[background shell bg1 ended: exit code 3] for i in 1 2 3 4 5 6 7; do echo line \
             $i; done; exit 3\nlast lines:\nline 3\nline 4\nline 5\nline 6\nline 7"
        )
    );
    assert_eq!(cx.shells.before_request(), None);
}

#[tokio::test]
async fn kill_ends_the_group_and_the_limit_counts_running_shells() {
    let d = tempfile::tempdir().unwrap();
    let mut cx = cx(&d);
    cx.limits.background_shells = 1;
    let cmd = "sleep 300 & echo $! > pid; wait";
    bash(&cx, json!({"command": cmd, "run_in_background": true})).await;
    let r = bash(&cx, json!({"command": "true", "run_in_background": true})).await;
    assert_eq!(
        r.content,
        "Error: 1 background shells are running, the most a run may have ([tools] \
         background_shells = 1); end one with kill_shell first"
    );
    let pid_file = d.path().join("pid");
    for _ in 0..200 {
        if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid: libc::pid_t = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let r = KillShell.call(json!({"shell_id": "bg1"}), &cx).await;
    assert!(r.content.contains("[bg1 killed;"), "{r:?}");
    for _ in 0..100 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z'),
        "sleep survived: {stat}"
    );
    // Ended: the limit lets another start; the killed one is told of, not noted.
    let r = bash(&cx, json!({"command": "true", "run_in_background": true})).await;
    assert!(
        r.content.starts_with("Started background shell bg2."),
        "{r:?}"
    );
    let r = KillShell.call(json!({"shell_id": "bg1"}), &cx).await;
    assert!(r.content.starts_with("bg1 had already ended.\n"), "{r:?}");
}

#[tokio::test]
async fn bad_arguments_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let cx = cx(&d);
    let r = output(&cx, json!({"shell_id": "bg9"})).await;
    assert_eq!(
        r.content,
        "Error: no background shell bg9: no shell was started in the background"
    );
    let r = bash(&cx, json!({"command": "true", "run_in_background": "yes"})).await;
    assert_eq!(r.content, "Error: bash.run_in_background must be a boolean");
    bash(&cx, json!({"command": "true", "run_in_background": true})).await;
    let r = output(&cx, json!({"shell_id": "bg1", "pattern": "("})).await;
    assert!(
        r.content
            .starts_with("Error: bash_output.pattern is not a regular expression"),
        "{r:?}"
    );
    let r = output(&cx, json!({"shell_id": "bg1", "pattern": "a".repeat(1001)})).await;
    assert_eq!(
        r.content,
        "Error: bash_output.pattern has more than 1000 characters"
    );
}

#[tokio::test]
async fn output_is_cut_to_the_limit_and_the_log_keeps_it_all() {
    let d = tempfile::tempdir().unwrap();
    let mut cx = cx(&d);
    cx.limits.output_chars = 10;
    let cmd = "printf 'abcde'; yes | head -c 100000; printf 'vwxyz'";
    bash(&cx, json!({"command": cmd, "run_in_background": true})).await;
    let shell = cx.shells.get("bg1").unwrap();
    tokio::time::timeout(Duration::from_secs(10), shell.ended())
        .await
        .unwrap();
    let r = output(&cx, json!({"shell_id": "bg1"})).await;
    assert!(
        r.content
            .starts_with("abcde\n... [100000 characters omitted] ...\nvwxyz\n[bg1 ended: exit code 0; 100010 bytes"),
        "{r:?}"
    );
    assert_eq!(std::fs::metadata(&shell.log).unwrap().len(), 100_010);
}
