//! The remote runtimes end to end through the built binary: `wb-lsp smoke`, `dry-run` and `run --runtime
//! e2b|daytona` against the fake services of `wb-sandbox-fakes`, whose sandboxes really run the staged
//! commands (bubblewrap roots): staging, `git init` and the baseline commit, preflight, a fake OpenCode (a
//! shell script bound into every sandbox at `/opt/wb/bin`), collection with `git diff` and `tar --null`, and
//! the destroy. Then the `pending` outcome is applied with `wb-lsp outcome ID --apply`, and refused when the
//! workspace moved on. Faults: create fails, the sandbox dies mid-run, cancellation. Every request the fakes
//! saw is searched for the service key and the bound value: each appears only where the service needs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use wb_sandbox_fakes::Recorded;
use wb_sandbox_fakes::daytona::{self, DaytonaFake};
use wb_sandbox_fakes::e2b::{self, E2bFake};
use wb_testsupport::{Deadline, Output, World, deadline, finish, frame, read_message};

/// How long a test reads what a process prints (its events, its replies, its last words) before it fails naming
/// what was missing: the commands run in the fakes' bubblewrap sandboxes, which may fail to start.
const READ: Duration = Duration::from_secs(300);

/// What a child that has ended printed on `stream`, read by [`READ`] (a process it left may hold the pipe).
fn printed(stream: Option<impl std::io::Read + Send + 'static>, what: &str) -> String {
    deadline(stream.unwrap(), READ, what).text_to_end()
}

/// The model key bound to the runner: it must reach the runner, and no output.
const OPENAI_KEY: &str = "sk-remote-test-5d1c9e7a3b";

const MANIFEST: &str = "spec: 1
version: 1.0.0
name: remote-demo
description: A package for the remote runtimes.
runner: opencode
model:
  id: openai/gpt-5.1
  routes:
    - provider: openai
instructions: ./instructions.md
tools:
  - sed
requirements:
  cpu: 1
  memory_gb: 0.5
  disk_gb: 1
workspaces:
  docs:
    required: false
    access: read-only
env:
  # A package naming the services' keys still never gets them into a sandbox.
  E2B_API_KEY:
    required: false
  DAYTONA_API_KEY:
    required: false
runtimes:
  e2b:
    image: ghcr.io/acme/agent:1
  daytona:
    class: linux
    image: ghcr.io/acme/agent:1
";

/// The fake OpenCode inside the sandbox: its behaviour depends on the task (the last argument).
const FAKE_OPENCODE: &str = r#"#!/bin/sh
emit() { printf '{"type":"text","part":{"type":"text","text":"%s"}}\n' "$1"; }
for task; do :; done
case "$task" in
  edit)
    emit "pwd=$(pwd)"
    if [ -n "$OPENAI_API_KEY" ]; then emit "key=set"; else emit "key=unset"; fi
    if [ -e .env ]; then emit "dotenv=staged"; else emit "dotenv=absent"; fi
    if [ -n "$WORKBENCH_WORKSPACE_DOCS" ]; then
      emit "docs=$WORKBENCH_WORKSPACE_DOCS"
      emit "docs-mode=$(stat -c %A "$WORKBENCH_WORKSPACE_DOCS/guide.md")"
    fi
    printf '# New title\n\nThe ledger service.\n' > README.md
    rm obsolete.txt
    echo "second line" >> build.log
    mkdir -p notes && echo "from the sandbox" > notes/new.md
    echo "artifact" > "$WORKBENCH_OUTPUT_DIR/result.txt"
    emit "done"
    ;;
  hang)
    emit "hanging"
    touch /tmp/hanging
    sleep 300
    ;;
  adopt)
    # Output before its supervisor dies, while nobody follows, and after the adoption.
    emit "one"
    emit "two"
    while [ ! -e /tmp/go ]; do sleep 0.1; done
    emit "three"
    printf '# Adopted\n' > README.md
    echo "artifact" > "$WORKBENCH_OUTPUT_DIR/result.txt"
    touch /tmp/three
    while [ ! -e /tmp/go2 ]; do sleep 0.1; done
    emit "four"
    ;;
  adopt-env)
    # A run started with --env, adopted: the value it prints is the one given again, and redacted.
    emit "one"
    emit "two"
    while [ ! -e /tmp/go ]; do sleep 0.1; done
    emit "key=$OPENAI_API_KEY"
    emit "end"
    ;;
  session-*)
    # A session's turn: what the last turn left in OpenCode's data, the outbox as the turn found it, the arguments.
    mkdir -p "$XDG_DATA_HOME/opencode"
    previous=$(cat "$XDG_DATA_HOME/opencode/last-turn" 2>/dev/null || echo none)
    echo "$task" > "$XDG_DATA_HOME/opencode/last-turn"
    found=$(cat "$WORKBENCH_OUTPUT_DIR/turn.txt" 2>/dev/null || echo none)
    echo "$task" > "$WORKBENCH_OUTPUT_DIR/turn.txt"
    printf '{"type":"text","sessionID":"ses_remote","part":{"type":"text","text":"%s after %s"}}\n' "$task" "$previous"
    emit "outbox=$found"
    emit "argv=$*"
    ;;
  *)
    emit "done"
    ;;
esac
"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    E2b,
    Daytona,
}

/// One fake service with the fake OpenCode bound into its sandboxes.
enum Service {
    E2b(E2bFake),
    Daytona(DaytonaFake),
}

impl Service {
    fn start(kind: Kind, bin: &Path, logs: daytona::LogReplies) -> Service {
        let read_only = vec![(bin.to_path_buf(), "/opt/wb/bin".to_owned())];
        match kind {
            Kind::E2b => {
                Service::E2b(E2bFake::start(e2b::FakeOptions { read_only, ..e2b::FakeOptions::default() }).unwrap())
            }
            Kind::Daytona => Service::Daytona(
                DaytonaFake::start(daytona::Options { read_only, logs, ..daytona::Options::default() }).unwrap(),
            ),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Service::E2b(_) => "e2b",
            Service::Daytona(_) => "daytona",
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        match self {
            Service::E2b(fake) => fake.env().into_iter().collect(),
            Service::Daytona(fake) => vec![
                ("DAYTONA_API_KEY".to_owned(), fake.api_key()),
                ("DAYTONA_API_URL".to_owned(), fake.api_url()),
                ("WB_DAYTONA_POLL_MS".to_owned(), "20".to_owned()),
            ],
        }
    }

    fn key(&self) -> String {
        match self {
            Service::E2b(fake) => fake.api_key().to_owned(),
            Service::Daytona(fake) => fake.api_key(),
        }
    }

    fn requests(&self) -> Vec<Recorded> {
        match self {
            Service::E2b(fake) => fake.requests(),
            Service::Daytona(fake) => fake.requests(),
        }
    }

    /// Sandboxes that exist (not destroyed).
    fn live(&self) -> Vec<String> {
        match self {
            Service::E2b(fake) => fake.sandboxes().into_iter().map(|s| s.id).collect(),
            Service::Daytona(fake) => fake.sandbox_ids(),
        }
    }

    fn created(&self) -> usize {
        let path = match self {
            Service::E2b(_) => "/v2/sandboxes",
            Service::Daytona(_) => "/api/sandbox",
        };
        self.requests().iter().filter(|r| r.method == "POST" && r.path == path).count()
    }

    fn kill(&self, id: &str) {
        match self {
            Service::E2b(fake) => fake.kill_sandbox(id),
            Service::Daytona(fake) => fake.kill_sandbox(id),
        }
    }

    fn fail_create(&self) {
        match self {
            Service::E2b(fake) => {
                let mut faults = fake.faults();
                faults.create_status = Some(500);
                fake.set_faults(faults);
            }
            Service::Daytona(fake) => fake.faults(|f| f.create_status = Some(500)),
        }
    }

    /// The requests carrying `needle` anywhere (headers, query, body), as `METHOD path` lines.
    fn carrying(&self, needle: &str) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| {
                r.query.contains(needle)
                    || r.headers.values().any(|v| v.contains(needle))
                    || String::from_utf8_lossy(&r.body).contains(needle)
            })
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }
}

