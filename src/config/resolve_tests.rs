//! The sections of `Config::resolve`, each on its own.

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

fn err<T: std::fmt::Debug>(r: Result<T, ConfigError>) -> String {
    r.expect_err("a config error").0
}

// The sections as the tests of their values call them: where each value came from is the
// tests' of `origins` below.
fn provider(file: &FileConfig, env: &Env, flags: &Flags) -> Result<Provider, ConfigError> {
    super::provider(file, env, flags, &mut Origins::default())
}

fn turn_limits(file: &FileConfig, flags: &Flags) -> Result<Turns, ConfigError> {
    super::turn_limits(file, flags, &mut Origins::default())
}

fn efforts(file: &FileConfig, known: bool, table: &ProviderFile, flags: &Flags) -> Efforts {
    super::efforts(file, known, table, flags, &mut Origins::default())
}

#[test]
fn blank_variables_choose_nothing() {
    let e = env(&[
        ("HX_PROVIDER", " "),
        ("HX_MODEL", ""),
        ("DEEPSEEK_API_KEY", "\t"),
    ]);
    let p = provider(
        &parse("provider = \"openai\"\nmodel = \"m\"\n"),
        &e,
        &Flags::default(),
    )
    .expect("provider");
    assert_eq!((p.name.as_str(), p.model.as_str()), ("openai", "m"));
    let p = provider(&FileConfig::default(), &e, &Flags::default()).expect("provider");
    assert_eq!(p.api_key_env.as_deref(), Some("DEEPSEEK_API_KEY"));
    assert_eq!(p.api_key, None);
}

#[test]
fn a_table_inherits_its_presets_fields_and_an_empty_key_variable_means_no_key() {
    let e = env(&[("DEEPSEEK_API_KEY", "k")]);
    let f = parse("[providers.deepseek]\nmodel = \"deepseek-v4-pro\"\n");
    let p = provider(&f, &e, &Flags::default()).expect("provider");
    assert_eq!(p.model, "deepseek-v4-pro");
    assert_eq!(p.base_url, "https://api.deepseek.com");
    assert_eq!(p.api_key.as_deref(), Some("k"));
    assert_eq!(p.reasoning_echo, ReasoningEcho::Always);

    let f = parse("[providers.deepseek]\napi_key_env = \"\"\n");
    let p = provider(&f, &e, &Flags::default()).expect("provider");
    assert_eq!((p.api_key_env, p.api_key), (None, None));
}

#[test]
fn the_reasoning_echo_is_the_tables_else_the_presets_else_auto() {
    let openai = Flags {
        provider: Some("openai".into()),
        model: Some("m".into()),
        ..Flags::default()
    };
    let p = provider(&FileConfig::default(), &env(&[]), &openai).expect("provider");
    assert_eq!(p.reasoning_echo, ReasoningEcho::Never);
    let f = parse("[providers.openai]\nsend_reasoning = \"always\"\n");
    let p = provider(&f, &env(&[]), &openai).expect("provider");
    assert_eq!(p.reasoning_echo, ReasoningEcho::Always);
    let f =
        parse("provider = \"local\"\n[providers.local]\nbase_url = \"http://h\"\nmodel = \"m\"\n");
    let p = provider(&f, &env(&[]), &Flags::default()).expect("provider");
    assert_eq!(p.reasoning_echo, ReasoningEcho::Auto);
    assert_eq!(p.refused_hint, None);
}

#[test]
fn an_unknown_provider_lists_the_presets_and_the_tables_once_each() {
    let f = parse("[providers.zeta]\nbase_url = \"http://h\"\n[providers.openai]\nmodel = \"m\"\n");
    let flags = Flags {
        provider: Some("nope".into()),
        ..Flags::default()
    };
    assert_eq!(
        err(provider(&f, &env(&[]), &flags)),
        "unknown provider 'nope' (known: deepseek, llamacpp, ollama, openai, openrouter, vllm, zeta); define it \
         in a config file as [providers.nope]"
    );
}

#[test]
fn the_base_url_is_checked_before_the_model() {
    let flags = Flags {
        provider: Some("local".into()),
        ..Flags::default()
    };
    let f = parse("[providers.local]\napi_key_env = \"K\"\n");
    assert_eq!(
        err(provider(&f, &env(&[]), &flags)),
        "provider 'local' has no base_url; set [providers.local] base_url in a config file or \
         pass --base-url"
    );
    let f = parse("[providers.local]\nbase_url = \"ftp://h\"\n");
    assert_eq!(
        err(provider(&f, &env(&[]), &flags)),
        "base URL must start with http:// or https://, got 'ftp://h'"
    );
    let f = parse("[providers.local]\nbase_url = \"http://h\"\n");
    assert_eq!(
        err(provider(&f, &env(&[]), &flags)),
        "no model set for provider 'local'; pass --model, set HX_MODEL, or set \
         [providers.local] model in a config file"
    );
}

