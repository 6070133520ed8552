//! `wb-lsp acp` driven by the official Agent Client Protocol SDK's client (tests/acp/driver.mjs, the SDK from
//! scripts/install-sdks.sh): a session, prompts streamed as updates that validate against the SDK's schemas, the
//! runner's permission request as `session/request_permission` and its answer reaching the runner, a second
//! prompt carried on in the same Workbench session, a cancel, and a remote run's pending outcome offered as
//! diffs and applied file by file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use wb_sandbox_fakes::e2b::{self, E2bFake};
use wb_testsupport::{World, claude_world};

const BIN: &str = env!("CARGO_BIN_EXE_wb-lsp");

/// The official SDK's modules. Missing is a failure with the hint, as for every SDK the suite uses.
fn sdk_modules() -> Option<PathBuf> {
    let modules = std::env::var_os("WB_SDK_MODULES").map(PathBuf::from);
    let found = modules.filter(|m| m.join("@agentclientprotocol/sdk/package.json").is_file());
    assert!(
        found.is_some(),
        "WB_SDK_MODULES names no @agentclientprotocol/sdk: scripts/install-sdks.sh installs it and prints the directory"
    );
    found
}

fn node(modules: &Path) -> PathBuf {
    let bundled = modules.join(".bin/node");
    if bundled.is_file() { bundled } else { PathBuf::from("node") }
}

