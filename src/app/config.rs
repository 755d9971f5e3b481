//! The configuration of a command, loaded one way for every command.

use std::path::Path;

use super::Failure;
use crate::config::{Config, Env, Flags};
use crate::text::Warning;

/// A configuration and what loading it said (an untrusted project file is skipped with a
/// warning). Each command shows the warnings where its output goes: a run's views, or
/// stderr at once.
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<Warning>,
}

/// The configuration of a command run in `cwd`. A configuration that cannot be used is a
/// usage error, carrying the warnings that came before it.
pub fn load(cwd: &Path, env: &Env, flags: &Flags) -> Result<Loaded, Failure> {
    let mut warnings = Vec::new();
    match Config::load(cwd, env, flags, &mut warnings) {
        Ok(config) => Ok(Loaded { config, warnings }),
        Err(e) => Err(Failure::usage(e).after(warnings)),
    }
}

/// [`load_for_model`], for a command that runs the agent: a cost limit needs the model's
/// price too.
pub fn load_for_run(cwd: &Path, env: &Env, flags: &Flags) -> Result<Loaded, Failure> {
    let loaded = load_for_model(cwd, env, flags)?;
    match loaded.config.require_price() {
        Ok(()) => Ok(loaded),
        Err(e) => Err(Failure::usage(e).after(loaded.warnings)),
    }
}

/// [`load`], for a command that talks to the model: the provider's key must be set.
pub fn load_for_model(cwd: &Path, env: &Env, flags: &Flags) -> Result<Loaded, Failure> {
    let loaded = load(cwd, env, flags)?;
    match loaded.config.require_key() {
        Ok(()) => Ok(loaded),
        Err(e) => Err(Failure::usage(e).after(loaded.warnings)),
    }
}
