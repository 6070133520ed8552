//! What a run leaves running when its owner (its supervisor) dies, and stopping it: the runner's process group
//! (local), the Docker containers the owner created, the owner's temporary stage directories.
//!
//! Each is found by the identity of the process that made it, its pid and its start time (never a pid alone: it
//! may have been reused): a local runner's in `runs/<id>/runner.json` ([`note_runner`]), a container's in its
//! [`crate::runtime::docker::OWNER_LABEL`], a stage directory's in its name. The supervisor's watchdog sweeps
//! them when the supervisor dies; `kill` of a lost run and `clean` find them the same way.

pub mod identity;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use identity::Identity;

use crate::error::EngineError;
use crate::runs::layout::RUNNER;
use crate::runs::{RunDir, process_start};
use crate::runtime::{Handle, Launched};

/// Notes the local runner a run launched (its process group's leader), for whoever stops what a dead supervisor
/// left: nothing for a container or a sandbox. A failure is not the run's: the runner is then not found later.
pub(crate) fn note_runner(home: &Path, run_id: &str, launched: &Launched) {
    let Handle::Child(child) = &launched.handle else { return };
    let _ = RunDir::new(home, run_id).write(RUNNER, &Identity::of(child.id()), false);
}

/// What was stopped or removed of a run (or, for `clean`, of every run whose owner is gone).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Swept {
    /// Processes of the runner's group that were still running (killed).
    pub processes: Vec<u32>,
    /// Containers removed (names, or ids).
    pub containers: Vec<String>,
    /// Stage directories removed.
    pub stages: Vec<PathBuf>,
    /// What could not be looked at or stopped.
    pub problems: Vec<String>,
}

impl Swept {
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty() && self.containers.is_empty() && self.stages.is_empty()
    }
}

/// Stops what is left of run `run_id` (when known) whose owner was `owner`: its runner's process group, the
/// containers `owner` created, `owner`'s stage directories. Call it only once `owner` has ended.
pub fn sweep_run(home: &Path, run_id: Option<&str>, owner: Identity, runtime: Option<&str>) -> Swept {
    let mut swept = Swept::default();
    if let Some(run_id) = run_id {
        match stop_runner_group(home, run_id) {
            Ok(processes) => swept.processes = processes,
            Err(problem) => swept.problems.push(problem.to_string()),
        }
    }
    if owner.start.is_none() {
        swept.problems.push(format!("process {} has no recorded start time: what it made is not touched", owner.pid));
        return swept;
    }
    if runtime.is_none_or(|runtime| runtime == "docker") {
        match crate::runtime::docker::remove_leftovers(Some(owner), false) {
            Ok(containers) => swept.containers = containers,
            Err(problem) => swept.problems.push(problem.to_string()),
        }
    }
    swept.stages = crate::lifecycle::stage_leftovers(Some(owner), false);
    swept
}

/// Kills what is left of run `run_id`'s local runner: every process of its group. The group is the runner's
/// while its leader is the recorded process, or, once the leader is gone, while any process is in it (Linux
/// never gives a pid to a new process while a group still bears it), and only processes started no earlier than
/// the runner count. Off Linux (no start time recorded) nothing is signalled.
fn stop_runner_group(home: &Path, run_id: &str) -> crate::Result<Vec<u32>> {
    let dir = RunDir::new(home, run_id);
    let path = dir.file(RUNNER);
    let runner: Identity = match dir.read_bytes(RUNNER) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| EngineError::message(format!("{} is unreadable: {e}", path.display())))?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(EngineError::io_at(&path, format!("cannot read {}", path.display()), error)),
    };
    let Some(since) = runner.start else {
        return Err(EngineError::message(format!(
            "the runner of run {run_id} (pid {}) has no recorded start time: it is not signalled",
            runner.pid
        )));
    };
    // Its pid taken by another process: the runner's group ended before that could be.
    if process_start(runner.pid).is_some_and(|start| start != since) {
        return Ok(Vec::new());
    }
    let members = group_members(runner.pid, since);
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let group =
        i32::try_from(runner.pid).map_err(|_| EngineError::message(format!("{} is not a process id", runner.pid)))?;
    match nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), nix::sys::signal::Signal::SIGKILL) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(members),
        Err(error) => Err(EngineError::message(format!(
            "cannot stop the runner of run {run_id} (process group {group}): {error}"
        ))),
    }
}

/// The living processes of process group `group` that started no earlier than `since` (`/proc`).
fn group_members(group: u32, since: u64) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()))
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            let Some(after) = stat.rfind(')').and_then(|end| stat.get(end + 1..)) else { return false };
            let fields: Vec<&str> = after.split_whitespace().collect();
            let state = fields.first().copied().unwrap_or("Z");
            let pgrp = fields.get(2).and_then(|f| f.parse::<u32>().ok());
            let start = fields.get(19).and_then(|f| f.parse::<u64>().ok());
            !matches!(state, "Z" | "X") && pgrp == Some(group) && start.is_some_and(|start| start >= since)
        })
        .collect()
}