struct Setup {
    world: World,
    service: Service,
    /// `docs=<dir>`: the read-only named workspace.
    docs: String,
}

fn setup(kind: Kind) -> Setup {
    setup_with(kind, daytona::LogReplies::Daemon)
}

fn setup_with(kind: Kind, logs: daytona::LogReplies) -> Setup {
    let world = World::new();
    world.package("remote-demo", MANIFEST);
    // The workspace: a git repository with a secret file that must never leave the host.
    std::fs::write(world.work.join(".env"), format!("OPENAI_API_KEY={OPENAI_KEY}\n")).unwrap();
    // A file the workspace's .gitignore matches still crosses (it is not a Git workspace) and comes back.
    std::fs::write(world.work.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(world.work.join("build.log"), "first line\n").unwrap();
    // Modes other than 0644 survive the round trip (apply compares them).
    std::fs::set_permissions(world.work.join("README.md"), std::fs::Permissions::from_mode(0o664)).unwrap();
    std::fs::set_permissions(world.work.join("obsolete.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let image_bin = world.root.join("image-bin");
    std::fs::create_dir_all(&image_bin).unwrap();
    let opencode = image_bin.join("opencode");
    std::fs::write(&opencode, FAKE_OPENCODE).unwrap();
    std::fs::set_permissions(&opencode, std::fs::Permissions::from_mode(0o755)).unwrap();
    let service = Service::start(kind, &image_bin, logs);
    let docs = world.root.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), "# Guide\n").unwrap();
    Setup { world, service, docs: format!("docs={}", docs.display()) }
}

impl Setup {
    fn command(&self) -> std::process::Command {
        let mut command = self.world.command(env!("CARGO_BIN_EXE_wb-lsp"));
        command.envs(self.service.env()).env("OPENAI_API_KEY", OPENAI_KEY);
        // The transport waits on a clock that logs each wait and returns at once (a test hook).
        command.env("WB_TEST_RETRY_WAITS", self.retry_waits());
        command
    }

    /// Where the binary's transport logged the waits it was asked for (milliseconds, one a line).
    fn retry_waits(&self) -> std::path::PathBuf {
        self.world.root.join("retry-waits.log")
    }

    fn wb(&self, args: &[&str]) -> Output {
        finish(self.command().args(args))
    }

    fn args<'a>(&'a self, mode: &'a str, task: Option<&'a str>, work: &'a str) -> Vec<&'a str> {
        let mut args = vec![mode, ".workbenches/remote-demo", "--runtime", self.service.name(), "--json"];
        if mode != "smoke" {
            args.extend(["--dir", work]);
        }
        if mode == "run" || mode == "dry-run" {
            args.extend(["--workspace", self.docs.as_str()]);
        }
        if let Some(task) = task {
            args.extend(["--task", task]);
        }
        args
    }

    /// Runs `wb-lsp run` with `task`; returns the events.
    fn run(&self, task: &str) -> (Output, Vec<Value>) {
        let work = self.world.work.display().to_string();
        let output = self.wb(&self.args("run", Some(task), &work));
        let events = output.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        (output, events)
    }

    /// Neither key appears in what the binary printed.
    fn assert_quiet(&self, output: &Output) {
        for secret in [OPENAI_KEY.to_owned(), self.service.key()] {
            assert!(!output.stdout.contains(&secret), "a secret in stdout: {}", output.stdout);
            assert!(!output.stderr.contains(&secret), "a secret in stderr: {}", output.stderr);
        }
    }

    /// The service key only in the authentication header of the control plane (and, for Daytona, the
    /// toolbox, which takes the same header); the bound value only where it reaches the runner.
    fn assert_secrets_only_where_needed(&self) {
        let key = self.service.key();
        for request in self.service.requests() {
            let body = String::from_utf8_lossy(&request.body);
            assert!(!body.contains(&key), "the service key in a body: {} {}", request.method, request.path);
            assert!(!request.query.contains(&key), "the service key in a query: {}", request.path);
            for (name, value) in &request.headers {
                if value.contains(&key) {
                    assert!(
                        matches!(name.as_str(), "x-api-key" | "authorization"),
                        "the service key in header {name} of {} {}",
                        request.method,
                        request.path
                    );
                }
            }
            if request.path.starts_with("/api/") || request.path.starts_with("/v2/") || request.path.starts_with("/v3/")
            {
                assert!(!body.contains(OPENAI_KEY), "a bound value sent to the control plane: {}", request.path);
            }
        }
        let carrying = self.service.carrying(OPENAI_KEY);
        match self.service {
            // envd's process environment.
            Service::E2b(_) => assert!(carrying.iter().all(|r| r == "POST /process.Process/Start"), "{carrying:?}"),
            // The 0600 environment file, uploaded; never in a command the session records.
            Service::Daytona(_) => assert!(carrying.iter().all(|r| r.ends_with("/files/bulk-upload")), "{carrying:?}"),
        }
        assert!(!carrying.is_empty(), "the bound value never reached the sandbox");
    }
}

fn lifecycle(kind: Kind) {
    let setup = setup(kind);
    let work = setup.world.work.display().to_string();

    // A dry run creates nothing and says what a run would call.
    let output = setup.wb(&setup.args("dry-run", Some("edit"), &work));
    assert_eq!(output.code, 0, "{output:?}");
    let report: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(report["runtime"], setup.service.name());
    // The plan names each step of a run once, in order, with the service's calls.
    let calls: Vec<&str> = report["runtime_calls"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let steps: Vec<&str> = calls.iter().filter_map(|line| line.split_once(": ").map(|(step, _)| step)).collect();
    let mut once = steps.clone();
    once.dedup();
    assert_eq!(
        once,
        ["template", "create", "stage", "preflight", "launch", "collect", "destroy"],
        "every step once, in order: {calls:#?}"
    );
    for single in ["stage", "preflight", "collect", "destroy"] {
        assert_eq!(steps.iter().filter(|s| **s == single).count(), 1, "{single} listed more than once: {calls:#?}");
    }
    let destroy = match kind {
        Kind::E2b => "destroy: DELETE /sandboxes/{sandboxID}",
        Kind::Daytona => "destroy: DELETE /sandbox/<id>",
    };
    assert_eq!(calls.last().copied(), Some(destroy), "{calls:#?}");
    assert_eq!(setup.service.created(), 0, "a dry run created a sandbox");
    setup.assert_quiet(&output);

    // Smoke creates a sandbox, checks inside it, destroys it, and says so.
    let output = setup.wb(&setup.args("smoke", None, &work));
    assert_eq!(output.code, 0, "{output:?}");
    let report: Value = serde_json::from_str(output.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(report["status"], "ready", "{report}");
    assert_eq!(report["runner"]["path"], "/opt/wb/bin/opencode");
    assert_eq!(report["tools"][0]["name"], "sed");
    assert_eq!(report["sandbox"]["destroyed"], true, "{report}");
    assert!(
        report["requirements"]["checked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "cpu 2" || c.as_str().unwrap_or("").starts_with("cpu ")),
        "{report}"
    );
    assert_eq!(setup.service.created(), 1);
    assert!(setup.service.live().is_empty(), "smoke left a sandbox: {:?}", setup.service.live());
    setup.assert_quiet(&output);

    // A run edits the sandbox's copy; the host workspace is untouched until the outcome is applied.
    let (output, events) = setup.run("edit");
    assert_eq!(output.code, 0, "{output:?}");
    setup.assert_quiet(&output);
    let texts: Vec<&str> =
        events.iter().filter(|e| e["type"] == "output.text").filter_map(|e| e["data"]["text"].as_str()).collect();
    assert!(texts.contains(&"pwd=/workspace"), "{texts:?}\nstdout:\n{}\nstderr:\n{}", output.stdout, output.stderr);
    assert!(texts.contains(&"key=set"), "{texts:?}");
    assert!(texts.contains(&"dotenv=absent"), "the .env file was staged: {texts:?}");
    assert!(texts.contains(&"docs=/workspaces/docs"), "{texts:?}");
    assert!(texts.contains(&"docs-mode=-r--r--r--"), "the read-only workspace is writable: {texts:?}");
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types[types.len() - 2..], ["outcome.available", "run.completed"], "{types:?}");
    let available = &events[events.len() - 2]["data"];
    assert_eq!(available["application_state"], "pending", "{available}");
    assert_eq!(
        std::fs::read_to_string(setup.world.work.join("README.md")).unwrap(),
        "# Old title\n\nThe ledger service.\n"
    );
    assert!(setup.world.work.join("obsolete.txt").exists());
    assert!(setup.service.live().is_empty(), "the run left a sandbox");
    setup.assert_secrets_only_where_needed();
    // The working copy's baseline keeps no digest cache (it would never be read again).
    let caches = setup.world.home.join(".workbench/cache/baselines");
    assert_eq!(std::fs::read_dir(&caches).map(|d| d.count()).unwrap_or(0), 0, "a cache entry for a working copy");

    let id = available["outcome_id"].as_str().unwrap().to_owned();
    let output = setup.wb(&["outcome", &id, "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    let outcome: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(outcome["receipt"]["state"], "pending");
    let mut entries: Vec<(String, String)> = outcome["outcome"]["changesets"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (e["operation"].as_str().unwrap_or_default().to_owned(), e["path"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    entries.sort_by(|a, b| a.1.cmp(&b.1));
    let expected =
        [("modify", "README.md"), ("modify", "build.log"), ("add", "notes/new.md"), ("delete", "obsolete.txt")];
    assert_eq!(entries, expected.map(|(op, path)| (op.to_owned(), path.to_owned())), "{outcome}");
    assert_eq!(outcome["outcome"]["artifacts"][0]["path"], "result.txt", "{outcome}");

    // The workspace moved on where the run also changed it: the apply is refused, nothing is written.
    std::fs::write(setup.world.work.join("README.md"), "# Edited meanwhile\n").unwrap();
    let output = setup.wb(&["outcome", &id, "--apply"]);
    assert_ne!(output.code, 0, "{output:?}");
    assert!(output.stderr.contains("Outcome conflicts with current workspace content: README.md"), "{output:?}");
    assert!(setup.world.work.join("obsolete.txt").exists(), "a refused apply deleted a file");
    assert!(!setup.world.work.join("notes/new.md").exists(), "a refused apply added a file");

    // Put back, the apply brings every change in.
    std::fs::write(setup.world.work.join("README.md"), "# Old title\n\nThe ledger service.\n").unwrap();
    let output = setup.wb(&["outcome", &id, "--apply", "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    let applied: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!((applied["applied"].as_u64(), applied["unchanged"].as_u64()), (Some(4), Some(0)), "{applied}");
    assert_eq!(std::fs::read_to_string(setup.world.work.join("build.log")).unwrap(), "first line\nsecond line\n");
    let mode = std::fs::metadata(setup.world.work.join("README.md")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o664, "the file's mode changed on the way");
    assert_eq!(
        std::fs::read_to_string(setup.world.work.join("README.md")).unwrap(),
        "# New title\n\nThe ledger service.\n"
    );
    assert_eq!(std::fs::read_to_string(setup.world.work.join("notes/new.md")).unwrap(), "from the sandbox\n");
    assert!(!setup.world.work.join("obsolete.txt").exists());
    assert_eq!(
        std::fs::read_to_string(setup.world.work.join(".env")).unwrap(),
        format!("OPENAI_API_KEY={OPENAI_KEY}\n")
    );
    let output = setup.wb(&["outcome", &id, "--json"]);
    let outcome: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(outcome["receipt"]["state"], "applied");
}

#[test]
fn e2b_dry_run_smoke_run_and_apply() {
    lifecycle(Kind::E2b);
}

#[test]
fn daytona_dry_run_smoke_run_and_apply() {
    lifecycle(Kind::Daytona);
}

/// Daytona's daemon answers session logs as plain text to a client that sends no SDK version (daemon
/// v0.190.0, `apps/daemon/pkg/session/common.go`); a run against a daemon answering so completes.
#[test]
fn daytona_a_daemon_answering_logs_in_plain_text_completes_the_run() {
    let setup = setup_with(Kind::Daytona, daytona::LogReplies::PlainText);
    let (output, events) = setup.run("edit");
    assert_eq!(output.code, 0, "{output:?}");
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.last(), Some(&"run.completed"), "{types:?}");
    let texts: Vec<&str> =
        events.iter().filter(|e| e["type"] == "output.text").filter_map(|e| e["data"]["text"].as_str()).collect();
    assert!(texts.contains(&"pwd=/workspace") && texts.contains(&"done"), "{texts:?}");
    assert!(setup.service.live().is_empty(), "the sandbox was left: {:?}", setup.service.live());
    setup.assert_quiet(&output);
}

fn create_fails(kind: Kind) {
    let setup = setup(kind);
    setup.service.fail_create();
    let (output, _) = setup.run("edit");
    assert_ne!(output.code, 0, "{output:?}");
    let title = if kind == Kind::E2b { "E2B" } else { "Daytona" };
    assert!(output.stderr.contains(title) && output.stderr.contains("500"), "{output:?}");
    assert!(setup.service.live().is_empty(), "a failed create left a sandbox: {:?}", setup.service.live());
    setup.assert_quiet(&output);
}

#[test]
fn e2b_a_failed_create_leaves_nothing() {
    create_fails(Kind::E2b);
}

#[test]
fn daytona_a_failed_create_leaves_nothing() {
    create_fails(Kind::Daytona);
}

/// Starts `wb-lsp run` with the hanging task; returns the child and a reader of its events once the runner
/// says it hangs.
fn start_hanging(setup: &Setup) -> (std::process::Child, Vec<Value>, BufReader<Deadline>) {
    let work = setup.world.work.display().to_string();
    let child = setup
        .command()
        .args(setup.args("run", Some("hang"), &work))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wb_testsupport::events_until(child, Duration::from_secs(60), "the runner never said it hangs", |event| {
        event["type"] == "output.text" && event["data"]["text"] == "hanging"
    })
}

fn rest(mut events: Vec<Value>, reader: BufReader<Deadline>) -> Vec<Value> {
    for line in reader.lines() {
        let line = line.unwrap();
        if let Ok(event) = serde_json::from_str(line.trim()) {
            events.push(event);
        }
    }
    events
}

fn wait_exit(child: &mut std::process::Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "wb-lsp did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cancellation(kind: Kind) {
    let setup = setup(kind);
    let (mut child, events, reader) = start_hanging(&setup);
    assert_eq!(setup.service.live().len(), 1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let events = rest(events, reader);
    let code = wait_exit(&mut child);
    assert_eq!(code, 130, "{events:?}");
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.last(), Some(&"run.cancelled"), "{types:?}");
    assert!(types.contains(&"outcome.available"), "a cancelled run still collects: {types:?}");
    assert!(setup.service.live().is_empty(), "cancellation left a sandbox");
}

#[test]
fn e2b_cancellation_kills_collects_and_destroys() {
    cancellation(Kind::E2b);
}

#[test]
fn daytona_cancellation_kills_collects_and_destroys() {
    cancellation(Kind::Daytona);
}

fn sandbox_dies(kind: Kind) {
    let setup = setup(kind);
    let (mut child, events, reader) = start_hanging(&setup);
    let live = setup.service.live();
    assert_eq!(live.len(), 1);
    setup.service.kill(&live[0]);
    let events = rest(events, reader);
    let code = wait_exit(&mut child);
    assert_ne!(code, 0, "{events:?}");
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.last(), Some(&"run.failed"), "{types:?}");
    // Collection from a dead sandbox fails, and says so: never an empty outcome.
    assert!(types.contains(&"outcome.failed"), "{types:?}");
    assert!(setup.service.live().is_empty());
}

#[test]
fn e2b_a_sandbox_that_dies_mid_run_fails_the_run() {
    sandbox_dies(Kind::E2b);
}

#[test]
fn daytona_a_sandbox_that_dies_mid_run_fails_the_run() {
    sandbox_dies(Kind::Daytona);
}

#[test]
fn missing_keys_get_the_reference_texts() {
    let setup = setup(Kind::E2b);
    let work = setup.world.work.display().to_string();
    for (runtime, text) in [
        ("e2b", "E2B_API_KEY is required for the E2B runtime."),
        ("daytona", "DAYTONA_API_KEY is required for the Daytona runtime."),
    ] {
        let output = finish(
            setup
                .world
                .command(env!("CARGO_BIN_EXE_wb-lsp"))
                .args(["run", ".workbenches/remote-demo", "--runtime", runtime, "--dir", &work, "--task", "edit"])
                .env("OPENAI_API_KEY", OPENAI_KEY),
        );
        assert_ne!(output.code, 0);
        assert!(output.stderr.contains(text), "{output:?}");
    }
}

/// The editor's path: the server's `workbench.smoke` and `workbench.run` with `runtime: e2b|daytona`, the
/// sandbox's preparation reported as `$/progress`, the run's events streamed, the outcome pending.
fn editor_commands(kind: Kind) {
    use std::io::Write;
    let setup = setup(kind);
    let mut child = setup
        .command()
        .current_dir(&setup.world.work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let what = "the language server's next message (smoke, run, then the outcome's review)";
    let mut stdout = BufReader::new(deadline(child.stdout.take().unwrap(), READ, what));
    let mut send = |value: Value| {
        stdin.write_all(&frame(&value.to_string())).unwrap();
        stdin.flush().unwrap();
    };
    send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
    let manifest = setup.world.repo.join(".workbenches/remote-demo/workbench.yml");
    let uri = format!("file://{}", manifest.display());
    let runtime = setup.service.name();
    let work = setup.world.work.display().to_string();
    send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
        "params": {"command": "workbench.smoke", "arguments": [{"uri": uri, "runtime": runtime}], "workDoneToken": "smoke"}}));
    let mut reports = Vec::new();
    let smoke = loop {
        let message = read_message(&mut stdout);
        if message["id"] == 2 {
            break message;
        }
        if message["method"] == "$/progress" && message["params"]["token"] == "smoke" {
            reports.push(message["params"]["value"]["message"].as_str().unwrap_or_default().to_owned());
        }
    };
    assert_eq!(smoke["result"][0]["status"], "ready", "{smoke}");
    assert_eq!(smoke["result"][0]["sandbox"]["destroyed"], true, "{smoke}");
    let title = if kind == Kind::E2b { "E2B" } else { "Daytona" };
    assert!(reports.iter().any(|m| m.starts_with(&format!("Creating {title} sandbox"))), "{reports:?}");
    assert!(reports.iter().any(|m| m.starts_with("Staged ")), "{reports:?}");
    send(serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "runtime": runtime, "task": "edit", "dir": work}], "workDoneToken": "run"}}));
    let mut events = Vec::new();
    let run = loop {
        let message = read_message(&mut stdout);
        if message["id"] == 3 {
            break message;
        }
        if message["method"] == "workbench/runEvent" {
            events.push(message["params"]["event"].clone());
        }
    };
    assert_eq!(run["result"]["ending"]["status"], "completed", "{run}");
    let available = events.iter().find(|e| e["type"] == "outcome.available").unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(available["data"]["application_state"], "pending", "{available}");
    assert!(setup.service.live().is_empty());

    // Review file by file: the changed paths, each side of one, then one file taken, then the rest.
    let outcome_id = available["data"]["outcome_id"].as_str().unwrap().to_owned();
    let mut ask = |id: i64, command: &str, argument: Value| {
        send(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
            "params": {"command": command, "arguments": [argument]}}));
        loop {
            let message = read_message(&mut stdout);
            if message["id"] == id {
                break message;
            }
        }
    };
    let shown = ask(10, "workbench.outcome", serde_json::json!(outcome_id));
    let entries = shown["result"]["entries"].as_array().unwrap().clone();
    let brief: Vec<(String, String, u64, u64)> = entries
        .iter()
        .map(|e| {
            (
                e["label"].as_str().unwrap().to_owned(),
                e["kind"].as_str().unwrap().to_owned(),
                e["additions"].as_u64().unwrap(),
                e["deletions"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("README.md", "modified", 1, 1),
        ("build.log", "modified", 1, 0),
        ("notes/new.md", "added", 1, 0),
        ("obsolete.txt", "deleted", 0, 1),
    ];
    let mut sorted = brief.clone();
    sorted.sort();
    assert_eq!(sorted, expected.map(|(l, k, a, d)| (l.to_owned(), k.to_owned(), a, d)), "{shown}");
    let before =
        ask(11, "workbench.outcomeFile", serde_json::json!({"id": outcome_id, "path": "README.md", "side": "before"}));
    assert_eq!(
        before["result"],
        serde_json::json!({"kind": "text", "text": "# Old title\n\nThe ledger service.\n", "mode": 0o664})
    );
    let after =
        ask(12, "workbench.outcomeFile", serde_json::json!({"id": outcome_id, "path": "README.md", "side": "after"}));
    assert_eq!(after["result"]["text"], "# New title\n\nThe ledger service.\n", "{after}");
    let added = ask(
        13,
        "workbench.outcomeFile",
        serde_json::json!({"id": outcome_id, "path": "notes/new.md", "side": "before"}),
    );
    assert_eq!(added["result"]["kind"], "absent", "{added}");
    let one = ask(14, "workbench.applyOutcome", serde_json::json!({"id": outcome_id, "only": ["README.md"]}));
    assert_eq!(
        (one["result"]["applied"].as_u64(), one["result"]["applicationState"].as_str()),
        (Some(1), Some("pending")),
        "{one}"
    );
    assert_eq!(
        std::fs::read_to_string(setup.world.work.join("README.md")).unwrap(),
        "# New title\n\nThe ledger service.\n"
    );
    assert!(setup.world.work.join("obsolete.txt").exists(), "only the selected file was taken");
    let shown = ask(15, "workbench.outcome", serde_json::json!(outcome_id));
    let taken: Vec<&str> = shown["result"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["taken"] == true)
        .filter_map(|e| e["label"].as_str())
        .collect();
    assert_eq!(taken, ["README.md"], "{shown}");
    let rest = ask(16, "workbench.applyOutcome", serde_json::json!({"id": outcome_id}));
    assert_eq!(
        (
            rest["result"]["applied"].as_u64(),
            rest["result"]["unchanged"].as_u64(),
            rest["result"]["applicationState"].as_str()
        ),
        (Some(3), Some(1), Some("applied")),
        "{rest}"
    );
    assert!(!setup.world.work.join("obsolete.txt").exists());
    send(serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}));
    send(serde_json::json!({"jsonrpc": "2.0", "method": "exit"}));
    let _ = wait_exit(&mut child);
}

