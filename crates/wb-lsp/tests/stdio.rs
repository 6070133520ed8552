//! The built binary over stdio, as editors run it: framing, malformed input, the handshake and a clean exit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use wb_testsupport::isolate;
use wb_testsupport::lsp::Client;
use wb_testsupport::{frame, read_message};

#[test]
fn malformed_messages_are_answered_and_the_session_continues() {
    for args in [&[][..], &["serve"][..], &["--stdio"][..]] {
        let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdin.write_all(&frame("{this is not json")).unwrap();
        stdin.write_all(&frame("[1, 2]")).unwrap();
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}});
        stdin.write_all(&frame(&initialize.to_string())).unwrap();
        stdin.flush().unwrap();

        // Error replies and ordinary responses travel on separate queues, so only their own order is fixed.
        let messages: Vec<Value> = (0..3).map(|_| read_message(&mut stdout)).collect();
        let errors: Vec<&Value> = messages.iter().filter(|m| m.get("error").is_some()).collect();
        assert_eq!(errors.len(), 2, "{messages:?}");
        assert_eq!(errors[0]["id"], Value::Null);
        assert_eq!(errors[0]["error"]["code"], -32700);
        assert_eq!(errors[1]["error"]["code"], -32600);
        let initialized = messages.iter().find(|m| m.get("result").is_some()).expect("initialize response");
        assert_eq!(initialized["id"], 1);
        assert_eq!(initialized["result"]["capabilities"]["positionEncoding"], "utf-16");
        assert_eq!(initialized["result"]["serverInfo"]["name"], "wb-lsp");

        let shutdown = json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"});
        stdin.write_all(&frame(&shutdown.to_string())).unwrap();
        stdin.flush().unwrap();
        loop {
            let message = read_message(&mut stdout);
            if message["id"] == 2 {
                assert_eq!(message["result"], Value::Null);
                break;
            }
        }
        stdin.write_all(&frame(&json!({"jsonrpc": "2.0", "method": "exit"}).to_string())).unwrap();
        drop(stdin);
        let status = child.wait().unwrap();
        assert!(status.success(), "{args:?}: {status:?}");
    }
}

/// A minimal Workbench repository whose runner is a fake `opencode` script on a private PATH.
fn fake_repository(dir: &std::path::Path) -> std::path::PathBuf {
    let package = dir.join("repo/.workbenches/demo");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("workbench.yml"),
        "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nmcps:\n  - name: api\n    url: https://api.example.com/mcp\n    headers:\n      Authorization: Bearer ${API_TOKEN}\nenv:\n  API_TOKEN:\n    required: false\nruntimes:\n  local: {}\n",
    )
    .unwrap();
    std::fs::write(package.join("instructions.md"), "# Demo\n").unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let runner = bin.join("opencode");
    std::fs::write(
        &runner,
        "#!/bin/sh\necho '{\"type\":\"text\",\"part\":{\"id\":\"t1\",\"text\":\"done\"}}'\necho '{\"type\":\"step_finish\",\"part\":{\"tokens\":{\"input\":3,\"output\":1}}}'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
    package.join("workbench.yml")
}

