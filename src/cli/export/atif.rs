//! A session as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format, v1.7: the
//! version whose subagent references, `llm_call_count` and per-call `extra` hx uses; Harbor
//! 0.25.0's `harbor.utils.trajectory_validator` accepts it).
//!
//! The mapping, step by step in the order the session file recorded things:
//! - the system prompt is a `system` step, each user message a `user` step;
//! - each model response is an `agent` step: its text, `reasoning_content`, `tool_calls`
//!   (arguments parsed as the JSON object they are; text that is not one is kept whole in the
//!   call's `extra.raw_arguments`, with `{}` as the arguments, which is what hx sent back),
//!   the calls' results as its `observation` (each linked by `source_call_id`; an answer hx
//!   gave when a crashed session was resumed has `extra.answered_at_resume`), and `metrics`
//!   from the `usage` line of its request (prompt tokens with the cache hits in them, cache
//!   hits as `cached_tokens`, completion tokens, `cost_usd` when the request was priced in
//!   dollars; reasoning tokens and a cost in another currency in `metrics.extra`);
//! - a compaction is a `system` step whose `extra.context_management` says what changed: a
//!   prune (`boundary: "edit"`) lists the results it cleared by step and call; a summary
//!   (`boundary: "replace"`) follows the `agent` step of the summary request (its text and
//!   metrics; `extra.request: "compaction_summary"`), and is followed by the history that
//!   replaced the old one, its messages repeated as steps with `is_copied_context` (all but
//!   hx's message holding the summary, the one thing new in it; the skills and todo list it
//!   carries over are `agent` steps of hx's own, `llm_call_count: 0`). Nothing recorded
//!   before is rewritten: steps are what happened, in order;
//! - a rewind is a `system` step; one of the conversation says in
//!   `extra.context_management` (`boundary: "truncate"`) the last step the history kept;
//! - a request whose usage is recorded but whose response is not (the run stopped between
//!   them) is an `agent` step with an empty message, its metrics, and `extra.response`;
//! - each subagent's session is embedded in `subagent_trajectories` (all of them at the root,
//!   however deep), its `trajectory_id` the session's id, and the result of the `task` call
//!   that started it refers to it (`subagent_trajectory_ref`);
//! - `final_metrics` are the session's own figures (its `end` lines'); `total_cost_usd`
//!   counts its subagents' costs too, as ATIF says, when every request was priced in dollars.
//!
//! The session file does not time messages, so steps have no `timestamp`; runs' start and end
//! times are in the root's `extra.runs`.

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::timeline::{By, Call, Step, Timeline, Turn};
use crate::model::price::{Currency, Spend};
use crate::session::record::RequestUsage;

const SCHEMA_VERSION: &str = "ATIF-v1.7";

const NOTES: &str = "Exported by hx sessions export from an hx session file. Steps are in \
the order the session recorded them and are never rewritten: a compaction is a system step \
(extra.context_management) and, when it replaced the history, the new history follows as \
steps marked is_copied_context, except hx's summary message; a rewind is a system step. \
The file does not time messages: steps have no timestamp. final_metrics count this \
session's own requests (compaction summaries included); subagents' are in their embedded \
trajectories, and total_cost_usd includes them.";

#[derive(Debug, Serialize)]
pub struct Trajectory {
    schema_version: &'static str,
    session_id: String,
    trajectory_id: String,
    agent: Agent,
    steps: Vec<AtifStep>,
    #[serde(skip_serializing_if = "Option::is_none")]
    notes: Option<&'static str>,
    final_metrics: FinalMetrics,
    extra: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent_trajectories: Option<Vec<Trajectory>>,
}

#[derive(Debug, Serialize)]
struct Agent {
    name: &'static str,
    version: &'static str,
    model_name: String,
}

#[derive(Debug, Default, Serialize)]
struct AtifStep {
    step_id: usize,
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<String>,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_copied_context: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm_call_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<Value>,
}

#[derive(Debug, Serialize)]
struct ToolCall {
    tool_call_id: String,
    function_name: String,
    arguments: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<Value>,
}

#[derive(Debug, Serialize)]
struct Observation {
    results: Vec<ObservationResult>,
}

#[derive(Debug, Default, Serialize)]
struct ObservationResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    source_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent_trajectory_ref: Option<Vec<SubagentRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<Value>,
}

#[derive(Debug, Serialize)]
struct SubagentRef {
    trajectory_id: String,
    session_id: String,
}

#[derive(Debug, Serialize)]
struct Metrics {
    prompt_tokens: u64,
    completion_tokens: u64,
    cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<Value>,
}

