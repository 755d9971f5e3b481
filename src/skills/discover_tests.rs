//! Unit tests for skill discovery: roots, precedence, walking bounds and broken files.

use std::path::{Path, PathBuf};

use super::*;
use crate::skills::test_util::{skill, write};

fn names(d: &Discovery) -> Vec<&str> {
    d.registry.names().collect()
}

#[test]
fn finds_project_root_by_walking_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let project = tmp.path().join("proj");
    skill(
        &project.join(".agents/skills"),
        "build",
        "How to build.",
        "Run make.",
    );
    let deep = project.join("src/a/b");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let d = discover(&deep, None);
    assert_eq!(names(&d), ["build"]);
    assert_eq!(d.warnings, Vec::<String>::new());
    let s = d.registry.get("build").expect("found");
    assert_eq!(s.source, Source::Project);
    assert_eq!(s.description, "How to build.");
    assert_eq!(s.path, project.join(".agents/skills/build/SKILL.md"));
}

#[test]
fn precedence_across_the_four_roots_with_one_warning_per_shadowed_skill() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let project = tmp.path().join("proj");
    let home = tmp.path().join("home");
    let roots = [
        project.join(".agents/skills"),
        project.join(".claude/skills"),
        home.join(".agents/skills"),
        home.join(".claude/skills"),
    ];
    for (i, root) in roots.iter().enumerate() {
        skill(root, "dup", &format!("from root {i}"), "body");
        skill(root, &format!("only-{i}"), "unique", "body");
    }
    let d = discover(&project, Some(&home));
    assert_eq!(names(&d), ["dup", "only-0", "only-1", "only-2", "only-3"]);
    let dup = d.registry.get("dup").expect("dup");
    assert_eq!(dup.description, "from root 0");
    assert_eq!(
        d.registry.get("only-1").map(|s| s.source),
        Some(Source::Project)
    );
    assert_eq!(
        d.registry.get("only-2").map(|s| s.source),
        Some(Source::User)
    );
    let winner = roots[0].join("dup/SKILL.md");
    let expected: Vec<String> = roots[1..]
        .iter()
        .map(|r| {
            format!(
                "skill dup at {} is shadowed by {}",
                r.join("dup/SKILL.md").display(),
                winner.display()
            )
        })
        .collect();
    assert_eq!(d.warnings, expected);
}

#[test]
fn home_is_not_mistaken_for_a_project() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    skill(&home.join(".agents/skills"), "mine", "user skill", "b");
    let cwd = home.join("code/proj");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    let d = discover(&cwd, Some(&home));
    assert_eq!(names(&d), ["mine"]);
    assert_eq!(d.registry.get("mine").map(|s| s.source), Some(Source::User));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn a_claude_skills_folder_alone_marks_the_project() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let outer = tmp.path().join("outer");
    let project = outer.join("proj");
    skill(&outer.join(".agents/skills"), "far", "outer skill", "b");
    skill(&project.join(".claude/skills"), "near", "claude skill", "b");
    // The home folder's .claude/skills stays the user's, never the project.
    skill(&home.join(".claude/skills"), "mine", "user skill", "b");
    let deep = project.join("src/a");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let roots = skill_roots(&deep, Some(&home));
    let real = |p: PathBuf| p.canonicalize().expect("canonical");
    assert_eq!(
        roots.roots,
        [
            SkillRoot {
                path: project.join(".claude/skills"),
                real: real(project.join(".claude/skills")),
                source: Source::Project,
            },
            SkillRoot {
                path: home.join(".claude/skills"),
                real: real(home.join(".claude/skills")),
                source: Source::User,
            },
        ]
    );
    assert!(roots.skipped.is_empty());
    let d = discover(&deep, Some(&home));
    assert_eq!(names(&d), ["mine", "near"]);
    assert_eq!(
        d.registry.get("near").map(|s| s.source),
        Some(Source::Project)
    );
    assert_eq!(d.registry.get("mine").map(|s| s.source), Some(Source::User));

    let in_home = home.join("code");
    std::fs::create_dir_all(&in_home).expect("mkdir");
    let d = discover(&in_home, Some(&home));
    assert_eq!(names(&d), ["mine"]);
    assert_eq!(d.registry.get("mine").map(|s| s.source), Some(Source::User));
}

