use std::path::Path;

use super::*;

fn head(text: &str) -> Head {
    read_head(text.as_bytes()).expect("a head")
}

fn cmd(text: &str) -> Result<Command, String> {
    command_from(
        "x",
        Path::new("/p/.claude/commands/x.md"),
        &head(text),
        Source::Project,
    )
}

#[test]
fn a_file_without_frontmatter_is_a_command_described_by_its_first_line() {
    let c = cmd("\n# Review the diff\n\nLook at $ARGUMENTS.\n").expect("ok");
    assert_eq!(c.description, "Review the diff");
    assert_eq!(c.tools, None);
    assert_eq!(c.model, None);
}

#[test]
fn fields_are_read_and_mapped() {
    let c = cmd("---\ndescription: Commit: with care\nargument-hint: [message]\nmodel: deepseek-v4-flash\nallowed-tools: Bash(git add:*), Bash(git commit:*), Read, WebFetch\n---\nbody\n")
        .expect("ok");
    assert_eq!(c.description, "Commit: with care");
    assert_eq!(c.argument_hint.as_deref(), Some("[message]"));
    assert_eq!(c.model.as_deref(), Some("deepseek-v4-flash"));
    assert_eq!(
        c.tools,
        Some(vec!["bash".to_string(), "read_file".to_string()])
    );
    assert!(
        c.notes.iter().any(|n| n.contains("WebFetch")),
        "{:?}",
        c.notes
    );
    assert!(
        c.notes.iter().any(|n| n.contains("gives it whole")),
        "{:?}",
        c.notes
    );
}

#[test]
fn space_separated_allowed_tools_and_main_agent_tools() {
    let c =
        cmd("---\nallowed-tools: Bash(git commit -m:*) Read TodoWrite Task\n---\nb\n").expect("ok");
    assert_eq!(
        c.tools,
        Some(
            ["bash", "read_file", "todo_write", "task"]
                .map(String::from)
                .to_vec()
        )
    );
}

#[test]
fn claude_models_mean_the_configured_one_and_broken_yaml_is_read_line_by_line() {
    let c = cmd("---\nmodel: claude-sonnet-4-0\n---\nb\n").expect("ok");
    assert_eq!(c.model, None);
    assert_eq!(c.notes.len(), 1);
    let c = cmd("---\ndescription: \"quoted\" then: colon\nargument-hint: [a] [b]\n---\nb\n")
        .expect("lenient");
    assert!(!c.description.is_empty(), "{c:?}");
}

#[test]
fn a_long_frontmatter_is_read_past_the_first_read_and_an_open_one_is_an_error() {
    let long = format!(
        "---\ndescription: d\nx: {}\n---\nbody\n",
        "y".repeat(10_000)
    );
    assert_eq!(head(&long).first_line.as_deref(), Some("body"));
    assert!(read_head("---\ndescription: d\n".as_bytes()).is_err());
}

#[test]
fn arguments_are_substituted() {
    assert_eq!(
        substitute("Fix $ARGUMENTS now", "the bug"),
        "Fix the bug now"
    );
    assert_eq!(
        substitute("PR $1 by $2, $3.", "42 \"Ann Lee\""),
        "PR 42 by Ann Lee, ."
    );
    assert_eq!(
        substitute("cost $10 and $", "a"),
        "cost $10 and $\n\nARGUMENTS: a"
    );
    assert_eq!(substitute("no placeholders", ""), "no placeholders");
}

#[test]
fn shell_spans_are_found_and_arguments_stay_out_of_them() {
    let body =
        "Status: !`git status --short`\nNot one: !`\nAlso `x` and !` `.\nLog: !`git log -1 $1`";
    let spans = shell_spans(body);
    let cmds: Vec<&str> = spans.iter().map(|s| s.command.as_str()).collect();
    assert_eq!(cmds, ["git status --short", "git log -1 $1"]);
    let out = expand(body, &spans, &["M a".into(), "abc".into()], "v1");
    assert_eq!(
        out,
        "Status: M a\nNot one: !`\nAlso `x` and !` `.\nLog: abc\n\nARGUMENTS: v1"
    );
    // Untrusted: the spans stay as written.
    assert_eq!(expand(body, &spans, &[], ""), body);
}

#[test]
fn names_of_subfolders_and_near_names() {
    assert_eq!(
        name_of(Path::new("/r"), Path::new("/r/front/comp.md")).as_deref(),
        Some("front:comp")
    );
    let known = ["review", "release", "commit", "front:comp"];
    assert_eq!(near_names("reveiw", known.into_iter(), 3), ["review"]);
    assert_eq!(
        near_names("re", known.into_iter(), 3),
        ["release", "review"]
    );
    assert!(near_names("zzzzzz", known.into_iter(), 3).is_empty());
}
