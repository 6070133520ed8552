//! A run followed from outside its process, as the runs tests follow `wb-lsp run --json`: a script for the fake
//! OpenCode runner, the events a started run prints up to the one a test waits for, and what its log keeps.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::World;

/// A started run: its process, the events read so far, and the rest of its standard output.
pub type Started = (Child, Vec<Value>, BufReader<ChildStdout>);

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
/// holds. Past `within`, or at the end of its output, the child is killed and the test fails naming `what`.
pub fn events_until(mut child: Child, within: Duration, what: &str, done: impl Fn(&Value) -> bool) -> Started {
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut events = Vec::new();
    let mut line = String::new();
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let event: Value = serde_json::from_str(line.trim()).unwrap();
        let found = done(&event);
        events.push(event);
        if found {
            return (child, events, reader);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("{what}: {events:?}");
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