#[test]
fn missing_description_is_skipped_with_one_warning() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    write(
        &root.join("nodesc/SKILL.md"),
        "---\nname: nodesc\n---\nbody\n",
    );
    skill(&root, "ok", "fine", "body");
    let d = discover(tmp.path(), None);
    assert_eq!(names(&d), ["ok"]);
    assert_eq!(
        d.warnings,
        [format!(
            "skipping skill {}: no description",
            root.join("nodesc/SKILL.md").display()
        )]
    );
}

#[test]
fn broken_files_never_stop_discovery() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    let cases: [(&str, Vec<u8>, &str); 8] = [
        (
            "empty",
            vec![],
            "no frontmatter (the first line must be ---)",
        ),
        (
            "nofm",
            b"# Title\n".to_vec(),
            "no frontmatter (the first line must be ---)",
        ),
        (
            "open",
            b"---\nname: x\ndescription: y\n".to_vec(),
            "frontmatter has no closing ---",
        ),
        (
            "binary",
            b"---\nname: \xff\xfe\n---\n".to_vec(),
            "frontmatter is not valid UTF-8",
        ),
        (
            "huge",
            [b"---\n".to_vec(), vec![b'a'; 200_000]].concat(),
            "frontmatter is longer than 64 KiB",
        ),
        (
            "listname",
            b"---\nname: [a, b]\ndescription: d\n---\n".to_vec(),
            "name is a list, not text",
        ),
        (
            "mapdesc",
            b"---\ndescription:\n  a: b\n---\n".to_vec(),
            "description is a mapping, not text",
        ),
        (
            "blankdesc",
            b"---\ndescription: '   '\n---\n".to_vec(),
            "empty description",
        ),
    ];
    for (dir, bytes, _) in &cases {
        write(&root.join(dir).join("SKILL.md"), bytes);
    }
    skill(&root, "good", "still here", "body");
    let d = discover(tmp.path(), None);
    assert_eq!(names(&d), ["good"]);
    let mut expected: Vec<String> = cases
        .iter()
        .map(|(dir, _, why)| {
            format!(
                "skipping skill {}: {why}",
                root.join(dir).join("SKILL.md").display()
            )
        })
        .collect();
    expected.sort();
    let mut got = d.warnings.clone();
    got.sort();
    assert_eq!(got, expected);
}

#[test]
fn yaml_errors_are_reported_with_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    write(
        &root.join("bad/SKILL.md"),
        "---\nname: [oops\ndescription: d\n---\n",
    );
    let d = discover(tmp.path(), None);
    assert!(d.registry.is_empty());
    assert_eq!(d.warnings.len(), 1);
    let prefix = format!(
        "skipping skill {}: invalid frontmatter: ",
        root.join("bad/SKILL.md").display()
    );
    assert!(d.warnings[0].starts_with(&prefix), "{}", d.warnings[0]);
}

#[test]
fn name_defaults_to_folder_and_numbers_are_text() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    write(
        &root.join("from-folder/SKILL.md"),
        "---\ndescription: d\n---\n",
    );
    write(
        &root.join("year/SKILL.md"),
        "---\nname: 2024\ndescription: 42\n---\n",
    );
    let d = discover(tmp.path(), None);
    assert_eq!(names(&d), ["2024", "from-folder"]);
    assert_eq!(
        d.registry.get("2024").map(|s| s.description.as_str()),
        Some("42")
    );
}

#[test]
fn colon_values_are_recovered_and_bodies_not_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    // The body is not UTF-8: discovery must not read that far.
    let mut text =
        b"---\nname: deploy\ndescription: Ship it. Use when: asked to deploy\n---\n".to_vec();
    text.extend_from_slice(&[0xff; 100]);
    write(&root.join("deploy/SKILL.md"), text);
    let d = discover(tmp.path(), None);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(
        d.registry.get("deploy").map(|s| s.description.as_str()),
        Some("Ship it. Use when: asked to deploy")
    );
}

