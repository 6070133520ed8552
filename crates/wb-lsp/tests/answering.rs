//! `answer`, `wait` and `status` on a run that asks, through the built binary with the fake `claude` (its
//! control protocol on stdin and stdout): `wait` exits 2 and lists each request, answers that do not fit are
//! refused with the reason and change nothing, `--reject` refuses, and a finished run takes no answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use wb_testsupport::{Output, TASK, World, claude_world, finish};

const BIN: &str = env!("CARGO_BIN_EXE_wb-lsp");

fn wb(world: &World, args: &[&str]) -> Output {
    finish(world.command(BIN).args(args))
}

/// Claude Code reads its task, asks permission for a Bash command, then asks a question, and ends.
fn script(world: &World) -> std::path::PathBuf {
    let ask =
        |id: &str, request: serde_json::Value| json!({"type": "control_request", "request_id": id, "request": request});
    let lines = [
        json!({"fake": "read_stdin"}),
        ask(
            "native-1",
            json!({"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "rm obsolete.txt"},
            "tool_use_id": "toolu_1"}),
        ),
        json!({"fake": "read_stdin"}),
        ask(
            "native-2",
            json!({"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_2",
            "input": {"questions": [
                {"question": "Which colour?", "header": "Colour", "multiSelect": false,
                    "options": [{"label": "Red"}, {"label": "Blue"}]},
                {"question": "Which days?", "header": "Days", "multiSelect": true,
                    "options": [{"label": "Mon"}, {"label": "Tue"}]}]}}),
        ),
        json!({"fake": "read_stdin"}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.",
            "usage": {"input_tokens": 1, "output_tokens": 1}, "total_cost_usd": 0.0}),
    ];
    let path = world.root.join("asking.jsonl");
    std::fs::write(&path, lines.map(|line| line.to_string()).join("\n")).unwrap();
    path
}

/// `wait` on the run until it exits 2: the one line it prints, and the request's id.
fn waiting(world: &World, run: &str) -> (String, String) {
    let output = wb(world, &["wait", run, "--timeout", "60s"]);
    assert_eq!(output.code, 2, "{output:?}");
    let line = output.stdout.lines().next().unwrap_or_default().to_owned();
    let id = line.split(" · ").nth(1).and_then(|rest| rest.split(':').next()).unwrap_or_default().to_owned();
    (line, id)
}

