//! A hostile runner against the engine (issue 13, items 5 and 6), with the fake runners: secrets split over
//! text deltas, credentials the host holds, the workspace write probe, bytes that are not UTF-8, a closed
//! stdout, an endless line. Each attack must neither leak a value nor wedge, kill or bloat the engine.
//!
//! The tests take one lock, so that the memory one measures a single run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_engine::{Ending, Options, RunMode, RunResult};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_testsupport::{self as support, FINAL, TASK, World, minimal, opencode_world, pi_world};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

const GEMINI_KEY: &str = "gemini-test-value";

fn options(world: &World, package: &str, env: &[(&str, &str)]) -> Options {
    let mut options = common::options(world, format!(".workbenches/{package}"), TASK, world.inherited());
    for (name, value) in env {
        options.context.inherited.insert((*name).to_owned(), (*value).to_owned());
    }
    options
}

fn pi_options(world: &World) -> Options {
    options(world, "pi-demo", &[("GEMINI_API_KEY", GEMINI_KEY)])
}

/// Writes a stream script (one JSON value per line) and makes it the one the fake runner replays.
fn script(world: &World, options: &mut Options, name: &str, lines: &[String]) {
    let path = world.root.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    options.context.inherited.insert("FAKE_RUNNER_SCRIPT".to_owned(), path.display().to_string());
}

/// The lines of a recorded stream.
fn recorded(runner: &str, name: &str) -> Vec<String> {
    std::fs::read_to_string(support::stream(runner, name)).unwrap().lines().map(str::to_owned).collect()
}

