//! Batches, the scheduler's second user: one task per line of a JSON Lines file, each on its own repository
//! (`{"dir": PATH}`, run in place, or `{"git": URL, "ref": REF}`, cloned into the job), each a detached
//! supervised run with the same admission, waiting out a full service, resume and spend cap as a trial's
//! attempts. An item has no gates: its verdict is its run's end (`works` when it completed, `failed` when it
//! failed, `inconclusive` when it hit `--max-duration`, `infra_error` when it could not start).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::attempts::{AttemptRun, Launcher, launch, poll_launched};
use super::fixture::clone_into;
pub use super::job::BatchItem;
use super::job::{AttemptKey, GateResult, Job};
use super::schedule::{Attempts, GradeError, NotStarted, Poll, RunEnd};

/// The most items a batch file holds.
pub const MAX_ITEMS: usize = 10_000;
/// The largest batch file read.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;
/// The arm every item of a batch is in.
pub const BATCH_ARM: &str = "batch";

/// A batch file that cannot be run, with the line at fault.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("{}:{line}: {message}", path.display())]
    Line { path: PathBuf, line: usize, message: String },
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
}

/// Reads a batch file: every item checked (its repository named once, a `dir` that exists, a task), made
/// absolute against the file's directory, with its id.
pub fn parse_items(path: &Path, text: &str) -> Result<Vec<(String, BatchItem)>, BatchError> {
    let file_error = |message: String| BatchError::File { path: path.to_owned(), message };
    if text.len() > MAX_BATCH_BYTES {
        return Err(file_error(format!("{} bytes, over the limit of 16 MiB", text.len())));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let mut items = Vec::new();
    let (mut ids, mut dirs) = (BTreeSet::new(), BTreeSet::new());
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let error = |message: String| BatchError::Line { path: path.to_owned(), line: number, message };
        if line.trim().is_empty() {
            continue;
        }
        let mut item: BatchItem = serde_json::from_str(line).map_err(|e| error(e.to_string()))?;
        let id = item.id.clone().unwrap_or_else(|| format!("line-{number}"));
        let id_ok = !id.is_empty()
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !id_ok {
            return Err(error(format!("id {id:?} must be 1 to 64 letters, digits, `.`, `_` or `-`")));
        }
        if !ids.insert(id.clone()) {
            return Err(error(format!("id {id} is given to two items")));
        }
        if item.task.trim().is_empty() {
            return Err(error("task must not be empty".to_owned()));
        }
        match (&item.dir, &item.git) {
            (Some(dir), None) => {
                if item.reference.is_some() {
                    return Err(error("ref goes with git, not dir".to_owned()));
                }
                let dir = wb_manifest::absolute(dir, base);
                let real = dir.canonicalize().map_err(|e| error(format!("dir {}: {e}", dir.display())))?;
                if !real.is_dir() {
                    return Err(error(format!("dir {} is not a directory", dir.display())));
                }
                if !dirs.insert(real.clone()) {
                    return Err(error(format!(
                        "dir {} is in two items: their runs would edit it at once",
                        dir.display()
                    )));
                }
                item.dir = Some(real);
            }
            (None, Some(url)) if url.starts_with('-') || url.is_empty() => {
                return Err(error(format!("git {url:?} is not a repository")));
            }
            (None, Some(_)) => {}
            _ => return Err(error("an item names its repository once: dir or git".to_owned())),
        }
        items.push((id, item));
        if items.len() > MAX_ITEMS {
            return Err(file_error(format!("more than {MAX_ITEMS} items")));
        }
    }
    if items.is_empty() {
        return Err(file_error("no item: one JSON object a line, {\"dir\" | \"git\", \"task\"}".to_owned()));
    }
    Ok(items)
}

/// A batch's items run through `launcher`.
pub struct BatchAttempts<'a> {
    home: PathBuf,
    job: Job,
    launcher: &'a mut dyn Launcher,
}