#[derive(Debug, Serialize)]
struct FinalMetrics {
    total_prompt_tokens: u64,
    total_completion_tokens: u64,
    total_cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_cost_usd: Option<f64>,
    total_steps: usize,
    extra: Value,
}

/// The trajectory of `t`, its subagents' embedded.
pub fn trajectory(t: &Timeline) -> Trajectory {
    let mut root = one(t);
    let mut embedded = Vec::new();
    let mut queue: Vec<&Timeline> = t.subagents.iter().map(|s| &s.timeline).collect();
    while let Some(sub) = queue.pop() {
        embedded.push(one(sub));
        queue.extend(sub.subagents.iter().map(|s| &s.timeline));
    }
    // In the order they were started (ids are UUIDv7s, which sort by time).
    embedded.sort_by(|a, b| a.trajectory_id.cmp(&b.trajectory_id));
    if !embedded.is_empty() {
        root.subagent_trajectories = Some(embedded);
    }
    root.notes = Some(NOTES);
    root
}

/// The JSON text of [`trajectory`].
pub fn document(t: &Timeline) -> String {
    // Nothing here can fail to serialize: every map key is a string.
    let text = serde_json::to_string_pretty(&trajectory(t)).unwrap_or_default();
    format!("{text}\n")
}

/// One session's trajectory, without its subagents' embedded.
fn one(t: &Timeline) -> Trajectory {
    // ATIF numbers steps from 1 with nothing skipped; some of the timeline's steps (runs,
    // switches) are not steps of a trajectory but its metadata.
    let mut ids = vec![None; t.steps.len()];
    let mut next = 1;
    for (i, s) in t.steps.iter().enumerate() {
        if is_step(s) {
            ids[i] = Some(next);
            next += 1;
        }
    }
    let mut steps = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        let Some(id) = ids[i] else { continue };
        let mut step = step(s, t, &ids);
        step.step_id = id;
        steps.push(step);
    }
    if steps.is_empty() {
        // ATIF wants at least one step; a session with no message (a run stopped before its
        // first) still says what it is.
        steps.push(AtifStep {
            step_id: 1,
            source: "system",
            message: "The session recorded no message.".into(),
            ..AtifStep::default()
        });
    }
    Trajectory {
        schema_version: SCHEMA_VERSION,
        session_id: t.header.id.clone(),
        trajectory_id: t.header.id.clone(),
        agent: Agent {
            name: "hx",
            version: env!("CARGO_PKG_VERSION"),
            model_name: t.header.model.clone(),
        },
        final_metrics: final_metrics(t, steps.len()),
        steps,
        notes: None,
        extra: root_extra(t),
        subagent_trajectories: None,
    }
}

fn is_step(s: &Step) -> bool {
    !matches!(
        s,
        Step::Run(_) | Step::End(_) | Step::Model(_) | Step::Effort(_)
    )
}