#[test]
fn the_editor_runs_a_workbench_and_receives_its_events() {
    let temp = tempfile::tempdir().unwrap();
    let manifest = fake_repository(temp.path());
    let path = format!("{}:{}", temp.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
        .env("PATH", path)
        .env("OPENAI_API_KEY", "sk-test-canary-7d1f")
        .env("WORKBENCH_HOME", temp.path().join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |value: Value| {
        stdin.write_all(&frame(&value.to_string())).unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
    send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let uri = format!("file://{}", manifest.display());
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": uri}}}),
    );
    let canary = "tok-canary-93be5";
    let arguments = json!([{"uri": uri, "task": "say done", "env": [format!("API_TOKEN={canary}")]}]);
    send(json!({"jsonrpc": "2.0", "id": 5, "method": "workspace/executeCommand",
        "params": {"command": "workbench.dryRun", "arguments": arguments}}));
    send(json!({"jsonrpc": "2.0", "id": 6, "method": "workspace/executeCommand",
        "params": {"command": "workbench.smoke", "arguments": arguments, "workDoneToken": "smoke-1"}}));
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": arguments, "workDoneToken": "run-1"}}));
    let mut events = Vec::new();
    let mut texts = Vec::new();
    let mut lenses = None;
    let mut progress = 0;
    let mut smoke_progress = 0;
    let mut begins = Vec::new();
    let mut everything = String::new();
    let mut dry_run = None;
    let mut smoke = None;
    let result = loop {
        let message = read_message(&mut stdout);
        everything.push_str(&message.to_string());
        match (message.get("id").and_then(Value::as_i64), message.get("method").and_then(Value::as_str)) {
            (Some(5), None) => dry_run = Some(message["result"].clone()),
            (Some(6), None) => smoke = Some(message["result"].clone()),
            (Some(2), None) => lenses = Some(message["result"].clone()),
            (Some(3), None) => break message,
            (_, Some("workbench/runEvent")) => {
                events.push(message["params"]["event"].clone());
                texts.push(message["params"]["text"].clone());
            }
            (_, Some("$/progress")) if message["params"]["token"] == "smoke-1" => {
                smoke_progress += 1;
                begins.extend(
                    (message["params"]["value"]["kind"] == "begin").then(|| message["params"]["value"].clone()),
                );
            }
            (_, Some("$/progress")) => {
                progress += 1;
                begins.extend(
                    (message["params"]["value"]["kind"] == "begin").then(|| message["params"]["value"].clone()),
                );
            }
            _ => {}
        }
    };
    assert_eq!(result["result"]["ending"]["status"], "completed", "{result}");
    assert_eq!(result["result"]["finalText"], "done");
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["run.started", "run.ready", "output.text", "usage.updated", "outcome.available", "run.completed"]
    );
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event["sequence"], index as u64 + 1);
    }
    // Beside each event, the server's text for it (the editors show it as it is).
    assert!(texts.iter().all(|text| text.as_array().is_some_and(|lines| lines.iter().all(Value::is_string))));
    let first = |index: usize| texts[index][0].as_str().unwrap_or_default().to_owned();
    let run_id = events[0]["run_id"].as_str().unwrap_or_default();
    assert!(first(0).starts_with(&format!("▶ Run {run_id} started: demo 0.1.0")), "{texts:?}");
    assert_eq!(texts[1], json!(["  the runner is ready"]));
    assert_eq!(texts[2], json!(["done"]));
    assert!(first(3).starts_with("  usage: "), "{texts:?}");
    let outcome_id = events[4]["data"]["outcome_id"].as_str().unwrap_or_default();
    assert!(first(4).starts_with(&format!("  outcome {outcome_id} (")), "{texts:?}");
    assert!(first(5).starts_with("■ Run completed in "), "{texts:?}");
    assert!(progress >= 2, "begin and end progress");
    // The smoke's progress may still be in flight when the run's response arrives: read until its end.
    while smoke_progress < 2 {
        let message = read_message(&mut stdout);
        everything.push_str(&message.to_string());
        if message["method"] == "$/progress" && message["params"]["token"] == "smoke-1" {
            smoke_progress += 1;
            begins.extend((message["params"]["value"]["kind"] == "begin").then(|| message["params"]["value"].clone()));
        }
    }
    // A run's progress can be cancelled; a smoke's (which only prepares) cannot.
    assert!(
        begins
            .contains(&json!({"kind": "begin", "title": "Workbench run", "cancellable": true, "message": "starting"})),
        "{begins:?}"
    );
    assert!(
        begins.contains(
            &json!({"kind": "begin", "title": "Workbench smoke", "cancellable": false, "message": "preparing"})
        ),
        "{begins:?}"
    );
    let titles: Vec<String> = lenses
        .and_then(|l| l.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|l| l["command"]["title"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    // Every byte the server sent (dry run, smoke, events, progress) is free of environment values.
    for secret in ["sk-test-canary-7d1f", canary] {
        assert!(!everything.contains(secret), "a secret leaked: {secret}");
    }
    let dry_run = dry_run.expect("dry run result");
    assert_eq!(dry_run["native"]["mcp"]["api"]["headers"]["Authorization"], "Bearer {env:API_TOKEN}", "{dry_run}");
    assert!(dry_run["env"].as_array().is_some_and(|names| names.iter().any(|n| n == "API_TOKEN")));
    assert_eq!(dry_run["problems"], json!([]), "{dry_run}");
    let smoke = smoke.expect("smoke result");
    assert_eq!(smoke[0]["status"], "ready", "{smoke}");
    assert_eq!(smoke[0]["text"][0], "demo is ready", "{smoke}");
    assert!(smoke[0]["text"].as_array().is_some_and(|lines| lines.iter().any(|l| l == "demo: auth ready (openai)")));
    // The run's outcome: inspect it, and applying it is refused (a local run's changes are already present).
    let outcome_id = result["result"]["outcomeId"].as_str().expect("the run committed an outcome").to_owned();
    send(json!({"jsonrpc": "2.0", "id": 9, "method": "workspace/executeCommand",
        "params": {"command": "workbench.outcome", "arguments": [outcome_id]}}));
    send(json!({"jsonrpc": "2.0", "id": 10, "method": "workspace/executeCommand",
        "params": {"command": "workbench.applyOutcome", "arguments": [{"id": outcome_id}]}}));
    // A run id names the run's final outcome, as in `wb-lsp outcome RUN_ID`.
    let run_id = result["result"]["runId"].as_str().expect("the run's id").to_owned();
    send(json!({"jsonrpc": "2.0", "id": 11, "method": "workspace/executeCommand",
        "params": {"command": "workbench.outcome", "arguments": [run_id]}}));
    let (mut inspected, mut applied, mut by_run) = (None, None, None);
    while inspected.is_none() || applied.is_none() || by_run.is_none() {
        let message = read_message(&mut stdout);
        match message["id"].as_i64() {
            Some(9) => inspected = Some(message),
            Some(10) => applied = Some(message),
            Some(11) => by_run = Some(message),
            _ => {}
        }
    }
    let by_run = by_run.unwrap();
    assert_eq!(by_run["result"]["outcome"]["id"], json!(outcome_id), "{by_run}");
    let inspected = inspected.unwrap();
    assert_eq!(inspected["result"]["outcome"]["id"], json!(outcome_id), "{inspected}");
    assert_eq!(inspected["result"]["receipt"]["state"], "present", "{inspected}");
    // Its text: the summary lines of `wb-lsp outcome ID` (this run changed nothing), the brief, the labels.
    let lines = &inspected["result"]["lines"];
    let header = lines[0]["text"].as_str().unwrap_or_default();
    assert!(header.starts_with(&format!("Outcome {outcome_id} (run wb_")), "{lines}");
    assert!(header.ends_with(", complete, present)"), "{lines}");
    let rest = lines.as_array().map(|lines| lines[1..].to_vec()).unwrap_or_default();
    assert_eq!(
        rest,
        [json!({"text": "Changesets: none"}), json!({"text": "Artifacts: 0"}), json!({"text": "Links: 0"})]
    );
    assert_eq!(inspected["result"]["brief"], "no changes; 0 artifacts; 0 links");
    assert_eq!(inspected["result"]["changesets"], json!([]));
    assert_eq!(inspected["result"]["receiptText"], "the run already made its changes in the workspace");
    let applied = applied.unwrap();
    assert_eq!(applied["error"]["message"], "Outcome changes are already present in the workspace", "{applied}");
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}));
    loop {
        if read_message(&mut stdout)["id"] == 4 {
            break;
        }
    }
    send(json!({"jsonrpc": "2.0", "method": "exit"}));
    assert!(child.wait().unwrap().success());
}

