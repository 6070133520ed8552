//! The diagnostics schedule: which owners (a manifest, an open `SKILL.md` or outbox declaration) must be
//! checked again, the generation of each check in flight, what each owner last published in each file, and the
//! batch shown as progress. [`DiagnosticsSchedule`] is the bookkeeping alone; the `GlobalState` methods below
//! connect it to the workers and the client.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use lsp_types as lsp;
use wb_manifest::Dependencies;

use super::convert;
use super::global_state::{GlobalState, Outgoing, Task, panic_message};
use super::handlers::diagnostics::{self, Computed};
use super::progress::{self, CheckProgress};
use super::snapshot;

/// Per owner: what must be recomputed, the latest generation scheduled, and what it last published.
#[derive(Default)]
pub struct DiagnosticsSchedule {
    dirty: BTreeSet<PathBuf>,
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
    /// Checks scheduled whose result has not come back (stale ones included).
    in_flight: usize,
}

impl DiagnosticsSchedule {
    /// `owner` is to be checked again.
    pub fn mark(&mut self, owner: impl Into<PathBuf>) {
        self.dirty.insert(owner.into());
    }

    pub fn mark_all(&mut self, owners: impl IntoIterator<Item = PathBuf>) {
        self.dirty.extend(owners);
    }

    /// Whether the last check of `manifest` read `path` (a manifest not checked yet may read anything).
    fn may_read(&self, manifest: &Path, path: &Path) -> bool {
        self.dependencies.get(manifest).is_none_or(|read| read.depends_on(path))
    }

    /// The dirty owners, each with the generation of its new check, counted in flight.
    fn take_dirty(&mut self) -> Vec<(PathBuf, u64)> {
        let dirty: Vec<(PathBuf, u64)> = std::mem::take(&mut self.dirty)
            .into_iter()
            .map(|owner| {
                self.next_generation += 1;
                self.generations.insert(owner.clone(), self.next_generation);
                (owner, self.next_generation)
            })
            .collect();
        self.in_flight += dirty.len();
        dirty
    }

    /// A check came back; answers whether it was the last one in flight.
    fn returned(&mut self) -> bool {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.in_flight == 0
    }

    /// Forgets what `owner` published (a result still in flight for it is dropped); answers the files whose
    /// diagnostics must be published again.
    fn forget(&mut self, owner: &Path) -> BTreeSet<PathBuf> {
        self.generations.insert(owner.to_owned(), u64::MAX);
        let files = self.published.remove(owner).unwrap_or_default();
        let mut touched: BTreeSet<PathBuf> = files.into_keys().collect();
        touched.insert(owner.to_owned());
        for file in &touched {
            self.stop_reporting(owner, file);
        }
        touched
    }

    fn stop_reporting(&mut self, owner: &Path, file: &Path) {
        if let Some(owners) = self.reporters.get_mut(file) {
            owners.remove(owner);
            if owners.is_empty() {
                self.reporters.remove(file);
            }
        }
    }

    /// What every owner reports in `file`, in the owners' order, each diagnostic once.
    fn in_file(&self, file: &Path) -> Vec<lsp::Diagnostic> {
        let owners = self.reporters.get(file);
        let mut reports = owners
            .into_iter()
            .flatten()
            .filter_map(|owner| self.published.get(owner).and_then(|files| files.get(file)));
        match (reports.next(), owners.map_or(0, BTreeSet::len)) {
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
        }
    }

    /// Takes a finished check unless a newer one was scheduled for its owner: `now` is what it reports per file
    /// (files whose document changed since already left out). Answers the files to publish again (those it
    /// reports on, then those it no longer does), or `None` for a stale result.
    fn accept(
        &mut self,
        generation: u64,
        owner: &Path,
        now: HashMap<PathBuf, Vec<lsp::Diagnostic>>,
        dependencies: Option<Dependencies>,
    ) -> Option<Vec<PathBuf>> {
        if self.generations.get(owner).is_some_and(|latest| *latest != generation) {
            return None;
        }
        match dependencies {
            Some(dependencies) => self.dependencies.insert(owner.to_owned(), dependencies),
            None => self.dependencies.remove(owner),
        };
        let mut touched: Vec<PathBuf> = now.keys().cloned().collect();
        touched.sort();
        for file in &touched {
            self.reporters.entry(file.clone()).or_default().insert(owner.to_owned());
        }
        let before = self.published.insert(owner.to_owned(), now).unwrap_or_default();
        let mut stale: Vec<PathBuf> = before.into_keys().filter(|file| touched.binary_search(file).is_err()).collect();
        stale.sort();
        for file in &stale {
            self.stop_reporting(owner, file);
        }
        touched.extend(stale);
        Some(touched)
    }

