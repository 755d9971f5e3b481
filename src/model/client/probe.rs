//! Asking a server for the windows of its models (see [`crate::model::window`] for the shapes
//! and which field is taken): once at the start of a run for its model, and for every listed
//! model by `hx models`. Every question is bounded by a deadline and a size; an endpoint the
//! server does not have (a 404, an answer that is not JSON) is passed over, and the next one
//! asked.

use serde_json::Value;
use tokio::time::Instant;

use super::{read_capped, AttemptError, OpenAiClient, MAX_MODELS};
use crate::model::window::{self, Described, Stated};
use crate::model::ModelError;

/// Bytes of one answer read: `/props` carries the chat templates, `/api/show` the license.
pub const MAX_PROBE_BYTES: usize = 1024 * 1024;
/// Models `hx models` asks Ollama's `/api/show` about, one request each.
pub const MAX_SHOWN: usize = 100;

/// What the server made of one question.
enum Answer {
    Json(Value),
    /// It answered, but not with JSON of success: it does not serve this endpoint.
    Other,
}

impl OpenAiClient {
    /// One question: `GET url`, or `POST url` with `body`; the key goes with it, as with every
    /// request to this server. An error only when no answer came by `until`.
    async fn ask(
        &self,
        url: &str,
        body: Option<&Value>,
        until: Instant,
    ) -> Result<Answer, ModelError> {
        let mut rb = match body {
            Some(b) => self
                .http
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(b.to_string()),
            None => self.http.get(url),
        };
        if let Some(key) = &self.opts.api_key {
            rb = rb.bearer_auth(key);
        }
        let late = || ModelError::Transport(format!("no answer from {url} in time"));
        let resp = tokio::time::timeout_at(until, rb.send())
            .await
            .map_err(|_| late())?
            .map_err(|e| match self.send_error(&e, url) {
                AttemptError::Fatal(e) | AttemptError::Retry { error: e, .. } => e,
            })?;
        if !resp.status().is_success() {
            return Ok(Answer::Other);
        }
        let text = tokio::time::timeout_at(until, read_capped(resp, MAX_PROBE_BYTES))
            .await
            .map_err(|_| late())?;
        // A body cut at the cap is no JSON either.
        Ok(serde_json::from_str(&text).map_or(Answer::Other, Answer::Json))
    }

    /// The window the server states for `model`, asking no more endpoints than it must:
    /// `/models` (llama.cpp's `meta.n_ctx`, vLLM's `max_model_len`), then llama.cpp's
    /// `/props`, then Ollama's `/api/show` and `/api/ps`. `Ok(None)`: the server answered and
    /// states none; an error: it gave no answer (no connection, or nothing by `until`).
    pub async fn server_window(
        &self,
        model: &str,
        until: Instant,
    ) -> Result<Option<Stated>, ModelError> {
        let base = self.opts.base_url.trim_end_matches('/').to_string();
        let root = window::root(&base).to_string();
        let url = format!("{base}/models");
        let mut listed = 0;
        if let Answer::Json(v) = self.ask(&url, None, until).await? {
            let models = window::from_models(&v, &path(&url), MAX_MODELS).unwrap_or_default();
            listed = models.len();
            // A server that lists one model answers every name with it (llama.cpp's, started
            // with one model, does not look at the name).
            let found = models
                .iter()
                .find(|m| m.answers(model))
                .or(models.first().filter(|_| listed == 1));
            if let Some(stated) = found.and_then(|m| m.window.clone()) {
                return Ok(Some(stated));
            }
        }
        let url = format!("{root}/props");
        if let Answer::Json(v) = self.ask(&url, None, until).await? {
            if let (Some(n_ctx), alias) = window::from_props(&v) {
                if listed <= 1 || alias.as_deref() == Some(model) {
                    return Ok(Some(Stated {
                        tokens: n_ctx,
                        from: format!("{} default_generation_settings.n_ctx", path(&url)),
                    }));
                }
            }
        }
        let url = format!("{root}/api/show");
        let body = serde_json::json!({ "model": model });
        let Answer::Json(v) = self.ask(&url, Some(&body), until).await? else {
            return Ok(None);
        };
        if let Some(stated) = window::from_ollama_show(&v).window(&path(&url)) {
            return Ok(Some(stated));
        }
        let url = format!("{root}/api/ps");
        Ok(match self.ask(&url, None, until).await? {
            Answer::Json(v) => window::from_ollama_ps(&v, model).map(|tokens| Stated {
                tokens,
                from: format!("{} context_length", path(&url)),
            }),
            Answer::Other => None,
        })
    }

