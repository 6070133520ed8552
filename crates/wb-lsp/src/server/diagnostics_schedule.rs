//! The diagnostics schedule: which owners (a manifest, an open `SKILL.md` or outbox declaration) must be
//! checked again, the generation of each check in flight, what each owner last published in each file, and the
//! batch shown as progress. The bookkeeping alone: `publication.rs` connects it to the workers and the client.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use lsp_types as lsp;
use wb_manifest::Dependencies;

use super::progress::CheckProgress;

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
    pub(super) fn may_read(&self, manifest: &Path, path: &Path) -> bool {
        self.dependencies.get(manifest).is_none_or(|read| read.depends_on(path))
    }

    /// The dirty owners, each with the generation of its new check, counted in flight.
    pub(super) fn take_dirty(&mut self) -> Vec<(PathBuf, u64)> {
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
    pub(super) fn returned(&mut self) -> bool {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.in_flight == 0
    }

    /// Forgets what `owner` published (a result still in flight for it is dropped); answers the files whose
    /// diagnostics must be published again.
    pub(super) fn forget(&mut self, owner: &Path) -> BTreeSet<PathBuf> {
        self.generations.insert(owner.to_owned(), u64::MAX);
        let files = self.published.remove(owner).unwrap_or_default();
        let mut touched: BTreeSet<PathBuf> = files.into_keys().collect();
        touched.insert(owner.to_owned());
        for file in &touched {
            self.stop_reporting(owner, file);
        }
        touched
    }

    pub(super) fn stop_reporting(&mut self, owner: &Path, file: &Path) {
        if let Some(owners) = self.reporters.get_mut(file) {
            owners.remove(owner);
            if owners.is_empty() {
                self.reporters.remove(file);
            }
        }
    }

    /// What every owner reports in `file`, in the owners' order, each diagnostic once.
    pub(super) fn in_file(&self, file: &Path) -> Vec<lsp::Diagnostic> {
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
    pub(super) fn accept(
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

    /// Drops every mark (a pull client asks for diagnostics itself).
    pub(super) fn clear_dirty(&mut self) {
        self.dirty.clear();
    }

    /// The batch shown as progress, while there is one.
    pub(super) fn progress(&mut self) -> &mut Option<CheckProgress> {
        &mut self.progress
    }

    /// A number no generation has: names a progress token.
    pub(super) fn next_number(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }

    pub(super) fn is_stale(&self, generation: u64, owner: &Path) -> bool {
        self.generations.get(owner).is_some_and(|latest| *latest != generation)
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