#[test]
fn network_values_have_floors_and_unset_ones_keep_the_defaults() {
    let c = network(&NetworkFile::default(), "http://h", None);
    let want = ClientOptions {
        base_url: "http://h".into(),
        ..ClientOptions::default()
    };
    assert_eq!(format!("{c:?}"), format!("{want:?}"));

    let zeros = NetworkFile {
        retries: Some(0),
        retry_base_delay_ms: Some(0),
        connect_timeout_secs: Some(0),
        idle_timeout_secs: Some(0),
        request_timeout_secs: Some(0),
        max_response_secs: Some(0),
        max_event_bytes: Some(0),
        max_response_bytes: Some(0),
    };
    let c = network(&zeros, "http://h", Some("hint".into()));
    assert_eq!((c.retries, c.retry_base_delay), (0, Duration::ZERO));
    let second = Duration::from_secs(1);
    assert_eq!(
        [
            c.connect_timeout,
            c.idle_timeout,
            c.request_timeout,
            c.max_response_time
        ],
        [second; 4]
    );
    assert_eq!((c.max_event_bytes, c.max_response_bytes), (1024, 1024));
    assert_eq!(c.refused_hint.as_deref(), Some("hint"));
}

#[test]
fn tool_limits_have_a_floor_and_the_bash_timeout_a_ceiling() {
    let defaults = ToolLimits::default();
    let l = tool_limits(&ToolsFile::default());
    assert_eq!(
        (l.output_chars, l.bash_timeout),
        (defaults.output_chars, defaults.bash_timeout)
    );
    let low = ToolsFile {
        output_chars: Some(5),
        bash_timeout_secs: Some(0),
        keep_background: None,
        background_shells: None,
        profile: None,
    };
    let l = tool_limits(&low);
    assert_eq!(
        (l.output_chars, l.bash_timeout),
        (1_000, Duration::from_secs(1))
    );
    let high = ToolsFile {
        bash_timeout_secs: Some(u64::MAX),
        ..low
    };
    assert_eq!(tool_limits(&high).bash_timeout, defaults.bash_max_timeout);
}

#[test]
fn the_flag_sets_the_turn_limit_and_neither_limit_may_be_zero() {
    let none = Flags::default();
    assert_eq!(
        turn_limits(&FileConfig::default(), &none).expect("turns"),
        Turns {
            max_turns: DEFAULT_MAX_TURNS,
            subagent_max_turns: DEFAULT_SUBAGENT_MAX_TURNS
        }
    );
    let f = parse("max_turns = 5\nsubagent_max_turns = 3\n");
    let nine = Flags {
        max_turns: Some(9),
        ..Flags::default()
    };
    assert_eq!(
        turn_limits(&f, &nine).expect("turns"),
        Turns {
            max_turns: 9,
            subagent_max_turns: 3
        }
    );
    let zero = Flags {
        max_turns: Some(0),
        ..Flags::default()
    };
    let msg = "max_turns and subagent_max_turns must be at least 1";
    assert_eq!(err(turn_limits(&f, &zero)), msg);
    assert_eq!(
        err(turn_limits(&parse("subagent_max_turns = 0\n"), &none)),
        msg
    );
}

#[test]
fn the_loop_settings_default_to_small_models_and_one_repeat_is_refused() {
    let mut o = Origins::default();
    assert_eq!(
        loop_settings(&FileConfig::default(), &mut o).expect("loop"),
        DEFAULT_LOOP
    );
    assert_eq!((DEFAULT_LOOP.repeats, DEFAULT_LOOP.stop_after), (3, 2));
    let f = parse(
        "[loop]
repeats = 0
stop_after = 7
",
    );
    assert_eq!(
        loop_settings(&f, &mut o).expect("loop"),
        LoopSettings {
            repeats: 0,
            stop_after: 7
        }
    );
    assert_eq!(
        err(loop_settings(
            &parse(
                "[loop]
repeats = 1
"
            ),
            &mut o
        )),
        "loop.repeats must be 0 (off) or at least 2"
    );
    assert!(toml::from_str::<FileConfig>(
        "[loop]
repeat = 3
"
    )
    .is_err());
    // A project's table is laid over the user's key by key.
    let both = parse(
        "[loop]
repeats = 5
stop_after = 1
",
    )
    .overlay(parse(
        "[loop]
stop_after = 4
",
    ));
    assert_eq!(
        loop_settings(&both, &mut o).expect("loop"),
        LoopSettings {
            repeats: 5,
            stop_after: 4
        }
    );
}

