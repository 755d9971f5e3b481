use super::presets::preset;
use super::*;

fn env(pairs: &[(&str, &str)]) -> Env {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(s: &str) -> FileConfig {
    toml::from_str(s).expect("valid test TOML")
}

#[test]
fn defaults_are_deepseek() {
    let c = Config::resolve(
        FileConfig::default(),
        &env(&[("DEEPSEEK_API_KEY", "k")]),
        &Flags::default(),
    )
    .expect("config");
    assert_eq!(c.provider, "deepseek");
    assert_eq!(c.model, "deepseek-flash");
    assert_eq!(c.base_url, "https://api.deepseek.com");
    assert_eq!(c.api_key.as_deref(), Some("k"));
    assert_eq!(c.max_turns, 200);
    assert!(c.require_key().is_ok());
}

#[test]
fn missing_key_names_the_variable() {
    let c = Config::resolve(FileConfig::default(), &env(&[]), &Flags::default()).expect("config");
    let e = c.require_key().expect_err("no key");
    assert!(e.0.contains("DEEPSEEK_API_KEY"), "{e}");
}

#[test]
fn precedence_user_project_env_flags() {
    let user = parse("model = \"user-model\"\nmax_turns = 5\n");
    let project = parse("model = \"project-model\"\n");
    let merged = FileConfig::default().overlay(user).overlay(project);
    let c = Config::resolve(merged.clone(), &env(&[]), &Flags::default()).expect("c");
    assert_eq!((c.model.as_str(), c.max_turns), ("project-model", 5));
    let c = Config::resolve(
        merged.clone(),
        &env(&[("HX_MODEL", "env-model")]),
        &Flags::default(),
    )
    .expect("c");
    assert_eq!(c.model, "env-model");
    let flags = Flags {
        model: Some("flag-model".into()),
        max_turns: Some(9),
        ..Flags::default()
    };
    let c = Config::resolve(merged, &env(&[("HX_MODEL", "env-model")]), &flags).expect("c");
    assert_eq!((c.model.as_str(), c.max_turns), ("flag-model", 9));
}

#[test]
fn custom_provider_without_key_env_sends_no_key() {
    let f = parse("[providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"qwen\"\n");
    let flags = Flags {
        provider: Some("local".into()),
        ..Flags::default()
    };
    let c = Config::resolve(f, &env(&[("DEEPSEEK_API_KEY", "k")]), &flags).expect("c");
    assert_eq!(c.api_key, None);
    assert_eq!(c.api_key_env, None);
    assert!(c.require_key().is_ok());
    assert_eq!(c.client_options().base_url, "http://127.0.0.1:8080/v1");
}

#[test]
fn deepseek_base_url_env_only_for_deepseek() {
    let e = env(&[
        ("DEEPSEEK_BASE_URL", "http://x:1"),
        ("DEEPSEEK_API_KEY", "k"),
    ]);
    let c = Config::resolve(FileConfig::default(), &e, &Flags::default()).expect("c");
    assert_eq!(c.base_url, "http://x:1");
    let flags = Flags {
        provider: Some("ollama".into()),
        model: Some("m".into()),
        ..Flags::default()
    };
    let c = Config::resolve(FileConfig::default(), &e, &flags).expect("c");
    assert_eq!(c.base_url, "http://localhost:11434/v1");
}

#[test]
fn openai_base_url_env_is_honoured_for_openai_only() {
    let e = env(&[
        ("OPENAI_BASE_URL", "http://proxy.internal:8080/v1"),
        ("OPENAI_API_KEY", "k"),
        ("DEEPSEEK_API_KEY", "k"),
    ]);
    let openai = Flags {
        provider: Some("openai".into()),
        model: Some("gpt-5".into()),
        ..Flags::default()
    };
    let c = Config::resolve(FileConfig::default(), &e, &openai).expect("c");
    assert_eq!(c.base_url, "http://proxy.internal:8080/v1");
    // The flag still wins over the environment.
    let flag = Flags {
        base_url: Some("http://flag:1".into()),
        ..openai
    };
    let c = Config::resolve(FileConfig::default(), &e, &flag).expect("c");
    assert_eq!(c.base_url, "http://flag:1");
    let c = Config::resolve(FileConfig::default(), &e, &Flags::default()).expect("c");
    assert_eq!(c.base_url, "https://api.deepseek.com");
}

#[test]
fn only_the_ollama_preset_says_how_to_start_its_server() {
    let flags = Flags {
        provider: Some("ollama".into()),
        model: Some("m".into()),
        ..Flags::default()
    };
    let c = Config::resolve(FileConfig::default(), &env(&[]), &flags).expect("c");
    assert_eq!(
        c.client.refused_hint.as_deref(),
        Some("is Ollama running? start it with `ollama serve`")
    );
    let e = env(&[("DEEPSEEK_API_KEY", "k")]);
    let c = Config::resolve(FileConfig::default(), &e, &Flags::default()).expect("c");
    assert_eq!(c.client.refused_hint, None);
}

#[test]
fn unknown_provider_and_missing_model_are_errors() {
    let flags = Flags {
        provider: Some("nope".into()),
        ..Flags::default()
    };
    let e = Config::resolve(FileConfig::default(), &env(&[]), &flags).expect_err("e");
    assert!(e.0.contains("unknown provider 'nope'"), "{e}");
    let flags = Flags {
        provider: Some("ollama".into()),
        ..Flags::default()
    };
    let e = Config::resolve(FileConfig::default(), &env(&[]), &flags).expect_err("e");
    assert!(e.0.contains("no model set for provider 'ollama'"), "{e}");
}

#[test]
fn unknown_keys_and_bad_toml_are_errors_with_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("config.toml");
    std::fs::write(&p, "modle = \"x\"\n").expect("write");
    let e = FileConfig::load(&p).expect_err("unknown key");
    assert!(e.0.contains("config.toml") && e.0.contains("modle"), "{e}");
    std::fs::write(&p, "model = \n").expect("write");
    let e = FileConfig::load(&p).expect_err("bad toml");
    assert!(e.0.contains("line 1"), "{e}");
}

