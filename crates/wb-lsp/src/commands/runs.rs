//! The runs under `$WORKBENCH_HOME/runs`: `runs` (alias `ps`) lists them, `attach` replays a run's event log
//! then follows it, `wait` waits for its end, `kill` cancels it, `status` says what the active ones are doing
//! and what they cost. Everything here reads the log and the record the run's own process writes
//! (`wb_engine::runs`); nothing but `kill` acts on a run (and `attach`, adopting a lost remote run). `kill` of a
//! lost run stops what its dead supervisor left (`wb_engine::leftovers`).

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;
use wb_engine::runs::{self, Followed, LogReader, RunRecord, RunState};
use wb_engine::{Request, RunMode, RunRequest};

use super::printable;
use crate::cli::{AttachArgs, KillArgs, RunsArgs, StatusArgs, WaitArgs};
use crate::exit::Exit;
use crate::supervisor;

/// How often a followed run's log and record are looked at.
const POLL: Duration = Duration::from_millis(100);
/// How long `kill` waits for the run to end after asking.
const KILL_WAIT: Duration = Duration::from_secs(120);
/// Runs that ended within this long are shown by `status` beside the active ones.
const RECENT: Duration = Duration::from_secs(15 * 60);

/// The run a reference names: its id, or a prefix of exactly one run's id.
pub(super) fn resolve(home: &std::path::Path, reference: &str) -> anyhow::Result<RunRecord> {
    if let Ok(record) = runs::read_record(home, reference) {
        return Ok(record);
    }
    let matching: Vec<RunRecord> =
        runs::list(home).into_iter().filter(|record| record.run_id.starts_with(reference)).collect();
    match matching.len() {
        1 => Ok(matching.into_iter().next().context("one run")?),
        0 => bail!("No run found: {reference}"),
        n => bail!("{n} runs start with {reference}: give more of the id"),
    }
}

/// `$0.4213`, or `cost unknown` when the runner reported none.
fn cost_text(record: &RunRecord) -> String {
    record.cost_usd.map_or_else(|| "cost unknown".to_owned(), |cost| format!("${cost:.4}"))
}

fn elapsed_text(record: &RunRecord) -> String {
    let Some(elapsed) = record.elapsed() else { return "?".to_owned() };
    let seconds = elapsed.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds / 60 % 60),
    }
}

pub fn list(args: &RunsArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let records: Vec<RunRecord> = runs::list(&home).into_iter().filter(|r| args.all || r.state().is_live()).collect();
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{:#}", Value::Array(records.iter().map(runs::record_json).collect()))?;
        return Ok(Exit::Success);
    }
    if records.is_empty() {
        writeln!(stdout, "{}", if args.all { "No runs" } else { "No active runs (--all lists finished ones)" })?;
        return Ok(Exit::Success);
    }
    writeln!(
        stdout,
        "{:<27}  {:<9}  {:<24}  {:<8}  {:<20}  {:>8}  COST",
        "RUN", "STATE", "WORKBENCH", "RUNTIME", "STARTED", "ELAPSED"
    )?;
    for record in &records {
        writeln!(
            stdout,
            "{:<27}  {:<9}  {:<24}  {:<8}  {:<20}  {:>8}  {}",
            record.run_id,
            record.state().as_str(),
            printable(&record.workbench),
            record.runtime,
            record.started_at,
            elapsed_text(record),
            cost_text(record)
        )?;
    }
    Ok(Exit::Success)
}

/// The exit code of a run that ended: 0 completed (its outcome collected), 1 failed or lost, 130 cancelled.
fn exit_of(state: RunState, outcome_failed: bool) -> Exit {
    match state {
        RunState::Completed if !outcome_failed => Exit::Success,
        RunState::Idle => Exit::Success,
        RunState::Cancelled => Exit::Cancelled,
        RunState::Running => Exit::Timeout,
        // Exit 2 from `wait`: the run waits for an answer (`answer`).
        RunState::NeedsInput => Exit::Usage,
        _ => Exit::Failure,
    }
}

pub fn attach(args: &AttachArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let record = resolve(&home, &args.run.run)?;
    let json = args.json;
    // A remote run whose supervisor died is taken over by a new one: its sandbox and runner live on.
    if record.state() == RunState::Lost
        && adoptable(&home, &record)
        && let Some(code) = adopt(&home, &record, args)?
    {
        return Ok(code);
    }
    let ended = runs::follow(&home, &record.run_id, None, &mut |event| super::followed::print_logged(event, json))?;
    Ok(match ended {
        Followed::Ended { state, outcome_failed } => exit_of(state, outcome_failed),
        Followed::Lost => {
            eprintln!("error: run {} is lost: the process that owned it ended before the run did", record.run_id);
            Exit::Failure
        }
        Followed::Stopped | Followed::Reached => Exit::Timeout,
    })
}

