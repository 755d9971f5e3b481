//! Property tests of what hx reads from SKILL.md files and builds from them: the bounded
//! frontmatter reader never panics, never takes more than its cap from a file and agrees with
//! reading the whole file; what discovery and `check` make of any file stays within their
//! limits; and the catalog never exceeds its budget for any set of skills.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use hx::skills::check::check;
use hx::skills::discover::{
    read_frontmatter_from, skill_from_frontmatter, MAX_FRONTMATTER_BYTES, MAX_NAME_CHARS,
};
use hx::skills::parse::{parse_frontmatter, split_frontmatter};
use hx::skills::{catalog, Skill, SkillRegistry, Source, MAX_DESCRIPTION_CHARS};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const CAP: usize = MAX_FRONTMATTER_BYTES as usize;

/// A source that counts what is taken from it.
struct Counting<R> {
    inner: R,
    taken: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        Ok(n)
    }
}

/// Reads frontmatter from `bytes`, asserting the cap on what was taken.
fn read_capped(bytes: &[u8]) -> Result<String, String> {
    let mut source = Counting {
        inner: bytes,
        taken: 0,
    };
    let result = read_frontmatter_from(&mut source);
    assert!(
        source.taken <= MAX_FRONTMATTER_BYTES,
        "took {}",
        source.taken
    );
    result
}

/// What the bounded reader must give for a whole file: the frontmatter the whole-file
/// splitter finds, when everything up to the end of the closing fence line lies within the
/// cap (a fence line without its newline must end before the cap: the cap could have cut it).
fn expected(text: &str) -> Option<String> {
    let (fm, _) = split_frontmatter(text)?;
    let fm_end = fm.as_ptr() as usize - text.as_ptr() as usize + fm.len();
    let (head, whole_line) = match text[fm_end..].find('\n') {
        Some(i) => (fm_end + i + 1, true),
        None => (text.len(), false),
    };
    let fits = if whole_line { head <= CAP } else { head < CAP };
    fits.then(|| fm.to_string())
}

/// Files written for hx and other agents, as mutation starting points.
const VALID: [&str; 8] = [
    "---\nname: deploy\ndescription: Ship it.\n---\n# Deploy\n\nRun scripts/run.sh.\n",
    "\u{feff}---\r\nname: review\r\ndescription: \"Review: tests first\"\r\n---\r\nBody\r\n",
    "---\nname: fold\ndescription: >\n  Folded\n  text\nlicense: MIT\nmetadata:\n  owner: ops\n---\n",
    "---\ndescription: Use when: asked to deploy # a comment\n  and wrapped\n---\nbody",
    "---\nname: 2024\ndescription: |\n  literal\n  block\nallowed-tools: [a, b]\n---\nx",
    "---\n---\n",
    "---\nname: a\ndescription: &x anchored\nother: *x\n---   \n",
    "---\n? name\n: explicit\ndescription: 'single ''quoted'''\ncompatibility: 3\n---\n",
];

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    /// Repeats a slice many times: long lines, many lines, deep nesting.
    Repeat(usize, usize, usize),
    /// Inserts a run that puts what follows around the read cap.
    Fill(usize, usize),
}

fn piece() -> impl Strategy<Value = String> {
    const SYNTAX: [&str; 29] = [
        "---",
        "\n",
        "\r\n",
        ": ",
        "\u{feff}",
        "\n---\n",
        "name: ",
        "description: ",
        "  ",
        "\"",
        "'",
        "[",
        "]",
        "{",
        "}",
        "|",
        ">",
        "#",
        "&a ",
        "*a",
        "? ",
        "- ",
        "!!str ",
        "\t",
        "\\",
        "\u{0}",
        "é",
        "\u{202e}",
        "\u{1b}[2J",
    ];
    prop_oneof![
        3 => proptest::sample::select(&SYNTAX[..]).prop_map(str::to_string),
        1 => any::<String>(),
        1 => "[a-z0-9 :#-]{0,20}",
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        6 => (any::<usize>(), piece()).prop_map(|(at, s)| Edit::Insert(at, s)),
        2 => (any::<usize>(), 0usize..40).prop_map(|(at, n)| Edit::Delete(at, n)),
        1 => (any::<usize>(), 1usize..40, 0usize..400).prop_map(|(at, n, k)| Edit::Repeat(at, n, k)),
        1 => (any::<usize>(), CAP - 80..CAP + 16).prop_map(|(at, n)| Edit::Fill(at, n)),
    ]
}

/// The char boundary at or before `at % (len + 1)`.
fn boundary(text: &str, at: usize) -> usize {
    let mut i = at % (text.len() + 1);
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &mut String, edit: &Edit) {
    match edit {
        Edit::Insert(at, s) => {
            let i = boundary(text, *at);
            text.insert_str(i, s);
        }
        Edit::Delete(at, n) => {
            let i = boundary(text, *at);
            let j = boundary(text, i + n).max(i);
            text.replace_range(i..j, "");
        }
        Edit::Repeat(at, n, k) => {
            let i = boundary(text, *at);
            let j = boundary(text, i + n).max(i);
            let slice = text[i..j].repeat(*k);
            text.insert_str(j, &slice);
        }
        Edit::Fill(at, n) => {
            let i = boundary(text, *at);
            text.insert_str(i, &"a".repeat(*n));
        }
    }
}

fn mutated() -> impl Strategy<Value = String> {
    (0..VALID.len(), proptest::collection::vec(edit(), 0..6)).prop_map(|(i, edits)| {
        let mut text = VALID[i].to_string();
        for e in &edits {
            apply(&mut text, e);
        }
        text
    })
}