#[test]
fn cancelling_a_run_request_stops_the_runner() {
    let temp = tempfile::tempdir().unwrap();
    let manifest = fake_repository(temp.path());
    // A runner that hangs until it is stopped.
    let runner = temp.path().join("bin/opencode");
    std::fs::write(&runner, "#!/bin/sh\necho \"$$\" > \"$WORKBENCH_OUTPUT_DIR/../runner.pid\"\nexec sleep 30\n")
        .unwrap();
    let path = format!("{}:{}", temp.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
        .env("PATH", path)
        .env("OPENAI_API_KEY", "sk-test")
        .env("WORKBENCH_HOME", temp.path().join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |value: Value| {
        stdin.write_all(&frame(&value.to_string())).unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
    let uri = format!("file://{}", manifest.display());
    send(json!({"jsonrpc": "2.0", "id": 7, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "task": "wait"}]}}));
    let started = std::time::Instant::now();
    let mut cancelled_sent = false;
    let response = loop {
        let message = read_message(&mut stdout);
        if message["method"] == "workbench/runEvent"
            && message["params"]["event"]["type"] == "run.ready"
            && !cancelled_sent
        {
            send(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}}));
            cancelled_sent = true;
        }
        if message["id"] == 7 {
            break message;
        }
    };
    assert!(started.elapsed().as_secs() < 20, "the run was not stopped");
    assert_eq!(response["result"]["ending"]["status"], "cancelled", "{response}");
    send(json!({"jsonrpc": "2.0", "id": 8, "method": "shutdown"}));
    while read_message(&mut stdout)["id"] != 8 {}
    send(json!({"jsonrpc": "2.0", "method": "exit"}));
    assert!(child.wait().unwrap().success());
}