fn step(s: &Step, t: &Timeline, ids: &[Option<usize>]) -> AtifStep {
    let copied = |c: bool| c.then_some(true);
    match s {
        Step::System { text, copied: c } => AtifStep {
            source: "system",
            message: text.clone(),
            is_copied_context: copied(*c),
            ..AtifStep::default()
        },
        Step::User {
            text,
            copied: c,
            summary,
        } => AtifStep {
            source: "user",
            message: text.clone(),
            is_copied_context: copied(*c),
            extra: summary.then(|| json!({"compaction_summary": true})),
            ..AtifStep::default()
        },
        Step::Agent(turn) => agent_step(turn, t),
        Step::Compaction(c) => {
            let mut cm = json!({
                "type": "compaction",
                "boundary": if c.replaced.is_some() { "replace" } else { "edit" },
                "trigger": c.trigger,
                "step": c.step,
                "tokens_before": c.tokens_before,
                "tokens_after": c.tokens_after,
            });
            let message = match c.replaced {
                Some(n) => format!(
                    "hx compacted the conversation ({}, {}): about {} tokens before, {} after. \
                     The history was replaced by {n} messages, the steps that follow (marked \
                     is_copied_context, but for hx's summary): what the model was given from \
                     here on.",
                    c.trigger, c.step, c.tokens_before, c.tokens_after
                ),
                None => {
                    cm["cleared"] = c
                        .cleared
                        .iter()
                        .map(|(step, call, text)| {
                            let call_id = match t.steps.get(*step) {
                                Some(Step::Agent(turn)) => turn.calls.get(*call).map(|c| &c.id),
                                _ => None,
                            };
                            json!({
                                "step_id": ids.get(*step).copied().flatten(),
                                "tool_call_id": call_id,
                                "content": text,
                            })
                        })
                        .collect();
                    format!(
                        "hx cleared {} old tool results to fit the context window ({}, {}): \
                         about {} tokens before, {} after. From here on the model reads them \
                         as extra.context_management.cleared says; the steps above keep them \
                         as they were sent then.",
                        c.cleared.len(),
                        c.trigger,
                        c.step,
                        c.tokens_before,
                        c.tokens_after
                    )
                }
            };
            AtifStep {
                source: "system",
                message,
                extra: Some(json!({ "context_management": cm })),
                ..AtifStep::default()
            }
        }
        Step::Rewind { line, last_kept } => {
            let mut extra = json!({"rewind": {
                "to_checkpoint": line.to,
                "files": line.code,
                "conversation": line.conversation,
                "paths": line.paths,
                "at": line.at,
            }});
            let message = match (line.conversation, line.at_message) {
                (true, Some(k)) => {
                    let last = last_kept.and_then(|i| ids.get(i).copied().flatten());
                    extra["context_management"] = json!({
                        "type": "rewind",
                        "boundary": "truncate",
                        "messages_kept": k,
                        "last_step_kept": last,
                    });
                    let through = last.map_or_else(
                        || "none of the steps above".to_string(),
                        |s| format!("the steps up to {s}"),
                    );
                    format!(
                        "hx rewind to checkpoint {}: the conversation went back to its first \
                         {k} messages ({through}); what followed is no longer in the model's \
                         context.{}",
                        line.to,
                        if line.code {
                            " The files went back too."
                        } else {
                            ""
                        }
                    )
                }
                _ => format!(
                    "hx rewind to checkpoint {}: the files went back; the conversation goes on.",
                    line.to
                ),
            };
            AtifStep {
                source: "system",
                message,
                extra: Some(extra),
                ..AtifStep::default()
            }
        }
        Step::Stray { call_id, content } => AtifStep {
            source: "system",
            message: "A tool result whose call is not in the session.".into(),
            observation: Some(Observation {
                results: vec![ObservationResult {
                    content: Some(content.clone()),
                    extra: Some(json!({"tool_call_id": call_id})),
                    ..ObservationResult::default()
                }],
            }),
            ..AtifStep::default()
        },
        Step::Run(_) | Step::End(_) | Step::Model(_) | Step::Effort(_) => AtifStep::default(),
    }
}

fn agent_step(turn: &Turn, t: &Timeline) -> AtifStep {
    let llm = turn.by != By::Hx;
    let tool_calls: Vec<ToolCall> = turn.calls.iter().map(tool_call).collect();
    let results: Vec<ObservationResult> = turn
        .calls
        .iter()
        .filter_map(|c| observation_result(c, t))
        .collect();
    let extra = match turn.by {
        By::Model => None,
        By::Summary => Some(json!({"request": "compaction_summary"})),
        By::Unrecorded => Some(json!({
            "request": match turn.usage.as_ref().and_then(|u| u.request.as_deref()) {
                None => "turn",
                Some("summary") => "compaction_summary",
                Some(other) => other,
            },
            "response": "not recorded: the session has the request's usage, not its answer",
        })),
        By::Hx => Some(
            json!({"carried_over": "by a compaction: hx put these calls and their \
            answers back into the history it made"}),
        ),
    };
    AtifStep {
        source: "agent",
        model_name: llm.then(|| turn.model.clone()),
        reasoning_effort: if llm { turn.effort.clone() } else { None },
        message: turn.content.clone(),
        reasoning_content: if llm { turn.reasoning.clone() } else { None },
        tool_calls: (!tool_calls.is_empty()).then_some(tool_calls),
        observation: (!results.is_empty()).then_some(Observation { results }),
        metrics: if llm {
            turn.usage.as_ref().map(metrics)
        } else {
            None
        },
        is_copied_context: turn.copied.then_some(true),
        llm_call_count: if llm {
            (!turn.copied).then_some(1)
        } else {
            Some(0)
        },
        extra,
        ..AtifStep::default()
    }
}

fn tool_call(c: &Call) -> ToolCall {
    match serde_json::from_str::<Value>(&c.arguments) {
        Ok(Value::Object(arguments)) => ToolCall {
            tool_call_id: c.id.clone(),
            function_name: c.name.clone(),
            arguments,
            extra: None,
        },
        // ATIF's arguments are an object; the text is kept as the model wrote it.
        _ => ToolCall {
            tool_call_id: c.id.clone(),
            function_name: c.name.clone(),
            arguments: Map::new(),
            extra: Some(json!({"raw_arguments": c.arguments})),
        },
    }
}

