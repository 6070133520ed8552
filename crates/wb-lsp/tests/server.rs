//! The language server end to end over the real protocol, in process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use lsp_types::{self as lsp, request as r};
use serde_json::json;
use support::{Client, Options, fixtures, uri};
use wb_manifest::{ModelCatalog, OsFileSystem, Target};
use wb_syntax::{LineIndex, PositionEncoding};

const MINIMAL: &str = "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nenv:\n  API_TOKEN:\n    required: false\nmcps:\n  - name: api\n    url: https://api.example.com/mcp\n    headers:\n      Authorization: Bearer ${API_TOKEN}\nruntimes:\n  local: {}\n";

/// A temporary repository with one package `demo` holding `manifest` and an instructions file.
fn repository(manifest: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    let package = root.join(".workbenches/demo");
    std::fs::create_dir_all(package.join("skills/review")).expect("mkdir");
    std::fs::write(package.join("workbench.yml"), manifest).expect("write");
    std::fs::write(package.join("instructions.md"), "# Demo\n").expect("write");
    std::fs::write(package.join("skills/review/SKILL.md"), "---\nname: review\ndescription: Reviews.\n---\n")
        .expect("write");
    (dir, package.join("workbench.yml"))
}

fn expected(manifest: &Path, encoding: PositionEncoding) -> Vec<(String, lsp::Range, String)> {
    let report = wb_manifest::check_package(&OsFileSystem, manifest, ModelCatalog::embedded());
    let text = report.sources.get(manifest).map(|t| t.to_string()).unwrap_or_default();
    let index = LineIndex::new(&text);
    report
        .diagnostics
        .iter()
        .filter(|d| d.path == manifest)
        .map(|d| {
            let (start, end) = index.range(d.range, encoding);
            let range =
                lsp::Range::new(lsp::Position::new(start.line, start.col), lsp::Position::new(end.line, end.col));
            (d.code.as_str().to_owned(), range, d.message.clone())
        })
        .collect()
}

fn actual(params: &lsp::PublishDiagnosticsParams) -> Vec<(String, lsp::Range, String)> {
    params
        .diagnostics
        .iter()
        .map(|d| {
            let code = match &d.code {
                Some(lsp::NumberOrString::String(code)) => code.clone(),
                other => format!("{other:?}"),
            };
            (code, d.range, d.message.clone())
        })
        .collect()
}

#[test]
fn diagnostics_match_check_on_the_whole_fixture_corpus() {
    let mut roots: Vec<PathBuf> = std::fs::read_dir(fixtures().join("cases"))
        .expect("cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    roots.push(fixtures().join("example-repo"));
    roots.sort();
    let mut manifests = Vec::new();
    for root in &roots {
        if let Target::Packages(found) = wb_manifest::discover(&OsFileSystem, root) {
            manifests.extend(found.into_iter().filter(|m| m.is_file()));
        }
    }
    assert!(manifests.len() > 20, "the corpus is unexpectedly small: {}", manifests.len());
    let mut client = Client::start(Options { roots: roots.clone(), ..Options::default() });
    for manifest in &manifests {
        eprintln!("waiting for {}", manifest.display());
        let published = client.diagnostics(manifest, |_| true);
        assert_eq!(actual(&published), expected(manifest, PositionEncoding::Utf16), "{}", manifest.display());
        for diagnostic in &published.diagnostics {
            let href = diagnostic.code_description.as_ref().map(|d| d.href.to_string()).unwrap_or_default();
            assert!(
                href.ends_with(&format!("#{}", actual(&published)[0].0)) || href.contains("diagnostics.md#"),
                "{href}"
            );
        }
    }
    client.drain();
}

#[test]
fn a_burst_of_incremental_edits_applies_in_order() {
    let (_dir, manifest) = repository(MINIMAL);
    let mut client = Client::start(Options::default());
    client.open(&manifest, MINIMAL);
    // Type `description: Reviews migrations` at the end, one character per change, without waiting.
    let addition = "description: Reviews migrations\nbogus: 1\n";
    let mut line = MINIMAL.lines().count() as u32;
    let mut character = 0;
    let mut version = 1;
    for ch in addition.chars() {
        version += 1;
        let at = lsp::Position::new(line, character);
        client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
            text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&manifest), version },
            content_changes: vec![lsp::TextDocumentContentChangeEvent {
                range: Some(lsp::Range::new(at, at)),
                range_length: None,
                text: ch.to_string(),
            }],
        });
        if ch == '\n' {
            line += 1;
            character = 0;
        } else {
            character += 1;
        }
    }
    let mut last_seen = 0;
    let final_version = version;
    let published = client.diagnostics(&manifest, |params| {
        let seen = params.version.unwrap_or_default();
        assert!(seen >= last_seen, "a stale result was published after a newer one: {seen} < {last_seen}");
        last_seen = seen;
        seen == final_version
    });
    let final_text = format!("{MINIMAL}{addition}");
    std::fs::write(&manifest, &final_text).expect("write");
    assert_eq!(actual(&published), expected(&manifest, PositionEncoding::Utf16));
    assert!(published.diagnostics.iter().any(|d| d.message == "Unknown manifest field: bogus"));
    let symbols = client.request::<r::DocumentSymbolRequest>(lsp::DocumentSymbolParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri(&manifest) },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let Some(lsp::DocumentSymbolResponse::Nested(symbols)) = symbols else { panic!("no symbols") };
    let description = symbols.iter().find(|s| s.name == "description").expect("description symbol");
    assert_eq!(description.detail.as_deref(), Some("Reviews migrations"));
}

#[test]
fn cancelled_requests_and_panicking_handlers_do_not_stop_the_server() {
    let (_dir, manifest) = repository(MINIMAL);
    let mut client = Client::start(Options { test_hooks: true, ..Options::default() });
    client.open(&manifest, MINIMAL);
    let error = client.request_result("wbLsp/debug/panic", json!({})).expect_err("the handler panics");
    assert_eq!(error.code, lsp_server::ErrorCode::InternalError as i32);
    let id = client.send_request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&manifest)}, "position": {"line": 0, "character": 1}}),
    );
    client.notify::<lsp::notification::Cancel>(lsp::CancelParams {
        id: serde_json::from_value(serde_json::to_value(&id).unwrap()).unwrap(),
    });
    let response = client.response(&id);
    if let Some(error) = response.error {
        assert_eq!(error.code, lsp_server::ErrorCode::RequestCanceled as i32);
    }
    let unknown = client.request_result("textDocument/notAThing", json!({})).expect_err("unknown method");
    assert_eq!(unknown.code, lsp_server::ErrorCode::MethodNotFound as i32);
    let invalid = client.request_result("textDocument/hover", json!({"bogus": true})).expect_err("invalid params");
    assert_eq!(invalid.code, lsp_server::ErrorCode::InvalidParams as i32);
    let hover = client.request::<r::HoverRequest>(lsp::HoverParams {
        text_document_position_params: lsp::TextDocumentPositionParams {
            text_document: lsp::TextDocumentIdentifier { uri: uri(&manifest) },
            position: lsp::Position::new(3, 2),
        },
        work_done_progress_params: Default::default(),
    });
    assert!(hover.is_some(), "the server still answers");
    client.drain();
}

#[test]
fn position_encoding_is_negotiated() {
    let text = "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel: {id: \"openai/gpt-5.6-terra\", é: 1, x: 2}\ninstructions: ./instructions.md\nruntimes:\n  local: {}\n";
    let (_dir, manifest) = repository(text);
    let column = |utf8: bool| {
        let mut client = Client::start(Options { utf8, ..Options::default() });
        let encoding = client.initialize_result.as_ref().and_then(|r| r.capabilities.position_encoding.clone());
        assert_eq!(
            encoding,
            Some(if utf8 { lsp::PositionEncodingKind::UTF8 } else { lsp::PositionEncodingKind::UTF16 })
        );
        client.open(&manifest, text);
        let published = client.diagnostics(&manifest, |p| !p.diagnostics.is_empty());
        let x = published
            .diagnostics
            .iter()
            .find(|d| d.message == "Unknown model field: x")
            .expect("x")
            .range
            .start
            .character;
        client.drain();
        x
    };
    let utf16 = column(false);
    let utf8 = column(true);
    assert_eq!(utf8, utf16 + 1, "é is one UTF-16 unit and two UTF-8 bytes");
}