/// Runs the driver against `wb-lsp acp ARGS` in `world`'s environment (plus `env`): its report.
fn drive(world: &World, modules: &Path, cwd: &Path, args: &[&str], steps: Value, env: &[(String, String)]) -> Value {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/driver.mjs");
    let mut command = world.command(node(modules));
    command
        .arg(&driver)
        .arg(BIN)
        .arg("acp")
        .args(args)
        .env("WB_SDK_MODULES", modules)
        .env("ACP_CWD", cwd)
        .env("ACP_STEPS", steps.to_string())
        .envs(env.iter().cloned())
        .stdin(Stdio::null());
    // The driver's node runs with the world's PATH, which may lack the system's: keep the directory of `node`.
    if let Ok(path) = std::env::var("PATH") {
        command.env("PATH", format!("{}:{path}", world.path_variable()));
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the driver printed no report ({e}):\n{stdout}\n{stderr}"));
    assert!(output.status.success(), "the driver failed: {report:#}\n{stderr}");
    assert_eq!(report["schemaErrors"], json!([]), "{report:#}");
    assert_eq!(report["protocolErrors"], json!([]), "{report:#}");
    report
}

fn kinds(turn: &Value) -> Vec<String> {
    turn["updates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u["sessionUpdate"].as_str().map(str::to_owned))
        .collect()
}

fn claude_env() -> Vec<(String, String)> {
    vec![
        ("ANTHROPIC_API_KEY".to_owned(), "sk-ant-acp-test".to_owned()),
        ("TRACKER_TOKEN".to_owned(), "tracker-acp-test".to_owned()),
    ]
}

fn write_script(world: &World, name: &str, lines: &[Value]) -> (String, String) {
    let path = world.root.join(name);
    std::fs::write(&path, lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")).unwrap();
    ("FAKE_RUNNER_SCRIPT".to_owned(), path.display().to_string())
}

fn assistant(content: Value) -> Value {
    json!({"type": "assistant", "message": {"id": "msg_acp", "type": "message", "role": "assistant",
        "content": [content], "usage": {"input_tokens": 1, "output_tokens": 1}}, "session_id": ""})
}

#[test]
fn a_prompt_streams_asks_and_the_next_prompt_carries_the_session_on() {
    let Some(modules) = sdk_modules() else { return };
    let world = claude_world();
    // Each turn: the task on stdin, a text, a plan, a permission request (answered on stdin), a file written.
    let script = write_script(
        &world,
        "acp.jsonl",
        &[
            json!({"fake": "read_stdin"}),
            assistant(json!({"type": "text", "text": "Tidying the notes."})),
            assistant(json!({"type": "tool_use", "id": "toolu_plan", "name": "TodoWrite", "input": {"todos": [
                {"content": "Remove the obsolete file", "status": "in_progress", "activeForm": "Removing"},
                {"content": "Write the notes", "status": "pending", "activeForm": "Writing"}]}})),
            json!({"type": "control_request", "request_id": "native-1", "request": {"subtype": "can_use_tool",
                "tool_name": "Bash", "input": {"command": "rm obsolete.txt"}, "tool_use_id": "toolu_bash"}}),
            json!({"fake": "read_stdin"}),
            assistant(json!({"type": "tool_use", "id": "toolu_write", "name": "Write",
                "input": {"file_path": "notes/acp.txt", "content": "written over ACP\n"}})),
            json!({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": "toolu_write",
                "type": "tool_result", "content": "File created"}]}}),
            json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.",
                "usage": {"input_tokens": 1, "output_tokens": 1}, "total_cost_usd": 0.0}),
        ],
    );
    let mut env = claude_env();
    env.push(script);
    let package = world.repo.join(".workbenches/cc-demo").display().to_string();
    let docs = format!("docs={}", world.root.join("docs").display());
    let steps = json!([
        {"prompt": "Tidy the notes.", "answers": ["allow_once"]},
        {"prompt": "Once more.", "answers": ["reject_once"]},
    ]);
    let report = drive(&world, &modules, &world.work, &["--package", &package, "--workspace", &docs], steps, &env);

    assert_eq!(report["initialize"]["protocolVersion"], 1, "{report:#}");
    let session = report["session"]["sessionId"].as_str().unwrap_or_default();
    assert!(session.starts_with("wbacp_"), "{report:#}");
    let first = &report["turns"][0];
    assert_eq!(first["stopReason"], "end_turn", "{first:#}");
    let kinds = kinds(first);
    for kind in ["agent_message_chunk", "plan", "tool_call", "tool_call_update"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    let updates = first["updates"].as_array().unwrap();
    let text = updates.iter().find(|u| u["sessionUpdate"] == "agent_message_chunk").unwrap();
    assert_eq!(text["content"]["text"], "Tidying the notes.");
    let plan = updates.iter().find(|u| u["sessionUpdate"] == "plan").unwrap();
    assert_eq!(
        plan["entries"][0],
        json!({"content": "Remove the obsolete file", "priority": "medium", "status": "in_progress"})
    );
    let write = updates.iter().find(|u| u["sessionUpdate"] == "tool_call" && u["title"] == "Write").unwrap();
    assert_eq!(write["kind"], "edit");
    assert_eq!(write["locations"][0]["path"], world.work.join("notes/acp.txt").display().to_string());
    // The permission: the runner's request, its options, the client's choice given to the runner.
    let asked = &first["permissions"][0];
    assert_eq!(asked["request"]["toolCall"]["title"], "Bash: rm obsolete.txt", "{asked:#}");
    assert_eq!(asked["chosen"], "allow");
    let second = &report["turns"][1];
    assert_eq!(second["stopReason"], "end_turn", "{second:#}");
    assert_eq!(second["permissions"][0]["chosen"], "deny");
    let given = std::fs::read_to_string(world.log.join("stdin.jsonl")).unwrap();
    let replies: Vec<Value> = given
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "control_response")
        .collect();
    let behaviours: Vec<&str> = replies.iter().filter_map(|r| r["response"]["response"]["behavior"].as_str()).collect();
    assert_eq!(behaviours, ["allow", "deny"], "{given}");
    assert_eq!(std::fs::read_to_string(world.work.join("notes/acp.txt")).unwrap(), "written over ACP\n");
    // Both prompts were turns of one Workbench session, which ended with the client.
    let runs =
        String::from_utf8_lossy(&world.command(BIN).args(["runs", "--json"]).output().unwrap().stdout).into_owned();
    let runs: Value = serde_json::from_str(&runs).unwrap_or_default();
    let runs = runs.as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_ne!(runs[0]["state"], "running", "the session ended with the client: {runs:#?}");
    let events = std::fs::read_to_string(
        world.home.join(".workbench/runs").join(runs[0]["run_id"].as_str().unwrap()).join("events.ndjson"),
    )
    .unwrap();
    assert_eq!(events.matches("\"type\":\"turn.completed\"").count(), 2, "{events}");
}

#[test]
fn a_cancel_ends_the_turn_as_cancelled_and_stops_the_runner() {
    let Some(modules) = sdk_modules() else { return };
    let world = claude_world();
    let script = write_script(
        &world,
        "hang.jsonl",
        &[
            json!({"fake": "read_stdin"}),
            assistant(json!({"type": "text", "text": "Starting."})),
            json!({"fake": "hang"}),
        ],
    );
    let mut env = claude_env();
    env.push(script);
    let package = world.repo.join(".workbenches/cc-demo").display().to_string();
    let docs = format!("docs={}", world.root.join("docs").display());
    let steps = json!([{"prompt": "Take your time.", "cancel": true}]);
    let report = drive(&world, &modules, &world.work, &["--package", &package, "--workspace", &docs], steps, &env);
    let turn = &report["turns"][0];
    assert_eq!(turn["stopReason"], "cancelled", "{report:#}");
    assert!(kinds(turn).iter().any(|k| k == "agent_message_chunk"), "{turn:#}");
    let pid: i32 = std::fs::read_to_string(world.log.join("hanging")).unwrap().trim().parse().unwrap();
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ");
    assert!(!alive, "the runner was stopped");
}

