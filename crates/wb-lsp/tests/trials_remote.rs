//! Trials on the sandbox services' fakes (`wb-sandbox-fakes`, whose sandboxes run the staged commands in
//! bubblewrap roots), through the built binary: each attempt a detached run in a sandbox of its own, its
//! outcome graded in a fresh sandbox of the same template; the agent, which searches its whole sandbox, never finds a gate or the
//! tasks; on E2B, the service refusing creates with 429 makes the trial wait for a slot, never fail an attempt.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use wb_sandbox_fakes::daytona::{self, DaytonaFake};
use wb_sandbox_fakes::e2b::{self, E2bFake};
use wb_testsupport::{Output, World, finish_within};

const MANIFEST: &str = "spec: 1
version: 1.0.0
name: remote-trial
description: A package tried on the remote runtimes.
runner: opencode
model:
  id: openai/gpt-5.1
  routes:
    - provider: openai
instructions: ./instructions.md
runtimes:
  e2b:
    image: ghcr.io/acme/agent:1
  daytona:
    class: linux
    image: ghcr.io/acme/agent:1
";

/// The agent in the sandbox: `answer.txt` is `fixed` only when the package's instruction was staged for it;
/// it searches everything in its sandbox but the system directories for a gate or a `trials` directory, and
/// says what it found; it reports a cost.
const AGENT: &str = r#"#!/bin/sh
emit() { printf '{"type":"text","part":{"type":"text","text":"%s"}}\n' "$1"; }
if grep -rqs TRIAL-MARKER "$OPENCODE_CONFIG_DIR"; then echo fixed > answer.txt; else echo broken > answer.txt; fi
echo hello > hello.txt
seen=""
for dir in /*; do
  case "$dir" in /proc|/sys|/dev|/usr|/etc|/opt) continue ;; esac
  seen="$seen$(grep -rls GATE-SECRET-9c2e "$dir" 2>/dev/null | tr '\n' ' ')"
  seen="$seen$(find "$dir" -type d -name trials 2>/dev/null | tr '\n' ' ')"
done
emit "seen=[$seen]"
printf '{"type":"step_finish","part":{"type":"step-finish","cost":0.01,"tokens":{"input":100,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}}\n'
"#;

enum Service {
    E2b(E2bFake),
    Daytona(DaytonaFake),
}

struct Trial {
    world: World,
    service: Service,
    runtime: &'static str,
}

fn setup(runtime: &'static str) -> Trial {
    let world = World::new();
    let package = world.package("remote-trial", MANIFEST);
    std::fs::write(package.join("instructions.md"), "TRIAL-MARKER: the answer is fixed\n").unwrap();
    task(&package, "fix", "grep -qx fixed answer.txt");
    std::fs::write(package.join("trials/fix/fixture/answer.txt"), "broken\n").unwrap();
    // Two gates: the second passes only inside a sandbox of the package's template (its /opt/wb/bin), so the
    // gates run in a fresh sandbox of the attempt's runtime.
    task(&package, "hello", "test -f hello.txt\"}, {\"id\": \"image\", \"run\": \"test -x /opt/wb/bin/opencode");
    let image_bin = world.root.join("image-bin");
    std::fs::create_dir_all(&image_bin).unwrap();
    std::fs::write(image_bin.join("opencode"), AGENT).unwrap();
    std::fs::set_permissions(image_bin.join("opencode"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let read_only = vec![(image_bin, "/opt/wb/bin".to_owned())];
    let service = match runtime {
        "e2b" => Service::E2b(E2bFake::start(e2b::FakeOptions { read_only, ..e2b::FakeOptions::default() }).unwrap()),
        _ => {
            Service::Daytona(DaytonaFake::start(daytona::Options { read_only, ..daytona::Options::default() }).unwrap())
        }
    };
    Trial { world, service, runtime }
}

fn task(package: &Path, id: &str, gate: &str) {
    let dir = package.join("trials").join(id);
    std::fs::create_dir_all(dir.join("fixture")).unwrap();
    std::fs::write(dir.join("fixture/README.md"), format!("# {id}\n")).unwrap();
    let text = format!(
        r#"{{"version": 1, "id": "{id}", "title": "Task {id}", "fixture": {{"kind": "dir", "path": "fixture"}},
  "timeoutMinutes": 5, "gates": [{{"id": "check", "run": "{gate} # GATE-SECRET-9c2e"}}]}}
"#
    );
    std::fs::write(dir.join("task.json"), text).unwrap();
    std::fs::write(dir.join("prompt.md"), format!("Do task {id}.\n")).unwrap();
}

impl Trial {
    fn wb(&self, args: &[&str]) -> Output {
        let mut command = self.world.command(env!("CARGO_BIN_EXE_wb-lsp"));
        command.env("OPENAI_API_KEY", "sk-remote-trial-2b7d");
        // The transport's waits return at once (a test hook).
        command.env("WB_TEST_RETRY_WAITS", self.world.root.join("retry-waits.log"));
        match &self.service {
            Service::E2b(fake) => {
                command.envs(fake.env());
            }
            Service::Daytona(fake) => {
                command
                    .env("DAYTONA_API_KEY", fake.api_key())
                    .env("DAYTONA_API_URL", fake.api_url())
                    .env("WB_DAYTONA_POLL_MS", "20");
            }
        }
        finish_within(command.args(args), Duration::from_secs(600), "the trial's end")
    }

    fn job(&self, output: &Output) -> Value {
        let line = output.stderr.lines().find(|l| l.starts_with("trial wbt_")).unwrap_or_else(|| panic!("{output:?}"));
        let id = line["trial ".len()..].split(':').next().unwrap();
        let path = self.world.home.join(".workbench/trials").join(id).join("job.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// What the agent of run `run_id` said it found.
    fn seen(&self, run_id: &str) -> String {
        let log = self.world.home.join(".workbench/runs").join(run_id).join("events.ndjson");
        let text = std::fs::read_to_string(log).unwrap();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|event| event["data"]["text"].as_str().map(str::to_owned))
            .find(|text| text.starts_with("seen="))
            .unwrap_or_else(|| panic!("run {run_id} said nothing of what it saw"))
    }

    fn live_sandboxes(&self) -> usize {
        match &self.service {
            Service::E2b(fake) => fake.sandboxes().len(),
            Service::Daytona(fake) => fake.sandbox_ids().len(),
        }
    }
}

fn trial_on(runtime: &'static str) {
    let trial = setup(runtime);
    if let Service::E2b(fake) = &trial.service {
        // The service refuses the first creates for room: more 429s than the first calls' retries.
        let mut faults = fake.faults();
        faults.rate_limited = 24;
        faults.retry_after = 1;
        fake.set_faults(faults);
    }
    let output = trial.wb(&["trial", ".workbenches/remote-trial", "--runtime", trial.runtime, "--parallel", "4"]);
    assert_eq!(output.code, 0, "{output:?}");
    let job = trial.job(&output);
    for attempt in job["attempts"].as_array().unwrap() {
        let expected = if attempt["task"] == "fix" && attempt["arm"] == "plain" { "failed" } else { "works" };
        assert_eq!(attempt["verdict"], expected, "{attempt:#}");
        assert_eq!(attempt["cost_usd"], 0.01, "{attempt}");
        let seen = trial.seen(attempt["run_id"].as_str().unwrap());
        assert_eq!(seen, "seen=[]", "the agent found the tasks or a gate in its sandbox");
        if attempt["task"] == "hello" {
            let codes: Vec<&Value> = attempt["gates"].as_array().unwrap().iter().map(|g| &g["exit_code"]).collect();
            assert_eq!(codes, [&Value::from(0), &Value::from(0)], "the gates ran in a sandbox: {attempt:#}");
        }
    }
    assert!(!Path::new("/opt/wb/bin/opencode").exists(), "only a sandbox has the template's /opt/wb/bin");
    assert_eq!(trial.live_sandboxes(), 0, "every attempt's sandbox was destroyed");
    if runtime == "e2b" {
        assert!(output.stderr.contains("waiting for a slot"), "the 429s never made an attempt wait: {}", output.stderr);
    }
}

#[test]
fn a_trial_on_e2b_waits_out_a_full_service_and_hides_the_gates() {
    trial_on("e2b");
}

#[test]
fn a_trial_on_daytona_hides_the_gates() {
    trial_on("daytona");
}

/// A sandbox that cannot be created (the service answers 500) makes every attempt `infra_error`, never a failure
/// of the package; once the service is back, `trial resume` runs exactly those.
#[test]
fn attempts_whose_sandbox_cannot_be_created_are_infra_errors_and_resumed() {
    let trial = setup("e2b");
    let Service::E2b(fake) = &trial.service else { unreachable!() };
    let mut faults = fake.faults();
    faults.create_status = Some(500);
    fake.set_faults(faults.clone());
    let output = trial.wb(&["trial", ".workbenches/remote-trial", "--runtime", "e2b", "--task", "hello"]);
    assert_eq!(output.code, 1, "{output:?}");
    let job = trial.job(&output);
    let id = job["job_id"].as_str().unwrap().to_owned();
    for attempt in job["attempts"].as_array().unwrap() {
        assert_eq!(attempt["verdict"], "infra_error", "{attempt:#}");
        assert!(attempt["reason"].as_str().is_some_and(|reason| !reason.is_empty()), "{attempt:#}");
    }
    assert_eq!(trial.live_sandboxes(), 0);
    faults.create_status = None;
    fake.set_faults(faults);
    let resumed = trial.wb(&["trial", "resume", &id]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(resumed.stderr.contains("2 of 2 attempts to run"), "{}", resumed.stderr);
    let path = trial.world.home.join(".workbench/trials").join(&id).join("job.json");
    let job: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(job["attempts"].as_array().unwrap().iter().all(|a| a["verdict"] == "works"), "{job:#}");
}
