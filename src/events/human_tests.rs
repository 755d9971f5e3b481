use super::*;
use serde_json::json;

#[test]
fn summary_shows_short_one_line_values() {
    let long = "x".repeat(200);
    let args = json!({"command": "echo a\necho b", "n": 3, "long": long});
    let s = call_summary("bash", Some(&args));
    assert!(
        s.starts_with("bash command=echo a echo b n=3 long=xxx"),
        "{s}"
    );
    assert!(s.ends_with('…'));
    assert!(s.chars().count() < 130);
}

#[test]
fn preview_keeps_the_first_and_the_last_lines() {
    assert_eq!(preview("a\nb", ""), "a\nb");
    assert_eq!(preview("1\n2\n3\n4\n5\n6", ""), "1\n2\n3\n4\n5\n6");
    assert_eq!(
        preview("1\n2\n3\n4\n5\n6\n7\nerror: boom\n[exit code: 3]\n", "  "),
        "  1\n  2\n  3\n  ... [4 lines omitted] ...\n  error: boom\n  [exit code: 3]"
    );
}

#[test]
fn prefixed_marks_every_line() {
    assert_eq!(
        prefixed("a\nb", "  [task 1] "),
        "  [task 1] a\n  [task 1] b"
    );
    assert_eq!(prefixed("a\nb", ""), "a\nb");
}
