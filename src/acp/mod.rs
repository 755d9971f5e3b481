//! `hx acp`: hx as an Agent Client Protocol (v1) agent, for editors. A front end on top of
//! `crate::app`, beside `hx chat`: each ACP session is a session of hx in the client's
//! `cwd`, built and recorded as any run (so `hx agent -c` continues it), and each prompt is
//! one message of it, as in chat. What happens in a run reaches the client as `session/update`
//! notifications through an `Observer` ([`view`]); where chat would ask at the terminal, hx
//! asks the client ([`permission`]). A session's model and effort are config options
//! ([`options`]), switched as `/model` and `/effort` switch them in chat.
//!
//! The loop reads stdin on a thread of its own ([`rpc`]), so a `session/cancel` is read while
//! a prompt runs; prompts and session setups are tasks on the current thread, each session's
//! state behind its own slot. Nothing but protocol messages is written to stdout: the
//! command points hx's own stdout at stderr before anything starts (see `cli::acp`), and the
//! protocol's stream is a descriptor of its own.

pub mod auth;
pub mod files;
pub mod options;
pub mod permission;
pub mod prompt;
pub mod replay;
pub mod rpc;
mod slot;
pub mod view;

use self::slot::{Slot, SlotState};

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, CancelNotification, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, StopReason, AGENT_METHOD_NAMES,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use self::permission::Permissions;
use self::rpc::{error, params, Incoming, Message, Output, Pending};
use self::view::{log, AcpView, Updates};
use crate::app::session::{self as app_session, Pick};
use crate::app::signals::{self, Signals};
use crate::app::{build, exit, Conversation, Switched};
use crate::config::{Config, Env, Flags};
use crate::events::Events;
use crate::mcp::config::ServerFile;
use crate::text::Warning;
use crate::tools::Editor;

/// ACP's code for a request that needs credentials hx does not have (the missing key).
pub const AUTH_REQUIRED: i32 = -32000;

/// How long the end of hx acp waits for the prompts it cancelled to answer.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// How long `session/new` (and `session/load`) waits for the provider's list of models
/// before it answers with the models it has: the list is asked once per provider, so only
/// the first session of a slow server waits this long.
const MODELS_WAIT: Duration = Duration::from_secs(2);

/// When the list of models is given up on altogether (it goes on behind the sessions that
/// stopped waiting, and a later session gets it).
const MODELS_GIVE_UP: Duration = Duration::from_secs(60);

/// What `hx acp` starts from: the flags of its command line, which every session gets, the
/// environment as it was before the secrets were blanked, and where the key of the provider
/// it starts with comes from.
pub struct Setup {
    pub flags: Flags,
    pub env: Env,
    pub key: auth::Key,
}

/// The models a provider's server lists, once it answered (empty when it could not).
type Listing = watch::Receiver<Option<Vec<String>>>;

/// Serves one client on `input` / `output` until `input` ends or a signal arrives; every
/// session is closed (its `end` line written) and everything hx started ended.
pub async fn serve(
    setup: Setup,
    input: impl std::io::Read + Send + 'static,
    output: impl std::io::Write + Send + 'static,
) -> i32 {
    let (out, writer) = Output::start(output);
    let local = tokio::task::LocalSet::new();
    let code = local
        .run_until(async {
            let server = Rc::new(Server {
                setup,
                out,
                pending: Pending::default(),
                client: RefCell::new(None),
                sessions: RefCell::new(HashMap::new()),
                listings: RefCell::new(HashMap::new()),
                opening: RefCell::new(Vec::new()),
            });
            server.run(input).await
        })
        .await;
    // Every sender is gone with the server: the writer drains what is queued and ends.
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    code
}

struct Server {
    setup: Setup,
    out: Output,
    pending: Pending,
    /// What the client said it can do, once it initialized.
    client: RefCell<Option<agent_client_protocol::v1::schema::ClientCapabilities>>,
    sessions: RefCell<HashMap<String, Rc<Slot>>>,
    /// The models of each provider (by name and server) asked for so far.
    listings: RefCell<HashMap<(String, String), Listing>>,
    /// The `session/new` and `session/load` requests being answered: the end of the input
    /// waits for them, so a request read before it always gets its answer.
    opening: RefCell<Vec<tokio::task::JoinHandle<()>>>,
}