#[test]
fn e2b_from_the_editor() {
    editor_commands(Kind::E2b);
}

#[test]
fn daytona_from_the_editor() {
    editor_commands(Kind::Daytona);
}

impl Service {
    fn fail_uploads(&self) {
        match self {
            Service::E2b(fake) => {
                let mut faults = fake.faults();
                faults.upload_status = Some(507);
                fake.set_faults(faults);
            }
            Service::Daytona(fake) => fake.faults(|f| f.upload_status = Some(500)),
        }
    }

    fn rate_limit(&self, count: u32) {
        match self {
            Service::E2b(fake) => {
                let mut faults = fake.faults();
                faults.rate_limited = count;
                faults.retry_after = 1;
                fake.set_faults(faults);
            }
            Service::Daytona(fake) => fake.faults(|f| {
                f.too_many_requests = count;
                f.retry_after_secs = 1;
            }),
        }
    }
}

/// Staging fails (the upload is refused): the run fails with the reference's text, and the sandbox is
/// destroyed anyway.
fn upload_fails(kind: Kind) {
    let setup = setup(kind);
    setup.service.fail_uploads();
    let (output, _) = setup.run("edit");
    assert_ne!(output.code, 0, "{output:?}");
    let title = if kind == Kind::E2b { "E2B" } else { "Daytona" };
    assert!(output.stderr.contains(&format!("Failed to stage {title} runtime asset: /")), "{output:?}");
    assert_eq!(setup.service.created(), 1);
    assert!(setup.service.live().is_empty(), "a failed staging left its sandbox");
    setup.assert_quiet(&output);
}

