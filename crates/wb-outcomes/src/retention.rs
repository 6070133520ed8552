//! Retention (`wb-lsp clean`, the reference's `wb clean`): which runs (`runs/<id>/`), outcomes
//! (`outcomes/<id>/`) and content blobs of a Workbench home are older than a cutoff and may go, and removing
//! them. An outcome with an interrupted application (a recovery journal under `transactions/`, or a held
//! lease) is never removed: it is kept and reported. A blob goes only when no remaining outcome references it
//! and it is itself older than the cutoff.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::apply::{Faults, Lease, lease_is_held};
use crate::error::{Error, Result, io};
use crate::manifest::{Fingerprint, Outcome, State};
use crate::store::list_outcomes;

/// A run directory old enough to go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OldRun {
    pub id: String,
    /// When anything in it last changed (RFC 3339, UTC).
    pub modified_at: String,
    pub bytes: u64,
}

/// An outcome old enough to go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OldOutcome {
    pub id: String,
    pub run_id: String,
    pub created_at: String,
    pub application_state: String,
    pub bytes: u64,
}

/// An old outcome or run that stays, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Kept {
    pub id: String,
    pub reason: String,
}

/// Blobs no remaining outcome references.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OldBlobs {
    pub count: usize,
    pub bytes: u64,
}

/// What a clean removes (a preview) or removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Cleaning {
    pub runs: Vec<OldRun>,
    pub outcomes: Vec<OldOutcome>,
    pub blobs: OldBlobs,
    /// Old outcomes with an interrupted application and runs still going on, never removed.
    pub kept: Vec<Kept>,
}

impl Cleaning {
    /// Bytes freed (or to be freed).
    pub fn bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.bytes).sum::<u64>()
            + self.outcomes.iter().map(|o| o.bytes).sum::<u64>()
            + self.blobs.bytes
    }
}

const INTERRUPTED: &str = "interrupted application (run wb-lsp outcome ID --recover)";
const BUSY: &str = "being applied";
const ACTIVE: &str = "the run is still going on";

/// What a clean of `home` would remove: everything last changed more than `older_than` ago, except the runs
/// named in `active` (a quiet run goes on however old its files are).
pub fn preview(home: &Path, older_than: std::time::Duration, active: &HashSet<String>) -> Cleaning {
    preview_before(home, cutoff(older_than), active)
}

fn cutoff(older_than: std::time::Duration) -> jiff::Timestamp {
    let older_than = jiff::SignedDuration::try_from(older_than).unwrap_or(jiff::SignedDuration::MAX);
    jiff::Timestamp::now().checked_sub(older_than).unwrap_or(jiff::Timestamp::MIN)
}

fn preview_before(home: &Path, cutoff: jiff::Timestamp, active: &HashSet<String>) -> Cleaning {
    let (runs, going_on): (Vec<OldRun>, Vec<OldRun>) =
        old_runs(home, cutoff).into_iter().partition(|run| !active.contains(&run.id));
    let kept = going_on.into_iter().map(|run| Kept { id: run.id, reason: ACTIVE.to_owned() }).collect();
    let mut cleaning = Cleaning { runs, kept, ..Cleaning::default() };
    let mut removed = HashSet::new();
    for listed in list_outcomes(home) {
        let outcome = &listed.outcome;
        let created = outcome.created_at.parse::<jiff::Timestamp>().ok();
        if created.is_none_or(|created| created >= cutoff) {
            continue;
        }
        let dir = home.join("outcomes").join(&outcome.id);
        if let Some(reason) = interrupted(&dir) {
            cleaning.kept.push(Kept { id: outcome.id.clone(), reason: reason.to_owned() });
            continue;
        }
        removed.insert(outcome.id.clone());
        cleaning.outcomes.push(OldOutcome {
            id: outcome.id.clone(),
            run_id: outcome.run_id.clone(),
            created_at: outcome.created_at.clone(),
            application_state: listed.application_state.clone(),
            bytes: tree_usage(&dir).0,
        });
    }
    let (count, bytes) =
        old_blobs(home, cutoff, &removed).iter().fold((0, 0), |(count, bytes), (_, size)| (count + 1, bytes + size));
    cleaning.blobs = OldBlobs { count, bytes };
    cleaning
}

