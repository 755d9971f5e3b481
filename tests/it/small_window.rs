//! A small window, as a local server gives a small model (llama.cpp's `-c 4096`, Ollama's
//! `num_ctx`, vLLM's `--max-model-len`): results the model has not seen yet are never cleared
//! by a compaction; they are cut to fit, head and tail, with a line saying so.
//!
//! Replies carry no token counts, so hx estimates every request whole (3 bytes a token).

use crate::support::calls::bash_printing;
use crate::support::{is_summary, messages, tool_answer, FakeServer, Hx, Recorded, Reply};

/// llama.cpp's answer to a request longer than `-c 4096`.
const LLAMA_OVERFLOW: &str = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":6154,"n_ctx":4096}}"#;
/// vLLM's answer to a request longer than `--max-model-len 4096`.
const VLLM_OVERFLOW: &str = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 6154 tokens in the messages, Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}"#;

/// The size of each command's output: the issue's, a little over the 4,096-token window by
/// itself at 3 bytes a token.
const BIG: usize = 15_001;
/// 80 % of a 4,096-token window.
const LIMIT_TOKENS: usize = 3_276;
const CLEARED: &str = "[output cleared to save context";
const CUT: &str = "\n... [hx cut this output to fit the context window: ";

/// Which server, and how it says the window is small (the other modules of small models'
/// troubles point hx at the same servers).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Server {
    /// llama-server with `-c 4096` and no `context_window` set: the 400 teaches hx the window.
    LlamaCpp,
    /// vLLM, the same through its own 400.
    Vllm,
    /// Ollama truncates silently instead of refusing: the window is set in hx's config.
    Ollama,
}

impl Server {
    pub(crate) const ALL: [Server; 3] = [Server::LlamaCpp, Server::Vllm, Server::Ollama];

    /// A reply in this server's streaming shape, without token counts.
    pub(crate) fn shape(self, r: Reply) -> Reply {
        let r = r.with_usage(0, 0, 0).unpaced();
        match self {
            Server::LlamaCpp => r.without_reasoning(),
            Server::Vllm => r.without_reasoning().openai_usage(),
            Server::Ollama => r.ollama(),
        }
    }

    /// The refusal of a request over the window, when this server sends one.
    fn overflow(self) -> Option<Reply> {
        match self {
            Server::LlamaCpp => Some(Reply::status(400, LLAMA_OVERFLOW)),
            Server::Vllm => Some(Reply::status(400, VLLM_OVERFLOW)),
            Server::Ollama => None,
        }
    }

    /// hx pointed at `server` as a user of this one would point it.
    pub(crate) fn hx(self, server: &FakeServer) -> Hx {
        self.hx_with(server, "")
    }

    /// [`Server::hx`] with `tables` (TOML tables) added to the user's config.
    pub(crate) fn hx_with(self, server: &FakeServer, tables: &str) -> Hx {
        let mut hx = Hx::new(server);
        let url = server.url();
        let provider = match self {
            Server::LlamaCpp | Server::Vllm => format!(
                "provider = \"local\"\n[providers.local]\nbase_url = \"{url}\"\n\
                 model = \"qwen2.5-coder-1.5b\"\n"
            ),
            Server::Ollama => format!(
                "provider = \"ollama\"\n[providers.ollama]\nbase_url = \"{url}\"\n\
                 model = \"qwen2.5-coder:1.5b\"\ncontext_window = 4096\n"
            ),
        };
        hx.write_user_config("config.toml", &format!("{provider}{tables}"));
        hx
    }
}

/// The requests of a run where the model runs two commands that each print [`BIG`] bytes,
/// then answers; with its stderr.
fn two_big_outputs(s: Server) -> (Vec<Recorded>, String) {
    let mut replies = vec![s.shape(Reply::tool_calls(vec![bash_printing("c1", BIG)]))];
    replies.extend(s.overflow());
    replies.push(s.shape(Reply::tool_calls(vec![bash_printing("c2", BIG)])));
    replies.push(s.shape(Reply::text("done")));
    let server = FakeServer::start(replies);
    let mut hx = s.hx(&server);
    hx.args(["agent", "look at the output"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "done\n", "{s:?}: {}", run.stderr);
    (server.completions(), run.stderr)
}

/// Asserts that `answer` is a cut of [`BIG`] `a`s: its head and tail, and the line between
/// them saying how much is left out and how to read it.
fn is_cut(answer: &str, s: Server) {
    assert!(!answer.starts_with(CLEARED), "{s:?}: {answer}");
    let (head, rest) = answer
        .split_once(CUT)
        .unwrap_or_else(|| panic!("{s:?}: {answer}"));
    assert!(
        rest.contains(&format!("of its {} characters are left out here", "15,001"))
            && rest.contains("read_file with offset and limit"),
        "{s:?}: {rest}"
    );
    let tail = rest.rsplit_once("] ...\n").map(|(_, t)| t).unwrap_or("");
    assert!(head.len() > 500 && head.bytes().all(|b| b == b'a'), "{s:?}");
    assert!(tail.len() > 500 && tail.bytes().all(|b| b == b'a'), "{s:?}");
}

#[test]
fn the_newest_output_is_cut_to_fit_never_cleared_before_the_model_saw_it() {
    for s in Server::ALL {
        let (reqs, stderr) = two_big_outputs(s);
        assert!(!reqs.iter().any(|r| is_summary(&r.body)), "{s:?}: {stderr}");
        // With an overflow, the refused request sent the output whole; the request after it
        // is the first one the model answers with the output in it.
        let first = match s.overflow() {
            Some(_) => {
                assert_eq!(reqs.len(), 4, "{s:?}: {stderr}");
                assert_eq!(tool_answer(&reqs[1].body, "c1"), "a".repeat(BIG));
                assert!(
                    stderr.contains("the server's context window is 4,096 tokens, not 128,000"),
                    "{s:?}: {stderr}"
                );
                2
            }
            None => {
                assert_eq!(reqs.len(), 3, "{s:?}: {stderr}");
                1
            }
        };
        let next = &reqs[first];
        is_cut(tool_answer(&next.body, "c1"), s);
        assert!(next.raw_body.len() / 3 < LIMIT_TOKENS, "{s:?}");
        // Nothing the model had seen changed: the first request, the call, its result cut.
        let m = messages(&next.body);
        assert_eq!(m.len(), 4, "{s:?}");
        assert_eq!(&m[..2], &messages(&reqs[0].body)[..], "{s:?}");
        assert!(
            stderr.contains("tokens (cut the newest tool output to fit)"),
            "{s:?}: {stderr}"
        );
        // The next output is cut in turn; the one the model has read may now be cleared.
        let after = &reqs[first + 1];
        is_cut(tool_answer(&after.body, "c2"), s);
        assert!(after.raw_body.len() / 3 < LIMIT_TOKENS, "{s:?}");
        let c1 = tool_answer(&after.body, "c1");
        assert!(c1.starts_with(CLEARED) || c1.contains(CUT), "{s:?}: {c1}");
    }
}
