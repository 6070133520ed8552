//! `wb-lsp mcp`, the built binary driven over stdio as an MCP client drives it: the handshake and version
//! negotiation, the tool list and its schemas, `check` (the exact diagnostics `check --format json` gives),
//! `fix` (written inside the root, refused through a symlink out of it), `dry_run`, `smoke` and `outcome`,
//! malformed and oversized lines, notifications never answered, and a clean exit at the end of the input.
//! (The real-runner test, OpenCode calling these tools, is in `real_runners.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};
use wb_testsupport::{self as support, TASK, finish, isolate, opencode_world, temp_dir, write_file};

/// How long any one answer may take (a debug build on a busy machine).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);
const SECRET: &str = "mcp-secret-canary-3f9d";

/// A package whose manifest has safe fixes (a misspelt runner, an undeclared `${NAME}` twice) and an unsafe
/// one (an unknown field only removal fixes): the one `tests/cli.rs` fixes with `check --fix`.
const FIXABLE: &str = "spec: 1
version: 0.1.0
name: fixable
description: Fixes for check --fix.
runner: opencod
model:
  id: openai/gpt-5.1
instructions: ./instructions.md
mcps:
  - name: api
    url: https://example.com/mcp
    headers:
      Authorization: Bearer ${API_TOKEN}
      X-Again: ${API_TOKEN}
runtimes:
  local: {}
zzz_unknown: 1
";

/// A valid package that declares a secret variable.
const VALID: &str = "spec: 1
version: 1.0.0
name: notes
description: Writes the notes.
runner: opencode
model:
  id: openai/gpt-5.1
instructions: ./instructions.md
env:
  API_TOKEN:
    required: true
runtimes:
  local: {}
";

fn fixable_package(dir: &Path) -> PathBuf {
    let manifest = dir.join("workbench.yml");
    write_file(&manifest, FIXABLE);
    write_file(&dir.join("instructions.md"), "# Fixable\n");
    manifest
}

/// `wb-lsp mcp --root ROOT` as a child process, with a thread turning its stdout into lines.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Server {
    fn start(root: &Path) -> Server {
        Server::start_with(root, &[])
    }

    fn start_with(root: &Path, env: &[(&str, &str)]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
        isolate(&mut command)
            .args(["mcp", "--root"])
            .arg(root)
            // Elsewhere, so only --root decides what relative paths mean.
            .current_dir("/")
            .env("PATH", "/usr/bin:/bin")
            .env_remove("WB_LSP_MODEL_CATALOG")
            .envs(env.iter().copied());
        Server::spawn(&mut command)
    }

    /// `command` (`wb-lsp mcp …`) with its stdin and stdout piped to the test.
    fn spawn(command: &mut Command) -> Server {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Server { child, stdin, lines, next_id: 0 }
    }

    fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// The next line the server wrote, as JSON; `None` when its stdout ended.
    fn next(&mut self) -> Option<Value> {
        match self.lines.recv_timeout(ANSWER_TIMEOUT) {
            Ok(line) => Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}"))),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!("no answer within {ANSWER_TIMEOUT:?}"),
        }
    }

    /// Sends a request and returns the next message, which must be its answer (nothing else comes between).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.next().expect("an answer");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        answer
    }

    fn initialize(&mut self, version: &str) -> Value {
        let params = json!({"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "wb-lsp-tests", "version": "1.0.0"}});
        let answer = self.request("initialize", params);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer["result"].clone()
    }

    /// A `tools/call` that must succeed as a call: its result (which may report a failure, `isError`). The
    /// text content must be the structured content, as pretty JSON.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = answer.get("result").unwrap_or_else(|| panic!("{tool}: {answer}")).clone();
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{result}"));
        assert_eq!(result["content"][0]["type"], "text");
        assert_eq!(result["content"].as_array().unwrap().len(), 1);
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), result["structuredContent"], "{result}");
        assert_eq!(text, serde_json::to_string_pretty(&result["structuredContent"]).unwrap());
        assert!(result["isError"].is_boolean(), "{result}");
        result
    }

    /// A call whose result is not a failure: its structured content.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], false, "{tool}: {result:#}");
        result["structuredContent"].clone()
    }

    /// A call whose result is a failure: its structured content (`error` is the message).
    fn failed(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], true, "{tool}: {result:#}");
        assert!(result["structuredContent"]["error"].is_string(), "{result:#}");
        result["structuredContent"].clone()
    }

    /// Closes stdin and waits: the exit status, and whatever the server still wrote.
    fn finish(mut self) -> (std::process::ExitStatus, Vec<Value>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(message) = self.next() {
            rest.push(message);
        }
        (self.child.wait().unwrap(), rest)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every diagnostic of a `check` document, as (code, severity, message, path, range).
fn diagnostics(document: &Value) -> Vec<(String, String, String, String, Value)> {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    document["packages"]
        .as_array()
        .unwrap_or_else(|| panic!("no packages: {document:#}"))
        .iter()
        .flat_map(|package| package["diagnostics"].as_array().unwrap().iter())
        .map(|d| (text(&d["code"]), text(&d["severity"]), text(&d["message"]), text(&d["path"]), d["range"].clone()))
        .collect()
}

fn range(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({"start": {"line": start.0, "column": start.1}, "end": {"line": end.0, "column": end.1}})
}

#[test]
fn the_handshake_negotiates_the_version_and_lists_the_tools() {
    let (_temp, root) = temp_dir();
    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2025-06-18", "2025-06-18"),
        ("1999-01-01", "2025-03-26"),
    ] {
        let mut server = Server::start(&root);
        let result = server.initialize(asked);
        assert_eq!(result["protocolVersion"], answered, "{asked}: {result}");
        assert_eq!(result["capabilities"], json!({"tools": {"listChanged": false}}));
        assert_eq!(result["serverInfo"]["name"], "wb-lsp");
        assert!(result["instructions"].as_str().unwrap().contains("check"));
        // The notification sent after initialize was not answered: the next message answers the ping.
        assert_eq!(server.request("ping", json!({}))["result"], json!({}));
        let (status, rest) = server.finish();
        assert!(status.success(), "{status:?}");
        assert!(rest.is_empty(), "{rest:?}");
    }

    let mut server = Server::start(&root);
    server.initialize("2025-03-26");
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["check", "fix", "dry_run", "smoke", "outcome"]);
    let required = [
        ("check", vec!["path"]),
        ("fix", vec!["path"]),
        ("dry_run", vec!["source"]),
        ("smoke", vec!["source"]),
        ("outcome", vec!["id"]),
    ];
    for (tool, (name, required)) in tools.as_array().unwrap().iter().zip(required) {
        assert_eq!(tool["name"], name);
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{tool}");
        assert_eq!(schema["additionalProperties"], false, "{tool}");
        assert_eq!(schema["required"], json!(required), "{tool}");
        for field in &required {
            assert_eq!(schema["properties"][field]["type"], "string", "{tool}");
            assert_eq!(schema["properties"][field]["minLength"], 1, "{tool}");
        }
        assert!(tool["description"].as_str().unwrap().len() > 80, "{tool}");
        // Only what neither writes nor builds images nor starts containers or sandboxes is read-only.
        assert_eq!(tool["annotations"]["readOnlyHint"], ["check", "outcome"].contains(&name), "{tool}");
    }
    let dry_run = &tools[2]["inputSchema"]["properties"];
    let mut properties: Vec<&str> = dry_run.as_object().unwrap().keys().map(String::as_str).collect();
    properties.sort_unstable();
    assert_eq!(properties, ["allow_unchecked_gpu", "dir", "env_files", "runtime", "source", "task", "workspaces"]);
    assert!(tools[3]["inputSchema"]["properties"].get("task").is_none(), "smoke takes no task");
}

