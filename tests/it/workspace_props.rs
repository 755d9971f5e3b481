//! Property tests of path confinement: for any path the model can give (relative or absolute,
//! with `..`, `.`, and links in the tree that lead inside, outside, back in, nowhere, or in a
//! loop), `Workspace::resolve` never returns a path outside the workspace and
//! `resolve_for_read` none outside the workspace and its read-only folders; neither panics,
//! and what they return is the real path (no link left to follow) that the kernel would open.

use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};

use hx::tools::Workspace;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// A tree with every kind of link, built once per test:
///
/// ```text
/// base/ws/                the workspace
///   a/b/c.txt, a/file.txt
///   in_rel -> a           in_abs -> base/ws/a/b       back -> ../ws/a (out and back in)
///   up -> ..              out_abs -> base/out         out_rel -> ../out
///   out_file -> ../out/secret.txt                     chain -> in_rel/../up
///   loop1 -> loop2 -> loop1                           self -> self
///   dangling_in -> a/nope                             dangling_out -> ../out/nope
///   ro_link -> base/ro    a/deep_up -> ../../..       a/b/ring -> ../../a
/// base/out/secret.txt, base/out/back_in -> base/ws/a, base/out/ro_in -> ../ro/sub
/// base/ro/                a read-only folder
///   ref.md, sub/x.md, esc -> ../out, in -> base/ws, sub/up -> ../..
/// ```
struct Tree {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    ro: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical");
        let (ws, out, ro) = (base.join("ws"), base.join("out"), base.join("ro"));
        for dir in [ws.join("a/b"), out.clone(), ro.join("sub")] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        for file in [
            ws.join("a/b/c.txt"),
            ws.join("a/file.txt"),
            out.join("secret.txt"),
            ro.join("ref.md"),
            ro.join("sub/x.md"),
        ] {
            std::fs::write(file, "x").expect("write");
        }
        let links: [(&str, PathBuf); 22] = [
            ("ws/in_rel", "a".into()),
            ("ws/in_abs", ws.join("a/b")),
            ("ws/back", "../ws/a".into()),
            ("ws/up", "..".into()),
            ("ws/out_abs", out.clone()),
            ("ws/out_rel", "../out".into()),
            ("ws/out_file", "../out/secret.txt".into()),
            ("ws/chain", "in_rel/../up".into()),
            ("ws/loop1", "loop2".into()),
            ("ws/loop2", "loop1".into()),
            ("ws/self", "self".into()),
            ("ws/dangling_in", "a/nope".into()),
            ("ws/dangling_out", "../out/nope".into()),
            ("ws/ro_link", ro.clone()),
            ("ws/a/deep_up", "../../..".into()),
            ("ws/a/b/ring", "../../a".into()),
            ("out/back_in", ws.join("a")),
            ("out/ro_in", "../ro/sub".into()),
            ("ro/esc", "../out".into()),
            ("ro/in", ws.clone()),
            ("ro/sub/up", "../..".into()),
            ("ro/sub/self", "self".into()),
        ];
        for (link, target) in links {
            symlink(target, base.join(link)).expect("symlink");
        }
        Tree {
            _tmp: tmp,
            base,
            root: ws,
            ro,
        }
    }

    /// Paths the model might write: relative, or absolute from any corner of the tree.
    fn paths(&self) -> impl Strategy<Value = String> {
        const NAMES: [&str; 36] = [
            "..",
            "..",
            "..",
            ".",
            "",
            "a",
            "b",
            "c.txt",
            "file.txt",
            "in_rel",
            "in_abs",
            "back",
            "up",
            "out_abs",
            "out_rel",
            "out_file",
            "chain",
            "loop1",
            "self",
            "dangling_in",
            "dangling_out",
            "ro_link",
            "deep_up",
            "ring",
            "ws",
            "out",
            "ro",
            "secret.txt",
            "back_in",
            "ro_in",
            "esc",
            "in",
            "ref.md",
            "sub",
            "x.md",
            "new",
        ];
        let part = prop_oneof![
            8 => proptest::sample::select(&NAMES[..]).prop_map(str::to_string),
            1 => "[a-z.]{1,4}",
            1 => any::<String>(),
        ];
        let prefixes = [
            String::new(),
            "/".to_string(),
            format!("{}/", self.root.display()),
            format!("{}/", self.base.display()),
            format!("{}/", self.ro.display()),
            format!("{}/", self.base.join("out").display()),
            "./".to_string(),
        ];
        (
            proptest::sample::select(prefixes.to_vec()),
            proptest::collection::vec(part, 0..10),
        )
            .prop_map(|(prefix, parts)| format!("{prefix}{}", parts.join("/")))
    }
}

