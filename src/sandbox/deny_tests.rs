use super::*;

fn ws() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().expect("tempdir");
    let root = d.path().canonicalize().expect("canonical");
    (d, root)
}

fn settings(root: &Path, json: &str) {
    std::fs::create_dir_all(root.join(".claude")).expect("mkdir");
    std::fs::write(root.join(".claude/settings.json"), json).expect("write");
}

#[test]
fn claude_path_forms_are_anchored_where_claude_code_anchors_them() {
    let (_d, root) = ws();
    let home = root.join("home");
    std::fs::create_dir_all(&home).expect("home");
    settings(
        &root,
        r#"{"permissions":{"deny":["Read(./.env)","Read(*.pem)","Read(/secrets/**)",
            "Read(~/.ssh/**)","Read(//etc/shadow)","Bash(rm:*)","Edit(./x)"]}}"#,
    );
    let (deny, warnings) = Deny::load(&root, Some(&home));
    assert_eq!(deny.rules().len(), 5, "{warnings:?}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("Bash(rm:*), Edit(./x)"),
        "{warnings:?}"
    );
    let denied = |p: &Path| deny.denies(p, false).map(|d| d.rule);
    assert_eq!(denied(&root.join(".env")).as_deref(), Some("Read(./.env)"));
    assert_eq!(
        denied(&root.join("sub/.env")),
        None,
        "./ anchors at the workspace"
    );
    assert_eq!(
        denied(&root.join("a/b/k.pem")).as_deref(),
        Some("Read(*.pem)")
    );
    assert!(denied(&root.join("secrets/a/b")).is_some());
    assert!(denied(&home.join(".ssh/id_ed25519")).is_some());
    assert!(denied(Path::new("/etc/shadow")).is_some());
    assert_eq!(denied(&root.join("src/main.rs")), None);
}

#[test]
fn hxignore_names_its_matching_line_and_keeps_negations() {
    let (_d, root) = ws();
    std::fs::write(
        root.join(HXIGNORE),
        "# keys\n*.key\n!public.key\nsecrets/\n",
    )
    .expect("w");
    let (deny, warnings) = Deny::load(&root, None);
    assert!(warnings.is_empty(), "{warnings:?}");
    let d = deny.denies(&root.join("a/b.key"), false).expect("denied");
    assert_eq!(d.rule, "*.key");
    assert_eq!(d.file, root.join(HXIGNORE));
    assert!(deny.denies(&root.join("public.key"), false).is_none());
    assert!(deny.denies(&root.join("secrets/x/y.txt"), false).is_some());
}

#[test]
fn malformed_or_oversized_files_warn_once_and_deny_nothing() {
    let (_d, root) = ws();
    settings(&root, "{ not json");
    std::fs::write(root.join(HXIGNORE), "x".repeat(MAX_FILE_BYTES as usize + 1)).expect("w");
    let (deny, warnings) = Deny::load(&root, None);
    assert!(deny.is_empty());
    assert_eq!(warnings.len(), 2, "{warnings:?}");
}

#[test]
fn existing_lists_denied_files_and_whole_folders_not_the_workspace() {
    let (_d, root) = ws();
    for f in [
        "a/.env",
        "b/c/.env",
        "keep.txt",
        "secrets/one",
        "secrets/two",
        "node_modules/pkg/.env",
    ] {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, "x").expect("write");
    }
    std::fs::write(root.join(HXIGNORE), ".env\nsecrets/\n").expect("w");
    let (deny, _) = Deny::load(&root, None);
    let found = deny.existing(&root);
    assert!(!found.bounded);
    assert_eq!(
        found.paths,
        vec![
            root.join("a/.env"),
            root.join("b/c/.env"),
            root.join("secrets")
        ]
    );
    // A rule that denies everything never hides the workspace itself.
    std::fs::write(root.join(HXIGNORE), "/*\n").expect("w");
    let (deny, _) = Deny::load(&root, None);
    assert!(!deny.existing(&root).paths.contains(&root));
}
