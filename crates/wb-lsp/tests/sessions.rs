//! Sessions through the built binary with the fake OpenCode runner: `run --session` returns after the first
//! turn and leaves the session idle; `send` runs the next turn with the runner's conversation carried on
//! (`--session <id>` from the runner's events); `runs` shows it idle with its turns; `kill` ends it with its
//! final outcome; `send` to a one-shot run or an ended session is refused; `resume` without a task starts the
//! ended session again, idle; the editor runs a session turn by turn; a lost session resumes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::{Value, json};
use wb_testsupport::{Output, TASK, World, finish, opencode_world};

const BIN: &str = env!("CARGO_BIN_EXE_wb-lsp");

fn wb(world: &World, script: &PathBuf, args: &[&str]) -> Output {
    finish(
        world
            .command(BIN)
            .args(args)
            .env("OPENAI_API_KEY", "sk-openai-test-value")
            .env("DATABASE_URL", "postgres://db.internal/ledger")
            .env("FAKE_RUNNER_SCRIPT", script),
    )
}

fn events(output: &Output) -> Vec<Value> {
    output.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

/// The arguments the fake runner was last started with.
fn last_argv(world: &World) -> Vec<String> {
    let invocation: Value =
        serde_json::from_str(&std::fs::read_to_string(world.log.join("invocation.json")).unwrap()).unwrap();
    serde_json::from_value(invocation["argv"].clone()).unwrap()
}

fn record(world: &World, id: &str) -> Value {
    let path = world.home.join(".workbench/runs").join(id).join("run.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One OpenCode answer in session `ses_1`.
fn script(world: &World) -> PathBuf {
    let path = world.root.join("answer.jsonl");
    let line = json!({"type": "text", "timestamp": 1764480000020u64, "sessionID": "ses_1", "part": {"sessionID": "ses_1",
        "messageID": "msg_1", "id": "prt_text", "type": "text", "text": "Turn done.", "time": {"start": 1, "end": 2}}});
    std::fs::write(&path, format!("{line}\n")).unwrap();
    path
}

/// `run --session` on the demo package (its first turn), which must succeed.
fn start_session(world: &World, script: &PathBuf) -> Output {
    let work = world.work.display().to_string();
    let first =
        wb(world, script, &["run", "--session", ".workbenches/oc-demo", "--dir", &work, "--task", TASK, "--json"]);
    assert_eq!(first.code, 0, "{first:?}");
    first
}

#[test]
fn a_session_takes_turns_until_it_is_killed() {
    let world = opencode_world();
    let script = script(&world);
    let first = start_session(&world, &script);
    let first = events(&first);
    let id = first[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(kinds(&first), ["run.started", "run.ready", "turn.started", "output.text", "turn.completed"]);
    assert_eq!(first[4]["data"]["turn_index"], 1);
    assert_eq!(first[4]["data"]["status"], "completed");
    assert!(!last_argv(&world).contains(&"--session".to_owned()));
    assert_eq!(record(&world, &id)["status"], "idle");

    let second = wb(&world, &script, &["send", "--json", &id, "Now the second part."]);
    assert_eq!(second.code, 0, "{second:?}");
    let second = events(&second);
    assert_eq!(kinds(&second), ["turn.started", "output.text", "turn.completed"]);
    assert_eq!(second[0]["data"]["turn_index"], 2);
    assert!(second[0]["data"]["input_id"].as_str().unwrap().starts_with("in_"));
    let argv = last_argv(&world);
    let at = argv.iter().position(|a| a == "--session").expect("the conversation is carried on");
    assert_eq!(argv[at + 1], "ses_1");
    assert_eq!(argv.last().map(String::as_str), Some("Now the second part."));

    let listed: Value = serde_json::from_str(&wb(&world, &script, &["runs", "--json"]).stdout).unwrap();
    let listed = listed.as_array().unwrap().iter().find(|r| r["run_id"] == id.as_str()).unwrap().clone();
    assert_eq!((&listed["state"], &listed["turns"], &listed["session"]), (&json!("idle"), &json!(2), &json!(true)));
    let status = wb(&world, &script, &["status"]);
    assert!(status.stdout.contains("idle after turn 2"), "{status:?}");
    // The task is never logged; the record keeps its first task's digest only.
    let log = std::fs::read_to_string(world.home.join(".workbench/runs").join(&id).join("events.ndjson")).unwrap();
    assert!(!log.contains("Now the second part."));

    let killed = wb(&world, &script, &["kill", &id]);
    assert_eq!(killed.code, 0, "{killed:?}");
    assert_eq!(wb(&world, &script, &["wait", &id]).code, 0);
    let log: Vec<Value> = std::fs::read_to_string(world.home.join(".workbench/runs").join(&id).join("events.ndjson"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(kinds(&log[log.len() - 2..]), ["outcome.available", "run.completed"]);
    assert!(log[log.len() - 2]["data"].get("turn_index").is_none());
    assert_eq!(record(&world, &id)["status"], "completed");

    let late = wb(&world, &script, &["send", &id, "Too late."]);
    assert_eq!(late.code, 1, "{late:?}");
    assert!(late.stderr.contains(&format!("session {id} has ended (completed)")), "{late:?}");

    // Resumed without a task, the session starts again and waits; its record names the one it resumed.
    let resumed = wb(&world, &script, &["resume", &id]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let new_id = resumed.stdout.trim().to_owned();
    assert!(new_id.starts_with("wb_") && new_id != id, "{resumed:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while record(&world, &new_id)["status"] != "idle" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let again = record(&world, &new_id);
    assert_eq!((&again["status"], &again["resumed_from"], &again["turns"]), (&json!("idle"), &json!(id), &json!(0)));
    let third = wb(&world, &script, &["send", "--json", &new_id, "Go on."]);
    assert_eq!(third.code, 0, "{third:?}");
    let argv = last_argv(&world);
    let at = argv.iter().position(|a| a == "--session").expect("the resumed conversation is carried on");
    assert_eq!(argv[at + 1], "ses_1");
    assert_eq!(wb(&world, &script, &["kill", &new_id]).code, 0);
}

#[test]
fn send_refuses_a_run_that_is_not_a_session() {
    let world = opencode_world();
    let script = script(&world);
    let work = world.work.display().to_string();
    let run = wb(&world, &script, &["run", ".workbenches/oc-demo", "--dir", &work, "--task", TASK, "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!kinds(&events(&run)).contains(&"turn.started"), "a one-shot run has no turns: {run:?}");
    let id = events(&run)[0]["run_id"].as_str().unwrap().to_owned();
    let sent = wb(&world, &script, &["send", &id, "More."]);
    assert_eq!(sent.code, 1, "{sent:?}");
    assert!(sent.stderr.contains("is not a session"), "{sent:?}");
    let resumed = wb(&world, &script, &["resume", &id]);
    assert_eq!(resumed.code, 1, "{resumed:?}");
}

/// The editor's side: `workbench.run` with `session` answers when the first turn has ended, `workbench.send`
/// runs the next with its events as `workbench/runEvent`, `workbench.runs` shows the session idle, and
/// `workbench.kill` ends it.
#[test]
fn the_editor_runs_a_session_turn_by_turn() {
    use wb_testsupport::lsp::{Client, uri};
    let world = opencode_world();
    let script = script(&world);
    let mut command = world.command(BIN);
    command
        .arg("serve")
        .env("OPENAI_API_KEY", "sk-openai-test-value")
        .env("DATABASE_URL", "postgres://db.internal/ledger")
        .env("FAKE_RUNNER_SCRIPT", &script);
    let (mut client, _) = Client::start(command, &world.repo, json!({}), json!({}));
    let manifest = world.repo.join(".workbenches/oc-demo/workbench.yml");
    let arguments = json!([{"uri": uri(&manifest), "task": TASK, "dir": world.work, "session": true}]);
    let (first, _) =
        client.request("workspace/executeCommand", json!({"command": "workbench.run", "arguments": arguments}));
    assert_eq!(
        (&first["turnIndex"], &first["status"], &first["finalText"]),
        (&json!(1), &json!("completed"), &json!("Turn done."))
    );
    let id = first["runId"].as_str().unwrap().to_owned();

    let (runs, _) = client.request("workspace/executeCommand", json!({"command": "workbench.runs", "arguments": []}));
    let listed = runs.as_array().unwrap().iter().find(|r| r["run_id"] == id.as_str()).cloned().unwrap_or(runs.clone());
    assert_eq!(listed["state"], "idle", "{runs}");

    client.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "workspace/executeCommand",
        "params": {"command": "workbench.send", "arguments": [{"runId": id, "task": "Now the second part."}]}}));
    let (answer, before) = client.response(900);
    let result = &answer["result"];
    assert_eq!((&result["turnIndex"], &result["status"]), (&json!(2), &json!("completed")), "{answer}");
    let streamed: Vec<&str> = before
        .iter()
        .filter(|m| m["method"] == "workbench/runEvent")
        .filter_map(|m| m["params"]["event"]["type"].as_str())
        .collect();
    assert_eq!(streamed, ["turn.started", "output.text", "turn.completed"], "{before:#?}");

    client.request("workspace/executeCommand", json!({"command": "workbench.kill", "arguments": [{"runId": id}]}));
    // `workbench.kill` answers once asked (and `wait` returns at once on an idle session): the end is awaited.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while record(&world, &id)["status"] != "completed" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(record(&world, &id)["status"], "completed");
    client.send(&json!({"jsonrpc": "2.0", "id": 901, "method": "workspace/executeCommand",
        "params": {"command": "workbench.send", "arguments": [{"runId": id, "task": "Too late."}]}}));
    let (refused, _) = client.response(901);
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("has ended"), "{refused}");
}

/// A session whose supervisor is SIGKILLed while idle is `lost`; `resume` starts it again from what it kept after
/// its last turn (its options and the runner's conversation id), and the next turn carries the conversation on.
#[test]
fn a_lost_session_is_resumed_from_what_it_kept() {
    let world = opencode_world();
    let script = script(&world);
    let first = start_session(&world, &script);
    let id = events(&first)[0]["run_id"].as_str().unwrap().to_owned();
    let pid = record(&world, &id)["pid"].as_i64().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let state = |world: &World| -> Value {
        let listed: Value = serde_json::from_str(&wb(world, &script, &["runs", "--all", "--json"]).stdout).unwrap();
        listed.as_array().unwrap().iter().find(|r| r["run_id"] == id.as_str()).unwrap()["state"].clone()
    };
    while state(&world) != "lost" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(state(&world), "lost");
    let sent = wb(&world, &script, &["send", &id, "More."]);
    assert_eq!(sent.code, 1, "a lost session takes no turn: {sent:?}");

    let resumed = wb(&world, &script, &["resume", "--json", &id, "Go on after the crash."]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let events = events(&resumed);
    let new_id = events[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(events.iter().filter(|e| e["type"] == "turn.completed").count(), 1, "{events:#?}");
    let argv = last_argv(&world);
    let at = argv.iter().position(|a| a == "--session").expect("the conversation is carried on");
    assert_eq!((argv[at + 1].as_str(), argv.last().map(String::as_str)), ("ses_1", Some("Go on after the crash.")));
    assert_eq!(record(&world, &new_id)["resumed_from"], id.as_str());
    assert_eq!(wb(&world, &script, &["kill", &new_id]).code, 0);
}
