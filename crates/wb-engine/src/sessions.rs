//! What a session keeps beside its run, in the run's private directory (its names: `runs::layout`):
//! - `inbox/`: the turns `send` queued, each written whole (a temporary name, then a rename) and taken oldest
//!   first by the session's owner, which removes it as it starts the turn. The task is never logged: the turn's
//!   `turn.started` names the input by its id.
//! - `options.json`: what the session was started with ([`crate::Kept`]: without its task or `--env` values;
//!   `resume` takes them again), so `resume` can start it again.
//! - `conversation/`: the runner's conversation after each turn (its id, and the store a runner keeps in the
//!   stage directory), which a resumed session carries on.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::EngineError;
use crate::runs::RunDir;
use crate::runs::layout::{self, read_bounded};

/// The largest queued turn read (the task and its id).
const QUEUED_LIMIT: u64 = 16 * 1024 * 1024;
/// How often an idle session looks at its inbox.
const POLL: Duration = Duration::from_millis(50);

/// The conversation id's file in its directory.
const CONVERSATION_ID_FILE: &str = "id";

/// One queued turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    /// `in_` and hex digits: what `turn.started` names, so whoever queued it can follow its turn.
    pub input_id: String,
    pub task: String,
}

fn inbox(home: &Path, run_id: &str) -> PathBuf {
    RunDir::new(home, run_id).inbox()
}

/// Queues a turn for session `run_id`; returns its input id. The file's name orders it after every turn queued
/// before (the time, then a random part).
pub fn queue(home: &Path, run_id: &str, task: &str) -> std::io::Result<String> {
    let dir = inbox(home, run_id);
    wb_outcomes::create_private_dir(&dir)?;
    let input_id = format!("in_{}", wb_outcomes::random_hex(10));
    let queued = Queued { input_id: input_id.clone(), task: task.to_owned() };
    let bytes = serde_json::to_vec(&queued).map_err(std::io::Error::other)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let path = dir.join(format!("{nanos:024}-{input_id}.json"));
    layout::write_private(&path, &bytes)?;
    Ok(input_id)
}

/// Takes the oldest queued turn out of the inbox; `None` when it is empty. A file that cannot be read as a
/// queued turn is removed and said as an error.
pub fn take(home: &Path, run_id: &str) -> std::io::Result<Option<Queued>> {
    let dir = inbox(home, run_id);
    let names = match queued_names(&dir) {
        Ok(names) => names,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let Some(name) = names.first() else { return Ok(None) };
    let path = dir.join(name);
    let read = read_queued(&path);
    fs::remove_file(&path)?;
    read.map(Some)
}

/// The input ids of the turns queued in `inbox` (a session's `RunDir::inbox`), oldest first, without taking them.
pub fn queued_ids(inbox: &Path) -> Vec<String> {
    queued_names(inbox)
        .unwrap_or_default()
        .iter()
        .filter_map(|name| name.trim_end_matches(".json").split_once('-').map(|(_, id)| id.to_owned()))
        .collect()
}

/// The file names of the turns queued in `inbox`, oldest first (the names order them).
fn queued_names(inbox: &Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = fs::read_dir(inbox)?
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
        .collect();
    names.sort();
    Ok(names)
}

fn read_queued(path: &Path) -> std::io::Result<Queued> {
    let bytes = read_bounded(path, QUEUED_LIMIT)?;
    serde_json::from_slice(&bytes)
        .map_err(|error| std::io::Error::other(format!("{} is not a queued turn: {error}", path.display())))
}

/// What an idle session waited for.
#[derive(Debug)]
pub enum Waited {
    /// The next turn.
    Turn(Queued),
    /// The session was ended (`kill`, a limit) while idle.
    Ended,
    /// Nothing came for the idle timeout.
    IdleTimeout,
    /// The inbox could not be read.
    Failed(String),
}

/// Waits for the next queued turn, the cancel flag, or `idle` to pass.
pub fn wait_for_turn(home: &Path, run_id: &str, cancel: &AtomicBool, idle: Duration) -> Waited {
    let since = Instant::now();
    loop {
        if cancel.load(Ordering::SeqCst) {
            return Waited::Ended;
        }
        match take(home, run_id) {
            Ok(Some(queued)) => return Waited::Turn(queued),
            Ok(None) => {}
            Err(error) => return Waited::Failed(format!("Cannot read the session's inbox: {error}")),
        }
        if since.elapsed() >= idle {
            return Waited::IdleTimeout;
        }
        std::thread::sleep(POLL);
    }
}

/// Keeps what a session (or a remote run, for its adoption) was started with: what [`crate::Kept`] holds of
/// its request, never the task or a value.
pub fn save_options(home: &Path, run_id: &str, request: &crate::Request, mode: &crate::RunMode) -> std::io::Result<()> {
    RunDir::new(home, run_id).write(layout::OPTIONS, &crate::Kept::of(request, mode), true)
}

/// What [`save_options`] kept.
pub fn load_options(home: &Path, run_id: &str) -> std::io::Result<crate::Kept> {
    RunDir::new(home, run_id).read(layout::OPTIONS)
}

/// Keeps the runner's conversation after a turn: its id, and `store` (a directory of the stage directory
/// `stage`, replaced whole).
pub fn save_conversation(
    home: &Path,
    run_id: &str,
    id: Option<&str>,
    stage: &Path,
    store: Option<&str>,
) -> std::io::Result<()> {
    let dir = RunDir::new(home, run_id).conversation();
    wb_outcomes::create_private_dir(&dir)?;
    if let Some(id) = id {
        layout::write_private(&dir.join(CONVERSATION_ID_FILE), id.as_bytes())?;
    }
    if let Some(store) = store {
        let source = stage.join(store);
        if fs::symlink_metadata(&source).is_ok_and(|meta| meta.is_dir()) {
            let kept = dir.join(store);
            let fresh = dir.join(format!(".{store}.new"));
            let _ = fs::remove_dir_all(&fresh);
            copy_tree(&source, &fresh)?;
            let _ = fs::remove_dir_all(&kept);
            fs::rename(&fresh, &kept)?;
        }
    }
    Ok(())
}

/// Puts session `from`'s kept conversation store into `stage`; returns the conversation's id (when one was
/// kept).
pub fn restore_conversation(
    home: &Path,
    from: &str,
    stage: &Path,
    store: Option<&str>,
) -> std::io::Result<Option<String>> {
    let dir = RunDir::new(home, from).conversation();
    if let Some(store) = store {
        let kept = dir.join(store);
        if fs::symlink_metadata(&kept).is_ok_and(|meta| meta.is_dir()) {
            copy_tree(&kept, &stage.join(store))?;
        }
    }
    match read_bounded(&dir.join(CONVERSATION_ID_FILE), 4096) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_owned()).filter(|id| !id.is_empty())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Copies a conversation store: the engine's tree copy, bounded by the store itself (a link out of it is refused).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    crate::adapters::package_files::copy_tree(from, from, to, crate::adapters::package_files::Links::FollowInside)
}

