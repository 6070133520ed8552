//! The scenarios: memory, large-file latency, `check` throughput, workspace scale.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::stats::{Samples, measure_process, mib, ms, row};
use wb_testsupport::corpus::{self, LARGE_VARS};
use wb_testsupport::lsp::{Client, uri};

/// The peers, found through their variables (`scripts/install-peers.sh` prints them).
pub struct Peers {
    pub yaml_ls: Option<PathBuf>,
    pub check_jsonschema: Option<PathBuf>,
}

impl Peers {
    pub fn from_env() -> Peers {
        let var = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.exists());
        Peers { yaml_ls: var("WB_PEER_YAML_LS"), check_jsonschema: var("WB_PEER_CHECK_JSONSCHEMA") }
    }
}

/// The `wb-lsp` measured: the one `WB_BENCH_WB_LSP` names (another build, compared within one run), else the
/// product built from this tree ([`wb_testsupport::product`]).
pub fn wb_lsp() -> PathBuf {
    std::env::var_os("WB_BENCH_WB_LSP").map_or_else(wb_testsupport::product::wb_lsp, PathBuf::from)
}

/// Our generated spec 1 schema, which yaml-language-server and check-jsonschema validate against.
fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/v1/workbench.schema.json").canonicalize().expect("schema")
}

/// A server under measurement.
#[derive(Clone, Copy, PartialEq)]
enum Server<'a> {
    Wb,
    YamlLs(&'a Path),
    /// The bench itself as the least a server can be ([`crate::floor`]).
    Floor,
}

impl Server<'_> {
    fn start(self, root: &Path, pull: bool) -> (Client, Instant) {
        let mut capabilities = json!({
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "didChangeWatchedFiles": {"dynamicRegistration": true},
            },
            "window": {"workDoneProgress": true},
            "textDocument": {
                "publishDiagnostics": {"relatedInformation": true, "versionSupport": true},
                "completion": {"completionItem": {"snippetSupport": true, "documentationFormat": ["markdown"]}},
                "hover": {"contentFormat": ["markdown"]},
                "synchronization": {"didSave": true},
            },
        });
        if pull {
            capabilities["textDocument"]["diagnostic"] = json!({});
            capabilities["workspace"]["diagnostic"] = json!({"refreshSupport": true});
        }
        match self {
            Server::Wb => {
                let mut command = Command::new(wb_lsp());
                command.arg("--stdio");
                Client::start(command, root, capabilities, json!({"workbench": {}}))
            }
            Server::Floor => {
                let mut command = Command::new(std::env::current_exe().expect("the bench binary"));
                command.arg("--floor-server");
                Client::start(command, root, capabilities, json!({}))
            }
            Server::YamlLs(path) => {
                let mut command = Command::new(path);
                command.arg("--stdio");
                let schemas = json!({ uri(&schema()).to_string(): ["workbench.yml", "**/workbench.yml"] });
                let yaml = json!({
                    "schemas": schemas, "validate": true, "hover": true, "completion": true,
                    "format": {"enable": false}, "schemaStore": {"enable": false},
                });
                Client::start(command, root, capabilities, json!({"yaml": yaml}))
            }
        }
    }

    /// The version a publication is matched on (yaml-language-server sends none).
    fn version(self, version: i64) -> Option<i64> {
        match self {
            Server::Wb | Server::Floor => Some(version),
            Server::YamlLs(_) => None,
        }
    }
}

fn servers(peers: &Peers) -> Vec<Server<'_>> {
    let mut servers = vec![Server::Wb];
    servers.extend(peers.yaml_ls.as_deref().map(Server::YamlLs));
    servers
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).expect("manifest")
}

/// Opens every manifest and waits for its diagnostics; returns how many there were.
fn open_all(client: &mut Client, server: Server, manifests: &[PathBuf]) -> usize {
    for path in manifests {
        client.open(path, &text(path));
    }
    let wanted: Vec<_> = manifests.iter().map(|path| (uri(path), server.version(1))).collect();
    client.diagnostics(&wanted)
}

