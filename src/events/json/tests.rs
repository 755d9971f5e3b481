use super::*;

#[test]
fn a_command_s_output_is_what_it_printed_without_hx_s_exit_line() {
    assert_eq!(command_output("out\n[exit code: 3]", Some(3)), "out\n");
    assert_eq!(command_output("\n[exit code: 1]", Some(1)), "");
    assert_eq!(command_output("[exit code: 1]", Some(1)), "");
    assert_eq!(command_output("a\nb\n", Some(0)), "a\nb\n");
    // Printed by the command itself, not hx's line for its exit.
    assert_eq!(
        command_output("x\n[exit code: 2]", Some(0)),
        "x\n[exit code: 2]"
    );
    assert_eq!(
        command_output("x\n[killed by signal 9 (SIGKILL)]", None),
        "x\n"
    );
    assert_eq!(command_output("x\n[timed out]", None), "x\n[timed out]");
    assert_eq!(command_output("(no output)", Some(0)), "");
    assert_eq!(command_output("(no output)\n[exit code: 4]", Some(4)), "");
    // A command's own last line that looks like hx's, on a clean exit, is its own.
    assert_eq!(
        command_output("x\n[exit code: 0]", Some(0)),
        "x\n[exit code: 0]"
    );
}

#[test]
fn safe_json_keeps_the_value_and_escapes_terminal_controls() {
    let value = json!({"text": "a\u{7f}b\u{9b}c\u{202e}d\u{1b}e\\\u{85}"});
    let text = safe_json(&value.to_string()).into_owned();
    assert!(
        !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{text:?}"
    );
    assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), value);
}