fn position_of(text: &str, needle: &str, delta: usize) -> lsp::Position {
    let offset = text.find(needle).expect("needle") + delta;
    let index = LineIndex::new(text);
    let at = index.line_col(offset, PositionEncoding::Utf16);
    lsp::Position::new(at.line, at.col)
}

fn at(manifest: &Path, position: lsp::Position) -> lsp::TextDocumentPositionParams {
    lsp::TextDocumentPositionParams { text_document: lsp::TextDocumentIdentifier { uri: uri(manifest) }, position }
}

#[test]
fn completion_hover_definition_references_and_rename() {
    let (_dir, manifest) = repository(MINIMAL);
    let mut client = Client::start(Options::default());
    client.open(&manifest, MINIMAL);
    // Completion on a new top-level line offers missing keys only.
    let text = format!("{MINIMAL}de");
    client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
        text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&manifest), version: 2 },
        content_changes: vec![lsp::TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: text.clone(),
        }],
    });
    let last_line = text.lines().count() as u32 - 1;
    let end = lsp::Position::new(last_line, 2);
    let completion = client.request::<r::Completion>(lsp::CompletionParams {
        text_document_position: at(&manifest, lsp::Position::new(end.line, end.character)),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
        context: None,
    });
    let Some(lsp::CompletionResponse::List(list)) = completion else { panic!("no completion") };
    let labels: Vec<&str> = list.items.iter().map(|i| i.label.as_str()).collect();
    assert!(labels.contains(&"description"), "{labels:?}");
    assert!(
        !labels.contains(&"spec") && !labels.contains(&"runner"),
        "keys already present are not offered: {labels:?}"
    );
    // Hover on a key.
    let hover = client.request::<r::HoverRequest>(lsp::HoverParams {
        text_document_position_params: at(&manifest, position_of(&text, "runner:", 1)),
        work_done_progress_params: Default::default(),
    });
    let lsp::HoverContents::Markup(markup) = hover.expect("hover").contents else { panic!("markup") };
    assert!(markup.value.contains("harness"), "{}", markup.value);
    // Definition of the instructions path opens instructions.md.
    let definition = client.request::<r::GotoDefinition>(lsp::GotoDefinitionParams {
        text_document_position_params: at(&manifest, position_of(&text, "./instructions.md", 3)),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let Some(lsp::GotoDefinitionResponse::Array(locations)) = definition else { panic!("no definition") };
    assert_eq!(locations[0].uri, uri(&manifest.with_file_name("instructions.md")));
    // `${API_TOKEN}` jumps to its declaration; references and rename cover both.
    let reference = position_of(&text, "${API_TOKEN}", 3);
    let definition = client.request::<r::GotoDefinition>(lsp::GotoDefinitionParams {
        text_document_position_params: at(&manifest, reference),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let Some(lsp::GotoDefinitionResponse::Array(locations)) = definition else { panic!("no env definition") };
    assert_eq!(locations[0].range.start, position_of(&text, "API_TOKEN:", 0));
    let references = client.request::<r::References>(lsp::ReferenceParams {
        text_document_position: at(&manifest, position_of(&text, "API_TOKEN:", 1)),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
        context: lsp::ReferenceContext { include_declaration: true },
    });
    assert_eq!(references.map(|r| r.len()), Some(2));
    let rename = client.request::<r::Rename>(lsp::RenameParams {
        text_document_position: at(&manifest, reference),
        new_name: "SERVICE_TOKEN".into(),
        work_done_progress_params: Default::default(),
    });
    let edits = rename.and_then(|e| e.changes).and_then(|c| c.get(&uri(&manifest)).cloned()).expect("edits");
    assert_eq!(edits.len(), 2);
    assert!(edits.iter().all(|e| e.new_text == "SERVICE_TOKEN"));
    client.drain();
}

#[test]
fn quick_fixes_and_migration() {
    let text = "spec: 0\nversion: 0.1.0\nname: demo\ndescripton: x\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nruntime: local # the host\n";
    let (_dir, manifest) = repository(text);
    let mut client = Client::start(Options::default());
    client.open(&manifest, text);
    let published = client.diagnostics(&manifest, |p| !p.diagnostics.is_empty());
    let spec0 = published
        .diagnostics
        .iter()
        .find(|d| d.code == Some(lsp::NumberOrString::String("spec-0-manifest".into())))
        .expect("spec 0 hint");
    assert_eq!(spec0.tags.as_deref(), Some(&[lsp::DiagnosticTag::DEPRECATED][..]));
    let typo = position_of(text, "descripton", 2);
    let actions = client.request::<r::CodeActionRequest>(lsp::CodeActionParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri(&manifest) },
        range: lsp::Range::new(typo, typo),
        context: lsp::CodeActionContext { diagnostics: Vec::new(), only: None, trigger_kind: None },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let titles: Vec<String> = actions
        .unwrap_or_default()
        .into_iter()
        .map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) => action.title,
            lsp::CodeActionOrCommand::Command(command) => command.title,
        })
        .collect();
    assert!(titles.contains(&"Change to `description`".to_owned()), "{titles:?}");
    assert!(titles.contains(&"Remove `descripton`".to_owned()), "{titles:?}");
    assert!(titles.contains(&"Migrate to spec 1".to_owned()), "{titles:?}");
    let result = client.request_raw(
        "workspace/executeCommand",
        json!({"command": "workbench.migrate", "arguments": [uri(&manifest)]}),
    );
    assert_eq!(result, json!({"migrated": true, "applied": true}));
    client.drain();
    let edit = client.applied_edits.first().cloned().expect("the server asked to apply the migration");
    let edits = edit.changes.and_then(|c| c.get(&uri(&manifest)).cloned()).expect("edits");
    assert!(edits.iter().any(|e| e.new_text.contains("runtimes:\n  local: {}")), "{edits:?}");
}

/// Spec 1 requires a Daytona class that spec 0 never checked, so migrating this manifest would add an error.
#[test]
fn no_migration_is_offered_when_it_would_add_an_error() {
    let text = "spec: 0\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nruntime: daytona\n";
    let (_dir, manifest) = repository(text);
    let mut client = Client::start(Options::default());
    client.open(&manifest, text);
    client.diagnostics(&manifest, |p| !p.diagnostics.is_empty());
    let whole = lsp::Range::new(lsp::Position::new(0, 0), lsp::Position::new(8, 0));
    let actions = client.request::<r::CodeActionRequest>(lsp::CodeActionParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri(&manifest) },
        range: whole,
        context: lsp::CodeActionContext { diagnostics: Vec::new(), only: None, trigger_kind: None },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let titles: Vec<String> = actions
        .unwrap_or_default()
        .into_iter()
        .map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) => action.title,
            lsp::CodeActionOrCommand::Command(command) => command.title,
        })
        .collect();
    assert!(!titles.iter().any(|t| t.contains("Migrate") || t.contains("runtimes")), "{titles:?}");
    let refused = client.request_result(
        "workspace/executeCommand",
        json!({"command": "workbench.migrate", "arguments": [uri(&manifest)]}),
    );
    let error = refused.expect_err("the migration is refused");
    assert_eq!(error.message, "cannot migrate: the migrated manifest would not check cleanly; fix its errors first");
    client.drain();
    assert!(client.applied_edits.is_empty());
}

#[test]
fn pull_diagnostics_and_configuration() {
    let text = format!("{MINIMAL}bogus: 1\n");
    let (_dir, manifest) = repository(&text);
    let mut client = Client::start(Options {
        pull: true,
        settings: json!({"severity": {"unknown-field": "warning"}}),
        ..Options::default()
    });
    client.open(&manifest, &text);
    let report = client.request::<r::DocumentDiagnosticRequest>(lsp::DocumentDiagnosticParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri(&manifest) },
        identifier: None,
        previous_result_id: None,
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Full(full)) = report else {
        panic!("full report")
    };
    let items = full.full_document_diagnostic_report.items;
    let bogus = items.iter().find(|d| d.message == "Unknown manifest field: bogus").expect("bogus");
    assert_eq!(bogus.severity, Some(lsp::DiagnosticSeverity::WARNING), "the severity override applies");
    client.drain();
}