#[test]
fn every_listed_preset_exists() {
    for p in PRESETS {
        assert!(preset(p.name).is_some(), "{}", p.name);
    }
}

/// The project file comes with the repository: it applies only while trusted, and the user
/// file always.
#[test]
fn load_applies_the_project_file_only_while_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let project = dir.path().join("p");
    std::fs::create_dir_all(home.join(".config/hx")).expect("mkdir");
    std::fs::create_dir_all(project.join(".hx")).expect("mkdir");
    std::fs::write(home.join(".config/hx/config.toml"), "max_turns = 5\n").expect("write");
    let file = project.join(".hx/config.toml");
    let text = "guard = false\n[providers.deepseek]\nbase_url = \"http://elsewhere\"\n";
    std::fs::write(&file, text).expect("write");
    let e = env(&[
        ("HOME", &home.display().to_string()),
        ("DEEPSEEK_API_KEY", "k"),
    ]);

    let mut warnings = Vec::new();
    let c = Config::load(&project, &e, &Flags::default(), &mut warnings).expect("config");
    assert_eq!(c.base_url, "https://api.deepseek.com");
    assert!(c.guard);
    assert_eq!(c.max_turns, 5);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let line = warnings[0].to_string();
    assert!(line.contains("`hx trust`"), "{line}");

    let store_path = crate::trust::TrustStore::path_for(&e).expect("store path");
    let mut store = crate::trust::TrustStore::load(&store_path).expect("store");
    store.trust(&file, text.as_bytes()).expect("trust");
    store.save().expect("save");
    let mut warnings = Vec::new();
    let c = Config::load(&project, &e, &Flags::default(), &mut warnings).expect("config");
    assert_eq!(c.base_url, "http://elsewhere");
    assert!(!c.guard);
    assert_eq!(c.max_turns, 5);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn review_shows_every_line_escaped_or_the_problem() {
    let lines = review(
        Path::new("c.toml"),
        "model = \"m\" # \u{202e}x\n\n[tools]\n",
    )
    .expect("valid");
    assert_eq!(
        lines,
        ["\"model = \"m\" # \\u{202e}x\"", "\"\"", "\"[tools]\""]
    );
    let problems =
        review(Path::new("c.toml"), "max_turns = 1\nmodle = 2\n").expect_err("unknown key");
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with("line 2: unknown field `modle`"),
        "{}",
        problems[0]
    );
}