/// A package whose docker runtime builds a tiny image: busybox and a fake `opencode`.
fn docker_repository(dir: &std::path::Path, host_engine: bool) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let package = dir.join("repo/.workbenches/boxed");
    let rootfs = package.join("image/rootfs");
    std::fs::create_dir_all(rootfs.join("bin")).unwrap();
    std::fs::create_dir_all(rootfs.join("usr/local/bin")).unwrap();
    std::fs::copy("/bin/busybox", rootfs.join("bin/busybox")).ok()?;
    for applet in ["sh", "echo", "cat"] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).unwrap();
    }
    let runner = rootfs.join("usr/local/bin/opencode");
    std::fs::write(
        &runner,
        "#!/bin/sh\necho '{\"type\":\"text\",\"part\":{\"id\":\"t\",\"text\":\"from the container\"}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
    if host_engine {
        // The host's docker CLI and the C library it links, so the container can talk to the bound engine.
        for (from, to) in [
            ("/usr/bin/docker", "usr/local/bin/docker"),
            ("/lib/x86_64-linux-gnu/libc.so.6", "lib/x86_64-linux-gnu/libc.so.6"),
            ("/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2"),
        ] {
            let target = rootfs.join(to);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(from, &target).ok()?;
        }
    }
    // A unique file, so every test run builds its own image (progress shows the build's steps).
    std::fs::write(package.join("image/nonce.txt"), format!("{:?}", std::time::SystemTime::now())).unwrap();
    std::fs::write(
        package.join("image/Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nCOPY nonce.txt /nonce.txt\nENV PATH=/usr/local/bin:/bin\n",
    )
    .unwrap();
    std::fs::write(
        package.join("workbench.yml"),
        format!(
            "spec: 1\nversion: 0.1.0\nname: boxed\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nruntimes:\n  docker:\n    image:\n      build: ./image/Dockerfile\n      context: ./image\n{}",
            if host_engine { "    docker:\n      engine:\n        mode: host\n" } else { "" }
        ),
    )
    .unwrap();
    std::fs::write(package.join("instructions.md"), "# Boxed\n").unwrap();
    Some(package.join("workbench.yml"))
}

#[test]
fn the_editor_smokes_and_runs_a_docker_workbench_with_build_progress() {
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return;
    }
    let engine = Command::new("docker").arg("info").stdout(Stdio::null()).stderr(Stdio::null()).status();
    assert!(
        engine.is_ok_and(|s| s.success()),
        "a Docker engine is needed (scripts/test.sh starts dockerd); set WB_LSP_SKIP_DOCKER_TESTS=1 to skip"
    );
    let temp = tempfile::tempdir().unwrap();
    let manifest = docker_repository(temp.path(), false).expect("Debian's busybox-static (/bin/busybox) is needed");
    let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
        .env("OPENAI_API_KEY", "sk-docker-canary-51c2")
        .env("WORKBENCH_HOME", temp.path().join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |value: Value| {
        stdin.write_all(&frame(&value.to_string())).unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
    let uri = format!("file://{}", manifest.display());
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
        "params": {"command": "workbench.smoke", "arguments": [{"uri": uri}], "workDoneToken": "smoke"}}));
    let mut messages = Vec::new();
    let smoke = loop {
        let message = read_message(&mut stdout);
        if message["id"] == 2 {
            break message;
        }
        messages.push(message);
    };
    assert_eq!(smoke["result"][0]["status"], "ready", "{smoke}");
    assert_eq!(smoke["result"][0]["runtime"], "docker", "{smoke}");
    let reports: Vec<String> = messages
        .iter()
        .filter(|m| m["method"] == "$/progress" && m["params"]["token"] == "smoke")
        .filter_map(|m| m["params"]["value"]["message"].as_str().map(str::to_owned))
        .collect();
    assert!(reports.iter().any(|m| m.starts_with("Building image wb-lsp/boxed:")), "{reports:?}");
    assert!(reports.iter().any(|m| m.starts_with("Step 1/")), "{reports:?}");
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "task": "hello"}], "workDoneToken": "run"}}));
    let mut events = Vec::new();
    let mut reports = Vec::new();
    let run = loop {
        let message = read_message(&mut stdout);
        if message["id"] == 3 {
            break message;
        }
        if message["method"] == "workbench/runEvent" {
            events.push(message["params"]["event"]["type"].as_str().unwrap_or_default().to_owned());
        }
        if message["method"] == "$/progress" && message["params"]["token"] == "run" {
            reports.push(message["params"]["value"]["message"].as_str().unwrap_or_default().to_owned());
        }
    };
    assert_eq!(run["result"]["ending"]["status"], "completed", "{run}");
    assert_eq!(run["result"]["finalText"], "from the container");
    assert_eq!(events.first().map(String::as_str), Some("run.started"));
    assert_eq!(events.last().map(String::as_str), Some("run.completed"));
    assert!(
        reports.iter().any(|m| m.starts_with("Using cached image wb-lsp/boxed:")),
        "the image is reused: {reports:?}"
    );
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}));
    while read_message(&mut stdout)["id"] != 4 {}
    send(json!({"jsonrpc": "2.0", "method": "exit"}));
    assert!(child.wait().unwrap().success());
}

