//! Runs that can be seen from outside the process that owns them, through the built binary with the fake
//! OpenCode runner: the persisted event log and record (`runs/<id>/events.ndjson`, `run.json`), `runs`/`ps`,
//! `attach` (replay, then follow), `wait` and its exit codes, `kill` (a partial outcome, as on Ctrl-C), a run
//! whose owner was SIGKILLed shown as `lost`, `status`, and the spend and time limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_testsupport::{
    self as support, Output, Started, TASK, World, events_until, finish, opencode_text, opencode_world, run_id,
    run_record, script_file,
};

const BIN: &str = env!("CARGO_BIN_EXE_wb-lsp");

fn wb(world: &World, args: &[&str]) -> Output {
    finish(world.command(BIN).args(args))
}

fn runs_dir(world: &World) -> PathBuf {
    world.home.join(".workbench/runs")
}

fn step_finish(cost: f64) -> Value {
    json!({"type": "step_finish", "timestamp": 1764480000070u64, "sessionID": "ses_1", "part": {"sessionID": "ses_1",
        "messageID": "msg_1", "id": "prt_finish", "type": "step-finish", "reason": "tool-calls", "cost": cost,
        "tokens": {"input": 100, "output": 10, "reasoning": 0, "cache": {"read": 0, "write": 0}}}})
}

fn run_args<'a>(work: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", ".workbenches/oc-demo", "--dir", work, "--task", TASK, "--json"];
    args.extend_from_slice(extra);
    args
}

