//! `wb-lsp dry-run`, `smoke` and `run` through the built binary, against the engine's fake runners
//! (`crates/wb-engine/tests/fixtures/runners/`) replaying recorded native streams: output shapes, exit codes,
//! the canonical event stream (validated against the official schema), Ctrl-C, the run-time error texts, the
//! environment precedence, and a secrets canary over every byte produced.
//!
//! Every command runs with a cleared environment: PATH (fake runners first), HOME, TMPDIR and WORKBENCH_HOME
//! inside the test's scratch directory, so no credential or runner sign-in of the machine takes part, and the
//! staged directories land where the test can check they are removed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use wb_testsupport::{
    self as support, FINAL, Output, TASK, World, claude_world, finish, minimal, opencode_world, pi_world,
};

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/// `wb-lsp ARGS` in the repository, with the world's environment only.
fn wb_command(world: &World, args: &[&str]) -> Command {
    let mut command = world.command(env!("CARGO_BIN_EXE_wb-lsp"));
    command.args(args);
    command
}

fn wb(world: &World, args: &[&str]) -> Output {
    finish(&mut wb_command(world, args))
}

fn wb_env(world: &World, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = wb_command(world, args);
    command.envs(env.iter().copied());
    finish(&mut command)
}

fn ndjson(text: &str) -> Vec<Value> {
    text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect()
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

/// Source, environment and extra arguments of each runner's demo package.
struct Demo {
    runner: &'static str,
    world: World,
    source: &'static str,
    env: Vec<(&'static str, &'static str)>,
    args: Vec<String>,
}

impl Demo {
    fn new(runner: &'static str) -> Demo {
        match runner {
            "opencode" => Demo {
                runner,
                world: opencode_world(),
                source: ".workbenches/oc-demo",
                env: vec![
                    ("DATABASE_URL", "postgres://db.internal/ledger"),
                    ("OPENAI_API_KEY", "sk-openai-test-value"),
                ],
                args: Vec::new(),
            },
            "claude-code" => {
                let world = claude_world();
                let docs = format!("docs={}", world.root.join("docs").display());
                Demo {
                    runner,
                    world,
                    source: ".workbenches/cc-demo",
                    env: vec![("ANTHROPIC_API_KEY", "sk-ant-test-value"), ("TRACKER_TOKEN", "tracker-test-value")],
                    args: vec!["--workspace".into(), docs],
                }
            }
            _ => Demo {
                runner,
                world: pi_world(),
                source: ".workbenches/pi-demo",
                env: vec![("GEMINI_API_KEY", "gemini-test-value")],
                args: Vec::new(),
            },
        }
    }

    /// `wb-lsp <subcommand> SOURCE --dir WORK [demo args] [args]`.
    fn command(&self, subcommand: &str, args: &[&str]) -> Command {
        let work = self.world.work.display().to_string();
        let mut all: Vec<&str> = vec![subcommand, self.source, "--dir", &work];
        all.extend(self.args.iter().map(String::as_str));
        all.extend(args);
        let mut command = wb_command(&self.world, &all);
        command.envs(self.env.iter().copied());
        command
    }

    fn run(&self, subcommand: &str, args: &[&str]) -> Output {
        finish(&mut self.command(subcommand, args))
    }

    fn run_stream(&self, stream: &str, args: &[&str]) -> Output {
        let mut command = self.command("run", args);
        command.env("FAKE_RUNNER_SCRIPT", support::stream(self.runner, stream));
        finish(&mut command)
    }
}

const RUNNERS: [&str; 3] = ["opencode", "claude-code", "pi"];

// ---------------------------------------------------------------------------------------------------------------
// dry-run

#[test]
fn dry_run_prints_the_translation_as_json() {
    for runner in RUNNERS {
        let demo = Demo::new(runner);
        let world = &demo.world;
        let output = demo.run("dry-run", &["--task", TASK, "--json"]);
        assert_eq!(output.code, 0, "{runner}: {output:?}");
        assert_eq!(output.stderr, "", "{runner}");
        let report: Value = serde_json::from_str(&output.stdout).unwrap();
        // Piped stdout prints the same JSON without --json.
        let piped = demo.run("dry-run", &["--task", TASK]);
        assert_eq!(piped.code, 0);
        let piped: Value = serde_json::from_str(&piped.stdout).unwrap();
        assert_eq!(piped["command"].as_array().unwrap().len(), report["command"].as_array().unwrap().len());
        assert_eq!(piped["env"], report["env"]);
        let command = strings(&report["command"]);
        let work = world.work.display().to_string();
        assert_eq!(report["cwd"], work);
        // OpenCode takes its task last on the command line; Claude Code and Pi read it on stdin (`stdin`).
        if runner == "opencode" {
            assert_eq!(command.last().unwrap(), TASK);
        } else {
            assert!(!command.iter().any(|argument| argument == TASK), "{runner}: {command:?}");
            assert!(report["stdin"].as_str().unwrap_or_default().contains(TASK), "{runner}: {report}");
        }
        assert_eq!(report["runtime"], "local");
        assert_eq!(report["workspaces"][0], json!({"name": "primary", "path": work, "access": "read-write"}));
        match runner {
            "opencode" => {
                assert_eq!(
                    command,
                    ["opencode", "run", "--model", "openai/gpt-5.1", "--dir", &work, "--format", "json", "--", TASK]
                );
                assert_eq!(report["native_key"], "opencode_config");
                assert_eq!(report["native"]["model"], "openai/gpt-5.1");
                assert_eq!(report["native"]["mcp"], json!({}), "DATABASE_API_TOKEN is unset");
                assert_eq!(report["mcps"], json!({"enabled": [], "disabled": ["database"]}));
                assert_eq!(report["skills"], json!(["sql-migrations"]));
                assert_eq!(
                    report["env"],
                    json!([
                        "DATABASE_URL",
                        "OPENAI_API_KEY",
                        "OPENCODE_CONFIG_CONTENT",
                        "OPENCODE_CONFIG_DIR",
                        "WORKBENCH_OUTPUT_DIR"
                    ])
                );
            }
            "claude-code" => {
                let dir = report["native"]["directory"].as_str().unwrap();
                assert_eq!(
                    command[..7],
                    ["claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5"]
                );
                assert_eq!(command[8], format!("{dir}/workbench-instructions.md"));
                assert_eq!(
                    report["native"]["mcp.json"]["mcpServers"]["tracker"]["headers"]["Authorization"],
                    "Bearer ${TRACKER_TOKEN}"
                );
                assert_eq!(report["native"]["settings.json"]["permissions"]["deny"], json!(["WebFetch"]));
                assert_eq!(report["skills"], json!(["code-review"]));
                assert!(strings(&report["env"]).contains(&"CLAUDE_CONFIG_DIR".to_owned()));
            }
            _ => {
                let dir = report["native"]["directory"].as_str().unwrap();
                assert_eq!(
                    command,
                    [
                        "pi",
                        "--mode",
                        "rpc",
                        "--no-session",
                        "--no-context-files",
                        "--provider",
                        "google",
                        "--model",
                        "gemini-2.5-flash",
                        "--skill",
                        &format!("{dir}/skills/api-docs"),
                    ]
                );
                assert_eq!(report["native"]["append_system"], "APPEND_SYSTEM.md");
                assert_eq!(
                    report["env"],
                    json!(["GEMINI_API_KEY", "PI_CODING_AGENT_DIR", "PI_OFFLINE", "WORKBENCH_OUTPUT_DIR"])
                );
            }
        }
        for (_, value) in &demo.env {
            assert!(!output.stdout.contains(value), "{runner}: a value was printed");
        }
        assert!(world.leftover_stages().is_empty(), "{runner}: staged directories left: {:?}", world.leftover_stages());
        assert!(!world.log.exists(), "{runner}: a dry run never starts the runner");
    }
}

#[test]
fn dry_run_failures_exit_1() {
    let demo = Demo::new("opencode");
    let output = demo.run("dry-run", &[]);
    assert_eq!(output.code, 1);
    assert_eq!(output.stdout, "");
    assert_eq!(output.stderr, "error: This run mode requires a non-empty task\nerror: Workbench dry run failed\n");
    // An invalid package prints its location.
    demo.world.package(
        "oc-demo",
        &minimal("oc-demo", "opencode", "openai/gpt-5.1", "").replace("version: 1.0.0", "version: one"),
    );
    let output = demo.run("dry-run", &["--task", TASK]);
    assert_eq!(output.code, 1);
    let manifest = demo.world.repo.join(".workbenches/oc-demo/workbench.yml");
    assert_eq!(
        output.stderr,
        format!(
            "error: version must be a semantic version\n  --> {}:2:10\nerror: Workbench dry run failed\n",
            manifest.display()
        )
    );
}

#[test]
fn dry_run_without_the_runner_prints_the_translation_and_exits_1() {
    let demo = Demo::new("opencode");
    let mut command = demo.command("dry-run", &["--task", TASK, "--json"]);
    command.env("PATH", demo.world.dir("empty-bin"));
    let output = finish(&mut command);
    assert_eq!(output.code, 1, "{output:?}");
    let problem = wb_engine::adapters::runner_unavailable("opencode", "PATH");
    assert!(problem.contains("npm install -g opencode-ai@1.18.33"), "{problem}");
    assert_eq!(output.stderr, format!("error: {problem}\n"));
    let report: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(report["command"][0], "opencode", "the whole translation: {report}");
    assert_eq!(report["native_key"], "opencode_config");
    assert_eq!(report["problems"], json!([problem]));
    // With the runner, there is no problem.
    let output = demo.run("dry-run", &["--task", TASK, "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(serde_json::from_str::<Value>(&output.stdout).unwrap()["problems"], json!([]));
    assert!(demo.world.leftover_stages().is_empty(), "{:?}", demo.world.leftover_stages());
}

// ---------------------------------------------------------------------------------------------------------------
// smoke

#[test]
fn smoke_record_lines_and_exit_codes() {
    let demo = Demo::new("opencode");
    let world = &demo.world;
    let infra = world.dir("infra");
    let manifest = support::OPENCODE.replace("runtimes:\n", "requirements:\n  disk_gb: 1\nruntimes:\n");
    world.package("oc-demo", &manifest);
    let binding = format!("infra={}", infra.display());
    let output = demo.run("smoke", &["--workspace", &binding]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stderr, "");
    let sh = which("sh");
    assert_eq!(
        output.stdout,
        format!(
            "ready\toc-demo\trunner={}\ttools=sh; auth: ready (openai); workspaces: infra={} (read-only); requirements: unchecked: disk_gb is not checked on the local runtime; optional MCPs disabled: database\n",
            world.bin.join("opencode").display(),
            infra.display()
        ),
        "tools resolve to {}",
        sh.display()
    );
    // Needs authentication: exit 3.
    let mut command = wb_command(world, &["smoke", ".workbenches/oc-demo"]);
    command.env("DATABASE_URL", "postgres://x");
    let output = finish(&mut command);
    assert_eq!(output.code, 3, "{output:?}");
    assert_eq!(
        output.stdout,
        format!(
            "needs-auth\toc-demo\trunner={}\ttools=sh; auth: required (Set OPENAI_API_KEY or OPENROUTER_API_KEY (or sign in with the runner's own login command)); requirements: unchecked: disk_gb is not checked on the local runtime; optional MCPs disabled: database\n",
            world.bin.join("opencode").display()
        )
    );
    // Failed: exit 1, the error on stderr.
    let output = wb_env(world, &["smoke", ".workbenches/oc-demo"], &[("OPENAI_API_KEY", "sk-1234")]);
    assert_eq!(output.code, 1);
    assert_eq!(output.stdout, "");
    assert_eq!(output.stderr, "error: oc-demo: Missing required environment variable: DATABASE_URL\n");
    assert!(world.leftover_stages().is_empty(), "{:?}", world.leftover_stages());
}

fn which(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()).unwrap()
}

#[test]
fn smoke_json_objects_and_exit_precedence() {
    let world = World::new();
    world.package("alpha", &minimal("alpha", "opencode", "openai/gpt-5.1", ""));
    world.package("beta", &minimal("beta", "pi", "xai/grok-4", "requirements:\n  gpu: true\n"));
    world.package("gamma", &minimal("gamma", "claude-code", "anthropic/claude-haiku-4.5", ""));
    let key = [("OPENAI_API_KEY", "sk-openai-test-value")];
    // alpha ready, beta needs the GPU flag, gamma needs authentication: 1 beats 3.
    let output = wb_env(&world, &["smoke", ".", "--json"], &key);
    assert_eq!(output.code, 1, "{output:?}");
    let reports = ndjson(&output.stdout);
    let statuses: Vec<(&str, &str)> =
        reports.iter().map(|r| (r["workbench"].as_str().unwrap(), r["status"].as_str().unwrap())).collect();
    assert_eq!(statuses, [("alpha", "ready"), ("beta", "failed"), ("gamma", "needs-auth")]);
    let alpha = &reports[0];
    assert_eq!(alpha["version"], "1.0.0");
    assert_eq!(alpha["runtime"], "local");
    assert_eq!(
        alpha["runner"],
        json!({"name": "opencode", "path": world.bin.join("opencode").display().to_string(), "version": null, "verified": null})
    );
    assert_eq!(alpha["tools"], json!([]));
    assert_eq!(alpha["authentication"]["ready"], true);
    assert_eq!(alpha["authentication"]["method"], "environment");
    assert_eq!(alpha["authentication"]["variable"], "OPENAI_API_KEY");
    assert_eq!(alpha["requirements"], json!({"checked": [], "applied": [], "unchecked": []}));
    assert_eq!(
        alpha["workspaces"],
        json!([{"name": "primary", "path": world.repo.display().to_string(), "access": "read-write"}])
    );
    assert_eq!(alpha["warnings"], json!([]));
    assert!(alpha.get("error").is_none());
    let beta = &reports[1];
    assert_eq!(beta["workbench"], "beta");
    assert_eq!(
        beta["error"],
        json!({"code": "smoke_failed", "message": "Workbench beta cannot run on the local runtime: GPU requirements are not checked on the local runtime. Pass --allow-unchecked-gpu to run anyway."})
    );
    let gamma = &reports[2];
    assert_eq!(gamma["authentication"]["ready"], false);
    assert_eq!(
        gamma["authentication"]["instruction"],
        "Set ANTHROPIC_API_KEY or OPENROUTER_API_KEY or AI_GATEWAY_API_KEY (or sign in with the runner's own login command)"
    );
    // With the GPU left unchecked on purpose: ready, needs-auth, needs-auth → 3.
    let output = wb_env(&world, &["smoke", ".", "--json", "--allow-unchecked-gpu"], &key);
    assert_eq!(output.code, 3, "{output:?}");
    let reports = ndjson(&output.stdout);
    assert_eq!(reports[1]["status"], "needs-auth");
    assert_eq!(reports[1]["requirements"]["unchecked"], json!(["gpu is not checked on the local runtime"]));
    assert!(
        strings(&reports[1]["warnings"])
            .contains(&"requirement not checked: gpu is not checked on the local runtime".to_owned())
    );
    // One package, ready: exit 0, one object.
    let output = wb_env(&world, &["smoke", ".#alpha", "--json"], &key);
    assert_eq!(output.code, 0);
    assert_eq!(ndjson(&output.stdout).len(), 1);
    // A source that resolves to nothing fails before any package.
    let output = wb(&world, &["smoke", "nowhere"]);
    assert_eq!(output.code, 1);
    assert_eq!(
        output.stderr,
        format!("error: Workbench path does not exist: {}\n", world.repo.join("nowhere").display())
    );
    assert!(world.leftover_stages().is_empty());
}

// ---------------------------------------------------------------------------------------------------------------
// run

#[test]
fn run_json_streams_canonical_events() {
    for runner in RUNNERS {
        let demo = Demo::new(runner);
        let output = demo.run_stream("success", &["--task", TASK, "--json"]);
        assert_eq!(output.code, 0, "{runner}: {output:?}");
        assert_eq!(output.stderr, "", "{runner}");
        let events = ndjson(&output.stdout);
        support::check_events(&events, runner);
        assert_eq!(support::types(&events), support::success_types(runner), "{runner}");
        demo.world.assert_edited();
        assert!(demo.world.leftover_stages().is_empty(), "{runner}: {:?}", demo.world.leftover_stages());
        let invocation = demo.world.invocation();
        assert_eq!(invocation["cwd"], demo.world.work.display().to_string());
        for (_, staged) in invocation["staged"].as_object().unwrap() {
            assert!(staged["path"].as_str().unwrap().starts_with(&demo.world.tmp.display().to_string()));
        }
    }
}

#[test]
fn run_prints_text_and_tools_or_only_the_final_answer() {
    for runner in RUNNERS {
        let demo = Demo::new(runner);
        let output = demo.run_stream("success", &["--task", TASK]);
        assert_eq!(output.code, 0, "{runner}: {output:?}");
        assert!(output.stdout.contains("I will add the notes file, "), "{runner}: {output:?}");
        assert!(output.stdout.contains("retitled README.md and removed obsolete.txt."), "{runner}");
        assert!(output.stderr.contains("• "), "{runner}: tool lines on stderr: {output:?}");
        assert!(output.stderr.contains("notes/hello.txt"), "{runner}");
        let demo = Demo::new(runner);
        let output = demo.run_stream("success", &["--task", TASK, "--final"]);
        assert_eq!(output.code, 0, "{runner}: {output:?}");
        assert_eq!(output.stdout, format!("{FINAL}\n"), "{runner}");
        assert_eq!(output.stderr, "", "{runner}");
    }
}

#[test]
fn an_oversized_runner_line_is_a_warning_and_the_run_goes_on() {
    let demo = Demo::new("pi");
    let mut lines: Vec<String> =
        std::fs::read_to_string(support::stream("pi", "success")).unwrap().lines().map(str::to_owned).collect();
    lines.insert(
        0,
        json!({"fake": "flood", "stream": "stdout", "bytes": 5 * 1024 * 1024, "line": 5 * 1024 * 1024}).to_string(),
    );
    let script = demo.world.root.join("oversized.jsonl");
    std::fs::write(&script, lines.join("\n") + "\n").unwrap();
    let mut command = demo.command("run", &["--task", TASK]);
    command.env("FAKE_RUNNER_SCRIPT", &script);
    let output = finish(&mut command);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(
        output.stderr.contains(
            "warning: A line of the runner's output was longer than 4 MiB (1048575 bytes more): it was dropped"
        ),
        "{}",
        &output.stderr[..output.stderr.len().min(2000)]
    );
    assert!(output.stdout.contains("retitled README.md and removed obsolete.txt."));
    assert!(!output.stdout.contains("xxxxxxxx") && !output.stderr.contains("xxxxxxxx"));
}

#[test]
fn run_failures_exit_1_with_run_failed() {
    let messages = [
        ("opencode", "Rate limit exceeded for openai/gpt-5.1"),
        ("claude-code", "API Error: 401 invalid x-api-key"),
        ("pi", "401 Incorrect API key provided"),
    ];
    for (runner, message) in messages {
        let demo = Demo::new(runner);
        let output = demo.run_stream("failure", &["--task", TASK, "--json"]);
        assert_eq!(output.code, 1, "{runner}: {output:?}");
        let events = ndjson(&output.stdout);
        support::check_events(&events, runner);
        let last = events.last().unwrap();
        assert_eq!(last["type"], "run.failed");
        assert_eq!(last["data"]["message"], message);
        let output = demo.run_stream("failure", &["--task", TASK]);
        assert_eq!(output.code, 1);
        assert!(output.stderr.ends_with(&format!("error: {message}\n")), "{runner}: {output:?}");
        let output = demo.run_stream("crash", &["--task", TASK, "--json"]);
        assert_eq!(output.code, 1);
        let events = ndjson(&output.stdout);
        support::check_events(&events, runner);
        assert_eq!(
            events.last().unwrap()["data"]["message"],
            "The runner exited with status 3: fatal: the fake runner crashed"
        );
        assert!(demo.world.leftover_stages().is_empty(), "{runner}: {:?}", demo.world.leftover_stages());
    }
}

/// A runner that succeeds but whose outcome cannot be collected (here an artifact it declared and never wrote;
/// for a sandbox, a refused archive) ends `run.completed`, as the runner's ending is the authority, yet its work
/// never reached the user: the command says so and exits 1.
#[test]
fn a_failed_outcome_exits_1() {
    let demo = Demo::new("opencode");
    let script = support::outcome_stream(&demo.world, "missing", "reports/missing.html");
    let mut command = demo.command("run", &["--task", TASK]);
    command.env("FAKE_RUNNER_SCRIPT", &script);
    let output = finish(&mut command);
    assert_eq!(output.code, 1, "{output:?}");
    assert!(output.stderr.contains("error: Outcome collection failed: "), "{output:?}");
    assert!(!output.stderr.contains("outcome: wbo_"), "{output:?}");
}

#[test]
fn ctrl_c_cancels_the_run() {
    for runner in RUNNERS {
        let demo = Demo::new(runner);
        let world = &demo.world;
        let mut command = demo.command("run", &["--task", TASK, "--json"]);
        command
            .env("FAKE_RUNNER_SCRIPT", support::stream(runner, "hang"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut events = Vec::new();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "{runner}: the run ended before the hang: {events:?}");
            let event: Value = serde_json::from_str(&line).unwrap();
            let waiting = event["type"] == "output.text" && event["data"]["text"] == "Waiting for a slow tool.";
            events.push(event);
            if waiting {
                break;
            }
        }
        support::wait_for(&world.log.join("hanging"));
        let pid = world.invocation()["pid"].as_i64().unwrap();
        assert!(!support::process_is_gone(pid), "{runner}: the runner is running");
        let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let code = child.wait().unwrap().code();
        assert_eq!(code, Some(130), "{runner}: {stderr}");
        events.extend(ndjson(&rest));
        support::check_events(&events, runner);
        let last = events.last().unwrap();
        assert_eq!(last["type"], "run.cancelled");
        assert!(last["data"]["duration_ms"].is_u64());
        assert!(support::process_is_gone(pid), "{runner}: the runner process {pid} is gone");
        assert!(world.leftover_stages().is_empty(), "{runner}: {:?}", world.leftover_stages());
    }
}

#[test]
fn run_needs_authentication_exits_3() {
    let world = opencode_world();
    let output =
        wb_env(&world, &["run", ".workbenches/oc-demo", "--task", TASK, "--json"], &[("DATABASE_URL", "postgres://x")]);
    assert_eq!(output.code, 3, "{output:?}");
    assert_eq!(output.stdout, "");
    assert_eq!(
        output.stderr,
        "error: No authenticated route is available for openai/gpt-5.1. Set OPENAI_API_KEY or OPENROUTER_API_KEY (or sign in with the runner's own login command)\n"
    );
    assert!(!world.log.exists());
    assert!(world.leftover_stages().is_empty());
}

#[test]
fn environment_precedence_through_the_cli() {
    let world = World::new();
    world.package(
        "envs",
        &minimal(
            "envs",
            "opencode",
            "openai/gpt-5.1",
            "env:\n  A_VAR:\n    required: true\n  B_VAR:\n    required: false\n  C_VAR:\n    required: false\n",
        ),
    );
    world.file("vars.env", "A_VAR=file-a\nB_VAR=file-b\nOPENAI_API_KEY=sk-from-file\nIGNORED_VAR=ignored\n");
    let mut command = wb_command(
        &world,
        &[
            "run",
            ".workbenches/envs",
            "--task",
            TASK,
            "--dir",
            &world.work.display().to_string(),
            "--env-file",
            "vars.env",
            "--env",
            "A_VAR=flag-a",
            "--json",
        ],
    );
    command
        .env("A_VAR", "inherited-a")
        .env("B_VAR", "inherited-b")
        .env("C_VAR", "inherited-c")
        .env("OPENAI_API_KEY", "sk-inherited")
        .env("FAKE_RUNNER_SCRIPT", support::stream("opencode", "success"));
    let output = finish(&mut command);
    assert_eq!(output.code, 0, "{output:?}");
    let env = world.runner_environment();
    assert_eq!(env["A_VAR"], "flag-a");
    assert_eq!(env["B_VAR"], "file-b");
    assert_eq!(env["C_VAR"], "inherited-c");
    assert_eq!(env["OPENAI_API_KEY"], "sk-from-file");
    assert!(!env.contains_key("IGNORED_VAR"));
    // Claude Code's own variables come only from the engine.
    let world = claude_world();
    let docs = format!("docs={}", world.root.join("docs").display());
    let work = world.work.display().to_string();
    let mut command = wb_command(
        &world,
        &["run", ".workbenches/cc-demo", "--task", TASK, "--dir", &work, "--workspace", &docs, "--json"],
    );
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-test-value")
        .env("CLAUDE_CODE_USE_BEDROCK", "1")
        .env("ANTHROPIC_MODEL", "claude-opus-4-1")
        .env("FAKE_RUNNER_SCRIPT", support::stream("claude-code", "success"));
    let output = finish(&mut command);
    assert_eq!(output.code, 0, "{output:?}");
    let env = world.runner_environment();
    assert_eq!(env["ANTHROPIC_API_KEY"], "sk-ant-test-value");
    assert!(!env.contains_key("CLAUDE_CODE_USE_BEDROCK"));
    assert!(!env.contains_key("ANTHROPIC_MODEL"));
}

// ---------------------------------------------------------------------------------------------------------------
// Error texts (engine facts b.6) through the CLI

#[test]
fn error_texts_and_exit_codes() {
    let world = World::new();
    let key = ("OPENAI_API_KEY", "sk-openai-test-value");
    world.package(
        "ws",
        &minimal(
            "ws",
            "opencode",
            "openai/gpt-5.1",
            "tools:\n  - sh\nenv:\n  DATABASE_URL:\n    required: true\nworkspaces:\n  docs:\n    required: true\n    access: read-write\n",
        ),
    );
    world.dir("docs");
    world.package("gpu", &minimal("gpu", "opencode", "openai/gpt-5.1", "requirements:\n  gpu: true\n  cpu: 1\n"));
    world.package("big", &minimal("big", "opencode", "openai/gpt-5.1", "requirements:\n  cpu: 4096\n"));
    world.package("tool", &minimal("tool", "opencode", "openai/gpt-5.1", "tools:\n  - wb-no-such-tool-3141\n"));
    world.package("strange", &minimal("strange", "x", "openai/gpt-5.1", ""));
    world.package(
        "pi-mcp",
        &minimal("pi-mcp", "pi", "openai/gpt-5.1", "mcps:\n  - name: db\n    url: https://example.com/mcp\n"),
    );
    world.package(
        "remote",
        &minimal("remote", "opencode", "openai/gpt-5.1", "runtimes:\n  e2b:\n    image: ghcr.io/x/y:1\n  local: {}\n"),
    );
    world.package(
        "engine",
        &minimal(
            "engine",
            "opencode",
            "openai/gpt-5.1",
            "runtimes:\n  docker:\n    image: ghcr.io/x/y:1\n    docker:\n      engine:\n        mode: host\n",
        ),
    );
    world.package("unknown", &minimal("unknown", "opencode", "acme/unknown-1", ""));
    world.package(
        "local-image",
        "spec: 0\nversion: 1.0.0\nname: local-image\nrunner: opencode\nmodel:\n  id: openai/gpt-5.1\ninstructions: ./instructions.md\nruntime: local\nimage: ghcr.io/x/y:1\n",
    );
    world.package(
        "not-served",
        &minimal("not-served", "opencode", "openai/gpt-5.1", "")
            .replace("  id: openai/gpt-5.1\n", "  id: openai/gpt-5.1\n  routes:\n    - provider: xai\n"),
    );
    let docs = format!("docs={}", world.root.join("docs").display());
    let large = world.file("large.env", &format!("DATABASE_URL={}\n", "x".repeat(1024 * 1024)));
    let malformed = world.file("malformed.env", "just words\n");
    let ok_env = world.file("ok.env", "DATABASE_URL=postgres://x\n");
    let missing_env = world.repo.join("missing.env");
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec!["--workspace".into(), "docs".into()], "--workspace requires NAME=PATH".into()),
        (
            vec!["--workspace".into(), "DOCS=/tmp".into()],
            "--workspace requires a lowercase NAME=PATH assignment".into(),
        ),
        (vec!["--workspace".into(), "docs=".into()], "Workspace path must not be empty: docs".into()),
        (
            vec!["--workspace".into(), docs.clone(), "--workspace".into(), docs.clone()],
            "Duplicate workspace binding: docs".into(),
        ),
        (vec!["--workspace".into(), "infra=/tmp".into()], "Workspace binding is not declared by ws: infra".into()),
        (vec![], "Missing required workspace binding: docs".into()),
        (vec!["--workspace".into(), "docs=no/such/dir".into()], "Workspace directory is unavailable: docs".into()),
        (
            vec!["--workspace".into(), "docs=.".into(), "--dir".into(), ".".into()],
            "Workspace bindings must resolve to distinct directories: primary, docs".into(),
        ),
        (
            vec!["--workspace".into(), docs.clone(), "--env".into(), "DATABASE_URL".into()],
            "--env requires NAME=value".into(),
        ),
        (
            vec!["--workspace".into(), docs.clone(), "--env".into(), "database_url=x".into()],
            "--env requires an uppercase NAME=value assignment".into(),
        ),
        (
            vec!["--workspace".into(), docs.clone(), "--env".into(), "OTHER=x".into()],
            "Environment override is not supported by ws: OTHER".into(),
        ),
        (
            vec!["--workspace".into(), docs.clone(), "--env-file".into(), "missing.env".into()],
            format!("Environment file is unavailable: {}", missing_env.display()),
        ),
        (
            vec!["--workspace".into(), docs.clone(), "--env-file".into(), large.display().to_string()],
            format!("Environment file exceeds 1 MiB: {}", large.display()),
        ),
        (
            vec!["--workspace".into(), docs.clone(), "--env-file".into(), "malformed.env".into()],
            format!("Environment file is malformed: {}", malformed.display()),
        ),
        (vec!["--workspace".into(), docs.clone()], "Missing required environment variable: DATABASE_URL".into()),
        (
            vec![
                "--workspace".into(),
                docs.clone(),
                "--env-file".into(),
                ok_env.display().to_string(),
                "--runtime".into(),
                "docker".into(),
            ],
            "Workbench ws does not declare runtime: docker. Declared runtimes: local".into(),
        ),
        (
            vec![
                "--workspace".into(),
                docs.clone(),
                "--env-file".into(),
                ok_env.display().to_string(),
                "--allow-host-docker".into(),
            ],
            "--allow-host-docker requires a Workbench that declares docker.engine".into(),
        ),
    ];
    for (args, expected) in cases {
        let mut all: Vec<&str> = vec!["dry-run", ".workbenches/ws", "--task", TASK];
        all.extend(args.iter().map(String::as_str));
        let output = wb_env(&world, &all, &[key]);
        assert_eq!(output.code, 1, "{args:?}: {output:?}");
        assert_eq!(output.stderr, format!("error: {expected}\nerror: Workbench dry run failed\n"), "{args:?}");
        // The same text from run (exit 1) and smoke (exit 1, nothing on stdout).
        all[0] = "run";
        let output = wb_env(&world, &all, &[key]);
        assert_eq!((output.code, output.stderr.as_str()), (1, format!("error: {expected}\n").as_str()), "{args:?}");
        let mut smoke: Vec<&str> = vec!["smoke", ".workbenches/ws"];
        smoke.extend(args.iter().map(String::as_str));
        let output = wb_env(&world, &smoke, &[key]);
        // Smoke names the package its error belongs to.
        assert_eq!(
            (output.code, output.stderr.as_str()),
            (1, format!("error: ws: {expected}\n").as_str()),
            "smoke {args:?}"
        );
    }
    let host = wb_engine::requirements::HostFacts::local();
    let package_cases: Vec<(&str, Vec<&str>, String)> = vec![
        ("gpu", vec![], "Workbench gpu cannot run on the local runtime: GPU requirements are not checked on the local runtime. Pass --allow-unchecked-gpu to run anyway.".into()),
        ("big", vec![], format!("Workbench big cannot run on the local runtime: requires 4096 CPUs but this host has {}", host.cpus)),
        ("tool", vec![], "Required CLI tool is unavailable: wb-no-such-tool-3141".into()),
        ("strange", vec![], "Unsupported runner: x".into()),
        ("pi-mcp", vec![], "Pi does not provide a native MCP transport. This Workbench requires an explicit Pi extension before it can run.".into()),
        ("remote", vec![], "E2B_API_KEY is required for the E2B runtime. Set E2B_API_KEY in the environment wb-lsp runs in.".into()),
        ("remote", vec!["--runtime", "daytona"], "Workbench remote does not declare runtime: daytona. Declared runtimes: e2b, local".into()),
        ("engine", vec![], "Host Docker engine access requires explicit --allow-host-docker authorization".into()),
        ("unknown", vec![], "Unknown model acme/unknown-1. Unknown models require explicit route model IDs and packaged runner_config.".into()),
        ("not-served", vec![], "Provider xai does not serve model openai/gpt-5.1".into()),
        ("local-image", vec![], "image is not supported with the local runtime".into()),
        ("", vec![], "Workbench selector required. Available: big, engine, gpu, local-image, not-served, pi-mcp, remote, strange, tool, unknown, ws".into()),
        ("#nope", vec![], "Workbench not found: nope".into()),
    ];
    for (package, args, expected) in package_cases {
        let source = match package {
            "" => ".".to_owned(),
            selector if selector.starts_with('#') => format!(".{selector}"),
            name => format!(".workbenches/{name}"),
        };
        let mut all: Vec<&str> = vec!["dry-run", &source, "--task", TASK];
        all.extend(args.iter().copied());
        let output = wb_env(&world, &all, &[key]);
        assert_eq!(output.code, 1, "{package}: {output:?}");
        // A missing tool is a preflight problem: the dry run still prints the translation.
        let (dry_run_stderr, translation) = match package {
            "tool" => (format!("error: {expected}\n"), true),
            _ => (format!("error: {expected}\nerror: Workbench dry run failed\n"), false),
        };
        assert_eq!(output.stderr, dry_run_stderr, "{package} {args:?}");
        assert_eq!(output.stdout.contains("\"command\""), translation, "{package}: {output:?}");
        all[0] = "run";
        let output = wb_env(&world, &all, &[key]);
        assert_eq!(
            (output.code, output.stderr.as_str()),
            (1, format!("error: {expected}\n").as_str()),
            "run {package}"
        );
    }
    // Docker is supported (crates/wb-engine/tests/docker.rs runs it on a real engine): with the grant, an image that
    // is neither present nor pullable is named (or, without an engine, the engine is).
    for command in ["dry-run", "run"] {
        let output = wb_env(&world, &[command, ".workbenches/engine", "--task", TASK, "--allow-host-docker"], &[key]);
        assert_eq!(output.code, 1, "{output:?}");
        assert!(
            output.stderr.starts_with("error: Cannot pull Docker image ghcr.io/x/y:1")
                || output.stderr.starts_with("error: Cannot reach the Docker engine"),
            "{output:?}"
        );
    }
    // `build` prepares the image only, and says why it cannot.
    let output = wb_env(&world, &["build", ".workbenches/engine", "--json"], &[key]);
    assert_eq!(output.code, 1, "{output:?}");
    let report: serde_json::Value = serde_json::from_str(output.stdout.trim()).unwrap();
    assert_eq!(report["workbench"], "engine");
    assert!(report["error"].as_str().unwrap().contains("ghcr.io/x/y:1") || output.stderr.contains("Docker engine"));
    // With --allow-unchecked-gpu the GPU package is ready.
    let output = wb_env(&world, &["smoke", ".workbenches/gpu", "--allow-unchecked-gpu"], &[key]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(output.stdout.contains("requirements: unchecked: gpu is not checked on the local runtime"), "{output:?}");
    // Missing runner executable.
    let mut command = wb_command(&world, &["smoke", ".workbenches/gpu", "--allow-unchecked-gpu"]);
    command.env(key.0, key.1).env("PATH", world.dir("empty-bin"));
    let output = finish(&mut command);
    assert_eq!(
        (output.code, output.stderr.as_str()),
        (1, format!("error: gpu: {}\n", wb_engine::adapters::runner_unavailable("opencode", "PATH")).as_str())
    );
    assert!(output.stderr.starts_with("error: gpu: Runner CLI is unavailable: opencode (no `opencode` executable"));
    // Tasks.
    for task in [vec![], vec!["--task", ""], vec!["--task", "  "]] {
        let mut all = vec!["run", ".workbenches/gpu", "--allow-unchecked-gpu"];
        all.extend(task);
        let output = wb_env(&world, &all, &[key]);
        assert_eq!((output.code, output.stderr.as_str()), (1, "error: This run mode requires a non-empty task\n"));
    }
    assert!(world.leftover_stages().is_empty(), "{:?}", world.leftover_stages());
    assert!(!world.log.exists(), "no runner started");
}

// ---------------------------------------------------------------------------------------------------------------
// Secrets canary

/// A package per runner declaring a required, an optional and an extra variable, with an MCP referencing the
/// optional one (Pi cannot take MCPs).
fn secret_manifest(name: &str, runner: &str, model_block: &str, mcp: bool) -> String {
    let mcps = if mcp {
        "mcps:\n  - name: database\n    url: https://db.example.com/mcp\n    headers:\n      Authorization: Bearer ${DATABASE_API_TOKEN}\n"
    } else {
        ""
    };
    format!(
        "spec: 1\nversion: 1.0.0\nname: {name}\nrunner: {runner}\nmodel:\n{model_block}instructions: ./instructions.md\n{mcps}env:\n  DATABASE_URL:\n    required: true\n  DATABASE_API_TOKEN:\n    required: false\n  EXTRA_SECRET:\n    required: false\nruntimes:\n  local: {{}}\n"
    )
}

#[test]
fn secrets_never_leave_the_runner_environment() {
    let world = World::new();
    world.package("oc-secret", &secret_manifest("oc-secret", "opencode", "  id: openai/gpt-5.1\n", true));
    world.package(
        "cc-secret",
        &secret_manifest(
            "cc-secret",
            "claude-code",
            "  id: anthropic/claude-sonnet-4.5\n  routes:\n    - provider: openrouter\n    - provider: anthropic\n",
            true,
        ),
    );
    world.package("pi-secret", &secret_manifest("pi-secret", "pi", "  id: google/gemini-2.5-flash\n", false));
    let nonce = format!("{:x}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos());
    let canary = |source: &str, name: &str| format!("cAnArY-{source}-{name}-{nonce}");
    // Inherited: every provider key of the catalog, the required variable and shadowed values.
    let providers = wb_engine::bindings::provider_variables(wb_manifest::ModelCatalog::embedded());
    assert!(providers.len() >= 12, "{providers:?}");
    let mut inherited: BTreeMap<String, String> = BTreeMap::new();
    for name in providers.iter().map(String::as_str).chain(["DATABASE_URL", "DATABASE_API_TOKEN", "EXTRA_SECRET"]) {
        inherited.insert(name.to_owned(), canary("inherited", name));
    }
    // --env-file: beats inherited; one undeclared entry that nothing may pick up.
    let file_values: BTreeMap<String, String> = ["DATABASE_API_TOKEN", "OPENAI_API_KEY", "UNDECLARED_SECRET"]
        .iter()
        .map(|name| ((*name).to_owned(), canary("file", name)))
        .collect();
    let env_file = world
        .file("secrets.env", &file_values.iter().map(|(name, value)| format!("{name}={value}\n")).collect::<String>());
    // --env: beats both.
    let flag_values: BTreeMap<String, String> =
        ["EXTRA_SECRET", "GEMINI_API_KEY"].iter().map(|name| ((*name).to_owned(), canary("flag", name))).collect();
    let mut all_canaries: BTreeSet<String> = inherited.values().cloned().collect();
    all_canaries.extend(file_values.values().cloned());
    all_canaries.extend(flag_values.values().cloned());

    let work = world.work.display().to_string();
    let env_file_arg = env_file.display().to_string();
    let mut produced: Vec<(String, Vec<u8>)> = Vec::new();
    let mut run_index = 0;
    let packages = [("oc-secret", "opencode"), ("cc-secret", "claude-code"), ("pi-secret", "pi")];
    for (package, runner) in packages {
        let source = format!(".workbenches/{package}");
        let invocations: Vec<(Vec<&str>, Option<&str>)> = vec![
            (vec!["dry-run", "--task", TASK, "--json"], None),
            (vec!["dry-run", "--task", TASK], None),
            (vec!["smoke"], None),
            (vec!["smoke", "--json"], None),
            (vec!["run", "--task", TASK, "--json"], Some("success")),
            (vec!["run", "--task", TASK, "--json"], Some("secret-echo")),
            (vec!["run", "--task", TASK], Some("secret-echo")),
            (vec!["run", "--task", TASK, "--final"], Some("secret-echo")),
            (vec!["run", "--task", TASK, "--json"], Some("secret-crash")),
            (vec!["run", "--task", TASK], Some("secret-crash")),
        ];
        let mut echoed = false;
        for (args, stream) in invocations {
            run_index += 1;
            let log = world.root.join(format!("log-{run_index}"));
            let mut all: Vec<&str> = vec![args[0], &source, "--dir", &work, "--env-file", &env_file_arg];
            let flags: Vec<String> = flag_values.iter().map(|(name, value)| format!("{name}={value}")).collect();
            for flag in &flags {
                all.extend(["--env", flag.as_str()]);
            }
            all.extend(&args[1..]);
            let mut command = wb_command(&world, &all);
            command.envs(&inherited).env("FAKE_RUNNER_LOG", &log);
            if let Some(stream) = stream {
                world.reset_work();
                command.env("FAKE_RUNNER_SCRIPT", support::stream(runner, stream));
            }
            let output = finish(&mut command);
            let expected_code = match stream {
                None | Some("success") => 0,
                _ => 1,
            };
            assert_eq!(output.code, expected_code, "{package} {args:?}: {output:?}");
            if stream == Some("secret-echo") && args.contains(&"--json") {
                let events = ndjson(&output.stdout);
                support::check_events(&events, runner);
                let text =
                    events.iter().find(|e| e["type"] == "output.text").unwrap()["data"]["text"].as_str().unwrap();
                assert!(text.starts_with("The key is [redacted] and the token is [redacted]"), "{runner}: {text}");
                echoed = true;
            }
            if stream == Some("secret-crash") && args.contains(&"--json") {
                let events = ndjson(&output.stdout);
                assert_eq!(
                    events.last().unwrap()["data"]["message"],
                    "The runner exited with status 1: debug: [redacted]"
                );
            }
            produced.push((format!("{package} {args:?} stdout"), output.stdout.into_bytes()));
            produced.push((format!("{package} {args:?} stderr"), output.stderr.into_bytes()));
            if stream.is_some() {
                check_runner_environment(runner, &read_env(&log), &inherited, &file_values, &flag_values, &providers);
            }
        }
        assert!(echoed, "{runner}");
        assert!(world.leftover_stages().is_empty(), "{runner}: {:?}", world.leftover_stages());
    }
    // Error paths must not echo values either.
    for flag in
        [format!("lower_case={}", canary("bad", "LOWER")), format!("UNDECLARED_X={}", canary("bad", "UNDECLARED"))]
    {
        let output = finish(
            wb_command(&world, &["dry-run", ".workbenches/oc-secret", "--task", TASK, "--env", &flag]).envs(&inherited),
        );
        assert_eq!(output.code, 1);
        produced.push((format!("error {flag}"), format!("{}{}", output.stdout, output.stderr).into_bytes()));
        all_canaries.insert(flag.split_once('=').unwrap().1.to_owned());
    }
    // Every file anything wrote: the fake runners' records and staged copies (not their own environment
    // record), the outbox tree, the workspace, the temporary directory.
    for dir in [world.root.clone()] {
        for file in walk(&dir) {
            let relative = file.strip_prefix(&world.root).unwrap().display().to_string();
            if file.file_name().is_some_and(|n| n == "environment.json") || relative == "repo/secrets.env" {
                continue;
            }
            produced.push((relative, std::fs::read(&file).unwrap()));
        }
    }
    assert!(produced.iter().any(|(name, _)| name.ends_with("staged/CLAUDE_CONFIG_DIR/settings.json")));
    assert!(produced.iter().any(|(name, _)| name.ends_with("staged/PI_CODING_AGENT_DIR/APPEND_SYSTEM.md")));
    assert!(produced.iter().any(|(name, _)| name.ends_with("invocation.json")));
    for (name, bytes) in &produced {
        let text = String::from_utf8_lossy(bytes);
        for secret in &all_canaries {
            assert!(!text.contains(secret.as_str()), "{secret} appears in {name}:\n{text}");
        }
        assert!(!text.contains(&nonce), "a canary fragment appears in {name}:\n{text}");
    }
}

fn read_env(log: &Path) -> BTreeMap<String, String> {
    serde_json::from_str(&std::fs::read_to_string(log.join("environment.json")).unwrap()).unwrap()
}

/// The runner got the values it needs, from the right source, and no provider key of an unselected route.
fn check_runner_environment(
    runner: &str,
    env: &BTreeMap<String, String>,
    inherited: &BTreeMap<String, String>,
    file: &BTreeMap<String, String>,
    flag: &BTreeMap<String, String>,
    providers: &[String],
) {
    assert_eq!(env["DATABASE_URL"], inherited["DATABASE_URL"], "{runner}");
    assert_eq!(env["DATABASE_API_TOKEN"], file["DATABASE_API_TOKEN"], "{runner}: --env-file beats inherited");
    assert_eq!(env["EXTRA_SECRET"], flag["EXTRA_SECRET"], "{runner}: --env beats inherited");
    assert!(!env.contains_key("UNDECLARED_SECRET"), "{runner}");
    let selected: &[&str] = match runner {
        "opencode" => &["OPENAI_API_KEY"],
        "claude-code" => &["OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"],
        _ => &["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"],
    };
    for name in providers {
        if !selected.contains(&name.as_str()) {
            assert!(!env.contains_key(name), "{runner}: {name} of an unselected route reached the runner");
        }
    }
    match runner {
        "opencode" => assert_eq!(env["OPENAI_API_KEY"], file["OPENAI_API_KEY"], "--env-file beats inherited"),
        "claude-code" => {
            assert_eq!(env["OPENROUTER_API_KEY"], inherited["OPENROUTER_API_KEY"]);
            assert_eq!(env["ANTHROPIC_AUTH_TOKEN"], inherited["OPENROUTER_API_KEY"]);
            assert_eq!(env["ANTHROPIC_API_KEY"], "", "the Anthropic key of the unselected route is blanked");
        }
        _ => {
            assert_eq!(env["GEMINI_API_KEY"], flag["GEMINI_API_KEY"], "--env beats inherited");
            assert_eq!(env["GOOGLE_API_KEY"], inherited["GOOGLE_API_KEY"]);
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out
}

/// `--stage-dir` keeps a dry run's staged configuration in a new private directory; it is not an option of run
/// and smoke (a usage error from the argument parser, before anything is resolved), and an existing directory is
/// never written into (nor removed).
#[test]
fn the_stage_directory_of_a_dry_run() {
    use std::os::unix::fs::PermissionsExt;
    let demo = Demo::new("opencode");
    let stage = demo.world.root.join("kept-stage");
    let stage_arg = stage.display().to_string();
    let output = demo.run("dry-run", &["--task", TASK, "--json", "--stage-dir", &stage_arg]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let report: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(report["stage_dir"], stage_arg);
    assert!(stage.join("workbench-instructions.md").is_file());
    assert_eq!(std::fs::metadata(&stage).unwrap().permissions().mode() & 0o777, 0o700);
    // Again: the directory exists now.
    let output = demo.run("dry-run", &["--task", TASK, "--stage-dir", &stage_arg]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains(&format!("The stage directory already exists: {stage_arg}")), "{}", output.stderr);
    assert!(stage.join("workbench-instructions.md").is_file(), "an existing directory is left alone");
    for subcommand in ["run", "smoke"] {
        let output = demo.run(subcommand, &["--task", TASK, "--stage-dir", &stage_arg]);
        assert_eq!(output.code, 2, "{subcommand}: {}", output.stderr);
        assert!(output.stderr.contains("unexpected argument '--stage-dir' found"), "{}", output.stderr);
        assert!(output.stderr.contains("Usage: wb-lsp"), "{}", output.stderr);
    }
}