impl Server {
    async fn run(self: &Rc<Self>, input: impl std::io::Read + Send + 'static) -> i32 {
        let (tx, mut rx) = mpsc::channel(16);
        rpc::read_lines(input, tx);
        let mut signals = match Signals::cancelling() {
            Ok(s) => s,
            Err(e) => {
                log(&format!("hx: cannot watch signals: {e}"));
                return exit::FAILED;
            }
        };
        let reaper = tokio::task::spawn_local(signals::reap_orphans());
        let mut code = exit::ANSWERED;
        loop {
            let item = tokio::select! {
                item = rx.recv() => item,
                sig = signals.recv() => {
                    code = exit::signalled(sig);
                    break;
                }
            };
            match item {
                Some(Incoming::Line(line)) => self.line(&line),
                Some(Incoming::TooLong) => self.out.error(
                    &Value::Null,
                    &error(
                        rpc::INVALID_REQUEST,
                        format!(
                            "Invalid request: a line over {} MiB was skipped",
                            rpc::MAX_LINE >> 20
                        ),
                    ),
                ),
                Some(Incoming::Eof) | None => {
                    // The client wrote its last request: each one read gets its answer (a
                    // prompt's is `cancelled`, below) before hx exits; a signal waits for none.
                    let opening = std::mem::take(&mut *self.opening.borrow_mut());
                    tokio::select! {
                        _ = futures_util::future::join_all(opening) => {}
                        sig = signals.recv() => code = exit::signalled(sig),
                    }
                    break;
                }
            }
        }
        self.shutdown().await;
        reaper.abort();
        code
    }

    fn line(self: &Rc<Self>, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match rpc::parse(line) {
            Err(refused) => self.out.error(&refused.0, &refused.1),
            Ok(Message::Response { id, result }) => self.pending.answer(&id, result),
            Ok(Message::Notification { method, params }) => self.notification(&method, params),
            Ok(Message::Request { id, method, params }) => self.request(id, &method, params),
        }
    }

    fn notification(&self, method: &str, p: Value) {
        // Notifications get no answer, even when they are wrong.
        if method == AGENT_METHOD_NAMES.session_cancel {
            if let Ok(c) = params::<CancelNotification>(method, p) {
                if let Some(slot) = self.sessions.borrow().get(&*c.session_id.0) {
                    let mut st = slot.state.borrow_mut();
                    // The prompts waiting are the session's too: each answered cancelled,
                    // never run, as ACP asks of every prompt a cancel finds.
                    for (id, _) in st.queued.drain(..) {
                        self.out
                            .result(&id, PromptResponse::new(StopReason::Cancelled));
                    }
                    if let Some(cancel) = st.cancel.take() {
                        let _ = cancel.send(());
                    }
                }
            }
        }
    }