#[test]
fn every_key_variable_of_the_presets_and_the_tables_but_an_empty_one() {
    let f = parse(
        "[providers.work]\napi_key_env = \"WORK_CRED\"\n[providers.deepseek]\napi_key_env = \"\"\n",
    );
    let got: Vec<String> = key_vars(&f.providers).into_iter().collect();
    assert_eq!(
        got,
        [
            "DEEPSEEK_API_KEY",
            "OPENAI_API_KEY",
            "OPENROUTER_API_KEY",
            "WORK_CRED"
        ]
    );
}

#[test]
fn the_window_is_the_tables_then_the_files_then_the_models() {
    let v4 = context::builtin_window("deepseek-v4-flash").expect("a known window");
    let f = FileConfig::default();
    let (s, configured) = context_settings(&f, None, "deepseek-v4-flash").expect("settings");
    assert_eq!((s.window, configured), (v4, false));
    let (s, _) = context_settings(&f, None, "qwen3-coder").expect("settings");
    assert_eq!(s.window, context::DEFAULT_WINDOW);
    assert_eq!(
        s.compact_at,
        CompactAt::Fraction(context::DEFAULT_COMPACT_AT)
    );

    let f = parse("context_window = 50000\n");
    let (s, configured) = context_settings(&f, None, "deepseek-v4-flash").expect("settings");
    assert_eq!((s.window, configured), (50_000, true));
    let (s, configured) = context_settings(&f, Some(60_000), "m").expect("settings");
    assert_eq!((s.window, configured), (60_000, true));
}

#[test]
fn a_too_small_window_is_reported_before_a_bad_compact_at() {
    let f = parse("context_window = 10\ncompact_at = 1.5\n");
    let e = err(context_settings(&f, None, "m"));
    assert!(e.starts_with("context_window = 10 is too small"), "{e}");
    let e = err(context_settings(&f, Some(10_000), "m"));
    assert!(e.starts_with("compact_at = 1.5 is not a share"), "{e}");
}

#[test]
fn compact_at_is_a_share_up_to_one_or_at_least_the_smallest_window_of_tokens() {
    let min = context::MIN_WINDOW;
    for (written, want) in [
        (CompactAtFile::Fraction(1.0), Some(CompactAt::Fraction(1.0))),
        (
            CompactAtFile::Fraction(0.01),
            Some(CompactAt::Fraction(0.01)),
        ),
        (CompactAtFile::Fraction(0.0), None),
        (CompactAtFile::Fraction(-0.5), None),
        (CompactAtFile::Fraction(1.01), None),
        (CompactAtFile::Fraction(f64::NAN), None),
        (CompactAtFile::Tokens(min), Some(CompactAt::Tokens(min))),
        (CompactAtFile::Tokens(min - 1), None),
        (CompactAtFile::Tokens(0), None),
    ] {
        assert_eq!(compact_at(Some(written)).ok(), want, "{written:?}");
    }
    assert_eq!(
        compact_at(None).ok(),
        Some(CompactAt::Fraction(context::DEFAULT_COMPACT_AT))
    );
}

#[test]
fn the_first_bad_mcp_server_by_name_is_reported_with_its_table() {
    let f = parse(
        "[mcp_servers.b]\ncommand = \"x\"\nurl = \"http://h\"\n\
         [mcp_servers.a]\ncommand = \" \"\n\
         [mcp_servers.c]\ncommand = \"ok\"\n",
    );
    assert_eq!(
        err(check_mcp_servers(&f.mcp_servers)),
        "[mcp_servers.a] command is empty"
    );
    let f = parse("[mcp_servers.c]\ncommand = \"ok\"\n");
    assert!(check_mcp_servers(&f.mcp_servers).is_ok());
}

