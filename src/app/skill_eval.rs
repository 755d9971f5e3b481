//! `hx skills eval`: does a skill's description make the model load the skill when it should,
//! and only then? The method of Anthropic's skill-creator (`scripts/run_eval.py`), built in:
//! an eval set of queries, each marked whether it should trigger the skill; each query sent a
//! few times as the first request of a run; the share of responses that call `load_skill`
//! with the skill's name is the query's trigger rate, which passes or fails against a
//! threshold; the result in skill-creator's shape, so its tools read it.
//!
//! The request is a real run's first, made by the same code: the agent [`super::build`]
//! makes for this folder (the skill registry edited first, for `--description` and
//! `--only`), its system prompt, its tools as the loop lists them before the first request
//! (MCP servers' included), and [`Agent::chat_request`]. Only the model is asked: no hook,
//! no tool, no checkpoint, no session. What differs from a run: the context a SessionStart or
//! UserPromptSubmit hook would add to the user message is not there, since hooks are not run.
//!
//! Cost: every request of an eval has the same prefix (tools, then the system prompt), and
//! the runs of one query are the same request: they go one after another, so each repeats a
//! request whose whole input the provider's prompt cache has just stored (DeepSeek keeps a
//! unit at the end of each request's input), while `jobs` queries go at once.
//!
//! The stream is read to its end rather than dropped once the answer is decided: the usage
//! (the tokens, hence the cost) comes on its last chunk, and after a `load_skill` call the
//! model has little left to write (the call's arguments); a response that calls nothing is
//! only decided at its end anyway.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};

use crate::agent::Agent;
use crate::model::{AssistantTurn, Message, Spend, Usage};
use crate::skills::{self, Skill, SkillRegistry};

/// Where a skill keeps its eval set, in its folder (skill-creator's `evals/` folder).
pub const EVAL_SET_FILE: &str = "evals/trigger.json";
/// Bytes of an eval set read (a thousand long queries fit).
pub const MAX_EVAL_SET_BYTES: u64 = 1024 * 1024;
/// Queries in one eval set: each costs `runs` requests.
pub const MAX_QUERIES: usize = 1_000;
/// Characters of one query (a user message of a few pages).
pub const MAX_QUERY_CHARS: usize = 20_000;
/// Runs of one query (`--runs`).
pub const MAX_RUNS: u32 = 100;
/// Queries asked at once (`--jobs`).
pub const MAX_JOBS: usize = 32;

/// One query of an eval set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub query: String,
    pub should_trigger: bool,
}

/// What an eval set is, for the errors that say a file is not one.
const SHAPE: &str =
    "an eval set is a JSON list of {\"query\": \"...\", \"should_trigger\": true|false}";

/// The eval set in `bytes`: a JSON list of `{"query", "should_trigger"}` objects (other keys
/// are left alone), each query non-empty, at most [`MAX_QUERY_CHARS`], and given once; at
/// most [`MAX_QUERIES`] of them. The error names the entry (from 1) and what is wrong.
pub fn parse_eval_set(bytes: &[u8]) -> Result<Vec<Case>, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON ({e}); {SHAPE}"))?;
    let list = match value {
        Value::Array(list) => list,
        // skill-creator's other file: the evals of the skill's output, not of its triggering.
        Value::Object(o) if o.contains_key("evals") => {
            return Err(format!(
                "this looks like skill-creator's evals.json (tests of what the skill does), not \
                 a trigger eval set; {SHAPE}"
            ))
        }
        _ => return Err(format!("not a list; {SHAPE}")),
    };
    if list.is_empty() {
        return Err(format!("the list is empty; {SHAPE}"));
    }
    if list.len() > MAX_QUERIES {
        return Err(format!(
            "{} queries; an eval set holds at most {MAX_QUERIES}",
            list.len()
        ));
    }
    let mut cases: Vec<Case> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let n = i + 1;
        let Some(obj) = entry.as_object() else {
            return Err(format!("entry {n} is not an object; {SHAPE}"));
        };
        let query = match obj.get("query") {
            Some(Value::String(q)) if !q.trim().is_empty() => q,
            Some(Value::String(_)) => return Err(format!("entry {n}: \"query\" is empty")),
            Some(_) => return Err(format!("entry {n}: \"query\" is not a string")),
            None => return Err(format!("entry {n} has no \"query\"")),
        };
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(format!(
                "entry {n}: the query has {chars} characters; at most {MAX_QUERY_CHARS}"
            ));
        }
        let should_trigger = match obj.get("should_trigger") {
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(format!(
                    "entry {n}: \"should_trigger\" is not true or false"
                ))
            }
            None => return Err(format!("entry {n} has no \"should_trigger\"")),
        };
        // skill-creator merges repeats into one result; here each entry is one, so a repeat
        // is a mistake to point at (twice the cost, or two opposite expectations).
        if let Some(j) = cases.iter().position(|c| c.query == *query) {
            return Err(format!("entry {n} repeats the query of entry {}", j + 1));
        }
        cases.push(Case {
            query: query.clone(),
            should_trigger,
        });
    }
    Ok(cases)
}