// ---------------------------------------------------------------------------------------------------------

/// Peak RSS with 10 normal and 2 large manifests open, then the same with 1,000 packages in the workspace.
pub fn memory(scratch: &Path, peers: &Peers) {
    println!("\nmemory: peak RSS of the server process (VmHWM)");
    for (label, normal) in
        [("10 normal + 2 large manifests open", 10), ("the same, 1,000 packages in the workspace", 1_000)]
    {
        let root = scratch.join(format!("memory-{normal}"));
        let repo = corpus::repository(&root, normal, &["large-a", "large-b"]);
        let open: Vec<PathBuf> = repo.normal.iter().take(10).chain(repo.large.iter()).cloned().collect();
        let mut figures = Vec::new();
        for server in servers(peers) {
            let (mut client, _) = server.start(&root, false);
            client.settle(Duration::from_millis(300));
            let (_, after_initialize) = client.memory_kib();
            let count = open_all(&mut client, server, &open);
            if server == Server::Wb {
                assert_eq!(count, 0, "the generated packages are clean");
            }
            client.settle(Duration::from_millis(500));
            let (peak, now) = client.memory_kib();
            figures.push(format!("{} (now {}, after initialize {})", mib(peak), mib(now), mib(after_initialize)));
            client.shutdown();
        }
        figures.resize(2, "skipped".to_owned());
        row(label, &figures[0], &figures[1]);
    }
}

/// Edit → diagnostics, completion and hover on the 10,000-line manifest.
pub fn large(scratch: &Path, peers: &Peers, samples: usize) {
    let root = scratch.join("large");
    let repo = corpus::repository(&root, 1, &["large"]);
    let path = repo.large[0].clone();
    let normal = repo.normal[0].clone();
    let lines = text(&path).lines().count();
    println!("\nlarge file: {lines} lines, {LARGE_VARS} env entries; each figure from send to answer");
    let middle = LARGE_VARS / 2;
    let key_line = corpus::large_var_line(middle);
    let value_line = key_line + 1;
    let mut results: Vec<Vec<String>> = Vec::new();
    for server in servers(peers) {
        let (mut client, _) = server.start(&root, false);
        client.settle(Duration::from_millis(300));
        let started = Instant::now();
        let count = open_all(&mut client, server, std::slice::from_ref(&path));
        let open = started.elapsed();
        if server == Server::Wb {
            assert_eq!(count, 0, "the large manifest is clean");
        }
        client.settle(Duration::from_millis(300));
        let edits = edit_latency(&mut client, server, &path, samples);
        // A normal manifest of the same workspace, for comparison.
        client.open(&normal, &text(&normal));
        client.diagnostics(&[(uri(&normal), server.version(1))]);
        client.settle(Duration::from_millis(300));
        let normal_edits = edit_latency(&mut client, server, &normal, samples);
        let mut request = |method: &str, line: u32, character: u32, check: &dyn Fn(&Value) -> bool| {
            let mut times = Vec::new();
            let mut answered = 0;
            for _ in 0..samples {
                let params =
                    json!({"textDocument": {"uri": uri(&path)}, "position": {"line": line, "character": character}});
                let (result, elapsed) = client.request(method, params);
                if server == Server::Wb {
                    assert!(check(&result), "{method} at {line}:{character}: {result}");
                }
                answered += usize::from(check(&result));
                times.push(elapsed);
            }
            // A peer's answers are timed whatever they hold; the note says how many held what ours must.
            let note = if answered == samples { String::new() } else { format!(", {answered}/{samples} answered") };
            format!("{}{note}", Samples::new(times).summary())
        };
        let has_items = |labels: &'static [&'static str]| {
            move |result: &Value| {
                let items = result.get("items").or(Some(result)).and_then(Value::as_array).cloned().unwrap_or_default();
                labels.iter().all(|label| items.iter().any(|item| item["label"] == *label))
            }
        };
        let value = request("textDocument/completion", value_line, 14, &has_items(&["true", "false"]));
        let key = request("textDocument/completion", value_line, 4, &has_items(&["required"]));
        let has_contents = |r: &Value| r.get("contents").is_some_and(|c| !c.is_null() && c.as_str() != Some(""));
        let hover_key = request("textDocument/hover", value_line, 6, &has_contents);
        let hover_var = request("textDocument/hover", key_line, 4, &has_contents);
        results.push(vec![normal_edits.summary(), ms(open), edits.summary(), value, key, hover_key, hover_var]);
        client.shutdown();
    }
    // The floor of an edit's round trip here: the same client, document and pauses, a server that does nothing.
    let (mut client, _) = Server::Floor.start(&root, false);
    client.open(&normal, &text(&normal));
    client.diagnostics(&[(uri(&normal), Some(1))]);
    client.settle(Duration::from_millis(300));
    let floor = edit_latency(&mut client, Server::Floor, &normal, samples);
    client.shutdown();
    let labels = [
        "edit → diagnostics, a normal manifest (30 lines)".to_owned(),
        "open → diagnostics".to_owned(),
        "edit → diagnostics (description, line 5)".to_owned(),
        format!("completion of a value (`required: `, line {})", value_line + 1),
        format!("completion of a key (line {})", value_line + 1),
        format!("hover on a key (`required`, line {})", value_line + 1),
        format!("hover on an env name (`VAR_{middle}`, line {})", key_line + 1),
    ];
    for (i, label) in labels.iter().enumerate() {
        let peer = results.get(1).map_or("skipped".to_owned(), |r| r[i].clone());
        row(label, &results[0][i], &peer);
    }
    row("the floor: edit → diagnostics from a server that does nothing", &floor.summary(), "");
}