#[test]
fn host_engine_access_reaches_the_engine_from_inside_the_container() {
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let Some(manifest) = docker_repository(temp.path(), true) else {
        panic!("this test needs /bin/busybox (busybox-static) and the host's docker CLI (docker.io)");
    };
    let smoke = |allow: bool| {
        let mut args = vec!["smoke".to_owned(), manifest.parent().unwrap().display().to_string(), "--json".to_owned()];
        if allow {
            args.push("--allow-host-docker".to_owned());
        }
        let output = isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
            .args(&args)
            .env("OPENAI_API_KEY", "sk-test")
            .env("WORKBENCH_HOME", temp.path().join("home"))
            .current_dir(temp.path().join("repo"))
            .output()
            .unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let (code, refused) = smoke(false);
    assert_eq!(code, Some(1), "{refused}");
    assert!(
        refused.contains("Host Docker engine access requires explicit --allow-host-docker authorization"),
        "{refused}"
    );
    // Granted: the socket is bound, DOCKER_HOST is set, and the in-image docker CLI's request reaches the engine.
    let (code, ready) = smoke(true);
    assert_eq!(code, Some(0), "{ready}");
    let report: Value = serde_json::from_str(ready.lines().next().unwrap_or("{}")).unwrap();
    assert_eq!(report["status"], "ready", "{report}");
    assert_eq!(report["docker_engine"], "host", "{report}");
}

/// Reads until both the response to `id` and one error reply without an id (a parse error) have arrived, in
/// either order (they travel on separate queues); nothing else may arrive.
fn response_and_parse_error(session: &mut Client, id: i64) -> (Value, Value) {
    let (mut response, mut error) = (None, None);
    while response.is_none() || error.is_none() {
        let message = session.receive(&format!("the response to {id} and a parse error"));
        if message["id"] == id && message.get("method").is_none() {
            response = Some(message);
        } else if message["id"] == Value::Null && message.get("error").is_some() && error.is_none() {
            error = Some(message);
        } else {
            panic!("unexpected message: {message}");
        }
    }
    (response.unwrap_or_default(), error.unwrap_or_default())
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"capabilities": {}}})
}

#[test]
fn a_bad_content_length_is_answered_and_the_reader_resynchronises() {
    let mut session = Client::spawn(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")));
    // A value that is not a number: the body's length is unknown, so the reader looks for the next frame.
    let lost = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}).to_string();
    session.send_bytes(format!("Content-Length: 12x\r\n\r\n{lost}").as_bytes());
    session.send(&initialize(2));
    let (response, error) = response_and_parse_error(&mut session, 2);
    assert_eq!(response["result"]["serverInfo"]["name"], "wb-lsp", "{response}");
    assert_eq!(error["error"]["code"], -32700);
    assert_eq!(error["error"]["message"], "Parse error: invalid Content-Length header: \"12x\"");

    // A header line longer than the cap is refused the same way; the frame's own Content-Length still counts.
    let hover = json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}).to_string();
    let long = "a".repeat(10_000);
    session.send_bytes(format!("X-Padding: {long}\r\nContent-Length: {}\r\n\r\n{hover}", hover.len()).as_bytes());
    let (response, error) = response_and_parse_error(&mut session, 3);
    assert_eq!(response["result"], Value::Null, "{response}");
    assert_eq!(error["error"]["code"], -32700);
    assert_eq!(error["error"]["message"], "Parse error: a header line is longer than 8192 bytes");

    // A header block without any Content-Length is refused too.
    session.send_bytes(b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}");
    session.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}));
    let (_, error) = response_and_parse_error(&mut session, 4);
    assert_eq!(error["error"]["message"], "Parse error: the header has no Content-Length");
    session.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
    let status = session.wait(std::time::Duration::from_secs(10)).expect("the server exits");
    assert!(status.success(), "{status:?}");
}

