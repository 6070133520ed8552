//! What a runner asks, through the library: the fake `claude` (tests/fixtures/runners) reads its task on stdin,
//! asks in Claude Code's control protocol, and records what it reads back (`stdin.jsonl`). The run waits with
//! its request in `run.json` (`needs_input`) until an answer is written, `--no-input` refuses at once, and the
//! input timeout refuses what nobody answered; every event validates against the official schema.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_engine::input::{Answer, Asked, Choice, InputPolicy};
use wb_engine::runs::answers::write_answer;
use wb_engine::runs::{RunDir, RunState};
use wb_engine::{Options, RunLimits, RunMode};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_testsupport::{self as support, TASK, World, claude_world};

fn claude_options(world: &World, script: &std::path::Path) -> Options {
    let mut options = common::options(world, ".workbenches/cc-demo", TASK, world.inherited());
    for (name, value) in [
        ("ANTHROPIC_API_KEY", "sk-ant-test-value"),
        ("TRACKER_TOKEN", "tracker-test-value"),
        ("FAKE_RUNNER_SCRIPT", &script.display().to_string()),
    ] {
        options.context.inherited.insert(name.to_owned(), value.to_owned());
    }
    options.request.settings.workspaces = vec![format!("docs={}", world.root.join("docs").display())];
    options
}

/// A native stream in which Claude Code reads its task, asks `request` (a `can_use_tool`), reads the answer and
/// ends its turn.
fn asking_script(world: &World, request: Value) -> std::path::PathBuf {
    let lines = [
        json!({"fake": "read_stdin"}),
        json!({"type": "system", "subtype": "init", "session_id": "0b6b2f7e-0000-4000-8000-000000000001"}),
        json!({"type": "control_request", "request_id": "native-1", "request": request}),
        json!({"fake": "read_stdin"}),
        json!({"type": "assistant", "message": {"id": "msg_1", "content": [{"type": "text", "text": "Done."}]}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.",
            "usage": {"input_tokens": 10, "output_tokens": 2}, "total_cost_usd": 0.001}),
    ];
    let path = world.root.join("asking.jsonl");
    std::fs::write(&path, lines.map(|line| line.to_string()).join("\n")).unwrap();
    path
}

fn bash_request() -> Value {
    json!({"subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
        "input": {"command": "rm obsolete.txt", "description": "Remove a file"}, "tool_use_id": "toolu_1",
        "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm *"}],
            "behavior": "allow", "destination": "localSettings"}]})
}

/// Starts the run on a thread; returns its events as they come and the run's end.
fn start(
    options: Options,
    input: InputPolicy,
) -> (mpsc::Receiver<Value>, std::thread::JoinHandle<wb_engine::RunResult>) {
    let (tx, rx) = mpsc::channel();
    let mode = RunMode::Once { limits: RunLimits { input, ..RunLimits::default() } };
    let handle = std::thread::spawn(move || {
        let cancel = Arc::new(AtomicBool::new(false));
        wb_engine::run(&OsFileSystem, &options, &mode, ModelCatalog::embedded(), cancel, &mut |event| {
            let _ = tx.send(serde_json::to_value(event).unwrap());
        })
        .unwrap()
    });
    (rx, handle)
}

/// The events up to the first of `kind` (inclusive), within a deadline.
fn until(rx: &mpsc::Receiver<Value>, kind: &str, seen: &mut Vec<Value>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = rx.recv_timeout(left).unwrap_or_else(|_| panic!("no {kind} event; saw {seen:#?}"));
        seen.push(event.clone());
        if event["type"] == kind {
            return event;
        }
    }
}

