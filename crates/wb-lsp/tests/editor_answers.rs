//! What a run asks, in the editor, through the built server and the fake `claude`: a run started with
//! `workbench.run` sends `workbench/inputRequested` for each request, `workbench.answer` answers one (an answer
//! that does not fit is an error and changes nothing), a request answered elsewhere (`wb-lsp answer`) is
//! withdrawn with `workbench/inputResolved`, and the run then ends as usual.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_testsupport::lsp::{Client, uri};
use wb_testsupport::{TASK, World, claude_world, finish};

const BIN: &str = env!("CARGO_BIN_EXE_wb-lsp");

/// Claude Code reads its task, asks permission for a Bash command, then a question, and ends.
fn script(world: &World) -> std::path::PathBuf {
    let ask = |id: &str, request: Value| json!({"type": "control_request", "request_id": id, "request": request});
    let lines = [
        json!({"fake": "read_stdin"}),
        ask(
            "native-1",
            json!({"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "rm obsolete.txt"},
            "tool_use_id": "toolu_1", "permission_suggestions": [{"type": "addRules", "behavior": "allow",
                "rules": [{"toolName": "Bash"}], "destination": "localSettings"}]}),
        ),
        json!({"fake": "read_stdin"}),
        ask(
            "native-2",
            json!({"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_2",
            "input": {"questions": [{"question": "Which colour?", "header": "Colour", "multiSelect": false,
                "options": [{"label": "Red"}, {"label": "Blue"}]}]}}),
        ),
        json!({"fake": "read_stdin"}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.",
            "usage": {"input_tokens": 1, "output_tokens": 1}, "total_cost_usd": 0.0}),
    ];
    let path = world.root.join("asking.jsonl");
    std::fs::write(&path, lines.map(|line| line.to_string()).join("\n")).unwrap();
    path
}

/// The next notification `method`, within a deadline (everything else that comes is skipped).
fn notified(client: &mut Client, method: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(message) = client.next(Duration::from_millis(200))
            && message["method"] == method
        {
            return message["params"].clone();
        }
    }
    panic!("no {method} within 30 s");
}

#[test]
fn the_editor_is_asked_and_answers_and_what_is_answered_elsewhere_is_withdrawn() {
    let world = claude_world();
    let mut command = world.command(BIN);
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-test-value")
        .env("TRACKER_TOKEN", "tracker-test-value")
        .env("FAKE_RUNNER_SCRIPT", script(&world));
    let (mut client, _) = Client::start(command, &world.repo, json!({}), json!({}));
    let manifest = world.repo.join(".workbenches/cc-demo/workbench.yml");
    let argument = json!({"uri": uri(&manifest), "task": TASK, "dir": world.work,
        "workspaces": [format!("docs={}", world.root.join("docs").display())]});
    client.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [argument]}}));

    let asked = notified(&mut client, "workbench/inputRequested");
    let run_id = asked["runId"].as_str().unwrap().to_owned();
    let request = &asked["request"];
    let id = request["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (request["kind"].as_str(), request["message"].as_str()),
        (Some("permission"), Some("Bash: rm obsolete.txt"))
    );
    assert_eq!(request["options"], json!(["allow", "deny", "allow_always"]));
    assert_eq!(asked["text"], format!("permission · {id}: Bash: rm obsolete.txt (allow, deny, allow_always)"));
    // An answer that does not fit is an error; the request still waits.
    client.send(&json!({"jsonrpc": "2.0", "id": 901, "method": "workspace/executeCommand", "params":
        {"command": "workbench.answer", "arguments": [{"runId": run_id, "requestId": id, "answer": "perhaps"}]}}));
    let (refused, _) = client.response(901);
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("answer allow, deny"), "{refused}");
    let (answered, _) = client.request(
        "workspace/executeCommand",
        json!({"command": "workbench.answer", "arguments": [{"runId": run_id, "requestId": id, "answer": "allow_always"}]}),
    );
    assert_eq!(answered["answer"], json!({"kind": "choice", "choice": "allow_always"}));
    let resolved = notified(&mut client, "workbench/inputResolved");
    assert_eq!(resolved, json!({"runId": run_id, "id": id, "how": "answered", "answer": "allow_always"}));

    // The question, answered in a terminal: the editor is told to withdraw it.
    let asked = notified(&mut client, "workbench/inputRequested");
    let question = asked["request"]["id"].as_str().unwrap().to_owned();
    assert_eq!(asked["request"]["questions"][0]["question"], "Which colour?");
    let output = finish(world.command(BIN).args(["answer", &run_id, &question, "Blue"]));
    assert_eq!(output.code, 0, "{output:?}");
    let resolved = notified(&mut client, "workbench/inputResolved");
    assert_eq!((resolved["id"].as_str(), resolved["how"].as_str()), (Some(question.as_str()), Some("answered")));
    let (result, _) = client.response(900);
    assert_eq!(result["result"]["ending"]["status"], "completed", "{result}");
    client.shutdown();
}