#[test]
fn check_gives_the_exact_diagnostics_of_check_json() {
    let (_temp, root) = temp_dir();
    fixable_package(&root.join(".workbenches/fixable"));
    let mut server = Server::start(&root);
    server.initialize("2025-03-26");
    let document = server.ok("check", json!({"path": "."}));
    assert_eq!(document["root"], root.canonicalize().unwrap().display().to_string());
    let manifest = ".workbenches/fixable/workbench.yml";
    let undeclared = "MCP api references undeclared environment variable: API_TOKEN";
    let expected = [
        ("unsupported-runner", "warning", "Unsupported runner: opencod", range((5, 9), (5, 16))),
        ("undeclared-env-reference", "error", undeclared, range((13, 29), (13, 41))),
        ("undeclared-env-reference", "error", undeclared, range((14, 16), (14, 28))),
        ("unknown-field", "error", "Unknown manifest field: zzz_unknown", range((17, 1), (17, 12))),
    ];
    let expected: Vec<(String, String, String, String, Value)> = expected
        .into_iter()
        .map(|(code, severity, message, range)| (code.into(), severity.into(), message.into(), manifest.into(), range))
        .collect();
    assert_eq!(diagnostics(&document), expected);
    assert_eq!(document["summary"], json!({"packages": 1, "errors": 3, "warnings": 1}));
    let runner = &document["packages"][0]["diagnostics"][0];
    assert_eq!(
        runner["fixes"],
        json!([{"title": "Change to `opencode`", "safe": true, "creates": [],
            "edits": [{"path": manifest, "range": range((5, 9), (5, 16)), "newText": "opencode"}]}])
    );

    // The document is the CLI's, with its root: `check --format json` run in the root gives the rest.
    let mut cli = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
    let output = isolate(&mut cli).args(["check", "--format", "json"]).current_dir(&root).output().unwrap();
    let mut from_cli: Value = serde_json::from_slice(&output.stdout).unwrap();
    from_cli.as_object_mut().unwrap().insert("root".to_owned(), document["root"].clone());
    assert_eq!(document, from_cli);

    // The same package named by its directory, its manifest, an absolute path and a selector.
    for path in [
        ".workbenches/fixable".to_owned(),
        manifest.to_owned(),
        root.join(manifest).display().to_string(),
        ".#fixable".to_owned(),
    ] {
        assert_eq!(diagnostics(&server.ok("check", json!({"path": path}))), expected, "{path}");
    }

    // What is not a package is a failed result, not a protocol error.
    let missing = server.failed("check", json!({"path": "nowhere"}));
    assert!(missing["error"].as_str().unwrap().ends_with("/nowhere does not exist"), "{missing}");
    std::fs::create_dir_all(root.join("empty")).unwrap();
    let empty = server.failed("check", json!({"path": "empty"}));
    assert!(empty["error"].as_str().unwrap().starts_with("No Workbenches found in "), "{empty}");
    let unmatched = server.failed("check", json!({"path": ".#other"}));
    assert!(unmatched["error"].as_str().unwrap().starts_with("No matching Workbenches found"), "{unmatched}");
    let (status, _) = server.finish();
    assert!(status.success());
}