/// Whether `record` is a remote run (not a session) whose runner was launched in a sandbox.
fn adoptable(home: &std::path::Path, record: &RunRecord) -> bool {
    !record.session && matches!(wb_engine::runtime::remote::adopt::load(home, &record.run_id), Ok(Some(_)))
}

/// Starts a supervisor that adopts the lost run `record`; `Some(exit code)` when it could not.
/// A run started with `--env` needs those given again (`attach --env`): their values were never kept.
fn adopt(home: &std::path::Path, record: &RunRecord, args: &AttachArgs) -> anyhow::Result<Option<Exit>> {
    let kept = wb_engine::sessions::load_options(home, &record.run_id)
        .with_context(|| format!("cannot read what run {} was started with", record.run_id))?;
    let mut settings = kept.settings;
    settings.env_files.extend(args.env_files.iter().cloned());
    settings.home = Some(home.to_path_buf());
    let request = RunRequest {
        request: Request { settings, env: args.env.clone(), task: None },
        mode: RunMode::Adopt { run_id: record.run_id.clone(), limits: kept.limits, env_names: kept.env_names },
        run_id: None,
    };
    eprintln!("Run {} lost its supervisor: adopting it", record.run_id);
    let starting = supervisor::spawn(&request)?;
    match starting.wait_started(&mut |message| eprintln!("{}", printable(message)))? {
        supervisor::Start::Started { .. } => Ok(None),
        supervisor::Start::Failed(failure) => {
            eprintln!("error: cannot adopt run {}: {}", record.run_id, printable(&failure.message));
            Ok(Some(Exit::Failure))
        }
    }
}

pub fn wait(args: &WaitArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let first = resolve(&home, &args.run.run)?;
    let started = Instant::now();
    let mut reader = match args.after {
        Some(_) => Some(LogReader::open(&home, &first.run_id)?),
        None => None,
    };
    loop {
        let record = runs::read_record(&home, &first.run_id)?;
        let state = record.state();
        let next = match (&mut reader, args.after) {
            (Some(reader), Some(after)) => {
                reader.read_new()?.iter().any(|logged| logged.event().is_some_and(|event| event.sequence > after))
            }
            _ => false,
        };
        if state != RunState::Running || next {
            if args.json {
                let mut stdout = std::io::stdout().lock();
                writeln!(stdout, "{:#}", runs::record_json(&record))?;
            }
            if next && state == RunState::Running {
                return Ok(Exit::Success);
            }
            if state == RunState::NeedsInput && !args.json {
                // What it asks, one line each, so a person or a script can answer (`answer RUN REQUEST ...`).
                let mut stdout = std::io::stdout().lock();
                for request in &record.pending {
                    writeln!(stdout, "{}", printable(&request.details()))?;
                }
            }
            let outcome_failed = state == RunState::Completed && record.outcome_id.is_none();
            return Ok(exit_of(state, outcome_failed));
        }
        if args.timeout.is_some_and(|timeout| started.elapsed() >= timeout) {
            if args.json {
                let mut stdout = std::io::stdout().lock();
                writeln!(stdout, "{:#}", runs::record_json(&record))?;
            }
            return Ok(Exit::Timeout);
        }
        std::thread::sleep(POLL);
    }
}

pub fn kill(args: &KillArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let record = resolve(&home, &args.run.run)?;
    let state = record.state();
    if state == RunState::Lost {
        return Ok(stop_leftovers(&home, &record));
    }
    if !state.is_live() {
        eprintln!("error: run {} is not running ({})", record.run_id, state.as_str());
        return Ok(Exit::Failure);
    }
    // Without its start time the process cannot be told from another that took its pid since: not signalled.
    if record.pid_start.is_none() {
        eprintln!(
            "error: run {} names process {} without its start time: cannot tell it from a process that took its \
             pid, so it is not signalled",
            record.run_id, record.pid
        );
        return Ok(Exit::Failure);
    }
    if !record.interrupt_cancels {
        eprintln!(
            "error: run {} belongs to a process that does not take a signal to cancel it (pid {}): cancel it \
             where it was started (the editor's Runs view)",
            record.run_id, record.pid
        );
        return Ok(Exit::Failure);
    }
    supervisor::interrupt(record.pid)
        .with_context(|| format!("cannot signal the process of run {} (pid {})", record.run_id, record.pid))?;
    let asked = Instant::now();
    while asked.elapsed() < KILL_WAIT {
        let now = runs::read_record(&home, &record.run_id)?;
        if !now.state().is_live() {
            eprintln!("run {} {}", now.run_id, now.state().as_str());
            return Ok(Exit::Success);
        }
        std::thread::sleep(POLL);
    }
    eprintln!("error: run {} was asked to stop and is still running after {}s", record.run_id, KILL_WAIT.as_secs());
    Ok(Exit::Failure)
}

