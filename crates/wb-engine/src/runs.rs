//! What a run leaves behind besides its outcome: `$WORKBENCH_HOME/runs/<run-id>/events.ndjson` (every event,
//! redacted exactly as emitted, one JSON line each, appended as it goes out, 0600) and `run.json` (a
//! [`RunRecord`]: the package, runtime, task digest, the owning process, start and end, status, outcome id and
//! cost so far), both in the run's private directory beside its outbox.
//!
//! A run is *running* while its record says so and the process that owns it lives; a record that says running
//! whose owner is gone (killed, crashed) is [`RunState::Lost`], never running. Readers take only complete lines
//! of the log, so a line being written is read on the next look.

use std::fs;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::Event;

/// The log's file name in a run's directory.
pub const EVENTS_FILE: &str = "events.ndjson";
/// The record's file name in a run's directory.
pub const RECORD_FILE: &str = "run.json";
/// The run's result's file name in its directory ([`write_result`]): the final answer, the ending, warnings.
pub const RESULT_FILE: &str = "result.json";
/// `run.json` is rewritten at most this often while a run goes on (always at its start and end).
const RECORD_INTERVAL: Duration = Duration::from_millis(250);
/// The largest `run.json` read back (a record is a few hundred bytes).
const RECORD_LIMIT: u64 = 64 * 1024;
/// The largest `result.json` read back (the final answer is in it).
const RESULT_LIMIT: u64 = 64 * 1024 * 1024;
/// The longest log line read back: an event over it is skipped, whole, and said in its place.
const LINE_LIMIT: usize = 4 * 1024 * 1024;

/// How a run ended, or that it goes on, as its record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// A session between turns, waiting for the next (`send`).
    Idle,
    Completed,
    Failed,
    Cancelled,
}

/// A run's state as `runs` and `status` show it: the record's status, or `lost` when a record that says
/// running has no living owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Idle,
    Completed,
    Failed,
    Cancelled,
    Lost,
}

impl RunState {
    /// Running or idle: the run's owner lives and the run has not ended.
    pub fn is_live(self) -> bool {
        matches!(self, RunState::Running | RunState::Idle)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Idle => "idle",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
            RunState::Lost => "lost",
        }
    }
}

/// `run.json`: what a run is and how far it got. Never an environment value, never the task (its digest).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub run_id: String,
    pub workbench: String,
    pub version: String,
    pub runtime: String,
    pub runner: String,
    /// `sha256:<hex>` of the task text.
    pub task_digest: String,
    /// The process that owns the run (it launched the runner and collects the outcome).
    pub pid: u32,
    /// True when that process cancels the run on SIGINT (the CLI's `run`; `kill` sends it), as on Ctrl-C.
    #[serde(default)]
    pub interrupt_cancels: bool,
    /// When that process started, as the kernel counts it (Linux), so a reused pid is never taken for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start: Option<u64>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_id: Option<String>,
    /// The sum of the costs the runner's usage events reported, in USD; `None`: it reported none.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// The sequence of the last event logged.
    #[serde(default)]
    pub last_sequence: u64,
    /// What the agent was last seen doing: `thinking`, `writing`, `tool <title>`, `edited <path>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<String>,
    /// Why it failed or was cancelled (the terminal event's message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The run is a session: it waits for another turn after each (`send`), until it is ended.
    #[serde(default)]
    pub session: bool,
    /// The turns a session has started.
    #[serde(default)]
    pub turns: u64,
    /// The session this one resumed (`resume`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<String>,
}

impl RunRecord {
    /// The record's status, or [`RunState::Lost`] when it says running and its owner is gone.
    pub fn state(&self) -> RunState {
        match self.status {
            RunStatus::Running | RunStatus::Idle if !self.owner_alive() => RunState::Lost,
            RunStatus::Running => RunState::Running,
            RunStatus::Idle => RunState::Idle,
            RunStatus::Completed => RunState::Completed,
            RunStatus::Failed => RunState::Failed,
            RunStatus::Cancelled => RunState::Cancelled,
        }
    }

    /// Whether the process that owns the run (its supervisor) still lives, whatever the record says.
    pub fn owner_alive(&self) -> bool {
        owner_alive(self.pid, self.pid_start)
    }

    /// How long ago the run started; `None` when its start cannot be read.
    pub fn elapsed_since_start(&self) -> Option<Duration> {
        let started: jiff::Timestamp = self.started_at.parse().ok()?;
        let age = jiff::Timestamp::now().duration_since(started);
        Duration::try_from(age).ok()
    }

