//! Valid packages that would cost gigabytes in the editor (issue 40, "a budget per document"): the real binary
//! over stdio, a long `tools` list in a 1 MB and a 4 MB manifest, a buffer over the 4 MiB manifest limit, and a
//! 4 MB instructions file naming hundreds of thousands of commands. Each answer is counted and measured, and the
//! server's peak memory (`VmHWM`) is held to a loose bound. Timings are printed (`--nocapture`), never asserted:
//! `docs/performance.md` has them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_testsupport::lsp::{Client, uri};

/// The loose bound on the server's peak resident memory (before the budget: 1.6 GB for the 1 MB outline).
const PEAK_KIB: u64 = 256 * 1024;

/// The bound for every request on a manifest of up to 4 MiB, whatever it holds (the issue's: under 64 MiB; a
/// 4 MB manifest of 1.4 million items peaked at 6.7 GB before the budget, and at 270 MiB before the node budget).
const PEAK_MANIFEST_KIB: u64 = 64 * 1024;

/// A valid manifest head; `tools` follows.
const HEAD: &str = "spec: 1\nversion: 0.1.0\nname: big\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
                    instructions: ./instructions.md\nruntimes:\n  local: {}\n";

/// A package in a fresh repository: the manifest's text and the instructions; returns (root, manifest).
fn package(dir: &Path, manifest: &str, instructions: &str) -> (PathBuf, PathBuf) {
    let root = dir.join("repo");
    let package = root.join(".workbenches/big");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("workbench.yml"), manifest).unwrap();
    std::fs::write(package.join("instructions.md"), instructions).unwrap();
    (root, package.join("workbench.yml"))
}

/// `tools: [a, a, …]` (flow) or `tools:\n  - a` lines (block), to about `bytes`.
fn long_tools(bytes: usize, flow: bool) -> String {
    let mut text = HEAD.to_owned();
    if flow {
        text.push_str("tools: [a");
        while text.len() + 4 < bytes {
            text.push_str(", a");
        }
        text.push_str("]\n");
    } else {
        text.push_str("tools:\n");
        while text.len() + 6 < bytes {
            text.push_str("  - a\n");
        }
    }
    text
}

fn server(root: &Path) -> Client {
    Client::start(Command::new(env!("CARGO_BIN_EXE_wb-lsp")), root, json!({}), json!({})).0
}

/// Sends a request and returns its result, the size of that result as JSON, and the milliseconds it took.
fn ask(client: &mut Client, method: &str, params: Value) -> (Value, usize, u128) {
    let (result, took) = client.request(method, params);
    let size = result.to_string().len();
    (result, size, took.as_millis())
}

/// Every symbol of an outline, at every level.
fn count_symbols(symbols: &Value) -> usize {
    symbols.as_array().map_or(0, |list| list.iter().map(|s| 1 + count_symbols(&s["children"])).sum())
}