#[test]
fn watched_files_and_skill_documents() {
    let (_dir, manifest) = repository(MINIMAL);
    let root = manifest.parent().and_then(Path::parent).and_then(Path::parent).expect("root").to_path_buf();
    let mut client = Client::start(Options { roots: vec![root], ..Options::default() });
    let first = client.diagnostics(&manifest, |_| true);
    assert!(
        first.diagnostics.iter().all(|d| d.severity != Some(lsp::DiagnosticSeverity::ERROR)),
        "{:?}",
        first.diagnostics
    );
    let instructions = manifest.with_file_name("instructions.md");
    std::fs::remove_file(&instructions).expect("remove");
    client.notify::<lsp::notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams {
        changes: vec![lsp::FileEvent { uri: uri(&instructions), typ: lsp::FileChangeType::DELETED }],
    });
    let published = client.diagnostics(&manifest, |p| !p.diagnostics.is_empty());
    assert!(
        published.diagnostics.iter().any(|d| d.message.starts_with("Instructions file does not exist")),
        "{:?}",
        published.diagnostics
    );
    // An open SKILL.md gets its own diagnostics, and its unsaved text is what the manifest check reads.
    let skill = manifest.with_file_name("skills/review/SKILL.md");
    client.open(&skill, "---\nname: reviewer\ndescription: Reviews.\n---\n");
    let own = client.diagnostics(&skill, |p| !p.diagnostics.is_empty());
    assert_eq!(own.diagnostics[0].message, "Skill name must match its directory: reviewer");
    client.drain();
}

/// Opening a folder of many packages shows progress; a change on disk rechecks only the package that read
/// the file, and a file appearing in a directory a package listed rechecks that package.
#[test]
fn a_change_rechecks_only_what_read_it_and_a_large_scan_shows_progress() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join(".git")).expect("mkdir");
    let manifests: Vec<PathBuf> = (0..12)
        .map(|i| {
            let package = root.join(format!(".workbenches/pkg-{i:02}"));
            std::fs::create_dir_all(package.join("skills/review")).expect("mkdir");
            let manifest = MINIMAL.replace("name: demo", &format!("name: pkg-{i:02}")).replace(
                "instructions: ./instructions.md\n",
                "instructions: ./instructions.md\nskills:\n  - ./skills/review\n",
            );
            std::fs::write(package.join("workbench.yml"), manifest).expect("write");
            std::fs::write(package.join("instructions.md"), "# Demo\n").expect("write");
            std::fs::write(package.join("skills/review/SKILL.md"), "---\nname: review\ndescription: Reviews.\n---\n")
                .expect("write");
            package.join("workbench.yml")
        })
        .collect();
    let mut client = Client::start(Options { roots: vec![root.clone()], progress: true, ..Options::default() });
    for manifest in &manifests {
        let published = client.diagnostics(manifest, |_| true);
        assert!(published.diagnostics.is_empty(), "{manifest:?}: {:?}", published.diagnostics);
    }
    let progress: Vec<String> = client
        .collect(Duration::from_millis(300))
        .into_iter()
        .filter(|n| n.method == "$/progress")
        .filter_map(|n| n.params["value"]["kind"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(progress.first().map(String::as_str), Some("begin"), "{progress:?}");
    assert_eq!(progress.last().map(String::as_str), Some("end"), "{progress:?}");

    let republished = |client: &mut Client| -> Vec<String> {
        let mut uris: Vec<String> = client
            .collect(Duration::from_millis(400))
            .into_iter()
            .filter(|n| n.method == "textDocument/publishDiagnostics")
            .filter_map(|n| n.params["uri"].as_str().map(str::to_owned))
            .collect();
        uris.sort();
        uris.dedup();
        uris
    };
    // Package 3 loses its instructions: only package 3 is rechecked.
    let instructions = manifests[3].with_file_name("instructions.md");
    std::fs::remove_file(&instructions).expect("remove");
    client.notify::<lsp::notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams {
        changes: vec![lsp::FileEvent { uri: uri(&instructions), typ: lsp::FileChangeType::DELETED }],
    });
    let published = client.diagnostics(&manifests[3], |p| !p.diagnostics.is_empty());
    assert!(published.diagnostics.iter().any(|d| d.message.starts_with("Instructions file does not exist")));
    assert_eq!(republished(&mut client), Vec::<String>::new(), "only package 3 is rechecked");

    // A file appears in package 5's skill directory (which its check listed): package 5 alone is rechecked.
    let extra = manifests[5].with_file_name("skills/review/notes.md");
    std::fs::write(&extra, "notes\n").expect("write");
    client.notify::<lsp::notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams {
        changes: vec![lsp::FileEvent { uri: uri(&extra), typ: lsp::FileChangeType::CREATED }],
    });
    assert_eq!(republished(&mut client), vec![uri(&manifests[5]).to_string()]);

    // A file no package read: nothing is rechecked.
    let unrelated = root.join("README.md");
    std::fs::write(&unrelated, "readme\n").expect("write");
    client.notify::<lsp::notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams {
        changes: vec![lsp::FileEvent { uri: uri(&unrelated), typ: lsp::FileChangeType::CREATED }],
    });
    assert_eq!(republished(&mut client), Vec::<String>::new());
    client.shutdown();
}

#[test]
fn an_open_outbox_declaration_is_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let outbox = dir.path().canonicalize().expect("canonical").join("runs/wb_x/outbox");
    std::fs::create_dir_all(&outbox).expect("mkdir");
    std::fs::write(outbox.join("report.md"), "# Report\n").expect("write");
    let declaration = outbox.join("outcome.json");
    let text = "{\"version\": 1, \"artifacts\": [{\"path\": \"report.md\"}, {\"path\": \"missing.md\"}]}";
    let mut client = Client::start(Options::default());
    client.open(&declaration, text);
    let published = client.diagnostics(&declaration, |p| !p.diagnostics.is_empty());
    assert_eq!(published.diagnostics.len(), 1, "{:?}", published.diagnostics);
    assert_eq!(published.diagnostics[0].message, "Declared artifact file does not exist: missing.md");
    assert_eq!(published.diagnostics[0].range.start, position_of(text, "\"missing.md\"", 0));
    // The missing file appears: the watcher notification re-checks the open declaration.
    std::fs::write(outbox.join("missing.md"), "now here").expect("write");
    client.notify::<lsp::notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams {
        changes: vec![lsp::FileEvent { uri: uri(&outbox.join("missing.md")), typ: lsp::FileChangeType::CREATED }],
    });
    client.diagnostics(&declaration, |p| p.diagnostics.is_empty());
    client.drain();
}

/// An open trial task (`trials/<id>/task.json`) is checked as `check` checks it, with the package's name from
/// its manifest; completion offers the fields a gate lacks, and hover documents a key.
#[test]
fn an_open_trial_task_is_checked_completed_and_hovered() {
    let manifest = "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
        instructions: ./instructions.md\nruntimes:\n  local: {}\n";
    let (_dir, manifest_path) = repository(manifest);
    let task_dir = manifest_path.parent().expect("package").join("trials/fix-bug");
    std::fs::create_dir_all(&task_dir).expect("mkdir");
    std::fs::write(task_dir.join("prompt.md"), "Fix it.\n").expect("write");
    let task = task_dir.join("task.json");
    let text = "{\"version\": 1, \"id\": \"fix-bug\", \"title\": \"Fix\", \"workbench\": \"other\",\n \
        \"fixture\": {\"kind\": \"empty\"}, \"gates\": [{\"id\": \"tests\"}]}";
    std::fs::write(&task, text).expect("write");
    let mut client = Client::start(Options::default());
    client.open(&task, text);
    let published = client.diagnostics(&task, |p| p.diagnostics.len() == 2);
    let messages: Vec<&str> = published.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        ["Trial task is for workbench other, but it is in the trials of demo", "Trial task gates[0].run is required"],
        "{:?}",
        published.diagnostics
    );
    assert_eq!(published.diagnostics[0].range.start, position_of(text, "\"other\"", 0));

    let inside_gate = position_of(text, "\"tests\"}", 0);
    let at = lsp::Position { line: inside_gate.line, character: inside_gate.character + 7 };
    let params = json!({"textDocument": {"uri": uri(&task)}, "position": at});
    let completion = client.request_raw("textDocument/completion", params.clone());
    let labels: Vec<&str> =
        completion["items"].as_array().expect("items").iter().filter_map(|i| i["label"].as_str()).collect();
    assert_eq!(labels, ["title", "run", "timeoutSeconds"], "{completion}");
    let on_key = position_of(text, "\"fixture\"", 0);
    let hover = client.request_raw(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&task)}, "position": {"line": on_key.line, "character": on_key.character + 2}}),
    );
    assert!(hover.to_string().contains("The repository an attempt starts from"), "{hover}");
    client.drain();
}