#[test]
fn nested_skills_and_skipped_folders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    skill(&root, "group", "outer", "b");
    skill(&root.join("group"), "inner", "nested", "b");
    skill(&root.join("group/node_modules"), "dep", "no", "b");
    skill(&root.join(".hidden"), "secret", "no", "b");
    skill(&root.join("x/.git"), "vcs", "no", "b");
    let d = discover(tmp.path(), None);
    assert_eq!(names(&d), ["group", "inner"]);
}

#[test]
fn depth_limit_is_six_folders_below_the_root() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    // d1/../d6/SKILL.md is at folder depth 6; d1/../d7 is one too deep.
    let six = root.join("d1/d2/d3/d4/d5");
    skill(&six, "at-six", "deep", "b");
    skill(&six.join("at-six"), "at-seven", "too deep", "b");
    let d = discover(tmp.path(), None);
    assert_eq!(names(&d), ["at-six"]);
}

#[cfg(unix)]
#[test]
fn symlink_loops_end_and_links_inside_a_project_root_are_followed() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    skill(&root, "real", "real one", "b");
    symlink(&root, root.join("real/loop")).expect("symlink");
    symlink("..", root.join("real/up")).expect("symlink");
    skill(&root.join("store"), "kept", "stored inside", "b");
    symlink("store/kept", root.join("alias")).expect("symlink");
    let d = discover(tmp.path(), None);
    assert_eq!(names(&d), ["kept", "real"]);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let real_root = root.canonicalize().expect("canonical");
    // The alias is walked first (breadth-first) and names the skill; its folder is the real one.
    let kept = d.registry.get("kept").expect("kept");
    assert_eq!(kept.folder, real_root.join("store/kept"));
}

#[cfg(unix)]
#[test]
fn links_out_of_a_project_root_are_skipped_but_the_users_are_followed() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let (project, home, shared) = (base.join("p"), base.join("home"), base.join("shared"));
    skill(&shared, "linked", "from elsewhere", "b");
    write(
        &shared.join("notes.md"),
        "---\ndescription: private notes\n---\n",
    );
    skill(&project.join(".agents/skills"), "own", "own skill", "b");
    let root = project.join(".agents/skills");
    symlink(shared.join("linked"), root.join("linked")).expect("symlink");
    std::fs::create_dir_all(root.join("notes")).expect("mkdir");
    symlink(shared.join("notes.md"), root.join("notes/SKILL.md")).expect("symlink");
    let user_root = home.join(".claude/skills");
    std::fs::create_dir_all(&user_root).expect("mkdir");
    symlink(shared.join("linked"), user_root.join("mine")).expect("symlink");

    let d = discover(&project, Some(&home));
    assert_eq!(names(&d), ["linked", "own"]);
    let linked = d.registry.get("linked").expect("linked");
    assert_eq!(linked.source, Source::User);
    assert_eq!(linked.path, user_root.join("mine/SKILL.md"));
    assert_eq!(linked.folder, shared.join("linked"));
    assert_eq!(linked.within, None);
    let own = d.registry.get("own").expect("own");
    assert_eq!(own.within.as_deref(), Some(root.as_path()));
    assert_eq!(
        d.warnings,
        [
            format!(
                "skipping {}: it links to {}, outside its skills root {}",
                root.join("linked").display(),
                shared.join("linked").display(),
                root.display()
            ),
            format!(
                "skipping {}: it links to {}, outside its skills root {}",
                root.join("notes/SKILL.md").display(),
                shared.join("notes.md").display(),
                root.display()
            ),
        ]
    );
}

#[cfg(unix)]
#[test]
fn a_project_root_must_really_lie_in_the_project() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let project = base.join("p");
    skill(&base.join("elsewhere"), "far", "outside the project", "b");
    skill(
        &project.join("docs/skills"),
        "near",
        "inside the project",
        "b",
    );
    std::fs::create_dir_all(project.join(".claude")).expect("mkdir");
    std::fs::create_dir_all(project.join(".agents")).expect("mkdir");
    symlink(base.join("elsewhere"), project.join(".claude/skills")).expect("symlink");
    // A link that stays in the project is a root like any other.
    symlink("../docs/skills", project.join(".agents/skills")).expect("symlink");
    let roots = skill_roots(&project.join("docs"), None);
    assert_eq!(
        roots.roots,
        [SkillRoot {
            path: project.join(".agents/skills"),
            real: project.join("docs/skills"),
            source: Source::Project,
        }]
    );
    let skipped = Skipped {
        path: project.join(".claude/skills"),
        target: base.join("elsewhere"),
        bound: project.clone(),
        is_root: true,
    };
    assert_eq!(roots.skipped, std::slice::from_ref(&skipped));
    let d = discover(&project, None);
    assert_eq!(names(&d), ["near"]);
    assert_eq!(
        d.warnings,
        [format!(
            "skipping skills root {}: it links to {}, outside the project {}",
            project.join(".claude/skills").display(),
            base.join("elsewhere").display(),
            project.display()
        )]
    );
    assert_eq!(d.warnings[0], skipped.warning());
}

