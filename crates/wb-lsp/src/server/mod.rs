//! The language server: a closed main loop over client messages and worker results.
//!
//! Document notifications are applied on the loop thread in arrival order; every request runs on a worker
//! against an immutable [`Snapshot`] taken when it arrived. Diagnostics are recomputed once per burst of
//! messages (everything already queued is applied first), tagged with a generation, and a result older than
//! the latest scheduled one is never published. A panic in a handler answers its request with an error.

pub mod convert;
mod handlers;
mod state;
pub mod transport;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use crossbeam_channel::{Receiver, Sender, select, unbounded};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::{self as lsp, notification::Notification as _, request::Request as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wb_manifest::ModelCatalog;
use wb_syntax::PositionEncoding;

pub use state::{Config, Document, Overlay, Snapshot};

/// Runs the server on stdin/stdout until the client sends `exit`.
pub fn run_stdio() -> anyhow::Result<()> {
    let (sender, receiver, threads) = transport::stdio().context("cannot start the stdio transport")?;
    let connection = Connection { sender, receiver };
    let result = run(connection);
    drop(threads.reader);
    let _ = threads.writer.join();
    result
}

/// Runs the server on a connection (stdio, or in memory for tests).
pub fn run(connection: Connection) -> anyhow::Result<()> {
    let (id, params) = loop {
        match connection.receiver.recv() {
            Ok(Message::Request(request)) if request.method == "initialize" => break (request.id, request.params),
            Ok(Message::Request(request)) => {
                let response = Response::new_err(
                    request.id,
                    ErrorCode::ServerNotInitialized as i32,
                    "server not initialized".into(),
                );
                connection.sender.send(response.into())?;
            }
            Ok(Message::Notification(notification)) if notification.method == "exit" => return Ok(()),
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    };
    let params: lsp::InitializeParams = match serde_json::from_value(params) {
        Ok(params) => params,
        Err(error) => {
            let response =
                Response::new_err(id, ErrorCode::InvalidParams as i32, format!("invalid initialize params: {error}"));
            connection.sender.send(response.into())?;
            return Ok(());
        }
    };
    let encoding = negotiate_encoding(&params);
    let pull_diagnostics = params.capabilities.text_document.as_ref().and_then(|t| t.diagnostic.as_ref()).is_some();
    let result = lsp::InitializeResult {
        capabilities: capabilities(encoding, pull_diagnostics),
        server_info: Some(lsp::ServerInfo { name: "wb-lsp".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
    };
    connection.sender.send(Response::new_ok(id, result).into())?;
    let mut server = Server::new(connection, params, encoding, pull_diagnostics);
    server.main_loop()
}

fn negotiate_encoding(params: &lsp::InitializeParams) -> PositionEncoding {
    let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(list) if list.contains(&lsp::PositionEncodingKind::UTF8) => PositionEncoding::Utf8,
        _ => PositionEncoding::Utf16,
    }
}

pub const COMMAND_MIGRATE: &str = "workbench.migrate";
pub const COMMAND_CHECK_WORKSPACE: &str = "workbench.checkWorkspace";

fn capabilities(encoding: PositionEncoding, pull_diagnostics: bool) -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(match encoding {
            PositionEncoding::Utf8 => lsp::PositionEncodingKind::UTF8,
            _ => lsp::PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(lsp::TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
            save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
            ..lsp::TextDocumentSyncOptions::default()
        })),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![":".into(), " ".into(), "/".into(), "{".into(), "-".into()]),
            ..lsp::CompletionOptions::default()
        }),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        rename_provider: Some(lsp::OneOf::Right(lsp::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
        })),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        code_lens_provider: Some(lsp::CodeLensOptions { resolve_provider: Some(false) }),
        folding_range_provider: Some(lsp::FoldingRangeProviderCapability::Simple(true)),
        document_link_provider: Some(lsp::DocumentLinkOptions {
            resolve_provider: Some(false),
            work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
        }),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Options(lsp::CodeActionOptions {
            code_action_kinds: Some(vec![lsp::CodeActionKind::QUICKFIX, lsp::CodeActionKind::new("source.migrate")]),
            ..lsp::CodeActionOptions::default()
        })),
        execute_command_provider: Some(lsp::ExecuteCommandOptions {
            commands: vec![
                COMMAND_MIGRATE.into(),
                COMMAND_CHECK_WORKSPACE.into(),
                handlers::execute::DRY_RUN.into(),
                handlers::execute::SMOKE.into(),
                handlers::execute::RUN.into(),
                handlers::execute::OUTCOME.into(),
                handlers::execute::APPLY_OUTCOME.into(),
            ],
            work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
        }),
        diagnostic_provider: pull_diagnostics.then(|| {
            lsp::DiagnosticServerCapabilities::Options(lsp::DiagnosticOptions {
                identifier: Some("wb-lsp".into()),
                inter_file_dependencies: true,
                workspace_diagnostics: true,
                work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
            })
        }),
        workspace: Some(lsp::WorkspaceServerCapabilities {
            workspace_folders: Some(lsp::WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(lsp::OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..lsp::ServerCapabilities::default()
    }
}

/// A request that panics in its handler, served only when the client's initialization options hold
/// `"wbLspTestHooks": true`: tests use it to prove a
/// failing handler answers with an error and the server lives on.
enum DebugPanic {}

impl lsp::request::Request for DebugPanic {
    type Params = serde_json::Value;
    type Result = ();
    const METHOD: &'static str = "wbLsp/debug/panic";
}

/// The response to a request from its handler's result; a panic becomes an `InternalError` answer.
fn response_of<T: Serialize>(id: RequestId, outcome: std::thread::Result<anyhow::Result<T>>) -> Response {
    match outcome {
        Ok(Ok(result)) => Response::new_ok(id, result),
        Ok(Err(error)) => Response::new_err(id, ErrorCode::RequestFailed as i32, format!("{error:#}")),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Response::new_err(id, ErrorCode::InternalError as i32, format!("the request handler failed: {detail}"))
        }
    }
}

/// Work finished off the loop thread.
enum Task {
    Response(Response),
    Diagnostics { generation: u64, files: Vec<(PathBuf, Option<i32>, Vec<lsp::Diagnostic>)>, owner: PathBuf },
}

/// What an outgoing request to the client was for.
enum Outgoing {
    Configuration,
    Other,
}

type Job = Box<dyn FnOnce() + Send>;

struct Server {
    sender: Sender<Message>,
    receiver: Receiver<Message>,
    jobs: Sender<Job>,
    tasks_sender: Sender<Task>,
    tasks: Receiver<Task>,
    documents: Arc<HashMap<PathBuf, Document>>,
    encoding: PositionEncoding,
    roots: Vec<PathBuf>,
    config: Arc<Config>,
    catalog: Arc<ModelCatalog>,
    /// Manifests found in the workspace or opened.
    manifests: BTreeSet<PathBuf>,
    /// Files (manifests, open SKILL.md) whose diagnostics must be recomputed.
    dirty: BTreeSet<PathBuf>,
    /// The latest generation scheduled per diagnostics owner, and what was published for it.
    generations: HashMap<PathBuf, u64>,
    next_generation: u64,
    published: HashMap<PathBuf, HashSet<PathBuf>>,
    pending: HashSet<RequestId>,
    outgoing: HashMap<RequestId, Outgoing>,
    next_outgoing: i32,
    pull_diagnostics: bool,
    client: lsp::ClientCapabilities,
    initialization_options: Option<serde_json::Value>,
    shutdown: bool,
    test_hooks: bool,
    /// Runs in progress: their cancel flag and progress token.
    runs: HashMap<RequestId, (Arc<std::sync::atomic::AtomicBool>, Option<lsp::ProgressToken>)>,
}

impl Server {
    fn new(
        connection: Connection,
        params: lsp::InitializeParams,
        encoding: PositionEncoding,
        pull_diagnostics: bool,
    ) -> Server {
        let (jobs, job_receiver) = unbounded::<Job>();
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 4);
        for index in 0..workers {
            let receiver: Receiver<Job> = job_receiver.clone();
            let _ = std::thread::Builder::new().name(format!("wb-lsp-worker-{index}")).spawn(move || {
                for job in receiver {
                    job();
                }
            });
        }
        let (tasks_sender, tasks) = unbounded();
        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .as_ref()
            .map(|folders| folders.iter().filter_map(|f| convert::url_to_path(&f.uri)).collect())
            .unwrap_or_default();
        #[allow(deprecated)]
        if roots.is_empty() {
            if let Some(root) = params.root_uri.as_ref().and_then(convert::url_to_path) {
                roots.push(root);
            }
        }
        let (config, _) = params
            .initialization_options
            .as_ref()
            .map_or_else(|| Config::from_json(&serde_json::Value::Null), Config::from_json);
        let mut server = Server {
            sender: connection.sender,
            receiver: connection.receiver,
            jobs,
            tasks_sender,
            tasks,
            documents: Arc::new(HashMap::new()),
            encoding,
            roots,
            config: Arc::new(Config::default()),
            catalog: Arc::new(ModelCatalog::embedded().clone()),
            manifests: BTreeSet::new(),
            dirty: BTreeSet::new(),
            generations: HashMap::new(),
            next_generation: 0,
            published: HashMap::new(),
            pending: HashSet::new(),
            outgoing: HashMap::new(),
            next_outgoing: 0,
            pull_diagnostics,
            client: params.capabilities,
            initialization_options: params.initialization_options,
            shutdown: false,
            test_hooks: false,
            runs: HashMap::new(),
        };
        server.test_hooks = server
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("wbLspTestHooks"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        server.set_config(config);
        server
    }

    fn main_loop(&mut self) -> anyhow::Result<()> {
        loop {
            select! {
                recv(self.receiver) -> message => {
                    let Ok(message) = message else { return Ok(()) };
                    if self.handle_message(message)? {
                        return Ok(());
                    }
                    // Apply everything already queued before recomputing anything: a burst costs one check.
                    while let Ok(message) = self.receiver.try_recv() {
                        if self.handle_message(message)? {
                            return Ok(());
                        }
                    }
                }
                recv(self.tasks) -> task => {
                    if let Ok(task) = task {
                        self.handle_task(task)?;
                    }
                }
            }
            self.schedule_diagnostics();
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            overlay: Overlay { documents: Arc::clone(&self.documents) },
            encoding: self.encoding,
            catalog: Arc::clone(&self.catalog),
            config: Arc::clone(&self.config),
            manifests: Arc::new(self.manifests.clone()),
            resource_operations: self
                .client
                .workspace
                .as_ref()
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&lsp::ResourceOperationKind::Create)),
        }
    }

    fn send(&self, message: impl Into<Message>) -> anyhow::Result<()> {
        self.sender.send(message.into()).context("the client connection is closed")
    }

    fn notify<N: lsp::notification::Notification>(&self, params: N::Params) -> anyhow::Result<()> {
        self.send(Notification::new(N::METHOD.to_owned(), params))
    }

    fn request_client<R: lsp::request::Request>(&mut self, params: R::Params, kind: Outgoing) -> anyhow::Result<()> {
        self.next_outgoing += 1;
        let id = RequestId::from(format!("wb-lsp-{}", self.next_outgoing));
        self.outgoing.insert(id.clone(), kind);
        self.send(Request::new(id, R::METHOD.to_owned(), params))
    }

    /// Returns true when the client asked the server to exit.
    fn handle_message(&mut self, message: Message) -> anyhow::Result<bool> {
        match message {
            Message::Request(request) => self.handle_request(request)?,
            Message::Notification(notification) => {
                if notification.method == "exit" {
                    return Ok(true);
                }
                self.handle_notification(notification)?;
            }
            Message::Response(response) => self.handle_response(response),
        }
        Ok(false)
    }

    fn handle_task(&mut self, task: Task) -> anyhow::Result<()> {
        match task {
            Task::Response(response) => {
                self.runs.remove(&response.id);
                // A cancelled request was already answered; its late result is dropped.
                if self.pending.remove(&response.id) {
                    self.send(response)?;
                }
            }
            Task::Diagnostics { generation, files, owner } => {
                if self.generations.get(&owner).is_some_and(|latest| *latest != generation) {
                    return Ok(());
                }
                let mut now: HashSet<PathBuf> = HashSet::new();
                for (path, version, diagnostics) in files {
                    let current = self.documents.get(&path).map(|d| d.version);
                    if version.is_some() && current != version {
                        continue;
                    }
                    self.publish(&path, diagnostics, current)?;
                    now.insert(path);
                }
                let before = self.published.insert(owner.clone(), now.clone()).unwrap_or_default();
                for stale in before.difference(&now) {
                    let still_owned =
                        self.published.iter().any(|(other, files)| *other != owner && files.contains(stale));
                    if !still_owned {
                        self.publish(stale, Vec::new(), None)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn handle_response(&mut self, response: Response) {
        match self.outgoing.remove(&response.id) {
            Some(Outgoing::Configuration) => {
                if let Some(result) = response.result {
                    let value = result.as_array().and_then(|items| items.first().cloned()).unwrap_or(result);
                    // A client with nothing under `workbench` (Eglot answers null, Neovim `[]` or null) keeps
                    // the settings sent as initialization options instead of resetting them to the defaults.
                    let empty = match &value {
                        serde_json::Value::Null => true,
                        serde_json::Value::Object(map) => map.is_empty(),
                        serde_json::Value::Array(items) => items.is_empty(),
                        _ => false,
                    };
                    let value = match (&self.initialization_options, empty) {
                        (Some(options), true) => options.clone(),
                        _ => value,
                    };
                    let (config, problems) = Config::from_json(&value);
                    for problem in problems {
                        let _ = self.notify::<lsp::notification::ShowMessage>(lsp::ShowMessageParams {
                            typ: lsp::MessageType::WARNING,
                            message: problem,
                        });
                    }
                    self.set_config(config);
                    self.mark_all_dirty();
                }
            }
            Some(Outgoing::Other) | None => {}
        }
    }

    fn set_config(&mut self, config: Config) {
        let catalog = match &config.model_catalog {
            Some(path) => match ModelCatalog::from_file(path) {
                Ok(catalog) => catalog,
                Err(error) => {
                    let _ = self.notify::<lsp::notification::ShowMessage>(lsp::ShowMessageParams {
                        typ: lsp::MessageType::ERROR,
                        message: error.to_string(),
                    });
                    ModelCatalog::embedded().clone()
                }
            },
            None => ModelCatalog::embedded().clone(),
        };
        self.catalog = Arc::new(catalog);
        self.config = Arc::new(config);
    }

    fn mark_all_dirty(&mut self) {
        let manifests: Vec<PathBuf> = self.manifests.iter().cloned().collect();
        self.dirty.extend(manifests);
        let skills: Vec<PathBuf> =
            self.documents.keys().filter(|p| state::is_skill(p) || state::is_outbox_declaration(p)).cloned().collect();
        self.dirty.extend(skills);
        if self.pull_diagnostics {
            self.refresh_pull_diagnostics();
        }
    }

    /// After a change to `path`, the manifests that may read it: every manifest of the same repository.
    fn mark_affected(&mut self, path: &Path) {
        if state::is_manifest(path) && self.manifests.contains(path) {
            // A manifest is read by its own package only: editing one re-checks just that one.
            self.dirty.insert(path.to_owned());
            if self.pull_diagnostics {
                self.refresh_pull_diagnostics();
            }
            return;
        }
        let repository = wb_manifest::repository_root(path).or_else(|| path.parent().map(Path::to_path_buf));
        let affected: Vec<PathBuf> = self
            .manifests
            .iter()
            .filter(|manifest| {
                let root = wb_manifest::repository_root(manifest).or_else(|| manifest.parent().map(Path::to_path_buf));
                match (&root, &repository) {
                    (Some(root), Some(repository)) => root == repository || path.starts_with(root),
                    _ => false,
                }
            })
            .cloned()
            .collect();
        self.dirty.extend(affected);
        if state::is_manifest(path) && self.manifests.contains(path) {
            self.dirty.insert(path.to_owned());
        }
        if (state::is_skill(path) || state::is_outbox_declaration(path)) && self.documents.contains_key(path) {
            self.dirty.insert(path.to_owned());
        }
        // A file appearing or vanishing in an outbox changes what its open declaration may declare.
        let declarations: Vec<PathBuf> = self
            .documents
            .keys()
            .filter(|doc| state::is_outbox_declaration(doc) && doc.parent().is_some_and(|dir| path.starts_with(dir)))
            .cloned()
            .collect();
        self.dirty.extend(declarations);
        if self.pull_diagnostics {
            self.refresh_pull_diagnostics();
        }
    }

    fn refresh_pull_diagnostics(&mut self) {
        let supported = self
            .client
            .workspace
            .as_ref()
            .and_then(|w| w.diagnostic.as_ref())
            .and_then(|d| d.refresh_support)
            .unwrap_or(false);
        if supported {
            let _ = self.request_client::<lsp::request::WorkspaceDiagnosticRefresh>((), Outgoing::Other);
        }
    }

    fn schedule_diagnostics(&mut self) {
        if self.dirty.is_empty() || self.pull_diagnostics {
            self.dirty.clear();
            return;
        }
        let snapshot = self.snapshot();
        for owner in std::mem::take(&mut self.dirty) {
            self.next_generation += 1;
            let generation = self.next_generation;
            self.generations.insert(owner.clone(), generation);
            let tasks = self.tasks_sender.clone();
            let snapshot = snapshot.clone();
            let _ = self.jobs.send(Box::new(move || {
                let computed =
                    std::panic::catch_unwind(AssertUnwindSafe(|| handlers::diagnostics::compute(&snapshot, &owner)));
                let files = computed.unwrap_or_default();
                let _ = tasks.send(Task::Diagnostics { generation, files, owner });
            }));
        }
    }

    fn handle_notification(&mut self, notification: Notification) -> anyhow::Result<()> {
        use lsp::notification as n;
        match notification.method.as_str() {
            n::Initialized::METHOD => self.initialized()?,
            n::DidOpenTextDocument::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp::DidOpenTextDocumentParams>(notification.params) {
                    if let Some(path) = convert::url_to_path(&params.text_document.uri) {
                        Arc::make_mut(&mut self.documents).insert(
                            path.clone(),
                            Document::new(params.text_document.text, params.text_document.version),
                        );
                        if state::is_manifest(&path) {
                            self.manifests.insert(path.clone());
                        }
                        self.mark_affected(&path);
                    }
                }
            }
            n::DidChangeTextDocument::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp::DidChangeTextDocumentParams>(notification.params) {
                    if let Some(path) = convert::url_to_path(&params.text_document.uri) {
                        self.apply_changes(&path, params.text_document.version, params.content_changes);
                        self.mark_affected(&path);
                    }
                }
            }
            n::DidCloseTextDocument::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp::DidCloseTextDocumentParams>(notification.params) {
                    if let Some(path) = convert::url_to_path(&params.text_document.uri) {
                        Arc::make_mut(&mut self.documents).remove(&path);
                        if state::is_manifest(&path) && !path.exists() {
                            self.manifests.remove(&path);
                            self.clear_owner(&path)?;
                        }
                        if state::is_skill(&path) || state::is_outbox_declaration(&path) {
                            self.clear_owner(&path)?;
                        }
                        self.mark_affected(&path);
                    }
                }
            }
            n::DidSaveTextDocument::METHOD => {}
            n::WorkDoneProgressCancel::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp::WorkDoneProgressCancelParams>(notification.params) {
                    for (flag, token) in self.runs.values() {
                        if token.as_ref() == Some(&params.token) {
                            flag.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                }
            }
            n::DidChangeWatchedFiles::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp::DidChangeWatchedFilesParams>(notification.params) {
                    for change in params.changes {
                        let Some(path) = convert::url_to_path(&change.uri) else { continue };
                        if state::is_manifest(&path) {
                            if change.typ == lsp::FileChangeType::DELETED && !self.documents.contains_key(&path) {
                                self.manifests.remove(&path);
                                self.clear_owner(&path)?;
                            } else if wb_manifest::repository_root(&path).is_some() {
                                self.manifests.insert(path.clone());
                            }
                        }
                        self.mark_affected(&path);
                    }
                }
            }
            n::DidChangeConfiguration::METHOD => {
                if self.client.workspace.as_ref().and_then(|w| w.configuration).unwrap_or(false) {
                    self.request_configuration()?;
                } else if let Ok(params) =
                    serde_json::from_value::<lsp::DidChangeConfigurationParams>(notification.params)
                {
                    let (config, _) = Config::from_json(&params.settings);
                    self.set_config(config);
                    self.mark_all_dirty();
                }
            }
            n::DidChangeWorkspaceFolders::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp::DidChangeWorkspaceFoldersParams>(notification.params)
                {
                    for removed in params.event.removed {
                        if let Some(path) = convert::url_to_path(&removed.uri) {
                            self.roots.retain(|root| *root != path);
                            let gone: Vec<PathBuf> =
                                self.manifests.iter().filter(|m| m.starts_with(&path)).cloned().collect();
                            for manifest in gone {
                                self.manifests.remove(&manifest);
                                self.clear_owner(&manifest)?;
                            }
                        }
                    }
                    for added in params.event.added {
                        if let Some(path) = convert::url_to_path(&added.uri) {
                            self.roots.push(path.clone());
                            self.scan_root(&path);
                        }
                    }
                }
            }
            n::Cancel::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp::CancelParams>(notification.params) {
                    let id: RequestId = match params.id {
                        lsp::NumberOrString::Number(n) => n.into(),
                        lsp::NumberOrString::String(s) => s.into(),
                    };
                    if let Some((flag, _)) = self.runs.get(&id) {
                        // A run stops its runner and answers with its `cancelled` ending when it has stopped.
                        flag.store(true, std::sync::atomic::Ordering::SeqCst);
                    } else if self.pending.remove(&id) {
                        self.send(Response::new_err(
                            id,
                            ErrorCode::RequestCanceled as i32,
                            "request cancelled".into(),
                        ))?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn publish(&self, path: &Path, diagnostics: Vec<lsp::Diagnostic>, version: Option<i32>) -> anyhow::Result<()> {
        match convert::path_to_url(path) {
            Some(uri) => self.notify::<lsp::notification::PublishDiagnostics>(lsp::PublishDiagnosticsParams {
                uri,
                diagnostics,
                version,
            }),
            None => Ok(()),
        }
    }

    fn clear_owner(&mut self, owner: &Path) -> anyhow::Result<()> {
        self.generations.insert(owner.to_owned(), u64::MAX);
        let files = self.published.remove(owner).unwrap_or_default();
        for file in files.into_iter().chain(std::iter::once(owner.to_owned())) {
            self.publish(&file, Vec::new(), None)?;
        }
        Ok(())
    }

    fn apply_changes(&mut self, path: &Path, version: i32, changes: Vec<lsp::TextDocumentContentChangeEvent>) {
        let Some(document) = self.documents.get(path) else { return };
        let mut text = document.text.to_string();
        for change in changes {
            match change.range {
                None => text = change.text,
                Some(range) => {
                    let index = wb_syntax::LineIndex::new(&text);
                    let range = convert::text_range(&index, range, self.encoding);
                    if range.end <= text.len() && text.is_char_boundary(range.start) && text.is_char_boundary(range.end)
                    {
                        text.replace_range(range.as_range(), &change.text);
                    }
                }
            }
        }
        Arc::make_mut(&mut self.documents).insert(path.to_owned(), Document::new(text, version));
    }

    fn initialized(&mut self) -> anyhow::Result<()> {
        let dynamic_watch = self
            .client
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false);
        if dynamic_watch {
            let watchers =
                ["**/.workbenches/**/*", "**/workbench.yml", "**/SKILL.md", "**/*.md", "**/Dockerfile*", "**/*.json"]
                    .iter()
                    .map(|glob| lsp::FileSystemWatcher {
                        glob_pattern: lsp::GlobPattern::String((*glob).to_owned()),
                        kind: None,
                    })
                    .collect();
            let options = lsp::DidChangeWatchedFilesRegistrationOptions { watchers };
            let registration = lsp::Registration {
                id: "wb-lsp-watch".into(),
                method: lsp::notification::DidChangeWatchedFiles::METHOD.into(),
                register_options: serde_json::to_value(options).ok(),
            };
            self.request_client::<lsp::request::RegisterCapability>(
                lsp::RegistrationParams { registrations: vec![registration] },
                Outgoing::Other,
            )?;
        }
        if self.client.workspace.as_ref().and_then(|w| w.configuration).unwrap_or(false) {
            self.request_configuration()?;
        } else if let Some(options) = self.initialization_options.clone() {
            let (config, _) = Config::from_json(&options);
            self.set_config(config);
        }
        for root in self.roots.clone() {
            self.scan_root(&root);
        }
        Ok(())
    }

    fn request_configuration(&mut self) -> anyhow::Result<()> {
        let params = lsp::ConfigurationParams {
            items: vec![lsp::ConfigurationItem { scope_uri: None, section: Some("workbench".into()) }],
        };
        self.request_client::<lsp::request::WorkspaceConfiguration>(params, Outgoing::Configuration)
    }

    fn scan_root(&mut self, root: &Path) {
        if let wb_manifest::Target::Packages(found) = wb_manifest::discover(&wb_manifest::OsFileSystem, root) {
            for manifest in found.into_iter().filter(|m| m.is_file()) {
                self.dirty.insert(manifest.clone());
                self.manifests.insert(manifest);
            }
        }
    }

    fn handle_request(&mut self, request: Request) -> anyhow::Result<()> {
        use lsp::request as r;
        if self.shutdown {
            return self.send(Response::new_err(
                request.id,
                ErrorCode::InvalidRequest as i32,
                "the server is shutting down".into(),
            ));
        }
        match request.method.as_str() {
            r::Shutdown::METHOD => {
                self.shutdown = true;
                self.send(Response::new_ok(request.id, ()))
            }
            r::Completion::METHOD => self.spawn::<r::Completion>(request, handlers::completion::handle),
            r::HoverRequest::METHOD => self.spawn::<r::HoverRequest>(request, handlers::hover::handle),
            r::GotoDefinition::METHOD => self.spawn::<r::GotoDefinition>(request, handlers::definition::handle),
            r::References::METHOD => self.spawn::<r::References>(request, handlers::references::handle),
            r::PrepareRenameRequest::METHOD => {
                self.spawn::<r::PrepareRenameRequest>(request, handlers::rename::prepare)
            }
            r::Rename::METHOD => self.spawn::<r::Rename>(request, handlers::rename::handle),
            r::DocumentSymbolRequest::METHOD => {
                self.spawn::<r::DocumentSymbolRequest>(request, handlers::symbols::handle)
            }
            r::FoldingRangeRequest::METHOD => self.spawn::<r::FoldingRangeRequest>(request, handlers::folding::handle),
            r::DocumentLinkRequest::METHOD => self.spawn::<r::DocumentLinkRequest>(request, handlers::links::handle),
            r::CodeLensRequest::METHOD => self.spawn::<r::CodeLensRequest>(request, handlers::execute::code_lens),
            r::CodeActionRequest::METHOD => self.spawn::<r::CodeActionRequest>(request, handlers::code_action::handle),
            r::DocumentDiagnosticRequest::METHOD => {
                self.spawn::<r::DocumentDiagnosticRequest>(request, handlers::diagnostics::document)
            }
            r::WorkspaceDiagnosticRequest::METHOD => {
                self.spawn::<r::WorkspaceDiagnosticRequest>(request, handlers::diagnostics::workspace)
            }
            r::ExecuteCommand::METHOD => self.execute_command(request),
            DebugPanic::METHOD if self.test_hooks => {
                self.spawn::<DebugPanic>(request, |_, _| panic!("requested by a test"))
            }
            _ => self.send(Response::new_err(
                request.id,
                ErrorCode::MethodNotFound as i32,
                format!("unknown method {}", request.method),
            )),
        }
    }

    /// Runs a read request on a worker with a snapshot; panics and errors become error responses.
    fn spawn<R>(
        &mut self,
        request: Request,
        handler: fn(&Snapshot, R::Params) -> anyhow::Result<R::Result>,
    ) -> anyhow::Result<()>
    where
        R: lsp::request::Request,
        R::Params: DeserializeOwned + Send + 'static,
        R::Result: Serialize,
    {
        let Some((id, params)) = self.params::<R::Params>(request)? else { return Ok(()) };
        self.pending.insert(id.clone());
        let snapshot = self.snapshot();
        let tasks = self.tasks_sender.clone();
        let job: Job = Box::new(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| handler(&snapshot, params)));
            let _ = tasks.send(Task::Response(response_of(id, outcome)));
        });
        self.jobs.send(job).map_err(|_| anyhow::anyhow!("the worker pool stopped"))
    }

    /// Reads a request's parameters, or answers it with `InvalidParams` (then `None`).
    fn params<P: DeserializeOwned>(&self, request: Request) -> anyhow::Result<Option<(RequestId, P)>> {
        match serde_json::from_value::<P>(request.params) {
            Ok(params) => Ok(Some((request.id, params))),
            Err(error) => {
                let message = format!("invalid params: {error}");
                self.send(Response::new_err(request.id, ErrorCode::InvalidParams as i32, message))?;
                Ok(None)
            }
        }
    }

    /// Starts an execution command (`workbench.dryRun`, `smoke`, `run`) on its own thread: it reports
    /// progress, streams events (run) and can be cancelled by `$/cancelRequest` or by cancelling its progress.
    fn spawn_run(&mut self, request: Request, handler: handlers::execute::Handler) -> anyhow::Result<()> {
        let Some((id, params)) = self.params::<lsp::ExecuteCommandParams>(request)? else { return Ok(()) };
        let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.runs.insert(id.clone(), (Arc::clone(&cancel), params.work_done_progress_params.work_done_token.clone()));
        self.pending.insert(id.clone());
        let snapshot = self.snapshot();
        let tasks = self.tasks_sender.clone();
        let sender = self.sender.clone();
        let spawned = std::thread::Builder::new().name("wb-lsp-run".into()).spawn(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| handler(&snapshot, params, &sender, cancel)));
            let _ = tasks.send(Task::Response(response_of(id, outcome)));
        });
        spawned.map(|_| ()).map_err(|e| anyhow::anyhow!("cannot start the run: {e}"))
    }

    fn execute_command(&mut self, request: Request) -> anyhow::Result<()> {
        let command = request.params.get("command").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        match command.as_str() {
            handlers::execute::DRY_RUN => {
                return self.spawn_run(request, handlers::execute::dry_run);
            }
            handlers::execute::SMOKE => {
                return self.spawn_run(request, handlers::execute::smoke);
            }
            handlers::execute::RUN => return self.spawn_run(request, handlers::execute::run),
            handlers::execute::OUTCOME => {
                return self.spawn::<lsp::request::ExecuteCommand>(request, handlers::execute::outcome);
            }
            handlers::execute::APPLY_OUTCOME => {
                return self.spawn::<lsp::request::ExecuteCommand>(request, handlers::execute::apply_outcome);
            }
            _ => {}
        }
        let Some((id, params)) = self.params::<lsp::ExecuteCommandParams>(request)? else { return Ok(()) };
        match params.command.as_str() {
            COMMAND_MIGRATE => {
                let uri =
                    params.arguments.first().cloned().and_then(|value| serde_json::from_value::<lsp::Url>(value).ok());
                let Some(uri) = uri else {
                    return self.send(Response::new_err(
                        id,
                        ErrorCode::InvalidParams as i32,
                        "workbench.migrate takes the manifest's URI".into(),
                    ));
                };
                match handlers::code_action::migration_edit(&self.snapshot(), &uri) {
                    Ok(Some(edit)) => {
                        self.request_client::<lsp::request::ApplyWorkspaceEdit>(
                            lsp::ApplyWorkspaceEditParams { label: Some("Migrate to spec 1".into()), edit },
                            Outgoing::Other,
                        )?;
                        self.send(Response::new_ok(id, serde_json::json!({"migrated": true})))
                    }
                    Ok(None) => self.send(Response::new_ok(id, serde_json::json!({"migrated": false}))),
                    Err(error) => self.send(Response::new_err(id, ErrorCode::RequestFailed as i32, error.to_string())),
                }
            }
            COMMAND_CHECK_WORKSPACE => {
                for root in self.roots.clone() {
                    self.scan_root(&root);
                }
                self.mark_all_dirty();
                let count = self.manifests.len();
                self.send(Response::new_ok(id, serde_json::json!({"packages": count})))
            }
            other => {
                self.send(Response::new_err(id, ErrorCode::InvalidParams as i32, format!("unknown command {other}")))
            }
        }
    }
}