#[test]
fn fix_writes_inside_the_root_and_refuses_a_symlink_out_of_it() {
    let (_temp, dir) = temp_dir();
    let root = dir.join("root");
    let manifest = fixable_package(&root.join(".workbenches/fixable"));
    // A package outside the root, reached through a symlink inside it.
    let outside = fixable_package(&dir.join("outside/pkg"));
    std::os::unix::fs::symlink(dir.join("outside/pkg"), root.join("escape")).unwrap();
    // A manifest that is itself a symlink out of the root, in a directory inside it.
    std::fs::create_dir_all(root.join("linked")).unwrap();
    write_file(&root.join("linked/instructions.md"), "# Linked\n");
    std::os::unix::fs::symlink(&outside, root.join("linked/workbench.yml")).unwrap();

    let mut server = Server::start(&root);
    server.initialize("2025-03-26");
    // A path that leads out through a link is refused before anything is checked.
    let escape = server.failed("fix", json!({"path": "escape"}));
    assert_eq!(escape["refused"][0]["path"], "escape", "{escape}");
    assert_eq!(escape["refused"][0]["field"], "path", "{escape}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), FIXABLE, "escape: the file outside was written");
    // A directory inside the root whose manifest is a link out of it: fix's own write rule refuses it.
    let refused = server.failed("fix", json!({"path": "linked"}));
    assert!(refused["error"].as_str().unwrap().contains("nothing was written"), "{refused}");
    let reasons = refused["refused"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{refused}");
    assert_eq!(reasons[0]["path"], "linked/workbench.yml", "{refused}");
    assert!(reasons[0]["reason"].as_str().unwrap().contains("is outside the root"), "{refused}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), FIXABLE, "linked: the file outside was written");

    let fixed = server.ok("fix", json!({"path": ".workbenches/fixable"}));
    assert_eq!(
        fixed["changed"],
        json!([{"path": ".workbenches/fixable/workbench.yml",
            "applied": ["Change to `opencode`", "Declare `API_TOKEN` in env"]}])
    );
    let remaining: Vec<String> = diagnostics(&fixed["remaining"]).into_iter().map(|d| d.0).collect();
    assert_eq!(remaining, ["unknown-field"], "{fixed:#}");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("runner: opencode\n"), "{text}");
    assert!(text.ends_with("env:\n  API_TOKEN:\n    required: true\n"), "{text}");
    assert!(text.contains("zzz_unknown: 1\n"), "the unsafe fix is left for a person: {text}");

    // Nothing safe is left: a second fix changes nothing.
    let again = server.ok("fix", json!({"path": ".workbenches/fixable"}));
    assert_eq!(again["changed"], json!([]));
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), text);
    let missing = server.failed("fix", json!({"path": "nowhere"}));
    assert!(missing["error"].as_str().unwrap().contains("does not exist"), "{missing}");
    let (status, _) = server.finish();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), FIXABLE);
}