/// Starts `wb-lsp run --json` on `script` and reads its events until one of type `until` (returned with the
/// child and the rest of its stdout).
fn start(world: &World, script: &PathBuf, extra: &[&str], until: &str) -> Started {
    let work = world.work.display().to_string();
    let child = world
        .command(BIN)
        .args(run_args(&work, extra))
        .env("OPENAI_API_KEY", "sk-openai-test-value")
        .env("DATABASE_URL", "postgres://db.internal/ledger")
        .env("FAKE_RUNNER_SCRIPT", script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    events_until(child, Duration::from_secs(60), &format!("no {until} event"), |event| event["type"] == until)
}

/// The rest of a started run's events and its exit code.
fn finish_run(mut child: Child, mut events: Vec<Value>, reader: BufReader<support::Deadline>) -> (Vec<Value>, i32) {
    for line in reader.lines() {
        events.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let status = child.wait().unwrap();
    (events, status.code().unwrap_or(-1))
}

fn logged(world: &World, id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(runs_dir(world).join(id).join("events.ndjson")).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn mode(path: PathBuf) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_run_is_logged_listed_replayed_and_waited_for() {
    let world = opencode_world();
    let stream = script_file(
        &world,
        "cost",
        &[opencode_text("working"), step_finish(0.25), opencode_text("done"), step_finish(0.5)],
    );
    let (child, events, reader) = start(&world, &stream, &[], "run.started");
    let (events, code) = finish_run(child, events, reader);
    assert_eq!(code, 0, "{events:?}");
    let id = run_id(&events);

    // The log holds exactly the events the run printed, in order, with contiguous sequences; private files.
    assert_eq!(logged(&world, &id), events);
    let sequences: Vec<u64> = events.iter().map(|e| e["sequence"].as_u64().unwrap()).collect();
    assert_eq!(sequences, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(mode(runs_dir(&world).join(&id).join("events.ndjson")), 0o600);
    assert_eq!(mode(runs_dir(&world).join(&id).join("run.json")), 0o600);
    assert_eq!(mode(runs_dir(&world).join(&id)), 0o700);

    // The record: what ran, how it ended, what it cost; the task only as a digest.
    let run = run_record(&world, &id);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        (run["workbench"].as_str(), run["runtime"].as_str(), run["runner"].as_str()),
        (Some("oc-demo"), Some("local"), Some("opencode"))
    );
    assert!((run["cost_usd"].as_f64().unwrap() - 0.75).abs() < 1e-9, "{run}");
    assert!(run["outcome_id"].as_str().unwrap().starts_with("wbo_"), "{run}");
    assert_eq!(run["last_sequence"].as_u64(), sequences.last().copied());
    assert!(run["task_digest"].as_str().unwrap().starts_with("sha256:"));
    let raw = std::fs::read_to_string(runs_dir(&world).join(&id).join("run.json")).unwrap();
    assert!(!raw.contains(TASK), "the task is recorded as a digest only");

    // `runs` lists active runs only; `--all` (and `ps`) the finished one too.
    let output = wb(&world, &["runs", "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(serde_json::from_str::<Value>(&output.stdout).unwrap(), json!([]));
    let output = wb(&world, &["ps", "--all", "--json"]);
    let listed: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(listed[0]["run_id"], id.as_str());
    assert_eq!(listed[0]["state"], "completed");
    let output = wb(&world, &["runs", "--all"]);
    assert!(output.stdout.contains(&id) && output.stdout.contains("$0.7500"), "{output:?}");

    // `attach` replays every event exactly once, then ends with the run's exit code; a prefix names the run.
    let output = wb(&world, &["attach", &id[..10], "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    let replayed: Vec<Value> = output.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(replayed, events);
    let output = wb(&world, &["attach", &id]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stdout, "working\ndone\n");

    // `wait` on a finished run returns at once with its exit code; `--json` prints the record.
    let output = wb(&world, &["wait", &id, "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(serde_json::from_str::<Value>(&output.stdout).unwrap()["state"], "completed");
    let output = wb(&world, &["wait", "wb_nonexistent"]);
    assert_eq!((output.code, output.stderr.as_str()), (2, "error: No run found: wb_nonexistent\n"), "{output:?}");

    // `status` shows the recent run; `--line` says nothing runs.
    let output = wb(&world, &["status"]);
    assert!(output.stdout.contains(&id) && output.stdout.contains("completed"), "{output:?}");
    assert_eq!(wb(&world, &["status", "--line"]).stdout, "wb: idle\n");
}

#[test]
fn attach_and_wait_follow_a_live_run_and_kill_cancels_it() {
    let world = opencode_world();
    let stream = script_file(
        &world,
        "hang",
        &[
            opencode_text("hanging"),
            step_finish(0.1),
            json!({"fake": "sleep", "seconds": 1.5}),
            opencode_text("later"),
            json!({"fake": "hang"}),
        ],
    );
    let (child, events, reader) = start(&world, &stream, &[], "usage.updated");
    let id = run_id(&events);
    let run = run_record(&world, &id);
    assert_eq!(run["status"], "running");

    // Active runs are listed; status says what it does and what it cost so far.
    let listed: Value = serde_json::from_str(&wb(&world, &["runs", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["state"], "running", "{listed}");
    let line = wb(&world, &["status", "--line"]).stdout;
    assert!(line.starts_with("wb: oc-demo ") && line.trim_end().ends_with("$0.1000"), "{line}");

    // `clean` never removes a run that goes on, however old its files.
    let output = wb(&world, &["clean", "--older-than", "0s", "--apply"]);
    assert!(output.stdout.contains(&format!("Kept {id}: the run is still going on")), "{output:?}");
    assert!(runs_dir(&world).join(&id).join("events.ndjson").exists());

    // A follower attached now replays what happened, then follows to the end.
    let follower = world.command(BIN).args(["attach", &id, "--json"]).stdout(Stdio::piped()).spawn().unwrap();
    // `wait --timeout` gives up with 124; `wait --after` returns at the next event.
    let output = wb(&world, &["wait", &id, "--timeout", "1"]);
    assert_eq!(output.code, 124, "{output:?}");
    let last = run["last_sequence"].as_u64().unwrap().to_string();
    let waiter = world.command(BIN).args(["wait", &id]).spawn().unwrap();
    // `wait --after` returns at the next event while the run goes on ("later"): exit 0.
    let output = wb(&world, &["wait", &id, "--after", &last, "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(serde_json::from_str::<Value>(&output.stdout).unwrap()["state"], "running");

    let output = wb(&world, &["kill", &id]);
    assert_eq!(output.code, 0, "{output:?}");
    let (events, code) = finish_run(child, events, reader);
    assert_eq!(code, 130, "{events:?}");
    let terminal = events.last().unwrap();
    assert_eq!(terminal["type"], "run.cancelled");
    // The partial outcome is collected, as on Ctrl-C.
    let available = events.iter().find(|e| e["type"] == "outcome.available").expect("an outcome");
    assert_eq!(available["data"]["completeness"], "partial", "{available}");
    assert_eq!(run_record(&world, &id)["status"], "cancelled");

    let followed = follower.wait_with_output().unwrap();
    assert_eq!(followed.status.code(), Some(130));
    let followed: Vec<Value> =
        String::from_utf8(followed.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(followed, events, "the follower saw every event exactly once");
    assert_eq!(waiter.wait_with_output().unwrap().status.code(), Some(130));

    // A finished run cannot be killed.
    let output = wb(&world, &["kill", &id]);
    assert_eq!(
        (output.code, output.stderr.as_str()),
        (1, format!("error: run {id} is not running (cancelled)\n").as_str())
    );
}

#[test]
fn a_run_outlives_its_caller_and_is_lost_only_when_its_supervisor_dies() {
    let world = opencode_world();
    let stream = script_file(&world, "hang", &[opencode_text("hanging"), json!({"fake": "hang"})]);
    let (mut child, events, _reader) = start(&world, &stream, &[], "output.text");
    let id = run_id(&events);
    // SIGKILL of the command that started the run: the run is its supervisor's, and goes on.
    child.kill().unwrap();
    child.wait().unwrap();
    let supervisor = run_record(&world, &id)["pid"].as_u64().unwrap();
    assert_ne!(supervisor, u64::from(child.id()), "the run is owned by a supervisor, not by its caller");
    let listed: Value = serde_json::from_str(&wb(&world, &["runs", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["state"], "running", "{listed}");
    let output = wb(&world, &["wait", &id, "--timeout", "1"]);
    assert_eq!(output.code, 124, "still running after its caller died: {output:?}");

    // SIGKILL of the supervisor: the record still says running, and the run is shown as lost.
    let pid = i32::try_from(supervisor).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !support::process_is_gone(i64::from(pid)) {
        assert!(Instant::now() < deadline, "the supervisor outlived SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The runner the killed supervisor started outlives it: the test stops it.
    support::wait_for(&world.log.join("hanging"));
    let runner: i32 = std::fs::read_to_string(world.log.join("hanging")).unwrap().trim().parse().unwrap();
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(runner), nix::sys::signal::Signal::SIGKILL);
    assert_eq!(run_record(&world, &id)["status"], "running", "the record still says running");
    let listed: Value = serde_json::from_str(&wb(&world, &["runs", "--all", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["state"], "lost", "{listed}");
    assert_eq!(serde_json::from_str::<Value>(&wb(&world, &["runs", "--json"]).stdout).unwrap(), json!([]));
    let output = wb(&world, &["wait", &id]);
    assert_eq!(output.code, 1, "{output:?}");
    let output = wb(&world, &["attach", &id]);
    assert_eq!(output.code, 1, "{output:?}");
    assert!(output.stderr.contains("is lost"), "{output:?}");
    assert_eq!(output.stdout, "hanging\n", "the log is replayed first");
}

#[test]
fn a_detached_run_goes_on_and_is_reached_by_id() {
    let world = opencode_world();
    let work = world.work.display().to_string();
    let stream = script_file(
        &world,
        "detached",
        &[opencode_text("working"), step_finish(0.25), json!({"fake": "sleep", "seconds": 1}), opencode_text("done")],
    );
    let output = finish(
        world
            .command(BIN)
            .args(["run", ".workbenches/oc-demo", "--dir", &work, "--task", TASK, "--detach"])
            .env("OPENAI_API_KEY", "sk-openai-test-value")
            .env("DATABASE_URL", "postgres://db.internal/ledger")
            .env("FAKE_RUNNER_SCRIPT", &stream),
    );
    assert_eq!(output.code, 0, "{output:?}");
    let id = output.stdout.trim().to_owned();
    assert!(id.starts_with("wb_") && !output.stdout.contains("working"), "only the id on stdout: {output:?}");
    assert!(output.stderr.contains(&format!("wb-lsp attach {id}")), "{output:?}");
    // The command returned while the run goes on; attach replays then follows it to its end.
    let attached = wb(&world, &["attach", &id, "--json"]);
    assert_eq!(attached.code, 0, "{attached:?}");
    let events: Vec<Value> = attached.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let sequences: Vec<u64> = events.iter().map(|e| e["sequence"].as_u64().unwrap()).collect();
    assert_eq!(sequences, (1..=sequences.len() as u64).collect::<Vec<_>>(), "every event once, in order");
    assert_eq!(events.last().unwrap()["type"], "run.completed");
    let log = std::fs::read_to_string(runs_dir(&world).join(&id).join("events.ndjson")).unwrap();
    let logged: Vec<Value> = log.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(logged, events);
    assert_eq!(wb(&world, &["wait", &id]).code, 0);
    let finished = run_record(&world, &id);
    assert_eq!((finished["status"].as_str(), finished["cost_usd"].as_f64()), (Some("completed"), Some(0.25)));
    // The final answer is kept beside the log, private, once the supervisor has cleaned up.
    let result = runs_dir(&world).join(&id).join("result.json");
    support::wait_for(&result);
    assert_eq!(std::fs::metadata(&result).unwrap().permissions().mode() & 0o777, 0o600);
    let result: Value = serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();
    assert_eq!((&result["ending"]["kind"], &result["final_text"]), (&json!("completed"), &json!("done")), "{result}");

    // --detach with an output mode that needs the caller is refused, as the reference refuses it.
    for mode in ["--json", "--final"] {
        let output = wb(&world, &["run", ".workbenches/oc-demo", "--task", TASK, "--detach", mode]);
        assert_eq!(output.code, 2, "{output:?}");
        assert!(output.stderr.contains("--detach cannot be combined with --json, --final, or --dry-run"));
    }
    // A run that cannot start says why at once, detached or not: nothing is left running.
    let output = wb(&world, &["run", ".workbenches/oc-demo", "--dir", &work, "--task", " ", "--detach"]);
    assert_eq!((output.code, output.stderr.as_str()), (1, "error: This run mode requires a non-empty task\n"));
}

#[test]
fn spend_and_time_limits_stop_a_run_cleanly() {
    let world = opencode_world();
    // Usage crossing --max-cost: the run is stopped as a cancel, with a partial outcome and the limit named.
    let stream = script_file(
        &world,
        "spend",
        &[
            opencode_text("step one"),
            step_finish(0.3),
            opencode_text("step two"),
            step_finish(0.3),
            json!({"fake": "hang"}),
        ],
    );
    let (child, events, reader) = start(&world, &stream, &["--max-cost", "0.50"], "run.started");
    let (events, code) = finish_run(child, events, reader);
    assert_eq!(code, 130, "{events:?}");
    let terminal = events.last().unwrap();
    assert_eq!(terminal["type"], "run.cancelled");
    let message = terminal["data"]["message"].as_str().unwrap();
    assert!(message.starts_with("Stopped by --max-cost 0.50 USD: the runner reported 0.6000 USD"), "{message}");
    assert!((terminal["data"]["cost_usd"].as_f64().unwrap() - 0.6).abs() < 1e-9, "the terminal event's cost");
    assert!(events.iter().any(|e| e["type"] == "outcome.available" && e["data"]["completeness"] == "partial"));
    let id = run_id(&events);
    assert!((run_record(&world, &id)["cost_usd"].as_f64().unwrap() - 0.6).abs() < 1e-9);

    // --max-duration.
    let stream = script_file(&world, "slow", &[opencode_text("slow"), json!({"fake": "hang"})]);
    let (child, events, reader) = start(&world, &stream, &["--max-duration", "1s"], "run.started");
    let (events, code) = finish_run(child, events, reader);
    assert_eq!(code, 130, "{events:?}");
    let message = events.last().unwrap()["data"]["message"].as_str().unwrap().to_owned();
    assert_eq!(message, "Stopped by --max-duration: the run went on for 1s");

    // A runner that reports no cost: the record says so (null), never 0.
    let stream = script_file(&world, "free", &[opencode_text("no usage")]);
    let (child, events, reader) = start(&world, &stream, &["--max-cost", "1"], "run.started");
    let (events, code) = finish_run(child, events, reader);
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(run_record(&world, &run_id(&events))["cost_usd"], Value::Null);
    assert_eq!(events.last().unwrap()["data"]["cost_usd"], Value::Null, "cost unknown, never 0");
    let listed = wb(&world, &["runs", "--all"]).stdout;
    assert!(listed.contains("cost unknown"), "{listed}");

    // Bad limits are usage errors.
    let work = world.work.display().to_string();
    for bad in [["--max-cost", "-1"], ["--max-cost", "lots"], ["--max-duration", "soon"]] {
        let output = wb(&world, &run_args(&work, &bad));
        assert_eq!(output.code, 2, "{bad:?}: {output:?}");
    }
}

/// Issue 41: every duration flag takes the one grammar (`wb_engine::duration`): `run --max-duration 2w` (which
/// `clean` took and `run` refused), `wait --timeout 1h30m`; a value outside it is a usage error naming the flag.
#[test]
fn duration_flags_take_the_one_grammar() {
    let world = opencode_world();
    let stream = script_file(&world, "quick", &[opencode_text("done")]);
    let (child, events, reader) = start(&world, &stream, &["--max-duration", "2w"], "run.started");
    let (events, code) = finish_run(child, events, reader);
    assert_eq!(code, 0, "a two-week limit does not stop a short run: {events:?}");
    assert_eq!(events.last().unwrap()["type"], "run.completed");
    let output = wb(&world, &["wait", &run_id(&events), "--timeout", "1h30m"]);
    assert_eq!(output.code, 0, "{output:?}");

    let work = world.work.display().to_string();
    for (flag, bad) in [("--max-duration", "2mo"), ("--max-duration", "soon"), ("--idle-timeout", "-5m")] {
        let given = format!("{flag}={bad}");
        let output = wb(&world, &run_args(&work, &[&given, "--session"]));
        assert_eq!(output.code, 2, "{flag} {bad}: {output:?}");
        assert!(output.stderr.contains(&format!("invalid value '{bad}' for '{flag} <DURATION>'")), "{output:?}");
        assert!(output.stderr.contains("docs/runs.md#durations"), "{output:?}");
    }
}

/// Hostile runs round 3: `--max-cost` could not stop a Claude Code run before it ended (its stream gives a cost
/// only in the final `result`), and a run whose final cost crossed the cap was reported cancelled though it had
/// completed. Each message's usage is now priced from the catalog as it streams (Claude Sonnet 4.5 here), and
/// a cap crossed by the final result leaves the run completed.
#[test]
fn claude_code_runs_are_held_to_max_cost_as_their_usage_streams() {
    let world = support::claude_world();
    let docs = format!("docs={}", world.root.join("docs").display());
    let work = world.work.display().to_string();
    let message = |id: &str, input: u64, output: u64| {
        json!({"type": "assistant", "message": {"id": id, "role": "assistant",
            "content": [{"type": "text", "text": format!("step {id}")}],
            "usage": {"input_tokens": input, "output_tokens": output,
                      "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
    };
    let result = |cost: f64| {
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "done", "total_cost_usd": cost,
            "usage": {"input_tokens": 200_000, "output_tokens": 20_000}})
    };
    let run = |name: &str, lines: &[Value], cap: &str| {
        let path = world.root.join(format!("{name}.jsonl"));
        std::fs::write(&path, lines.iter().map(|line| format!("{line}\n")).collect::<String>()).unwrap();
        let mut command = world.command(BIN);
        command
            .args(["run", ".workbenches/cc-demo", "--dir", &work, "--workspace", &docs, "--task", TASK, "--json"])
            .args(["--max-cost", cap])
            .env("ANTHROPIC_API_KEY", "sk-ant-test-value")
            .env("TRACKER_TOKEN", "tracker-test-value")
            .env("FAKE_RUNNER_SCRIPT", &path);
        let output = finish(&mut command);
        let events: Vec<Value> = output.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        (output.code, events)
    };

    // 100k input and 10k output tokens a message: $0.45 each at $3 and $15 per million. The second message
    // crosses $0.50 while the runner still works (it would hang until stopped), long before any result.
    let hang = json!({"fake": "hang"});
    let (code, events) = run(
        "spend",
        &[message("m1", 100_000, 10_000), message("m1", 100_000, 10_000), message("m2", 100_000, 10_000), hang],
        "0.50",
    );
    assert_eq!(code, 130, "{events:#?}");
    let terminal = events.last().unwrap();
    assert_eq!(terminal["type"], "run.cancelled", "{terminal}");
    let text = terminal["data"]["message"].as_str().unwrap();
    assert!(text.starts_with("Stopped by --max-cost 0.50 USD: "), "{text}");
    // The repeated event of m1 was not counted twice: two messages, $0.90.
    assert!((terminal["data"]["cost_usd"].as_f64().unwrap() - 0.9).abs() < 1e-9, "{terminal}");
    assert!(events.iter().any(|e| e["type"] == "outcome.available" && e["data"]["completeness"] == "partial"));

    // Under the cap while it streams; the result's own total crosses it at the very end: the run completed.
    let (code, events) = run("late", &[message("m1", 1_000, 100), result(2.0)], "1");
    assert_eq!(code, 0, "{events:#?}");
    let terminal = events.last().unwrap();
    assert_eq!(terminal["type"], "run.completed", "{terminal}");
    assert!((terminal["data"]["cost_usd"].as_f64().unwrap() - 2.0).abs() < 1e-9, "the runner's total: {terminal}");
    assert_eq!(run_record(&world, &run_id(&events))["status"], "completed");
}