impl<'a> BatchAttempts<'a> {
    pub fn new(home: &Path, job: &Job, launcher: &'a mut dyn Launcher) -> BatchAttempts<'a> {
        BatchAttempts { home: home.to_owned(), job: job.clone(), launcher }
    }
}

impl Attempts for BatchAttempts<'_> {
    fn start(&mut self, key: &AttemptKey, run_id: &str) -> Result<(), NotStarted> {
        let item = self.job.items.get(&key.task).ok_or_else(|| NotStarted::Infra(format!("no item {}", key.task)))?;
        let dir = self.job.attempt_dir(&self.home, key).ok_or_else(|| NotStarted::Infra("not an item".to_owned()))?;
        let workspace = match (&item.dir, &item.git) {
            (Some(dir), _) => dir.clone(),
            (None, Some(url)) => {
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| NotStarted::Infra(format!("cannot create {}: {e}", dir.display())))?;
                let work = dir.join("work");
                clone_into(url, item.reference.as_deref().unwrap_or("HEAD"), &work)
                    .map_err(|e| NotStarted::Infra(e.to_string()))?;
                work
            }
            (None, None) => return Err(NotStarted::Infra(format!("item {} names no repository", key.task))),
        };
        let source = match (&item.workbench, self.job.arm_sources.get(BATCH_ARM)) {
            (Some(selector), _) if selector.starts_with('#') => format!("{}{selector}", workspace.display()),
            (Some(source), _) => wb_manifest::absolute(Path::new(source), &workspace).display().to_string(),
            (None, Some(arm)) => arm.manifest.display().to_string(),
            (None, None) => workspace.display().to_string(),
        };
        let max_duration = self.job.max_duration_secs.map(Duration::from_secs);
        let attempt = AttemptRun { source, workspace, bare: false, max_duration };
        launch(self.launcher, &self.home, &self.job, attempt, &item.task, run_id)
    }

    fn poll(&mut self, run_id: &str) -> Poll {
        poll_launched(self.launcher, &self.home, &self.job, run_id)
    }

    /// No gates: the run's own end, as one result named `run`. A clone is removed (the outcome holds the work).
    fn grade(&mut self, key: &AttemptKey, end: &RunEnd) -> Result<Vec<GateResult>, GradeError> {
        if let Some(dir) = self.job.attempt_dir(&self.home, key) {
            let _ = std::fs::remove_dir_all(dir.join("work"));
        }
        Ok(vec![GateResult {
            id: "run".to_owned(),
            exit_code: Some(i32::from(end.failure.is_some())),
            duration_ms: end.duration_ms.unwrap_or(0),
            timed_out: false,
            log: end.failure.clone().unwrap_or_default(),
        }])
    }

    fn cancel(&mut self, run_id: &str) {
        self.launcher.cancel(run_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_file_is_read_line_by_line_and_a_bad_line_is_named() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        std::fs::create_dir_all(temp.path().join("a"))?;
        let file = temp.path().join("items.jsonl");
        let text = "{\"dir\": \"a\", \"task\": \"do a\"}\n\n{\"id\": \"b\", \"git\": \"https://example.com/b.git\", \"ref\": \"v1\", \"task\": \"do b\"}\n";
        let items = parse_items(&file, text).map_err(std::io::Error::other)?;
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].0, "line-1");
        assert_eq!(items[0].1.dir.as_deref(), Some(temp.path().canonicalize()?.join("a").as_path()));
        assert_eq!(items[1].0, "b");
        for (bad, line, what) in [
            ("{\"dir\": \"a\", \"task\": \"x\"}\n{\"dir\": \"a\", \"task\": \"y\"}", 2, "two items"),
            ("{\"dir\": \"missing\", \"task\": \"x\"}", 1, "missing"),
            ("{\"git\": \"u\", \"dir\": \"a\", \"task\": \"x\"}", 1, "once"),
            ("{\"dir\": \"a\", \"task\": \" \"}", 1, "empty"),
            ("{\"dir\": \"a\", \"task\": \"x\", \"colour\": 1}", 1, "unknown field"),
            ("{\"id\": \"../x\", \"dir\": \"a\", \"task\": \"x\"}", 1, "letters"),
            ("not json", 1, "expected"),
        ] {
            match parse_items(&file, bad) {
                Err(BatchError::Line { line: at, message, .. }) => {
                    assert_eq!(at, line, "{bad}: {message}");
                    assert!(message.contains(what), "{bad}: {message}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(parse_items(&file, "\n"), Err(BatchError::File { .. })));
        Ok(())
    }
}
