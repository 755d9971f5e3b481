use super::*;
use serde_json::json;

/// llama.cpp's `/v1/models` (tools/server/server-context.cpp, `get_res_models`): an Ollama-like
/// `models` list beside OpenAI's `data`, whose `meta` has the slot's `n_ctx`.
fn llama_cpp_models() -> Value {
    json!({
        "models": [{"name": "qwen3-8b", "model": "qwen3-8b", "size": "", "details": {"format": "gguf"}}],
        "object": "list",
        "data": [{
            "id": "qwen3-8b", "aliases": ["qwen"], "tags": [], "object": "model",
            "created": 1_700_000_000, "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 151_936, "n_ctx": 4096, "n_ctx_train": 40960,
                     "n_embd": 4096, "n_params": 8_190_735_360u64, "size": 5_027_783_488u64,
                     "ftype": "Q4_K - Medium"}
        }]
    })
}

#[test]
fn llama_cpp_states_the_slot_context_not_the_trained_length() {
    let models = from_models(&llama_cpp_models(), "/v1/models", 10).expect("a list");
    assert_eq!(models.len(), 1);
    let m = &models[0];
    assert!(m.answers("qwen3-8b") && m.answers("qwen") && !m.answers("other"));
    assert_eq!(
        m.window,
        Some(Stated {
            tokens: 4096,
            from: "/v1/models meta.n_ctx".into()
        })
    );
    let fact = |n: &str| {
        m.facts
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(fact("n_ctx_train"), Some("40960"));
    assert_eq!(fact("n_params"), Some("8190735360"));
    assert_eq!(fact("size"), Some("5027783488"));
}

#[test]
fn an_older_llama_cpp_states_it_in_props_and_a_router_states_nothing() {
    // Before `meta.n_ctx`: the trained length alone, which is not a window.
    let v = json!({"data": [{"id": "m.gguf", "meta": {"n_ctx_train": 40960}}]});
    let models = from_models(&v, "/v1/models", 10).expect("a list");
    assert_eq!(models[0].window, None);
    let props = json!({
        "default_generation_settings": {"params": {"temperature": 0.8}, "n_ctx": 8192},
        "total_slots": 1, "model_alias": "m.gguf", "model_path": "/models/m.gguf"
    });
    assert_eq!(from_props(&props), (Some(8192), Some("m.gguf".into())));
    let router =
        json!({"role": "router", "default_generation_settings": {"params": {}, "n_ctx": 0}});
    assert_eq!(from_props(&router).0, None);
}

#[test]
fn vllm_states_max_model_len() {
    let v = json!({"object": "list", "data": [{
        "id": "Qwen/Qwen3-8B", "object": "model", "created": 1, "owned_by": "vllm",
        "root": "Qwen/Qwen3-8B", "parent": null, "max_model_len": 32768, "permission": []
    }]});
    let m = &from_models(&v, "/v1/models", 10).expect("a list")[0];
    assert_eq!(m.window.as_ref().map(|s| s.tokens), Some(32768));
    assert_eq!(
        m.window.as_ref().map(|s| s.from.as_str()),
        Some("/v1/models max_model_len")
    );
}

#[test]
fn ollama_serves_num_ctx_capped_at_the_trained_length_and_never_the_trained_length_alone() {
    let shown = json!({
        "parameters": "num_ctx                        8192\nstop                           \"<|im_start|>\"",
        "details": {"family": "qwen3", "parameter_size": "8.2B", "quantization_level": "Q4_K_M"},
        "model_info": {"general.architecture": "qwen3", "general.parameter_count": 8_190_735_360u64,
                       "qwen3.context_length": 40960},
        "capabilities": ["completion", "tools"]
    });
    let s = from_ollama_show(&shown);
    assert_eq!((s.num_ctx, s.context_length), (Some(8192), Some(40960)));
    assert_eq!(
        s.window("/api/show"),
        Some(Stated {
            tokens: 8192,
            from: "/api/show num_ctx".into()
        })
    );
    assert!(s.facts.contains(&("parameter_size".into(), "8.2B".into())));
    // A num_ctx past the trained length is served as the trained length.
    let big = json!({"parameters": "num_ctx 100000", "model_info": {"llama.context_length": 8192}});
    assert_eq!(
        from_ollama_show(&big).window("/api/show").map(|s| s.tokens),
        Some(8192)
    );
    // No num_ctx: Ollama's own default is served, which /api/show does not state.
    let none = json!({"parameters": "stop \"x\"", "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}});
    assert_eq!(from_ollama_show(&none).window("/api/show"), None);
}

#[test]
fn ollama_ps_states_what_a_loaded_model_was_given() {
    let ps = json!({"models": [{"name": "qwen3:latest", "model": "qwen3:latest", "size": 1,
                                 "expires_at": "2026-01-01T00:00:00Z", "size_vram": 1, "context_length": 4096}]});
    assert_eq!(from_ollama_ps(&ps, "qwen3"), Some(4096));
    assert_eq!(from_ollama_ps(&ps, "qwen3:latest"), Some(4096));
    assert_eq!(from_ollama_ps(&ps, "qwen3:8b"), None);
    assert_eq!(from_ollama_ps(&json!({"models": []}), "qwen3"), None);
}

#[test]
fn numbers_out_of_bounds_or_of_another_type_state_nothing() {
    for v in [
        json!(0),
        json!(999),
        json!(-5),
        json!(1u64 << 40),
        json!("x"),
        json!(null),
        json!([4096]),
    ] {
        assert_eq!(tokens(&v), None, "{v}");
    }
    assert_eq!(tokens(&json!(4096.0)), Some(4096));
    assert_eq!(tokens(&json!(" 4096 ")), Some(4096));
    // Names and facts are cut, and kept to a number.
    let long = "m".repeat(1_000);
    let v = json!({"data": [{"id": long, "meta": {"ftype": "f".repeat(1_000)}}]});
    let m = &from_models(&v, "/models", 10).expect("a list")[0];
    assert!(m.id.chars().count() <= MAX_NAME_CHARS);
    assert!(m.facts[0].1.chars().count() <= MAX_FACT_CHARS);
    assert_eq!(from_models(&json!({"data": "no"}), "/models", 10), None);
}

#[test]
fn the_root_is_the_base_url_without_its_v1() {
    assert_eq!(root("http://localhost:11434/v1"), "http://localhost:11434");
    assert_eq!(root("http://h:8080/v1/"), "http://h:8080");
    assert_eq!(root("http://h:8080"), "http://h:8080");
    assert_eq!(root("https://h/api/v1"), "https://h/api");
}
