//! What a run leaves behind besides its outcome, in its private directory beside its outbox (laid out by
//! [`layout`]): `events.ndjson` (every event, redacted exactly as emitted, one JSON line each, appended as it
//! goes out, 0600: [`log`]) and `run.json` (a [`RunRecord`]: the package, runtime, task digest, the owning
//! process, start and end, status, outcome id and cost so far), and at the end `result.json`. [`follow`] reads
//! them as a run goes on.
//!
//! A run is *running* while its record says so and the process that owns it lives; a record that says running
//! whose owner is gone (killed, crashed) is [`RunState::Lost`], never running. Readers take only complete lines
//! of the log, so a line being written is read on the next look.

pub mod answers;
pub mod follow;
pub mod layout;
pub mod log;
pub mod steering;

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use follow::{Followed, TurnEnd, follow, follow_turn, follow_until, result_of};
pub use layout::RunDir;
pub use log::{Claim, LogReader, Logged, RunLog};

use crate::events::{Event, EventKind};

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
    /// Running, and waiting for the person to answer what the runner asked (`answer`).
    NeedsInput,
    Idle,
    Completed,
    Failed,
    Cancelled,
    Lost,
}

impl RunState {
    /// Running or idle: the run's owner lives and the run has not ended.
    pub fn is_live(self) -> bool {
        matches!(self, RunState::Running | RunState::NeedsInput | RunState::Idle)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::NeedsInput => "needs_input",
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
    /// What the runner asked that is not answered yet (the run is `needs_input` while there is one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<crate::input::Request>,
    /// Where the agent's plan stands (`plan.updated`), when it keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::PlanSummary>,
}

impl RunRecord {
    /// The record's status, or [`RunState::Lost`] when it says running and its owner is gone.
    pub fn state(&self) -> RunState {
        match self.status {
            RunStatus::Running | RunStatus::Idle if !self.owner_alive() => RunState::Lost,
            RunStatus::Running if !self.pending.is_empty() => RunState::NeedsInput,
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
        let text = |key: &str| event.text(key).map(str::to_owned);
        let Some(kind) = event.known() else { return };
        match kind {
            EventKind::UsageUpdated => {
                if let Some(cost) = event.data.get("cost_usd").and_then(Value::as_f64).filter(|c| c.is_finite()) {
                    let total = event.text("kind") == Some("total");
                    let so_far = if total { 0.0 } else { self.cost_usd.unwrap_or(0.0) };
                    self.cost_usd = Some(so_far + cost);
                }
            }
            EventKind::ReasoningDelta | EventKind::ReasoningCompleted => self.activity = Some("thinking".to_owned()),
            EventKind::OutputText => self.activity = Some("writing".to_owned()),
            EventKind::ToolStarted => {
                let title = text("title").or_else(|| text("name")).unwrap_or_default();
                self.activity = Some(format!("tool {title}"));
            }
            EventKind::FileChanged => self.activity = text("path").map(|path| format!("edited {path}")),
            EventKind::PlanUpdated => self.plan = Some(crate::plan::PlanSummary::of(&event.data)),
            EventKind::InputRequested | EventKind::QuestionRequested => {
                if let Some(request) = crate::input::Request::from_event(event) {
                    self.pending.retain(|pending| pending.id != request.id);
                    self.pending.push(request);
                }
            }
            EventKind::InputAccepted
            | EventKind::InputRejected
            | EventKind::QuestionAnswered
            | EventKind::QuestionRejected => {
                let id = text("id");
                self.pending.retain(|pending| Some(&pending.id) != id.as_ref());
            }
            EventKind::TurnStarted => {
                self.status = RunStatus::Running;
                self.turns = event.data.get("turn_index").and_then(Value::as_u64).unwrap_or(self.turns + 1);
            }
            EventKind::TurnCompleted if self.session => {
                self.status = RunStatus::Idle;
                self.activity = None;
                self.pending.clear();
            }
            // A turn's snapshot is not the run's outcome.
            EventKind::OutcomeAvailable if event.data.get("turn_index").is_none() => {
                self.outcome_id = text("outcome_id");
            }
            EventKind::RunCompleted => self.end(RunStatus::Completed, event, None),
            EventKind::RunFailed => self.end(RunStatus::Failed, event, text("message")),
            EventKind::RunCancelled => self.end(RunStatus::Cancelled, event, text("message")),
            _ => {}
        }
    }

    fn end(&mut self, status: RunStatus, event: &Event, message: Option<String>) {
        self.status = status;
        self.ended_at = Some(event.timestamp.clone());
        self.message = message;
        self.activity = None;
        self.pending.clear();
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

/// Reads a run's record.
pub fn read_record(home: &Path, run_id: &str) -> std::io::Result<RunRecord> {
    RunDir::new(home, run_id).read(layout::RECORD)
}

/// A record as JSON with its `state` beside its `status` (`lost` where the record still says running).
pub fn record_json(record: &RunRecord) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    value["state"] = Value::from(record.state().as_str());
    value
}

/// Keeps what a finished run returned beside its log (0600), for whoever waits on it.
pub fn write_result(home: &Path, result: &crate::RunResult) -> std::io::Result<()> {
    RunDir::new(home, &result.run_id).write(layout::RESULT, result, false)
}

/// What a finished run returned ([`write_result`]); missing while the run goes on.
pub fn read_result(home: &Path, run_id: &str) -> std::io::Result<crate::RunResult> {
    RunDir::new(home, run_id).read(layout::RESULT)
}

/// Every run with a record, newest first (by start time, then id).
pub fn list(home: &Path) -> Vec<RunRecord> {
    let mut records: Vec<RunRecord> =
        layout::run_ids(home).into_iter().filter_map(|name| read_record(home, &name).ok()).collect();
    records.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.run_id.cmp(&a.run_id)));
    records
}

/// The digest `run.json` records of a task.
pub fn task_digest(task: &str) -> String {
    format!("sha256:{}", wb_outcomes::sha256_hex(task.as_bytes()))
}
