//! The one owner of a run's directory, `$WORKBENCH_HOME/runs/<run-id>/`: every file and directory in it is
//! named here ([`RunDir`], [`RunFile`]), with the bounded readers and private writers of its files. What each
//! file holds is its user's: `runs` (the log, the record, the result), `sessions` (the inbox, the options, the
//! conversation), `leftovers` (the local runner), `runtime::remote::adopt` (a remote run's attachment), the
//! lifecycle (the outbox). Adding a file is one [`RunFile`] here plus its uses.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A JSON file of a run's directory: its name, the most a reader takes of it, and what it is (for errors).
#[derive(Clone, Copy, Debug)]
pub struct RunFile {
    pub name: &'static str,
    pub limit: u64,
    pub what: &'static str,
}

/// `run.json`: the run's record (a few hundred bytes).
pub const RECORD: RunFile = RunFile { name: "run.json", limit: 64 * 1024, what: "a run record" };
/// `result.json`: what the finished run returned (the final answer is in it).
pub const RESULT: RunFile = RunFile { name: "result.json", limit: 64 * 1024 * 1024, what: "a run result" };
/// `options.json`: what a session (or a remote run) was started with, for `resume` and adoption.
pub const OPTIONS: RunFile = RunFile { name: "options.json", limit: 16 * 1024 * 1024, what: "a session's options" };
/// `runner.json`: the identity of a local run's runner process.
pub const RUNNER: RunFile = RunFile { name: "runner.json", limit: 64 * 1024, what: "a runner's identity" };
/// `supervisor`: the identity (`<pid>:<start>`) of the supervisor given this run's id, written as it starts,
/// before the run is prepared: a run id chosen ahead (a trial's attempt) shows whether its start is under way.
pub const CLAIM: RunFile = RunFile { name: "supervisor", limit: 256, what: "a supervisor's identity" };
/// `remote.json`: what a new supervisor needs to take a remote run over.
pub const REMOTE: RunFile = RunFile { name: "remote.json", limit: 16 * 1024 * 1024, what: "a remote run's attachment" };

/// The log's file name: every event, one JSON line each.
const EVENTS: &str = "events.ndjson";
/// The lock file an adoption holds.
const ADOPT_LOCK: &str = "adopt.lock";
/// The directory of a session's queued turns.
const INBOX: &str = "inbox";
/// The directory of a session's kept conversation.
const CONVERSATION: &str = "conversation";
/// The run's outbox, the agent's output directory.
const OUTBOX: &str = "outbox";
/// The directory of the answers to the run's requests (`input`).
const ANSWERS: &str = "answers";
/// The directory of the steers of the run's running turn.
const STEERS: &str = "steer";

/// The directory of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// The directory of run `run_id` under the Workbench home `home`.
    pub fn new(home: &Path, run_id: &str) -> RunDir {
        RunDir { path: wb_outcomes::runs_dir(home).join(run_id) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the directory, private (0700), with its parents.
    pub fn create(&self) -> std::io::Result<()> {
        wb_outcomes::create_private_dir(&self.path)
    }

    /// `events.ndjson`, the run's log.
    pub fn log(&self) -> PathBuf {
        self.path.join(EVENTS)
    }

    /// The path of `file` in the directory.
    pub fn file(&self, file: RunFile) -> PathBuf {
        self.path.join(file.name)
    }

    /// `adopt.lock`, held by the process adopting the run.
    pub fn adopt_lock(&self) -> PathBuf {
        self.path.join(ADOPT_LOCK)
    }

    /// `inbox/`, a session's queued turns.
    pub fn inbox(&self) -> PathBuf {
        self.path.join(INBOX)
    }

    /// `conversation/`, a session's kept conversation.
    pub fn conversation(&self) -> PathBuf {
        self.path.join(CONVERSATION)
    }

    /// `answers/`, one file per answered request.
    pub fn answers(&self) -> PathBuf {
        self.path.join(ANSWERS)
    }

    /// `answers/<request>.json`, the answer to one request (`request` a request id: `input::Request::is_id`).
    pub fn answer(&self, request: &str) -> PathBuf {
        self.answers().join(format!("{request}.json"))
    }

    /// `steer/`, the steers not yet taken by the run's owner (`steering`).
    pub fn steers(&self) -> PathBuf {
        self.path.join(STEERS)
    }

    /// `outbox/`, what the agent writes for the outcome.
    pub fn outbox(&self) -> PathBuf {
        self.path.join(OUTBOX)
    }

    /// The bytes of `file` (not through a link, at most its limit).
    pub fn read_bytes(&self, file: RunFile) -> std::io::Result<Vec<u8>> {
        read_bounded(&self.file(file), file.limit)
    }

    /// `file` read as JSON.
    pub fn read<T: serde::de::DeserializeOwned>(&self, file: RunFile) -> std::io::Result<T> {
        let bytes = self.read_bytes(file)?;
        serde_json::from_slice(&bytes).map_err(|error| {
            std::io::Error::other(format!("{} is not {}: {error}", self.file(file).display(), file.what))
        })
    }

    /// Writes `file` whole (a temporary name, then a rename), 0600, as compact JSON (`pretty`: indented).
    pub fn write<T: serde::Serialize>(&self, file: RunFile, value: &T, pretty: bool) -> std::io::Result<()> {
        let bytes = if pretty { serde_json::to_vec_pretty(value) } else { serde_json::to_vec(value) };
        let bytes = bytes.map_err(std::io::Error::other)?;
        write_private(&self.file(file), &bytes)
    }
}

/// Every run directory's id (`wb_…`) under the Workbench home, in no order.
pub fn run_ids(home: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(wb_outcomes::runs_dir(home)) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .filter(|name| name.starts_with("wb_"))
        .collect()
}

/// Writes a file of a run's directory whole (a temporary name, then a rename), 0600.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    wb_outcomes::write_atomic(path, bytes, wb_outcomes::FileMode::Exactly(0o600))
}

/// Reads a file of a run's directory, not through a link, at most `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = fs::OpenOptions::new().read(true).custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits()).open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(format!("{} is larger than {limit} bytes", path.display())));
    }
    Ok(bytes)
}