#[test]
fn migrate_answers_after_the_client_applied_the_edit() {
    let text = "spec: 0\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nruntime: local\n";
    let (_dir, manifest) = repository(text);
    let mut client = Client::start(Options::default());
    client.open(&manifest, text);
    let migrate = json!({"command": "workbench.migrate", "arguments": [uri(&manifest)]});
    // The client refuses the edit: the command says so, with the client's reason.
    client.apply_edit_answer = json!({"applied": false, "failureReason": "the buffer changed"});
    let refused = client.request_raw("workspace/executeCommand", migrate.clone());
    assert_eq!(refused, json!({"migrated": false, "applied": false, "failureReason": "the buffer changed"}));
    // The client answers with an error: the command fails with it.
    client.apply_edit_answer = json!(null);
    let failed = client.request_result("workspace/executeCommand", migrate.clone()).expect_err("no applyEdit result");
    assert_eq!(failed.code, lsp_server::ErrorCode::RequestFailed as i32);
    client.apply_edit_answer = json!({"applied": true});
    let applied = client.request_raw("workspace/executeCommand", migrate);
    assert_eq!(applied, json!({"migrated": true, "applied": true}));
    assert_eq!(client.applied_edits.len(), 3);
    client.drain();
}

#[test]
fn configuration_problems_are_shown_once() {
    let show_message = |n: &lsp_server::Notification| (n.method == "window/showMessage").then(|| n.params.clone());
    let unknown = json!({"type": 2, "message": "workbench.severity: unknown diagnostic code unknown-modle"});
    let settings = json!({"severity": {"unknown-modle": "hint"}});
    // Settings from the initialization options and `didChangeConfiguration` (no `workspace/configuration`).
    let mut client =
        Client::start(Options { configuration: false, initialization_options: settings.clone(), ..Options::default() });
    assert_eq!(client.wait_for("the configuration warning", show_message), unknown);
    client.notify::<lsp::notification::DidChangeConfiguration>(lsp::DidChangeConfigurationParams {
        settings: settings.clone(),
    });
    client.notify::<lsp::notification::DidChangeConfiguration>(lsp::DidChangeConfigurationParams {
        settings: json!({"severity": {"unknown-field": "loud"}}),
    });
    assert_eq!(
        client.wait_for("the new configuration warning", show_message)["message"],
        "workbench.severity.unknown-field: expected error, warning, information, hint or off"
    );
    // Everything the server sends for the notifications comes before this answer: no repeated warning is unread.
    let checked = client.request_raw("workspace/executeCommand", json!({"command": "workbench.checkWorkspace"}));
    assert_eq!(checked, json!({"packages": 0}));
    client.shutdown();

    // The initialization options, then an empty `workspace/configuration` answer that keeps them: one warning.
    let mut client = Client::start(Options { initialization_options: settings, ..Options::default() });
    assert_eq!(client.wait_for("the configuration warning", show_message), unknown);
    let checked = client.request_raw("workspace/executeCommand", json!({"command": "workbench.checkWorkspace"}));
    assert_eq!(checked, json!({"packages": 0}));
}

/// The completion items at `position` of `manifest`, whose buffer now holds `text` (version `version`).
fn completion_items(
    client: &mut Client,
    manifest: &Path,
    text: &str,
    version: i32,
    position: lsp::Position,
) -> Vec<lsp::CompletionItem> {
    client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
        text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(manifest), version },
        content_changes: vec![lsp::TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: text.into(),
        }],
    });
    let completion = client.request::<r::Completion>(lsp::CompletionParams {
        text_document_position: at(manifest, position),
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
        context: None,
    });
    let Some(lsp::CompletionResponse::List(list)) = completion else { panic!("no completion") };
    list.items
}

/// The item labelled `label`: its inserted text, format and documentation kind.
fn inserted(items: &[lsp::CompletionItem], label: &str) -> (String, lsp::InsertTextFormat, Option<lsp::MarkupKind>) {
    let item = items.iter().find(|item| item.label == label).unwrap_or_else(|| panic!("no {label} in {items:?}"));
    assert!(item.label_details.is_none() && item.data.is_none(), "{item:?}");
    let Some(lsp::CompletionTextEdit::Edit(edit)) = &item.text_edit else { panic!("no text edit: {item:?}") };
    let documentation = match &item.documentation {
        Some(lsp::Documentation::MarkupContent(markup)) => Some(markup.kind.clone()),
        _ => None,
    };
    (edit.new_text.clone(), item.insert_text_format.expect("a format"), documentation)
}

/// What completing `wor` (a key block), `he` inside an MCP server (a nested block) and `runner: o` (a value)
/// inserts, with a client that takes snippets and Markdown, Neovim 0.7's capabilities and Eglot 1.9's; without
/// snippet support the text is plain, indented, and the server finds nothing wrong with what it inserted.
#[test]
fn completion_and_hover_follow_the_client_capabilities() {
    let key_text = format!("{MINIMAL}wor");
    let key_at = lsp::Position::new(key_text.lines().count() as u32 - 1, 3);
    let nested_text = MINIMAL.replace("    headers:\n      Authorization: Bearer ${API_TOKEN}\n", "    he\n");
    let nested_at = position_of(&nested_text, "    he\n", 6);
    let value_text = MINIMAL.replace("runner: opencode", "runner: o");
    let value_at = position_of(&value_text, "runner: o", 9);
    let plain_key = "workspaces:\n  name:\n    access: read-only";
    let plain_nested = "headers:\n      Authorization: Bearer ${TOKEN}";
    let clients = [
        (
            "snippets and Markdown",
            json!({}),
            lsp::InsertTextFormat::SNIPPET,
            lsp::MarkupKind::Markdown,
            lsp::MarkupKind::Markdown,
        ),
        (
            "Neovim 0.7",
            support::neovim_0_7(),
            lsp::InsertTextFormat::PLAIN_TEXT,
            lsp::MarkupKind::Markdown,
            lsp::MarkupKind::Markdown,
        ),
        (
            "Eglot 1.9",
            support::eglot_1_9(),
            lsp::InsertTextFormat::PLAIN_TEXT,
            lsp::MarkupKind::PlainText,
            lsp::MarkupKind::PlainText,
        ),
    ];
    for (name, text_document, format, documentation, hover_kind) in clients {
        let (_dir, manifest) = repository(MINIMAL);
        let mut client = Client::start(Options { text_document, ..Options::default() });
        let resolve = client.initialize_result.as_ref().and_then(|r| r.capabilities.completion_provider.as_ref());
        assert_eq!(resolve.and_then(|c| c.resolve_provider), None, "{name}: no completionItem/resolve");
        client.open(&manifest, MINIMAL);
        let snippets = format == lsp::InsertTextFormat::SNIPPET;

        let items = completion_items(&mut client, &manifest, &key_text, 2, key_at);
        let (new_text, item_format, item_documentation) = inserted(&items, "workspaces");
        let expected =
            if snippets { "workspaces:\n  ${1:name}:\n    access: ${2|read-only,read-write|}" } else { plain_key };
        assert_eq!(
            (new_text.as_str(), item_format, item_documentation),
            (expected, format, Some(documentation.clone())),
            "{name}"
        );
        let mode = items.iter().find(|item| item.label == "workspaces").and_then(|item| item.insert_text_mode);
        let expected_mode = if snippets { lsp::InsertTextMode::ADJUST_INDENTATION } else { lsp::InsertTextMode::AS_IS };
        assert_eq!(mode, Some(expected_mode), "{name}");

        let items = completion_items(&mut client, &manifest, &nested_text, 3, nested_at);
        let expected =
            if snippets { "headers:\n  ${1:Authorization}: ${2:Bearer \\${${3:TOKEN}\\}}" } else { plain_nested };
        assert_eq!(inserted(&items, "headers").0, expected, "{name}");

        let items = completion_items(&mut client, &manifest, &value_text, 4, value_at);
        let (new_text, item_format, _) = inserted(&items, "opencode");
        assert_eq!((new_text.as_str(), item_format), ("opencode", lsp::InsertTextFormat::PLAIN_TEXT), "{name}");

        let hover = client.request::<r::HoverRequest>(lsp::HoverParams {
            text_document_position_params: at(&manifest, position_of(&value_text, "runner:", 1)),
            work_done_progress_params: Default::default(),
        });
        let lsp::HoverContents::Markup(markup) = hover.expect("hover").contents else { panic!("markup") };
        assert_eq!(markup.kind, hover_kind, "{name}");
        assert!(markup.value.contains("runner: opencode"), "{name}: {}", markup.value);
        if hover_kind == lsp::MarkupKind::PlainText {
            assert!(!markup.value.contains("**") && !markup.value.contains('`'), "{name}: {}", markup.value);
        }

        if !snippets {
            // The text inserted as plain text is a well-formed block: no problem on its lines.
            let inserted_text = format!("{MINIMAL}{plain_key}\n");
            client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
                text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&manifest), version: 5 },
                content_changes: vec![lsp::TextDocumentContentChangeEvent {
                    range: None,
                    range_length: None,
                    text: inserted_text.clone(),
                }],
            });
            let first_inserted_line = MINIMAL.lines().count() as u32;
            let published = client.diagnostics(&manifest, |params| params.version == Some(5));
            let on_inserted: Vec<&lsp::Diagnostic> =
                published.diagnostics.iter().filter(|d| d.range.end.line >= first_inserted_line).collect();
            assert!(on_inserted.is_empty(), "{name}: problems in the inserted text: {on_inserted:?}");
        }
        client.drain();
    }
}