fn observation_result(c: &Call, t: &Timeline) -> Option<ObservationResult> {
    let refs: Vec<SubagentRef> = t
        .subagents
        .iter()
        .filter(|s| s.call_id.as_deref() == Some(c.id.as_str()))
        .map(|s| SubagentRef {
            trajectory_id: s.timeline.header.id.clone(),
            session_id: s.timeline.header.id.clone(),
        })
        .collect();
    if c.result.is_none() && refs.is_empty() {
        return None;
    }
    Some(ObservationResult {
        source_call_id: Some(c.id.clone()),
        content: c.result.as_ref().map(|r| r.content.clone()),
        subagent_trajectory_ref: (!refs.is_empty()).then_some(refs),
        extra: c
            .result
            .as_ref()
            .filter(|r| r.at_resume)
            .map(|_| json!({"answered_at_resume": true})),
    })
}

fn metrics(u: &RequestUsage) -> Metrics {
    let mut extra = Map::new();
    if u.usage.reasoning_tokens > 0 {
        extra.insert("reasoning_tokens".into(), u.usage.reasoning_tokens.into());
    }
    let mut cost_usd = None;
    if let Some(c) = u.cost {
        if c.currency == Currency::USD {
            cost_usd = Some(c.nanos as f64 / 1e9);
        } else {
            extra.insert(
                "cost".into(),
                json!({"amount": c.nanos as f64 / 1e9, "currency": c.currency.code()}),
            );
        }
        if c.peak {
            extra.insert("peak_price".into(), true.into());
        }
    }
    Metrics {
        prompt_tokens: u.usage.prompt_tokens,
        completion_tokens: u.usage.completion_tokens,
        cached_tokens: u.usage.prompt_cache_hit_tokens,
        cost_usd,
        extra: (!extra.is_empty()).then_some(Value::Object(extra)),
    }
}

/// The session's cost with its subagents', however deep.
fn spend_with_subagents(t: &Timeline) -> Spend {
    let mut s = t.totals.cost;
    for sub in &t.subagents {
        s.add(&spend_with_subagents(&sub.timeline));
    }
    s
}

fn final_metrics(t: &Timeline, steps: usize) -> FinalMetrics {
    let f = &t.totals;
    let spend = spend_with_subagents(t);
    let mut extra = json!({
        "turns": f.turns,
        "tool_calls": f.tool_calls,
        "blocked": f.blocked,
    });
    if f.reasoning_tokens > 0 {
        extra["reasoning_tokens"] = f.reasoning_tokens.into();
    }
    let usd = match spend.known() {
        Some((nanos, c)) if c == Currency::USD => Some(nanos as f64 / 1e9),
        Some((nanos, c)) => {
            extra["total_cost"] = json!({"amount": nanos as f64 / 1e9, "currency": c.code()});
            None
        }
        None => {
            if spend.priced > 0 || spend.unpriced > 0 {
                extra["total_cost"] = json!({
                    "unknown": "some requests had no price, or prices in different currencies",
                    "priced_requests": spend.priced,
                    "unpriced_requests": spend.unpriced,
                });
            }
            None
        }
    };
    FinalMetrics {
        total_prompt_tokens: f.prompt_tokens,
        total_completion_tokens: f.completion_tokens,
        total_cached_tokens: f.cache_hit_tokens,
        total_cost_usd: usd,
        total_steps: steps,
        extra,
    }
}

fn root_extra(t: &Timeline) -> Value {
    let h = &t.header;
    let runs: Vec<Value> = t
        .runs
        .iter()
        .map(|r| {
            json!({
                "started_at": r.started_at,
                "model": r.model,
                "provider": r.provider,
                "effort": r.effort,
                "outcome": r.outcome,
                "detail": r.detail,
                "ended_at": r.ended_at,
            })
        })
        .collect();
    let mut extra = json!({
        "provider": h.provider,
        "started_at": h.started_at,
        "runs": runs,
    });
    // The hx that wrote the file, which may not be the one exporting it (`agent.version`).
    if !h.hx_version.is_empty() {
        extra["recorded_by"] = format!("hx {}", h.hx_version).into();
    }
    if let Some(e) = &h.effort {
        extra["effort"] = e.clone().into();
    }
    if let Some(p) = &h.parent_id {
        extra["parent_session_id"] = p.clone().into();
    }
    if let Some(c) = &h.parent_call_id {
        extra["parent_call_id"] = c.clone().into();
    }
    if !t.warnings.is_empty() {
        extra["warnings"] = t.warnings.clone().into();
    }
    extra
}