/// Edits `description: Generated …` (line 4) `samples` times, each one incremental change flipping the
/// word's case, and times each from sending it to its diagnostics.
fn edit_latency(client: &mut Client, server: Server, path: &Path, samples: usize) -> Samples {
    let mut edits = Vec::new();
    for edit in 0..samples {
        let version = edit as i64 + 2;
        let word = if edit % 2 == 0 { "GENERATED" } else { "Generated" };
        let started = Instant::now();
        client.change(path, version, corpus::DESCRIPTION_LINE, 13, word);
        let count = client.diagnostics(&[(uri(path), server.version(version))]);
        edits.push(started.elapsed());
        if server == Server::Wb {
            assert_eq!(count, 0, "the edited manifest stays clean");
        }
        client.settle(Duration::from_millis(if matches!(server, Server::YamlLs(_)) { 100 } else { 30 }));
    }
    Samples::new(edits)
}

/// `wb-lsp check` on 300 and 3,000 packages, whole processes; check-jsonschema on the same manifests.
pub fn check(scratch: &Path, peers: &Peers) {
    println!("\ncheck: whole processes, spawn to exit; peak RSS from getrusage");
    for (count, runs, peer_runs) in [(300, 30, 3), (3_000, 10, 1)] {
        let root = scratch.join(format!("check-{count}"));
        let repo = corpus::repository(&root, count, &[]);
        let (ours, rss, code) = measure_process(&wb_lsp(), &["check".to_owned(), root.display().to_string()], runs);
        assert_eq!(code, 0, "the generated packages are clean");
        let peer = match &peers.check_jsonschema {
            Some(peer) => {
                let mut args = vec!["--schemafile".to_owned(), schema().display().to_string()];
                args.extend(repo.normal.iter().map(|p| p.display().to_string()));
                let (theirs, rss, code) = measure_process(peer, &args, peer_runs);
                assert_eq!(code, 0, "check-jsonschema accepts the generated manifests");
                let ratio = theirs.median().as_secs_f64() / ours.median().as_secs_f64();
                format!("{} {} ({ratio:.0}x wb-lsp's time)", theirs.summary(), mib(rss))
            }
            None => "skipped".to_owned(),
        };
        row(&format!("check {count} packages"), &format!("{} {}", ours.summary(), mib(rss)), &peer);
    }
    // Packages that carry problems: the diagnostics, their "did you mean"s and fixes, and the JSON written.
    let root = scratch.join("check-problems");
    let manifests = corpus::problem_repository(&root, 300);
    let args = ["check".to_owned(), "--format".to_owned(), "json".to_owned(), root.display().to_string()];
    let output = Command::new(wb_lsp()).args(&args).output().expect("check");
    assert_eq!(output.status.code(), Some(1), "the packages carry errors");
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON output");
    let text = json.to_string();
    for code in ["unsupported-runner", "unknown-model", "missing-build-file", "duplicate-key"] {
        assert_eq!(text.matches(&format!("\"{code}\"")).count(), 300, "every package reports {code}");
    }
    let (ours, rss, _) = measure_process(&wb_lsp(), &args, 30);
    let peer = match &peers.check_jsonschema {
        Some(peer) => {
            let mut args = vec!["--schemafile".to_owned(), schema().display().to_string()];
            args.extend(manifests.iter().map(|p| p.display().to_string()));
            let (theirs, rss, _) = measure_process(peer, &args, 3);
            let ratio = theirs.median().as_secs_f64() / ours.median().as_secs_f64();
            format!("{} {} ({ratio:.0}x wb-lsp's time)", theirs.summary(), mib(rss))
        }
        None => "skipped".to_owned(),
    };
    let label = format!("check 300 packages with problems (--format json, {} KB)", output.stdout.len() / 1000);
    row(&label, &format!("{} {}", ours.summary(), mib(rss)), &peer);
}