/// Everything discovery and `check` do with one file: no panic, and what comes out is within
/// the limits.
fn assert_within_limits(file: &Path, text: &str) {
    let result = read_capped(text.as_bytes());
    assert_eq!(result.as_ref().ok(), expected(text).as_ref());
    if let Ok(fm) = result {
        if let Ok(parsed) = parse_frontmatter(&fm) {
            let path = Path::new("/skills/some-skill/SKILL.md");
            if let Ok(skill) =
                skill_from_frontmatter(path, Path::new("/skills/some-skill"), &parsed, Source::User)
            {
                let name = skill.name.chars().count();
                assert!((1..=MAX_NAME_CHARS).contains(&name), "name of {name}");
                assert!(!skill.name.chars().any(char::is_control));
                let description = skill.description.chars().count();
                assert!((1..=MAX_DESCRIPTION_CHARS).contains(&description));
            }
        }
    }
    std::fs::write(file, text).expect("write");
    for problem in check(file) {
        let n = problem.message.chars().count();
        assert!(n <= 300, "a message of {n} characters: {}", problem.message);
    }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn mutated_skill_files_never_panic_and_stay_within_the_cap() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("some-skill/SKILL.md");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    runner(256)
        .run(&mutated(), |text| {
            assert_within_limits(&file, &text);
            Ok(())
        })
        .expect("property holds");
}

#[test]
fn random_bytes_never_panic_and_stay_within_the_cap() {
    let bytes = (
        proptest::option::of(Just(b"---\n".to_vec())),
        proptest::collection::vec(any::<u8>(), 0..2_000),
    )
        .prop_map(|(head, rest)| [head.unwrap_or_default(), rest].concat());
    runner(512)
        .run(&bytes, |bytes| {
            let result = read_capped(&bytes);
            if let Ok(text) = std::str::from_utf8(&bytes) {
                assert_eq!(result.as_ref().ok(), expected(text).as_ref());
            }
            if let Ok(fm) = result {
                let _ = parse_frontmatter(&fm);
            }
            Ok(())
        })
        .expect("property holds");
}

#[test]
fn an_endless_file_is_read_no_further_than_the_cap() {
    for byte in [b'a', b'\n', b'-', 0] {
        let endless = b"---\n".chain(io::repeat(byte));
        let mut source = Counting {
            inner: endless,
            taken: 0,
        };
        assert_eq!(
            read_frontmatter_from(&mut source),
            Err("frontmatter is longer than 64 KiB".to_string())
        );
        assert_eq!(source.taken, MAX_FRONTMATTER_BYTES);
    }
}

fn skill(name: String, description: String) -> Skill {
    Skill {
        path: PathBuf::from(format!("/p/{name}/SKILL.md")),
        folder: PathBuf::from(format!("/p/{name}")),
        within: None,
        name,
        source: Source::Project,
        description,
        model_invocable: true,
        user_invocable: true,
        argument_hint: None,
    }
}

#[test]
fn the_catalog_never_exceeds_its_budget() {
    let skills = proptest::collection::vec((any::<String>(), any::<String>()), 0..40);
    runner(128)
        .run(&(skills, 0usize..12_000), |(skills, budget)| {
            let registry = SkillRegistry::new(skills.into_iter().map(|(n, d)| skill(n, d)));
            let text = catalog(&registry, budget);
            assert!(
                text.chars().count() <= budget,
                "{} > {budget}",
                text.chars().count()
            );
            Ok(())
        })
        .expect("property holds");
}

#[test]
fn the_catalog_lists_names_in_order_and_cuts_descriptions() {
    let description = prop_oneof![
        1 => Just(String::new()),
        3 => "[a-z :.é]{1,40}",
        // Past the description cap, built by repetition: generating it char by char is slow.
        1 => ("[a-z ]{10}", 100usize..200).prop_map(|(s, n)| s.repeat(n)),
    ];
    let skills = proptest::collection::vec(("[a-z0-9-]{1,64}", description), 1..60);
    runner(128)
        .run(&(skills, 0usize..20_000), |(skills, budget)| {
            let registry = SkillRegistry::new(skills.into_iter().map(|(n, d)| skill(n, d)));
            let names: Vec<&str> = registry.names().collect();
            let text = catalog(&registry, budget);
            assert!(text.chars().count() <= budget);
            let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
            let more = lines.last().filter(|l| l.starts_with("- … and "));
            let listed = lines.len() - usize::from(more.is_some());
            for (line, name) in lines[..listed].iter().zip(&names) {
                let (shown, description) = match line[2..].split_once(": ") {
                    Some((n, d)) => (n, d),
                    None => (&line[2..], ""),
                };
                assert_eq!(shown, *name);
                assert!(description.chars().count() <= MAX_DESCRIPTION_CHARS);
            }
            let names_only =
                names.iter().map(|n| n.chars().count() + 3).sum::<usize>() + text_len_of_intro();
            if budget >= names_only {
                assert_eq!(listed, names.len(), "every name fits in {budget}");
            }
            if listed < names.len() && !text.is_empty() {
                let more = more.expect("a line counting the rest");
                let counted = format!("- … and {} more,", names.len() - listed);
                assert!(more.starts_with(&counted), "{more}");
            }
            Ok(())
        })
        .expect("property holds");
}

/// The characters before the first `- ` line: the intro and a blank line.
fn text_len_of_intro() -> usize {
    let registry = SkillRegistry::new([skill("x".into(), String::new())]);
    catalog(&registry, usize::MAX).chars().count() - "\n- x".chars().count()
}