/// Seeds a resumed session's new outbox: the latest retained revision of each file the sessions `chain`
/// returned (their turn snapshots and final outcomes), as a working copy. Returns the paths written.
pub fn seed_outbox(home: &Path, chain: &[String], outbox: &Path) -> crate::Result<Vec<String>> {
    let store = wb_outcomes::ContentStore::open(home).map_err(EngineError::Store)?;
    let mut written = std::collections::BTreeSet::new();
    // Newest first: the first revision of a path seen is its latest.
    for listed in wb_outcomes::list_outcomes(home) {
        if !chain.contains(&listed.outcome.run_id) {
            continue;
        }
        for artifact in &listed.outcome.artifacts {
            let Some(path) = &artifact.path else { continue };
            if wb_manifest::outbox_declaration::unsafe_path_reason(path).is_some() || !written.insert(path.clone()) {
                continue;
            }
            let target = outbox.join(path);
            if let Some(parent) = target.parent() {
                wb_outcomes::create_private_dir(parent)
                    .map_err(|e| EngineError::io(format!("Cannot seed the outbox with {path}"), e))?;
            }
            let bytes = store.read(&artifact.content.digest).map_err(EngineError::Store)?;
            wb_outcomes::write_atomic(&target, &bytes, wb_outcomes::FileMode::Exactly(0o600))
                .map_err(|e| EngineError::io(format!("Cannot seed the outbox with {path}"), e))?;
        }
    }
    Ok(written.into_iter().collect())
}

/// Session `from` and the sessions it resumed, newest first (as their records say; at most 1,000, and never one
/// twice).
pub fn chain(home: &Path, from: &str) -> Vec<String> {
    let mut chain = vec![from.to_owned()];
    while chain.len() < 1000 {
        let Some(last) = chain.last() else { break };
        let earlier = crate::runs::read_record(home, last).ok().and_then(|record| record.resumed_from);
        match earlier {
            Some(earlier) if !chain.contains(&earlier) => chain.push(earlier),
            _ => break,
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn turns_are_taken_in_the_order_they_were_queued_and_once() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(RunDir::new(home.path(), "wb_x").path()).unwrap();
        assert_eq!(take(home.path(), "wb_x").unwrap(), None);
        let first = queue(home.path(), "wb_x", "one").unwrap();
        let second = queue(home.path(), "wb_x", "two").unwrap();
        let taken = take(home.path(), "wb_x").unwrap().unwrap();
        assert_eq!((taken.input_id, taken.task.as_str()), (first, "one"));
        let taken = take(home.path(), "wb_x").unwrap().unwrap();
        assert_eq!((taken.input_id, taken.task.as_str()), (second, "two"));
        assert_eq!(take(home.path(), "wb_x").unwrap(), None);
    }

    #[test]
    fn a_damaged_entry_is_removed_and_said() {
        let home = tempfile::tempdir().unwrap();
        let dir = inbox(home.path(), "wb_x");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("1-in_bad.json"), "not json").unwrap();
        assert!(take(home.path(), "wb_x").is_err());
        assert_eq!(take(home.path(), "wb_x").unwrap(), None);
    }

    #[test]
    fn waiting_ends_on_cancel_and_after_the_idle_time() {
        let home = tempfile::tempdir().unwrap();
        let cancel = AtomicBool::new(true);
        assert!(matches!(wait_for_turn(home.path(), "wb_x", &cancel, Duration::from_secs(60)), Waited::Ended));
        cancel.store(false, Ordering::SeqCst);
        assert!(matches!(wait_for_turn(home.path(), "wb_x", &cancel, Duration::ZERO), Waited::IdleTimeout));
        std::fs::create_dir_all(RunDir::new(home.path(), "wb_x").path()).unwrap();
        queue(home.path(), "wb_x", "next").unwrap();
        assert!(
            matches!(wait_for_turn(home.path(), "wb_x", &cancel, Duration::ZERO), Waited::Turn(q) if q.task == "next")
        );
    }
}
