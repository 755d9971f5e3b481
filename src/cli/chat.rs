//! `hx chat`, and bare `hx` on a terminal: parse the flags, find the session to continue,
//! load the config, and run the conversation (`crate::chat`) in the guarded runtime.

use std::io::IsTerminal;

use super::{exit, fail, show_failure, ChatArgs};
use crate::app::runtime::Guard;
use crate::app::session::{find_picked, Pick};
use crate::app::{self};
use crate::chat::{self, SavedTerminal, Setup};
use crate::config::process_env;

pub(super) fn chat_command(args: ChatArgs) -> i32 {
    if !std::io::stdin().is_terminal() {
        return fail(
            exit::USAGE,
            "hx chat needs a terminal on stdin; for scripts use hx agent \"TASK\"",
        );
    }
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let mut flags = args.run.flags();
    let env = process_env();
    let pick = Pick::from_flags(args.continue_, args.resume.as_deref());
    let resume = match find_picked(pick, !args.ephemeral, &cwd, &env) {
        Ok(r) => r,
        Err(f) => return show_failure(f),
    };
    if let Some(r) = &resume {
        r.keep_provider(&mut flags);
    }
    let app::config::Loaded { config, warnings } =
        match app::config::load_for_run(&cwd, &env, &flags) {
            Ok(l) => l,
            Err(f) => return show_failure(f),
        };
    for w in warnings {
        errln!("{w}");
    }
    let terminal = SavedTerminal::save();
    let shell_env = config.shell_env.clone();
    let guard = Guard {
        shell_env: &shell_env,
        keep_background: config.keep_background,
    };
    let setup = Setup {
        config,
        cwd,
        env,
        resume,
        ephemeral: args.ephemeral,
        term: super::shared_term(),
    };
    // A panic (a bug) must not leave the terminal raw: it is put back, and the guard still
    // ends what hx started.
    guard
        .run(|| terminal.restore(), || chat::run(setup, &terminal))
        .unwrap_or_else(show_failure)
}
