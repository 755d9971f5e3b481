//! Folds streamed chunks into one assistant turn.
//!
//! Tool calls arrive in fragments: the id and name only in the first one, `index` telling
//! parallel calls apart, arguments split anywhere. Some servers (Ollama) send a whole call in
//! one chunk, some omit `index`; both are handled here so the client loop stays simple.

use serde_json::Value;

use super::types::{AssistantTurn, Chunk, ToolCall, ToolCallDelta};
use super::EventSink;

/// Tool calls one response may make. Each call's result may take the whole output cap, so the
/// number of calls is what multiplies a small response into a large conversation; models make
/// a few dozen at most.
pub const MAX_TOOL_CALLS: usize = 256;

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u32>,
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates one streamed response.
#[derive(Debug, Default)]
pub struct Accumulator {
    content: String,
    reasoning: String,
    saw_reasoning: bool,
    /// The server used DeepSeek's `reasoning_content` key (so it expects it back).
    reasoning_field: bool,
    calls: Vec<PartialCall>,
    pub(crate) finish_reason: Option<String>,
    usage: Option<super::Usage>,
    /// The response tried to start more than [`MAX_TOOL_CALLS`] calls.
    pub(crate) too_many_calls: bool,
}

impl Accumulator {
    pub fn new() -> Self {
        Accumulator::default()
    }

    /// Applies one chunk, reporting visible deltas to the sink.
    pub(crate) fn apply(&mut self, chunk: Chunk, sink: &mut dyn EventSink) {
        if let Some(u) = &chunk.usage {
            self.usage = Some(u.to_usage());
        }
        for choice in chunk.choices.into_iter().flatten() {
            // A whole `message` is a snapshot some servers add to (or send instead of) the
            // deltas; when deltas came it would only repeat them.
            let delta = match (choice.delta, choice.message) {
                (Some(d), _) => Some(d),
                (None, Some(m)) if self.content.is_empty() && self.calls.is_empty() => Some(m),
                (None, _) => None,
            };
            if let Some(delta) = delta {
                if delta.reasoning_content.is_some() {
                    self.reasoning_field = true;
                }
                let reasoning = delta
                    .reasoning_content
                    .filter(|r| !r.is_empty())
                    .or(delta.reasoning.filter(|r| !r.is_empty()));
                if let Some(r) = reasoning {
                    self.saw_reasoning = true;
                    sink.reasoning(&r);
                    self.reasoning.push_str(&r);
                }
                if let Some(c) = delta.content.filter(|c| !c.is_empty()) {
                    sink.text(&c);
                    self.content.push_str(&c);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.apply_call(call, sink);
                }
            }
            if let Some(f) = choice.finish_reason {
                self.finish_reason = Some(f);
            }
        }
    }

