//! A run's events followed from its log and printed: each event as logged (`--json`) or for a person, and one
//! turn of a session followed to its end (`run --session`, `send`, `resume`).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use wb_engine::events::EventKind;
use wb_engine::runs::{self, Followed, Logged, RunState};

use crate::exit::Exit;

/// Prints one event read from a run's log: the line as logged with `json`, else for a person.
pub(super) fn print_logged(logged: &Logged, json: bool) {
    if json {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{}", logged.to_json());
    } else if let Some(event) = logged.event() {
        print_event(event.known(), &event.data);
    }
}

/// Prints one event for a person: the runner's text on stdout, tools, outcomes and failures on stderr.
fn print_event(kind: Option<EventKind>, data: &serde_json::Value) {
    let mut stdout = std::io::stdout().lock();
    let Some(kind) = kind else { return };
    match kind {
        // Everything here is the runner's text: made printable, so it cannot drive the terminal.
        EventKind::OutputText => {
            let text = data.get("text").and_then(|t| t.as_str()).unwrap_or_default();
            let _ = writeln!(stdout, "{}", super::printable_text(text));
        }
        EventKind::ToolStarted => {
            let name = data.get("name").and_then(|t| t.as_str()).unwrap_or_default();
            let target = data.get("target").and_then(|t| t.as_str()).unwrap_or_default();
            eprintln!("• {} {}", super::printable(name), super::printable(target));
        }
        EventKind::OutcomeAvailable => {
            let id = data.get("outcome_id").and_then(|t| t.as_str()).unwrap_or_default();
            eprintln!("outcome: {id} (wb-lsp outcome {id})");
        }
        // The run's work did not reach the user: the command exits 1 even when the runner succeeded.
        EventKind::OutcomeFailed => {
            let message = data.get("message").and_then(|t| t.as_str()).unwrap_or_default();
            eprintln!("error: {}", super::printable(message));
        }
        EventKind::RunFailed => {
            let message = data.get("message").and_then(|t| t.as_str()).unwrap_or_default();
            eprintln!("error: {}", super::printable(message));
        }
        // What the run asks the person: seen where they watch, answered with `wb-lsp answer`.
        EventKind::InputRequested | EventKind::QuestionRequested => {
            if let Some(request) = wb_engine::input::Request::from_data(kind, data) {
                eprintln!("? {} (wb-lsp answer RUN {} ...)", super::printable(&request.details()), request.id);
            }
        }
        EventKind::InputAccepted | EventKind::QuestionAnswered => {
            let id = data.get("id").and_then(|t| t.as_str()).unwrap_or_default();
            let how = data.get("answer").and_then(|t| t.as_str()).unwrap_or("answered");
            eprintln!("  {}: {}", super::printable(id), super::printable(how));
        }
        EventKind::InputRejected | EventKind::QuestionRejected => {
            let id = data.get("id").and_then(|t| t.as_str()).unwrap_or_default();
            let reason = data.get("reason").and_then(|t| t.as_str()).unwrap_or("refused");
            eprintln!("  {}: refused: {}", super::printable(id), super::printable(reason));
        }
        // What the engine noticed about the runner's output (a line over the limit).
        EventKind::RunnerEvent => {
            if let Some(warning) = data.get("warning").and_then(|t| t.as_str()) {
                eprintln!("warning: {}", super::printable(warning));
            }
        }
        _ => {}
    }
}

/// Prints the events of one turn of a session (the one that took `input`, or the first), from its
/// `turn.started` to its `turn.completed` (or the session's end); exit 0 when the turn completed.
pub(super) fn follow_turn(
    home: &Path,
    run_id: &str,
    stop: Option<&AtomicBool>,
    json: bool,
    input: Option<&str>,
) -> anyhow::Result<Exit> {
    let (followed, end) = runs::follow_turn(home, run_id, stop, input, &mut |event| print_logged(event, json))?;
    let (index, status) = (end.index, end.status);
    Ok(match followed {
        Followed::Reached if status == "completed" => {
            if std::io::stderr().is_terminal() && !json {
                eprintln!(
                    "session {run_id} is waiting: `wb-lsp send {run_id} TASK` runs the next turn, `wb-lsp kill {run_id}` \
                     ends it and collects its outcome"
                );
            }
            Exit::Success
        }
        Followed::Reached => Exit::Failure,
        Followed::Ended { state, .. } => {
            if index.is_none() {
                eprintln!("error: session {run_id} ended ({}) before it took the turn", state.as_str());
            }
            match state {
                RunState::Cancelled => Exit::Cancelled,
                RunState::Completed if index.is_some() => Exit::Success,
                _ => Exit::Failure,
            }
        }
        Followed::Lost => {
            eprintln!("error: session {run_id} is lost: the process that owned it ended");
            Exit::Failure
        }
        Followed::Stopped => {
            eprintln!("stopped following; the turn goes on (wb-lsp attach {run_id}, wb-lsp kill {run_id})");
            Exit::Cancelled
        }
    })
}