/// With several mistakes, the section that comes first in `resolve` is the one reported;
/// mending each in turn shows the next.
#[test]
fn the_sections_report_their_problems_in_order() {
    // (a top-level line, a table) per mistake; TOML wants the top-level lines first.
    let mistakes: [(&str, &str, &str); 6] = [
        ("provider = \"nope\"\n", "", "unknown provider 'nope'"),
        ("max_turns = 0\n", "", "max_turns and subagent_max_turns"),
        (
            "",
            "[shell_env]\ninclude_only = [\"[x\"]\n",
            "[shell_env] include_only: bad pattern",
        ),
        (
            "",
            "[sandbox]\nwritable_roots = [\"\"]\n",
            "sandbox.writable_roots has an empty entry",
        ),
        (
            "context_window = 10\n",
            "",
            "context_window = 10 is too small",
        ),
        (
            "",
            "[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h\"\n",
            "[mcp_servers.x] give either command or url",
        ),
    ];
    for first in 0..mistakes.len() {
        let left = &mistakes[first..];
        let text: String = left
            .iter()
            .map(|m| m.0)
            .chain(left.iter().map(|m| m.1))
            .collect();
        let e = err(Config::resolve(parse(&text), &env(&[]), &Flags::default()));
        assert!(e.contains(mistakes[first].2), "{text}\n{e}");
    }
}

#[test]
fn the_effort_is_the_flags_then_the_sessions_then_the_tables_then_the_files() {
    use Effort::{High, Low, Max, Off};
    let known = |file: &str, flags: &Flags| {
        let f = parse(file);
        let table = f.providers.get("deepseek").cloned().unwrap_or_default();
        efforts(&f, true, &table, flags)
    };
    let none = Flags::default();
    let top = "effort = \"low\"\n";
    let both = "effort = \"low\"\n[providers.deepseek]\neffort = \"max\"\n";
    let efforts_of = |main, subagents| Efforts { main, subagents };
    assert_eq!(known("", &none), efforts_of(None, None));
    assert_eq!(known(top, &none), efforts_of(Some(Low), None));
    assert_eq!(known(both, &none), efforts_of(Some(Max), None));
    let session = Flags {
        session_effort: Some(Some(High)),
        ..Flags::default()
    };
    assert_eq!(known(both, &session), efforts_of(Some(High), None));
    // A session whose requests said nothing goes on saying nothing.
    let session_none = Flags {
        session_effort: Some(None),
        ..Flags::default()
    };
    assert_eq!(known(both, &session_none), efforts_of(None, None));
    let flag = Flags {
        effort: Some(Off),
        ..session
    };
    assert_eq!(known(both, &flag), efforts_of(Some(Off), None));
    let subs = "subagent_effort = \"low\"\n[providers.deepseek]\nsubagent_effort = \"off\"\n";
    assert_eq!(known(subs, &none), efforts_of(None, Some(Off)));
    assert_eq!(
        known("subagent_effort = \"low\"\n", &none),
        efforts_of(None, Some(Low))
    );
}

#[test]
fn a_provider_without_known_effort_words_gets_only_what_was_set_for_it() {
    let f = parse("effort = \"low\"\nsubagent_effort = \"off\"\n");
    let table = ProviderFile::default();
    let got = efforts(&f, false, &table, &Flags::default());
    assert_eq!(
        got,
        Efforts {
            main: None,
            subagents: None
        }
    );
    let f = parse(
        "effort = \"low\"\n[providers.ollama]\neffort = \"high\"\nsubagent_effort = \"off\"\n",
    );
    let table = f.providers["ollama"].clone();
    let got = efforts(&f, false, &table, &Flags::default());
    assert_eq!(
        got,
        Efforts {
            main: Some(Effort::High),
            subagents: Some(Effort::Off)
        }
    );
    let flag = Flags {
        effort: Some(Effort::Max),
        ..Flags::default()
    };
    let got = efforts(&parse(""), false, &ProviderFile::default(), &flag);
    assert_eq!(got.main, Some(Effort::Max));
}

