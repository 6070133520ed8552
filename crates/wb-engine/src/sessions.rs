//! A session's inbox: the turns `send` queued for a session, as files in `runs/<id>/inbox/` (the run's private
//! directory), each written whole (a temporary name, then a rename) and taken oldest first by the session's
//! owner, which removes it as it starts the turn. The task is never logged: the turn's `turn.started` names the
//! input by its id.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::runs::run_dir;

/// The inbox's directory name in a run's directory.
pub const INBOX_DIR: &str = "inbox";
/// The largest queued turn read (the task and its id).
const QUEUED_LIMIT: u64 = 16 * 1024 * 1024;
/// How often an idle session looks at its inbox.
const POLL: Duration = Duration::from_millis(50);

/// One queued turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    /// `in_` and hex digits: what `turn.started` names, so whoever queued it can follow its turn.
    pub input_id: String,
    pub task: String,
}

fn inbox(home: &Path, run_id: &str) -> PathBuf {
    run_dir(home, run_id).join(INBOX_DIR)
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
    wb_outcomes::write_atomic(&path, &bytes, wb_outcomes::FileMode::Exactly(0o600))?;
    Ok(input_id)
}

/// Takes the oldest queued turn out of the inbox; `None` when it is empty. A file that cannot be read as a
/// queued turn is removed and said as an error.
pub fn take(home: &Path, run_id: &str) -> std::io::Result<Option<Queued>> {
    let dir = inbox(home, run_id);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
        .collect();
    names.sort();
    let Some(name) = names.first() else { return Ok(None) };
    let path = dir.join(name);
    let read = read_queued(&path);
    fs::remove_file(&path)?;
    read.map(Some)
}

fn read_queued(path: &Path) -> std::io::Result<Queued> {
    let file = fs::OpenOptions::new().read(true).custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits()).open(path)?;
    let mut bytes = Vec::new();
    file.take(QUEUED_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > QUEUED_LIMIT {
        return Err(std::io::Error::other(format!("a queued turn is larger than {QUEUED_LIMIT} bytes")));
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn turns_are_taken_in_the_order_they_were_queued_and_once() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(run_dir(home.path(), "wb_x")).unwrap();
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
        std::fs::create_dir_all(run_dir(home.path(), "wb_x")).unwrap();
        queue(home.path(), "wb_x", "next").unwrap();
        assert!(matches!(wait_for_turn(home.path(), "wb_x", &cancel, Duration::ZERO), Waited::Turn(q) if q.task == "next"));
    }
}
