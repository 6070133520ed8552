//! `send`: the next turn of a session (`run --session`), queued in its inbox and followed to its end; `resume`:
//! an ended session started again.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use wb_engine::runs::{RunRecord, RunState};
use wb_engine::{Request, RunMode, RunRequest, SessionOptions};

use super::followed::follow_turn;
use super::runs::resolve;
use crate::cli::{ResumeArgs, SendArgs, TurnTask};
use crate::exit::Exit;
use crate::supervisor;

/// The session `reference` names; `None` (after saying so) when the run it names is not a session.
fn session(home: &Path, reference: &str) -> anyhow::Result<Option<RunRecord>> {
    let record = resolve(home, reference)?;
    if !record.session {
        eprintln!("error: run {} is not a session (start one with `run --session`)", record.run_id);
        return Ok(None);
    }
    Ok(Some(record))
}

pub fn send(args: &SendArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let Some(record) = session(&home, &args.run.run)? else { return Ok(Exit::Failure) };
    let state = record.state();
    if !state.is_live() {
        eprintln!("error: session {} has ended ({})", record.run_id, state.as_str());
        return Ok(Exit::Failure);
    }
    let Some(task) = task_of(&args.turn, false)? else {
        anyhow::bail!("give the turn's task: TASK, --task-file FILE or --stdin");
    };
    let turn_running = matches!(state, RunState::Running | RunState::NeedsInput);
    if args.steer {
        if !turn_running {
            eprintln!(
                "error: session {} has no turn running ({}): send the text as its next turn",
                record.run_id,
                state.as_str()
            );
            return Ok(Exit::Failure);
        }
        return super::steer::steer(&home, &record.run_id, &task, args.json);
    }
    if turn_running && !args.queue {
        eprintln!(
            "error: session {} is in a turn: `send --queue` queues the task for after it, `send --steer` steers the \
             running turn",
            record.run_id
        );
        return Ok(Exit::Failure);
    }
    let input_id = wb_engine::sessions::queue(&home, &record.run_id, &task)
        .with_context(|| format!("cannot queue the turn for session {}", record.run_id))?;
    if args.detach {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{input_id}")?;
        return Ok(Exit::Success);
    }
    // Ctrl-C stops following; the turn goes on (`kill` ends the session).
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    follow_turn(&home, &record.run_id, Some(&stop), args.json, Some(&input_id))
}

pub fn resume(args: &ResumeArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let Some(record) = session(&home, &args.run.run)? else { return Ok(Exit::Failure) };
    if record.state().is_live() {
        eprintln!("error: session {} is still open: `wb-lsp send {}` its next turn", record.run_id, record.run_id);
        return Ok(Exit::Failure);
    }
    let kept = wb_engine::sessions::load_options(&home, &record.run_id)
        .with_context(|| format!("cannot read what session {} was started with", record.run_id))?;
    let mut settings = kept.settings;
    settings.env_files.extend(args.env_files.iter().cloned());
    let request = RunRequest {
        request: Request { settings, env: args.env.clone(), task: task_of(&args.turn, true)? },
        mode: RunMode::Session {
            limits: kept.limits,
            session: SessionOptions { idle_timeout: args.idle_timeout },
            resume_from: Some(record.run_id.clone()),
        },
        run_id: None,
    };
    let supervisor = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let (run_id, _child) = match super::execute::start(&request, &supervisor)? {
        Ok(started) => started,
        Err(code) => return Ok(code),
    };
    let first_turn = request.request.task.is_some();
    if args.detach || !first_turn {
        supervisor.store(0, Ordering::SeqCst);
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{run_id}")?;
        eprintln!("session {} resumed as {run_id} (wb-lsp send {run_id} TASK, wb-lsp kill {run_id})", record.run_id);
        return Ok(Exit::Success);
    }
    follow_turn(&home, &run_id, None, args.json, None)
}

/// The task: the argument, a file, or standard input; `None` when none was given and `optional`. An empty task
/// is refused.
fn task_of(turn: &TurnTask, optional: bool) -> anyhow::Result<Option<String>> {
    let task = if let Some(task) = &turn.task {
        task.clone()
    } else if let Some(file) = &turn.task_file {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    } else if turn.stdin {
        let mut task = String::new();
        std::io::stdin().read_to_string(&mut task).context("cannot read the task from standard input")?;
        task
    } else if optional {
        return Ok(None);
    } else {
        anyhow::bail!("give the turn's task: TASK, --task-file FILE or --stdin")
    };
    if task.trim().is_empty() {
        anyhow::bail!("the turn's task is empty");
    }
    Ok(Some(task))
}