    fn is_stale(&self, generation: u64, owner: &Path) -> bool {
        self.generations.get(owner).is_some_and(|latest| *latest != generation)
    }
}

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
        let owners: Vec<PathBuf> = self
            .documents
            .keys()
            .filter(|p| snapshot::is_skill(p) || snapshot::is_outbox_declaration(p))
            .cloned()
            .collect();
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
        if (snapshot::is_skill(path) || snapshot::is_outbox_declaration(path)) && self.documents.contains_key(path) {
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
            self.diagnostics.dirty.clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(line: u32, message: &str) -> lsp::Diagnostic {
        let at = lsp::Position::new(line, 0);
        lsp::Diagnostic { range: lsp::Range::new(at, at), message: message.to_owned(), ..lsp::Diagnostic::default() }
    }

    fn reports(files: &[(&str, Vec<lsp::Diagnostic>)]) -> HashMap<PathBuf, Vec<lsp::Diagnostic>> {
        files.iter().map(|(file, found)| (PathBuf::from(file), found.clone())).collect()
    }

    #[test]
    fn only_the_latest_generation_of_an_owner_is_taken() {
        let mut schedule = DiagnosticsSchedule::default();
        schedule.mark("/r/a.yml");
        let first = schedule.take_dirty();
        schedule.mark("/r/a.yml");
        let second = schedule.take_dirty();
        assert!(schedule.take_dirty().is_empty(), "marks are taken once");
        let owner = Path::new("/r/a.yml");
        assert!(schedule.accept(first[0].1, owner, reports(&[("/r/a.yml", vec![])]), None).is_none());
        let files = schedule.accept(second[0].1, owner, reports(&[("/r/a.yml", vec![diagnostic(1, "x")])]), None);
        assert_eq!(files, Some(vec![PathBuf::from("/r/a.yml")]));
        assert_eq!(schedule.in_file(owner).len(), 1);
    }

    #[test]
    fn a_file_shows_what_every_owner_reports_once_and_a_dropped_file_is_cleared() {
        let mut schedule = DiagnosticsSchedule::default();
        schedule.mark_all([PathBuf::from("/r/a.yml"), PathBuf::from("/r/b.yml")]);
        let generations: HashMap<PathBuf, u64> = schedule.take_dirty().into_iter().collect();
        let shared = vec![diagnostic(1, "shared"), diagnostic(2, "a only")];
        let a = Path::new("/r/a.yml");
        let b = Path::new("/r/b.yml");
        schedule.accept(generations[a], a, reports(&[("/r/a.yml", vec![]), ("/r/i.md", shared)]), None);
        schedule.accept(
            generations[b],
            b,
            reports(&[("/r/i.md", vec![diagnostic(1, "shared"), diagnostic(3, "b")])]),
            None,
        );
        let messages: Vec<String> = schedule.in_file(Path::new("/r/i.md")).into_iter().map(|d| d.message).collect();
        assert_eq!(messages, ["shared", "a only", "b"]);

        // `a` no longer reports in `i.md`: the file is published again with `b`'s alone.
        schedule.mark(a);
        let again = schedule.take_dirty()[0].1;
        let files = schedule.accept(again, a, reports(&[("/r/a.yml", vec![])]), None);
        assert_eq!(files, Some(vec![PathBuf::from("/r/a.yml"), PathBuf::from("/r/i.md")]));
        let messages: Vec<String> = schedule.in_file(Path::new("/r/i.md")).into_iter().map(|d| d.message).collect();
        assert_eq!(messages, ["shared", "b"]);

        // Forgetting `b` empties the file and drops a result still in flight for it.
        schedule.mark(b);
        let in_flight = schedule.take_dirty()[0].1;
        let touched = schedule.forget(b);
        assert!(touched.contains(Path::new("/r/i.md")) && touched.contains(b), "{touched:?}");
        assert!(schedule.in_file(Path::new("/r/i.md")).is_empty());
        assert!(schedule.is_stale(in_flight, b));
    }
}