#[test]
fn e2b_a_failed_upload_fails_the_run_and_destroys_the_sandbox() {
    upload_fails(Kind::E2b);
}

#[test]
fn daytona_a_failed_upload_fails_the_run_and_destroys_the_sandbox() {
    upload_fails(Kind::Daytona);
}

/// The service answers 429 twice (with `Retry-After: 1`): the run waits a second each time, on the transport's
/// clock (logged by the test hook instead of slept), and succeeds.
fn rate_limited(kind: Kind) {
    let setup = setup(kind);
    setup.service.rate_limit(2);
    let (output, events) = setup.run("edit");
    assert_eq!(output.code, 0, "{output:?}");
    let waits = std::fs::read_to_string(setup.retry_waits()).unwrap_or_default();
    assert_eq!(waits.lines().collect::<Vec<_>>(), ["1000", "1000"], "the waits Retry-After asked for");
    assert_eq!(events.last().map(|e| e["type"].clone()), Some(Value::from("run.completed")), "{events:?}");
    let limited = setup.service.requests().len();
    assert!(limited > 2, "{limited}");
    assert!(setup.service.live().is_empty());
}

#[test]
fn e2b_rate_limits_are_waited_out() {
    rate_limited(Kind::E2b);
}

#[test]
fn daytona_rate_limits_are_waited_out() {
    rate_limited(Kind::Daytona);
}