    fn request(self: &Rc<Self>, id: Value, method: &str, p: Value) {
        let m = &AGENT_METHOD_NAMES;
        if method != m.initialize && self.client.borrow().is_none() {
            return self.out.error(
                &id,
                &error(
                    rpc::INVALID_REQUEST,
                    format!("Invalid request: {method} before initialize; send initialize first"),
                ),
            );
        }
        if method == m.initialize {
            return match params::<InitializeRequest>(method, p) {
                Ok(req) => self.initialize(&id, req),
                Err(e) => self.out.error(&id, &e),
            };
        }
        if method == m.authenticate {
            let answer = params::<AuthenticateRequest>(method, p)
                .and_then(|req| auth::authenticate(&self.setup.key, &req));
            return match answer {
                Ok(r) => self.out.result(&id, r),
                Err(e) => self.out.error(&id, &e),
            };
        }
        if method == m.session_set_config_option {
            let answer = params::<SetSessionConfigOptionRequest>(method, p)
                .and_then(|req| self.set_config_option(&req));
            return match answer {
                Ok(r) => self.out.result(&id, r),
                Err(e) => self.out.error(&id, &e),
            };
        }
        let server = self.clone();
        if method == m.session_new {
            let req = match params::<NewSessionRequest>(method, p) {
                Ok(r) => r,
                Err(e) => return self.out.error(&id, &e),
            };
            let task = tokio::task::spawn_local(async move {
                match server.new_session(req).await {
                    Ok(r) => server.out.result(&id, r),
                    Err(e) => server.out.error(&id, &e),
                }
            });
            self.opening(task);
        } else if method == m.session_load {
            let req = match params::<LoadSessionRequest>(method, p) {
                Ok(r) => r,
                Err(e) => return self.out.error(&id, &e),
            };
            let task = tokio::task::spawn_local(async move {
                match server.load_session(req).await {
                    Ok(r) => server.out.result(&id, r),
                    Err(e) => server.out.error(&id, &e),
                }
            });
            self.opening(task);
        } else if method == m.session_prompt {
            match params::<PromptRequest>(method, p) {
                Ok(req) => self.prompt(id, req),
                Err(e) => self.out.error(&id, &e),
            }
        } else {
            self.out.error(
                &id,
                &error(rpc::METHOD_NOT_FOUND, format!("Method not found: {method}")),
            );
        }
    }

    /// Keeps the task answering a `session/new` or `session/load` for the end of the input
    /// to wait for (those already answered are let go).
    fn opening(&self, task: tokio::task::JoinHandle<()>) {
        let mut opening = self.opening.borrow_mut();
        opening.retain(|t| !t.is_finished());
        opening.push(task);
    }

    fn initialize(&self, id: &Value, req: InitializeRequest) {
        *self.client.borrow_mut() = Some(req.client_capabilities);
        // hx speaks v1 only, and the protocol says an agent answers a version it does not
        // support with the latest it does: any other version gets v1 for the client to decide.
        let version = ProtocolVersion::V1;
        let caps = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
            // rmcp's streamable-HTTP client; SSE-only servers are not supported.
            .mcp_capabilities(McpCapabilities::new().http(true));
        let response = InitializeResponse::new(version)
            .agent_capabilities(caps)
            .auth_methods(vec![auth::method(&self.setup.key)])
            .agent_info(Implementation::new("hx", env!("CARGO_PKG_VERSION")).title("hx"));
        self.out.result(id, response);
    }

    /// The config of a session in `cwd`, with the client's MCP servers beside the configured
    /// ones; a missing key is an error that names its variable.
    fn config(
        &self,
        cwd: &Path,
        flags: &Flags,
        servers: Vec<McpServer>,
    ) -> Result<Config, rpc::RpcError> {
        if !cwd.is_absolute() {
            return Err(error(
                rpc::INVALID_PARAMS,
                format!(
                    "Invalid params: cwd must be an absolute path, not {}",
                    cwd.display()
                ),
            ));
        }
        if !cwd.is_dir() {
            return Err(error(
                rpc::INVALID_PARAMS,
                format!("Invalid params: cwd {} is not a folder", cwd.display()),
            ));
        }
        let loaded = crate::app::config::load(cwd, &self.setup.env, flags)
            .map_err(|f| error(rpc::INTERNAL_ERROR, f.message))?;
        for w in &loaded.warnings {
            log(&w.to_string());
        }
        let mut config = loaded.config;
        config
            .require_key()
            .map_err(|e| error(AUTH_REQUIRED, e.to_string()))?;
        config
            .require_price()
            .map_err(|e| error(rpc::INTERNAL_ERROR, e.to_string()))?;
        for (name, server) in client_servers(servers)? {
            config.mcp_servers.insert(name, server);
        }
        Ok(config)
    }

    async fn new_session(
        &self,
        req: NewSessionRequest,
    ) -> Result<NewSessionResponse, rpc::RpcError> {
        let config = self.config(&req.cwd, &self.setup.flags, req.mcp_servers)?;
        let listing = self.listing(&config);
        let id = crate::session::store::new_id();
        let slot = self
            .open(config, req.cwd, id, None, listing.clone())
            .await?;
        let id = slot.session_id();
        self.sessions.borrow_mut().insert(id.clone(), slot.clone());
        listed(listing).await;
        let options = slot.state.borrow_mut().options();
        Ok(NewSessionResponse::new(id).config_options(options))
    }

