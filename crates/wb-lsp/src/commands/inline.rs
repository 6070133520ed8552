//! `run` in a terminal asks inline what its run asks (docs/runs.md#answering): the request with its options,
//! then a prompt on the terminal; the answer goes the way `wb-lsp answer` sends one. An empty line leaves the
//! request to another window or `wb-lsp answer`; a request answered elsewhere meanwhile (or refused after the
//! input timeout) stops the prompt.

use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::Duration;

use wb_engine::input::{Asked, Request};
use wb_engine::runs::answers::{Given, answer};

use super::printable;

/// The terminal's lines, read on a thread of their own so a prompt can give up when the request is resolved.
pub(super) struct Terminal {
    lines: mpsc::Receiver<String>,
}

impl Terminal {
    pub(super) fn new() -> Terminal {
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Terminal { lines }
    }

    /// Asks `request` of run `run_id` until it is answered, left (an empty line), or resolved elsewhere.
    pub(super) fn ask(&self, home: &std::path::Path, run_id: &str, request: &Request) {
        // Resolved before it was read here (`--no-input`, an answer from elsewhere): nothing to ask.
        if !pending(home, run_id, request) {
            return;
        }
        for _ in 0..3 {
            let Some(text) = self.read_answer(home, run_id, request) else { return };
            match answer(home, run_id, &request.id, Given::Text(&text)) {
                Ok(_) => return,
                Err(error) => eprintln!("  {}", printable(&error.to_string())),
            }
        }
        eprintln!("  left for later: wb-lsp answer {run_id} {} …", request.id);
    }

    /// What the person typed for `request`, as `wb-lsp answer` takes it; `None` when they left it or it was
    /// resolved elsewhere.
    fn read_answer(&self, home: &std::path::Path, run_id: &str, request: &Request) -> Option<String> {
        match &request.asked {
            Asked::Permission { options, .. } => {
                let offered: Vec<&str> = options.iter().map(|o| o.as_str()).collect();
                self.line(home, run_id, request, &format!("  answer ({}; empty: later): ", offered.join(", ")))
            }
            Asked::Question { questions } => {
                let mut answers = Vec::new();
                for question in questions {
                    eprintln!("  {}", printable(&question.question));
                    for (index, option) in question.options.iter().enumerate() {
                        let description = option.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
                        eprintln!("    {}. {}{}", index + 1, printable(&option.label), printable(&description));
                    }
                    let how = match (question.multiple, question.custom) {
                        (true, _) => "numbers or labels, comma-separated",
                        (false, true) => "a number, a label or your own words",
                        (false, false) => "a number or a label",
                    };
                    let typed = self.line(home, run_id, request, &format!("  answer ({how}; empty: later): "))?;
                    let parts: Vec<&str> =
                        if question.multiple { typed.split(',').map(str::trim).collect() } else { vec![typed.trim()] };
                    let chosen: Vec<String> = parts
                        .into_iter()
                        .map(|part| {
                            match part.parse::<usize>().ok().and_then(|n| question.options.get(n.wrapping_sub(1))) {
                                Some(option) => option.label.clone(),
                                None => part.to_owned(),
                            }
                        })
                        .collect();
                    answers.push(chosen);
                }
                serde_json::to_string(&answers).ok()
            }
            Asked::Authentication { .. } => None,
        }
    }

    /// Prompts and waits for a line; `None` for an empty one, or once the request is no longer pending.
    fn line(&self, home: &std::path::Path, run_id: &str, request: &Request, prompt: &str) -> Option<String> {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        loop {
            match self.lines.recv_timeout(Duration::from_millis(250)) {
                Ok(line) if line.trim().is_empty() => return None,
                Ok(line) => return Some(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !pending(home, run_id, request) {
                        eprintln!("(answered elsewhere)");
                        return None;
                    }
                }
            }
        }
    }
}

/// Whether `request` still waits, as the run's record says.
fn pending(home: &std::path::Path, run_id: &str, request: &Request) -> bool {
    wb_engine::runs::read_record(home, run_id).is_ok_and(|record| record.pending.iter().any(|p| p.id == request.id))
}