#[test]
fn dry_run_smoke_and_outcome_are_the_engines_and_never_show_a_value() {
    let (_temp, root) = temp_dir();
    let package = root.join(".workbenches/notes");
    write_file(&package.join("workbench.yml"), VALID);
    write_file(&package.join("instructions.md"), "# Notes\n");
    fixable_package(&root.join(".workbenches/fixable"));
    let mut server = Server::start_with(&root, &[("API_TOKEN", SECRET)]);
    server.initialize("2025-06-18");

    let dry_run = server.ok("dry_run", json!({"source": ".#notes", "task": "Write the notes."}));
    assert_eq!(dry_run["workbench"], "notes", "{dry_run:#}");
    assert_eq!(dry_run["runner"], "opencode");
    assert_eq!(dry_run["runtime"], "local");
    assert_eq!(dry_run["cwd"], root.canonicalize().unwrap().display().to_string());
    assert_eq!(dry_run["command"][0], "opencode");
    assert_eq!(dry_run["command"].as_array().unwrap().last().unwrap(), "Write the notes.");
    assert!(dry_run["env"].as_array().unwrap().contains(&json!("API_TOKEN")), "{dry_run:#}");
    // No opencode on this PATH: the translation is complete, and the problem says what would stop a run.
    assert!(dry_run["problems"][0].as_str().unwrap().contains("opencode"), "{dry_run:#}");
    // Without a task, a placeholder: the translation is the point.
    let untasked = server.ok("dry_run", json!({"source": ".workbenches/notes"}));
    assert_eq!(untasked["workbench"], "notes");

    // A package with errors: the first, where it is.
    let invalid = server.failed("dry_run", json!({"source": ".workbenches/fixable", "task": "Go."}));
    assert_eq!(invalid["path"], ".workbenches/fixable/workbench.yml", "{invalid}");
    assert!(invalid["line"].as_u64().unwrap() > 0 && invalid["column"].as_u64().unwrap() > 0, "{invalid}");

    let smoke = server.ok("smoke", json!({"source": ".#notes"}));
    let reports = smoke["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 1, "{smoke:#}");
    assert_eq!(reports[0]["workbench"], "notes");
    assert_eq!(reports[0]["status"], "failed", "no runner on this PATH: {smoke:#}");
    assert!(reports[0]["error"]["message"].as_str().unwrap().contains("opencode"), "{smoke:#}");
    // A package that cannot start here is a report, not a failed call.
    let undeclared = server.ok("smoke", json!({"source": ".#notes", "runtime": "e2b"}));
    assert_eq!(
        undeclared["reports"][0]["error"]["message"],
        "Workbench notes does not declare runtime: e2b. Declared runtimes: local"
    );
    let nowhere = server.failed("smoke", json!({"source": "nowhere"}));
    assert!(nowhere["error"].as_str().unwrap().contains("nowhere"), "{nowhere}");

    let outcome = server.failed("outcome", json!({"id": "wbo_0123456789abcdef"}));
    assert!(!outcome["error"].as_str().unwrap().is_empty(), "{outcome}");
    assert_eq!(outcome["id"], "wbo_0123456789abcdef");
    let run = server.failed("outcome", json!({"id": "wb_does_not_exist"}));
    assert!(!run["error"].as_str().unwrap().is_empty(), "{run}");

    // Everything the server wrote: no value of the environment.
    let mut everything = vec![dry_run, untasked, invalid, smoke, outcome, run];
    let (status, rest) = server.finish();
    everything.extend(rest);
    assert!(status.success());
    let text = serde_json::to_string(&everything).unwrap();
    assert!(!text.contains(SECRET), "a value reached the client: {text}");
}

#[test]
fn malformed_input_is_answered_and_the_session_goes_on_to_a_clean_exit() {
    let (_temp, root) = temp_dir();
    fixable_package(&root.join(".workbenches/fixable"));
    let mut server = Server::start(&root);
    server.initialize("2025-03-26");
    let error_of = |answer: &Value| (answer["id"].clone(), answer["error"]["code"].as_i64().unwrap_or_default());

    server.send_raw("{this is not json");
    assert_eq!(error_of(&server.next().unwrap()), (Value::Null, -32700));
    server.send_raw("\u{0}\u{ff}");
    assert_eq!(error_of(&server.next().unwrap()), (Value::Null, -32700));
    server.send_raw("[]");
    assert_eq!(error_of(&server.next().unwrap()), (Value::Null, -32600));
    server.send_raw(r#"{"jsonrpc": "2.0", "id": 41}"#);
    assert_eq!(error_of(&server.next().unwrap()), (json!(41), -32600));
    server.send_raw(r#"{"jsonrpc": "1.0", "id": 42, "method": "ping"}"#);
    assert_eq!(error_of(&server.next().unwrap()), (json!(42), -32600));
    server.send_raw(r#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#);
    assert_eq!(error_of(&server.next().unwrap()), (Value::Null, -32600));
    // A line over 4 MiB is skipped, never held, and said so.
    let huge =
        format!(r#"{{"jsonrpc": "2.0", "id": 43, "method": "ping", "params": {{"pad": "{}"}}}}"#, "x".repeat(5 << 20));
    server.send_raw(&huge);
    let answer = server.next().unwrap();
    assert_eq!(error_of(&answer), (Value::Null, -32600), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("longer than 4194304 bytes"), "{answer}");
    // Notifications, known or not, and responses are never answered: the next line answers the ping.
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}));
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}));
    server.send(&json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));

    let answer = server.request("resources/list", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    for params in [
        json!({"name": "deploy", "arguments": {}}),
        json!({"arguments": {"path": "."}}),
        json!({"name": "check", "arguments": {"path": 3}}),
        json!({"name": "check", "arguments": {"path": ".", "format": "sarif"}}),
        json!({"name": "check", "arguments": {}}),
        json!({"name": "check", "arguments": {"path": ""}}),
        json!({"name": "fix", "arguments": {"path": ""}}),
        json!({"name": "dry_run", "arguments": {"source": ".", "task": ""}}),
        json!({"name": "smoke", "arguments": {"source": ".", "task": "Go."}}),
        json!({"name": "smoke", "arguments": {"source": ".", "workspaces": {"docs": ""}}}),
        json!({"name": "outcome", "arguments": {"id": ""}}),
        json!({"name": "check", "arguments": ["."]}),
        json!({"name": "outcome", "arguments": {"id": 1}}),
    ] {
        let answer = server.request("tools/call", params.clone());
        assert_eq!(answer["error"]["code"], -32602, "{params}: {answer}");
    }
    // A batch is answered in one array, without its notifications.
    server.send_raw(
        r#"[{"jsonrpc": "2.0", "id": "a", "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": "b", "method": "nope"}]"#,
    );
    let batch = server.next().unwrap();
    assert_eq!(batch[0], json!({"jsonrpc": "2.0", "id": "a", "result": {}}), "{batch}");
    assert_eq!(batch[1]["error"]["code"], -32601, "{batch}");
    assert_eq!(batch.as_array().unwrap().len(), 2, "{batch}");

    // Still serving; a call sent right before the end of the input is answered before the exit.
    assert_eq!(server.ok("check", json!({"path": "."}))["summary"]["errors"], 3);
    server.send(&json!({"jsonrpc": "2.0", "id": "last", "method": "tools/call",
        "params": {"name": "check", "arguments": {"path": "."}}}));
    let (status, rest) = server.finish();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], "last");
    assert_eq!(rest[0]["result"]["structuredContent"]["summary"]["errors"], 3);
}