/// A Pi assistant message streamed as these text deltas, with its usage.
fn pi_message(deltas: &[&str]) -> Vec<String> {
    let message = json!({"role": "assistant", "content": [], "api": "openai-responses", "provider": "google",
        "model": "gemini-2.5-flash", "timestamp": 1764480000000u64});
    let mut lines = vec![json!({"type": "message_start", "message": message}).to_string()];
    for delta in deltas {
        lines.push(
            json!({"type": "message_update", "message": message,
                "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": delta, "partial": message}})
            .to_string(),
        );
    }
    let mut end = message.clone();
    end["usage"] = json!({"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}});
    end["stopReason"] = json!("stop");
    lines.push(json!({"type": "message_end", "message": end}).to_string());
    lines
}

/// A fake runner directive.
fn fake(directive: Value) -> String {
    directive.to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs on a thread of its own and waits at most `limit` for the end: a run that wedges fails the test instead
/// of hanging it (the runner, whose pid the fake runner recorded, is then killed so that the run can end).
/// `before` runs on this thread once the run has started, with the run's cancel flag.
fn run_within(
    world: &World,
    options: &Options,
    limit: Duration,
    before: impl FnOnce(&Arc<AtomicBool>),
) -> (RunResult, Vec<Value>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    let flag = Arc::clone(&cancel);
    let options = options.clone();
    std::thread::spawn(move || {
        let mut events = Vec::new();
        let result = wb_engine::run(
            &OsFileSystem,
            &options,
            &RunMode::default(),
            ModelCatalog::embedded(),
            flag,
            &mut |event| {
                events.push(serde_json::to_value(event).unwrap());
            },
        );
        let _ = done_tx.send((result, events));
    });
    before(&cancel);
    match done_rx.recv_timeout(limit) {
        Ok((result, events)) => (result.unwrap(), events),
        Err(_) => {
            if let Some(pid) = std::fs::read_to_string(world.log.join("invocation.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .and_then(|invocation| invocation["pid"].as_i64())
            {
                let _ = std::process::Command::new("kill").args(["-KILL", &format!("-{pid}")]).status();
                let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
            panic!("the run did not end within {limit:?}");
        }
    }
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn streamed_text(events: &[Value]) -> String {
    of_type(events, "output.text").iter().filter_map(|e| e["data"]["text"].as_str()).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// Secrets

#[test]
fn a_secret_split_across_text_deltas_never_reaches_an_event() {
    let _serial = one_at_a_time();
    let world = pi_world();
    let mut options = pi_options(&world);
    // Two deltas, then three (the middle one wholly inside the value), then a value at the very end.
    let mut lines = pi_message(&["The key is gemini-te", "st-value, and again: gem", "ini-t", "est-value."]);
    lines.extend(pi_message(&["Last: gemini-test-v", "alue"]));
    script(&world, &mut options, "split-secret", &lines);
    let (run, events) = run_within(&world, &options, Duration::from_secs(60), |_| {});
    support::check_events(&events, "pi");
    assert_eq!(run.ending, Ending::Completed);
    assert_eq!(streamed_text(&events), "The key is [redacted], and again: [redacted].Last: [redacted]");
    let all = serde_json::to_string(&events).unwrap();
    for fragment in ["gemini-te", "st-value", "gem", "ini-t", "est-value", "gemini-test-v"] {
        assert!(!all.contains(fragment), "{fragment} leaked: {all}");
    }
    // Every delta still has its event, in order.
    assert_eq!(of_type(&events, "output.text").len(), 6);
    assert_eq!(run.final_text, "Last: [redacted]");
}

/// The halves of a value in two texts with other events between them: a thinking delta inside one message,
/// and the end of one message (its usage) and the start of the next. Held text waits for the text after them.
#[test]
fn a_secret_split_across_other_events_and_messages_never_reaches_an_event() {
    let _serial = one_at_a_time();
    let world = pi_world();
    let mut options = pi_options(&world);
    let mut lines = pi_message(&["password: gemini-te"]);
    // A thinking delta inside the next message, between its halves.
    let mut second = pi_message(&["st-value and gemini-", "test-value"]);
    let thinking = second[1].replace("\"text_delta\"", "\"thinking_delta\"").replace("st-value and gemini-", "hmm");
    second.insert(2, thinking);
    lines.extend(second);
    script(&world, &mut options, "split-across-events", &lines);
    let (run, events) = run_within(&world, &options, Duration::from_secs(60), |_| {});
    support::check_events(&events, "pi");
    assert_eq!(run.ending, Ending::Completed);
    let all = serde_json::to_string(&events).unwrap();
    for fragment in ["gemini-te", "st-value", "gemini-", "test-value"] {
        assert!(!all.contains(fragment), "{fragment} leaked: {all}");
    }
    assert_eq!(streamed_text(&events), "password: [redacted] and [redacted]");
    // Other events did come between the halves.
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(kinds.contains(&"usage.updated"), "{kinds:?}");
}

#[test]
fn host_credentials_reach_a_local_runner_only_when_declared_and_never_an_event() {
    let _serial = one_at_a_time();
    let world = opencode_world();
    let mut options = options(
        &world,
        "oc-demo",
        &[
            ("DATABASE_URL", "postgres://db.internal/ledger"),
            ("OPENAI_API_KEY", "sk-openai-test-value"),
            // Declared by the package (optional): the runner gets it.
            ("DATABASE_API_TOKEN", "canary-declared-token"),
            // Undeclared: the host merely holds them.
            ("GITHUB_TOKEN", "canary-github-token"),
            ("AWS_SECRET_ACCESS_KEY", "canary-aws-secret"),
            ("SERVICE_PASSWORD", "canary-service-password"),
            ("DEEPSEEK_API_KEY", "canary-deepseek-key"),
            ("EDITOR", "plain-editor-value"),
        ],
    );
    let echo = json!({"type": "text", "timestamp": 1764480000020u64, "sessionID": "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c",
        "part": {"sessionID": "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c", "messageID": "msg_a1", "id": "prt_echo", "type": "text",
            "text": "github={{env:GITHUB_TOKEN}} aws={{env:AWS_SECRET_ACCESS_KEY}} service={{env:SERVICE_PASSWORD}} deepseek={{env:DEEPSEEK_API_KEY}} declared={{env:DATABASE_API_TOKEN}}",
            "time": {"start": 1764480000015u64, "end": 1764480000020u64}}});
    let mut lines = recorded("opencode", "success");
    lines.insert(1, echo.to_string());
    lines.insert(2, fake(json!({"fake": "stderr", "text": "debug {{env:DATABASE_API_TOKEN}}"})));
    script(&world, &mut options, "credentials", &lines);
    let (run, events) = run_within(&world, &options, Duration::from_secs(60), |_| {});
    support::check_events(&events, "opencode");
    assert_eq!(run.ending, Ending::Completed);
    let env = world.runner_environment();
    for name in ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "SERVICE_PASSWORD", "DEEPSEEK_API_KEY"] {
        assert!(!env.contains_key(name), "{name} reached the runner");
    }
    assert_eq!(env.get("DATABASE_API_TOKEN").map(String::as_str), Some("canary-declared-token"));
    assert_eq!(env.get("OPENAI_API_KEY").map(String::as_str), Some("sk-openai-test-value"));
    assert_eq!(env.get("EDITOR").map(String::as_str), Some("plain-editor-value"), "other variables still pass");
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains("canary"), "a credential reached an event: {all}");
    assert_eq!(
        of_type(&events, "output.text")[0]["data"]["text"],
        "github= aws= service= deepseek= declared=[redacted]"
    );
}

/// The probe name the engine used to write (and then remove) in every read-write workspace.
fn probe_name() -> String {
    format!(".wb-lsp-write-probe-{}", std::process::id())
}

#[test]
fn the_workspace_write_probe_leaves_files_and_symlinks_alone() {
    let _serial = one_at_a_time();
    let world = World::new();
    world.package(
        "ws",
        &minimal(
            "ws",
            "opencode",
            "openai/gpt-5.1",
            "workspaces:\n  docs:\n    required: true\n    access: read-write\n",
        ),
    );
    let docs = world.dir("docs");
    let probe = probe_name();
    std::fs::write(world.work.join(&probe), "the workspace's own file\n").unwrap();
    let victim = world.root.join("victim.txt");
    std::fs::write(&victim, "outside the workspace\n").unwrap();
    std::os::unix::fs::symlink(&victim, docs.join(&probe)).unwrap();
    let mut options = options(&world, "ws", &[("OPENAI_API_KEY", "sk-openai-test-value")]);
    options.request.settings.workspaces = vec![format!("docs={}", docs.display())];
    let report = wb_engine::dry_run(&OsFileSystem, &options, None, ModelCatalog::embedded()).unwrap();
    assert_eq!(report.workspaces.len(), 2, "both workspaces are bound (and found writable)");
    assert_eq!(std::fs::read_to_string(world.work.join(&probe)).unwrap(), "the workspace's own file\n");
    assert_eq!(std::fs::read_link(docs.join(&probe)).unwrap(), victim);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "outside the workspace\n");
    // Nothing else was created either.
    let names: Vec<String> =
        std::fs::read_dir(&docs).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, [probe]);
}

// ---------------------------------------------------------------------------------------------------------------
// The runner cannot wedge or kill the engine

#[test]
fn bytes_that_are_not_utf8_do_not_stop_the_reading() {
    let _serial = one_at_a_time();
    let world = pi_world();
    let mut options = pi_options(&world);
    let delta = pi_message(&["caf@"]).remove(1).replace('@', "\u{1}");
    let invalid_delta: Vec<u8> = delta.as_bytes().iter().map(|&b| if b == 1 { 0xff } else { b }).collect();
    let mut lines = vec![
        fake(json!({"fake": "bytes", "stream": "stdout", "hex": hex(b"\xff\xfe not UTF-8\n")})),
        fake(json!({"fake": "bytes", "stream": "stderr", "hex": hex(b"\xff on stderr\n")})),
        // More than any pipe holds, on both streams: a reader that stopped would leave the runner blocked or
        // writing into a closed pipe.
        fake(json!({"fake": "flood", "stream": "stdout", "bytes": 1024 * 1024, "line": 64 * 1024})),
        fake(json!({"fake": "flood", "stream": "stderr", "bytes": 1024 * 1024, "line": 1024})),
        fake(json!({"fake": "bytes", "stream": "stdout", "hex": hex(&[invalid_delta, b"\n".to_vec()].concat())})),
    ];
    lines.extend(recorded("pi", "success"));
    script(&world, &mut options, "invalid-utf8", &lines);
    let (run, events) = run_within(&world, &options, Duration::from_secs(60), |_| {});
    support::check_events(&events, "pi");
    assert_eq!(run.ending, Ending::Completed, "{events:#?}");
    assert_eq!(run.final_text, FINAL);
    world.assert_edited();
    // The invalid line and the 16 flood lines are lines that are not JSON; the invalid delta is decoded lossily.
    let stdout = events.iter().filter(|e| e["type"] == "runner.event" && e["data"]["native_type"] == "stdout");
    assert_eq!(stdout.count(), 1 + 16 + 1, "the fixture's own non-JSON line too");
    assert_eq!(of_type(&events, "output.text")[0]["data"]["text"], "caf\u{fffd}");
}

#[test]
fn a_runner_that_closed_stdout_is_still_cancelled_promptly() {
    let _serial = one_at_a_time();
    let world = pi_world();
    let mut options = pi_options(&world);
    let mut lines = pi_message(&["Working quietly."]);
    lines.push(fake(json!({"fake": "close_stdout"})));
    lines.push(fake(json!({"fake": "hang"})));
    script(&world, &mut options, "closed-stdout", &lines);
    let hanging = world.log.join("hanging");
    let mut cancelled_at = Instant::now();
    let (run, events) = run_within(&world, &options, Duration::from_secs(30), |cancel| {
        support::wait_for(&hanging);
        // Let the engine see stdout end before it is asked to stop.
        std::thread::sleep(Duration::from_millis(300));
        cancelled_at = Instant::now();
        cancel.store(true, Ordering::SeqCst);
    });
    assert!(cancelled_at.elapsed() < Duration::from_secs(10), "cancelled after {:?}", cancelled_at.elapsed());
    assert_eq!(run.ending, Ending::Cancelled);
    support::check_events(&events, "pi");
    assert_eq!(events.last().unwrap()["type"], "run.cancelled");
    let pid = world.invocation()["pid"].as_i64().unwrap();
    assert!(support::process_is_gone(pid), "the runner process {pid} is gone");
}

/// This process's resident memory and its peak since the last reset, in KiB (Linux).
fn memory_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn an_endless_line_keeps_memory_bounded_and_the_run_completes() {
    let _serial = one_at_a_time();
    let world = pi_world();
    let mut options = pi_options(&world);
    let mut lines = recorded("pi", "success");
    // 32 MiB without a line break, then the end of the output.
    lines.push(fake(json!({"fake": "flood", "stream": "stdout", "bytes": 32 * 1024 * 1024, "line": 0})));
    script(&world, &mut options, "endless-line", &lines);
    // The peak resident size is reset (`clear_refs` 5), so that it measures this run only.
    let measured = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = memory_kib("VmRSS:");
    let (run, events) = run_within(&world, &options, Duration::from_secs(60), |_| {});
    let peak = memory_kib("VmHWM:");
    match (measured, before, peak) {
        (true, Some(before), Some(peak)) => {
            let grown = peak.saturating_sub(before);
            // A run takes about 4 MiB, the stdout line limit 4 MiB more; the whole line would take 32 MiB.
            assert!(grown < 16 * 1024, "the run grew the engine by {grown} KiB");
        }
        _ => eprintln!("note: skipped the memory measurement: no /proc/self/clear_refs here"),
    }
    support::check_events(&events, "pi");
    assert_eq!(run.ending, Ending::Completed);
    assert_eq!(run.final_text, FINAL);
    let warnings: Vec<&Value> = events.iter().filter(|e| e["data"]["warning"].is_string()).collect();
    assert_eq!(warnings.len(), 1, "{events:#?}");
    assert_eq!(warnings[0]["type"], "runner.event");
    assert!(warnings[0]["data"]["warning"].as_str().unwrap().contains("longer than 4 MiB"), "{}", warnings[0]);
    assert!(serde_json::to_string(&events).unwrap().len() < 64 * 1024, "the line's bytes stay out of the events");
}

#[test]
fn the_stderr_a_failure_quotes_is_bounded_too() {
    let _serial = one_at_a_time();
    let world = pi_world();
    let mut options = pi_options(&world);
    let lines = vec![
        fake(json!({"fake": "flood", "stream": "stderr", "bytes": 8 * 1024 * 1024, "line": 0})),
        fake(json!({"fake": "exit", "code": 3})),
    ];
    script(&world, &mut options, "stderr-line", &lines);
    let (run, _events) = run_within(&world, &options, Duration::from_secs(60), |_| {});
    let Ending::Failed(message) = run.ending else { panic!("{:?}", run.ending) };
    assert!(message.starts_with("The runner exited with status 3: xxxx"), "{}", &message[..80.min(message.len())]);
    assert!(message.len() < 8 * 1024, "the failure quotes {} bytes", message.len());
}

/// A run whose outbox cannot be created (here `runs` under the home is a file) has already announced itself:
/// it ends with exactly one terminal event that says why, not with an error after `run.started`.
#[test]
fn a_run_whose_directory_cannot_be_created_does_not_start_and_leaves_nothing() {
    let _lock = one_at_a_time();
    let world = pi_world();
    let mut options = pi_options(&world);
    script(&world, &mut options, "hello", &pi_message(&["hello"]));
    let home = world.home.join(".workbench");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("runs"), "not a directory").unwrap();
    // The run's directory holds its log and its outbox: without it the run does not start (no event), says
    // why, and its staged configuration is removed.
    let mut events = Vec::new();
    let cancel = Arc::new(AtomicBool::new(false));
    let result =
        wb_engine::run(&OsFileSystem, &options, &RunMode::default(), ModelCatalog::embedded(), cancel, &mut |event| {
            events.push(serde_json::to_value(event).unwrap());
        });
    let error = result.expect_err("the run cannot start").to_string();
    assert!(error.starts_with("Cannot create the log of run wb_"), "{error}");
    assert!(events.is_empty(), "{events:#?}");
    assert!(world.leftover_stages().is_empty(), "{:?}", world.leftover_stages());
}