/// The eval set in the file at `path`: a regular file (a FIFO would hang), at most
/// [`MAX_EVAL_SET_BYTES`]; errors name the file.
pub fn read_eval_set(path: &Path) -> Result<Vec<Case>, String> {
    let p = path.display();
    let bytes = crate::paths::read_regular(path, MAX_EVAL_SET_BYTES)
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => format!("{p}: no such file"),
            ErrorKind::InvalidInput => format!("{p}: not a regular file"),
            _ => format!("{p}: cannot read ({e})"),
        })?
        .ok_or_else(|| {
            format!(
                "{p}: larger than {} KiB, the most hx reads of an eval set",
                MAX_EVAL_SET_BYTES / 1024
            )
        })?;
    parse_eval_set(&bytes).map_err(|e| format!("{p}: {e}"))
}

/// The skill's own eval set, [`EVAL_SET_FILE`] in its folder: `Ok(None)` when it has none. A
/// link that leads out of the folder is refused, as `load_skill` refuses to list one: what a
/// project's skill names is sent to the model as queries.
pub fn skill_eval_set(skill: &Skill) -> Result<Option<PathBuf>, String> {
    let path = skill.folder.join(EVAL_SET_FILE);
    match path.canonicalize() {
        Ok(real) if real.starts_with(&skill.folder) => Ok(Some(real)),
        Ok(real) => Err(format!(
            "{}: links to {}, outside the skill's folder",
            path.display(),
            real.display()
        )),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: cannot read ({e})", path.display())),
    }
}

/// A description given to try instead of the skill's (`--description`): on one line as
/// discovery keeps one, not empty, and no longer than the catalog shows one.
pub fn description_to_try(text: &str) -> Result<String, String> {
    let one = crate::text::collapse_whitespace(text);
    let chars = one.chars().count();
    if one.is_empty() {
        return Err("--description is empty".into());
    }
    if chars > skills::MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "--description has {chars} characters; a skill's description has at most {} (the \
             catalog would cut it)",
            skills::MAX_DESCRIPTION_CHARS
        ));
    }
    Ok(one)
}

/// `registry` as the eval's catalog lists it: the skill `name` with `description` instead of
/// its own, and without the other skills when `only`.
pub fn edited(
    registry: SkillRegistry,
    name: &str,
    description: Option<&str>,
    only: bool,
) -> SkillRegistry {
    SkillRegistry::new(
        registry
            .skills()
            .iter()
            .filter(|s| !only || s.name == name)
            .cloned()
            .map(|mut s| {
                if let (true, Some(d)) = (s.name == name, description) {
                    s.description = d.to_string();
                }
                s
            }),
    )
}

/// What to tell the user when the catalog of the eval's system prompt does not show the skill
/// `name` with its whole `description`: the catalog's budget (`skills_catalog_budget`) cut the
/// description or left the name out, or the skill is kept out of the catalog. The eval then
/// measures what the model is shown, which the user should know is not the description.
pub fn catalog_note(catalog: &str, name: &str, description: &str) -> Option<String> {
    let line = catalog.lines().find_map(|l| {
        let rest = l.strip_prefix("- ")?.strip_prefix(name)?;
        (rest.is_empty() || rest.starts_with(": ")).then(|| rest.trim_start_matches(": "))
    });
    match line {
        None => Some(format!(
            "skill {name} is not listed in the catalog a run here has, so the model cannot see it (skills_catalog_budget, or its frontmatter keeps it out)"
        )),
        Some(shown) if shown != description => Some(format!(
            "the catalog shows skill {name}'s description cut to {} of its {} characters (skills_catalog_budget): that is what the eval measures",
            shown.chars().count(),
            description.chars().count()
        )),
        Some(_) => None,
    }
}

/// Whether a response loads the skill `name`: one of its calls is `load_skill` asking for it
/// (other calls beside it do not matter; the skill would be loaded in the same turn).
pub fn triggered(turn: &AssistantTurn, name: &str) -> bool {
    turn.tool_calls.iter().any(|c| {
        c.name == skills::load::LOAD_SKILL
            && skills::load::requested(&c.arguments).as_deref() == Some(name)
    })
}

/// How an eval is run.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Requests per query.
    pub runs: u32,
    /// Queries asked at once.
    pub jobs: usize,
    /// The trigger rate a query that should trigger must reach, and one that should not must
    /// stay under.
    pub threshold: f64,
}

/// One query's result, in skill-creator's names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResult {
    pub query: String,
    pub should_trigger: bool,
    pub trigger_rate: f64,
    pub triggers: u32,
    pub runs: u32,
    pub pass: bool,
}

/// The eval's figures: skill-creator's `summary`, with precision and recall counted over the
/// runs as its `run_loop.py` counts them (1 when nothing is counted).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub total: usize,
    pub passed: usize,
    pub failed: usize,
    pub precision: f64,
    pub recall: f64,
}