/// Removes what [`preview`] finds, each outcome under its lease (an outcome whose application is interrupted
/// or in progress meanwhile stays, and is reported as kept), then the blobs no remaining outcome references.
pub fn clean(home: &Path, older_than: std::time::Duration, active: &HashSet<String>) -> Result<Cleaning> {
    let cutoff = cutoff(older_than);
    let planned = preview_before(home, cutoff, active);
    let mut done = Cleaning { kept: planned.kept, ..Cleaning::default() };
    for outcome in planned.outcomes {
        let dir = home.join("outcomes").join(&outcome.id);
        let lease = match Lease::take(&dir, &outcome.id, Faults::default()) {
            Ok(lease) => lease,
            Err(Error::Busy(_)) => {
                done.kept.push(Kept { id: outcome.id, reason: BUSY.to_owned() });
                continue;
            }
            Err(error) => return Err(error),
        };
        if interrupted_journal(&dir) {
            done.kept.push(Kept { id: outcome.id, reason: INTERRUPTED.to_owned() });
            continue;
        }
        fs::remove_dir_all(&dir).map_err(io(format!("Cannot remove {}", dir.display())))?;
        drop(lease);
        done.outcomes.push(outcome);
    }
    for run in planned.runs {
        let dir = crate::runs_dir(home).join(&run.id);
        fs::remove_dir_all(&dir).map_err(io(format!("Cannot remove {}", dir.display())))?;
        done.runs.push(run);
    }
    // Referenced by what remains now (not by the preview's guess).
    for (path, size) in old_blobs(home, cutoff, &HashSet::new()) {
        if fs::remove_file(&path).is_ok() {
            done.blobs.count += 1;
            done.blobs.bytes += size;
        }
    }
    Ok(done)
}

/// Why an outcome must stay: a recovery journal, or a held lease.
fn interrupted(dir: &Path) -> Option<&'static str> {
    if interrupted_journal(dir) {
        Some(INTERRUPTED)
    } else if lease_is_held(dir) {
        Some(BUSY)
    } else {
        None
    }
}

/// Whether `transactions/` holds anything (a journal, or a transaction killed before its journal).
fn interrupted_journal(dir: &Path) -> bool {
    fs::read_dir(dir.join("transactions")).is_ok_and(|mut entries| entries.next().is_some())
}

/// The run directories (`runs/wb_*`) in which nothing changed since `cutoff`, oldest first.
fn old_runs(home: &Path, cutoff: jiff::Timestamp) -> Vec<OldRun> {
    let Ok(entries) = fs::read_dir(crate::runs_dir(home)) else { return Vec::new() };
    let mut runs: Vec<(i64, OldRun)> = entries
        .flatten()
        .filter_map(|entry| {
            let id = entry.file_name().to_str()?.to_owned();
            let meta = fs::symlink_metadata(entry.path()).ok()?;
            if !id.starts_with("wb_") || !meta.is_dir() {
                return None;
            }
            let (bytes, newest) = tree_usage(&entry.path());
            let modified = jiff::Timestamp::from_second(newest).ok()?;
            (modified < cutoff).then(|| (newest, OldRun { id, modified_at: modified.to_string(), bytes }))
        })
        .collect();
    runs.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
    runs.into_iter().map(|(_, run)| run).collect()
}

/// The bytes of the files below `dir` and the newest modification time (seconds) of anything there, without
/// following symlinks (an iterative walk).
fn tree_usage(dir: &Path) -> (u64, i64) {
    let mut bytes = 0;
    let mut newest = fs::symlink_metadata(dir).map(|m| m.mtime()).unwrap_or(0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = fs::symlink_metadata(entry.path()) else { continue };
            newest = newest.max(meta.mtime());
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                bytes += meta.len();
            }
        }
    }
    (bytes, newest)
}