#[test]
fn shell_env_lists_add_up_and_every_known_key_variable_is_dropped() {
    use std::ffi::OsString;
    let user = parse(
        "[shell_env]\nexclude = [\"A_*\"]\nset = { S1 = \"u\", S2 = \"u\" }\ninclude_only = [\"X\"]\n\
         [providers.work]\nbase_url = \"http://h\"\napi_key_env = \"WORK_CRED\"\n",
    );
    let project =
        parse("[shell_env]\nexclude = [\"B_*\"]\nset = { S2 = \"p\" }\ninclude_only = [\"*\"]\n");
    let merged = FileConfig::default().overlay(user).overlay(project);
    let c = Config::resolve(merged, &env(&[]), &Flags::default()).expect("config");
    let host: Vec<(OsString, OsString)> = ["A_1", "B_1", "C_1", "WORK_CRED", "OPENROUTER_API_KEY"]
        .iter()
        .map(|k| ((*k).into(), "v".into()))
        .collect();
    let e = c.shell_env.apply(host);
    let got: Vec<(String, String)> = e
        .vars()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [("C_1", "v"), ("S1", "u"), ("S2", "p")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(got, want);
    assert!(!c.keep_background);
}

#[test]
fn bad_shell_env_is_a_config_error() {
    for (text, want) in [
        ("[shell_env]\ninherit = \"some\"\n", "unknown variant"),
        ("[shell_env]\nbogus = 1\n", "unknown field"),
        (
            "[shell_env]\ninclude_only = [\"[x\"]\n",
            "[shell_env] include_only: bad pattern",
        ),
        (
            "[shell_env]\nset = { \"A=B\" = \"v\" }\n",
            "[shell_env] set: \"A=B\"",
        ),
    ] {
        let e = match toml::from_str::<FileConfig>(text) {
            Err(e) => e.to_string(),
            Ok(f) => {
                Config::resolve(f, &env(&[]), &Flags::default())
                    .expect_err("bad")
                    .0
            }
        };
        assert!(e.contains(want), "{text}: {e}");
    }
}

#[test]
fn another_model_takes_its_own_window_unless_a_file_set_one() {
    let mut c = Config::resolve(FileConfig::default(), &env(&[]), &Flags::default()).expect("c");
    let v4 = context::builtin_window("deepseek-v4-flash").expect("a known window");
    assert_eq!(c.context.window, v4);
    c.set_model("qwen3-coder");
    assert_eq!(c.model, "qwen3-coder");
    assert_eq!(c.context.window, context::DEFAULT_WINDOW);
    c.set_model("deepseek-v4-pro");
    assert_eq!(c.context.window, v4);

    let mut c = Config::resolve(
        parse("context_window = 50000\n"),
        &env(&[]),
        &Flags::default(),
    )
    .expect("c");
    c.set_model("qwen3-coder");
    assert_eq!(c.context.window, 50_000);
}

#[test]
fn a_retired_deepseek_name_is_deepseek_flash_thinking_as_it_did_with_one_line_saying_so() {
    use crate::model::{Dialect, Effort, Thinking};
    let deepseek = |effort| {
        Some(Thinking {
            effort,
            dialect: Dialect::DeepSeek,
        })
    };
    let with = |model: &str, effort: Option<Effort>| {
        let flags = Flags {
            model: Some(model.into()),
            effort,
            ..Flags::default()
        };
        Config::resolve(FileConfig::default(), &env(&[]), &flags).expect("config")
    };
    let chat = with("deepseek-chat", None);
    assert_eq!(chat.model, "deepseek-flash");
    assert_eq!(chat.profile().thinking(), deepseek(Effort::Off));
    assert_eq!(
        chat.profiles().subagent(&chat.profile(), None).0.thinking(),
        deepseek(Effort::Off)
    );
    assert_eq!(
        chat.retired_notice().map(|w| w.to_string()).as_deref(),
        Some("hx: deepseek-chat was retired on 2026-07-24: using deepseek-flash with thinking off, as it answered")
    );
    assert_eq!(
        chat.context.window,
        context::builtin_window("deepseek-flash").expect("known")
    );
    let reasoner = with("deepseek-reasoner", None);
    assert_eq!(reasoner.model, "deepseek-flash");
    assert_eq!(reasoner.profile().thinking(), deepseek(Effort::High));
    assert_eq!(
        reasoner.retired_notice().map(|w| w.to_string()).as_deref(),
        Some("hx: deepseek-reasoner was retired on 2026-07-24: using deepseek-flash with thinking on, as it answered")
    );
    // An effort the user set wins over the old name's.
    let set = with("deepseek-chat", Some(Effort::Max));
    assert_eq!(set.profile().thinking(), deepseek(Effort::Max));
    assert_eq!(
        set.retired_notice().map(|w| w.to_string()).as_deref(),
        Some("hx: deepseek-chat was retired on 2026-07-24: using deepseek-flash, at effort max as set")
    );
    // The current names, and the old V4 Flash name DeepSeek still takes, go as they are.
    for name in ["deepseek-flash", "deepseek-v4-pro", "deepseek-v4-flash"] {
        let c = with(name, None);
        assert_eq!((c.model.as_str(), c.profile().thinking()), (name, None));
        assert!(c.retired_notice().is_none(), "{name}");
    }
    // Another provider's model of that name is its own business.
    let flags = Flags {
        provider: Some("openrouter".into()),
        model: Some("deepseek-chat".into()),
        ..Flags::default()
    };
    let c = Config::resolve(FileConfig::default(), &env(&[]), &flags).expect("config");
    assert_eq!(
        (c.model.as_str(), c.profile().thinking()),
        ("deepseek-chat", None)
    );
    assert!(c.retired_notice().is_none());
}

#[test]
fn switching_to_a_retired_name_maps_it_and_switching_away_drops_its_effort() {
    use crate::model::Effort;
    let mut c = Config::resolve(FileConfig::default(), &env(&[]), &Flags::default()).expect("c");
    assert_eq!(c.main_effort(), None);
    let note = c.set_model("deepseek-reasoner").expect("a notice");
    assert!(
        note.text().starts_with("deepseek-reasoner was retired"),
        "{note}"
    );
    assert_eq!(
        (c.model.as_str(), c.main_effort()),
        ("deepseek-flash", Some(Effort::High))
    );
    assert!(c.set_model("deepseek-v4-pro").is_none());
    assert_eq!(
        (c.model.as_str(), c.main_effort()),
        ("deepseek-v4-pro", None)
    );
    c.set_effort(Effort::Low);
    c.set_model("deepseek-chat");
    assert_eq!(c.main_effort(), Some(Effort::Low));
}

#[test]
fn loading_a_config_with_a_retired_name_says_so_once() {
    let dir = tempfile::tempdir().expect("dir");
    let flags = Flags {
        model: Some("deepseek-chat".into()),
        ..Flags::default()
    };
    let mut warnings = Vec::new();
    let c = Config::load(dir.path(), &env(&[]), &flags, &mut warnings).expect("config");
    assert_eq!(c.model, "deepseek-flash");
    let lines: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        lines,
        ["hx: deepseek-chat was retired on 2026-07-24: using deepseek-flash with thinking off, as it answered"]
    );
}