/// What an eval found and what it cost.
#[derive(Debug, Clone)]
pub struct Report {
    pub skill_name: String,
    /// The description the catalog held (`--description`'s, else the skill's).
    pub description: String,
    pub threshold: f64,
    pub results: Vec<QueryResult>,
    pub summary: Summary,
    /// Requests made.
    pub requests: u32,
    /// The usage every response reported, added up.
    pub usage: Usage,
    pub spend: Spend,
}

impl Report {
    /// The report from each case's triggers and runs, in the eval set's order.
    pub fn new(
        skill_name: &str,
        description: &str,
        threshold: f64,
        tallies: Vec<(&Case, Tally)>,
        spend: Spend,
    ) -> Report {
        let mut usage = Usage::default();
        let (mut tp, mut fp, mut positive_runs) = (0u64, 0u64, 0u64);
        let results: Vec<QueryResult> = tallies
            .into_iter()
            .map(|(case, t)| {
                usage.add(&t.usage);
                let rate = if t.runs == 0 {
                    0.0
                } else {
                    f64::from(t.triggers) / f64::from(t.runs)
                };
                if case.should_trigger {
                    tp += u64::from(t.triggers);
                    positive_runs += u64::from(t.runs);
                } else {
                    fp += u64::from(t.triggers);
                }
                QueryResult {
                    query: case.query.clone(),
                    should_trigger: case.should_trigger,
                    trigger_rate: rate,
                    triggers: t.triggers,
                    runs: t.runs,
                    pass: if case.should_trigger {
                        rate >= threshold
                    } else {
                        rate < threshold
                    },
                }
            })
            .collect();
        let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        let passed = results.iter().filter(|r| r.pass).count();
        let summary = Summary {
            total: results.len(),
            passed,
            failed: results.len() - passed,
            precision: ratio(tp, tp + fp),
            recall: ratio(tp, positive_runs),
        };
        Report {
            skill_name: skill_name.to_string(),
            description: description.to_string(),
            threshold,
            requests: results.iter().map(|r| r.runs).sum(),
            results,
            summary,
            usage,
            spend,
        }
    }

    pub fn all_passed(&self) -> bool {
        self.summary.failed == 0
    }

    /// skill-creator's result (`skill_name`, `description`, `results`, `summary`), and hx's
    /// additions: the threshold, the requests made, and their `usage` in the words of `hx
    /// agent --json` (tokens, cost and currency).
    pub fn to_json(&self) -> Value {
        let costs = crate::events::Costs {
            all: self.spend,
            ..Default::default()
        };
        json!({
            "skill_name": self.skill_name,
            "description": self.description,
            "results": self.results,
            "summary": self.summary,
            "threshold": self.threshold,
            "requests": self.requests,
            "usage": crate::events::json::usage_json(&self.usage, &costs),
        })
    }
}

/// One query's count.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub triggers: u32,
    pub runs: u32,
    pub usage: Usage,
}

/// Runs the eval of the skill `name` with `agent` (built for the eval's catalog): each case
/// `settings.runs` times, one run after another, `settings.jobs` cases at once. `done` hears
/// the number of requests answered so far after each. The first request that fails (after
/// the client's retries) ends the eval with its error, as does passing the config's
/// `max_cost`: a rate over fewer runs than asked would be another measurement.
pub async fn evaluate(
    agent: &Agent,
    name: &str,
    description: &str,
    cases: &[Case],
    settings: Settings,
    done: &dyn Fn(u32),
) -> Result<Report, String> {
    // As the loop lists them before its first request: this starts the MCP servers.
    let mut toolset = agent.tools().clone();
    toolset.refresh().await;
    let tools = toolset.specs();
    let answered = std::cell::Cell::new(0u32);
    let (tools, answered) = (&tools, &answered);
    let queries = cases.iter().enumerate().map(|(i, case)| async move {
        let messages = [
            Message::System(agent.system_prompt().to_string()),
            Message::User(case.query.clone()),
        ];
        let req = agent.chat_request(&messages, tools);
        let label = format!("query {}: ", i + 1);
        let mut tally = Tally::default();
        for _ in 0..settings.runs {
            let turn = agent
                .complete_quietly(&req, &label)
                .await
                .map_err(|e| format!("{label}{e}"))?;
            tally.runs += 1;
            tally.triggers += u32::from(triggered(&turn, name));
            if let Some(u) = &turn.usage {
                tally.usage.add(u);
                agent.cost_of(u);
            }
            answered.set(answered.get() + 1);
            done(answered.get());
            if let Some(why) = agent.over_budget() {
                return Err(format!("{why}; the eval stopped"));
            }
        }
        Ok::<_, String>((i, tally))
    });
    let mut running = futures_util::stream::iter(queries).buffer_unordered(settings.jobs.max(1));
    let mut tallies = vec![Tally::default(); cases.len()];
    while let Some(finished) = running.next().await {
        // Returning drops the stream, and with it the requests still open.
        let (i, tally) = finished?;
        tallies[i] = tally;
    }
    let spend = agent.spent();
    Ok(Report::new(
        name,
        description,
        settings.threshold,
        cases.iter().zip(tallies).collect(),
        spend,
    ))
}

#[cfg(test)]
#[path = "skill_eval_tests.rs"]
mod tests;