/// How a session ends in [`a_run_outlives_the_session_that_started_it`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum SessionEnd {
    ShutdownThenExit,
    ClientGone,
    Killed,
}

fn end_a_session_during_a_run(end: SessionEnd) {
    let temp = tempfile::tempdir().unwrap();
    let manifest = fake_repository(temp.path());
    // A runner that records its pid and hangs until it is stopped.
    let pid_file = temp.path().join("runner.pid");
    std::fs::write(
        temp.path().join("bin/opencode"),
        format!("#!/bin/sh\necho \"$$\" > '{}'\nexec sleep 60\n", pid_file.display()),
    )
    .unwrap();
    let path = format!("{}:{}", temp.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let home = temp.path().join("home");
    let mut session = Client::spawn(
        Command::new(env!("CARGO_BIN_EXE_wb-lsp"))
            .env("PATH", &path)
            .env("OPENAI_API_KEY", "sk-test")
            .env("WORKBENCH_HOME", &home),
    );
    session.send(&initialize(1));
    session.response(1);
    let uri = format!("file://{}", manifest.display());
    session.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "task": "wait"}]}}));
    let run_id = loop {
        let message = session.receive("run.ready");
        if message["method"] == "workbench/runEvent" && message["params"]["event"]["type"] == "run.ready" {
            break message["params"]["event"]["run_id"].as_str().unwrap().to_owned();
        }
    };
    let runner: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|text| text.trim().parse().ok()) {
            break pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let started = std::time::Instant::now();
    match end {
        SessionEnd::ShutdownThenExit => {
            session.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "shutdown"}));
            session.response(8);
            // `shutdown` lets go of the run, whose command answers that it goes on.
            let (run, _) = session.response(7);
            let message = run["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(&format!("run {run_id} goes on")), "{run}");
            session.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
        }
        SessionEnd::ClientGone => session.close_stdin(),
        SessionEnd::Killed => {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(session.pid()).unwrap());
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
        }
    }
    let status = session.wait(std::time::Duration::from_secs(15));
    assert!(status.is_some(), "{end:?}: the server outlived the session");
    assert!(started.elapsed().as_secs() < 15);
    // The run goes on under its supervisor, with its runner; it is listed, and `kill` ends it.
    let alive = |pid: i32| Command::new("kill").args(["-0", &pid.to_string()]).stderr(Stdio::null()).status().unwrap();
    assert!(alive(runner).success(), "{end:?}: the run stopped with the session");
    let wb = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wb-lsp")).args(args).env("WORKBENCH_HOME", &home).output().unwrap()
    };
    let listed: Value = serde_json::from_slice(&wb(&["runs", "--json"]).stdout).unwrap();
    assert_eq!((listed[0]["run_id"].as_str(), listed[0]["state"].as_str()), (Some(run_id.as_str()), Some("running")));
    let killed = wb(&["kill", &run_id]);
    assert!(killed.status.success(), "{killed:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while alive(runner).success() {
        assert!(std::time::Instant::now() < deadline, "{end:?}: the killed run's runner {runner} lives on");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_run_outlives_the_session_that_started_it() {
    end_a_session_during_a_run(SessionEnd::ShutdownThenExit);
    end_a_session_during_a_run(SessionEnd::ClientGone);
    end_a_session_during_a_run(SessionEnd::Killed);
}

/// `exit` without `shutdown` ends the process with status 1, as the LSP specification asks (before and after
/// `initialize`); with `shutdown` first, 0 (see the first test).
#[test]
fn exit_without_shutdown_ends_with_status_1() {
    for initialized in [true, false] {
        let mut session = Client::spawn(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")));
        if initialized {
            session.send(&initialize(1));
            session.response(1);
            session.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        }
        session.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
        let status = session.wait(std::time::Duration::from_secs(20)).expect("the server exits");
        assert_eq!(status.code(), Some(1), "initialized: {initialized}: {status:?}");
    }
}

/// `workbench.applyOutcome` writes the workspace, so a `$/cancelRequest` sent with it (in the same write, so
/// the server reads both before the apply can finish) does not turn its answer into "cancelled": the answer
/// is the apply's real result, and it agrees with the receipt (before, the server answered `RequestCancelled`
/// while the receipt said `applied`).
#[test]
fn an_apply_cancelled_at_once_answers_with_what_it_did() {
    let temp = tempfile::tempdir().unwrap();
    let manifest = fake_repository(temp.path());
    let path = format!("{}:{}", temp.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let home = temp.path().join("home");
    let mut session = Client::spawn(
        Command::new(env!("CARGO_BIN_EXE_wb-lsp"))
            .env("PATH", path)
            .env("OPENAI_API_KEY", "sk-test")
            .env("WORKBENCH_HOME", &home),
    );
    session.send(&initialize(1));
    session.response(1);
    let uri = format!("file://{}", manifest.display());
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "task": "say done"}]}}));
    let (run, _) = session.response(2);
    let outcome = run["result"]["outcomeId"].as_str().expect("the run committed an outcome").to_owned();
    // Treat it as an isolated result not yet accepted (what an E2B or Daytona run records).
    let receipt = home.join("outcomes").join(&outcome).join("application.json");
    let pending =
        json!({"version": 1, "outcome_id": outcome, "state": "pending", "updated_at": "2026-01-01T00:00:00Z"});
    std::fs::write(&receipt, pending.to_string()).unwrap();

    let apply = json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand",
        "params": {"command": "workbench.applyOutcome", "arguments": [{"id": outcome}]}});
    let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 3}});
    let shutdown = json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"});
    let bytes = [apply, cancel, shutdown].iter().flat_map(|message| frame(&message.to_string())).collect::<Vec<u8>>();
    session.send_bytes(&bytes);
    // `shutdown` may be answered first: the apply is not cancelled by it either.
    let (answer, before) = session.response(3);
    if !before.iter().any(|message| message["id"] == 4) {
        session.response(4);
    }
    assert!(answer.get("error").is_none(), "the answer must say what was done, not `cancelled`: {answer}");
    let state = serde_json::from_str::<Value>(&std::fs::read_to_string(&receipt).unwrap()).unwrap()["state"].clone();
    assert_eq!(state, "applied", "the answer came once the apply was done");
    assert_eq!(answer["result"]["outcomeId"], json!(outcome), "{answer}");
    assert_eq!((answer["result"]["applied"].clone(), answer["result"]["unchanged"].clone()), (json!(0), json!(0)));
    session.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
    let status = session.wait(std::time::Duration::from_secs(20)).expect("the server exits");
    assert!(status.success(), "{status:?}");
}

