//! `send`: the next turn of a session (`run --session`), queued in its inbox and followed to its end; and the
//! following of one turn that `run --session` shares.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use serde_json::Value;
use wb_engine::runs::RunState;

use super::execute::print_logged;
use super::runs::resolve;
use crate::cli::SendArgs;
use crate::supervisor::{self, Followed};

/// Which turn a follower waits for.
enum Turn<'a> {
    /// The first one started (`run --session`).
    First,
    /// The one started for this queued input.
    Input(&'a str),
}

pub fn send(args: &SendArgs) -> anyhow::Result<ExitCode> {
    let home = supervisor::home()?;
    let record = resolve(&home, &args.run.run)?;
    if !record.session {
        eprintln!("error: run {} is not a session (start one with `run --session`)", record.run_id);
        return Ok(ExitCode::from(1));
    }
    let state = record.state();
    if !state.is_live() {
        eprintln!("error: session {} has ended ({})", record.run_id, state.as_str());
        return Ok(ExitCode::from(1));
    }
    let task = task(args)?;
    if task.trim().is_empty() {
        anyhow::bail!("the turn's task is empty");
    }
    let input_id = wb_engine::sessions::queue(&home, &record.run_id, &task)
        .with_context(|| format!("cannot queue the turn for session {}", record.run_id))?;
    if args.detach {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{input_id}")?;
        return Ok(ExitCode::SUCCESS);
    }
    // Ctrl-C stops following; the turn goes on (`kill` ends the session).
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    follow_turn_of(&home, &record.run_id, Some(&stop), args.json, &Turn::Input(&input_id))
}

/// Follows the first turn of session `run_id` (what `run --session` does once it has started).
pub fn follow_turn(home: &Path, run_id: &str, stop: Option<&AtomicBool>, json: bool) -> anyhow::Result<ExitCode> {
    follow_turn_of(home, run_id, stop, json, &Turn::First)
}

/// Prints the events of one turn of a session, from its `turn.started` to its `turn.completed` (or the
/// session's end); exit 0 when the turn completed.
fn follow_turn_of(
    home: &Path,
    run_id: &str,
    stop: Option<&AtomicBool>,
    json: bool,
    turn: &Turn<'_>,
) -> anyhow::Result<ExitCode> {
    let mut index: Option<u64> = None;
    let mut status = String::new();
    let followed = supervisor::follow_until(home, run_id, stop, &mut |event| {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        let data = event.get("data").unwrap_or(&Value::Null);
        let turn_index = data.get("turn_index").and_then(Value::as_u64);
        if index.is_none() {
            let ours = match turn {
                Turn::First => kind == "turn.started",
                Turn::Input(id) => {
                    kind == "turn.started" && data.get("input_id").and_then(Value::as_str) == Some(id)
                }
            };
            // Before the turn: `run --session` shows the run's start too; `send` shows nothing of earlier turns.
            if ours {
                index = turn_index;
            } else if !matches!(turn, Turn::First) {
                return false;
            }
        }
        print_logged(event, json);
        if kind == "turn.completed" && turn_index.is_some() && turn_index == index {
            status = data.get("status").and_then(Value::as_str).unwrap_or_default().to_owned();
            return true;
        }
        false
    })?;
    Ok(match followed {
        Followed::Reached if status == "completed" => {
            if std::io::stderr().is_terminal() && !json {
                eprintln!(
                    "session {run_id} is waiting: `wb-lsp send {run_id} TASK` runs the next turn, `wb-lsp kill {run_id}` \
                     ends it and collects its outcome"
                );
            }
            ExitCode::SUCCESS
        }
        Followed::Reached => ExitCode::from(1),
        Followed::Ended { state, .. } => {
            if index.is_none() {
                eprintln!("error: session {run_id} ended ({}) before it took the turn", state.as_str());
            }
            match state {
                RunState::Cancelled => ExitCode::from(130),
                RunState::Completed if index.is_some() => ExitCode::SUCCESS,
                _ => ExitCode::from(1),
            }
        }
        Followed::Lost => {
            eprintln!("error: session {run_id} is lost: the process that owned it ended");
            ExitCode::from(1)
        }
        Followed::Stopped => {
            eprintln!("stopped following; the turn goes on (wb-lsp attach {run_id}, wb-lsp kill {run_id})");
            ExitCode::from(130)
        }
    })
}

/// The task: the argument, a file, or standard input.
fn task(args: &SendArgs) -> anyhow::Result<String> {
    if let Some(task) = &args.task {
        return Ok(task.clone());
    }
    if let Some(file) = &args.task_file {
        return std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()));
    }
    if args.stdin {
        let mut task = String::new();
        std::io::stdin().read_to_string(&mut task).context("cannot read the task from standard input")?;
        return Ok(task);
    }
    anyhow::bail!("give the turn's task: TASK, --task-file FILE or --stdin")
}