    fn apply_call(&mut self, d: ToolCallDelta, sink: &mut dyn EventSink) {
        let id = d.id.filter(|s| !s.is_empty());
        let names_a_tool = d
            .function
            .as_ref()
            .is_some_and(|f| f.name.as_deref().is_some_and(|n| !n.is_empty()));
        let existing = match (d.index, &id) {
            // Same index, other id: a server that numbers every parallel call 0 (Ollama).
            (Some(i), Some(id)) => self
                .calls
                .iter()
                .position(|c| c.index == Some(i) && (c.id.is_empty() || &c.id == id)),
            // The newest call with this index gets the id-less fragments that follow it.
            (Some(i), None) => self.calls.iter().rposition(|c| c.index == Some(i)),
            // Without an index, a fragment with a new id starts a call; one without continues
            // the last call, unless it names a tool while the last call already has a name.
            (None, Some(id)) => self.calls.iter().position(|c| &c.id == id),
            (None, None) => match self.calls.last() {
                Some(last) if names_a_tool && !last.name.is_empty() => None,
                Some(_) => Some(self.calls.len() - 1),
                None => None,
            },
        };
        let pos = match existing {
            Some(p) => p,
            None if self.calls.len() >= MAX_TOOL_CALLS => {
                self.too_many_calls = true;
                return;
            }
            None => {
                self.calls.push(PartialCall {
                    index: d.index,
                    ..PartialCall::default()
                });
                sink.tool_call_started();
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(f) = d.function {
            if let Some(n) = f.name.filter(|n| !n.is_empty()) {
                call.name = n;
            }
            match f.arguments {
                Some(Value::String(s)) => call.arguments.push_str(&s),
                Some(Value::Null) | None => {}
                // A whole arguments object (Ollama): keep it as the JSON text it stands for.
                Some(v) => call.arguments.push_str(&v.to_string()),
            }
        }
    }

    pub fn finish(self) -> AssistantTurn {
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                // A call without an id cannot be answered by id; give it a stable one.
                id: if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        AssistantTurn {
            content: self.content,
            reasoning: self.saw_reasoning.then_some(self.reasoning),
            reasoning_field: self.reasoning_field,
            tool_calls,
            usage: self.usage,
            cost: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NullSink;

    fn apply_all(chunks: &[&str]) -> AssistantTurn {
        let mut acc = Accumulator::new();
        for c in chunks {
            let chunk: Chunk = serde_json::from_str(c).expect("chunk");
            acc.apply(chunk, &mut NullSink);
        }
        acc.finish()
    }

    #[test]
    fn fragments_by_index_and_parallel_calls() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":null,"reasoning_content":""}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"glob","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"bash","arguments":"{\"comm"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"and\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"*\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":""},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_cache_hit_tokens":8}}"#,
        ]);
        assert_eq!(t.reasoning.as_deref(), Some("think"));
        assert_eq!(t.content, "");
        assert_eq!(t.tool_calls.len(), 2);
        assert_eq!(t.tool_calls[0].id, "a");
        assert_eq!(t.tool_calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(t.tool_calls[1].name, "bash");
        assert_eq!(t.tool_calls[1].arguments, r#"{"command":"ls"}"#);
        assert_eq!(t.usage.map(|u| u.prompt_cache_hit_tokens), Some(8));
    }

    #[test]
    fn whole_call_in_one_chunk_with_object_arguments() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"glob","arguments":{"pattern":"*"}}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(t.tool_calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(t.reasoning, None);
    }