#[test]
fn each_provider_is_told_the_effort_in_its_words() {
    use crate::model::Thinking;
    let e = env(&[]);
    let of = |provider: &str, file: &str| {
        let flags = Flags {
            provider: Some(provider.into()),
            model: Some("m".into()),
            ..Flags::default()
        };
        Config::resolve(parse(file), &e, &flags).expect("config")
    };
    let set = "effort = \"max\"\nsubagent_effort = \"low\"\n";
    for (provider, dialect) in [
        ("deepseek", Dialect::DeepSeek),
        ("openai", Dialect::OpenAi),
        ("openrouter", Dialect::OpenRouter),
    ] {
        let c = of(provider, set);
        let thinking = |effort| Some(Thinking { effort, dialect });
        assert_eq!(c.profile().thinking(), thinking(Effort::Max), "{provider}");
        assert_eq!(
            c.profiles().subagent(&c.profile(), None).0.thinking(),
            thinking(Effort::Low),
            "{provider}"
        );
        // Without a setting, nothing: the model's default holds.
        let c = of(provider, "");
        assert_eq!(
            (
                c.profile().thinking(),
                c.profiles().subagent(&c.profile(), None).0.thinking()
            ),
            (None, None)
        );
        // The subagents follow the main agent unless told otherwise.
        let c = of(provider, "effort = \"off\"\n");
        assert_eq!(
            c.profiles().subagent(&c.profile(), None).0.thinking(),
            thinking(Effort::Off),
            "{provider}"
        );
    }
    let c = of("ollama", set);
    assert_eq!(
        (
            c.profile().thinking(),
            c.profiles().subagent(&c.profile(), None).0.thinking()
        ),
        (None, None)
    );
    let c = of(
        "work",
        "[providers.work]\nbase_url = \"http://localhost:1\"\neffort = \"low\"\n",
    );
    assert_eq!(
        c.profile().thinking(),
        Some(Thinking {
            effort: Effort::Low,
            dialect: Dialect::OpenAi
        })
    );
}

#[test]
fn an_unknown_effort_in_a_file_names_the_allowed_values_and_the_line() {
    for text in [
        "max_turns = 3\neffort = \"huge\"\n",
        "max_turns = 3\nsubagent_effort = \"huge\"\n",
        "max_turns = 3\n[providers.deepseek]\neffort = \"medium\"\n",
    ] {
        let e = FileConfig::parse(std::path::Path::new("/c.toml"), text)
            .expect_err("not an effort")
            .0;
        assert!(e.starts_with("bad config file /c.toml (line "), "{e}");
        assert!(e.contains("`off`, `low`, `high`, `max`"), "{e}");
    }
}

#[test]
fn the_project_files_efforts_lie_over_the_users() {
    let user = parse(
        "effort = \"low\"\nsubagent_effort = \"low\"\n[providers.deepseek]\neffort = \"low\"\nsubagent_effort = \"low\"\n",
    );
    let project = parse(
        "effort = \"max\"\nsubagent_effort = \"off\"\n[providers.deepseek]\neffort = \"high\"\nsubagent_effort = \"max\"\n",
    );
    let f = FileConfig::default().overlay(user).overlay(project);
    assert_eq!(
        (f.effort, f.subagent_effort),
        (Some(Effort::Max), Some(Effort::Off))
    );
    let t = &f.providers["deepseek"];
    assert_eq!(
        (t.effort, t.subagent_effort),
        (Some(Effort::High), Some(Effort::Max))
    );
}

/// A file as the loader reads it: named as `hx config` names it.
fn file(path: &str, name: &str, text: &str) -> FileConfig {
    FileConfig::parse(std::path::Path::new(path), text)
        .expect("valid test TOML")
        .named(name)
}

/// `hx config`'s lines of `config`, as `key = value  # origin`.
fn origins_of(config: &Config) -> Vec<String> {
    crate::config::origins::report(config)
        .settings
        .iter()
        .map(|s| format!("{} = {}  # {}", s.key, s.value, s.origin))
        .collect()
}

