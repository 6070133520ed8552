//! A run's log, `events.ndjson`: [`RunLog`] appends each event as it goes out (and keeps the record beside it),
//! also for a process that adopts a run whose supervisor died ([`RunLog::claim`], [`RunLog::reopen`]);
//! [`LogReader`] reads the events back as they come.

use std::fs;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::layout::{self, RunDir};
use super::{RunRecord, RunState, RunStatus, process_start, read_record};
use crate::events::{Event, EventKind};

/// `run.json` is rewritten at most this often while a run goes on (always at its start and end).
const RECORD_INTERVAL: Duration = Duration::from_millis(250);
/// The longest log line read back: an event over it is skipped, whole, and said in its place.
const LINE_LIMIT: usize = 4 * 1024 * 1024;

/// The claim on a run to adopt ([`RunLog::claim`]), held until the adopting process ends.
pub struct Claim(nix::fcntl::Flock<fs::File>);

/// The run being logged: its log file (append only) and its record.
pub struct RunLog {
    dir: RunDir,
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
        let dir = RunDir::new(home, &record.run_id);
        dir.create()?;
        let file = fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(dir.log())?;
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
            .open(RunDir::new(home, run_id).adopt_lock())?;
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
        let dir = RunDir::new(home, run_id);
        let mut record = read_record(home, run_id)?;
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(dir.log())?;
        let mut text = Vec::new();
        (&mut file).take(1 << 30).read_to_end(&mut text)?;
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        if complete < text.len() {
            file.set_len(complete as u64)?;
        }
        file.seek(std::io::SeekFrom::End(0))?;
        let last = text[..complete]
            .split(|b| *b == b'\n')
            .filter_map(|line| serde_json::from_slice::<Event>(line).ok())
            .map(|event| event.sequence)
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
        let frequent = matches!(event.known(), Some(EventKind::OutputText | EventKind::ReasoningDelta));
        let due = self.written.is_none_or(|at| at.elapsed() >= RECORD_INTERVAL);
        if (!frequent || due)
            && let Err(error) = self.write_record()
        {
            self.fail(format!("cannot write {}: {error}", self.dir.file(layout::RECORD).display()));
        }
        if let Err(error) = self.file.write_all(&line) {
            self.fail(format!("cannot append to {}: {error}", self.dir.log().display()));
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
        self.dir.write(layout::RECORD, &self.record, true)?;
        self.written = Some(Instant::now());
        Ok(())
    }
}

impl Drop for RunLog {
    fn drop(&mut self) {
        let _ = self.write_record();
    }
}

/// One line of a run's log as read back.
#[derive(Clone, Debug, PartialEq)]
pub enum Logged {
    Event(Event),
    /// A line that is not an event (or one over the line limit, skipped): why.
    Unreadable(String),
}

impl Logged {
    /// The event, when the line was one.
    pub fn event(&self) -> Option<&Event> {
        match self {
            Logged::Event(event) => Some(event),
            Logged::Unreadable(_) => None,
        }
    }

    /// The line as JSON: the event as logged, or a `log.unreadable` in place of a line that is not one.
    pub fn to_json(&self) -> Value {
        match self {
            Logged::Event(event) => serde_json::to_value(event).unwrap_or(Value::Null),
            Logged::Unreadable(message) => {
                serde_json::json!({"type": EventKind::LogUnreadable.as_str(), "data": {"message": message}})
            }
        }
    }
}

/// Reads a run's log from byte `offset`: the complete lines there, each an [`Event`], and the offset after the
/// last complete line (a line still being written is left for the next read).
pub struct LogReader {
    file: fs::File,
    offset: u64,
    pending: Vec<u8>,
    /// A line over [`LINE_LIMIT`] is being skipped up to its end.
    skipping: bool,
}

impl LogReader {
    pub fn open(home: &Path, run_id: &str) -> std::io::Result<LogReader> {
        let path = RunDir::new(home, run_id).log();
        let file = fs::OpenOptions::new().read(true).custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits()).open(path)?;
        Ok(LogReader { file, offset: 0, pending: Vec::new(), skipping: false })
    }

    /// The events appended since the last read (none when nothing new is complete).
    pub fn read_new(&mut self) -> std::io::Result<Vec<Logged>> {
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
            match serde_json::from_slice::<Event>(&line[..line.len() - 1]) {
                Ok(event) => events.push(Logged::Event(event)),
                Err(error) => events.push(Logged::Unreadable(error.to_string())),
            }
        }
        if self.pending.len() > LINE_LIMIT {
            self.pending.clear();
            if !std::mem::replace(&mut self.skipping, true) {
                events.push(Logged::Unreadable(format!("an event over {LINE_LIMIT} bytes was skipped")));
            }
        }
        Ok(events)
    }
}