/// The lines the fake runner read on its stdin.
fn stdin_lines(world: &World) -> Vec<Value> {
    let text = std::fs::read_to_string(world.log.join("stdin.jsonl")).unwrap_or_default();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn finish(
    rx: mpsc::Receiver<Value>,
    handle: std::thread::JoinHandle<wb_engine::RunResult>,
    mut seen: Vec<Value>,
) -> Vec<Value> {
    let result = handle.join().unwrap();
    seen.extend(rx.try_iter());
    assert_eq!(result.ending, wb_engine::Ending::Completed, "{seen:#?}");
    support::check_events(&seen, "claude-code");
    seen
}

#[test]
fn a_permission_waits_in_the_record_until_answered_and_claude_code_gets_the_answer() {
    let world = claude_world();
    let options = claude_options(&world, &asking_script(&world, bash_request()));
    let home = world.home.join(".workbench");
    let (rx, handle) = start(options, InputPolicy::default());
    let mut seen = Vec::new();
    let requested = until(&rx, "input.requested", &mut seen);
    let run_id = requested["run_id"].as_str().unwrap().to_owned();
    let data = &requested["data"];
    assert_eq!(data["kind"], "permission");
    assert_eq!(data["message"], "Bash: rm obsolete.txt");
    assert_eq!(data["options"], json!(["allow", "deny", "allow_always"]));
    // The record says what waits, so `wait`, `runs` and `status` can say it.
    let record = wb_engine::runs::read_record(&home, &run_id).unwrap();
    assert_eq!(record.state(), RunState::NeedsInput);
    assert_eq!(record.pending.len(), 1);
    assert!(matches!(record.pending[0].asked, Asked::Permission { .. }));
    let id = data["id"].as_str().unwrap();
    write_answer(&RunDir::new(&home, &run_id), id, &Answer::Choice { choice: Choice::AllowAlways }).unwrap();
    let accepted = until(&rx, "input.accepted", &mut seen);
    assert_eq!(accepted["data"], json!({"id": id, "answer": "allow_always"}));
    let seen = finish(rx, handle, seen);
    assert_eq!(wb_engine::runs::read_record(&home, &run_id).unwrap().pending.len(), 0);
    let read = stdin_lines(&world);
    assert_eq!(read.len(), 2, "the task, then the answer: {read:#?}");
    assert_eq!((read[0]["type"].as_str(), read[0]["message"]["content"].as_str()), (Some("user"), Some(TASK)));
    let response = &read[1]["response"];
    assert_eq!(
        (read[1]["type"].as_str(), response["request_id"].as_str()),
        (Some("control_response"), Some("native-1"))
    );
    assert_eq!(response["response"]["behavior"], "allow");
    assert_eq!(response["response"]["updatedInput"]["command"], "rm obsolete.txt");
    // "Always" lasts the run: never a rule written into the workspace's settings.
    assert_eq!(response["response"]["updatedPermissions"][0]["destination"], "session");
    assert_eq!(support::types(&seen).last().map(String::as_str), Some("run.completed"));
}

#[test]
fn a_question_is_answered_with_an_offered_option() {
    let world = claude_world();
    let question = json!({"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "requires_user_interaction": true,
        "tool_use_id": "toolu_2", "input": {"questions": [{"question": "Which colour?", "header": "Colour",
            "multiSelect": false, "options": [{"label": "Red", "description": "warm"}, {"label": "Blue"}]}]}});
    let options = claude_options(&world, &asking_script(&world, question));
    let home = world.home.join(".workbench");
    let (rx, handle) = start(options, InputPolicy::default());
    let mut seen = Vec::new();
    let requested = until(&rx, "question.requested", &mut seen);
    let run_id = requested["run_id"].as_str().unwrap().to_owned();
    let record = wb_engine::runs::read_record(&home, &run_id).unwrap();
    let request = record.pending.first().expect("the question waits").clone();
    assert!(request.answer_from_text("Green").is_ok(), "Claude Code takes the person's own words too");
    let answer = request.answer_from_text("Blue").unwrap();
    write_answer(&RunDir::new(&home, &run_id), &request.id, &answer).unwrap();
    let answered = until(&rx, "question.answered", &mut seen);
    assert_eq!(answered["data"], json!({"id": request.id, "answer_count": 1}));
    finish(rx, handle, seen);
    let read = stdin_lines(&world);
    let updated = &read[1]["response"]["response"]["updatedInput"];
    assert_eq!(updated["answers"], json!({"Which colour?": "Blue"}));
}

#[test]
fn no_input_refuses_at_once_and_claude_code_is_denied() {
    let world = claude_world();
    let options = claude_options(&world, &asking_script(&world, bash_request()));
    let (rx, handle) = start(options, InputPolicy { no_input: true, timeout: None });
    let mut seen = Vec::new();
    let rejected = until(&rx, "input.rejected", &mut seen);
    assert!(rejected["data"]["reason"].as_str().unwrap().contains("--no-input"), "{rejected}");
    finish(rx, handle, seen);
    let read = stdin_lines(&world);
    assert_eq!(read[1]["response"]["response"]["behavior"], "deny");
    assert!(read[1]["response"]["response"]["message"].as_str().unwrap().contains("--no-input"));
}

#[test]
fn a_request_nobody_answers_is_refused_after_the_input_timeout() {
    let world = claude_world();
    let options = claude_options(&world, &asking_script(&world, bash_request()));
    let started = Instant::now();
    let (rx, handle) = start(options, InputPolicy { no_input: false, timeout: Some(Duration::from_millis(400)) });
    let mut seen = Vec::new();
    let requested = until(&rx, "input.requested", &mut seen);
    let rejected = until(&rx, "input.rejected", &mut seen);
    assert_eq!(rejected["data"]["id"], requested["data"]["id"]);
    assert!(rejected["data"]["reason"].as_str().unwrap().contains("--input-timeout"), "{rejected}");
    assert!(started.elapsed() >= Duration::from_millis(400));
    finish(rx, handle, seen);
    assert_eq!(stdin_lines(&world)[1]["response"]["response"]["behavior"], "deny");
}

/// Claude Code's todo list is the run's plan: `plan.updated` with every item, and the record's summary.
#[test]
fn a_todo_list_is_the_plan() {
    let world = claude_world();
    let todos = json!([{"content": "Read the code", "status": "completed", "activeForm": "Reading"},
        {"content": "Write tests", "status": "in_progress", "activeForm": "Writing tests"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"}]);
    let lines = [
        json!({"fake": "read_stdin"}),
        json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "toolu_t",
            "name": "TodoWrite", "input": {"todos": todos}}]}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_t", "content": "ok"}]}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.",
            "usage": {"input_tokens": 1, "output_tokens": 1}, "total_cost_usd": 0.0}),
    ];
    let script = world.root.join("plan.jsonl");
    std::fs::write(&script, lines.map(|line| line.to_string()).join("\n")).unwrap();
    let (rx, handle) = start(claude_options(&world, &script), InputPolicy::default());
    let mut seen = Vec::new();
    let plan = until(&rx, "plan.updated", &mut seen);
    assert_eq!(plan["data"]["completed"], 1);
    assert_eq!(plan["data"]["total"], 3);
    assert_eq!(plan["data"]["items"][1], json!({"text": "Write tests", "status": "in_progress"}));
    let run_id = plan["run_id"].as_str().unwrap().to_owned();
    finish(rx, handle, seen);
    let record = wb_engine::runs::read_record(&world.home.join(".workbench"), &run_id).unwrap();
    assert_eq!(record.plan.map(|plan| plan.line()).as_deref(), Some("1/3 · Write tests"));
}