/// Every content digest an outcome references: after states, before fingerprints, reviews and artifacts.
fn referenced(outcome: &Outcome, into: &mut HashSet<String>) {
    for changeset in &outcome.changesets {
        for entry in &changeset.entries {
            if let Some(State::File { content, .. }) = entry.after() {
                into.insert(content.digest.clone());
            }
            if let Some(Fingerprint::File { digest, .. }) = entry.before() {
                into.insert(digest.clone());
            }
        }
        if let Some(review) = &changeset.review {
            into.insert(review.digest.clone());
        }
    }
    for artifact in &outcome.artifacts {
        into.insert(artifact.content.digest.clone());
    }
}

/// The blobs (path, size) older than `cutoff` that no outcome outside `removed` references. None at all when
/// some outcome directory cannot be read: its references are unknown.
fn old_blobs(home: &Path, cutoff: jiff::Timestamp, removed: &HashSet<String>) -> Vec<(PathBuf, u64)> {
    let listed = list_outcomes(home);
    let directories = fs::read_dir(home.join("outcomes")).map(|entries| entries.flatten().count()).unwrap_or(0);
    if directories != listed.len() {
        return Vec::new();
    }
    let mut keep = HashSet::new();
    for outcome in listed.iter().map(|l| &l.outcome).filter(|o| !removed.contains(&o.id)) {
        referenced(outcome, &mut keep);
    }
    let mut old = Vec::new();
    let Ok(prefixes) = fs::read_dir(home.join("blobs").join("sha256")) else { return old };
    for prefix in prefixes.flatten() {
        let prefix_name = prefix.file_name().to_string_lossy().into_owned();
        let Ok(files) = fs::read_dir(prefix.path()) else { continue };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let Ok(meta) = fs::symlink_metadata(file.path()) else { continue };
            let digest = format!("sha256:{prefix_name}{name}");
            let modified = jiff::Timestamp::from_second(meta.mtime()).ok();
            let old_enough = modified.is_some_and(|m| m < cutoff);
            if meta.is_file() && !name.starts_with('.') && old_enough && !keep.contains(&digest) {
                old.push((file.path(), meta.len()));
            }
        }
    }
    old.sort();
    old
}

/// The bytes the content store of `home` holds and its quota (`wb-lsp doctor`). Reads only.
pub fn store_usage(home: &Path) -> (u64, u64) {
    (tree_usage(&home.join("blobs").join("sha256")).0, crate::store::Limits::default().total)
}

/// A warning when the content store of `home` is near its quota (every later run fails once it is full).
/// Reads only.
pub fn quota_warning(home: &Path) -> Option<String> {
    let (bytes, _) = tree_usage(&home.join("blobs").join("sha256"));
    quota_warning_for(bytes, crate::store::Limits::default().total)
}

/// [`quota_warning`] for a store of `bytes` and a quota: from 80% of the quota on.
fn quota_warning_for(bytes: u64, quota: u64) -> Option<String> {
    (bytes.saturating_mul(5) >= quota.saturating_mul(4)).then(|| {
        format!(
            "The outcome store holds {} of its {} quota: once it is full, every run fails. \
             Review wb-lsp clean (--apply removes what is older than 30 days)",
            human_size(bytes),
            human_size(quota)
        )
    })
}

/// Bytes as a person reads them (`512 B`, `1.5 KiB`, `5.0 GiB`).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_quota_warning_starts_at_80_percent() {
        const GIB: u64 = 1024 * 1024 * 1024;
        assert_eq!(quota_warning_for(4 * GIB - 1, 5 * GIB), None);
        assert_eq!(
            quota_warning_for(4 * GIB, 5 * GIB).unwrap(),
            "The outcome store holds 4.0 GiB of its 5.0 GiB quota: once it is full, every run fails. \
             Review wb-lsp clean (--apply removes what is older than 30 days)"
        );
        assert!(quota_warning_for(6 * GIB, 5 * GIB).is_some());
        assert_eq!(quota_warning(Path::new("/nonexistent/home")), None);
        assert_eq!(
            (human_size(0), human_size(1023), human_size(1536)),
            ("0 B".into(), "1023 B".into(), "1.5 KiB".into())
        );
    }
}