#[test]
fn a_root_that_does_not_exist_is_refused() {
    let (_temp, dir) = temp_dir();
    let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
    let output = isolate(&mut command).args(["mcp", "--root"]).arg(dir.join("missing")).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be resolved"), "{output:?}");
    assert!(output.stdout.is_empty());
}

/// The engine's World (a fake OpenCode on PATH): smoke and the dry run as the CLI gives them, and a real run's
/// outcome, shown by outcome id and by run id, exactly as `outcome ID --json` shows it, and never applied.
#[test]
fn in_a_world_with_a_runner_smoke_dry_run_and_outcome_match_the_cli() {
    let world = opencode_world();
    let wb = |args: &[&str], env: &[(&str, &str)]| {
        finish(world.command(env!("CARGO_BIN_EXE_wb-lsp")).args(args).envs(env.iter().copied()))
    };
    let script = support::outcome_stream(&world, "outcome", "reports/findings.html");
    let variables = [
        ("DATABASE_URL", "postgres://db.internal/ledger"),
        ("OPENAI_API_KEY", "sk-openai-test-value"),
        ("FAKE_RUNNER_SCRIPT", script.to_str().unwrap()),
    ];
    let work = world.work.display().to_string();
    let run = wb(&["run", ".workbenches/oc-demo", "--dir", &work, "--task", TASK, "--json"], &variables);
    assert_eq!(run.code, 0, "{run:?}");
    let events: Vec<Value> = run.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    let available = events.iter().find(|e| e["type"] == "outcome.available").unwrap();
    let outcome_id = available["data"]["outcome_id"].as_str().unwrap().to_owned();
    let receipt = world.home.join(".workbench/outcomes").join(&outcome_id).join("application.json");
    let receipt_before = std::fs::read(&receipt).unwrap();
    let shown = wb(&["outcome", &outcome_id, "--json"], &[]);
    let from_cli: Value = serde_json::from_str(&shown.stdout).unwrap();
    let smoke_cli = wb(&["smoke", "--json", ".workbenches/oc-demo"], &variables);
    let smoke_cli: Vec<Value> = smoke_cli.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let dry_run_cli = wb(&["dry-run", "--json", "--task", TASK, "--dir", &work, ".workbenches/oc-demo"], &variables);
    let dry_run_cli: Value = serde_json::from_str(&dry_run_cli.stdout).unwrap();

    // Rooted at the repository: the run worked in `work`, beside it, so its outcome is not this root's, and
    // neither is `work` as a workspace.
    let mut command = world.command(env!("CARGO_BIN_EXE_wb-lsp"));
    command.args(["mcp", "--root"]).arg(&world.repo).envs(variables);
    let mut server = Server::spawn(&mut command);
    server.initialize("2025-03-26");
    for id in [&outcome_id, &run_id] {
        let refused = server.failed("outcome", json!({"id": id}));
        assert!(refused["error"].as_str().unwrap().contains("worked outside the server's root"), "{refused}");
        assert!(refused.get("outcome").is_none(), "{refused}");
    }
    let smoke = server.ok("smoke", json!({"source": ".workbenches/oc-demo"}));
    assert_eq!(smoke["reports"], json!(smoke_cli));
    assert_eq!(smoke["reports"][0]["status"], "ready", "{smoke:#}");
    let outside = server.failed("dry_run", json!({"source": ".workbenches/oc-demo", "task": TASK, "dir": work}));
    assert_eq!(outside["refused"][0]["field"], "dir", "{outside}");
    let (status, _) = server.finish();
    assert!(status.success());

    // Rooted above both: the outcome is this root's, and shown as the CLI shows it.
    let mut command = world.command(env!("CARGO_BIN_EXE_wb-lsp"));
    command.args(["mcp", "--root"]).arg(&world.root).envs(variables);
    let mut server = Server::spawn(&mut command);
    server.initialize("2025-03-26");
    assert_eq!(server.ok("outcome", json!({"id": outcome_id})), from_cli);
    assert_eq!(server.ok("outcome", json!({"id": run_id})), from_cli);
    assert_eq!(from_cli["outcome"]["id"], outcome_id.as_str());
    let dry_run = server.ok("dry_run", json!({"source": "repo/.workbenches/oc-demo", "task": TASK, "dir": "work"}));
    for field in
        ["workbench", "runner", "runtime", "cwd", "model_route", "authentication", "env", "removed_env", "problems"]
    {
        assert_eq!(dry_run[field], dry_run_cli[field], "{field}: {dry_run:#}");
    }
    assert_eq!(dry_run["problems"], json!([]), "{dry_run:#}");
    let (status, _) = server.finish();
    assert!(status.success());

    // Read-only: the receipt is as it was, and the value of no variable was shown.
    assert_eq!(std::fs::read(&receipt).unwrap(), receipt_before);
    let everything = serde_json::to_string(&(smoke, dry_run)).unwrap();
    for (_, value) in variables.iter().take(2) {
        assert!(!everything.contains(value), "{value} reached the client");
    }
}