/// The fake OpenCode inside the sandbox: it edits the workspace and says so.
const SANDBOX_OPENCODE: &str = r#"#!/bin/sh
printf '# New title\n\nEdited in the sandbox.\n' > README.md
rm obsolete.txt
mkdir -p notes && echo "from the sandbox" > notes/new.md
printf '{"type":"text","sessionID":"ses_acp","part":{"type":"text","text":"Edited three files."}}\n'
"#;

const REMOTE_MANIFEST: &str = "spec: 1
version: 1.0.0
name: remote-acp
description: Edits a copy of the workspace in a sandbox.
runner: opencode
model:
  id: openai/gpt-5.1
  routes:
    - provider: openai
instructions: ./instructions.md
runtimes:
  e2b:
    image: ghcr.io/acme/agent:1
";

#[test]
fn a_remote_turn_offers_its_outcome_as_diffs_applied_file_by_file() {
    let Some(modules) = sdk_modules() else { return };
    let world = World::new();
    world.package("remote-acp", REMOTE_MANIFEST);
    let image_bin = world.root.join("image-bin");
    std::fs::create_dir_all(&image_bin).unwrap();
    std::fs::write(image_bin.join("opencode"), SANDBOX_OPENCODE).unwrap();
    std::fs::set_permissions(image_bin.join("opencode"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let read_only = vec![(image_bin.clone(), "/opt/wb/bin".to_owned())];
    let service = E2bFake::start(e2b::FakeOptions { read_only, ..e2b::FakeOptions::default() }).unwrap();
    let mut env: Vec<(String, String)> = service.env().into_iter().collect();
    env.push(("OPENAI_API_KEY".to_owned(), "sk-acp-remote".to_owned()));
    let package = world.repo.join(".workbenches/remote-acp").display().to_string();
    // The first file is taken, the rest kept for later.
    let steps = json!([{"prompt": "Edit the files.", "answers": ["allow_once", "reject_always"]}]);
    let report = drive(&world, &modules, &world.work, &["--package", &package, "--runtime", "e2b"], steps, &env);
    let turn = &report["turns"][0];
    assert_eq!(turn["stopReason"], "end_turn", "{report:#}");
    let updates = turn["updates"].as_array().unwrap();
    let offered: Vec<&Value> =
        updates.iter().filter(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "edit").collect();
    assert_eq!(offered.len(), 3, "{updates:#?}");
    let readme = offered.iter().find(|u| u["title"] == "Apply README.md").unwrap();
    let readme_path = world.work.join("README.md").display().to_string();
    assert_eq!(
        readme["content"][0],
        json!({"type": "diff", "path": readme_path, "oldText": "# Old title\n\nThe ledger service.\n",
            "newText": "# New title\n\nEdited in the sandbox.\n"})
    );
    let created = offered.iter().find(|u| u["title"] == "Apply notes/new.md").unwrap();
    assert_eq!(created["content"][0]["oldText"], Value::Null);
    // One permission asked (the first file), then "keep every file for later".
    assert_eq!(turn["permissions"].as_array().map(Vec::len), Some(2), "{turn:#}");
    let first_title = turn["permissions"][0]["request"]["toolCall"]["title"].as_str().unwrap_or_default().to_owned();
    let taken = first_title.trim_start_matches("Apply ");
    let on_disk = |path: &str| std::fs::read_to_string(world.work.join(path)).ok();
    match taken {
        "README.md" => {
            assert_eq!(on_disk("README.md").as_deref(), Some("# New title\n\nEdited in the sandbox.\n"));
            assert!(on_disk("obsolete.txt").is_some() && on_disk("notes/new.md").is_none(), "only README.md taken");
        }
        "notes/new.md" => {
            assert_eq!(on_disk("notes/new.md").as_deref(), Some("from the sandbox\n"));
            assert_eq!(on_disk("README.md").as_deref(), Some("# Old title\n\nThe ledger service.\n"));
        }
        other => {
            assert_eq!(other, "obsolete.txt");
            assert!(on_disk("obsolete.txt").is_none() && on_disk("notes/new.md").is_none());
        }
    }
    let summary: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(summary.contains("1 of 3 files applied") && summary.contains("--apply"), "{summary}");
}
