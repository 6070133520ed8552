//! Trial tasks (`trials/<id>/task.json`): checked with exact ranges on their own and as part of `check`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use wb_manifest::trial_task::{FixtureSource, check_task};
use wb_manifest::{Code, ModelCatalog, OsFileSystem};

const MANIFEST: &str = "spec: 1\nversion: 1.0.0\nname: demo\ndescription: Demo.\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nruntimes:\n  local: {}\n";

/// A repository with one package, and a task directory `trials/<id>/` holding `prompt.md` and `task`.
fn package_with_task(root: &Path, id: &str, task: &str) -> PathBuf {
    let package = root.join(".workbenches/demo");
    let dir = package.join("trials").join(id);
    std::fs::create_dir_all(dir.join("fixture")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(package.join("workbench.yml"), MANIFEST).unwrap();
    std::fs::write(package.join("instructions.md"), "# Demo\n").unwrap();
    std::fs::write(dir.join("prompt.md"), "Fix the bug.\n").unwrap();
    std::fs::write(dir.join("task.json"), task).unwrap();
    dir.join("task.json")
}

const VALID: &str = r#"{
  "version": 1,
  "id": "fix-bug",
  "title": "Fix the failing test",
  "fixture": {"kind": "dir", "path": "fixture"},
  "timeoutMinutes": 20,
  "setup": ["npm ci"],
  "gates": [
    {"id": "tests", "title": "The tests pass", "run": "npm test", "timeoutSeconds": 300},
    {"id": "lint", "run": "npm run lint"}
  ],
  "criteria": [{"id": "small", "text": "The change is small."}]
}
"#;

/// Each diagnostic as (code, the text its range covers, message).
fn found(text: &str, diagnostics: &[wb_manifest::Diagnostic]) -> Vec<(Code, String, String)> {
    diagnostics.iter().map(|d| (d.code, text[d.range.start..d.range.end].to_owned(), d.message.clone())).collect()
}

