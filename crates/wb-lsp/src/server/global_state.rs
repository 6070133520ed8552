//! The server's state, owned by the loop thread: open documents, the workspace, settings, request
//! bookkeeping and runs in flight; the immutable [`Snapshot`]s requests run on; sending to the client. The
//! diagnostics schedule lives in `diagnostics_schedule.rs`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use crossbeam_channel::{Receiver, Sender, unbounded};
use lsp_server::{Message, Notification, ReqQueue, RequestId, Response};
use lsp_types as lsp;
use wb_manifest::{Dependencies, ModelCatalog};
use wb_syntax::PositionEncoding;

use super::capabilities::Negotiated;
use super::client_features::ClientFeatures;
use super::convert;
use super::diagnostics_schedule::DiagnosticsSchedule;
use super::handlers::diagnostics::Computed;
use super::snapshot::{Config, Document, Overlay, ParseCache, Snapshot};

/// Work for the worker pool.
pub type Job = Box<dyn FnOnce() + Send>;

/// A check that panicked: its panic's message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(pub String);

/// Why the model catalog the settings name is not used: its file failed, or no thread could read it.
#[derive(Debug, thiserror::Error)]
pub enum CatalogUnread {
    #[error(transparent)]
    File(#[from] wb_manifest::CatalogError),
    #[error("the model catalog cannot be read: {0}")]
    Thread(std::io::Error),
}

/// Work finished off the loop thread.
pub enum Task {
    Response(Response),
    /// A check finished: its diagnostics and what it read, or the message of the panic that stopped it.
    Diagnostics {
        generation: u64,
        owner: PathBuf,
        result: Result<(Computed, Option<Dependencies>), Panicked>,
    },
    /// The model catalog the settings name, read on a thread of its own (a slow or endless file never holds
    /// the loop): the settings' generation it was read for, and the catalog or why there is none.
    Catalog {
        generation: u64,
        catalog: Result<ModelCatalog, CatalogUnread>,
    },
}

/// What an outgoing request to the client is waiting for.
pub enum Outgoing {
    Configuration,
    /// The `workspace/applyEdit` of a `workbench.migrate` request, which is answered with the client's reply.
    Migration(RequestId),
    /// The `window/workDoneProgress/create` of the diagnostics batch shown as progress.
    Progress,
    Other,
}

/// An execution command in flight on its own thread.
pub struct Run {
    /// Set by `$/cancelRequest` or a cancelled progress: the run is cancelled (its supervisor is told).
    pub cancel: Arc<AtomicBool>,
    /// Set when the session ends: the command stops following; a run goes on under its supervisor.
    pub detach: Arc<AtomicBool>,
    pub token: Option<lsp::ProgressToken>,
    pub thread: Option<JoinHandle<()>>,
}

pub struct GlobalState {
    sender: Sender<Message>,
    /// Incoming requests not answered yet, and outgoing ones awaiting the client's reply.
    pub req_queue: ReqQueue<(), Outgoing>,
    pub jobs: Sender<Job>,
    pub task_sender: Sender<Task>,
    pub tasks: Receiver<Task>,
    pub documents: Arc<HashMap<PathBuf, Document>>,
    parses: Arc<ParseCache>,
    encoding: PositionEncoding,
    pub roots: Vec<PathBuf>,
    pub(super) config: Arc<Config>,
    pub(super) catalog: Arc<ModelCatalog>,
    /// Manifests found in the workspace or opened (shared with the snapshots, copied only when it changes while
    /// one holds it).
    pub manifests: Arc<BTreeSet<PathBuf>>,
    pub diagnostics: DiagnosticsSchedule,
    pub(super) pull_diagnostics: bool,
    /// The client re-pulls when asked (`workspace/diagnostic/refresh`).
    pub(super) diagnostics_refresh: bool,
    pub(super) client: lsp::ClientCapabilities,
    pub(super) initialization_options: Option<serde_json::Value>,
    /// `shutdown` was received: further requests are refused.
    pub shutdown_requested: bool,
    /// The client asked for the test hooks (`"wbLspTestHooks": true`); only a build with the `test-hooks`
    /// feature, the tests', has them.
    #[cfg(feature = "test-hooks")]
    pub test_hooks: bool,
    pub runs: HashMap<RequestId, Run>,
    /// Commands that signal or write (`workbench.kill`, `workbench.applyOutcome`) in flight, on their own
    /// threads: never cancelled.
    pub mutations: HashMap<RequestId, JoinHandle<()>>,
    /// The settings problems last shown, so the same ones are not shown again on every settings change.
    pub(super) shown_problems: Vec<(lsp::MessageType, String)>,
    /// Counts the model catalogs asked for: only the latest one read is taken.
    pub(super) catalog_generation: u64,
    /// The model catalog error last shown.
    pub(super) shown_catalog_error: Option<String>,
}

impl GlobalState {
    pub fn new(sender: Sender<Message>, jobs: Sender<Job>, negotiated: Negotiated) -> GlobalState {
        let Negotiated { params, encoding, pull_diagnostics, diagnostics_refresh } = negotiated;
        let (task_sender, tasks) = unbounded();
        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .as_ref()
            .map(|folders| folders.iter().filter_map(|f| convert::url_to_path(&f.uri)).collect())
            .unwrap_or_default();
        #[allow(deprecated)]
        if roots.is_empty()
            && let Some(root) = params.root_uri.as_ref().and_then(convert::url_to_path)
        {
            roots.push(root);
        }
        #[cfg(feature = "test-hooks")]
        let test_hooks = params
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("wbLspTestHooks"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let mut state = GlobalState {
            sender,
            req_queue: ReqQueue::default(),
            jobs,
            task_sender,
            tasks,
            documents: Arc::new(HashMap::new()),
            parses: Arc::new(ParseCache::default()),
            encoding,
            roots,
            config: Arc::new(Config::default()),
            catalog: Arc::new(ModelCatalog::embedded().clone()),
            manifests: Arc::new(BTreeSet::new()),
            diagnostics: DiagnosticsSchedule::default(),
            pull_diagnostics,
            diagnostics_refresh,
            client: params.capabilities,
            initialization_options: params.initialization_options,
            shutdown_requested: false,
            #[cfg(feature = "test-hooks")]
            test_hooks,
            runs: HashMap::new(),
            mutations: HashMap::new(),
            shown_problems: Vec::new(),
            catalog_generation: 0,
            shown_catalog_error: None,
        };
        let options = state.initialization_options.clone().unwrap_or(serde_json::Value::Null);
        state.apply_settings(&options);
        state
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            overlay: Overlay {
                documents: Arc::clone(&self.documents),
                parses: Arc::clone(&self.parses),
                disk: Arc::new(wb_manifest::DiskCache::new()),
            },
            encoding: self.encoding,
            catalog: Arc::clone(&self.catalog),
            config: Arc::clone(&self.config),
            manifests: Arc::clone(&self.manifests),
            resource_operations: self
                .client
                .workspace
                .as_ref()
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&lsp::ResourceOperationKind::Create)),
            features: ClientFeatures::of(&self.client),
        }
    }

    pub fn encoding(&self) -> PositionEncoding {
        self.encoding
    }

    /// A clone of the channel to the client, for threads that report on their own (runs).
    pub fn sender(&self) -> Sender<Message> {
        self.sender.clone()
    }

    pub fn send(&self, message: impl Into<Message>) -> anyhow::Result<()> {
        self.sender.send(message.into()).context("the client connection is closed")
    }

    /// Answers an incoming request, unless it was answered already (cancelled).
    pub fn respond(&mut self, response: Response) -> anyhow::Result<()> {
        self.runs.remove(&response.id);
        self.mutations.remove(&response.id);
        if self.req_queue.incoming.complete(&response.id).is_some() {
            self.send(response)?;
        }
        Ok(())
    }

    pub fn notify<N: lsp::notification::Notification>(&self, params: N::Params) -> anyhow::Result<()> {
        self.send(Notification::new(N::METHOD.to_owned(), params))
    }

    pub fn request_client<R: lsp::request::Request>(
        &mut self,
        params: R::Params,
        kind: Outgoing,
    ) -> anyhow::Result<()> {
        let request = self.req_queue.outgoing.register(R::METHOD.to_owned(), params, kind);
        self.send(request)
    }

    /// The client answers `workspace/configuration`: settings are asked for, never taken from notifications.
    pub fn client_supports_configuration(&self) -> bool {
        self.client.workspace.as_ref().and_then(|w| w.configuration).unwrap_or(false)
    }

    pub fn client_registers_watchers(&self) -> bool {
        self.client
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false)
    }

    pub fn initialization_options(&self) -> Option<&serde_json::Value> {
        self.initialization_options.as_ref()
    }

    /// Adds the manifests under `root` and schedules their check.
    pub fn scan_root(&mut self, root: &Path) {
        if let wb_manifest::Target::Packages(found) = wb_manifest::discover(&wb_manifest::OsFileSystem, root) {
            for manifest in found.into_iter().filter(|m| m.is_file()) {
                self.diagnostics.mark(manifest.clone());
                Arc::make_mut(&mut self.manifests).insert(manifest);
            }
        }
    }

    /// Lets go of every run in flight (`shutdown`): the runs go on under their supervisors (a window reload
    /// must not cost a 40-minute run), and each command answers that its run goes on.
    pub fn detach_runs(&self) {
        for run in self.runs.values() {
            run.detach.store(true, Ordering::SeqCst);
        }
    }

    /// Lets go of every run in flight and waits, at most `limit`, for their threads to end (`exit`, or the
    /// client went away). Commands that write are waited for too (they are not cancelled: an apply finishes,
    /// or rolls back, rather than being cut off).
    pub fn stop_runs(&mut self, limit: Duration) {
        self.detach_runs();
        let deadline = Instant::now() + limit;
        let writes = self.mutations.drain().map(|(_, thread)| Some(thread));
        let runs: Vec<Option<JoinHandle<()>>> =
            self.runs.values_mut().map(|run| run.thread.take()).chain(writes).collect();
        for thread in runs {
            let Some(thread) = thread else { continue };
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ = thread.join();
            } else {
                eprintln!("wb-lsp: a run did not stop within {} seconds", limit.as_secs());
            }
        }
    }
}

/// The message a panic carried (`panic!` with a literal or a formatted string), or a placeholder.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
