//! A run followed from outside its process, as the runs tests follow `wb-lsp run --json`: a script for the fake
//! OpenCode runner, the events a started run prints up to the one a test waits for, and what its log keeps.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::World;
use crate::deadline::{Deadline, deadline};

/// A started run: its process, the events read so far, and the rest of its standard output (read by a new
/// deadline as long as the first).
pub type Started = (Child, Vec<Value>, BufReader<Deadline>);

/// The native stream `lines` written to `<world.root>/<name>.jsonl`, for the fake runner's `FAKE_RUNNER_SCRIPT`.
pub fn script_file(world: &World, name: &str, lines: &[Value]) -> PathBuf {
    let path = world.root.join(format!("{name}.jsonl"));
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// An OpenCode text event saying `words`.
pub fn opencode_text(words: &str) -> Value {
    json!({"type": "text", "timestamp": 1764480000020u64, "sessionID": "ses_1", "part": {"sessionID": "ses_1",
        "messageID": "msg_1", "id": "prt_text", "type": "text", "text": words, "time": {"start": 1, "end": 2}}})
}

/// Reads the events `child` (with its stdout piped) prints, one JSON object a line, until one for which `done`
/// holds. Past `within` (a read waiting included), or at the end of its output, the child is killed and the test
/// fails naming `what`.
pub fn events_until(mut child: Child, within: Duration, what: &str, done: impl Fn(&Value) -> bool) -> Started {
    let stdout = child.stdout.take().unwrap();
    let pid = child.id();
    let mut reader = BufReader::new(deadline(stdout, within, &format!("{what} (from process {pid})")));
    let mut events = Vec::new();
    let mut line = String::new();
    let deadline = Instant::now() + within;
    // A read past the deadline panics: the child is killed first, by this guard.
    let mut guard = KillOnDrop(Some(child));
    while Instant::now() < deadline {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let event: Value = serde_json::from_str(line.trim()).unwrap();
        let found = done(&event);
        events.push(event);
        if found {
            reader.get_mut().renew(within);
            let child = guard.0.take().unwrap();
            return (child, events, reader);
        }
    }
    drop(guard);
    panic!("{what}: {events:?}");
}

/// Kills and reaps the child it holds when dropped (a failed test leaves no process behind).
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The run id of a run's events.
pub fn run_id(events: &[Value]) -> String {
    events[0]["run_id"].as_str().unwrap().to_owned()
}

/// A run's record, `runs/<id>/run.json` in the world's Workbench home.
pub fn run_record(world: &World, id: &str) -> Value {
    let path = world.home.join(".workbench/runs").join(id).join("run.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
