//! `send --steer`: the text goes to the running turn's runner through its own steering (`runs::steering`), and
//! the command follows the run's log until the runner took it (`input.delivered`, exit 0) or it was refused
//! (`input.rejected` with the reason, exit 1: a runner without steering, a sandbox, the turn ended first).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use wb_engine::events::EventKind;
use wb_engine::runs::{self, LogReader, RunDir, RunState};

use super::printable;
use crate::exit::Exit;

pub(super) fn steer(home: &std::path::Path, run_id: &str, text: &str, json: bool) -> anyhow::Result<Exit> {
    // From the log's end as it is now: the steer's events come after.
    let mut reader = LogReader::open(home, run_id)?;
    let _ = reader.read_new()?;
    let id = runs::steering::steer(&RunDir::new(home, run_id), text)
        .with_context(|| format!("cannot steer session {run_id}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    while !stop.load(Ordering::SeqCst) {
        for logged in reader.read_new()? {
            let Some(event) = logged.event() else { continue };
            if event.text("id") != Some(id.as_str()) {
                continue;
            }
            let mut stdout = std::io::stdout().lock();
            if json {
                writeln!(stdout, "{}", serde_json::to_string(event)?)?;
            }
            match event.known() {
                Some(EventKind::InputAccepted) if !json => writeln!(stdout, "steer {id}: given to the runner")?,
                Some(EventKind::InputDelivered) => {
                    if !json {
                        writeln!(stdout, "steer {id}: delivered")?;
                    }
                    return Ok(Exit::Success);
                }
                Some(EventKind::InputRejected) => {
                    eprintln!("error: steer {id} refused: {}", printable(event.text("reason").unwrap_or("refused")));
                    return Ok(Exit::Failure);
                }
                _ => {}
            }
        }
        let state = runs::read_record(home, run_id).map(|record| record.state()).ok();
        if !state.is_some_and(|state| state.is_live()) {
            eprintln!("error: session {run_id} ended before the runner took steer {id}");
            return Ok(Exit::Failure);
        }
        // The turn ended before its owner looked: the steer is taken back, never left for the next turn.
        if state == Some(RunState::Idle) && runs::steering::withdraw(&RunDir::new(home, run_id), &id) {
            eprintln!("error: steer {id} refused: the turn ended before the runner took it");
            return Ok(Exit::Failure);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("steer {id}: still on its way (the runner has not said it took it)");
    Ok(Exit::Cancelled)
}