/// A `modelCatalog` setting that names a file without end (`/dev/zero`) or a FIFO that never sends anything is
/// read bounded and off the loop: the server answers other requests meanwhile, and shows why the catalog is
/// not used (before, the loop read `/dev/zero` into memory forever and answered nothing).
#[test]
fn a_model_catalog_without_end_is_read_bounded_off_the_loop() {
    let (dir, manifest) = repository(MINIMAL);
    let show_message = |n: &lsp_server::Notification| (n.method == "window/showMessage").then(|| n.params.clone());
    let options = json!({"modelCatalog": "/dev/zero"});
    let mut client =
        Client::start(Options { configuration: false, initialization_options: options, ..Options::default() });
    client.open(&manifest, MINIMAL);
    let hover = client.request::<r::HoverRequest>(lsp::HoverParams {
        text_document_position_params: at(&manifest, lsp::Position::new(3, 2)),
        work_done_progress_params: Default::default(),
    });
    assert!(hover.is_some(), "the server answers while the catalog is read");
    let limit = "Model catalog is too large: /dev/zero: 4194305 bytes or more (the limit is 4 MiB)";
    assert_eq!(client.wait_for("the catalog error", show_message), json!({"type": 1, "message": limit}));

    // A FIFO whose writer never writes: not waited for.
    let fifo = dir.path().join("catalog.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let _writer = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).expect("the FIFO's writer");
    client.notify::<lsp::notification::DidChangeConfiguration>(lsp::DidChangeConfigurationParams {
        settings: json!({"modelCatalog": fifo}),
    });
    let symbols = client.request_raw("textDocument/documentSymbol", json!({"textDocument": {"uri": uri(&manifest)}}));
    assert!(symbols.as_array().is_some_and(|symbols| !symbols.is_empty()), "{symbols}");
    let shown = client.wait_for("the FIFO's catalog error", show_message);
    let message = shown["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("Model catalog is unreadable: {}: ", fifo.display())), "{shown}");
    client.drain();
}

/// A check that panics (the `test-hooks` feature, on only in tests, makes one panic on a marker) publishes
/// nothing: the file keeps the diagnostics last published for it, and the failure is logged (before, the
/// panic was published as "no problems"). The next good check publishes again.
#[test]
fn a_panicking_check_keeps_the_last_diagnostics() {
    let broken = MINIMAL.replace("runner: opencode", "runner: opencode\nrunnr: typo");
    let (_dir, manifest) = repository(&broken);
    let mut client = Client::start(Options::default());
    client.open(&manifest, &broken);
    let first = client.diagnostics(&manifest, |params| !params.diagnostics.is_empty());
    assert!(first.diagnostics.iter().any(|d| d.message.contains("runnr")), "{:?}", first.diagnostics);

    let panicking = format!("{broken}# wb-lsp test hook: panic in the check\n");
    client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
        text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&manifest), version: 2 },
        content_changes: vec![lsp::TextDocumentContentChangeEvent { range: None, range_length: None, text: panicking }],
    });
    let logged = client.wait_for("the failure's log message", |n| {
        (n.method == "window/logMessage").then(|| n.params["message"].as_str().unwrap_or_default().to_owned())
    });
    assert!(
        logged.contains("failed (a check panicked on purpose (test hook)); its last diagnostics are kept"),
        "{logged}"
    );
    client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
        text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&manifest), version: 3 },
        content_changes: vec![lsp::TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: MINIMAL.to_owned(),
        }],
    });
    // Every publish of the file since the first, in order: version 2 (the panicking check's) has none.
    let mut versions = Vec::new();
    let fixed = client.diagnostics(&manifest, |params| {
        versions.push(params.version);
        params.version == Some(3)
    });
    assert_eq!(versions, [Some(3)], "the panicking check published nothing");
    assert!(fixed.diagnostics.is_empty(), "{:?}", fixed.diagnostics);
}

/// A Dockerfile that copies a credential file gets the warning in the Dockerfile itself, at the source, with
/// the manifest's `build` as related location; fixing the Dockerfile on disk withdraws it.
#[test]
fn a_dockerfile_copying_a_credential_file_is_warned_about_in_the_dockerfile() {
    let text =
        MINIMAL.replace("runtimes:\n  local: {}\n", "runtimes:\n  docker:\n    image:\n      build: ./Dockerfile\n");
    let (_dir, manifest) = repository(&text);
    let dockerfile = manifest.with_file_name("Dockerfile");
    std::fs::write(&dockerfile, "FROM node:22\nCOPY .env /app/.env\n").expect("write");
    let mut client = Client::start(Options::default());
    client.open(&manifest, &text);
    let published = client.diagnostics(&dockerfile, |params| !params.diagnostics.is_empty());
    let warning = &published.diagnostics[0];
    assert_eq!(warning.code, Some(lsp::NumberOrString::String("dockerfile-copies-credential".into())));
    assert_eq!(warning.severity, Some(lsp::DiagnosticSeverity::WARNING));
    assert_eq!(warning.message, "Dockerfile copies a credential file into the image: .env");
    assert_eq!(warning.range, lsp::Range::new(lsp::Position::new(1, 5), lsp::Position::new(1, 9)));
    let related = warning.related_information.clone().unwrap_or_default();
    assert_eq!(related.len(), 1, "{related:?}");
    assert_eq!(related[0].location.uri, uri(&manifest));

    std::fs::write(&dockerfile, "FROM node:22\nCOPY package.json /app/\n").expect("write");
    client.notify::<lsp::notification::DidChangeWatchedFiles>(lsp::DidChangeWatchedFilesParams {
        changes: vec![lsp::FileEvent { uri: uri(&dockerfile), typ: lsp::FileChangeType::CHANGED }],
    });
    client.diagnostics(&dockerfile, |params| params.diagnostics.is_empty());
    client.drain();
}