#[test]
fn a_valid_task_is_read_whole() {
    let temp = tempfile::tempdir().unwrap();
    let path = package_with_task(temp.path(), "fix-bug", VALID);
    let (task, diagnostics) = check_task(&OsFileSystem, &path, VALID, Some("demo"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let task = task.expect("the task");
    assert_eq!((task.id.as_str(), task.title.as_str()), ("fix-bug", "Fix the failing test"));
    assert_eq!(task.fixture.source, FixtureSource::Dir(path.parent().unwrap().join("fixture")));
    assert_eq!(task.timeout_minutes, Some(20.0));
    assert_eq!(task.setup, ["npm ci"]);
    let gates: Vec<(&str, &str, Option<u64>)> =
        task.gates.iter().map(|g| (g.id.as_str(), g.run.as_str(), g.timeout_seconds)).collect();
    assert_eq!(gates, [("tests", "npm test", Some(300)), ("lint", "npm run lint", None)]);
    assert_eq!(task.criteria[0].text, "The change is small.");
}

#[test]
fn every_problem_is_reported_at_its_value() {
    let text = r#"{
  "version": 2,
  "id": "other",
  "title": "",
  "workbench": "someone-else",
  "fixture": {"kind": "git", "url": "https://example.com/r.git", "commit": "main", "subdir": "../up", "branch": "x"},
  "timeoutMinutes": -1,
  "gates": [
    {"id": "tests", "title": "No command"},
    {"id": "tests", "run": "true", "timeoutSeconds": 1.5}
  ],
  "owner": "me"
}"#;
    let temp = tempfile::tempdir().unwrap();
    let path = package_with_task(temp.path(), "fix-bug", text);
    let (task, diagnostics) = check_task(&OsFileSystem, &path, text, Some("demo"));
    assert!(task.is_none(), "a task with errors is not returned");
    let mut shown = found(text, &diagnostics);
    shown.sort();
    let mut expected = vec![
        (Code::InvalidValue, "2".to_owned(), "Trial task version must be 1".to_owned()),
        (
            Code::InvalidValue,
            "\"other\"".to_owned(),
            "Trial task id must be the name of its directory (fix-bug): other".to_owned(),
        ),
        (Code::EmptyValue, "\"\"".to_owned(), "Trial task title must be a non-empty string".to_owned()),
        (
            Code::InvalidValue,
            "\"someone-else\"".to_owned(),
            "Trial task is for workbench someone-else, but it is in the trials of demo".to_owned(),
        ),
        (Code::UnknownField, "\"branch\"".to_owned(), "Unknown git fixture field: branch".to_owned()),
        (
            Code::InvalidValue,
            "\"main\"".to_owned(),
            "Trial task fixture commit must be a full 40-character commit id: main".to_owned(),
        ),
        (
            Code::PathOutsideRepository,
            "\"../up\"".to_owned(),
            "Trial task fixture subdir must be a relative path inside the repository: ../up".to_owned(),
        ),
        (Code::InvalidValue, "-1".to_owned(), "Trial task timeoutMinutes must be a positive number".to_owned()),
        (Code::MissingField, "\"id\"".to_owned(), "Trial task gates[0].run is required".to_owned()),
        (Code::DuplicateName, "\"tests\"".to_owned(), "Duplicate gate id: tests".to_owned()),
        (
            Code::InvalidValue,
            "1.5".to_owned(),
            "Trial task gates[1].timeoutSeconds must be a positive whole number".to_owned(),
        ),
        (Code::UnknownField, "\"owner\"".to_owned(), "Unknown trial task field: owner".to_owned()),
    ];
    expected.sort();
    assert_eq!(shown, expected);
    let duplicate = diagnostics.iter().find(|d| d.code == Code::DuplicateName).unwrap();
    assert_eq!(&text[duplicate.related[0].range.start..duplicate.related[0].range.end], "\"tests\"");
}

#[test]
fn a_missing_fixture_directory_prompt_and_gates_are_named() {
    let text = r#"{"version": 1, "id": "fix-bug", "title": "T", "fixture": {"kind": "dir", "path": "nowhere", "overlay": "/abs"}}"#;
    let temp = tempfile::tempdir().unwrap();
    let path = package_with_task(temp.path(), "fix-bug", text);
    std::fs::remove_file(path.parent().unwrap().join("prompt.md")).unwrap();
    let (_, diagnostics) = check_task(&OsFileSystem, &path, text, None);
    let shown: Vec<(Code, String)> =
        found(text, &diagnostics).into_iter().map(|(code, covered, _)| (code, covered)).collect();
    assert!(shown.contains(&(Code::PathNotRelative, "\"/abs\"".to_owned())), "{diagnostics:#?}");
    assert!(shown.contains(&(Code::MissingField, "\"version\"".to_owned())), "gates: {diagnostics:#?}");
    let prompt = diagnostics.iter().find(|d| d.code == Code::PathNotFound && d.message.contains("prompt.md"));
    assert!(prompt.is_some(), "{diagnostics:#?}");
    // The overlay was refused first; the path is checked once the overlay is well-formed.
    let text = text.replace("\"/abs\"", "\"fixture\"");
    let (_, diagnostics) = check_task(&OsFileSystem, &path, &text, None);
    let missing = diagnostics.iter().find(|d| d.message.starts_with("Trial task fixture path is not a directory"));
    assert_eq!(missing.map(|d| &text[d.range.start..d.range.end]), Some("\"nowhere\""), "{diagnostics:#?}");
}

#[test]
fn not_json_and_not_an_object() {
    let temp = tempfile::tempdir().unwrap();
    let path = package_with_task(temp.path(), "fix-bug", "[]");
    let (_, diagnostics) = check_task(&OsFileSystem, &path, "[1, 2]", None);
    assert_eq!(diagnostics[0].code, Code::ManifestNotObject);
    let (_, diagnostics) = check_task(&OsFileSystem, &path, "{\"version\": 1,,}", None);
    assert_eq!(diagnostics[0].code, Code::YamlSyntax);
    assert!(diagnostics[0].message.starts_with("Trial task is not valid JSON"), "{diagnostics:?}");
}

/// `check` of a package checks its trial tasks and reports their problems in their own files.
#[test]
fn check_reports_the_problems_of_every_task() {
    let temp = tempfile::tempdir().unwrap();
    let good = package_with_task(temp.path(), "fix-bug", VALID);
    let bad_text = VALID.replace("\"run\": \"npm run lint\"", "\"title\": \"Lint\"").replace("fix-bug", "lint-only");
    let bad = package_with_task(temp.path(), "lint-only", &bad_text);
    let manifest = temp.path().join(".workbenches/demo/workbench.yml");
    let report = wb_manifest::check_package(&OsFileSystem, &manifest, ModelCatalog::embedded());
    let in_tasks: Vec<(&Path, Code)> =
        report.diagnostics.iter().filter(|d| d.path != manifest).map(|d| (d.path.as_path(), d.code)).collect();
    assert_eq!(in_tasks, [(bad.as_path(), Code::MissingField)], "{:#?}", report.diagnostics);
    assert!(report.sources.contains_key(&bad), "the task's text, for the report's code frames");
    assert!(!report.diagnostics.iter().any(|d| d.path == good));
    // A task directory without task.json is named.
    std::fs::create_dir_all(temp.path().join(".workbenches/demo/trials/empty")).unwrap();
    let report = wb_manifest::check_package(&OsFileSystem, &manifest, ModelCatalog::embedded());
    assert!(report.diagnostics.iter().any(|d| d.message.starts_with("Trial task directory has no task.json")));
}