/// `wb-lsp build --runtime e2b` builds the template once; the next build (and a run) reuses it.
#[test]
fn e2b_build_makes_the_template_once() {
    let setup = setup(Kind::E2b);
    let Service::E2b(fake) = &setup.service else { unreachable!() };
    let output = setup.wb(&["build", ".workbenches/remote-demo", "--runtime", "e2b", "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    let built: Value = serde_json::from_str(&output.stdout).unwrap();
    let report = built.as_array().map_or(built.clone(), |a| a[0].clone());
    assert_eq!(report["runtime"], "e2b", "{report}");
    assert_eq!(report["image"]["cached"], false, "{report}");
    assert_eq!(fake.templates().len(), 1);
    let output = setup.wb(&["build", ".workbenches/remote-demo", "--runtime", "e2b", "--json"]);
    let built: Value = serde_json::from_str(&output.stdout).unwrap();
    let report = built.as_array().map_or(built.clone(), |a| a[0].clone());
    assert_eq!(report["image"]["cached"], true, "{report}");
    assert_eq!(fake.templates().len(), 1, "the second build made another template");
    assert_eq!(setup.service.created(), 0, "build created a sandbox");
    let (output, _) = setup.run("edit");
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(fake.templates().len(), 1, "the run built again");
}

/// Preflight inside the sandbox names what the image lacks, and the Daytona class and image rules refuse
/// with the reference's texts before anything is created.
#[test]
fn preflight_and_daytona_refusals() {
    let e2b = setup(Kind::E2b);
    e2b.world.package(
        "needs-tool",
        &MANIFEST.replace("name: remote-demo", "name: needs-tool").replace("  - sed\n", "  - wb-no-such-tool\n"),
    );
    let output = e2b.wb(&["smoke", ".workbenches/needs-tool", "--runtime", "e2b", "--json"]);
    assert_ne!(output.code, 0);
    let report: Value = serde_json::from_str(output.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        report["error"]["message"],
        "Required CLI tool is unavailable in E2B image ghcr.io/acme/agent:1: wb-no-such-tool",
        "{report}"
    );
    assert!(e2b.service.live().is_empty(), "a failed preflight left its sandbox");
    // Requirements are compared exactly with what the service reports (512 MiB is not 1 GiB).
    e2b.world
        .package("big", &MANIFEST.replace("name: remote-demo", "name: big").replace("memory_gb: 0.5", "memory_gb: 1"));
    let output = e2b.wb(&["smoke", ".workbenches/big", "--runtime", "e2b", "--json"]);
    let report: Value = serde_json::from_str(output.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        report["error"]["message"],
        "Workbench big cannot run on the e2b runtime: requires 1 GiB of memory but the sandbox has 0.5 GiB",
        "{report}"
    );
    assert!(e2b.service.live().is_empty(), "a failed requirement left its sandbox");

    let daytona = setup(Kind::Daytona);
    for (name, runtime, expected) in [
        (
            "windows",
            "    class: windows\n    image: x:1\n",
            "Workbench windows cannot run on the daytona runtime: class windows is not available yet",
        ),
        (
            "gpu",
            "    class: gpu\n    image: x:1\n",
            "Workbench gpu cannot run on the daytona runtime: the gpu class requires gpu: true in requirements",
        ),
        ("no-image", "    class: linux\n", "runtimes.daytona.image is required"),
    ] {
        daytona.world.package(
            name,
            &format!("spec: 1\nversion: 1.0.0\nname: {name}\ndescription: D.\nrunner: opencode\nmodel:\n  id: openai/gpt-5.1\ninstructions: ./instructions.md\nruntimes:\n  daytona:\n{runtime}"),
        );
        let output = daytona.wb(&["smoke", &format!(".workbenches/{name}"), "--runtime", "daytona", "--json"]);
        let report: Value = serde_json::from_str(output.stdout.lines().next().unwrap_or("{}")).unwrap_or_default();
        assert_eq!(report["error"]["message"], expected, "{output:?}");
    }
    assert_eq!(daytona.service.created(), 0, "a refused package created a sandbox");
}

impl Service {
    /// The next sandbox create waits this long before it answers (a stalled control plane).
    fn stall_creates(&self, delay: Duration) {
        match self {
            Service::E2b(fake) => {
                let mut faults = fake.faults();
                faults.create_delay = Some(delay);
                fake.set_faults(faults);
            }
            Service::Daytona(fake) => fake.faults(|f| f.create_delay = Some(delay)),
        }
    }
}

/// Ctrl-C while the sandbox is being created (the service stalls for five minutes): the command stops at once
/// with 130, and whatever the create may have made is reclaimed, not left running for its lease.
fn ctrl_c_while_creating(kind: Kind) {
    let setup = setup(kind);
    setup.service.stall_creates(Duration::from_secs(300));
    let work = setup.world.work.display().to_string();
    let mut child = setup
        .command()
        .args(setup.args("run", Some("edit"), &work))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Daytona's fake makes the labelled sandbox, then stalls: it is waited for too, as the request is recorded
    // before the sandbox exists, and a reclaim that ran in between would find nothing to reclaim.
    let deadline = Instant::now() + Duration::from_secs(60);
    while setup.service.created() == 0 || (kind == Kind::Daytona && setup.service.live().is_empty()) {
        assert!(Instant::now() < deadline, "the create never reached the service");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let code = wait_exit(&mut child);
    assert_eq!(code, 130);
    let stderr = printed(child.stderr.take(), "the cancelled run's stderr up to its end");
    assert!(stderr.contains("cancelled"), "{stderr}");
    assert!(setup.service.live().is_empty(), "a cancelled create left a sandbox");
}

#[test]
fn e2b_ctrl_c_while_creating_stops_and_reclaims() {
    ctrl_c_while_creating(Kind::E2b);
}

#[test]
fn daytona_ctrl_c_while_creating_stops_and_reclaims() {
    ctrl_c_while_creating(Kind::Daytona);
}

/// A detached run on a sandbox: while it lives the sandbox's lease is extended (every half lease, by the
/// service's own call), and when it is killed the sandbox is destroyed.
fn lease_follows_the_run(kind: Kind) {
    let setup = setup(kind);
    let work = setup.world.work.display().to_string();
    let mut args: Vec<&str> = setup.args("run", Some("hang"), &work).into_iter().filter(|a| *a != "--json").collect();
    args.push("--detach");
    let output = finish(setup.command().args(&args).env("WB_SANDBOX_LEASE", "2s"));
    assert_eq!(output.code, 0, "{output:?}");
    let run_id = output.stdout.trim().to_owned();
    let live = setup.service.live();
    assert_eq!(live.len(), 1, "{live:?}");
    let (extension, expected_body) = match kind {
        Kind::E2b => (format!("/sandboxes/{}/timeout", live[0]), Some(serde_json::json!({"timeout": 2}))),
        // Daytona counts the time to live in whole minutes.
        Kind::Daytona => (format!("/api/sandbox/{}/ttl/1", live[0]), None),
    };
    let extended = || {
        setup.service.requests().into_iter().filter(|r| r.method == "POST" && r.path == extension).collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while extended().len() < 2 {
        assert!(Instant::now() < deadline, "the lease was not extended: {:?}", setup.service.requests());
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some(body) = expected_body {
        assert_eq!(serde_json::from_slice::<Value>(&extended()[0].body).unwrap(), body);
    }
    assert_eq!(setup.service.live(), live, "the run goes on in its sandbox");
    let killed = setup.wb(&["kill", &run_id]);
    assert_eq!(killed.code, 0, "{killed:?}");
    let waited = setup.wb(&["wait", &run_id]);
    assert_eq!(waited.code, 130, "{waited:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !setup.service.live().is_empty() {
        assert!(Instant::now() < deadline, "the sandbox outlived its run");
        std::thread::sleep(Duration::from_millis(100));
    }
    // No extension after the sandbox was destroyed.
    let after = extended().len();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(extended().len(), after, "the lease was extended after the run");
}

#[test]
fn e2b_the_lease_follows_a_detached_run() {
    lease_follows_the_run(Kind::E2b);
}

#[test]
fn daytona_the_lease_follows_a_detached_run() {
    lease_follows_the_run(Kind::Daytona);
}

/// A remote run whose supervisor is SIGKILLed leaves its sandbox to the lease; `clean` destroys it, and only a
/// sandbox of a run this home knows (another machine's run on the same account is never touched).
fn clean_reclaims_the_sandbox_of_a_lost_run(kind: Kind) {
    let setup = setup(kind);
    let (mut child, events, _reader) = start_hanging(&setup);
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    let runs = setup.world.home.join(".workbench/runs");
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(runs.join(&run_id).join("run.json")).unwrap()).unwrap();
    let supervisor = i32::try_from(record["pid"].as_u64().unwrap()).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(supervisor), nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let live = setup.service.live();
    assert_eq!(live.len(), 1, "the lost run's sandbox is left to its lease");

    // Unknown here (its record moved away): never touched.
    let aside = setup.world.root.join("aside");
    std::fs::rename(runs.join(&run_id), &aside).unwrap();
    let output = setup.wb(&["clean", "--apply"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(setup.service.live(), live, "{output:?}");
    std::fs::rename(&aside, runs.join(&run_id)).unwrap();

    let line = format!("{} sandbox {} of run {run_id} (lost)", setup.service.name(), live[0]);
    let output = setup.wb(&["clean"]);
    assert!(output.stdout.contains(&format!("Would destroy {line}")), "{output:?}");
    assert_eq!(setup.service.live(), live, "a preview destroys nothing");
    let output = setup.wb(&["clean", "--apply", "--json"]);
    let cleaned: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(cleaned["sandboxes"][0]["sandbox"], live[0], "{cleaned}");
    assert!(setup.service.live().is_empty(), "clean left the lost run's sandbox");
}

#[test]
fn e2b_clean_reclaims_the_sandbox_of_a_lost_run() {
    clean_reclaims_the_sandbox_of_a_lost_run(Kind::E2b);
}

#[test]
fn daytona_clean_reclaims_the_sandbox_of_a_lost_run() {
    clean_reclaims_the_sandbox_of_a_lost_run(Kind::Daytona);
}

/// `kill` of a remote run whose supervisor died destroys its sandbox (left alone, the sandbox would go on until
/// its lease, the agent working): the user asked for the run to stop.
fn kill_destroys_the_sandbox_of_a_lost_run(kind: Kind) {
    let setup = setup(kind);
    let (mut child, events, _reader) = start_hanging(&setup);
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    kill_supervisor(&setup, &run_id);
    let _ = child.kill();
    let _ = child.wait();
    let live = setup.service.live();
    assert_eq!(live.len(), 1, "the lost run's sandbox outlives its supervisor");
    let output = setup.wb(&["kill", &run_id]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(output.stderr.contains(&format!("destroyed its sandbox {}", live[0])), "{output:?}");
    assert!(setup.service.live().is_empty(), "kill left the lost run's sandbox: {output:?}");
    // Nothing is left: a second kill says so.
    let again = setup.wb(&["kill", &run_id]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stderr.contains("nothing of it was left running"), "{again:?}");
}

#[test]
fn e2b_kill_destroys_the_sandbox_of_a_lost_run() {
    kill_destroys_the_sandbox_of_a_lost_run(Kind::E2b);
}

#[test]
fn daytona_kill_destroys_the_sandbox_of_a_lost_run() {
    kill_destroys_the_sandbox_of_a_lost_run(Kind::Daytona);
}

fn texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "output.text")
        .filter_map(|e| e["data"]["text"].as_str().map(str::to_owned))
        .collect()
}

/// A session in a sandbox: the second turn runs in the same sandbox with the conversation carried on and its
/// outbox snapshotted from the sandbox; `kill` collects the final outcome and destroys the sandbox; `resume`
/// creates a fresh sandbox holding the kept conversation (OpenCode's data, in the staged directory) and the
/// outbox seeded with the last revision.
fn session(kind: Kind) {
    let setup = setup(kind);
    let work = setup.world.work.display().to_string();
    let events_of = |output: &Output| -> Vec<Value> {
        output.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    };
    let mut args = setup.args("run", Some("session-one"), &work);
    args.push("--session");
    let first = setup.wb(&args);
    assert_eq!(first.code, 0, "{first:?}");
    let first_events = events_of(&first);
    let id = first_events[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(texts(&first_events)[..2], ["session-one after none".to_owned(), "outbox=none".to_owned()]);
    assert_eq!(setup.service.live().len(), 1, "the sandbox stays for the next turn");

    let second = setup.wb(&["send", "--json", &id, "session-two"]);
    assert_eq!(second.code, 0, "{second:?}");
    let second_events = events_of(&second);
    let texts_two = texts(&second_events);
    assert_eq!(texts_two[..2], ["session-two after session-one".to_owned(), "outbox=session-one".to_owned()]);
    assert!(texts_two[2].contains("--session ses_remote"), "{texts_two:?}");
    let snapshot = second_events.iter().find(|e| e["type"] == "outcome.available").expect("a snapshot of turn 2");
    assert_eq!(snapshot["data"]["turn_index"], 2);
    assert_eq!(setup.service.created(), 1, "one sandbox for both turns");

    // `kill` returns once the session has ended; its supervisor destroys the sandbox right after.
    assert_eq!(setup.wb(&["kill", &id]).code, 0);
    wait_for("the ended session's sandbox's destroy", || setup.service.live().is_empty());

    let resumed = setup.wb(&["resume", "--json", &id, "session-three"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let resumed_events = events_of(&resumed);
    let new_id = resumed_events[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        texts(&resumed_events)[..2],
        ["session-three after session-two".to_owned(), "outbox=session-two".to_owned()],
        "the fresh sandbox has the kept conversation and the seeded outbox"
    );
    assert_eq!(setup.service.created(), 2);
    assert_eq!(setup.wb(&["kill", &new_id]).code, 0);
    wait_for("the resumed session's sandbox's destroy", || setup.service.live().is_empty());
    setup.assert_quiet(&first);
    setup.assert_quiet(&resumed);
}

#[test]
fn e2b_a_session_takes_turns_in_one_sandbox_and_resumes_in_another() {
    session(Kind::E2b);
}

#[test]
fn daytona_a_session_takes_turns_in_one_sandbox_and_resumes_in_another() {
    session(Kind::Daytona);
}

/// Runs `edit` on E2B with every download failing: the collection fails, the sandbox is paused and kept behind a
/// private checkpoint, and `outcome.failed` says how to recover it. Returns the run id and the sandbox id.
fn kept_after_a_failed_collection(setup: &Setup, fake: &E2bFake) -> (String, String) {
    fake.set_faults(e2b::Faults { download_status: Some(500), ..fake.faults() });
    let (output, events) = setup.run("edit");
    fake.set_faults(e2b::Faults { download_status: None, ..fake.faults() });
    assert_ne!(output.code, 0, "a run whose outcome was not collected exits non-zero: {output:?}");
    setup.assert_quiet(&output);
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    let failed = events.iter().find(|e| e["type"] == "outcome.failed").expect("outcome.failed");
    let sandbox = failed["data"]["recovery"]["sandbox_id"].as_str().expect("the kept sandbox").to_owned();
    assert_eq!(failed["data"]["recovery"]["paused"], true, "{failed}");
    let message = failed["data"]["message"].as_str().unwrap();
    assert!(message.contains("Failed to collect E2B workspace changes"), "{message}");
    assert!(message.contains(&format!("wb-lsp outcome {run_id} --recover")), "{message}");
    assert!(fake.sandbox(&sandbox).is_some_and(|s| s.paused), "the kept sandbox is paused");
    let checkpoint = setup.world.home.join(format!(".workbench/recovery/{run_id}.json"));
    let mode = std::fs::metadata(&checkpoint).expect("the checkpoint").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the checkpoint is private");
    (run_id, sandbox)
}

/// E2B recovery (outcomes contract): a failed collection keeps a paused sandbox and a checkpoint; `clean` lists
/// it and leaves it; `--recover` reconnects to that sandbox only, and returns a partial, pending outcome with a
/// recovery warning that applies like any other; a staged archive the sandbox changed is refused;
/// `--discard-recovery` deletes the sandbox and the checkpoint.
#[test]
fn e2b_a_failed_collection_is_kept_then_recovered_or_discarded() {
    let setup = setup(Kind::E2b);
    let Service::E2b(fake) = &setup.service else { unreachable!() };
    let (first, first_sandbox) = kept_after_a_failed_collection(&setup, fake);
    let (second, second_sandbox) = kept_after_a_failed_collection(&setup, fake);
    assert_eq!(setup.service.live().len(), 2, "both sandboxes are kept");

    // `clean` lists both, and destroys neither (their runs have ended: an orphan would go).
    let output = setup.wb(&["clean", "--apply"]);
    assert_eq!(output.code, 0, "{output:?}");
    for (run, sandbox) in [(&first, &first_sandbox), (&second, &second_sandbox)] {
        assert!(
            output.stdout.contains(&format!("Kept for recovery: e2b sandbox {sandbox} of run {run}")),
            "{output:?}"
        );
    }
    assert_eq!(setup.service.live().len(), 2, "clean dropped a kept sandbox: {output:?}");

    // Recovery reaches the first sandbox and nothing else.
    fake.clear_requests();
    let output = setup.wb(&["outcome", &first, "--recover", "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    setup.assert_quiet(&output);
    let recovered: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(recovered["sandbox_id"], first_sandbox.as_str());
    assert_eq!(recovered["application_state"], "pending", "{recovered}");
    for request in fake.requests() {
        let envd = request.headers.get("e2b-sandbox-id");
        assert!(
            envd.is_none_or(|id| *id == first_sandbox) && !request.path.contains(&second_sandbox),
            "the recovery reached another sandbox: {} {} {envd:?}",
            request.method,
            request.path
        );
        assert!(request.method != "POST" || request.path != "/v2/sandboxes", "the recovery created a sandbox");
    }
    assert!(fake.requests().iter().any(|r| r.path == format!("/v2/sandboxes/{first_sandbox}/connect")));
    assert_eq!(setup.service.live(), vec![second_sandbox.clone()], "the recovered sandbox is destroyed");
    assert!(fake.sandbox(&second_sandbox).is_some_and(|s| s.paused), "the other kept sandbox is untouched");
    assert!(!setup.world.home.join(format!(".workbench/recovery/{first}.json")).exists());

    let output = setup.wb(&["outcome", &first, "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    let shown: Value = serde_json::from_str(&output.stdout).unwrap();
    let outcome = &shown["outcome"];
    assert_eq!(outcome["id"], recovered["outcome_id"]);
    assert_eq!(outcome["completeness"], "partial", "{outcome}");
    assert_eq!(outcome["warnings"][0]["code"], "recovered_from_sandbox", "{outcome}");
    assert!(outcome["warnings"][0]["message"].as_str().unwrap().contains(&first_sandbox), "{outcome}");
    assert_eq!(outcome["artifacts"][0]["path"], "result.txt", "{outcome}");
    let mut paths: Vec<&str> =
        outcome["changesets"][0]["entries"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["README.md", "build.log", "notes/new.md", "obsolete.txt"], "{outcome}");
    let outcome_schema = wb_testsupport::schemas::outcomes_validator("outcome.schema.json");
    assert!(outcome_schema.is_valid(outcome), "{outcome}");
    // Its `before` is exactly what was staged (modes included), so it applies to the untouched workspace.
    let output = setup.wb(&["outcome", &first, "--apply", "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(std::fs::read_to_string(setup.world.work.join("notes/new.md")).unwrap(), "from the sandbox\n");
    let mode = std::fs::metadata(setup.world.work.join("README.md")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o664);

    // A staged archive changed in the sandbox since staging is refused: nothing collected, sandbox and
    // checkpoint kept.
    let root = fake.sandbox(&second_sandbox).unwrap().root;
    let archive = root.path().join("tmp/workbench-input-0.tar.gz");
    let mut permissions = std::fs::metadata(&archive).unwrap().permissions();
    permissions.set_mode(0o600);
    std::fs::set_permissions(&archive, permissions).unwrap();
    std::fs::write(&archive, b"not what was staged").unwrap();
    let output = setup.wb(&["outcome", &second, "--recover"]);
    assert_eq!(output.code, 1, "{output:?}");
    assert!(output.stderr.contains("was changed in sandbox"), "{output:?}");
    assert_eq!(setup.service.live(), vec![second_sandbox.clone()]);
    assert!(setup.world.home.join(format!(".workbench/recovery/{second}.json")).exists());

    let output = setup.wb(&["outcome", &second, "--discard-recovery"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(setup.service.live().is_empty(), "the discarded sandbox is deleted");
    assert!(!setup.world.home.join(format!(".workbench/recovery/{second}.json")).exists());
    let output = setup.wb(&["outcome", &second, "--discard-recovery"]);
    assert!(output.stderr.contains("has no recovery checkpoint"), "{output:?}");
}

/// Daytona keeps no recovery checkpoint: a failed collection's sandbox is deleted at cleanup.
#[test]
fn daytona_a_failed_collection_deletes_the_sandbox() {
    let setup = setup(Kind::Daytona);
    let Service::Daytona(fake) = &setup.service else { unreachable!() };
    fake.faults(|f| f.download_status = Some(500));
    let (output, events) = setup.run("edit");
    assert_ne!(output.code, 0, "{output:?}");
    let failed = events.iter().find(|e| e["type"] == "outcome.failed").expect("outcome.failed");
    assert!(failed["data"].get("recovery").is_none(), "{failed}");
    assert!(setup.service.live().is_empty(), "the sandbox outlived a failed collection");
    assert!(!setup.world.home.join(".workbench/recovery").exists());
}

impl Service {
    /// The root directory of sandbox `id` on this machine.
    fn root(&self, id: &str) -> std::path::PathBuf {
        match self {
            Service::E2b(fake) => fake.sandbox(id).unwrap().root.path().to_path_buf(),
            Service::Daytona(fake) => fake.sandbox_root(id).unwrap().path().to_path_buf(),
        }
    }

    /// How many of the processes started in sandbox `id` (envd's, the toolbox's session commands) still run.
    fn running(&self, id: &str) -> usize {
        match self {
            Service::E2b(fake) => fake.sandbox(id).map_or(0, |sandbox| sandbox.running()),
            Service::Daytona(fake) => fake.running_commands(id),
        }
    }
}

/// The events a run's log holds.
fn logged(setup: &Setup, run_id: &str) -> Vec<Value> {
    let path = setup.world.home.join(format!(".workbench/runs/{run_id}/events.ndjson"));
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A remote run whose supervisor is SIGKILLed is lost; `attach` adopts it: the sandbox found by the run's
/// labels, the runner followed again with its output from the first byte, only the events the log lacks
/// logged (the output made while nobody followed included), then collection, the outcome and the destroy as
/// for any run. Every event is in the log exactly once, in sequence.
fn adopted_after_the_supervisor_dies(kind: Kind, ended_while_lost: bool) {
    let setup = setup(kind);
    let work = setup.world.work.display().to_string();
    let mut args: Vec<&str> = setup.args("run", Some("adopt"), &work).into_iter().filter(|a| *a != "--json").collect();
    args.push("--detach");
    let output = setup.wb(&args);
    assert_eq!(output.code, 0, "{output:?}");
    let run_id = output.stdout.trim().to_owned();
    wait_for("the second line", || texts(&logged(&setup, &run_id)).contains(&"two".to_owned()));
    kill_supervisor(&setup, &run_id);
    let live = setup.service.live();
    assert_eq!(live.len(), 1, "the sandbox lives on: {live:?}");
    let before = logged(&setup, &run_id).len();

    // The runner goes on while nobody follows it.
    let root = setup.service.root(&live[0]);
    std::fs::write(root.join("tmp/go"), "").unwrap();
    wait_for("the runner's third line", || root.join("tmp/three").exists());
    assert_eq!(logged(&setup, &run_id).len(), before, "nobody logs while the run is lost");

    if ended_while_lost {
        std::fs::write(root.join("tmp/go2"), "").unwrap();
        wait_for("the runner's end", || setup.service.running(&live[0]) == 0);
        // As if the runner's output writer had been killed with it: its file never marked done. The adopter
        // marks it once it knows the runner ended, and still reads everything.
        for entry in std::fs::read_dir(root.join("tmp")).unwrap().flatten() {
            if entry.file_name().to_string_lossy().ends_with(".done") {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
    }
    let mut attach = setup.command();
    attach.args(["attach", "--json", &run_id]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = attach.spawn().unwrap();
    if !ended_while_lost {
        // "three" may be held back until the next text (it could begin a bound value): the adoption shows in
        // the run's record, which names a live owner again.
        wait_for("the adoption", || run_state(&setup, &run_id) == "running");
        std::fs::write(root.join("tmp/go2"), "").unwrap();
    }
    let code = wait_exit(&mut child);
    let attached = printed(child.stdout.take(), "attach's events up to their end");
    let stderr = printed(child.stderr.take(), "attach's stderr up to its end");
    assert!(stderr.contains("adopting it"), "{stderr}");
    // E2B cannot tell how a process nobody followed ended; Daytona keeps a session command's exit code.
    let unknown_end = ended_while_lost && kind == Kind::E2b;
    assert_eq!(code, if unknown_end { 1 } else { 0 }, "attach: {stderr}");

    let events = logged(&setup, &run_id);
    let sequences: Vec<u64> = events.iter().map(|e| e["sequence"].as_u64().unwrap()).collect();
    assert_eq!(sequences, (1..=events.len() as u64).collect::<Vec<_>>(), "every event once, in order: {events:#?}");
    assert_eq!(texts(&events), ["one", "two", "three", "four"], "{events:#?}");
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.iter().filter(|t| **t == "run.started").count(), 1);
    let terminal = if unknown_end { "run.failed" } else { "run.completed" };
    assert_eq!(types[types.len() - 2..], ["outcome.available", terminal], "{types:?}");
    if unknown_end {
        let message = events[events.len() - 1]["data"]["message"].as_str().unwrap();
        assert!(message.contains("ended while no supervisor followed it"), "{message}");
    }
    // What attach printed is the log, whole.
    let shown: Vec<Value> = attached.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(shown.len(), events.len(), "{attached}");

    // The outcome holds the runner's work, against what was staged.
    let outcome_id = events[events.len() - 2]["data"]["outcome_id"].as_str().unwrap().to_owned();
    let shown = setup.wb(&["outcome", &outcome_id, "--json"]);
    let outcome: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(outcome["receipt"]["state"], "pending");
    let paths: Vec<&str> = outcome["outcome"]["changesets"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(paths, ["README.md"], "{outcome}");
    assert_eq!(outcome["outcome"]["artifacts"][0]["path"], "result.txt");
    wait_for("the sandbox's destroy", || setup.service.live().is_empty());
    assert_eq!(run_state(&setup, &run_id), if unknown_end { "failed" } else { "completed" });
}

/// A run started with `--env`, adopted (issue 40): the value was never kept, so `attach` without it refuses and
/// names the variable (before: it adopted with whatever the environment held, and printed the value unredacted);
/// with it again, the run is adopted and the value redacted from everything logged.
#[test]
fn e2b_adopting_a_run_started_with_env_asks_for_it_again_and_redacts_it() {
    const FLAG_KEY: &str = "sk-given-with-env-flag-5e1f";
    let setup = setup(Kind::E2b);
    let work = setup.world.work.display().to_string();
    let assignment = format!("OPENAI_API_KEY={FLAG_KEY}");
    let mut args: Vec<&str> =
        setup.args("run", Some("adopt-env"), &work).into_iter().filter(|a| *a != "--json").collect();
    args.extend(["--detach", "--env", &assignment]);
    let output = setup.wb(&args);
    assert_eq!(output.code, 0, "{output:?}");
    let run_id = output.stdout.trim().to_owned();
    wait_for("the first line", || texts(&logged(&setup, &run_id)).contains(&"one".to_owned()));
    let saved = std::fs::read_to_string(setup.world.home.join(format!(".workbench/runs/{run_id}/options.json")));
    assert!(!saved.unwrap_or_default().contains(FLAG_KEY), "the value is never written");
    kill_supervisor(&setup, &run_id);
    let live = setup.service.live();

    let refused = setup.wb(&["attach", &run_id]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("--env OPENAI_API_KEY=..."), "{refused:?}");
    assert_eq!(run_state(&setup, &run_id), "lost", "a refused adoption leaves the run to adopt again");

    let mut attach = setup.command();
    attach.args(["attach", "--json", &run_id, "--env", &assignment]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = attach.spawn().unwrap();
    wait_for("the adoption", || run_state(&setup, &run_id) == "running");
    std::fs::write(setup.service.root(&live[0]).join("tmp/go"), "").unwrap();
    let code = wait_exit(&mut child);
    let mut shown = printed(child.stdout.take(), "attach's events up to their end");
    shown.push_str(&printed(child.stderr.take(), "attach's stderr up to its end"));
    assert_eq!(code, 0, "{shown}");
    let events = logged(&setup, &run_id);
    // Text that could begin a bound value may come out in more than one piece: their concatenation counts.
    assert!(texts(&events).concat().contains("key=[redacted]"), "{events:#?}");
    let log = std::fs::read_to_string(setup.world.home.join(format!(".workbench/runs/{run_id}/events.ndjson")));
    assert!(!log.unwrap().contains(FLAG_KEY), "the value is redacted from the log");
    assert!(!shown.contains(FLAG_KEY), "{shown}");
}

/// SIGKILLs the supervisor of `run_id` and waits until the run shows as lost.
fn kill_supervisor(setup: &Setup, run_id: &str) {
    let record = wb_testsupport::run_record(&setup.world, run_id);
    let supervisor = i32::try_from(record["pid"].as_u64().unwrap()).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(supervisor), nix::sys::signal::Signal::SIGKILL).unwrap();
    wait_for("the supervisor's end", || run_state(setup, run_id) == "lost");
}

/// What `runs --all` says of run `run_id`.
fn run_state(setup: &Setup, run_id: &str) -> String {
    let listed: Value = serde_json::from_str(&setup.wb(&["runs", "--all", "--json"]).stdout).unwrap();
    let record = listed.as_array().unwrap().iter().find(|r| r["run_id"] == run_id).cloned().unwrap_or_default();
    record["state"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn e2b_a_run_whose_supervisor_died_is_adopted() {
    adopted_after_the_supervisor_dies(Kind::E2b, false);
}

#[test]
fn daytona_a_run_whose_supervisor_died_is_adopted() {
    adopted_after_the_supervisor_dies(Kind::Daytona, false);
}

/// The runner ended while nobody followed it: its output is all logged once, its work collected.
#[test]
fn e2b_a_run_that_ended_while_lost_is_adopted() {
    adopted_after_the_supervisor_dies(Kind::E2b, true);
}

#[test]
fn daytona_a_run_that_ended_while_lost_is_adopted() {
    adopted_after_the_supervisor_dies(Kind::Daytona, true);
}
