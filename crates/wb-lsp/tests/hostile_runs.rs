//! A run ends with its owner (issue 40): a supervisor SIGKILLed leaves no runner working (its watchdog stops
//! it), SIGTERM and SIGHUP cancel a run as SIGINT does (the terminal event names the signal, the stage directory
//! goes), `kill` of a lost run stops what is left of it, the stage directory is private, and a run started with
//! `--env` cannot be adopted without it. Through the built binary with the fake OpenCode runner; the same on a
//! real Docker engine (`WB_LSP_SKIP_DOCKER_TESTS=1` skips those).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use wb_testsupport::{
    self as support, Output, Started, TASK, World, events_until, finish, opencode_text, opencode_world, run_id,
    run_record, script_file,
};

const BIN: &str = env!("CARGO_BIN_EXE_wb-lsp");

fn wb(world: &World, args: &[&str]) -> Output {
    finish(world.command(BIN).args(args))
}

/// Starts `wb-lsp run --json` of `package` on `script` and reads its events until one of type `until`.
fn start(world: &World, package: &str, script: &Path, until: &str) -> Started {
    let work = world.work.display().to_string();
    let child = world
        .command(BIN)
        .args(["run", package, "--dir", &work, "--task", TASK, "--json"])
        .env("OPENAI_API_KEY", "sk-openai-test-value")
        .env("DATABASE_URL", "postgres://db.internal/ledger")
        .env("FAKE_RUNNER_SCRIPT", script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    events_until(child, Duration::from_secs(120), &format!("no {until} event"), |event| event["type"] == until)
}

fn logged(world: &World, id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(world.home.join(".workbench/runs").join(id).join("events.ndjson")).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn signal(pid: u64, signal: Signal) {
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), signal).unwrap();
}

fn wait_gone(pid: u64, what: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while !support::process_is_gone(i64::try_from(pid).unwrap()) {
        assert!(Instant::now() < deadline, "{what} (pid {pid}) is still running after {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fake runner's pid, once it hangs.
fn runner_pid(world: &World) -> u64 {
    support::wait_for(&world.log.join("hanging"));
    std::fs::read_to_string(world.log.join("hanging")).unwrap().trim().parse().unwrap()
}

/// The stage directories under the world's temporary directory.
fn stages(world: &World) -> Vec<PathBuf> {
    std::fs::read_dir(&world.tmp)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("wb-lsp-stage-"))
        .map(|entry| entry.path())
        .collect()
}

/// The processes whose parent is `parent` and whose command line holds `word`.
fn children_with(parent: u64, word: &str) -> Vec<u64> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|name| name.parse::<u64>().ok()))
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u64>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains(word)
        })
        .collect()
}

fn hanging_run(world: &World) -> (Child, String, u64, u64) {
    let stream = script_file(world, "hang", &[opencode_text("hanging"), json!({"fake": "hang"})]);
    let (child, events, _reader) = start(world, ".workbenches/oc-demo", &stream, "output.text");
    let id = run_id(&events);
    let supervisor = run_record(world, &id)["pid"].as_u64().unwrap();
    let runner = runner_pid(world);
    (child, id, supervisor, runner)
}