/// The diagnostics published for `file`, waiting for its first publication.
/// (`version`: of the open document, or `None` for a file not open).
fn published(client: &mut Client, file: &Path, version: Option<i64>) -> Vec<Value> {
    let wanted = uri(file).to_string();
    loop {
        let message = client.next(wb_testsupport::lsp::TIMEOUT).expect("diagnostics are published");
        if message["method"] == "textDocument/publishDiagnostics"
            && message["params"]["uri"] == wanted.as_str()
            && message["params"]["version"].as_i64() == version
        {
            return message["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
        }
    }
}

/// Every feature that reads a manifest's structure, within the budget: the document is read up to its
/// 50,000th node (one `too-many-nodes` error where it stops), the outline lists the first hundred tools and one
/// "… and N more", and the tokens, folds, links and hints are capped.
fn every_feature_within_budget(bytes: usize, flow: bool) {
    let temp = tempfile::tempdir().unwrap();
    let text = long_tools(bytes, flow);
    assert!(text.len() <= wb_manifest::MAX_MANIFEST_BYTES, "under the manifest limit: {}", text.len());
    let (root, manifest) = package(temp.path(), &text, "# Big\n");
    let mut client = server(&root);
    // The server checks the workspace's packages as it starts; the buffer is opened after that check, so the
    // peak measured is one check's (two at once, of the disk's copy and the buffer, would be twice that).
    published(&mut client, &manifest, None);
    let started = Instant::now();
    client.open(&manifest, &text);
    let diagnostics = published(&mut client, &manifest, Some(1));
    let checked = started.elapsed().as_millis();
    let codes: Vec<&str> = diagnostics.iter().filter_map(|d| d["code"].as_str()).collect();
    assert_eq!(codes, ["too-many-nodes"], "only the node budget, nothing missing after it: {diagnostics:?}");
    let stop = &diagnostics[0]["range"]["start"];
    let stop_line = stop["line"].as_u64().unwrap() as usize;
    assert!(stop_line < text.lines().count(), "inside the text: {stop}");
    let (after_check, _) = client.memory_kib();
    let document = json!({"textDocument": {"uri": uri(&manifest)}});

    let (outline, outline_size, outline_ms) = ask(&mut client, "textDocument/documentSymbol", document.clone());
    let tools = outline.as_array().unwrap().iter().find(|s| s["name"] == "tools").expect("the tools symbol").clone();
    let children = tools["children"].as_array().unwrap();
    let written = if flow { text.matches(", a").count() + 1 } else { text.matches("\n  - a").count() };
    let read = wb_syntax::parse(text.as_bytes())
        .root
        .unwrap()
        .as_mapping()
        .unwrap()
        .get("tools")
        .unwrap()
        .as_sequence()
        .unwrap()
        .len();
    assert!(read < wb_syntax::NODE_BUDGET && read + 100 > wb_syntax::NODE_BUDGET, "{read} of {written} items read");
    assert_eq!(children.len(), wb_ide::MAX_OUTLINE_CHILDREN + 1, "the first items and one summary");
    assert_eq!(children[0]["name"], "a");
    let more = children.last().unwrap()["name"].as_str().unwrap();
    assert!(more.starts_with("… and ") && more.ends_with(" more"), "{more}");
    let omitted: usize = more.trim_start_matches("… and ").trim_end_matches(" more").parse().unwrap();
    assert_eq!(omitted + wb_ide::MAX_OUTLINE_CHILDREN, read, "every item read shown or counted");
    assert!(count_symbols(&outline) <= 2 * wb_ide::MAX_OUTLINE_SYMBOLS, "{}", count_symbols(&outline));
    assert!(outline_size < 256 * 1024, "the outline is {outline_size} bytes");

    let (tokens, tokens_size, tokens_ms) = ask(&mut client, "textDocument/semanticTokens/full", document.clone());
    let data = tokens["data"].as_array().unwrap();
    assert!(!data.is_empty() && data.len() <= 5 * wb_ide::MAX_TOKENS, "{} numbers", data.len());
    let (folds, folds_size, folds_ms) = ask(&mut client, "textDocument/foldingRange", document.clone());
    assert!(folds.as_array().unwrap().len() <= wb_ide::MAX_FOLDS);
    let (links, _, links_ms) = ask(&mut client, "textDocument/documentLink", document.clone());
    assert!(links.as_array().unwrap().len() <= wb_ide::MAX_LINKS);
    let whole = json!({"start": {"line": 0, "character": 0}, "end": {"line": text.lines().count(), "character": 0}});
    let (hints, _, hints_ms) =
        ask(&mut client, "textDocument/inlayHint", json!({"textDocument": {"uri": uri(&manifest)}, "range": whole}));
    assert!(hints.as_array().map_or(0, Vec::len) <= 3 * wb_ide::MAX_HINTS);
    let at_end = json!({"textDocument": {"uri": uri(&manifest)},
        "position": {"line": text.lines().count() - 1, "character": 3}});
    let (_, _, hover_ms) = ask(&mut client, "textDocument/hover", at_end.clone());
    let (_, _, completion_ms) = ask(&mut client, "textDocument/completion", at_end);
    let (peak, _) = client.memory_kib();
    eprintln!(
        "{} KB {}: check+publish {checked} ms (peak {} MiB); outline {outline_ms} ms ({outline_size} B); tokens {tokens_ms} ms \
         ({tokens_size} B); folding {folds_ms} ms ({folds_size} B); links {links_ms} ms; inlay {hints_ms} ms; \
         hover {hover_ms} ms; completion {completion_ms} ms; peak {} MiB",
        text.len() / 1000,
        if flow { "flow" } else { "block" },
        after_check / 1024,
        peak / 1024
    );
    assert!(peak < PEAK_MANIFEST_KIB, "the server peaked at {peak} KiB");
    client.shutdown();
}

#[test]
fn the_outline_of_a_one_megabyte_tools_list_is_summarised_within_budget() {
    every_feature_within_budget(1_000_000, true);
}

#[test]
fn every_feature_on_a_four_megabyte_manifest_is_within_budget() {
    every_feature_within_budget(wb_manifest::MAX_MANIFEST_BYTES - 64, true);
    every_feature_within_budget(wb_manifest::MAX_MANIFEST_BYTES - 64, false);
}

/// A buffer over the manifest limit gets the size diagnostic, and every feature answers without parsing it:
/// nothing, or nothing much. Before the budget a 37.8 MB buffer cost 49 s and 7.1 GB.
#[test]
fn an_editor_buffer_over_the_manifest_limit_is_never_parsed() {
    let temp = tempfile::tempdir().unwrap();
    let (root, manifest) = package(temp.path(), &long_tools(2_000, true), "# Big\n");
    let mut client = server(&root);
    let text = long_tools(3 * wb_manifest::MAX_MANIFEST_BYTES, true);
    client.open(&manifest, &text);
    let diagnostics = published(&mut client, &manifest, Some(1));
    let codes: Vec<&str> = diagnostics.iter().filter_map(|d| d["code"].as_str()).collect();
    assert_eq!(codes, ["file-too-large"], "{diagnostics:?}");
    let document = json!({"textDocument": {"uri": uri(&manifest)}});
    let position = json!({"textDocument": {"uri": uri(&manifest)}, "position": {"line": 9, "character": 10}});
    let whole = json!({"start": {"line": 0, "character": 0}, "end": {"line": 10, "character": 0}});
    let range = json!({"textDocument": {"uri": uri(&manifest)}, "range": whole});
    let options = json!({"tabSize": 2, "insertSpaces": true});
    for (method, params) in [
        ("textDocument/documentSymbol", document.clone()),
        ("textDocument/semanticTokens/full", document.clone()),
        ("textDocument/foldingRange", document.clone()),
        ("textDocument/documentLink", document.clone()),
        ("textDocument/inlayHint", range.clone()),
        ("textDocument/hover", position.clone()),
        ("textDocument/completion", position.clone()),
        ("textDocument/definition", position.clone()),
        ("textDocument/references", {
            let mut params = position.clone();
            params["context"] = json!({"includeDeclaration": true});
            params
        }),
        ("textDocument/documentHighlight", position.clone()),
        (
            "textDocument/selectionRange",
            json!({"textDocument": {"uri": uri(&manifest)},
            "positions": [{"line": 9, "character": 10}]}),
        ),
        ("textDocument/formatting", json!({"textDocument": {"uri": uri(&manifest)}, "options": options})),
    ] {
        let (result, size, _) = ask(&mut client, method, params);
        assert!(size < 1024, "{method} answered {size} bytes: {}", &result.to_string()[..size.min(200)]);
    }
    let (peak, _) = client.memory_kib();
    assert!(peak < PEAK_KIB, "the server peaked at {peak} KiB on a buffer it must not parse");
    client.shutdown();
}

/// A 4 MB instructions file that tells the agent to run 300,000 different commands: before the budget, 280,000
/// warnings (300 MB of JSON) republished on every edit of the manifest. Now the first hundred of the code and
/// one that counts the rest, in the editor and in `check --format json`.
#[test]
fn a_flood_of_prose_findings_is_capped_in_the_editor_and_in_check() {
    let temp = tempfile::tempdir().unwrap();
    let mut instructions = String::from("# Big\n\n```sh\n");
    let mut commands = 0;
    while instructions.len() < wb_manifest::MAX_MANIFEST_BYTES - 64 {
        instructions.push_str(&format!("tool{commands}\n"));
        commands += 1;
    }
    instructions.push_str("```\n");
    let manifest_text = long_tools(200, false);
    let (root, manifest) = package(temp.path(), &manifest_text, &instructions);
    let instructions_path = manifest.with_file_name("instructions.md");

    let started = Instant::now();
    let output = wb_testsupport::isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
        .args(["check", "--format", "json"])
        .arg(&root)
        .output()
        .unwrap();
    let check_ms = started.elapsed().as_millis();
    assert!(output.stdout.len() < 256 * 1024, "check wrote {} bytes", output.stdout.len());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let diagnostics = report["packages"][0]["diagnostics"].as_array().unwrap();
    let tools: Vec<&Value> = diagnostics.iter().filter(|d| d["code"] == "prose-undeclared-tool").collect();
    assert_eq!(tools.len(), wb_manifest::MAX_DIAGNOSTICS_PER_CODE + 1, "the first hundred and one that counts");
    assert_eq!(tools[0]["message"], "Command not declared in tools: tool0");
    let more = tools.last().unwrap();
    let expected = format!(
        "… and {} more prose-undeclared-tool diagnostics in this file (only the first 100 of each code are reported)",
        group(commands - wb_manifest::MAX_DIAGNOSTICS_PER_CODE)
    );
    assert_eq!(more["message"], expected.as_str());
    assert_eq!(more["severity"], "warning");
    assert_eq!(more["range"]["start"]["line"], 4 + wb_manifest::MAX_DIAGNOSTICS_PER_CODE, "at the first left out");

    let mut client = server(&root);
    let started = Instant::now();
    client.open(&manifest, &manifest_text);
    let published = published(&mut client, &instructions_path, None);
    let publish_ms = started.elapsed().as_millis();
    assert_eq!(published.len(), wb_manifest::MAX_DIAGNOSTICS_PER_CODE + 1);
    assert_eq!(published.last().unwrap()["message"], expected.as_str());
    // An edit of the manifest republishes the same bounded set.
    client.change(&manifest, 2, 2, 6, "bog");
    let started = Instant::now();
    let instructions_uri = uri(&instructions_path).to_string();
    let mut again = None;
    let mut rechecked = false;
    while let Some(message) = client.next(if rechecked { Duration::from_secs(2) } else { wb_testsupport::lsp::TIMEOUT })
    {
        if message["method"] != "textDocument/publishDiagnostics" {
            continue;
        }
        if message["params"]["uri"] == instructions_uri.as_str() {
            again = message["params"]["diagnostics"].as_array().cloned();
        } else if message["params"]["uri"] == uri(&manifest).to_string().as_str() && message["params"]["version"] == 2 {
            rechecked = true;
            eprintln!("the edit's check published in {} ms", started.elapsed().as_millis());
        }
    }
    let again = again.expect("the instructions' diagnostics republished");
    let republish_ms = started.elapsed().as_millis();
    assert_eq!(again.len(), wb_manifest::MAX_DIAGNOSTICS_PER_CODE + 1);
    let (peak, _) = client.memory_kib();
    eprintln!(
        "prose flood ({commands} commands): check --format json {check_ms} ms ({} B); open {publish_ms} ms; \
         republish after an edit {republish_ms} ms; peak {} MiB",
        output.stdout.len(),
        peak / 1024
    );
    assert!(peak < PEAK_KIB, "the server peaked at {peak} KiB");
    client.shutdown();
}

/// `1,234,567`.
fn group(count: usize) -> String {
    let digits = count.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}