/// Arbitrary input never stops the server: random bytes, mangled messages and every tool called with arguments
/// of every shape, each followed by a ping that must be answered; at the end it exits 0.
#[test]
fn arbitrary_input_never_stops_the_server() {
    let (_temp, root) = temp_dir();
    fixable_package(&root.join(".workbenches/fixable"));
    let mut server = Server::start(&root);
    server.initialize("2025-03-26");
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let values = [
        json!(null),
        json!(true),
        json!(-1),
        json!(1e308),
        json!(""),
        json!("."),
        json!("\u{0}"),
        json!("../../../../etc"),
        json!(".#"),
        json!("#"),
        json!("x".repeat(5000)),
        json!([]),
        json!({}),
        json!({"a": [1, {"b": null}]}),
        json!(["."]),
    ];
    let fields = ["path", "source", "id", "task", "runtime", "dir", "workspaces", "env_files", "allow_host_docker"];
    let tools = ["check", "fix", "dry_run", "smoke", "outcome", "unknown"];
    let valid = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "check", "arguments": {"path": "."}}})
    .to_string();
    let mut answered = 0;
    for round in 0..300u64 {
        let pick = |n: u64, len: usize| (n % len as u64) as usize;
        let line = match round % 4 {
            // Random bytes (no newline).
            0 => (0..next() % 64).map(|_| (next() % 255) as u8).filter(|b| *b != b'\n').collect::<Vec<u8>>(),
            // A valid message cut short or with a byte changed.
            1 => {
                let mut bytes = valid.clone().into_bytes();
                let at = pick(next(), bytes.len());
                if next() % 2 == 0 {
                    bytes.truncate(at);
                } else {
                    bytes[at] = (next() % 94 + 32) as u8;
                }
                bytes
            }
            // A tool with arguments of any shape.
            _ => {
                let mut arguments = serde_json::Map::new();
                for _ in 0..next() % 4 {
                    arguments.insert(
                        fields[pick(next(), fields.len())].to_owned(),
                        values[pick(next(), values.len())].clone(),
                    );
                }
                let arguments =
                    if next() % 8 == 0 { values[pick(next(), values.len())].clone() } else { Value::Object(arguments) };
                json!({"jsonrpc": "2.0", "id": format!("t{round}"), "method": "tools/call",
                    "params": {"name": tools[pick(next(), tools.len())], "arguments": arguments}})
                .to_string()
                .into_bytes()
            }
        };
        let stdin = server.stdin.as_mut().unwrap();
        stdin.write_all(&line).unwrap();
        stdin.write_all(b"\n").unwrap();
        let ping = format!("p{round}");
        server.send(&json!({"jsonrpc": "2.0", "id": ping, "method": "ping"}));
        loop {
            let message = server.next().unwrap_or_else(|| panic!("the server stopped after {line:?}"));
            assert!(message.get("result").is_some() || message["error"]["code"].is_i64(), "{message}");
            if message["id"] == ping.as_str() {
                break;
            }
            answered += 1;
        }
    }
    let (status, rest) = server.finish();
    assert_eq!(status.code(), Some(0));
    assert!(answered + rest.len() >= 150, "answers: {answered} + {}", rest.len());
}

/// A package of `name` with the given `runtimes:` block (and `instructions.md`).
fn package_with_runtimes(dir: &Path, name: &str, runtimes: &str) {
    write_file(
        &dir.join("workbench.yml"),
        format!(
            "spec: 1\nversion: 1.0.0\nname: {name}\ndescription: A package.\nrunner: opencode\nmodel:\n  id: \
             openai/gpt-5.1\ninstructions: ./instructions.md\n{runtimes}"
        ),
    );
    write_file(&dir.join("instructions.md"), "# A package\n");
}

