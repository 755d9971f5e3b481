use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::config::Flags;

/// A config read in a fresh HOME, with `flags` and the user file `user`.
fn config(flags: Flags, user: &str) -> (Config, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("tempdir");
    let env: Env = [
        ("HOME", home.path().to_string_lossy().to_string()),
        ("DEEPSEEK_API_KEY", "k".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let dir = home.path().join(".config/hx");
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(dir.join("config.toml"), user).expect("user file");
    let c = Config::load(home.path(), &env, &flags, &mut Vec::new()).expect("config");
    (c, home)
}

fn local(model: &str) -> Flags {
    Flags {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        model: Some(model.into()),
        ..Flags::default()
    }
}

#[test]
fn a_run_asks_only_when_it_cannot_know_the_window() {
    assert!(asks(&config(local("qwen3-8b"), "").0));
    // DeepSeek's API and models, OpenAI's and OpenRouter's API: known, or stated nowhere.
    assert!(!asks(&config(Flags::default(), "").0));
    assert!(!asks(&config(local("deepseek-v4-pro"), "").0));
    for url in ["https://api.openai.com/v1", "https://OpenRouter.ai/api/v1"] {
        let flags = Flags {
            base_url: Some(url.into()),
            ..local("some-model")
        };
        assert!(!asks(&config(flags, "").0), "{url}");
    }
    // A configured window always wins, and is not asked about.
    assert!(!asks(
        &config(local("qwen3-8b"), "context_window = 8192\n").0
    ));
}

fn key(model: &str) -> Key {
    Key {
        base_url: "http://127.0.0.1:8080/v1".into(),
        model: model.into(),
    }
}

fn stated(tokens: u64) -> Outcome {
    Outcome::Stated {
        stated: Stated {
            tokens,
            from: "/v1/models meta.n_ctx".into(),
        },
        cached: false,
    }
}

#[test]
fn the_cache_keeps_an_answer_per_server_and_model_for_a_day() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hx").join(CACHE_FILE);
    let now = 1_800_000_000;
    remember(&path, &key("a"), &stated(4096), now);
    remember(
        &path,
        &key("b"),
        &Outcome::NoneStated { cached: false },
        now,
    );
    remember(&path, &key("c"), &Outcome::NoAnswer { cached: false }, now);
    // Nothing is kept of a question not asked or still out.
    remember(&path, &key("d"), &Outcome::Pending, now);
    let hit = cached(&path, &key("a"), now + 60).and_then(|o| o.stated().cloned());
    assert_eq!(
        hit.map(|s| (s.tokens, s.from)),
        Some((4096, "/v1/models meta.n_ctx".into()))
    );
    assert!(matches!(
        cached(&path, &key("a"), now + 60),
        Some(Outcome::Stated { cached: true, .. })
    ));
    assert_eq!(
        cached(&path, &key("b"), now + 60),
        Some(Outcome::NoneStated { cached: true })
    );
    assert_eq!(
        cached(&path, &key("c"), now + 60),
        Some(Outcome::NoAnswer { cached: true })
    );
    assert_eq!(cached(&path, &key("d"), now), None);
    // Another server, another entry.
    let other = Key {
        base_url: "http://127.0.0.1:8081/v1".into(),
        ..key("a")
    };
    assert_eq!(cached(&path, &other, now), None);
    // A stated window holds a day; silence an hour; a time ahead of the clock not at all.
    assert!(cached(&path, &key("a"), now + FRESH_SECS - 1).is_some());
    assert_eq!(cached(&path, &key("a"), now + FRESH_SECS), None);
    assert_eq!(cached(&path, &key("b"), now + FRESH_NONE_SECS), None);
    assert_eq!(cached(&path, &key("a"), now - 3_600), None);
    // A new answer replaces the old one.
    remember(&path, &key("a"), &stated(8192), now + 10);
    let hit = cached(&path, &key("a"), now + 20).and_then(|o| o.stated().cloned());
    assert_eq!(hit.map(|s| s.tokens), Some(8192));
    assert_eq!(read(&path).len(), 3);
}

#[test]
fn a_damaged_cache_costs_a_question_never_a_wrong_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(CACHE_FILE);
    let now = 1_800_000_000;
    for damaged in [
        "not json".to_string(),
        "{\"format\":1,\"entries\":7}".into(),
        format!("{{\"format\":99,\"entries\":[{{\"base_url\":\"http://127.0.0.1:8080/v1\",\"model\":\"a\",\"at\":{now},\"window\":4096}}]}}"),
    ] {
        std::fs::write(&path, damaged).expect("write");
        assert_eq!(cached(&path, &key("a"), now), None);
    }
    // Entries no run would write are left out: a window of 0 or of 2^40 tokens.
    let entries: Vec<String> = [0u64, 1 << 40, 4096]
        .iter()
        .enumerate()
        .map(|(i, w)| {
            format!("{{\"base_url\":\"http://127.0.0.1:8080/v1\",\"model\":\"m{i}\",\"at\":{now},\"window\":{w}}}")
        })
        .collect();
    let text = format!("{{\"format\":1,\"entries\":[{}]}}", entries.join(","));
    std::fs::write(&path, text).expect("write");
    assert_eq!(cached(&path, &key("m0"), now), None);
    assert_eq!(cached(&path, &key("m1"), now), None);
    assert!(cached(&path, &key("m2"), now).is_some());
    // Too large: not read, and rewritten smaller by the next answer.
    let big = format!(
        "{{\"format\":1,\"entries\":[],\"pad\":\"{}\"}}",
        "x".repeat(MAX_CACHE_BYTES as usize)
    );
    std::fs::write(&path, big).expect("write");
    assert_eq!(cached(&path, &key("m2"), now), None);
    remember(&path, &key("a"), &stated(4096), now);
    assert!(std::fs::metadata(&path).expect("file").len() < 1_000);
    assert!(cached(&path, &key("a"), now).is_some());
}

#[test]
fn an_answer_after_the_build_reaches_whoever_asked_to_be_told() {
    let told = Arc::new(AtomicU64::new(0));
    // Already in: told at once.
    let probe = Probe::ready(stated(4096), Instant::now());
    let t = told.clone();
    probe.then(move |s| t.store(s.tokens, Ordering::SeqCst));
    assert_eq!(told.load(Ordering::SeqCst), 4096);
    // Still out: the wait ends at its bound, and the answer tells when it lands.
    let probe = Probe::ready(Outcome::Pending, Instant::now());
    assert_eq!(probe.wait(Duration::from_millis(20)), Outcome::Pending);
    let t = told.clone();
    probe.then(move |s| t.store(s.tokens, Ordering::SeqCst));
    let shared = probe.shared.clone();
    let landing = std::thread::spawn(move || land(&shared, stated(8192)));
    assert_eq!(
        probe
            .wait(Duration::from_secs(30))
            .stated()
            .map(|s| s.tokens),
        Some(8192)
    );
    landing.join().expect("landed");
    assert_eq!(told.load(Ordering::SeqCst), 8192);
    // An answer stating none tells nobody.
    let probe = Probe::ready(Outcome::Pending, Instant::now());
    probe.then(|_| panic!("told of no window"));
    land(&probe.shared, Outcome::NoneStated { cached: false });
}