    #[test]
    fn parallel_calls_that_all_say_index_0_stay_apart() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_a","index":0,"function":{"name":"read_file","arguments":{"path":"a"}}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_b","index":0,"function":{"name":"glob","arguments":{"pattern":"*"}}}]}}]}"#,
        ]);
        assert_eq!(t.tool_calls.len(), 2);
        assert_eq!(t.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(t.tool_calls[1].name, "glob");
        assert_eq!(t.tool_calls[1].arguments, r#"{"pattern":"*"}"#);
    }

    #[test]
    fn calls_without_index_or_id_split_on_names() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"glob","arguments":"{\"pattern\""}},{"function":{"arguments":":\"*\"}"}},{"function":{"name":"bash","arguments":"{}"}}]}}]}"#,
        ]);
        assert_eq!(t.tool_calls.len(), 2);
        assert_eq!(t.tool_calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(t.tool_calls[1].name, "bash");
    }

    #[test]
    fn both_reasoning_keys_null_choices_and_message_snapshots() {
        let t = apply_all(&[
            r#"{"choices":null}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"ab","reasoning":"ab"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"},"message":{"content":"Hello"},"finish_reason":"stop"}]}"#,
        ]);
        assert_eq!(t.reasoning.as_deref(), Some("ab"));
        assert!(t.reasoning_field);
        assert_eq!(t.content, "Hello");
        let whole = apply_all(&[
            r#"{"choices":[{"message":{"content":"Whole","reasoning":null,"reasoning_content":null},"finish_reason":"stop"}]}"#,
        ]);
        assert_eq!(whole.content, "Whole");
    }

    #[test]
    fn calls_past_the_limit_are_flagged_not_kept() {
        let call = |i: usize| {
            format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{i},"id":"c{i}","function":{{"name":"glob","arguments":"{{}}"}}}}]}}}}]}}"#
            )
        };
        let mut acc = Accumulator::new();
        for i in 0..=MAX_TOOL_CALLS {
            acc.apply(
                serde_json::from_str(&call(i)).expect("chunk"),
                &mut NullSink,
            );
            assert_eq!(acc.too_many_calls, i == MAX_TOOL_CALLS, "call {i}");
        }
        assert_eq!(acc.finish().tool_calls.len(), MAX_TOOL_CALLS);
    }

    #[test]
    fn openai_usage_chunk_without_choices() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":3}}}"#,
        ]);
        assert_eq!(t.content, "hi");
        let u = t.usage.expect("usage");
        assert_eq!((u.prompt_tokens, u.prompt_cache_hit_tokens), (7, 3));
    }

    #[test]
    fn the_tokens_spent_thinking_are_read_when_the_server_counts_them() {
        let usage = |json: &str| {
            apply_all(&[&format!(
                r#"{{"choices":[{{"delta":{{"content":"hi"}},"finish_reason":"stop"}}],"usage":{json}}}"#
            )])
            .usage
            .expect("usage")
        };
        let u = usage(
            r#"{"prompt_tokens":7,"completion_tokens":20,"completion_tokens_details":{"reasoning_tokens":12}}"#,
        );
        assert_eq!((u.completion_tokens, u.reasoning_tokens), (20, 12));
        for silent in [
            r#"{"prompt_tokens":7,"completion_tokens":20}"#,
            r#"{"prompt_tokens":7,"completion_tokens":20,"completion_tokens_details":null}"#,
            r#"{"prompt_tokens":7,"completion_tokens":20,"completion_tokens_details":{"audio_tokens":1}}"#,
        ] {
            assert_eq!(usage(silent).reasoning_tokens, 0, "{silent}");
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use crate::model::sse::{SseEvent, SseParser};
    use crate::model::NullSink;
    use proptest::prelude::*;
    use serde_json::json;

    /// The client's path for a stream: SSE events from bytes fed in pieces of the given sizes
    /// (cycled), each data event as a chunk into the accumulator.
    fn turn_from_bytes(bytes: &[u8], sizes: &[usize]) -> AssistantTurn {
        let mut parser = SseParser::with_limit(1 << 20);
        let mut events = Vec::new();
        let mut rest = bytes;
        for size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, after) = rest.split_at((*size).clamp(1, rest.len()));
            if parser.feed(piece, &mut events).is_err() {
                break;
            }
            rest = after;
        }
        parser.finish(&mut events);
        let mut acc = Accumulator::new();
        for e in events {
            if let SseEvent::Data(d) = e {
                if let Ok(chunk) = serde_json::from_str::<Chunk>(&d) {
                    acc.apply(chunk, &mut NullSink);
                }
            }
        }
        acc.finish()
    }

    /// `s` cut at the given character positions (taken modulo its length), in order.
    fn split(s: &str, cuts: &[usize]) -> Vec<String> {
        let chars: Vec<char> = s.chars().collect();
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
        at.push(chars.len());
        at.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for to in at {
            pieces.push(chars[from..to].iter().collect());
            from = to;
        }
        pieces
    }

    /// Tool calls (name, arguments), each one's argument cuts, and how their fragments are
    /// interleaved: `order[k]` picks which unfinished call sends its next fragment.
    type Calls = (Vec<(String, String)>, Vec<Vec<usize>>, Vec<usize>);

    fn calls() -> impl Strategy<Value = Calls> {
        (
            proptest::collection::vec(("[a-z_]{1,10}", "\\PC{0,40}"), 1..4),
            proptest::collection::vec(proptest::collection::vec(0..64usize, 0..6), 4),
            proptest::collection::vec(0..4usize, 0..40),
        )
    }

    /// DeepSeek-style chunks for the calls, fragments interleaved as `order` says (each call's
    /// own fragments stay in order), and the turn they must add up to.
    fn chunks_and_turn((calls, cuts, order): &Calls) -> (Vec<String>, AssistantTurn) {
        let mut queues: Vec<Vec<String>> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                let first = json!({"choices": [{"delta": {"tool_calls": [{"index": i,
                    "id": format!("id{i}"), "type": "function",
                    "function": {"name": name, "arguments": ""}}]}}]});
                let mut q = vec![first.to_string()];
                for piece in split(args, &cuts[i]) {
                    let c = json!({"choices": [{"delta": {"tool_calls": [{"index": i,
                        "function": {"arguments": piece}}]}}]});
                    q.push(c.to_string());
                }
                q.reverse();
                q
            })
            .collect();
        let mut chunks = Vec::new();
        let mut first_seen = Vec::new();
        let mut picks = order.iter().copied().chain(std::iter::repeat(0));
        while queues.iter().any(|q| !q.is_empty()) {
            let open: Vec<usize> = (0..queues.len())
                .filter(|&i| !queues[i].is_empty())
                .collect();
            let i = open[picks.next().unwrap_or(0) % open.len()];
            if !first_seen.contains(&i) {
                first_seen.push(i);
            }
            chunks.extend(queues[i].pop());
        }
        chunks.push(r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#.into());
        let tool_calls = first_seen
            .iter()
            .map(|&i| ToolCall {
                id: format!("id{i}"),
                name: calls[i].0.clone(),
                arguments: calls[i].1.clone(),
            })
            .collect();
        let turn = AssistantTurn {
            tool_calls,
            ..AssistantTurn::default()
        };
        (chunks, turn)
    }

    fn sse(chunks: &[String]) -> Vec<u8> {
        let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        text.push_str("data: [DONE]\n\n");
        text.into_bytes()
    }

    /// Any JSON leaf: what a field of the wrong type holds.
    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::from),
        ]
    }

    /// Mostly `right`, sometimes null, rarely (1 in 37) a value of any type: often enough to
    /// exercise refusals, rarely enough that most chunks still parse and reach the accumulator.
    fn field(right: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
        prop_oneof![30 => right, 6 => Just(Value::Null), 1 => leaf()]
    }

    fn text() -> impl Strategy<Value = Value> {
        prop_oneof!["\\PC{0,6}", Just(String::new())].prop_map(Value::from)
    }

    /// A chunk of the API's shape whose fields take odd values (colliding indexes and ids,
    /// empty names, whole-object arguments, huge numbers, nulls) and now and then a wrong
    /// type: what a broken or hostile server might send.
    fn wild_chunk() -> impl Strategy<Value = Value> {
        let call = (
            field(prop_oneof![0..3u64, Just(u64::from(u32::MAX))].prop_map(Value::from)),
            field(prop_oneof![Just("a"), Just("b"), Just("")].prop_map(Value::from)),
            field(prop_oneof![Just("glob"), Just("bash"), Just("")].prop_map(Value::from)),
            field(prop_oneof![text(), Just(json!({"pattern": "*"})), Just(json!([1]))]),
        )
            .prop_map(|(index, id, name, arguments)| {
                json!({"index": index, "id": id, "function": {"name": name, "arguments": arguments}})
            });
        let delta = (
            field(text()),
            field(text()),
            field(text()),
            field(proptest::collection::vec(call, 0..3).prop_map(Value::from)),
        )
            .prop_map(|(content, reasoning_content, reasoning, tool_calls)| {
                json!({"content": content, "reasoning_content": reasoning_content,
                       "reasoning": reasoning, "tool_calls": tool_calls})
            })
            .boxed();
        let choice = (field(delta.clone()), field(delta), field(text())).prop_map(
            |(delta, message, finish_reason)| {
                json!({"delta": delta, "message": message, "finish_reason": finish_reason})
            },
        );
        let usage = (
            field(any::<u64>().prop_map(Value::from)),
            field(any::<u64>().prop_map(Value::from)),
        )
            .prop_map(|(p, c)| {
                json!({"prompt_tokens": p, "completion_tokens": c,
                "prompt_tokens_details": {"cached_tokens": p}})
            });
        (
            field(proptest::collection::vec(choice, 0..3).prop_map(Value::from)),
            field(usage),
        )
            .prop_map(|(choices, usage)| json!({"choices": choices, "usage": usage}))
    }

    proptest! {
        // A few dozen chunks per case: 256 cases take well under a second.
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn split_arguments_add_up_to_the_same_turn_however_chunked(
            calls in calls(),
            sizes in proptest::collection::vec(1..64usize, 1..8),
        ) {
            let (chunks, expected) = chunks_and_turn(&calls);
            let mut acc = Accumulator::new();
            for c in &chunks {
                acc.apply(serde_json::from_str(c).expect("chunk"), &mut NullSink);
            }
            prop_assert_eq!(&acc.finish(), &expected);
            prop_assert_eq!(&turn_from_bytes(&sse(&chunks), &sizes), &expected);
        }

        #[test]
        fn random_bytes_never_panic_the_parser_or_the_accumulator(
            bytes in proptest::collection::vec(any::<u8>(), 0..400),
            sizes in proptest::collection::vec(1..64usize, 1..8),
        ) {
            let mut framed = b"data: ".to_vec();
            framed.extend_from_slice(&bytes);
            turn_from_bytes(&bytes, &sizes);
            turn_from_bytes(&framed, &sizes);
        }

        #[test]
        fn chunks_of_any_shape_never_panic_the_accumulator(
            values in proptest::collection::vec(wild_chunk(), 1..8),
        ) {
            let mut acc = Accumulator::new();
            for v in values {
                if let Ok(chunk) = serde_json::from_value::<Chunk>(v) {
                    acc.apply(chunk, &mut NullSink);
                }
            }
            acc.finish();
        }
    }
}