/// `workbench.kill` signals a run, so a `$/cancelRequest` sent with it (in the same write) does not turn its
/// answer into "cancelled" while the run is cancelled anyway: the answer says the run was asked to stop, and it
/// stops. (On the cancellable pool the answer was `RequestCancelled`, or the kill never sent.)
#[test]
fn a_kill_cancelled_at_once_still_stops_the_run_and_says_so() {
    let temp = tempfile::tempdir().unwrap();
    let manifest = fake_repository(temp.path());
    std::fs::write(temp.path().join("bin/opencode"), "#!/bin/sh\nexec sleep 60\n").unwrap();
    let path = format!("{}:{}", temp.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut session = Client::spawn(
        Command::new(env!("CARGO_BIN_EXE_wb-lsp"))
            .env("PATH", &path)
            .env("OPENAI_API_KEY", "sk-test")
            .env("WORKBENCH_HOME", temp.path().join("home")),
    );
    session.send(&initialize(1));
    session.response(1);
    let uri = format!("file://{}", manifest.display());
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "task": "wait"}]}}));
    let run_id = loop {
        let message = session.receive("run.ready");
        if message["method"] == "workbench/runEvent" && message["params"]["event"]["type"] == "run.ready" {
            break message["params"]["event"]["run_id"].as_str().unwrap().to_owned();
        }
    };
    let kill = json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand",
        "params": {"command": "workbench.kill", "arguments": [{"runId": run_id}]}});
    let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 3}});
    let bytes = [kill, cancel].iter().flat_map(|message| frame(&message.to_string())).collect::<Vec<u8>>();
    session.send_bytes(&bytes);
    let (answer, _) = session.response(3);
    assert_eq!(answer["result"], json!({"runId": run_id, "asked": true}), "{answer}");
    let (run, _) = session.response(2);
    assert_eq!(run["result"]["ending"]["status"], "cancelled", "{run}");
}

