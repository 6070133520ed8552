//! Diagnostics from the checks to the client: the `GlobalState` methods that mark what a change affects,
//! schedule the checks on the workers, and publish their results through the [`DiagnosticsSchedule`]'s
//! bookkeeping (each file with what every owner reports in it), with a large batch shown as progress.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use lsp_types as lsp;
use wb_manifest::Dependencies;

use super::convert;
#[cfg(doc)]
use super::diagnostics_schedule::DiagnosticsSchedule;
use super::global_state::{GlobalState, Outgoing, Panicked, Task, panic_message};
use super::handlers::diagnostics::{self, Computed};
use super::progress::{self, CheckProgress};
use super::snapshot;

impl GlobalState {
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

    /// Publishes what every owner reports in `file`.
    fn publish_file(&self, file: &Path) -> anyhow::Result<()> {
        let version = self.documents.get(file).map(|d| d.version);
        self.publish(file, self.diagnostics.in_file(file), version)
    }

    /// Withdraws everything published for `owner` (what other owners report in the same files stays); a result
    /// still being computed for it is dropped.
    pub fn clear_owner(&mut self, owner: &Path) -> anyhow::Result<()> {
        for file in &self.diagnostics.forget(owner) {
            self.publish_file(file)?;
        }
        Ok(())
    }

    pub fn mark_all_dirty(&mut self) {
        let manifests: Vec<PathBuf> = self.manifests.iter().cloned().collect();
        self.diagnostics.mark_all(manifests);
        let owners: Vec<PathBuf> = self.documents.keys().filter(|p| snapshot::is_open_owner(p)).cloned().collect();
        self.diagnostics.mark_all(owners);
        self.refresh_pull_diagnostics();
    }

    /// After a change to `path`, the owners that may read it: every manifest of the same repository, the file
    /// itself when it is an open owner, and the open outbox declarations of the directory it is in.
    pub fn mark_affected(&mut self, path: &Path) {
        if snapshot::is_manifest(path) && self.manifests.contains(path) {
            // A manifest is read by its own package only: editing one re-checks just that one.
            self.diagnostics.mark(path);
            self.refresh_pull_diagnostics();
            return;
        }
        let repository = wb_manifest::repository_root(path).or_else(|| path.parent().map(Path::to_path_buf));
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
                same_repository && self.diagnostics.may_read(manifest, path)
            })
            .cloned()
            .collect();
        self.diagnostics.mark_all(affected);
        if snapshot::is_open_owner(path) && self.documents.contains_key(path) {
            self.diagnostics.mark(path);
        }
        // A file appearing or vanishing in an outbox changes what its open declaration may declare.
        let declarations: Vec<PathBuf> = self
            .documents
            .keys()
            .filter(|doc| snapshot::is_outbox_declaration(doc) && doc.parent().is_some_and(|dir| path.starts_with(dir)))
            .cloned()
            .collect();
        self.diagnostics.mark_all(declarations);
        self.refresh_pull_diagnostics();
    }

    /// A pull client re-asks for diagnostics when told to (if it supports the refresh).
    fn refresh_pull_diagnostics(&mut self) {
        if self.pull_diagnostics && self.diagnostics_refresh {
            let _ = self.request_client::<lsp::request::WorkspaceDiagnosticRefresh>((), Outgoing::Other);
        }
    }

    /// Starts a check of every dirty owner on the workers, each tagged with a new generation (push clients only;
    /// pull clients ask when they want diagnostics).
    pub fn schedule_diagnostics(&mut self) {
        if self.pull_diagnostics {
            self.diagnostics.clear_dirty();
            return;
        }
        let dirty = self.diagnostics.take_dirty();
        if dirty.is_empty() {
            return;
        }
        let snapshot = self.snapshot();
        let mut scheduled = Vec::new();
        for (owner, generation) in dirty {
            scheduled.push(generation);
            let tasks = self.task_sender.clone();
            let snapshot = snapshot.clone();
            let _ = self.jobs.send(Box::new(move || {
                let computed = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    diagnostics::compute_with_dependencies(&snapshot, &owner)
                }));
                let result = computed.map_err(|panic| Panicked(panic_message(panic.as_ref())));
                let _ = tasks.send(Task::Diagnostics { generation, owner, result });
            }));
        }
        self.track_progress(scheduled);
    }

    /// Shows a batch of at least [`progress::MIN_OWNERS`] checks as progress (when the client shows it); a
    /// batch scheduled while one runs joins it.
    fn track_progress(&mut self, scheduled: Vec<u64>) {
        let supported = self.client.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
        if let Some(running) = self.diagnostics.progress().as_mut() {
            running.add(scheduled);
            return;
        }
        if !supported || scheduled.len() < progress::MIN_OWNERS {
            return;
        }
        let token = lsp::ProgressToken::String(format!("wb-lsp/check/{}", self.diagnostics.next_number()));
        let create = lsp::WorkDoneProgressCreateParams { token: token.clone() };
        if self.request_client::<lsp::request::WorkDoneProgressCreate>(create, Outgoing::Progress).is_err() {
            return;
        }
        let mut batch = CheckProgress::new(token);
        batch.add(scheduled);
        *self.diagnostics.progress() = Some(batch);
    }

    /// The client answered the batch's `window/workDoneProgress/create`: progress begins (and ends at once if
    /// the batch finished meanwhile); a refused token shows none.
    pub fn progress_created(&mut self, accepted: bool) {
        let Some(mut batch) = self.diagnostics.progress().take() else { return };
        if !accepted {
            return;
        }
        let begin = batch.begin();
        self.send_progress(&batch.token, begin);
        if batch.is_done() {
            self.send_progress(&batch.token, batch.end());
        } else {
            *self.diagnostics.progress() = Some(batch);
        }
    }

    fn send_progress(&self, token: &lsp::ProgressToken, value: lsp::WorkDoneProgress) {
        let params = lsp::ProgressParams { token: token.clone(), value: lsp::ProgressParamsValue::WorkDone(value) };
        let _ = self.notify::<lsp::notification::Progress>(params);
    }

    /// Counts a finished check in the batch shown as progress.
    fn progress_finished(&mut self, generation: u64) {
        let Some(batch) = self.diagnostics.progress().as_mut() else { return };
        let value = batch.finished(generation);
        let token = batch.token.clone();
        if batch.is_done() && batch.started {
            *self.diagnostics.progress() = None;
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
        result: Result<(Computed, Option<Dependencies>), Panicked>,
    ) -> anyhow::Result<()> {
        self.progress_finished(generation);
        if self.diagnostics.returned() {
            // The checks are done: what they allocated and freed goes back to the system (the glibc arenas of
            // the workers would otherwise keep the session's peak resident).
            let _ = self.jobs.send(Box::new(super::memory::release));
        }
        if self.diagnostics.is_stale(generation, &owner) {
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
        let mut now: HashMap<PathBuf, Vec<lsp::Diagnostic>> = HashMap::new();
        for (path, version, diagnostics) in files {
            let current = self.documents.get(&path).map(|d| d.version);
            if version.is_some() && current != version {
                continue;
            }
            now.insert(path, diagnostics);
        }
        for file in self.diagnostics.accept(generation, &owner, now, dependencies).unwrap_or_default() {
            self.publish_file(&file)?;
        }
        Ok(())
    }
}