    /// Every model the server lists, with what it states of each (`hx models`). The list is
    /// the one question that must be answered (its failure is the error, as for
    /// [`OpenAiClient::list_models`]); when `more` is some time, the models whose window the
    /// list does not state and that `ask` wants asked about are asked about at llama.cpp's
    /// `/props` and Ollama's `/api/show` (at most [`MAX_SHOWN`]) and `/api/ps`, for that
    /// long: what came by then is kept.
    pub async fn describe_models(
        &self,
        more: Option<std::time::Duration>,
        ask: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<Described>, ModelError> {
        let until = Instant::now() + self.opts.request_timeout;
        let (v, url) = self.models_json(until).await?;
        let mut models = window::from_models(&v, &path(&url), MAX_MODELS).ok_or_else(|| {
            ModelError::Transport(format!("{url} answered without a \"data\" list"))
        })?;
        if let Some(time) = more {
            self.describe_more(&mut models, ask, Instant::now() + time)
                .await;
        }
        Ok(models)
    }

    async fn describe_more(
        &self,
        models: &mut [Described],
        ask: &dyn Fn(&str) -> bool,
        until: Instant,
    ) {
        let lacking = |models: &[Described]| -> Vec<usize> {
            (0..models.len())
                .filter(|&i| models[i].window.is_none() && ask(&models[i].id))
                .collect()
        };
        if lacking(models).is_empty() {
            return;
        }
        let root = window::root(&self.opts.base_url).to_string();
        let url = format!("{root}/props");
        if let Ok(Answer::Json(v)) = self.ask(&url, None, until).await {
            if let (Some(n_ctx), alias) = window::from_props(&v) {
                let one = models.len() == 1;
                if let Some(m) = models
                    .iter_mut()
                    .find(|m| one || alias.as_deref().is_some_and(|a| m.answers(a)))
                {
                    m.window.get_or_insert(Stated {
                        tokens: n_ctx,
                        from: format!("{} default_generation_settings.n_ctx", path(&url)),
                    });
                }
            }
        }
        let url = format!("{root}/api/show");
        let mut ollama = false;
        for i in lacking(models).into_iter().take(MAX_SHOWN) {
            let body = serde_json::json!({ "model": models[i].id });
            match self.ask(&url, Some(&body), until).await {
                Ok(Answer::Json(v)) => {
                    ollama = true;
                    let shown = window::from_ollama_show(&v);
                    let m = &mut models[i];
                    m.window = shown.window(&path(&url));
                    for fact in shown.facts {
                        if !m.facts.iter().any(|(n, _)| *n == fact.0) {
                            m.facts.push(fact);
                        }
                    }
                }
                // Not Ollama's: no other model will be either. Out of time: the same.
                Ok(Answer::Other) if !ollama => return,
                Ok(Answer::Other) => {}
                Err(_) => return,
            }
        }
        let still = lacking(models);
        if !ollama || still.is_empty() {
            return;
        }
        let url = format!("{root}/api/ps");
        if let Ok(Answer::Json(v)) = self.ask(&url, None, until).await {
            for i in still {
                let m = &mut models[i];
                m.window = window::from_ollama_ps(&v, &m.id).map(|tokens| Stated {
                    tokens,
                    from: format!("{} context_length", path(&url)),
                });
            }
        }
    }
}

/// The path of `url`, as the source of a window is named (`/v1/models`).
fn path(url: &str) -> String {
    reqwest::Url::parse(url).map_or_else(|_| url.to_string(), |u| u.path().to_string())
}
