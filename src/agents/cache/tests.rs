use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;
use crate::agents::{agent_roots, discover_roots_with, Discovery};

/// A project with agent files `a` and `b`, and where its cache goes.
fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("p");
    let agents = project.join(".claude/agents");
    std::fs::create_dir_all(&agents).expect("mkdir");
    for n in ["a", "b"] {
        std::fs::write(
            agents.join(format!("{n}.md")),
            format!("---\nname: {n}\ndescription: Use when: {n} is asked for\nmodel: sonnet\n---\nbody\n"),
        )
        .expect("write");
    }
    let cache = dir.path().join("cache").join(FILE_NAME);
    (dir, project, cache)
}

/// A clock past the racy window of files just written, so they are kept.
fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(RACY_SECS + 2)
}

fn run(project: &Path, cache: &Path, now: SystemTime) -> Discovery {
    let cache = Cache::load(cache, now);
    discover_roots_with(&agent_roots(project, None).roots, &cache)
}

fn descriptions(d: &Discovery) -> Vec<&str> {
    d.agents.iter().map(|a| a.description.as_str()).collect()
}

fn on_disk(cache: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(cache).expect("cache written")).expect("json")
}

#[test]
fn an_unchanged_file_comes_from_the_cache_and_gives_the_same_definition() {
    let (_dir, project, cache) = project();
    let first = run(&project, &cache, later());
    assert_eq!(first.agents.len(), 2);
    assert_eq!(on_disk(&cache)["entries"].as_array().map(Vec::len), Some(2));
    let second = run(&project, &cache, later());
    assert_eq!(
        second.agents, first.agents,
        "a kept definition is the parsed one"
    );
    // Proof that the second run took it from the cache: what the cache says is what it gets.
    let mut disk = on_disk(&cache);
    disk["entries"][0]["read"]["Ok"]["description"] = "from the cache".into();
    std::fs::write(&cache, disk.to_string()).expect("write");
    let third = run(&project, &cache, later());
    assert_eq!(
        descriptions(&third),
        ["from the cache", "Use when: b is asked for"]
    );
    assert_eq!(third.agents[0].notes, first.agents[0].notes);
    assert_eq!(third.agents[0].path, first.agents[0].path);
}

#[test]
fn a_file_written_again_is_read_again_even_at_the_same_size() {
    let (_dir, project, cache) = project();
    run(&project, &cache, later());
    let a = project.join(".claude/agents/a.md");
    // Same length, another description; its times set back, as a copy that keeps them would:
    // the change time still moves.
    std::fs::write(
        &a,
        "---\nname: a\ndescription: Use when: A IS ASKED FOR\nmodel: sonnet\n---\nbody\n",
    )
    .expect("write");
    std::fs::File::options()
        .write(true)
        .open(&a)
        .and_then(|f| f.set_modified(UNIX_EPOCH + Duration::from_secs(1_000_000)))
        .expect("set mtime");
    let d = run(&project, &cache, later());
    assert_eq!(descriptions(&d)[0], "Use when: A IS ASKED FOR");
    // A file that is replaced (a new inode) and one that is removed.
    let b = project.join(".claude/agents/b.md");
    std::fs::remove_file(&b).expect("rm");
    let d = run(&project, &cache, later());
    assert_eq!(d.agents.len(), 1);
    std::fs::write(&b, "---\nname: b\ndescription: new b\n---\n").expect("write");
    let d = run(&project, &cache, later());
    assert_eq!(descriptions(&d), ["Use when: A IS ASKED FOR", "new b"]);
}

#[test]
fn a_file_changed_just_now_is_read_again_but_its_notes_are_said_once() {
    let (_dir, project, cache) = project();
    let first = run(&project, &cache, SystemTime::now());
    assert_eq!(first.agents.len(), 2);
    assert!(first.said.is_empty());
    assert_eq!(first.run_warnings().len(), 1, "{:?}", first.run_warnings());
    let disk = on_disk(&cache);
    assert_eq!(disk["entries"][0]["settled"], false, "{disk}");
    // Its definition is never taken from an unsettled entry...
    let mut disk = disk;
    disk["entries"][0]["read"]["Ok"]["description"] = "from the cache".into();
    std::fs::write(&cache, disk.to_string()).expect("write");
    let second = run(&project, &cache, SystemTime::now());
    assert_eq!(
        descriptions(&second),
        ["Use when: a is asked for", "Use when: b is asked for"]
    );
    // ...but what was said about it is not said again.
    assert_eq!(second.said.len(), 2);
    assert!(
        second.run_warnings().is_empty(),
        "{:?}",
        second.run_warnings()
    );
    // Settled, it comes from the cache, its notes said already.
    let third = run(&project, &cache, later());
    assert!(
        third.run_warnings().is_empty(),
        "{:?}",
        third.run_warnings()
    );
}