/// Peak RSS over a whole editing session: 10 normal and 2 large manifests open, then both large ones edited in
/// turn as a person types (each incremental change followed at once by a completion request, the checks of the
/// changes running meanwhile), hovered, and every fifth round replaced whole (a full change).
pub fn session(scratch: &Path, samples: usize) {
    println!("\nsession: peak RSS of the server over an editing session (wb-lsp only)");
    let root = scratch.join("session");
    let repo = corpus::repository(&root, 10, &["large-a", "large-b"]);
    let open: Vec<PathBuf> = repo.normal.iter().chain(repo.large.iter()).cloned().collect();
    let (mut client, started) = Server::Wb.start(&root, false);
    assert_eq!(open_all(&mut client, Server::Wb, &open), 0, "the generated packages are clean");
    let (after_open, _) = client.memory_kib();
    let value_line = corpus::large_var_line(LARGE_VARS / 2) + 1;
    let at = |path: &Path, character: u32| json!({"textDocument": {"uri": uri(path)}, "position": {"line": value_line, "character": character}});
    let mut versions = vec![1i64; repo.large.len()];
    let mut edits = 0;
    for round in 0..samples {
        for (i, path) in repo.large.iter().enumerate() {
            for keystroke in 0..5 {
                let word = if (round + keystroke) % 2 == 0 { "GENERATED" } else { "Generated" };
                versions[i] += 1;
                client.change(path, versions[i], corpus::DESCRIPTION_LINE, 13, word);
                let flag = if (round + keystroke) % 2 == 0 { "false" } else { "true " };
                versions[i] += 1;
                client.change(path, versions[i], value_line, 14, flag);
                let (completion, _) = client.request("textDocument/completion", at(path, 14));
                assert!(completion.to_string().contains("false"), "completion answers");
                edits += 2;
            }
            if round % 5 == 0 {
                versions[i] += 1;
                let word = if round % 2 == 0 { "GENERATED" } else { "Generated" };
                client.change_full(path, versions[i], &text(path).replace("Generated", word));
                edits += 1;
            }
            let (hover, _) = client.request("textDocument/hover", at(path, 6));
            assert!(!hover.is_null(), "hover answers");
        }
    }
    // The last checks finish (their publications may have arrived during the last requests).
    client.settle(Duration::from_millis(500));
    let (peak, now) = client.memory_kib();
    let label = format!("{edits} edits of the 2 large manifests, completion, hover");
    let figure = format!("peak {} (now {}, after opening {})", mib(peak), mib(now), mib(after_open));
    row(&label, &figure, &format!("session {}", ms(started.elapsed())));
    // Then three rounds of whole-text changes of both large manifests (a paste, a formatter, a branch switch),
    // both sent before either is checked: one adds an error to every `env` entry (2,500 of them, capped in the
    // publication) and the next takes them away again. The old and new trees and diagnostics meet.
    let clean: Vec<String> = repo.large.iter().map(|path| text(path)).collect();
    for round in 0..6 {
        let broken = round % 2 == 0;
        for (i, path) in repo.large.iter().enumerate() {
            versions[i] += 1;
            let full = if broken { clean[i].replace("required: true", "required: \"yes\"") } else { clean[i].clone() };
            client.change_full(path, versions[i], &full);
        }
        let wanted: Vec<_> =
            repo.large.iter().zip(&versions).map(|(path, version)| (uri(path), Server::Wb.version(*version))).collect();
        let found = client.diagnostics(&wanted);
        assert_eq!(found > 0, broken, "{found} diagnostics in round {round}");
    }
    client.settle(Duration::from_millis(500));
    let (peak, now) = client.memory_kib();
    let figure = format!("peak {} (now {}, after opening {})", mib(peak), mib(now), mib(after_open));
    row("then 3 rounds of full changes of both: 2,500 errors each, then fixed", &figure, "");
    client.shutdown();
}