/// `path` is absolute, has no `.` or `..`, and no part of it that exists is a link: it names
/// a real place, and a file created there is created there and nowhere else.
fn assert_real(path: &Path) {
    assert!(path.is_absolute(), "{}", path.display());
    let mut so_far = PathBuf::new();
    for c in path.components() {
        assert!(
            matches!(c, Component::RootDir | Component::Normal(_)),
            "{} has {c:?}",
            path.display()
        );
        so_far.push(c);
        if let Ok(meta) = std::fs::symlink_metadata(&so_far) {
            assert!(
                !meta.file_type().is_symlink(),
                "{} is a link in {}",
                so_far.display(),
                path.display()
            );
        }
    }
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: 2_000,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn resolve_never_leaves_the_workspace() {
    let tree = Tree::new();
    let ws = Workspace::new(&tree.root).expect("workspace");
    runner()
        .run(&tree.paths(), |user_path| {
            let kernel = tree.root.join(&user_path).canonicalize().ok();
            match ws.resolve(&user_path) {
                Ok(path) => {
                    assert!(
                        path.starts_with(&tree.root),
                        "{user_path} gave {}",
                        path.display()
                    );
                    assert_real(&path);
                    // Where the kernel can follow the path too, both land on the same place.
                    if let Some(real) = kernel {
                        assert_eq!(path, real, "{user_path}");
                    }
                }
                Err(e) => {
                    assert!(
                        e.is_error && e.content.starts_with("Error: "),
                        "{}",
                        e.content
                    );
                    // Refused only what the kernel would not place inside, or cannot open.
                    if let Some(real) = kernel {
                        assert!(
                            !real.starts_with(&tree.root),
                            "{user_path} refused: {}",
                            e.content
                        );
                    }
                }
            }
            Ok(())
        })
        .expect("property holds");
}

#[test]
fn resolve_for_read_never_leaves_the_workspace_and_read_only_folders() {
    let tree = Tree::new();
    // Given through a link, as a skill folder may be: the real folder is what counts.
    let ws = Workspace::new(&tree.root)
        .expect("workspace")
        .with_read_only([tree.root.join("ro_link")]);
    let allowed = |p: &Path| p.starts_with(&tree.root) || p.starts_with(&tree.ro);
    runner()
        .run(&tree.paths(), |user_path| {
            let kernel = tree.root.join(&user_path).canonicalize().ok();
            match ws.resolve_for_read(&user_path) {
                Ok(path) => {
                    assert!(allowed(&path), "{user_path} gave {}", path.display());
                    assert_real(&path);
                    if let Some(real) = kernel {
                        assert_eq!(path, real, "{user_path}");
                    }
                }
                Err(e) => {
                    assert!(
                        e.is_error && e.content.starts_with("Error: "),
                        "{}",
                        e.content
                    );
                    if let Some(real) = kernel {
                        assert!(!allowed(&real), "{user_path} refused: {}", e.content);
                    }
                }
            }
            // Writes never reach the read-only folder.
            if let Ok(path) = ws.resolve(&user_path) {
                assert!(
                    path.starts_with(&tree.root),
                    "{user_path} gave {}",
                    path.display()
                );
            }
            Ok(())
        })
        .expect("property holds");
}