#[cfg(unix)]
#[test]
fn only_the_catalog_skills_folders_outside_the_workspace_are_readable() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let (project, home) = (base.join("p"), base.join("home"));
    skill(&project.join(".agents/skills"), "a", "project", "b");
    skill(&home.join(".agents/skills"), "a", "shadowed", "b");
    skill(&home.join(".agents/skills"), "u", "user", "b");
    let d = discover(&project, Some(&home));
    // Run in the project: only the user's skill lies outside.
    assert_eq!(
        d.registry.folders_outside(&project),
        [home.join(".agents/skills/u")]
    );
    // Run in a subfolder: the project's skill lies outside too.
    assert_eq!(
        d.registry.folders_outside(&project.join("src")),
        [
            project.join(".agents/skills/a"),
            home.join(".agents/skills/u")
        ]
    );
}

#[test]
fn two_thousand_skills() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    for i in 0..2000 {
        skill(
            &root,
            &format!("skill-{i:04}"),
            &format!("Skill number {i}."),
            "body",
        );
    }
    let d = discover(tmp.path(), None);
    assert_eq!(d.registry.len(), 2000);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings.first());
    let catalog = d.registry.catalog(crate::skills::DEFAULT_CATALOG_BUDGET);
    // Names alone exceed 8,000 characters here: the first ones are listed, the rest counted.
    assert!(
        catalog.chars().count() <= 8_000,
        "{}",
        catalog.chars().count()
    );
    let lines: Vec<&str> = catalog.lines().filter(|l| l.starts_with("- ")).collect();
    let listed = lines.len() - 1;
    assert!(listed > 400, "{listed}");
    assert_eq!(lines[0], "- skill-0000");
    assert_eq!(lines[listed - 1], format!("- skill-{:04}", listed - 1));
    assert!(
        lines[listed].starts_with(&format!("- … and {} more,", 2000 - listed)),
        "{}",
        lines[listed]
    );
}

#[test]
fn no_roots_no_skills() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = discover(tmp.path(), Some(Path::new("/nonexistent-home-for-test")));
    assert!(d.registry.is_empty());
    assert!(d.warnings.is_empty());
}

#[test]
fn folder_cap_stops_the_walk_with_a_warning() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    for i in 0..2001 {
        std::fs::create_dir_all(root.join(format!("empty-{i:04}"))).expect("mkdir");
    }
    let d = discover(tmp.path(), None);
    assert_eq!(
        d.warnings,
        [format!(
            "stopped looking for skills in {} after 2000 folders",
            root.display()
        )]
    );
}

#[test]
fn entries_serialize_for_json_listing() {
    let s = Skill {
        name: "a".into(),
        source: Source::User,
        path: "/h/.agents/skills/a/SKILL.md".into(),
        folder: "/h/.agents/skills/a".into(),
        within: None,
        description: "d".into(),
        model_invocable: true,
        user_invocable: true,
        argument_hint: None,
    };
    assert_eq!(
        serde_json::to_string(&s).ok(),
        Some(
            r#"{"name":"a","source":"user","path":"/h/.agents/skills/a/SKILL.md","description":"d"}"#
                .to_string()
        )
    );
}