/// A server whose binary was replaced while it runs (an upgrade, a rebuild) still starts its runs' supervisors:
/// they run the very binary the server is.
#[test]
fn a_server_whose_binary_was_replaced_still_runs() {
    let temp = tempfile::tempdir().unwrap();
    let manifest = fake_repository(temp.path());
    let copy = temp.path().join("wb-lsp");
    std::fs::copy(env!("CARGO_BIN_EXE_wb-lsp"), &copy).unwrap();
    let path = format!("{}:{}", temp.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut session = Client::spawn(
        Command::new(&copy)
            .env("PATH", &path)
            .env("OPENAI_API_KEY", "sk-test")
            .env("WORKBENCH_HOME", temp.path().join("home")),
    );
    session.send(&initialize(1));
    session.response(1);
    std::fs::remove_file(&copy).unwrap();
    let uri = format!("file://{}", manifest.display());
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "task": "say done"}]}}));
    let (run, _) = session.response(2);
    assert_eq!(run["result"]["ending"]["status"], "completed", "{run}");
    assert_eq!(run["result"]["finalText"], "done", "{run}");
}

/// Once a protocol runs, descriptor 0 reads `/dev/null` and descriptor 1 writes to stderr (the protocol has
/// private copies), so a child process that inherits them, or a stray print, cannot read or write the protocol.
/// Both servers, the language server and the MCP server, and each still answers on the pipes.
#[cfg(target_os = "linux")]
#[test]
fn the_protocol_moves_off_descriptors_0_and_1() {
    use std::io::BufRead;
    use std::path::PathBuf;

    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let log = root.join("stderr.log");
    let root_arg = root.display().to_string();
    for (args, framed) in [(vec![], true), (vec!["mcp", "--root", root_arg.as_str()], false)] {
        let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let answer = if framed {
            let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}});
            stdin.write_all(&frame(&initialize.to_string())).unwrap();
            stdin.flush().unwrap();
            read_message(&mut stdout)
        } else {
            let params = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "wb-lsp-tests", "version": "1.0.0"}});
            let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params});
            writeln!(stdin, "{initialize}").unwrap();
            stdin.flush().unwrap();
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            serde_json::from_str(&line).unwrap()
        };
        assert_eq!(answer["id"], 1, "{args:?}: {answer}");
        assert!(answer["result"].is_object(), "{args:?}: {answer}");
        let descriptor = |n: u32| std::fs::read_link(format!("/proc/{}/fd/{n}", child.id())).unwrap();
        assert_eq!(descriptor(0), PathBuf::from("/dev/null"), "{args:?}");
        assert_eq!(descriptor(1), log, "{args:?}");
        drop(stdin);
        assert!(child.wait().unwrap().success(), "{args:?}");
    }
}

/// A client may start the server with descriptor 2 closed: the protocol's copies must not land there (and so on
/// descriptor 1 too). `/dev/null` takes descriptors 1 and 2 (the standard library opens it on a closed standard
/// descriptor at start-up), and the server answers.
#[cfg(target_os = "linux")]
#[test]
fn a_server_started_without_stderr_keeps_the_protocol_to_itself() {
    use std::path::PathBuf;

    let mut child = isolate(&mut Command::new("sh"))
        .args(["-c", "exec 2>&-; exec \"$0\"", env!("CARGO_BIN_EXE_wb-lsp")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}});
    stdin.write_all(&frame(&initialize.to_string())).unwrap();
    stdin.flush().unwrap();
    let answer = read_message(&mut stdout);
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"].is_object(), "{answer}");
    let descriptor = |n: u32| std::fs::read_link(format!("/proc/{}/fd/{n}", child.id())).unwrap();
    for n in 0..3 {
        assert_eq!(descriptor(n), PathBuf::from("/dev/null"), "descriptor {n}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