#[test]
fn a_note_that_changed_is_said_though_others_were() {
    let (_dir, project, cache) = project();
    run(&project, &cache, later());
    std::fs::write(
        project.join(".claude/agents/a.md"),
        "---\nname: a\ndescription: Use when: a is asked for\nmodel: opus\n---\nbody\n",
    )
    .expect("write");
    let d = run(&project, &cache, later());
    let said: Vec<String> = d.run_warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(
        said,
        ["hx: warning: agent a: model opus is Claude's; the configured model is used"]
    );
    assert!(d.run_warnings()[0].is_advisory());
}

#[test]
fn a_broken_file_is_kept_as_broken() {
    let (_dir, project, cache) = project();
    std::fs::write(project.join(".claude/agents/c.md"), "no frontmatter\n").expect("write");
    let first = run(&project, &cache, later());
    let second = run(&project, &cache, later());
    assert_eq!(first.broken.len(), 1);
    assert_eq!(second.broken, first.broken);
    assert_eq!(on_disk(&cache)["entries"].as_array().map(Vec::len), Some(3));
}

#[test]
fn a_damaged_foreign_or_out_of_bounds_cache_costs_a_read_never_a_wrong_definition() {
    let (_dir, project, cache) = project();
    let want = run(&project, &cache, later()).agents;
    let good = on_disk(&cache);
    let again = |text: String| {
        std::fs::write(&cache, text).expect("write");
        let d = run(&project, &cache, later());
        assert_eq!(d.agents, want);
        // Written again whole, from what was read.
        assert_eq!(on_disk(&cache)["entries"].as_array().map(Vec::len), Some(2));
    };
    again("{ not json".into());
    again(String::new());
    let mut other = good.clone();
    other["binary"] = "0.0.1 another build".into();
    other["entries"][0]["read"]["Ok"]["description"] = "stale".into();
    again(other.to_string());
    let mut bad = good.clone();
    bad["entries"][0]["read"]["Ok"]["name"] = "has a space".into();
    again(bad.to_string());
    let mut long = good.clone();
    long["entries"][0]["read"]["Ok"]["description"] = "x".repeat(MAX_DESCRIPTION_CHARS + 1).into();
    again(long.to_string());
    let mut format = good;
    format["format"] = (FORMAT + 1).into();
    again(format.to_string());
    // Larger than the bound: not read at all.
    let f = std::fs::File::create(&cache).expect("create");
    f.set_len(MAX_CACHE_BYTES + 1).expect("grow");
    let d = run(&project, &cache, later());
    assert_eq!(d.agents, want);
}

#[test]
fn the_cache_keeps_this_run_first_and_at_most_max_entries() {
    let (_dir, project, cache) = project();
    run(&project, &cache, later());
    let mut disk = on_disk(&cache);
    let template = disk["entries"][0].clone();
    let mut entries = Vec::new();
    for i in 0..MAX_ENTRIES {
        let mut e = template.clone();
        e["path"] = format!("/elsewhere/{i}.md").into();
        entries.push(e);
    }
    disk["entries"] = entries.into();
    std::fs::write(&cache, disk.to_string()).expect("write");
    run(&project, &cache, later());
    let disk = on_disk(&cache);
    let kept = disk["entries"].as_array().expect("entries");
    assert_eq!(kept.len(), MAX_ENTRIES);
    assert!(kept[0]["path"]
        .as_str()
        .is_some_and(|p| p.ends_with("a.md")));
    assert!(kept[1]["path"]
        .as_str()
        .is_some_and(|p| p.ends_with("b.md")));
    assert_eq!(kept[2]["path"], "/elsewhere/0.md");
}