    /// `session/set_config_option`: the model or the effort of the session's next prompt, as
    /// `/model` and `/effort` choose them in chat; answered with every option as it now is.
    fn set_config_option(
        &self,
        req: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, rpc::RpcError> {
        let sid = req.session_id.0.to_string();
        let Some(slot) = self.sessions.borrow().get(&sid).cloned() else {
            return Err(unknown(&sid));
        };
        let mut st = slot.state.borrow_mut();
        st.refresh();
        match options::change(req, &st.config, &st.offered)? {
            options::Change::Model(name) => {
                // A retired DeepSeek name is the model that answers it now, thinking as it did.
                let mut next = st.config.clone();
                let notice = next.set_model(&name);
                // The session's cost limit holds on: a model without a price is refused.
                next.require_price()
                    .map_err(|e| error(rpc::INVALID_PARAMS, e.to_string()))?;
                st.config = next;
                if let Some(notice) = notice {
                    log(&notice.to_string());
                }
                st.switch(Switched::Model);
            }
            options::Change::Effort(Some(effort)) => {
                st.config.set_effort(effort);
                st.switch(Switched::Effort);
            }
            options::Change::Effort(None) => {}
        }
        Ok(SetSessionConfigOptionResponse::new(st.options()))
    }

    /// The models `config`'s provider lists, asked for once per provider and server for the
    /// whole process, in a task of its own: a session waits for it at most [`MODELS_WAIT`].
    fn listing(&self, config: &Config) -> Listing {
        let key = (config.provider.clone(), config.base_url.clone());
        if let Some(listing) = self.listings.borrow().get(&key) {
            return listing.clone();
        }
        let (tx, rx) = watch::channel(None);
        let (options, provider) = (config.client_options(), config.provider.clone());
        tokio::task::spawn_local(async move {
            let listed = match crate::model::OpenAiClient::new(options) {
                Ok(client) => tokio::time::timeout(MODELS_GIVE_UP, client.list_models())
                    .await
                    .unwrap_or_else(|_| {
                        Err(crate::model::ModelError::Transport(format!(
                            "no list within {} s",
                            MODELS_GIVE_UP.as_secs()
                        )))
                    })
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            let models = listed.unwrap_or_else(|e| {
                log(&Warning::new(format!(
                    "cannot list the models of provider {provider}: {e}; the sessions offer \
                     the configured model"
                ))
                .to_string());
                Vec::new()
            });
            let _ = tx.send(Some(models));
        });
        self.listings.borrow_mut().insert(key, rx.clone());
        rx
    }

    async fn load_session(
        &self,
        req: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, rpc::RpcError> {
        let wanted = req.session_id.0.to_string();
        let live = self.sessions.borrow().get(&wanted).cloned();
        if let Some(slot) = live {
            let agent = slot.agent().await?;
            let mut st = slot.state.borrow_mut();
            let Some(conversation) = &st.conversation else {
                return Err(busy(&wanted));
            };
            replay::replay(conversation.messages(), agent.tools(), &slot.view_updates());
            return Ok(LoadSessionResponse::new().config_options(st.options()));
        }
        let resumed = app_session::find(Pick::Id(&wanted), true, &req.cwd, &self.setup.env)
            .map_err(|f| error(rpc::INVALID_PARAMS, f.message))?;
        if resumed.id() != wanted {
            return Err(error(
                rpc::INVALID_PARAMS,
                format!(
                    "Invalid params: no session {wanted} (did you mean {}?)",
                    resumed.id()
                ),
            ));
        }
        let mut flags = self.setup.flags.clone();
        resumed.keep_provider(&mut flags);
        let config = self.config(&req.cwd, &flags, req.mcp_servers)?;
        let listing = self.listing(&config);
        let slot = self
            .open(
                config,
                req.cwd,
                wanted.clone(),
                Some(resumed),
                listing.clone(),
            )
            .await?;
        let agent = slot.agent().await?;
        {
            let mut st = slot.state.borrow_mut();
            if let Some(conversation) = &mut st.conversation {
                // What the tools remember (skills loaded, the todo list) follows the history.
                conversation.set_agent(agent.clone());
                replay::replay(conversation.messages(), agent.tools(), &slot.view_updates());
            }
        }
        self.sessions.borrow_mut().insert(wanted, slot.clone());
        listed(listing).await;
        let options = slot.state.borrow_mut().options();
        Ok(LoadSessionResponse::new().config_options(options))
    }

    /// Opens the session, new or `resume`d, and starts building its agent (on the blocking
    /// pool: the skills are read).
    async fn open(
        &self,
        config: Config,
        cwd: PathBuf,
        id: String,
        resume: Option<app_session::Resumed>,
        listing: Listing,
    ) -> Result<Rc<Slot>, rpc::RpcError> {
        let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
        let recorder = build::recorder(&config, &workspace, &self.setup.env, false);
        let updates = Updates {
            session_id: id.clone(),
            out: self.out.clone(),
        };
        let view = AcpView::new(updates, &workspace, config.context.window);
        let permissions = Permissions::new(&id, self.out.clone(), self.pending.clone());
        let fs = self
            .client
            .borrow()
            .as_ref()
            .map(|c| c.fs.clone())
            .unwrap_or_default();
        let editor = match fs.read_text_file || fs.write_text_file {
            true => Editor(Some(Arc::new(files::ClientFiles {
                session_id: id.clone(),
                out: self.out.clone(),
                pending: self.pending.clone(),
                caps: fs,
            }))),
            false => Editor::default(),
        };
        let building = {
            let (config, env) = (config.clone(), self.setup.env.clone());
            let (events, recorder, id) = (Events::new(view.clone()), recorder.clone(), id.clone());
            let approver: Arc<dyn crate::hooks::Approver> = permissions.clone();
            tokio::task::spawn_blocking(move || {
                let mut warnings = Vec::new();
                let built = build::build_agent_with(
                    &config,
                    &cwd,
                    &env,
                    events,
                    recorder,
                    &id,
                    build::Asks {
                        approver: Some(approver),
                        editor,
                    },
                    &mut warnings,
                );
                (built, warnings)
            })
        };
        let mut warnings = Vec::new();
        let mut conversation = Conversation::new(recorder.clone(), id.clone());
        let session = app_session::open(&recorder, id, resume, &config.profile(), &mut warnings)
            .map_err(|e| error(rpc::INTERNAL_ERROR, e))?;
        for w in &warnings {
            log(&w.to_string());
        }
        conversation.open(session);
        Ok(Rc::new(Slot {
            building: RefCell::new(Some(building)),
            agent: tokio::sync::OnceCell::new(),
            id: conversation.id().to_string(),
            view,
            permissions,
            state: RefCell::new(SlotState {
                conversation: Some(conversation),
                cancel: None,
                running: None,
                offered: Vec::new(),
                config,
                listing,
                pending: Vec::new(),
                queued: Default::default(),
            }),
        }))
    }

    fn prompt(self: &Rc<Self>, id: Value, req: PromptRequest) {
        let sid = req.session_id.0.to_string();
        let Some(slot) = self.sessions.borrow().get(&sid).cloned() else {
            return self.out.error(&id, &unknown(&sid));
        };
        let text = match prompt::task_text(&req.prompt) {
            Ok(t) => t,
            Err(e) => return self.out.error(&id, &e),
        };
        let (conversation, rx) = {
            let mut st = slot.state.borrow_mut();
            let Some(conversation) = st.conversation.take() else {
                // A prompt while one runs waits for its turn, appended after it, as a
                // message typed during a turn does in the chat (issue 34).
                if st.queued.len() < slot::MAX_QUEUED {
                    st.queued.push_back((id, text));
                    return;
                }
                drop(st);
                return self.out.error(&id, &busy(&sid));
            };
            let (tx, rx) = oneshot::channel();
            st.cancel = Some(tx);
            (conversation, rx)
        };
        let out = self.out.clone();
        let task_slot = slot.clone();
        let task = tokio::task::spawn_local(async move {
            let slot = task_slot;
            let mut conversation = conversation;
            let (mut id, mut text, mut rx) = (id, text, rx);
            loop {
                let answer = slot.run(&mut conversation, &text, rx).await;
                match answer {
                    Ok(stop) => out.result(
                        &id,
                        PromptResponse::new(stop).usage(slot.view.prompt_usage()),
                    ),
                    Err(e) => out.error(&id, &e),
                }
                let mut st = slot.state.borrow_mut();
                let Some((next_id, next_text)) = st.queued.pop_front() else {
                    st.conversation = Some(conversation);
                    st.cancel = None;
                    st.running = None;
                    break;
                };
                let (tx, next_rx) = oneshot::channel();
                st.cancel = Some(tx);
                (id, text, rx) = (next_id, next_text, next_rx);
            }
        });
        let mut st = slot.state.borrow_mut();
        // A prompt that ended at once has put its conversation back already.
        if st.conversation.is_none() {
            st.running = Some(task);
        }
    }

    /// The end of hx acp: the running prompts cancelled (their commands killed), then every
    /// session closed with its `end` line.
    async fn shutdown(&self) {
        self.pending.drop_all();
        let slots: Vec<Rc<Slot>> = self.sessions.borrow_mut().drain().map(|(_, s)| s).collect();
        let mut running = Vec::new();
        for slot in &slots {
            let mut st = slot.state.borrow_mut();
            for (id, _) in st.queued.drain(..) {
                self.out
                    .result(&id, PromptResponse::new(StopReason::Cancelled));
            }
            if let Some(cancel) = st.cancel.take() {
                let _ = cancel.send(());
            }
            running.extend(st.running.take());
        }
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, futures_util::future::join_all(running)).await;
        for slot in slots {
            slot.close();
        }
    }
}

/// Waits, at most [`MODELS_WAIT`], for the provider's list.
async fn listed(mut listing: Listing) {
    let _ = tokio::time::timeout(MODELS_WAIT, listing.wait_for(Option::is_some)).await;
}

fn busy(id: &str) -> rpc::RpcError {
    error(
        rpc::INVALID_REQUEST,
        format!(
            "Invalid request: a prompt is already running in session {id}; wait for its answer \
             or send session/cancel"
        ),
    )
}

fn unknown(id: &str) -> rpc::RpcError {
    error(
        rpc::INVALID_PARAMS,
        format!("Invalid params: no session {id} in this connection (session/new or session/load it first)"),
    )
}

/// The client's MCP servers as `[mcp_servers]` tables: started as configured ones are (the
/// tools' environment, the sandbox), without trust, since the client is the user.
fn client_servers(servers: Vec<McpServer>) -> Result<BTreeMap<String, ServerFile>, rpc::RpcError> {
    let mut tables = BTreeMap::new();
    for server in servers {
        let (name, table) = match server {
            McpServer::Stdio(s) => (
                s.name,
                ServerFile {
                    command: Some(s.command.display().to_string()),
                    args: s.args,
                    env: s.env.into_iter().map(|v| (v.name, v.value)).collect(),
                    ..ServerFile::default()
                },
            ),
            McpServer::Http(h) => (
                h.name,
                ServerFile {
                    url: Some(h.url),
                    http_headers: h.headers.into_iter().map(|v| (v.name, v.value)).collect(),
                    ..ServerFile::default()
                },
            ),
            _ => return Err(error(
                rpc::INVALID_PARAMS,
                "Invalid params: hx speaks to MCP servers over stdio and streamable HTTP, not SSE",
            )),
        };
        table.check(&name).map_err(|e| {
            error(
                rpc::INVALID_PARAMS,
                format!("Invalid params: MCP server {name}: {e}"),
            )
        })?;
        tables.insert(name, table);
    }
    Ok(tables)
}
