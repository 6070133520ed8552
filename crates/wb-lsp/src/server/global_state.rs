//! The server's state, owned by the loop thread: open documents, the workspace, settings, request
//! bookkeeping and runs in flight; the immutable [`Snapshot`]s requests run on; sending to the client; and the
//! diagnostics schedule (which owners are dirty, generations, what was published).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::panic::AssertUnwindSafe;
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
use super::handlers::diagnostics::{self, Computed};
use super::progress::{self, CheckProgress};
use super::snapshot::{self, Config, Document, Overlay, ParseCache, Snapshot};

/// Work for the worker pool.
pub type Job = Box<dyn FnOnce() + Send>;

/// Work finished off the loop thread.
pub enum Task {
    Response(Response),
    /// A check finished: its diagnostics and what it read, or the message of the panic that stopped it.
    Diagnostics {
        generation: u64,
        owner: PathBuf,
        result: Result<(Computed, Option<Dependencies>), String>,
    },
    /// The model catalog the settings name, read on a thread of its own (a slow or endless file never holds
    /// the loop): the settings' generation it was read for, and the catalog or why there is none.
    Catalog {
        generation: u64,
        catalog: Result<ModelCatalog, String>,
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

/// Per diagnostics owner (a manifest, an open `SKILL.md` or outbox declaration): what must be recomputed, the
/// latest generation scheduled, and what it last published in each file.
#[derive(Default)]
pub struct DiagnosticsSchedule {
    pub dirty: BTreeSet<PathBuf>,
    generations: HashMap<PathBuf, u64>,
    next_generation: u64,
    /// Each owner's diagnostics last published, per file.
    published: HashMap<PathBuf, HashMap<PathBuf, Vec<lsp::Diagnostic>>>,
    /// The owners reporting on each file: a file several owners report on (an open `SKILL.md` and the manifest
    /// whose prose checks read it, instructions two packages share) shows what all of them found.
    reporters: HashMap<PathBuf, BTreeSet<PathBuf>>,
    /// What each manifest's last check read: a change elsewhere does not recheck it.
    dependencies: HashMap<PathBuf, Dependencies>,
    /// The large batch in flight, shown as progress.
    progress: Option<CheckProgress>,
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
    pull_diagnostics: bool,
    /// The client re-pulls when asked (`workspace/diagnostic/refresh`).
    diagnostics_refresh: bool,
    client: lsp::ClientCapabilities,
    pub(super) initialization_options: Option<serde_json::Value>,
    /// `shutdown` was received: further requests are refused.
    pub shutdown_requested: bool,
    /// The client asked for the test hooks (`"wbLspTestHooks": true`); only a build with the `test-hooks`
    /// feature, the tests', has them.
    #[cfg(feature = "test-hooks")]
    pub test_hooks: bool,
    pub runs: HashMap<RequestId, Run>,
    /// Commands that write (`workbench.applyOutcome`) in flight, on their own threads: never cancelled.
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
                self.diagnostics.dirty.insert(manifest.clone());
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

    /// Withdraws everything published for `owner` (what other owners report in the same files stays); a result
    /// still being computed for it is dropped.
    pub fn clear_owner(&mut self, owner: &Path) -> anyhow::Result<()> {
        self.diagnostics.generations.insert(owner.to_owned(), u64::MAX);
        let files = self.diagnostics.published.remove(owner).unwrap_or_default();
        let mut touched: BTreeSet<PathBuf> = files.into_keys().collect();
        touched.insert(owner.to_owned());
        for file in &touched {
            self.stop_reporting(owner, file);
        }
        for file in &touched {
            self.publish_file(file)?;
        }
        Ok(())
    }

    fn stop_reporting(&mut self, owner: &Path, file: &Path) {
        if let Some(owners) = self.diagnostics.reporters.get_mut(file) {
            owners.remove(owner);
            if owners.is_empty() {
                self.diagnostics.reporters.remove(file);
            }
        }
    }

    /// Publishes what every owner reports in `file`, in the owners' order, each diagnostic once.
    fn publish_file(&self, file: &Path) -> anyhow::Result<()> {
        let version = self.documents.get(file).map(|d| d.version);
        let owners = self.diagnostics.reporters.get(file);
        let mut reports = owners
            .into_iter()
            .flatten()
            .filter_map(|owner| self.diagnostics.published.get(owner).and_then(|files| files.get(file)));
        let diagnostics = match (reports.next(), owners.map_or(0, BTreeSet::len)) {
            (None, _) => Vec::new(),
            (Some(only), 1) => only.clone(),
            (Some(first), _) => {
                let key = |d: &lsp::Diagnostic| (d.range, format!("{:?}{}", d.code, d.message));
                let mut seen: HashSet<(lsp::Range, String)> = first.iter().map(key).collect();
                let mut all = first.clone();
                for report in reports {
                    all.extend(report.iter().filter(|d| seen.insert(key(d))).cloned());
                }
                all
            }
        };
        self.publish(file, diagnostics, version)
    }

    pub fn mark_all_dirty(&mut self) {
        let manifests: Vec<PathBuf> = self.manifests.iter().cloned().collect();
        self.diagnostics.dirty.extend(manifests);
        let owners: Vec<PathBuf> = self
            .documents
            .keys()
            .filter(|p| snapshot::is_skill(p) || snapshot::is_outbox_declaration(p))
            .cloned()
            .collect();
        self.diagnostics.dirty.extend(owners);
        self.refresh_pull_diagnostics();
    }

    /// After a change to `path`, the owners that may read it: every manifest of the same repository, the file
    /// itself when it is an open owner, and the open outbox declarations of the directory it is in.
    pub fn mark_affected(&mut self, path: &Path) {
        if snapshot::is_manifest(path) && self.manifests.contains(path) {
            // A manifest is read by its own package only: editing one re-checks just that one.
            self.diagnostics.dirty.insert(path.to_owned());
            self.refresh_pull_diagnostics();
            return;
        }
        let repository = wb_manifest::repository_root(path).or_else(|| path.parent().map(Path::to_path_buf));
        let dependencies = &self.diagnostics.dependencies;
        let affected: Vec<PathBuf> = self
            .manifests
            .iter()
            .filter(|manifest| {
                let root = wb_manifest::repository_root(manifest).or_else(|| manifest.parent().map(Path::to_path_buf));
                let same_repository = match (&root, &repository) {
                    (Some(root), Some(repository)) => root == repository || path.starts_with(root),
                    _ => false,
                };
                // A package checked before is rechecked only when its check read the path (or listed the
                // directory it is in); one not checked yet is rechecked.
                same_repository && dependencies.get(*manifest).is_none_or(|read| read.depends_on(path))
            })
            .cloned()
            .collect();
        self.diagnostics.dirty.extend(affected);
        if (snapshot::is_skill(path) || snapshot::is_outbox_declaration(path)) && self.documents.contains_key(path) {
            self.diagnostics.dirty.insert(path.to_owned());
        }
        // A file appearing or vanishing in an outbox changes what its open declaration may declare.
        let declarations: Vec<PathBuf> = self
            .documents
            .keys()
            .filter(|doc| snapshot::is_outbox_declaration(doc) && doc.parent().is_some_and(|dir| path.starts_with(dir)))
            .cloned()
            .collect();
        self.diagnostics.dirty.extend(declarations);
        self.refresh_pull_diagnostics();
    }

    /// A pull client re-asks for diagnostics when told to (if it supports the refresh).
    fn refresh_pull_diagnostics(&mut self) {
        if !self.pull_diagnostics {
            return;
        }
        if self.diagnostics_refresh {
            let _ = self.request_client::<lsp::request::WorkspaceDiagnosticRefresh>((), Outgoing::Other);
        }
    }

    /// Starts a check of every dirty owner on the workers, each tagged with a new generation (push clients only;
    /// pull clients ask when they want diagnostics).
    pub fn schedule_diagnostics(&mut self) {
        if self.pull_diagnostics {
            self.diagnostics.dirty.clear();
            return;
        }
        if self.diagnostics.dirty.is_empty() {
            return;
        }
        let snapshot = self.snapshot();
        let mut scheduled = Vec::new();
        for owner in std::mem::take(&mut self.diagnostics.dirty) {
            self.diagnostics.next_generation += 1;
            let generation = self.diagnostics.next_generation;
            scheduled.push(generation);
            self.diagnostics.generations.insert(owner.clone(), generation);
            let tasks = self.task_sender.clone();
            let snapshot = snapshot.clone();
            let _ = self.jobs.send(Box::new(move || {
                let computed = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    diagnostics::compute_with_dependencies(&snapshot, &owner)
                }));
                let result = computed.map_err(|panic| panic_message(panic.as_ref()));
                let _ = tasks.send(Task::Diagnostics { generation, owner, result });
            }));
        }
        self.track_progress(scheduled);
    }

    /// Shows a batch of at least [`progress::MIN_OWNERS`] checks as progress (when the client shows it); a
    /// batch scheduled while one runs joins it.
    fn track_progress(&mut self, scheduled: Vec<u64>) {
        let supported = self.client.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
        if let Some(running) = self.diagnostics.progress.as_mut() {
            running.add(scheduled);
            return;
        }
        if !supported || scheduled.len() < progress::MIN_OWNERS {
            return;
        }
        self.diagnostics.next_generation += 1;
        let token = lsp::ProgressToken::String(format!("wb-lsp/check/{}", self.diagnostics.next_generation));
        let create = lsp::WorkDoneProgressCreateParams { token: token.clone() };
        if self.request_client::<lsp::request::WorkDoneProgressCreate>(create, Outgoing::Progress).is_err() {
            return;
        }
        let mut batch = CheckProgress::new(token);
        batch.add(scheduled);
        self.diagnostics.progress = Some(batch);
    }

    /// The client answered the batch's `window/workDoneProgress/create`: progress begins (and ends at once if
    /// the batch finished meanwhile); a refused token shows none.
    pub fn progress_created(&mut self, accepted: bool) {
        let Some(mut batch) = self.diagnostics.progress.take() else { return };
        if !accepted {
            return;
        }
        let begin = batch.begin();
        self.send_progress(&batch.token, begin);
        if batch.is_done() {
            self.send_progress(&batch.token, batch.end());
        } else {
            self.diagnostics.progress = Some(batch);
        }
    }

    fn send_progress(&self, token: &lsp::ProgressToken, value: lsp::WorkDoneProgress) {
        let params = lsp::ProgressParams { token: token.clone(), value: lsp::ProgressParamsValue::WorkDone(value) };
        let _ = self.notify::<lsp::notification::Progress>(params);
    }

    /// Counts a finished check in the batch shown as progress.
    fn progress_finished(&mut self, generation: u64) {
        let Some(batch) = self.diagnostics.progress.as_mut() else { return };
        let value = batch.finished(generation);
        let token = batch.token.clone();
        if batch.is_done() && batch.started {
            self.diagnostics.progress = None;
        }
        if let Some(value) = value {
            self.send_progress(&token, value);
        }
    }

    /// Publishes a computed result unless a newer one was scheduled for its owner, or a document changed since;
    /// files the owner no longer reports on are cleared (unless another owner still reports on them).
    /// A check that panicked publishes nothing: the diagnostics last published for its files stay (a bug in a
    /// check must not read as "no problems"), and the failure is logged.
    pub fn diagnostics_computed(
        &mut self,
        generation: u64,
        owner: PathBuf,
        result: Result<(Computed, Option<Dependencies>), String>,
    ) -> anyhow::Result<()> {
        self.progress_finished(generation);
        if self.diagnostics.generations.get(&owner).is_some_and(|latest| *latest != generation) {
            return Ok(());
        }
        let (files, dependencies) = match result {
            Ok(computed) => computed,
            Err(panic) => {
                let message =
                    format!("wb-lsp: the check of {} failed ({panic}); its last diagnostics are kept", owner.display());
                eprintln!("{message}");
                let params = lsp::LogMessageParams { typ: lsp::MessageType::ERROR, message };
                return self.notify::<lsp::notification::LogMessage>(params);
            }
        };
        match dependencies {
            Some(dependencies) => self.diagnostics.dependencies.insert(owner.clone(), dependencies),
            None => self.diagnostics.dependencies.remove(&owner),
        };
        let mut now: HashMap<PathBuf, Vec<lsp::Diagnostic>> = HashMap::new();
        for (path, version, diagnostics) in files {
            let current = self.documents.get(&path).map(|d| d.version);
            if version.is_some() && current != version {
                continue;
            }
            now.insert(path, diagnostics);
        }
        // The files it reports on now, then those it no longer does (cleared, unless another owner reports there).
        let mut touched: Vec<PathBuf> = now.keys().cloned().collect();
        touched.sort();
        for file in &touched {
            self.diagnostics.reporters.entry(file.clone()).or_default().insert(owner.clone());
        }
        let before = self.diagnostics.published.insert(owner.clone(), now).unwrap_or_default();
        let mut stale: Vec<PathBuf> = before.into_keys().filter(|file| touched.binary_search(file).is_err()).collect();
        stale.sort();
        for file in &stale {
            self.stop_reporting(&owner, file);
        }
        for file in touched.iter().chain(&stale) {
            self.publish_file(file)?;
        }
        Ok(())
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