/// `kill` of a lost run: its supervisor died; whatever it left running is stopped (its runner's process group,
/// its containers, its stage directory). Exit 0 once nothing of it runs, 1 when something could not be stopped.
fn stop_leftovers(home: &std::path::Path, record: &RunRecord) -> Exit {
    let owner = wb_engine::leftovers::Identity { pid: record.pid, start: record.pid_start };
    let swept = wb_engine::leftovers::sweep_run(home, Some(&record.run_id), owner, Some(&record.runtime));
    let mut problems = swept.problems.clone();
    // A remote run's sandbox outlives its supervisor (so that `attach` can adopt it): killed, it is destroyed.
    let mut sandboxes = Vec::new();
    if wb_engine::runtime::services().iter().any(|service| service.name() == record.runtime) {
        let inherited = wb_engine::bindings::process_environment();
        match wb_engine::runtime::remote::orphans::reclaim_run(record, &inherited) {
            Ok(destroyed) => sandboxes = destroyed,
            Err(problem) => problems.push(problem.to_string()),
        }
    }
    let lost = format!("run {} is lost (its supervisor died)", record.run_id);
    if swept.is_empty() && sandboxes.is_empty() && problems.is_empty() {
        eprintln!("{lost}: nothing of it was left running");
    }
    if !swept.processes.is_empty() {
        let pids: Vec<String> = swept.processes.iter().map(u32::to_string).collect();
        eprintln!("{lost}: stopped its runner (processes {})", pids.join(", "));
    }
    for container in &swept.containers {
        eprintln!("{lost}: removed its container {}", printable(container));
    }
    for sandbox in &sandboxes {
        eprintln!("{lost}: destroyed its sandbox {}", printable(sandbox));
    }
    for stage in &swept.stages {
        eprintln!("{lost}: removed its stage directory {}", printable(&stage.display().to_string()));
    }
    for problem in &problems {
        eprintln!("warning: {}", printable(problem));
    }
    if problems.is_empty() { Exit::Success } else { Exit::Failure }
}

pub fn status(args: &StatusArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let records: Vec<RunRecord> = runs::list(&home)
        .into_iter()
        .filter(|record| match record.state() {
            RunState::Running | RunState::NeedsInput | RunState::Idle => true,
            RunState::Lost => false,
            _ => record.ended_ago().is_some_and(|ago| ago <= RECENT),
        })
        .collect();
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{:#}", Value::Array(records.iter().map(runs::record_json).collect()))?;
        return Ok(Exit::Success);
    }
    if args.line {
        let active: Vec<&RunRecord> = records.iter().filter(|r| r.state().is_live()).collect();
        let known: f64 = active.iter().filter_map(|r| r.cost_usd).sum();
        let line = match active.len() {
            0 => "wb: idle".to_owned(),
            1 => {
                format!("wb: {} {} {}", printable(&active[0].workbench), elapsed_text(active[0]), cost_text(active[0]))
            }
            n => format!("wb: {n} runs ${known:.2}"),
        };
        writeln!(stdout, "{line}")?;
        return Ok(Exit::Success);
    }
    if records.is_empty() {
        writeln!(stdout, "No active or recent runs")?;
    }
    for record in &records {
        let doing = match record.state() {
            RunState::Running => {
                let activity = record.activity.clone().unwrap_or_else(|| "starting".to_owned());
                match &record.plan {
                    Some(plan) => format!("{} · {activity}", plan.line()),
                    None => activity,
                }
            }
            RunState::Idle => format!("idle after turn {}", record.turns),
            RunState::NeedsInput => {
                let asked: Vec<String> = record.pending.iter().map(|r| format!("{} {}", r.kind(), r.id)).collect();
                format!("needs input: {} (wb-lsp answer)", asked.join(", "))
            }
            state => state.as_str().to_owned(),
        };
        writeln!(
            stdout,
            "{}  {}  {}  {}  {}",
            record.run_id,
            printable(&record.workbench),
            printable(&doing),
            elapsed_text(record),
            cost_text(record)
        )?;
    }
    Ok(Exit::Success)
}