/// The tools' caller is the agent, not the person. Hostile runs round 3, high: an agent wrote a package that
/// declares host-engine mode and called `smoke` with `allow_host_docker`, and wb-lsp mounted the host's Docker
/// socket into the agent's image. No tool takes the grant, and the engine refuses the package without it.
#[test]
fn the_agent_cannot_grant_itself_the_host_docker_engine() {
    let (_temp, root) = temp_dir();
    let engine =
        "runtimes:\n  docker:\n    image:\n      build: ./Dockerfile\n    docker:\n      engine:\n        mode: host\n";
    package_with_runtimes(&root.join(".workbenches/engine"), "engine", engine);
    write_file(&root.join(".workbenches/engine/Dockerfile"), "FROM scratch\n");
    let mut server = Server::start(&root);
    server.initialize("2025-06-18");
    for tool in ["smoke", "dry_run"] {
        let answer = server.request(
            "tools/call",
            json!({"name": tool, "arguments": {"source": ".workbenches/engine", "allow_host_docker": true}}),
        );
        assert_eq!(answer["error"]["code"], -32602, "{tool}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("allow_host_docker"), "{answer}");
    }
    let host = "Host Docker engine access requires explicit --allow-host-docker authorization";
    let smoke = server.ok("smoke", json!({"source": ".workbenches/engine"}));
    assert_eq!(smoke["reports"][0]["status"], "failed", "{smoke:#}");
    assert!(smoke["reports"][0]["error"]["message"].as_str().unwrap().contains(host), "{smoke:#}");
    let dry_run = server.failed("dry_run", json!({"source": ".workbenches/engine"}));
    assert_eq!(dry_run["error"], host, "{dry_run:#}");
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    assert!(!tools.to_string().contains("allow_host_docker"), "{tools}");
    let (status, _) = server.finish();
    assert!(status.success());
}

/// Hostile runs round 3, medium: `check` read any YAML file of the host (and the line count of any file),
/// `smoke` uploaded any host directory. Every path argument must lie beneath the root once every link is
/// resolved; the refusal says which argument, and nothing of what lies outside.
#[test]
fn every_path_argument_is_confined_to_the_root() {
    let (_temp, dir) = temp_dir();
    let root = dir.join("root");
    package_with_runtimes(&root.join(".workbenches/notes"), "notes", "runtimes:\n  local: {}\n");
    std::fs::create_dir_all(root.join("work")).unwrap();
    write_file(&root.join("work/.env"), "A=1\n");
    // Outside: a YAML file with a secret, a directory, a package, and links into them from inside the root.
    write_file(&dir.join("secret.yml"), "token: outside-secret-5b1e\n");
    write_file(&dir.join("outside/.env"), "TOKEN=outside-secret-5b1e\n");
    package_with_runtimes(&dir.join("outside/.workbenches/pkg"), "pkg", "runtimes:\n  local: {}\n");
    std::os::unix::fs::symlink(dir.join("outside"), root.join("link")).unwrap();
    std::os::unix::fs::symlink(dir.join("secret.yml"), root.join("secret.yml")).unwrap();
    let mut server = Server::start(&root);
    server.initialize("2025-06-18");
    let outside = dir.join("outside").display().to_string();
    let secret = dir.join("secret.yml").display().to_string();
    let attempts: Vec<(&str, Value, &str)> = vec![
        ("check", json!({"path": "/etc/passwd"}), "path"),
        ("check", json!({"path": secret}), "path"),
        ("check", json!({"path": "../secret.yml"}), "path"),
        ("check", json!({"path": "secret.yml"}), "path"),
        ("check", json!({"path": "link/.workbenches/pkg"}), "path"),
        ("check", json!({"path": format!("{outside}#pkg")}), "path"),
        ("fix", json!({"path": "link"}), "path"),
        ("dry_run", json!({"source": "link/.workbenches/pkg"}), "source"),
        ("dry_run", json!({"source": ".workbenches/notes", "dir": outside}), "dir"),
        ("dry_run", json!({"source": ".workbenches/notes", "dir": "link"}), "dir"),
        ("dry_run", json!({"source": ".workbenches/notes", "workspaces": {"docs": "../outside"}}), "workspaces"),
        ("dry_run", json!({"source": ".workbenches/notes", "env_files": ["link/.env"]}), "env_files"),
        ("smoke", json!({"source": ".workbenches/notes", "dir": "/"}), "dir"),
        ("smoke", json!({"source": ".workbenches/notes", "env_files": ["/etc/hostname"]}), "env_files"),
        ("smoke", json!({"source": "/"}), "source"),
    ];
    let mut answers = Vec::new();
    for (tool, arguments, field) in attempts {
        let refused = server.failed(tool, arguments.clone());
        assert!(
            refused["error"].as_str().unwrap().starts_with(&format!("Refused `{field}`")),
            "{tool} {arguments}: {refused}"
        );
        assert_eq!(refused["refused"][0]["field"], field, "{tool} {arguments}: {refused}");
        assert!(refused.get("packages").is_none() && refused.get("reports").is_none(), "{refused}");
        answers.push(refused);
    }
    let text = serde_json::to_string(&answers).unwrap();
    assert!(!text.contains("outside-secret-5b1e") && !text.contains("root:x:0"), "{text}");
    // Inside the root, the same arguments work.
    assert_eq!(server.ok("check", json!({"path": ".workbenches/notes"}))["summary"]["errors"], 0);
    let dry_run = server.ok(
        "dry_run",
        json!({"source": ".workbenches/notes", "dir": "work", "env_files": ["work/.env"], "workspaces": {}}),
    );
    assert_eq!(dry_run["cwd"], root.canonicalize().unwrap().join("work").display().to_string(), "{dry_run:#}");
    let (status, _) = server.finish();
    assert!(status.success());
}

/// A smoke check on E2B or Daytona creates a sandbox on a paid service, off this machine: the person allows it
/// when starting the server (`--allow-remote-sandboxes`), never the agent.
#[test]
fn sandboxes_on_paid_services_need_the_persons_option() {
    let (_temp, root) = temp_dir();
    let runtimes = "runtimes:\n  e2b:\n    image: ghcr.io/x/y:1\n  local: {}\n";
    package_with_runtimes(&root.join(".workbenches/remote"), "remote", runtimes);
    // A key is set: what stops the smoke check is the missing option, not a missing credential.
    let mut server = Server::start_with(&root, &[("E2B_API_KEY", "e2b_test_key_0000")]);
    server.initialize("2025-06-18");
    let refused = server.failed("smoke", json!({"source": ".workbenches/remote"}));
    assert!(refused["error"].as_str().unwrap().contains("--allow-remote-sandboxes"), "{refused}");
    assert_eq!(refused["runtime"], "e2b");
    let refused = server.failed("smoke", json!({"source": ".", "runtime": "e2b"}));
    assert!(refused["error"].as_str().unwrap().contains("--allow-remote-sandboxes"), "{refused}");
    // The local runtime it also declares needs nothing, and a dry run on e2b creates nothing.
    let local = server.ok("smoke", json!({"source": ".workbenches/remote", "runtime": "local"}));
    assert_eq!(local["reports"][0]["runtime"], "local", "{local:#}");
    let plan = server.ok("dry_run", json!({"source": ".workbenches/remote"}));
    assert_eq!(plan["runtime"], "e2b", "{plan:#}");
    let (status, _) = server.finish();
    assert!(status.success());

    // With the person's option the smoke check goes on to the service (here: no key, so it says so).
    let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
    isolate(&mut command).args(["mcp", "--allow-remote-sandboxes", "--root"]).arg(&root).env_remove("E2B_API_KEY");
    let mut server = Server::spawn(&mut command);
    server.initialize("2025-06-18");
    let smoke = server.ok("smoke", json!({"source": ".workbenches/remote"}));
    let message = smoke["reports"][0]["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("E2B_API_KEY"), "{smoke:#}");
    let (status, _) = server.finish();
    assert!(status.success());
}

/// Every tool's advertised `inputSchema` (derived from its argument type) is a JSON Schema 2020-12 that accepts
/// what the server accepts: the arguments the tests above send validate and are answered with a result, and
/// what the server refuses with `-32602` (an unknown field, an empty string, a wrong type, a workspace name
/// with `=`, smoke's `task`, a grant only the person may give) does not validate.
#[test]
fn every_input_schema_accepts_what_the_server_accepts() {
    let (_temp, root) = temp_dir();
    let mut server = Server::start(&root);
    server.initialize("2025-06-18");
    let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
    let mut validators = std::collections::BTreeMap::new();
    for tool in tools.as_array().unwrap() {
        let schema = &tool["inputSchema"];
        assert!(jsonschema::draft202012::meta::is_valid(schema), "{tool}");
        validators.insert(tool["name"].as_str().unwrap().to_owned(), jsonschema::draft202012::new(schema).unwrap());
    }
    let accepted = [
        ("check", json!({"path": "."})),
        ("check", json!({"path": ".#other"})),
        ("fix", json!({"path": ".workbenches/fixable"})),
        ("dry_run", json!({"source": ".#notes", "task": "Write the notes."})),
        (
            "dry_run",
            json!({"source": ".workbenches/notes", "dir": "work", "env_files": ["work/.env"], "workspaces": {}}),
        ),
        ("dry_run", json!({"source": "repo/.workbenches/oc-demo", "task": TASK, "dir": "work"})),
        ("dry_run", json!({"source": ".workbenches/notes", "workspaces": {"docs": "../outside"}})),
        ("dry_run", json!({"source": ".", "runtime": "local", "allow_unchecked_gpu": true})),
        ("smoke", json!({"source": ".#notes", "runtime": "e2b"})),
        ("smoke", json!({"source": ".workbenches/notes", "env_files": ["/etc/hostname"]})),
        ("outcome", json!({"id": "wbo_0123456789abcdef"})),
        ("outcome", json!({"id": "wb_does_not_exist"})),
    ];
    for (tool, arguments) in &accepted {
        let errors: Vec<String> = validators[*tool].iter_errors(arguments).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{tool} {arguments}: {errors:?}");
        let answer = server.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(answer.get("result").is_some(), "{tool} {arguments}: {answer}");
        // A field the schema does not name is refused by both.
        let mut unknown = arguments.clone();
        unknown.as_object_mut().unwrap().insert("zzz_unknown".to_owned(), json!(1));
        assert!(!validators[*tool].is_valid(&unknown), "{tool} {unknown}");
        let answer = server.request("tools/call", json!({"name": tool, "arguments": unknown}));
        assert_eq!(answer["error"]["code"], -32602, "{tool} {unknown}: {answer}");
    }
    let refused = [
        ("check", json!({"path": 3})),
        ("check", json!({"path": ".", "format": "sarif"})),
        ("check", json!({})),
        ("check", json!({"path": ""})),
        ("check", json!(["."])),
        ("fix", json!({"path": ""})),
        ("dry_run", json!({"source": ".", "task": ""})),
        ("dry_run", json!({"source": ".", "runtime": ""})),
        ("dry_run", json!({"source": ".", "allow_host_docker": true})),
        ("dry_run", json!({"source": ".", "workspaces": {"a=b": "docs"}})),
        ("dry_run", json!({"source": ".", "workspaces": {"": "docs"}})),
        ("dry_run", json!({"source": ".", "env_files": [""]})),
        ("dry_run", json!({"source": ".", "allow_unchecked_gpu": "yes"})),
        ("smoke", json!({"source": ".", "task": "Go."})),
        ("smoke", json!({"source": ".", "workspaces": {"docs": ""}})),
        ("smoke", json!({"source": ".", "dir": ""})),
        ("smoke", json!({"source": ".", "allow_host_docker": true})),
        ("outcome", json!({"id": ""})),
        ("outcome", json!({"id": 1})),
    ];
    for (tool, arguments) in &refused {
        assert!(!validators[*tool].is_valid(arguments), "{tool} {arguments}");
        let answer = server.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(answer["error"]["code"], -32602, "{tool} {arguments}: {answer}");
    }
    let (status, _) = server.finish();
    assert!(status.success());
}