    /// How long the run has gone on (to its end, when it ended); `None` when the times cannot be read.
    pub fn elapsed(&self) -> Option<Duration> {
        let started: jiff::Timestamp = self.started_at.parse().ok()?;
        let ended = match &self.ended_at {
            Some(ended) => ended.parse().ok()?,
            None => jiff::Timestamp::now(),
        };
        let span = ended.duration_since(started);
        Duration::try_from(span).ok()
    }

    /// How long ago the run ended; `None` while it goes on, or when the time cannot be read.
    pub fn ended_ago(&self) -> Option<Duration> {
        let ended: jiff::Timestamp = self.ended_at.as_deref()?.parse().ok()?;
        Duration::try_from(jiff::Timestamp::now().duration_since(ended)).ok()
    }

    /// Folds one event into the record: its sequence, the cost, the activity, the outcome and the ending.
    pub fn observe(&mut self, event: &Event) {
        self.last_sequence = event.sequence;
        let text = |key: &str| event.data.get(key).and_then(Value::as_str).map(str::to_owned);
        match event.kind.as_str() {
            "usage.updated" => {
                if let Some(cost) = event.data.get("cost_usd").and_then(Value::as_f64).filter(|c| c.is_finite()) {
                    let total = event.data.get("kind").and_then(Value::as_str) == Some("total");
                    let so_far = if total { 0.0 } else { self.cost_usd.unwrap_or(0.0) };
                    self.cost_usd = Some(so_far + cost);
                }
            }
            "reasoning.delta" | "reasoning.completed" => self.activity = Some("thinking".to_owned()),
            "output.text" => self.activity = Some("writing".to_owned()),
            "tool.started" => {
                let title = text("title").or_else(|| text("name")).unwrap_or_default();
                self.activity = Some(format!("tool {title}"));
            }
            "file.changed" => self.activity = text("path").map(|path| format!("edited {path}")),
            "turn.started" => {
                self.status = RunStatus::Running;
                self.turns = event.data.get("turn_index").and_then(Value::as_u64).unwrap_or(self.turns + 1);
            }
            "turn.completed" if self.session => {
                self.status = RunStatus::Idle;
                self.activity = None;
            }
            // A turn's snapshot is not the run's outcome.
            "outcome.available" if event.data.get("turn_index").is_none() => self.outcome_id = text("outcome_id"),
            "run.completed" => self.end(RunStatus::Completed, event, None),
            "run.failed" => self.end(RunStatus::Failed, event, text("message")),
            "run.cancelled" => self.end(RunStatus::Cancelled, event, text("message")),
            _ => {}
        }
    }

    fn end(&mut self, status: RunStatus, event: &Event, message: Option<String>) {
        self.status = status;
        self.ended_at = Some(event.timestamp.clone());
        self.message = message;
        self.activity = None;
    }
}

/// Whether the process `pid` lives and is the one that started at `start` (when known).
pub fn process_alive(pid: u32, start: Option<u64>) -> bool {
    owner_alive(pid, start)
}

