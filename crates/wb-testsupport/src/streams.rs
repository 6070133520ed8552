//! The engine's recorded native streams (`crates/wb-engine/tests/fixtures/streams/<runner>/<name>.jsonl`) and
//! streams built from them: the outbox writes of an outcome, and extra tool calls in each runner's own shape.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::World;

/// The task every run gets unless a test says otherwise.
pub const TASK: &str = "Add the notes file and retitle the readme";

/// The final answer of every `success.jsonl` stream.
pub const FINAL: &str = "Done: added notes/hello.txt, retitled README.md and removed obsolete.txt.";

/// The engine's test fixtures: the fake runners (`runners/`) and the recorded streams (`streams/`).
pub fn engine_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../wb-engine/tests/fixtures")
}

/// A recorded native stream: `streams/<runner>/<name>.jsonl`.
pub fn stream(runner: &str, name: &str) -> PathBuf {
    engine_fixtures().join("streams").join(runner).join(format!("{name}.jsonl"))
}

/// The declaration the outcome streams write to the outbox (`declared` names the artifact it declares).
pub fn declaration(declared: &str) -> Value {
    serde_json::json!({
        "version": 1,
        "summary": "Prepared a findings report",
        "artifacts": [{"path": declared, "name": "Findings.html", "description": "The collected findings", "media_type": "text/html"}],
        "links": [{"label": "Implementation PR", "uri": "https://github.com/example/project/pull/42", "kind": "pull_request"}]
    })
}

/// The OpenCode `success.jsonl` stream plus two outbox writes before its last step: `reports/findings.html` and an
/// `outcome.json` declaring `declared`. Written to `<world.root>/<name>.jsonl`.
pub fn outcome_stream(world: &World, name: &str, declared: &str) -> PathBuf {
    let text = std::fs::read_to_string(stream("opencode", "success")).expect("the success stream");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let last = lines.pop().expect("a last line");
    let write = |id: &str, path: &str, content: &str| {
        serde_json::json!({"type": "tool_use", "timestamp": 1764480000095u64, "sessionID": "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c",
            "part": {"sessionID": "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c", "messageID": "msg_a1", "id": format!("prt_{id}"), "type": "tool",
                "callID": id, "tool": "write", "state": {"status": "completed",
                    "input": {"filePath": format!("{{{{env:WORKBENCH_OUTPUT_DIR}}}}/{path}"), "content": content},
                    "time": {"start": 1764480000091u64, "end": 1764480000094u64}, "output": "", "title": path, "metadata": {}}}})
        .to_string()
    };
    lines.push(write("call_out_1", "reports/findings.html", "<h1>Findings</h1>\n"));
    lines.push(write("call_out_2", "outcome.json", &declaration(declared).to_string()));
    lines.push(last);
    let path = world.root.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").expect("the stream is written");
    path
}

/// A tool call for [`native_tool_call`]: the runner-independent `write` (path, content) and `shell` (command).
#[derive(Clone, Debug)]
pub enum ToolCall {
    Write { path: String, content: String },
    Shell { command: String },
}

/// The native stream lines of one completed tool call, in a runner's own shape (`opencode`, `claude-code`,
/// `pi`): OpenCode a `tool_use` part, Claude Code an `assistant` `tool_use` block and its `user` tool result, Pi
/// `tool_execution_start` and `tool_execution_end`. `id` names the call.
pub fn native_tool_call(runner: &str, id: &str, call: &ToolCall) -> Vec<String> {
    use serde_json::json;
    // (the OpenCode and Pi tool name, the Claude Code tool name, title, OpenCode input, Claude Code input, Pi args)
    let (tool, claude_tool, title, opencode_input, claude_input, pi_args) = match call {
        ToolCall::Write { path, content } => (
            "write",
            "Write",
            path.clone(),
            json!({"filePath": path, "content": content}),
            json!({"file_path": path, "content": content}),
            json!({"path": path, "content": content}),
        ),
        ToolCall::Shell { command } => (
            "bash",
            "Bash",
            format!("Run {id}"),
            json!({"command": command, "description": format!("Run {id}")}),
            json!({"command": command, "description": format!("Run {id}")}),
            json!({"command": command}),
        ),
    };
    let session = "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c";
    let claude_session = "3f1c2d3e-4a5b-4c7d-8e9f-0a1b2c3d4e5f";
    let lines = match runner {
        "opencode" => vec![json!({"type": "tool_use", "timestamp": 1764480000095u64, "sessionID": session,
            "part": {"sessionID": session, "messageID": "msg_a1", "id": format!("prt_{id}"), "type": "tool",
                "callID": id, "tool": tool, "state": {"status": "completed", "input": opencode_input,
                    "time": {"start": 1764480000091u64, "end": 1764480000094u64}, "output": "", "title": title,
                    "metadata": {}}}})],
        "claude-code" => vec![
            json!({"type": "assistant", "message": {"id": format!("msg_{id}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "tool_use", "id": id, "name": claude_tool,
                "input": claude_input}], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5}},
                "parent_tool_use_id": null, "session_id": claude_session}),
            json!({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": id, "type": "tool_result",
                "content": ""}]}, "parent_tool_use_id": null, "session_id": claude_session}),
        ],
        "pi" => vec![
            json!({"type": "tool_execution_start", "toolCallId": id, "toolName": tool, "args": pi_args}),
            json!({"type": "tool_execution_end", "toolCallId": id, "toolName": tool,
                "result": {"content": [{"type": "text", "text": ""}], "details": {}}, "isError": false}),
        ],
        other => panic!("no native tool calls for runner {other}"),
    };
    lines.iter().map(Value::to_string).collect()
}

/// A runner's `success.jsonl` stream with these tool calls carried out before its last line (each call's id is
/// `call_extra_<n>`). Written to `<world.root>/<name>.jsonl`.
pub fn stream_with_calls(world: &World, runner: &str, name: &str, calls: &[ToolCall]) -> PathBuf {
    let text = std::fs::read_to_string(stream(runner, "success")).expect("the success stream");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let last = lines.pop().expect("a last line");
    for (index, call) in calls.iter().enumerate() {
        lines.extend(native_tool_call(runner, &format!("call_extra_{}", index + 1), call));
    }
    lines.push(last);
    let path = world.root.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").expect("the stream is written");
    path
}