/// Decodes relative semantic tokens into `(line, start, length, type, modifiers)`.
fn decoded(data: &[u32]) -> Vec<(u32, u32, u32, u32, u32)> {
    let (mut line, mut start) = (0, 0);
    data.chunks(5)
        .map(|token| {
            line += token[0];
            start = if token[0] == 0 { start + token[1] } else { token[1] };
            (line, start, token[2], token[3], token[4])
        })
        .collect()
}

/// Selection ranges, document highlights and semantic tokens through the server. Semantic tokens are offered
/// only to a client that asks for them (full, relative); their lengths follow the negotiated encoding, and a
/// block scalar's token is cut at each line (no client is assumed to take multi-line tokens).
#[test]
fn selection_ranges_highlights_and_semantic_tokens() {
    let manifest_text = MINIMAL.replace("runtimes:", "description: |\n  Résumé of\n  two lines\nruntimes:");
    let (_dir, manifest) = repository(&manifest_text);
    // Without the client capability, no provider.
    let client = Client::start(Options::default());
    let capabilities = &client.initialize_result.as_ref().expect("initialized").capabilities;
    assert!(capabilities.semantic_tokens_provider.is_none(), "semantic tokens offered to a client without them");
    assert!(capabilities.selection_range_provider.is_some() && capabilities.document_highlight_provider.is_some());
    drop(client);

    let semantic = json!({"semanticTokens": {
        "requests": {"full": true}, "formats": ["relative"], "multilineTokenSupport": false,
        "tokenTypes": ["property", "string", "number", "keyword", "variable"], "tokenModifiers": ["declaration"],
    }});
    for utf8 in [false, true] {
        let mut client = Client::start(Options { utf8, text_document: semantic.clone(), ..Options::default() });
        let provider = client.initialize_result.as_ref().and_then(|r| r.capabilities.semantic_tokens_provider.clone());
        let Some(lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(options)) = provider else {
            panic!("no semantic tokens for a client that asks for them");
        };
        let types: Vec<&str> = options.legend.token_types.iter().map(|t| t.as_str()).collect();
        assert_eq!(types, ["property", "string", "number", "keyword", "variable"]);
        client.open(&manifest, &manifest_text);
        let tokens =
            client.request_raw("textDocument/semanticTokens/full", json!({"textDocument": {"uri": uri(&manifest)}}));
        let data: Vec<u32> = serde_json::from_value(tokens["data"].clone()).expect("token data");
        let tokens = decoded(&data);
        let line_of = |needle: &str| manifest_text.lines().position(|l| l.contains(needle)).expect("line") as u32;
        // `spec` (a property), `1` (a number), the env declaration, the `${API_TOKEN}` name.
        assert_eq!(tokens[0], (0, 0, 4, 0, 0));
        assert_eq!(tokens[1], (0, 6, 1, 2, 0));
        assert!(tokens.contains(&(line_of("  API_TOKEN:"), 2, 9, 4, 1)), "{tokens:?}");
        let header = line_of("Authorization");
        let column = manifest_text.lines().nth(header as usize).expect("line").find("API_TOKEN}").expect("ref") as u32;
        assert!(tokens.contains(&(header, column, 9, 4, 0)), "{tokens:?}");
        // The block scalar: one string token a line; `Résumé of` is 9 UTF-16 units, 11 bytes.
        let resume = line_of("Résumé");
        let length = if utf8 { 11 } else { 9 };
        assert!(tokens.contains(&(resume, 2, length, 1, 0)), "{utf8}: {tokens:?}");
        assert!(tokens.contains(&(resume + 1, 2, 9, 1, 0)), "{tokens:?}");
        assert!(tokens.iter().all(|t| t.2 > 0), "an empty token: {tokens:?}");

        // Highlights of the env variable from its reference: the declaration (write) and the use (read).
        let highlights = client.request_raw(
            "textDocument/documentHighlight",
            json!({"textDocument": {"uri": uri(&manifest)}, "position": {"line": header, "character": column + 1}}),
        );
        let kinds: Vec<(u64, u64)> = highlights
            .as_array()
            .expect("highlights")
            .iter()
            .map(|h| (h["range"]["start"]["line"].as_u64().unwrap_or(0), h["kind"].as_u64().unwrap_or(0)))
            .collect();
        assert_eq!(kinds, [(u64::from(line_of("  API_TOKEN:")), 3), (u64::from(header), 2)]);

        // Selection ranges from inside the reference, growing to the whole document.
        let ranges = client.request_raw(
            "textDocument/selectionRange",
            json!({"textDocument": {"uri": uri(&manifest)}, "positions": [{"line": header, "character": column + 1}]}),
        );
        let mut chain = Vec::new();
        let mut current = &ranges[0];
        while !current.is_null() {
            chain.push(current["range"].clone());
            current = &current["parent"];
        }
        assert_eq!(
            chain[0],
            json!({"start": {"line": header, "character": column}, "end": {"line": header, "character": column + 9}})
        );
        assert_eq!(chain.last().map(|r| r["start"].clone()), Some(json!({"line": 0, "character": 0})));
        assert!(chain.len() >= 6, "{chain:?}");
        client.drain();
    }
}