/// Opening a folder of 1,000 packages (push and pull), and what one change rechecks.
pub fn workspace(scratch: &Path) {
    println!("\nworkspace: a folder with 1,000 packages (wb-lsp only: the peer checks open files only)");
    let root = scratch.join("workspace");
    let repo = corpus::repository(&root, 1_000, &[]);
    let all: Vec<_> = repo.normal.iter().map(|path| (uri(path), None)).collect();

    let (mut client, initialized) = Server::Wb.start(&root, false);
    let count = client.diagnostics(&all);
    let elapsed = initialized.elapsed();
    assert_eq!(count, 0, "the generated packages are clean");
    client.settle(Duration::from_millis(300));
    let progress = client.progress.join(",");
    row("initialized → diagnostics of 1,000 packages (push)", &format!("{} (progress: {progress})", ms(elapsed)), "");

    // One package's instructions change on disk: only that package depends on them.
    let changed = repo.normal[500].parent().expect("package").join("instructions.md");
    for (label, path) in
        [("instructions.md of one package changes", changed), ("one closed manifest changes", repo.normal[501].clone())]
    {
        let mut bytes = std::fs::read(&path).expect("file");
        bytes.extend_from_slice(b"\n");
        std::fs::write(&path, bytes).expect("write");
        let started = Instant::now();
        client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": uri(&path), "type": 2}]}));
        let mut first = None;
        let mut published = 0;
        while let Some(message) = client.next(Duration::from_millis(300)) {
            if message.get("method").and_then(Value::as_str) == Some("textDocument/publishDiagnostics") {
                published += 1;
                first.get_or_insert_with(|| started.elapsed());
            }
        }
        let first = first.map_or("none".to_owned(), ms);
        row(label, &format!("{published} package(s) republished, first after {first}"), "");
    }
    client.shutdown();

    let (mut client, initialized) = Server::Wb.start(&root, true);
    let (result, _) = client.request("workspace/diagnostic", json!({"previousResultIds": []}));
    let elapsed = initialized.elapsed();
    let items = result["items"].as_array().map_or(0, Vec::len);
    assert!(items >= 1_000, "a report per package: {items}");
    row("initialized → workspace/diagnostic answered (pull)", &format!("{} ({items} reports)", ms(elapsed)), "");
    client.shutdown();
}