#[test]
fn each_setting_says_where_it_was_chosen_and_the_rest_which_file_set_it_last() {
    let user = file(
        "/u.toml",
        "user file /u.toml",
        "max_turns = 9\nsessions = false\nmodel = \"top\"\n[tools]\noutput_chars = 5000\n\
         [providers.deepseek]\nmodel = \"from-user\"\neffort = \"low\"\n\
         [providers.other]\nmodel = \"o\"\n[mcp_servers.x]\ncommand = \"srv\"\n\
         env = { TOKEN = \"hunter2\" }\n",
    );
    let project = file(
        "/p.toml",
        "project file /p.toml (trusted)",
        "guard = false\n[sessions]\nenabled = true\n[tools]\noutput_chars = 6000\n\
         [loop]\nrepeats = 4\n",
    );
    let flags = Flags {
        sandbox: Some(sandbox::Mode::ReadOnly),
        ..Flags::default()
    };
    let e = env(&[("HX_MODEL", "from-env"), ("DEEPSEEK_API_KEY", "k")]);
    let c = Config::resolve(
        FileConfig::default().overlay(user).overlay(project),
        &e,
        &flags,
    )
    .expect("config");
    assert_eq!(
        origins_of(&c),
        [
            "provider = \"deepseek\"  # default",
            "model = \"from-env\"  # environment HX_MODEL",
            "base_url = \"https://api.deepseek.com\"  # the provider's default",
            "api_key_env = \"DEEPSEEK_API_KEY\"  # the provider's default; the variable is set",
            "max_turns = 9  # user file /u.toml",
            "loop.repeats = 4  # project file /p.toml (trusted)",
            "loop.stop_after = 2  # default",
            "effort = \"low\"  # user file /u.toml",
            "sandbox.mode = \"read-only\"  # flag --sandbox",
            "tools.profile = \"default\"  # default",
            "guard = false  # project file /p.toml (trusted)",
            "project_doc = true  # default",
            "show_reasoning = false  # default",
            "trace = \"short\"  # default",
            // `enabled` in the project's table is over the user's `sessions = false`.
            "sessions = true  # project file /p.toml (trusted)",
            "notifications = \"auto\"  # default",
            "notify = []  # default",
            "notify_after_secs = 5  # default",
            // The keys no setting above was read from: another provider's table is not.
            "mcp_servers.x.command = \"srv\"  # user file /u.toml",
            "mcp_servers.x.env.TOKEN = \"***\"  # user file /u.toml",
            "providers.other.model = \"o\"  # user file /u.toml",
            "tools.output_chars = 6000  # project file /p.toml (trusted)",
        ]
    );
}

#[test]
fn the_notification_settings_are_listed_with_the_file_that_set_them() {
    let user = file(
        "/u.toml",
        "user file /u.toml",
        "notifications = \"bel\"\nnotify = [\"notify-send\", \"hx\"]\nnotify_after_secs = 30\n",
    );
    let c = Config::resolve(user, &env(&[]), &Flags::default()).expect("config");
    let lines = origins_of(&c);
    for line in [
        "notifications = \"bel\"  # user file /u.toml",
        "notify = [\"notify-send\", \"hx\"]  # user file /u.toml",
        "notify_after_secs = 30  # user file /u.toml",
    ] {
        assert_eq!(
            lines.iter().filter(|l| *l == line).count(),
            1,
            "{line} in {lines:#?}"
        );
    }
}

#[test]
fn the_tool_profile_comes_from_the_flag_over_the_files() {
    use crate::tools::minimal::Profile;
    let user = file(
        "/u.toml",
        "user file /u.toml",
        "[tools]\nprofile = \"minimal\"\n",
    );
    let c = Config::resolve(user.clone(), &env(&[]), &Flags::default()).expect("config");
    assert_eq!(c.tool_profile, Profile::Minimal);
    assert!(
        origins_of(&c).contains(&"tools.profile = \"minimal\"  # user file /u.toml".to_string())
    );
    let flags = Flags {
        tools: Some(Profile::Default),
        ..Flags::default()
    };
    let c = Config::resolve(user, &env(&[]), &flags).expect("config");
    assert_eq!(c.tool_profile, Profile::Default);
    assert!(origins_of(&c).contains(&"tools.profile = \"default\"  # flag --tools".to_string()));
}

#[test]
fn a_mode_written_short_names_its_file_and_a_flag_wins_over_every_file() {
    let user = file("/u.toml", "user file /u.toml", "sandbox = \"read-only\"\n");
    let c = Config::resolve(user.clone(), &env(&[]), &Flags::default()).expect("config");
    let lines = origins_of(&c);
    assert!(
        lines.contains(&"sandbox.mode = \"read-only\"  # user file /u.toml".to_string()),
        "{lines:?}"
    );
    // The short form is a key of its own as written, listed with the rest as before.
    assert!(
        lines.contains(&"sandbox = \"read-only\"  # user file /u.toml".to_string()),
        "{lines:?}"
    );
    let flags = Flags {
        provider: Some("openai".into()),
        model: Some("m".into()),
        base_url: Some("http://h".into()),
        max_turns: Some(3),
        show_reasoning: true,
        no_guard: true,
        no_project_doc: true,
        effort: Some(Effort::High),
        ..Flags::default()
    };
    let c = Config::resolve(user, &env(&[]), &flags).expect("config");
    let lines = origins_of(&c);
    for flag in [
        "--provider",
        "--model",
        "--base-url",
        "--max-turns",
        "--effort",
        "--no-guard",
        "--no-project-doc",
        "--show-reasoning",
    ] {
        assert!(
            lines.iter().any(|l| l.ends_with(&format!("# flag {flag}"))),
            "{flag}: {lines:?}"
        );
    }
}