/// Inlay hints, offered only to a client that shows them: after `instructions:` and the skill, the context's
/// tokens (an estimate) and its cost a run with the catalog's price; after `model.id`, the route and the
/// credential's name; after each `env` entry, whether it is bound here, in the repository's `.env`, or not at
/// all (never a value). A kind switched off in the settings is gone.
#[test]
fn inlay_hints_show_context_cost_route_and_bindings() {
    let manifest_text = "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
        instructions: ./instructions.md\nskills:\n  - ./skills/review\nenv:\n  HOME:\n    required: false\n  \
        WB_INLAY_FROM_DOTENV:\n    required: false\n  WB_INLAY_NOWHERE_0C4A:\n    required: true\nruntimes:\n  local: {}\n";
    let (dir, manifest) = repository(manifest_text);
    let package = manifest.parent().expect("package").to_path_buf();
    std::fs::write(package.join("instructions.md"), "x".repeat(8000)).expect("write");
    let root = dir.path().canonicalize().expect("root");
    std::fs::write(root.join(".env"), "WB_INLAY_FROM_DOTENV=secret-value-7f3\n").expect("write");
    // A catalog of one's own: a price, and a provider whose credential variable is one every process has.
    let catalog = root.join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"version": "test", "providers": {"openai": {"name": "OpenAI", "env": ["WB_INLAY_NO_KEY_9D2E", "HOME"]}},
            "models": {"openai/gpt-5.6-terra": {"name": "Terra", "providers": {"openai": "gpt-5.6-terra"}, "cost": {"input": 2.5}}}}"#,
    )
    .expect("write");
    let without = Client::start(Options::default());
    let provider = without.initialize_result.as_ref().and_then(|r| r.capabilities.inlay_hint_provider.clone());
    assert!(provider.is_none(), "inlay hints offered to a client that does not show them");
    drop(without);

    let settings = json!({"modelCatalog": catalog});
    let mut client = Client::start(Options {
        text_document: json!({"inlayHint": {"dynamicRegistration": false}}),
        settings: settings.clone(),
        roots: vec![root.clone()],
        ..Options::default()
    });
    client.open(&manifest, manifest_text);
    let end_of_line = |needle: &str| {
        let line = manifest_text.lines().position(|l| l.contains(needle)).expect("line");
        (line as u64, manifest_text.lines().nth(line).map_or(0, |l| l.len() as u64))
    };
    let request = json!({"textDocument": {"uri": uri(&manifest)}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}});
    // The catalog is read off the loop: ask until the route uses it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let hints = loop {
        let hints = client.request_raw("textDocument/inlayHint", request.clone());
        if hints.to_string().contains("via HOME") || std::time::Instant::now() > deadline {
            break hints;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let shown: Vec<((u64, u64), String)> = hints
        .as_array()
        .expect("hints")
        .iter()
        .map(|h| {
            let position =
                (h["position"]["line"].as_u64().unwrap_or(0), h["position"]["character"].as_u64().unwrap_or(0));
            (position, h["label"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    let expected = vec![
        (end_of_line("id: openai"), "→ openai/gpt-5.6-terra via HOME".to_owned()),
        (end_of_line("instructions:"), "~2.0k tokens, ~$0.0050 a run (estimate)".to_owned()),
        (end_of_line("./skills/review"), "~11 tokens, <$0.0001 a run (estimate)".to_owned()),
        ((end_of_line("  HOME:").0, 6), "bound".to_owned()),
        ((end_of_line("WB_INLAY_FROM_DOTENV").0, 22), "in .env (pass --env-file .env)".to_owned()),
        ((end_of_line("WB_INLAY_NOWHERE").0, 23), "not bound (required)".to_owned()),
    ];
    assert_eq!(shown, expected, "{hints}");
    assert!(!hints.to_string().contains("secret-value-7f3"), "a value in a hint: {hints}");

    // Only the requested range: the `env` lines alone give the three bindings.
    let env_line = end_of_line("env:").0;
    let env_only = json!({"textDocument": {"uri": uri(&manifest)},
        "range": {"start": {"line": env_line, "character": 0}, "end": {"line": env_line + 6, "character": 0}}});
    let hints = client.request_raw("textDocument/inlayHint", env_only.clone());
    let labels: Vec<&str> = hints.as_array().expect("hints").iter().filter_map(|h| h["label"].as_str()).collect();
    assert_eq!(labels, ["bound", "in .env (pass --env-file .env)", "not bound (required)"], "{hints}");
    // The editor's `.env`, unsaved, is the one that counts.
    client.open(&root.join(".env"), "WB_INLAY_FROM_DOTENV=secret-value-7f3\nWB_INLAY_NOWHERE_0C4A=typed\n");
    let hints = client.request_raw("textDocument/inlayHint", env_only);
    let labels: Vec<&str> = hints.as_array().expect("hints").iter().filter_map(|h| h["label"].as_str()).collect();
    assert_eq!(labels, ["bound", "in .env (pass --env-file .env)", "in .env (pass --env-file .env)"], "{hints}");
    assert!(!hints.to_string().contains("typed"), "a value in a hint: {hints}");

    // Switched off, kind by kind (the client answers the server's `workspace/configuration` with them).
    client.settings = json!({"modelCatalog": catalog, "inlayHints": {"context": false, "env": false}});
    client.notify::<lsp::notification::DidChangeConfiguration>(lsp::DidChangeConfigurationParams {
        settings: client.settings.clone(),
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let hints = client.request_raw("textDocument/inlayHint", request.clone());
        let labels: Vec<&str> = hints.as_array().expect("hints").iter().filter_map(|h| h["label"].as_str()).collect();
        if labels == ["→ openai/gpt-5.6-terra via HOME"] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the switched-off kinds are still shown: {labels:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    client.drain();
}

/// Applies LSP text edits in the negotiated encoding, as a client does.
fn apply_lsp_edits(text: &str, edits: &[lsp::TextEdit], encoding: PositionEncoding) -> String {
    let index = LineIndex::new(text);
    let offset = |position: lsp::Position| {
        index.offset(wb_syntax::LineCol { line: position.line, col: position.character }, encoding)
    };
    let mut edits: Vec<(usize, usize, &str)> =
        edits.iter().map(|edit| (offset(edit.range.start), offset(edit.range.end), edit.new_text.as_str())).collect();
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::new();
    let mut cursor = 0;
    for (start, end, new_text) in edits {
        assert!(start >= cursor, "overlapping edits");
        out.push_str(&text[cursor..start]);
        out.push_str(new_text);
        cursor = end;
    }
    out.push_str(&text[cursor..]);
    out
}

/// Formatting through the server: offered to every client, edits in the negotiated encoding (the closing quote
/// after `Résumé 🚀` sits at another column in UTF-16 than in UTF-8), range formatting touches only the lines
/// asked for, a manifest with syntax errors gets no edits, and the standard's field order follows the setting.
#[test]
fn formatting_a_manifest_in_either_encoding() {
    let loose = MINIMAL
        .replace("name: demo", "name:    \"Résumé 🚀 notes\"")
        .replace("  id: openai/gpt-5.6-terra", "      id: openai/gpt-5.6-terra   ");
    let (_dir, manifest) = repository(&loose);
    let expected = wb_ide::format(&loose, wb_ide::FormatOptions::default()).expect("formats");
    assert_ne!(expected, loose);
    for utf8 in [false, true] {
        let encoding = if utf8 { PositionEncoding::Utf8 } else { PositionEncoding::Utf16 };
        let mut client = Client::start(Options { utf8, ..Options::default() });
        let capabilities = &client.initialize_result.as_ref().expect("initialized").capabilities;
        assert_eq!(capabilities.document_formatting_provider, Some(lsp::OneOf::Left(true)));
        assert_eq!(capabilities.document_range_formatting_provider, Some(lsp::OneOf::Left(true)));
        client.open(&manifest, &loose);
        let options = json!({"tabSize": 2, "insertSpaces": true});
        let edits: Vec<lsp::TextEdit> = serde_json::from_value(client.request_raw(
            "textDocument/formatting",
            json!({"textDocument": {"uri": uri(&manifest)}, "options": options}),
        ))
        .expect("edits");
        assert_eq!(apply_lsp_edits(&loose, &edits, encoding), expected, "utf8: {utf8}");
        let quote = edits.iter().find(|edit| edit.range.start.line == 2).expect("the name line's edit");
        assert_eq!(quote.range.end.character, if utf8 { 30 } else { 26 }, "{quote:?}");

        // Only the `model.id` line (line 5) is asked for.
        let range = json!({"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 3}});
        let edits: Vec<lsp::TextEdit> = serde_json::from_value(client.request_raw(
            "textDocument/rangeFormatting",
            json!({"textDocument": {"uri": uri(&manifest)}, "range": range, "options": options}),
        ))
        .expect("edits");
        let partly = apply_lsp_edits(&loose, &edits, encoding);
        assert!(partly.contains("name:    \"Résumé 🚀 notes\"") && partly.contains("\n  id: openai/gpt-5.6-terra\n"));

        // Syntax errors: no edits.
        let broken = format!("{loose}oops: [\n");
        client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
            text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&manifest), version: 2 },
            content_changes: vec![lsp::TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: broken,
            }],
        });
        let answer = client.request_raw(
            "textDocument/formatting",
            json!({"textDocument": {"uri": uri(&manifest)}, "options": options}),
        );
        assert!(answer.is_null(), "{answer}");
        client.drain();
    }

    // `workbench.format.fieldOrder`.
    let unordered = MINIMAL.replace("spec: 1\nversion: 0.1.0\nname: demo\n", "name: demo\nspec: 1\nversion: 0.1.0\n");
    let (_dir, manifest) = repository(&unordered);
    let settings = json!({"workbench": {"format": {"fieldOrder": true}}});
    let mut client = Client::start(Options { settings, ..Options::default() });
    client.open(&manifest, &unordered);
    let edits: Vec<lsp::TextEdit> = serde_json::from_value(client.request_raw(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri(&manifest)}, "options": {"tabSize": 2, "insertSpaces": true}}),
    ))
    .expect("edits");
    let ordered = apply_lsp_edits(&unordered, &edits, PositionEncoding::Utf16);
    assert!(ordered.starts_with("spec: 1\nversion: 0.1.0\nname: demo\n"), "{ordered}");
    assert_eq!(Ok(ordered), wb_ide::format(&unordered, wb_ide::FormatOptions { field_order: true }));
    client.drain();
}

/// The prose checks through the server: a command the instructions run that `tools` lacks is published in
/// instructions.md; its quick fix, asked for in instructions.md, edits workbench.yml; an edit of the open
/// instructions.md (not saved) rechecks the package; and an open SKILL.md shows its own diagnostics together
/// with the package's prose warnings in it.
#[test]
fn prose_warnings_are_published_in_markdown_and_fixed_in_the_manifest() {
    let text =
        MINIMAL.replace("instructions: ./instructions.md\n", "instructions: ./instructions.md\ntools:\n  - git\n");
    let (_dir, manifest) = repository(&text);
    let instructions = manifest.with_file_name("instructions.md");
    let prose = "# Demo\n\nRun `jq -r .name package.json` and `git status`.\n";
    std::fs::write(&instructions, prose).expect("write");
    let code = |d: &lsp::Diagnostic| match &d.code {
        Some(lsp::NumberOrString::String(code)) => code.clone(),
        other => format!("{other:?}"),
    };
    let mut client = Client::start(Options::default());
    client.open(&manifest, &text);
    let published = client.diagnostics(&instructions, |p| !p.diagnostics.is_empty());
    let warning = &published.diagnostics[0];
    assert_eq!(published.diagnostics.len(), 1, "{:?}", published.diagnostics);
    assert_eq!(code(warning), "prose-undeclared-tool");
    assert_eq!(warning.severity, Some(lsp::DiagnosticSeverity::WARNING));
    assert_eq!(warning.message, "Command not declared in tools: jq");
    assert_eq!(warning.range, lsp::Range::new(lsp::Position::new(2, 5), lsp::Position::new(2, 7)));

    // The quick fix, asked for in the Markdown file (open, as an editor has it), edits the manifest.
    client.open(&instructions, prose);
    let actions = client.request::<r::CodeActionRequest>(lsp::CodeActionParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri(&instructions) },
        range: warning.range,
        context: lsp::CodeActionContext { diagnostics: vec![warning.clone()], only: None, trigger_kind: None },
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let actions: Vec<lsp::CodeAction> = actions
        .unwrap_or_default()
        .into_iter()
        .filter_map(|a| match a {
            lsp::CodeActionOrCommand::CodeAction(action) => Some(action),
            lsp::CodeActionOrCommand::Command(_) => None,
        })
        .collect();
    assert_eq!(actions.iter().map(|a| a.title.as_str()).collect::<Vec<_>>(), ["Add `jq` to tools"]);
    assert_eq!(actions[0].kind, Some(lsp::CodeActionKind::QUICKFIX));
    let changes = actions[0].edit.as_ref().and_then(|e| e.changes.as_ref()).expect("changes");
    assert_eq!(changes.keys().collect::<Vec<_>>(), [&uri(&manifest)], "only the manifest is edited");
    let fixed = apply_lsp_edits(&text, &changes[&uri(&manifest)], PositionEncoding::Utf16);
    assert!(fixed.contains("tools:\n  - git\n  - jq\n"), "{fixed}");

    // Typing in the open instructions rechecks the package from the buffer.
    let typed = "# Demo\n\nRun `yq .` now; post to ${WEBHOOK_URL}.\n";
    client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
        text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&instructions), version: 2 },
        content_changes: vec![lsp::TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: typed.into(),
        }],
    });
    let published = client.diagnostics(&instructions, |p| p.version == Some(2));
    let messages: Vec<&str> = published.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        ["Command not declared in tools: yq", "Environment variable not declared in env: WEBHOOK_URL"]
    );
    let clean = "# Demo\n\nRun `git status`.\n";
    client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
        text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&instructions), version: 3 },
        content_changes: vec![lsp::TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: clean.into(),
        }],
    });
    client.diagnostics(&instructions, |p| p.version == Some(3) && p.diagnostics.is_empty());

    // An open SKILL.md: its own frontmatter problem and the package's prose warning in it, published together.
    let listed = text.replace("tools:\n", "skills:\n  - ./skills/review\ntools:\n");
    std::fs::write(&manifest, &listed).expect("write");
    client.notify::<lsp::notification::DidChangeTextDocument>(lsp::DidChangeTextDocumentParams {
        text_document: lsp::VersionedTextDocumentIdentifier { uri: uri(&manifest), version: 2 },
        content_changes: vec![lsp::TextDocumentContentChangeEvent { range: None, range_length: None, text: listed }],
    });
    let skill = manifest.with_file_name("skills/review/SKILL.md");
    let body = "---\nname: reviewer\ndescription: Reviews.\n---\nRun `shellcheck x.sh`.\n";
    std::fs::write(&skill, body).expect("write");
    client.open(&skill, body);
    let published = client.diagnostics(&skill, |p| p.diagnostics.len() == 2);
    let mut codes: Vec<String> = published.diagnostics.iter().map(code).collect();
    codes.sort();
    assert_eq!(codes, ["prose-undeclared-tool", "skill-name-mismatch"]);
    client.drain();

    // A pull client asks for the Markdown file's diagnostics and gets the package's prose warnings in it.
    let mut client = Client::start(Options { pull: true, ..Options::default() });
    client.open(&manifest, &text);
    let report = client.request::<r::DocumentDiagnosticRequest>(lsp::DocumentDiagnosticParams {
        text_document: lsp::TextDocumentIdentifier { uri: uri(&instructions) },
        identifier: None,
        previous_result_id: None,
        work_done_progress_params: Default::default(),
        partial_result_params: Default::default(),
    });
    let lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Full(full)) = report else {
        panic!("full report")
    };
    let messages: Vec<String> = full.full_document_diagnostic_report.items.iter().map(|d| d.message.clone()).collect();
    assert_eq!(messages, ["Command not declared in tools: jq"]);
    client.drain();
}