#[test]
fn answers_that_do_not_fit_are_refused_and_the_ones_that_do_reach_the_runner() {
    let world = claude_world();
    let work = world.work.display().to_string();
    let started = finish(
        world
            .command(BIN)
            .args(["run", ".workbenches/cc-demo", "--dir", &work, "--task", TASK, "--detach"])
            .args(["--workspace", &format!("docs={}", world.root.join("docs").display())])
            .env("ANTHROPIC_API_KEY", "sk-ant-test-value")
            .env("TRACKER_TOKEN", "tracker-test-value")
            .env("FAKE_RUNNER_SCRIPT", script(&world)),
    );
    assert_eq!(started.code, 0, "{started:?}");
    let run = started.stdout.trim().to_owned();

    let (line, permission) = waiting(&world, &run);
    assert_eq!(line, format!("permission · {permission}: Bash: rm obsolete.txt (allow, deny)"));
    let status = wb(&world, &["status"]);
    assert!(status.stdout.contains(&format!("needs input: permission {permission}")), "{status:?}");
    let listed = wb(&world, &["runs", "--json"]);
    assert!(listed.stdout.contains("\"needs_input\""), "{listed:?}");
    // Not offered, not a choice, not a request id: refused, nothing written.
    let not_offered = wb(&world, &["answer", &run, &permission, "allow_always"]);
    assert_eq!(not_offered.code, 1, "{not_offered:?}");
    assert!(not_offered.stderr.contains("does not offer allow_always (it offers allow, deny)"), "{not_offered:?}");
    assert_eq!(wb(&world, &["answer", &run, &permission, "perhaps"]).code, 1);
    assert_eq!(wb(&world, &["answer", &run, "in_../../x", "allow"]).code, 2);
    let answered = wb(&world, &["answer", &run, &permission, "allow"]);
    assert_eq!(
        (answered.code, answered.stdout.trim()),
        (0, format!("run {run}: request {permission} answered (allow)").as_str())
    );
    let again = wb(&world, &["answer", &run, &permission, "deny"]);
    assert_eq!(again.code, 1, "answered once: {again:?}");

    let (line, question) = waiting(&world, &run);
    assert!(line.starts_with(&format!("question · {question}: Which colour? (Red / Blue / your answer)")), "{line}");
    let one = wb(&world, &["answer", &run, &question, "Red"]);
    assert!(one.code == 1 && one.stderr.contains("asks 2 questions"), "{one:?}");
    let two_each = wb(&world, &["answer", &run, &question, r#"[["Red", "Blue"], ["Mon", "Tue"]]"#]);
    assert!(two_each.code == 1 && two_each.stderr.contains("question 1"), "{two_each:?}");
    let rejected = wb(&world, &["answer", &run, &question, "--reject", "--json"]);
    assert_eq!(rejected.code, 0, "{rejected:?}");
    let event: serde_json::Value = serde_json::from_str(rejected.stdout.trim()).unwrap();
    assert_eq!(
        (event["type"].as_str(), event["data"]["id"].as_str()),
        (Some("question.rejected"), Some(question.as_str()))
    );

    let waited = wb(&world, &["wait", &run, "--timeout", "60s"]);
    assert_eq!(waited.code, 0, "{waited:?}");
    let late = wb(&world, &["answer", &run, &question, "Blue"]);
    assert!(late.code == 1 && late.stderr.contains("is not running"), "{late:?}");
    let read = std::fs::read_to_string(world.log.join("stdin.jsonl")).unwrap();
    let responses: Vec<serde_json::Value> = read.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(responses[0]["response"]["response"]["behavior"], "allow");
    assert_eq!(responses[1]["response"]["response"]["behavior"], "deny", "a refused question is denied");
}

/// Drives `wb-lsp run` in a pseudo-terminal: answers each prompt as it appears, then prints everything the
/// terminal showed and exits with the command's status.
const PTY_DRIVER: &str = r#"
import os, pty, select, sys, time
answers = [(b"answer (allow, deny", b"allow\n"), (b"answer (a number, a label or your own words", b"2\n"),
           (b"answer (numbers or labels, comma-separated", b"1, Tue\n")]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen, deadline = b"", time.time() + 60
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if ready:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if answers and answers[0][0] in seen:
            os.write(fd, answers.pop(0)[1])
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;

#[test]
fn run_in_a_terminal_asks_inline() {
    let world = claude_world();
    let driver = world.root.join("terminal_driver.py");
    std::fs::write(&driver, PTY_DRIVER).unwrap();
    let work = world.work.display().to_string();
    let docs = format!("docs={}", world.root.join("docs").display());
    let output = finish(
        world
            .command("python3")
            .arg(&driver)
            .arg(BIN)
            .args(["run", ".workbenches/cc-demo", "--dir", &work, "--task", TASK, "--workspace", &docs])
            .env("ANTHROPIC_API_KEY", "sk-ant-test-value")
            .env("TRACKER_TOKEN", "tracker-test-value")
            .env("FAKE_RUNNER_SCRIPT", script(&world)),
    );
    assert_eq!(output.code, 0, "{output:?}");
    assert!(output.stdout.contains("? permission · in_"), "{}", output.stdout);
    assert!(output.stdout.contains("    2. Blue"), "the options are listed: {}", output.stdout);
    let read = std::fs::read_to_string(world.log.join("stdin.jsonl")).unwrap();
    let responses: Vec<serde_json::Value> = read.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(responses[0]["response"]["response"]["behavior"], "allow", "{read}");
    let answers = &responses[1]["response"]["response"]["updatedInput"]["answers"];
    assert_eq!(answers, &json!({"Which colour?": "Blue", "Which days?": "Mon, Tue"}), "{read}");
}

/// A session's turn is steered: a plain `send` while the turn runs is refused, `send --steer` goes to Claude Code
/// on its stdin during the turn and returns once the runner took it (its replay of the message), and a steer
/// with no turn running is refused.
#[test]
fn a_running_turn_is_steered_and_a_plain_send_is_refused() {
    let world = claude_world();
    let lines = [
        json!({"fake": "read_stdin"}),
        json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "working"}]}}),
        json!({"fake": "replay_stdin"}),
        json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "steered"}]}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "steered",
            "usage": {"input_tokens": 1, "output_tokens": 1}, "total_cost_usd": 0.0}),
    ];
    let script = world.root.join("steered.jsonl");
    std::fs::write(&script, lines.map(|line| line.to_string()).join("\n")).unwrap();
    let work = world.work.display().to_string();
    let docs = format!("docs={}", world.root.join("docs").display());
    let started = finish(
        world
            .command(BIN)
            .args(["run", ".workbenches/cc-demo", "--dir", &work, "--task", TASK, "--workspace", &docs])
            .args(["--session", "--detach"])
            .env("ANTHROPIC_API_KEY", "sk-ant-test-value")
            .env("TRACKER_TOKEN", "tracker-test-value")
            .env("FAKE_RUNNER_SCRIPT", &script),
    );
    assert_eq!(started.code, 0, "{started:?}");
    let run = started.stdout.trim().to_owned();
    // The first turn runs until the runner has read a steer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !wb(&world, &["runs", "--json"]).stdout.contains("\"state\": \"running\"") {
        assert!(std::time::Instant::now() < deadline, "the turn never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let plain = wb(&world, &["send", &run, "another task"]);
    assert!(plain.code == 1 && plain.stderr.contains("is in a turn: `send --queue`"), "{plain:?}");
    let steered = wb(&world, &["send", &run, "--steer", "mention the moon"]);
    assert_eq!(steered.code, 0, "{steered:?}");
    assert!(steered.stdout.contains("delivered"), "{steered:?}");
    let read = std::fs::read_to_string(world.log.join("stdin.jsonl")).unwrap();
    let steer: serde_json::Value = serde_json::from_str(read.lines().nth(1).unwrap()).unwrap();
    assert_eq!(
        (steer["type"].as_str(), steer["message"]["content"].as_str()),
        (Some("user"), Some("mention the moon"))
    );
    let waited = wb(&world, &["wait", &run, "--timeout", "60s"]);
    assert_eq!(waited.code, 0, "the turn ends and the session waits: {waited:?}");
    let idle = wb(&world, &["send", &run, "--steer", "too late"]);
    assert!(idle.code == 1 && idle.stderr.contains("has no turn running"), "{idle:?}");
    let events = std::fs::read_to_string(world.home.join(".workbench/runs").join(&run).join("events.ndjson")).unwrap();
    let kinds: Vec<String> = events
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|event| event["type"].as_str().map(str::to_owned))
        .collect();
    let accepted = kinds.iter().position(|k| k == "input.accepted").expect("input.accepted");
    let delivered = kinds.iter().position(|k| k == "input.delivered").expect("input.delivered");
    assert!(accepted < delivered, "{kinds:?}");
    let _ = wb(&world, &["kill", &run]);
}
