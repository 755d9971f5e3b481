//! Unit tests for frontmatter splitting and YAML parsing.

use super::*;

fn desc(fm: &Frontmatter) -> Option<String> {
    fm.fields.get("description").and_then(Yaml::as_text)
}

fn parse_file(text: &str) -> Frontmatter {
    let (fm, _) = split_frontmatter(text).expect("test input has frontmatter");
    parse_frontmatter(fm).expect("test input parses")
}

#[test]
fn block_literal_keeps_newlines() {
    let fm = parse_file("---\nname: a\ndescription: |\n  line one\n  line two\n---\nbody\n");
    assert_eq!(desc(&fm).as_deref(), Some("line one\nline two\n"));
}

#[test]
fn block_literal_strip_drops_final_newline() {
    let fm = parse_file("---\ndescription: |-\n  line one\n  line two\n---\n");
    assert_eq!(desc(&fm).as_deref(), Some("line one\nline two"));
}

#[test]
fn block_folded_joins_lines() {
    let fm = parse_file("---\ndescription: >\n  folded\n  text\n---\n");
    assert_eq!(desc(&fm).as_deref(), Some("folded text\n"));
}

#[test]
fn quoted_description_with_colon_and_escapes() {
    let fm = parse_file(
        "---\ndescription: \"Use when: the user says \\\"deploy\\\"\"\nother: 'it''s: fine'\n---\n",
    );
    assert_eq!(
        desc(&fm).as_deref(),
        Some("Use when: the user says \"deploy\"")
    );
    assert_eq!(
        fm.fields.get("other").and_then(Yaml::as_text).as_deref(),
        Some("it's: fine")
    );
    assert!(!fm.recovered);
}

#[test]
fn crlf_and_bom_are_accepted() {
    let text =
        "\u{feff}---\r\nname: crlf\r\ndescription: |\r\n  a\r\n  b\r\n---\r\n\r\nBody line\r\n";
    let (fm, body) = split_frontmatter(text).expect("frontmatter found");
    assert_eq!(body, "Body line");
    let fm = parse_frontmatter(fm).expect("parses");
    assert_eq!(desc(&fm).as_deref(), Some("a\nb\n"));
    assert_eq!(
        fm.fields.get("name").and_then(Yaml::as_text).as_deref(),
        Some("crlf")
    );
}

#[test]
fn extra_keys_of_any_shape_are_kept() {
    let fm = parse_file(
        "---\nname: x\ndescription: d\nlicense: MIT\nallowed-tools: Bash Read\nmetadata:\n  author: me\n  version: \"1.0\"\ncompatibility: needs git\ntags: [a, b]\n---\n",
    );
    assert_eq!(fm.fields.len(), 7);
    assert!(matches!(fm.fields.get("metadata"), Some(Yaml::Map(m)) if m.len() == 2));
    assert!(matches!(fm.fields.get("tags"), Some(Yaml::Seq(s)) if s.len() == 2));
}

#[test]
fn unquoted_colon_value_is_recovered() {
    let fm = parse_file(
        "---\nname: deploy\ndescription: Deploy the app. Use when: the user says \"ship\" \\o/\n---\n",
    );
    assert!(fm.recovered);
    assert_eq!(
        desc(&fm).as_deref(),
        Some("Deploy the app. Use when: the user says \"ship\" \\o/")
    );
}

#[test]
fn bracketed_words_are_recovered_as_text_and_one_list_stays_a_list() {
    let fm = parse_file(
        "---\nname: sync\ndescription: Use when: syncing\nargument-hint: [remote] [branch] # both optional\n---\n",
    );
    assert!(fm.recovered);
    assert_eq!(
        fm.fields
            .get("argument-hint")
            .and_then(Yaml::as_text)
            .as_deref(),
        Some("[remote] [branch]")
    );
    let fm = parse_file("---\nname: sync\nargument-hint: [message]\n---\n");
    assert!(!fm.recovered);
    assert!(matches!(fm.fields.get("argument-hint"), Some(Yaml::Seq(_))));
    assert!(!words_after_a_list("[a, [b]]"));
    assert!(words_after_a_list("[a] b"));
    assert!(!words_after_a_list("[unclosed b"));
}

#[test]
fn recovered_value_drops_a_trailing_comment() {
    let fm = parse_file(
        "---\nname: deploy\ndescription: Use when: deploying # ask ops first\nlicense: C#-ish # note\n---\n",
    );
    assert!(fm.recovered);
    assert_eq!(desc(&fm).as_deref(), Some("Use when: deploying"));
    assert_eq!(
        fm.fields.get("license").and_then(Yaml::as_text).as_deref(),
        Some("C#-ish")
    );
}

#[test]
fn recovered_value_takes_its_wrapped_lines() {
    let fm = parse_file(
        "---\ndescription: Use when: deploying\n  to production # ops only\n    or staging\nname: deploy\n---\n",
    );
    assert!(fm.recovered);
    assert_eq!(
        desc(&fm).as_deref(),
        Some("Use when: deploying to production or staging")
    );
    assert_eq!(
        fm.fields.get("name").and_then(Yaml::as_text).as_deref(),
        Some("deploy")
    );
    let fm = parse_file("---\ndescription: Use when:\n  the user deploys\n---\n");
    assert_eq!(desc(&fm).as_deref(), Some("Use when: the user deploys"));
}

#[test]
fn hopeless_yaml_is_an_error_on_one_line() {
    let err = parse_frontmatter("name: [unclosed\ndescription: x\n").unwrap_err();
    assert!(!err.0.is_empty());
    assert!(!err.0.contains('\n'), "{err}");
}

#[test]
fn non_mapping_frontmatter_is_an_error() {
    let err = parse_frontmatter("- a\n- b\n").unwrap_err();
    assert_eq!(err.0, "frontmatter is a list, not a mapping of keys");
}

#[test]
fn empty_frontmatter_is_an_empty_map() {
    let fm = parse_file("---\n---\nbody");
    assert!(fm.fields.is_empty());
}

#[test]
fn numbers_read_back_as_text() {
    let fm = parse_file("---\nname: 2024\ndescription: 1.5\n---\n");
    assert_eq!(
        fm.fields.get("name").and_then(Yaml::as_text).as_deref(),
        Some("2024")
    );
    assert_eq!(desc(&fm).as_deref(), Some("1.5"));
}

#[test]
fn split_needs_an_opening_and_a_closing_fence() {
    assert_eq!(split_frontmatter("no frontmatter\n---\n"), None);
    assert_eq!(split_frontmatter("---\nname: x\n"), None);
    assert_eq!(split_frontmatter(""), None);
    assert_eq!(
        split_frontmatter("---\nname: x\n---"),
        Some(("name: x\n", ""))
    );
    assert_eq!(
        split_frontmatter("---  \nname: x\n--- \n\n  # Title\n\ntext\n\n"),
        Some(("name: x\n", "# Title\n\ntext"))
    );
}