#[cfg(unix)]
#[test]
fn many_links_out_give_a_bounded_number_of_warnings() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let root = base.join(".agents/skills");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::create_dir_all(base.join("out")).expect("mkdir");
    for i in 0..25 {
        std::os::unix::fs::symlink(base.join("out"), root.join(format!("l{i:02}")))
            .expect("symlink");
    }
    let d = discover(&base, None);
    assert_eq!(d.warnings.len(), crate::skills::walk::MAX_ESCAPES_KEPT + 1);
    assert!(d.warnings[0].starts_with(&format!("skipping {}: ", root.join("l00").display())));
    assert!(d.warnings[19].starts_with(&format!("skipping {}: ", root.join("l19").display())));
    assert_eq!(
        d.warnings[20],
        format!("skipping 5 more links out of {}", root.display())
    );
}

#[test]
fn names_over_64_characters_are_refused_and_descriptions_cut() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    let at_limit = "é".repeat(64);
    skill(&root, &at_limit, "fits", "b");
    write(
        &root.join("long/SKILL.md"),
        format!("---\nname: {}\ndescription: d\n---\n", "é".repeat(65)),
    );
    let folder = "f".repeat(65);
    write(
        &root.join(&folder).join("SKILL.md"),
        "---\ndescription: the folder names it\n---\n",
    );
    skill(&root, "wordy", &"w".repeat(5_000), "b");
    let d = discover(tmp.path(), None);
    assert_eq!(names(&d), ["wordy", at_limit.as_str()]);
    let mut warnings = d.warnings.clone();
    warnings.sort();
    assert_eq!(
        warnings,
        [
            format!(
                "skipping skill {}: name is 65 characters, more than 64",
                root.join(&folder).join("SKILL.md").display()
            ),
            format!(
                "skipping skill {}: name is 65 characters, more than 64",
                root.join("long/SKILL.md").display()
            ),
        ]
    );
    assert_eq!(
        d.registry.get("wordy").map(|s| s.description.clone()),
        Some(format!("{}…", "w".repeat(1023)))
    );
}

#[test]
fn a_fence_cut_by_the_read_cap_is_no_fence() {
    use crate::skills::parse::split_frontmatter;
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("SKILL.md");
    let cap = MAX_FRONTMATTER_BYTES as usize;
    // A `---xyz` line starting at every offset around the cap: wherever the read stops, the
    // `---` before the cut must not pass for the closing fence.
    for at in cap - 16..=cap + 16 {
        let filler = format!("#{}\n", "a".repeat(at - 4 - 2));
        let text = format!("---\n{filler}---xyz\ndescription: d\n---\nbody\n");
        write(&file, &text);
        let whole = split_frontmatter(&text).map(|(fm, _)| fm.to_string());
        assert_eq!(
            whole.as_deref(),
            Some(format!("{filler}---xyz\ndescription: d\n").as_str())
        );
        match read_frontmatter(&file) {
            Ok(fm) => assert_eq!(Some(fm), whole, "fence line at {at}"),
            Err(e) => assert_eq!(e, "frontmatter is longer than 64 KiB", "fence line at {at}"),
        }
    }
}

#[test]
fn a_skills_argument_hint_is_read_as_a_commands_is() {
    let hint = |yaml: &str| {
        let fm = crate::skills::parse::parse_frontmatter(yaml).expect("yaml");
        argument_hint_of(&fm.fields)
    };
    assert_eq!(
        hint("argument-hint: [branch]\n"),
        Ok(Some("[branch]".into()))
    );
    assert_eq!(
        hint("argument-hint: <file>   <focus>\n"),
        Ok(Some("<file> <focus>".into()))
    );
    assert_eq!(hint("argument-hint: \"\"\n"), Ok(None));
    assert_eq!(hint("name: x\n"), Ok(None));
    assert!(hint("argument-hint: {a: b}\n").is_err());
    let long = hint(&format!("argument-hint: {}\n", "x".repeat(500))).expect("text");
    assert_eq!(long.map(|h| h.chars().count()), Some(MAX_HINT_CHARS));
    let fm = crate::skills::parse::parse_frontmatter(
        "name: sync\ndescription: Sync\nargument-hint: [remote] [branch]\n",
    )
    .expect("yaml");
    let s = skill_from_frontmatter(
        Path::new("/p/sync/SKILL.md"),
        Path::new("/p/sync"),
        &fm,
        Source::Project,
    )
    .expect("skill");
    assert_eq!(s.argument_hint.as_deref(), Some("[remote] [branch]"));
}