/// SIGKILLs the supervisor's watchdog, then the supervisor, and lets go of the `run` child: what the run
/// started is left with no owner at all (its run is lost).
fn orphan(child: &mut Child, supervisor: u64) {
    let watchdogs = children_with(supervisor, "supervise-watch");
    assert_eq!(watchdogs.len(), 1, "the supervisor has a watchdog");
    signal(watchdogs[0], Signal::SIGKILL);
    wait_gone(watchdogs[0], "the watchdog", Duration::from_secs(20));
    signal(supervisor, Signal::SIGKILL);
    wait_gone(supervisor, "the supervisor", Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_supervisor_killed_with_sigkill_leaves_no_runner_working() {
    let world = opencode_world();
    let (mut child, id, supervisor, runner) = hanging_run(&world);
    let staged = stages(&world);
    assert_eq!(staged.len(), 1, "{staged:?}");
    signal(supervisor, Signal::SIGKILL);
    wait_gone(supervisor, "the supervisor", Duration::from_secs(20));
    // Before: the runner went on working, past any --max-duration and cost cap.
    wait_gone(runner, "the runner of a SIGKILLed supervisor", Duration::from_secs(20));
    let deadline = Instant::now() + Duration::from_secs(20);
    while staged[0].exists() {
        assert!(Instant::now() < deadline, "the stage directory of a SIGKILLed supervisor is left behind");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    // The run is lost (nothing could write its end); `kill` no longer refuses it and finds nothing running.
    let output = wb(&world, &["kill", &id]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(output.stderr.contains("nothing of it was left running"), "{output:?}");
}

#[test]
fn sigterm_and_sighup_cancel_a_run_as_sigint_does() {
    for (name, sent) in [("SIGTERM", Signal::SIGTERM), ("SIGHUP", Signal::SIGHUP)] {
        let world = opencode_world();
        let (mut child, id, supervisor, runner) = hanging_run(&world);
        let staged = stages(&world);
        assert_eq!(staged.len(), 1, "{staged:?}");
        let mode = std::fs::metadata(&staged[0]).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "the stage directory is private");
        signal(supervisor, sent);
        wait_gone(supervisor, &format!("the supervisor after {name}"), Duration::from_secs(30));
        wait_gone(runner, &format!("the runner after {name}"), Duration::from_secs(5));
        let events = logged(&world, &id);
        let terminal = events.last().unwrap();
        assert_eq!(terminal["type"], "run.cancelled", "{name}: {events:?}");
        assert_eq!(terminal["data"]["message"], format!("Cancelled by {name}"), "{terminal}");
        let available = events.iter().find(|e| e["type"] == "outcome.available").expect("a partial outcome");
        assert_eq!(available["data"]["completeness"], "partial", "{available}");
        assert_eq!(run_record(&world, &id)["status"], "cancelled");
        assert!(stages(&world).is_empty(), "{name}: the stage directory is removed");
        assert_eq!(child.wait().unwrap().code(), Some(130), "{name}");
    }
}

#[test]
fn kill_of_a_lost_run_stops_what_is_left_of_it() {
    let world = opencode_world();
    let (mut child, id, supervisor, runner) = hanging_run(&world);
    // The supervisor and its watchdog both SIGKILLed: the runner is left working, the run lost.
    orphan(&mut child, supervisor);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!support::process_is_gone(i64::try_from(runner).unwrap()), "the runner outlives both");
    let listed: Value = serde_json::from_str(&wb(&world, &["runs", "--all", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["state"], "lost", "{listed}");
    // Before: "error: run … is not running (lost)", and the runner went on.
    let output = wb(&world, &["kill", &id]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(output.stderr.contains(&format!("stopped its runner (processes {runner}")), "{output:?}");
    wait_gone(runner, "the runner of a killed lost run", Duration::from_secs(5));
    assert!(output.stderr.contains("removed its stage directory"), "{output:?}");
    assert!(stages(&world).is_empty());
}

#[test]
fn clean_removes_the_stage_directories_of_processes_that_ended() {
    let world = opencode_world();
    // A stage directory named for a process that has ended (pid 1's start time is never 1 tick past boot+…):
    // one whose creator still lives is kept.
    let dead = world.tmp.join("wb-lsp-stage-1-999999999-abc");
    std::fs::create_dir(&dead).unwrap();
    let own = std::process::id();
    let start = wb_engine::runs::process_start(own).unwrap();
    let living = world.tmp.join(format!("wb-lsp-stage-{own}-{start}-abc"));
    std::fs::create_dir(&living).unwrap();
    let output = wb(&world, &["clean", "--older-than", "30d"]);
    assert!(output.stdout.contains(&format!("Would remove stage directory {}", dead.display())), "{output:?}");
    assert!(!output.stdout.contains(&living.display().to_string()), "{output:?}");
    assert!(dead.exists());
    let output = wb(&world, &["clean", "--older-than", "30d", "--apply"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(!dead.exists() && living.exists(), "{output:?}");
}

/// The fake OpenCode inside the Docker image: says it hangs, then sleeps.
const FAKE_OPENCODE: &str =
    "#!/bin/sh\nprintf '{\"type\":\"text\",\"part\":{\"type\":\"text\",\"text\":\"hanging\"}}\\n'\nexec sleep 300\n";

/// A Docker package built `FROM scratch` with Debian's busybox-static and the fake OpenCode; `None` when the
/// Docker tests are skipped (`WB_LSP_SKIP_DOCKER_TESTS=1`).
fn docker_world() -> Option<World> {
    use std::os::unix::fs::PermissionsExt;
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("docker tests skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return None;
    }
    let world = World::new();
    let manifest = support::minimal(
        "dk-hang",
        "opencode",
        "openai/gpt-5.1",
        "runtimes:\n  docker:\n    image:\n      build: ./image/Dockerfile\n      context: ./image\n",
    );
    let dir = world.package("dk-hang", &manifest);
    let context = dir.join("image");
    let bin = context.join("rootfs/bin");
    let local = context.join("rootfs/usr/local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    std::fs::copy("/bin/busybox", bin.join("busybox")).expect("Debian's busybox-static (/bin/busybox)");
    for applet in ["sh", "sleep", "printf", "id"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).unwrap();
    }
    std::fs::write(local.join("opencode"), FAKE_OPENCODE).unwrap();
    std::fs::set_permissions(local.join("opencode"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let nonce = format!("{:?}-{}", Instant::now(), std::process::id());
    std::fs::write(context.join("nonce.txt"), nonce).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nCOPY nonce.txt /nonce.txt\nENV PATH=/usr/local/bin:/bin\n",
    )
    .unwrap();
    Some(world)
}

/// The ids of the containers (running or not) the process `pid` created, by their owner label.
fn containers_of(pid: u64) -> Vec<String> {
    let start = wb_engine::runs::process_start(u32::try_from(pid).unwrap()).unwrap_or_default();
    containers_labelled(&format!("dev.wb-lsp.owner={pid}:{start}"))
}

fn containers_labelled(label: &str) -> Vec<String> {
    let output = std::process::Command::new("docker")
        .args(["ps", "-aq", "--no-trunc", "--filter"])
        .arg(format!("label={label}"))
        .output();
    let output = output.expect("the docker CLI");
    assert!(output.status.success(), "docker ps: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(str::to_owned).collect()
}

fn container_exists(id: &str) -> bool {
    std::process::Command::new("docker").args(["inspect", id]).output().is_ok_and(|o| o.status.success())
}

fn wait_removed(id: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while container_exists(id) {
        assert!(Instant::now() < deadline, "{what}: container {id} is still there");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A run of the Docker package hanging in its container: the caller, run id, supervisor and container.
fn hanging_container(world: &World) -> (Child, String, u64, String) {
    let stream = script_file(world, "unused", &[]);
    let (child, events, _reader) = start(world, ".workbenches/dk-hang", &stream, "output.text");
    let id = run_id(&events);
    let supervisor = run_record(world, &id)["pid"].as_u64().unwrap();
    let containers = containers_of(supervisor);
    assert_eq!(containers.len(), 1, "the run's container carries its supervisor as owner: {containers:?}");
    (child, id, supervisor, containers[0].clone())
}

#[test]
fn docker_a_supervisor_killed_or_terminated_leaves_no_container() {
    let Some(world) = docker_world() else { return };
    // SIGKILL: the watchdog removes the container (before: it went on, then stayed, exited, ignored by clean).
    let (mut child, _id, supervisor, container) = hanging_container(&world);
    signal(supervisor, Signal::SIGKILL);
    wait_removed(&container, "after SIGKILL of the supervisor");
    let _ = child.kill();
    let _ = child.wait();
    // SIGTERM and SIGHUP: a cancel, the container stopped and removed, the log's end naming the signal.
    for (name, sent) in [("SIGTERM", Signal::SIGTERM), ("SIGHUP", Signal::SIGHUP)] {
        let (mut child, id, supervisor, container) = hanging_container(&world);
        signal(supervisor, sent);
        assert_eq!(child.wait().unwrap().code(), Some(130), "{name}");
        wait_removed(&container, name);
        let terminal = logged(&world, &id).pop().unwrap();
        assert_eq!(
            (terminal["type"].as_str(), terminal["data"]["message"].as_str()),
            (Some("run.cancelled"), Some(format!("Cancelled by {name}").as_str()))
        );
    }
}

#[test]
fn docker_kill_of_a_lost_run_and_clean_remove_its_container() {
    let Some(world) = docker_world() else { return };
    for cleaner in ["kill", "clean"] {
        let (mut child, id, supervisor, container) = hanging_container(&world);
        orphan(&mut child, supervisor);
        assert!(container_exists(&container), "the container outlives its supervisor and watchdog");
        if cleaner == "kill" {
            let output = wb(&world, &["kill", &id]);
            assert_eq!(output.code, 0, "{output:?}");
            assert!(output.stderr.contains("removed its container"), "{output:?}");
        } else {
            let output = wb(&world, &["clean", "--older-than", "30d", "--apply"]);
            assert_eq!(output.code, 0, "{output:?}");
            assert!(output.stdout.contains("Removed container "), "{output:?}");
        }
        assert!(!container_exists(&container), "{cleaner} removed the container");
    }
}