fn owner_alive(pid: u32, start: Option<u64>) -> bool {
    let Ok(raw) = i32::try_from(pid) else { return false };
    if raw <= 0 {
        return false;
    }
    // Signal 0 checks existence and permission without sending anything.
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) | Err(nix::errno::Errno::EPERM) => {}
        Err(_) => return false,
    }
    // A zombie has ended: its parent has not reaped it yet (a caller still following the run it started).
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let state =
        stat.as_deref().and_then(|stat| stat.rsplit_once(')')).and_then(|(_, rest)| rest.trim_start().chars().next());
    if matches!(state, Some('Z' | 'X')) {
        return false;
    }
    match (start, process_start(pid)) {
        (Some(recorded), Some(now)) => recorded == now,
        _ => true,
    }
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`, field 22); `None` off Linux.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its last `)`.
    let after = stat.get(stat.rfind(')')? + 1..)?;
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The directory of run `run_id` under the Workbench home.
pub fn run_dir(home: &Path, run_id: &str) -> PathBuf {
    home.join("runs").join(run_id)
}

/// The claim on a run to adopt ([`RunLog::claim`]), held until the adopting process ends.
pub struct Claim(nix::fcntl::Flock<fs::File>);

/// The lock file an adoption holds in the run's directory.
const ADOPT_LOCK: &str = "adopt.lock";

/// The run being logged: its log file (append only) and its record.
pub struct RunLog {
    dir: PathBuf,
    file: fs::File,
    record: RunRecord,
    written: Option<Instant>,
    /// The first failure to write the log or the record; the run goes on, and it is said after the run.
    failure: Option<String>,
    /// An adopted run's lock (`adopt.lock`, an exclusive `flock`): one process adopts it, however many try.
    _adoption: Option<nix::fcntl::Flock<fs::File>>,
}

impl RunLog {
    /// Creates the run's directory (private), an empty log (0600, refused if one exists) and the record.
    pub fn create(home: &Path, record: RunRecord) -> std::io::Result<RunLog> {
        let dir = run_dir(home, &record.run_id);
        wb_outcomes::create_private_dir(&dir)?;
        let file = fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(dir.join(EVENTS_FILE))?;
        let mut log = RunLog { dir, file, record, written: None, failure: None, _adoption: None };
        log.write_record()?;
        Ok(log)
    }

    /// Claims a run whose supervisor died, for this process to adopt: refused while its supervisor lives or
    /// another process holds the claim (until that process ends).
    pub fn claim(home: &Path, run_id: &str) -> std::io::Result<Claim> {
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(run_dir(home, run_id).join(ADOPT_LOCK))?;
        let claim = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock)
            .map_err(|_| std::io::Error::other(format!("run {run_id} is being adopted by another process")))?;
        let record = read_record(home, run_id)?;
        if record.owner_alive() {
            return Err(std::io::Error::other(format!("run {run_id} still has its supervisor")));
        }
        if record.ended_at.is_some() || record.state() != RunState::Lost {
            return Err(std::io::Error::other(format!("run {run_id} has ended")));
        }
        Ok(Claim(claim))
    }

    /// Opens the log of a run whose supervisor died, for this process to carry on (an adoption): the record
    /// names this process as the run's owner and says it runs again; a last line the dead supervisor left half
    /// written is cut off. Returns the log and the sequence of the last event in it (0: none).
    pub fn reopen(home: &Path, run_id: &str, claim: Claim) -> std::io::Result<(RunLog, u64)> {
        let dir = run_dir(home, run_id);
        let mut record = read_record(home, run_id)?;
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(dir.join(EVENTS_FILE))?;
        let mut text = Vec::new();
        (&mut file).take(1 << 30).read_to_end(&mut text)?;
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        if complete < text.len() {
            file.set_len(complete as u64)?;
        }
        file.seek(std::io::SeekFrom::End(0))?;
        let last = text[..complete]
            .split(|b| *b == b'\n')
            .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
            .filter_map(|event| event.get("sequence").and_then(Value::as_u64))
            .max()
            .unwrap_or(0);
        let pid = std::process::id();
        record.pid = pid;
        record.pid_start = process_start(pid);
        record.status = RunStatus::Running;
        record.ended_at = None;
        record.message = None;
        let mut log = RunLog { dir, file, record, written: None, failure: None, _adoption: Some(claim.0) };
        log.write_record()?;
        Ok((log, last))
    }

    pub fn record(&self) -> &RunRecord {
        &self.record
    }

    /// Folds one event into the record (written at once, or for streamed text at most every 250 ms, and at the
    /// end of the run), then appends it to the log (a whole line in one write, so a reader never sees two
    /// events interleaved).
    pub fn append(&mut self, event: &Event) {
        let mut line = match serde_json::to_vec(event) {
            Ok(line) => line,
            Err(error) => return self.fail(format!("cannot encode event {}: {error}", event.sequence)),
        };
        line.push(b'\n');
        // The record first: whoever reads an event in the log finds the record already past it (a session
        // idle once its `turn.completed` is logged).
        self.record.observe(event);
        // Streamed text and thinking come in many small events: the record follows them at most every 250 ms;
        // every other event (a tool, a file, usage, the outcome, the end) is in the record at once.
        let frequent = matches!(event.kind.as_str(), "output.text" | "reasoning.delta");
        let due = self.written.is_none_or(|at| at.elapsed() >= RECORD_INTERVAL);
        if (!frequent || due)
            && let Err(error) = self.write_record()
        {
            self.fail(format!("cannot write {}: {error}", self.dir.join(RECORD_FILE).display()));
        }
        if let Err(error) = self.file.write_all(&line) {
            self.fail(format!("cannot append to {}: {error}", self.dir.join(EVENTS_FILE).display()));
        }
    }

    /// The first failure to log, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    fn fail(&mut self, message: String) {
        self.failure.get_or_insert(message);
    }

    fn write_record(&mut self) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(&self.record).map_err(std::io::Error::other)?;
        wb_outcomes::write_atomic(&self.dir.join(RECORD_FILE), &bytes, wb_outcomes::FileMode::Exactly(0o600))?;
        self.written = Some(Instant::now());
        Ok(())
    }
}

impl Drop for RunLog {
    fn drop(&mut self) {
        let _ = self.write_record();
    }
}

/// Reads a run's record.
pub fn read_record(home: &Path, run_id: &str) -> std::io::Result<RunRecord> {
    read_json(&run_dir(home, run_id).join(RECORD_FILE), RECORD_LIMIT, "a run record")
}

/// A record as JSON with its `state` beside its `status` (`lost` where the record still says running).
pub fn record_json(record: &RunRecord) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    value["state"] = Value::from(record.state().as_str());
    value
}

/// Keeps what a finished run returned beside its log (0600), for whoever waits on it.
pub fn write_result(home: &Path, result: &crate::RunResult) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(result).map_err(std::io::Error::other)?;
    let path = run_dir(home, &result.run_id).join(RESULT_FILE);
    wb_outcomes::write_atomic(&path, &bytes, wb_outcomes::FileMode::Exactly(0o600))
}

/// What a finished run returned ([`write_result`]); missing while the run goes on.
pub fn read_result(home: &Path, run_id: &str) -> std::io::Result<crate::RunResult> {
    read_json(&run_dir(home, run_id).join(RESULT_FILE), RESULT_LIMIT, "a run result")
}

/// Reads a JSON file of the run's directory, not through a link, at most `limit` bytes.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path, limit: u64, what: &str) -> std::io::Result<T> {
    let file = fs::OpenOptions::new().read(true).custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits()).open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(format!("{} is larger than {limit} bytes", path.display())));
    }
    serde_json::from_slice(&bytes)
        .map_err(|error| std::io::Error::other(format!("{} is not {what}: {error}", path.display())))
}

/// Every run with a record, newest first (by start time, then id).
pub fn list(home: &Path) -> Vec<RunRecord> {
    let Ok(entries) = fs::read_dir(home.join("runs")) else { return Vec::new() };
    let mut records: Vec<RunRecord> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .filter(|name| name.starts_with("wb_"))
        .filter_map(|name| read_record(home, &name).ok())
        .collect();
    records.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.run_id.cmp(&a.run_id)));
    records
}

/// Reads a run's log from byte `offset`: the complete lines there, each an event's JSON, and the offset after
/// the last complete line (a line still being written is left for the next read).
pub struct LogReader {
    file: fs::File,
    offset: u64,
    pending: Vec<u8>,
    /// A line over [`LINE_LIMIT`] is being skipped up to its end.
    skipping: bool,
}

impl LogReader {
    pub fn open(home: &Path, run_id: &str) -> std::io::Result<LogReader> {
        let path = run_dir(home, run_id).join(EVENTS_FILE);
        let file = fs::OpenOptions::new().read(true).custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits()).open(path)?;
        Ok(LogReader { file, offset: 0, pending: Vec::new(), skipping: false })
    }

    /// The events appended since the last read (none when nothing new is complete).
    pub fn read_new(&mut self) -> std::io::Result<Vec<Value>> {
        self.file.seek(std::io::SeekFrom::Start(self.offset))?;
        let mut chunk = Vec::new();
        let read = (&mut self.file).take(LINE_LIMIT as u64).read_to_end(&mut chunk)?;
        self.offset += read as u64;
        self.pending.extend_from_slice(&chunk);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            if std::mem::take(&mut self.skipping) {
                continue;
            }
            match serde_json::from_slice::<Value>(&line[..line.len() - 1]) {
                Ok(event) => events.push(event),
                Err(error) => events.push(unreadable(&error.to_string())),
            }
        }
        if self.pending.len() > LINE_LIMIT {
            self.pending.clear();
            if !std::mem::replace(&mut self.skipping, true) {
                events.push(unreadable(&format!("an event over {LINE_LIMIT} bytes was skipped")));
            }
        }
        Ok(events)
    }
}

/// What a reader puts in place of a line it cannot read.
fn unreadable(message: &str) -> Value {
    serde_json::json!({"type": "log.unreadable", "data": {"message": message}})
}

/// The digest `run.json` records of a task.
pub fn task_digest(task: &str) -> String {
    format!("sha256:{}", wb_outcomes::sha256_hex(task.as_bytes()))
}