/// As VS Code has it: only the instructions are open; the quick fix opens the manifest with its edit applied
/// (`didOpen` of a text that is not on disk), and the warning in the instructions goes.
#[test]
fn a_prose_warning_goes_when_the_fixed_manifest_is_opened() {
    let text =
        MINIMAL.replace("instructions: ./instructions.md\n", "instructions: ./instructions.md\ntools:\n  - git\n");
    let (_dir, manifest) = repository(&text);
    let instructions = manifest.with_file_name("instructions.md");
    let prose = "# Demo\n\nRun `jq .` and `git status`.\n";
    std::fs::write(&instructions, prose).expect("write");
    let root = manifest.ancestors().nth(3).expect("the repository").to_path_buf();
    let mut client = Client::start(Options { roots: vec![root], ..Options::default() });
    client.open(&instructions, prose);
    let published = client.diagnostics(&instructions, |p| !p.diagnostics.is_empty());
    assert_eq!(published.diagnostics[0].message, "Command not declared in tools: jq");
    client.open(&manifest, &text.replace("  - git\n", "  - git\n  - jq\n"));
    client.diagnostics(&instructions, |p| p.diagnostics.is_empty());
    client.drain();
}

/// A pull client (VS Code) is asked to pull again after a change, so a file whose diagnostics come from another
/// file's check (the instructions' prose warning, fixed in the manifest) is refreshed: the capability is read as
/// the specification spells it, `workspace.diagnostics.refreshSupport`.
#[test]
fn a_pull_client_is_asked_to_pull_again_after_a_change() {
    let text =
        MINIMAL.replace("instructions: ./instructions.md\n", "instructions: ./instructions.md\ntools:\n  - git\n");
    let (_dir, manifest) = repository(&text);
    let instructions = manifest.with_file_name("instructions.md");
    let prose = "# Demo\n\nRun `jq .` and `git status`.\n";
    std::fs::write(&instructions, prose).expect("write");
    let root = manifest.ancestors().nth(3).expect("the repository").to_path_buf();
    let mut client = Client::start(Options { roots: vec![root], pull: true, ..Options::default() });
    client.open(&instructions, prose);
    let pull = |client: &mut Client| {
        let report =
            client.request_raw("textDocument/diagnostic", json!({"textDocument": {"uri": uri(&instructions)}}));
        report["items"].as_array().map(|items| items.iter().map(|d| d["message"].to_string()).collect::<Vec<_>>())
    };
    assert_eq!(pull(&mut client), Some(vec!["\"Command not declared in tools: jq\"".to_owned()]));
    client.open(&manifest, &text.replace("  - git\n", "  - git\n  - jq\n"));
    // The refresh request is answered as it arrives, while the next request waits for its answer.
    assert_eq!(pull(&mut client), Some(Vec::new()));
    assert!(
        client.server_requests.iter().any(|method| method == "workspace/diagnostic/refresh"),
        "no refresh: {:?}",
        client.server_requests
    );
    client.drain();
}
