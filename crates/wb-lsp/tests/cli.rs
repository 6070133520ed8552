//! End-to-end tests of the `wb-lsp` binary: `check` in every output format (snapshots and shape checks), exit
//! codes, colour, `migrate`, `init` and `schema`.
//!
//! Every run starts the built binary with its working directory at a fixture repository, so paths print
//! relative to it. Absolute paths that messages carry are replaced by `[REPO]` in snapshots. Update the
//! snapshots with `INSTA_UPDATE=always cargo test -p wb-lsp --test cli` (or `cargo insta review`) and read the
//! changes before committing them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use wb_manifest::{ModelCatalog, OsFileSystem, check_manifest_bytes, repository_root};
use wb_testsupport::{Output, copy_tree, finish, isolate, repository_fixtures, temp_dir, write_file};

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/// The workspace root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn fixture(name: &str) -> PathBuf {
    repository_fixtures().join(name)
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
    isolate(&mut command).args(args).current_dir(dir).env_remove("NO_COLOR").env_remove("WB_LSP_MODEL_CATALOG");
    command
}

/// Runs `wb-lsp ARGS` in `dir`.
fn wb_lsp(dir: &Path, args: &[&str]) -> Output {
    finish(&mut command(dir, args))
}

fn wb_lsp_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = command(dir, args);
    command.envs(env.iter().copied());
    finish(&mut command)
}

/// Runs `check --format json` and parses the document.
fn check_json(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let out = wb_lsp(dir, &all);
    assert!(out.stderr.is_empty(), "{out:?}");
    (out.code, serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}")))
}

/// Every diagnostic of a JSON document, flattened.
fn diagnostics(document: &Value) -> Vec<&Value> {
    document["packages"].as_array().unwrap().iter().flat_map(|p| p["diagnostics"].as_array().unwrap()).collect()
}

/// A copy of a fixture repository in a temporary directory.
fn fixture_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let (temp, path) = temp_dir();
    let repo = path.join(name);
    copy_tree(&fixture(name), &repo);
    (temp, repo)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

fn assert_keys(value: &Value, keys: &[&str]) {
    let object = value.as_object().unwrap_or_else(|| panic!("not an object: {value}"));
    let actual: Vec<&str> = object.keys().map(String::as_str).collect();
    assert_eq!(actual, keys, "keys of {value}");
}

const ESC: &str = "\u{1b}[";

// ---------------------------------------------------------------------------------------------------------------
// check: output formats

/// `check` on fixtures/cli in one format, with absolute paths and the tool version redacted.
fn cli_fixture_output(format: &str) -> String {
    let dir = fixture("cli");
    let out = wb_lsp(&dir, &["check", "--format", format, "--color", "never"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    out.stdout.replace(&dir.display().to_string(), "[REPO]")
}

#[test]
fn snapshot_human() {
    insta::assert_snapshot!("check_human", cli_fixture_output("human"));
}

#[test]
fn snapshot_json() {
    insta::assert_snapshot!("check_json", cli_fixture_output("json"));
}

#[test]
fn snapshot_github() {
    insta::assert_snapshot!("check_github", cli_fixture_output("github"));
}

#[test]
fn snapshot_sarif() {
    let text = cli_fixture_output("sarif");
    let version = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    assert_eq!(text.matches(&version).count(), 1, "the driver version appears once");
    insta::assert_snapshot!("check_sarif", text.replace(&version, "\"version\": \"[VERSION]\""));
}

#[test]
fn json_output_has_the_documented_shape() {
    let dir = fixture("cli");
    let (code, document) = check_json(&dir, &[]);
    assert_eq!(code, 1);
    assert_keys(&document, &["version", "packages", "summary"]);
    assert_eq!(document["version"], 1);
    let packages = document["packages"].as_array().unwrap();
    let (mut errors, mut warnings) = (0, 0);
    for package in packages {
        assert_keys(package, &["path", "name", "valid", "diagnostics"]);
        let path = package["path"].as_str().unwrap();
        assert!(Path::new(path).is_relative() && dir.join(path).is_file(), "{path}");
        assert!(!package["name"].as_str().unwrap().is_empty());
        let mut package_errors = 0;
        for diagnostic in package["diagnostics"].as_array().unwrap() {
            assert_keys(diagnostic, &["code", "severity", "message", "path", "range", "fixes"]);
            for fix in diagnostic["fixes"].as_array().unwrap() {
                assert_keys(fix, &["title", "safe", "creates", "edits"]);
                for edit in fix["edits"].as_array().unwrap() {
                    assert_keys(edit, &["path", "range", "newText"]);
                    assert_keys(&edit["range"], &["start", "end"]);
                }
            }
            let code = diagnostic["code"].as_str().unwrap();
            assert!(!code.is_empty() && code.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
            match diagnostic["severity"].as_str().unwrap() {
                "error" => {
                    errors += 1;
                    package_errors += 1;
                }
                "warning" => warnings += 1,
                "information" | "hint" => {}
                other => panic!("unknown severity {other}"),
            }
            assert!(!diagnostic["message"].as_str().unwrap().is_empty());
            let file = diagnostic["path"].as_str().unwrap();
            assert!(Path::new(file).is_relative(), "{file}");
            let text = read(&dir.join(file));
            let range = &diagnostic["range"];
            assert_keys(range, &["start", "end"]);
            let mut positions = Vec::new();
            for end in ["start", "end"] {
                assert_keys(&range[end], &["line", "column"]);
                let line = range[end]["line"].as_u64().unwrap();
                let column = range[end]["column"].as_u64().unwrap();
                assert!(line >= 1 && column >= 1, "1-based: {diagnostic}");
                // The position is inside the file: at most one past the last character of its line.
                let line_text = text.split('\n').nth(usize::try_from(line - 1).unwrap()).unwrap();
                assert!(column <= line_text.chars().count() as u64 + 1, "{diagnostic}");
                positions.push((line, column));
            }
            assert!(positions[0] <= positions[1], "start before end: {diagnostic}");
        }
        assert_eq!(package["valid"], json!(package_errors == 0), "{package}");
    }
    assert_keys(&document["summary"], &["packages", "errors", "warnings"]);
    assert_eq!(document["summary"], json!({"packages": packages.len(), "errors": errors, "warnings": warnings}));

    let names: Vec<&str> = packages.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["broken", "skilled", "tidy"]);
    let valid: Vec<bool> = packages.iter().map(|p| p["valid"].as_bool().unwrap()).collect();
    assert_eq!(valid, [false, false, true]);
    assert_eq!(document["summary"], json!({"packages": 3, "errors": 8, "warnings": 4}));
}

#[test]
fn json_columns_count_unicode_characters() {
    let dir = fixture("cli");
    let text = read(&dir.join(".workbenches/broken/workbench.yml"));
    let line = text.lines().nth(9).unwrap();
    assert!(line.starts_with("requirements:"), "the fixture's line 10 moved: {line}");
    let byte = |needle: &str| line.find(needle).unwrap();
    let characters = |needle: &str| line[..byte(needle)].chars().count() as u64 + 1;
    let utf16 = |needle: &str| line[..byte(needle)].encode_utf16().count() as u64 + 1;
    // The fixture must tell the encodings apart: curly quotes (3 bytes) and a crab (4 bytes, 2 UTF-16 units).
    assert!(characters("0}") != utf16("0}") && utf16("0}") != byte("0}") as u64 + 1);

    let (_, document) = check_json(&dir, &[".workbenches/broken"]);
    let find = |message: &str| -> Value {
        diagnostics(&document).into_iter().find(|d| d["message"] == message).cloned().unwrap()
    };
    let range = |line: u64, start: u64, end: u64| json!({"start": {"line": line, "column": start}, "end": {"line": line, "column": end}});
    let os = find("requirements.os entries must be one of linux, macos, windows");
    assert_eq!(os["range"], range(10, characters("“macos”"), characters("“macos”") + 7));
    let arch = find("requirements.arch entries must be one of x64, arm64");
    assert_eq!(arch["range"], range(10, characters("🦀"), characters("🦀") + 1));
    let cpu = find("requirements.cpu must be a positive integer");
    assert_eq!(cpu["range"], range(10, characters("0}"), characters("0}") + 1));
    // Related locations are not part of the JSON shape, but the duplicate key itself is reported.
    let duplicate = find("Duplicate key: name");
    assert_eq!(duplicate["range"], range(11, 1, 5));
}

#[test]
fn sarif_output_validates_against_the_sarif_2_1_0_schema() {
    let schema: Value = serde_json::from_str(include_str!("data/sarif-schema-2.1.0.json")).unwrap();
    let validator = jsonschema::draft4::options().should_validate_formats(true).build(&schema).unwrap();
    // The validator does reject what the schema forbids.
    for broken in [json!({"runs": []}), json!({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]})] {
        assert!(!validator.is_valid(&broken), "{broken}");
    }
    let (_temp, temp) = temp_dir();
    std::fs::create_dir(temp.join("empty")).unwrap();
    let runs: [(PathBuf, &[&str], i32); 4] = [
        (fixture("cli"), &[], 1),
        (fixture("example-repo"), &[], 0),
        (fixture("cli"), &[".workbenches/tidy"], 0),
        // Diagnostics with no source text, and an absolute path outside the working directory.
        (temp.clone(), &["missing", "empty", "/nonexistent-wb-lsp-path/x y"], 1),
    ];
    for (dir, paths, expected) in runs {
        let mut args = vec!["check", "--format", "sarif"];
        args.extend_from_slice(paths);
        let out = wb_lsp(&dir, &args);
        assert_eq!(out.code, expected, "{out:?}");
        let document: Value = serde_json::from_str(&out.stdout).unwrap();
        let problems: Vec<String> =
            validator.iter_errors(&document).map(|error| format!("{}: {error}", error.instance_path())).collect();
        assert!(problems.is_empty(), "{} {paths:?}:\n{}", dir.display(), problems.join("\n"));

        // What the schema cannot say: rule indexes, levels and regions agree with the JSON output.
        let mut json_args = vec!["check", "--format", "json"];
        json_args.extend_from_slice(paths);
        let json_document: Value = serde_json::from_str(&wb_lsp(&dir, &json_args).stdout).unwrap();
        let run = &document["runs"][0];
        assert_eq!(run["columnKind"], "unicodeCodePoints");
        assert_eq!(run["tool"]["driver"]["name"], "wb-lsp");
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let results = run["results"].as_array().unwrap();
        let expected = diagnostics(&json_document);
        assert_eq!(results.len(), expected.len());
        for (result, diagnostic) in results.iter().zip(expected) {
            let index = usize::try_from(result["ruleIndex"].as_u64().unwrap()).unwrap();
            assert_eq!(rules[index]["id"], result["ruleId"]);
            assert_eq!(result["ruleId"], diagnostic["code"]);
            assert_eq!(result["message"]["text"], diagnostic["message"]);
            let level = match diagnostic["severity"].as_str().unwrap() {
                "error" => "error",
                "warning" => "warning",
                _ => "note",
            };
            assert_eq!(result["level"], level);
            let location = &result["locations"][0]["physicalLocation"];
            let uri = location["artifactLocation"]["uri"].as_str().unwrap();
            let path = diagnostic["path"].as_str().unwrap();
            if path.starts_with('/') {
                assert!(uri.starts_with("file:///") && !uri.contains(' '), "{uri}");
            } else {
                assert_eq!(uri, path);
            }
            let region = &location["region"];
            let range = &diagnostic["range"];
            assert_eq!(region["startLine"], range["start"]["line"]);
            assert_eq!(region["startColumn"], range["start"]["column"]);
            assert_eq!(region["endLine"], range["end"]["line"]);
            assert_eq!(region["endColumn"], range["end"]["column"]);
        }
    }
}

/// A package whose manifest has safe fixes (a misspelt runner, an undeclared `${NAME}` twice, a misspelt
/// key) and unsafe ones (an unknown field only removal fixes, a lowercase env name).
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

fn fixable_repo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (temp, dir) = temp_dir();
    let manifest = dir.join(".workbenches/fixable/workbench.yml");
    write_file(&manifest, FIXABLE);
    write_file(&dir.join(".workbenches/fixable/instructions.md"), "# Fixable\n");
    (temp, dir, manifest)
}

#[test]
fn check_fix_applies_the_safe_fixes_and_checks_again() {
    let (_temp, dir, manifest) = fixable_repo();
    let out = wb_lsp(&dir, &["check", "--color", "never"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("fix available: Change to `opencode` (run `wb-lsp check --fix`)"), "{}", out.stdout);
    assert!(out.stdout.contains("fix available: Remove `zzz_unknown`\n"), "{}", out.stdout);

    let out = wb_lsp(&dir, &["check", "--fix", "--format", "json"]);
    // What changed goes to stderr; stdout is the report of the fixed files.
    assert_eq!(
        out.stderr,
        "fixed .workbenches/fixable/workbench.yml: Change to `opencode`\n\
         fixed .workbenches/fixable/workbench.yml: Declare `API_TOKEN` in env\n"
    );
    let document: Value = serde_json::from_str(&out.stdout).unwrap();
    let codes: Vec<&str> = diagnostics(&document).iter().map(|d| d["code"].as_str().unwrap()).collect();
    // The unsafe fix (removing a field) is left for a person.
    assert_eq!(codes, ["unknown-field"], "{document}");
    assert_eq!(out.code, 1);
    let fixed = read(&manifest);
    assert!(fixed.contains("runner: opencode\n"), "{fixed}");
    assert!(fixed.contains("zzz_unknown: 1\n"), "{fixed}");
    // Declared once, although two headers reference it.
    assert_eq!(fixed.matches("API_TOKEN:\n    required: true\n").count(), 1, "{fixed}");
    assert!(fixed.ends_with("env:\n  API_TOKEN:\n    required: true\n"), "{fixed}");

    // Nothing safe is left: a second --fix changes nothing and says nothing.
    let out = wb_lsp(&dir, &["check", "--fix", "--format", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (1, ""));
    assert_eq!(read(&manifest), fixed);
}

#[test]
fn check_fix_migrates_a_clean_spec_0_manifest_only() {
    let (_temp, repo) = fixture_copy("example-repo");
    let legacy = repo.join(".workbenches/legacy-release/workbench.yml");
    let before = read(&legacy);
    let out = wb_lsp(&repo, &["check", "--fix", "--color", "never"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("fixed .workbenches/legacy-release/workbench.yml: Migrate to spec 1\n"), "{out:?}");
    let migrated = read(&legacy);
    assert_ne!(migrated, before);
    assert!(migrated.contains("spec: 1\n") && migrated.contains("runtimes:\n  docker:"), "{migrated}");
    // The same text `migrate --write` produces.
    let (_other_temp, other) = fixture_copy("example-repo");
    assert_eq!(wb_lsp(&other, &["migrate", "--write", ".workbenches/legacy-release"]).code, 0);
    assert_eq!(read(&other.join(".workbenches/legacy-release/workbench.yml")), migrated);

    // A spec 0 manifest with an error is not migrated unattended.
    let (_temp, dir) = temp_dir();
    let broken = dir.join(".workbenches/old/workbench.yml");
    let text = before.replace("name: legacy-release", "name: old").replace("version: 0.2.1", "version: one");
    write_file(&broken, &text);
    write_file(&dir.join(".workbenches/old/instructions.md"), "# Old\n");
    let out = wb_lsp(&dir, &["check", "--fix", "--format", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (1, ""), "{out:?}");
    assert_eq!(read(&broken), text);
}

#[test]
fn json_and_sarif_carry_each_fix_with_its_edits() {
    let (_temp, dir, _manifest) = fixable_repo();
    let (_, document) = check_json(&dir, &[]);
    let runner = diagnostics(&document).into_iter().find(|d| d["code"] == "unsupported-runner").cloned().unwrap();
    let range = json!({"start": {"line": 5, "column": 9}, "end": {"line": 5, "column": 16}});
    assert_eq!(runner["range"], range);
    assert_eq!(
        runner["fixes"],
        json!([{
            "title": "Change to `opencode`",
            "safe": true,
            "creates": [],
            "edits": [{"path": ".workbenches/fixable/workbench.yml", "range": range, "newText": "opencode"}],
        }])
    );
    let unknown = diagnostics(&document).into_iter().find(|d| d["code"] == "unknown-field").cloned().unwrap();
    assert_eq!(unknown["fixes"][0]["title"], "Remove `zzz_unknown`");
    assert_eq!(unknown["fixes"][0]["safe"], false);
    assert_eq!(
        unknown["fixes"][0]["edits"][0]["range"],
        json!({"start": {"line": 17, "column": 1}, "end": {"line": 18, "column": 1}})
    );

    let out = wb_lsp(&dir, &["check", "--format", "sarif"]);
    let sarif: Value = serde_json::from_str(&out.stdout).unwrap();
    let schema: Value = serde_json::from_str(include_str!("data/sarif-schema-2.1.0.json")).unwrap();
    let validator = jsonschema::draft4::options().should_validate_formats(true).build(&schema).unwrap();
    let problems: Vec<String> = validator.iter_errors(&sarif).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let result = results.iter().find(|r| r["ruleId"] == "unsupported-runner").unwrap();
    assert_eq!(
        result["fixes"],
        json!([{
            "description": {"text": "Change to `opencode`"},
            "artifactChanges": [{
                "artifactLocation": {"uri": ".workbenches/fixable/workbench.yml"},
                "replacements": [{
                    "deletedRegion": {"startLine": 5, "startColumn": 9, "endLine": 5, "endColumn": 16},
                    "insertedContent": {"text": "opencode"},
                }],
            }],
        }])
    );
    let declare = results.iter().find(|r| r["ruleId"] == "undeclared-env-reference").unwrap();
    let replacement = &declare["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert_eq!(replacement["deletedRegion"], json!({"startLine": 18, "startColumn": 1, "endLine": 18, "endColumn": 1}));
    assert_eq!(replacement["insertedContent"]["text"], "env:\n  API_TOKEN:\n    required: true\n");
}

#[test]
fn sarif_related_locations() {
    let out = wb_lsp(&fixture("cli"), &["check", "--format", "sarif"]);
    let document: Value = serde_json::from_str(&out.stdout).unwrap();
    let results = document["runs"][0]["results"].as_array().unwrap();
    let result = |rule: &str| results.iter().find(|r| r["ruleId"] == rule).unwrap();
    let duplicate = &result("duplicate-key")["relatedLocations"][0];
    assert_eq!(duplicate["id"], 0);
    assert_eq!(duplicate["physicalLocation"]["artifactLocation"]["uri"], ".workbenches/broken/workbench.yml");
    assert_eq!(duplicate["physicalLocation"]["region"]["startLine"], 4);
    assert_eq!(duplicate["message"]["text"], "`name` is first defined here");
    let skill = &result("skill-name-mismatch")["relatedLocations"][0];
    assert_eq!(skill["physicalLocation"]["artifactLocation"]["uri"], ".workbenches/skilled/skills/lint/SKILL.md");
    assert_eq!(skill["physicalLocation"]["region"]["startLine"], 2);
    assert_eq!(skill["message"]["text"], "Skill name must match its directory: linting");
}

#[test]
fn github_output_is_one_workflow_command_per_diagnostic() {
    let dir = fixture("cli");
    let out = wb_lsp(&dir, &["check", "--format", "github"]);
    assert_eq!(out.code, 1);
    let (_, document) = check_json(&dir, &[]);
    let expected = diagnostics(&document);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), expected.len());
    for (line, diagnostic) in lines.iter().zip(expected) {
        let command = match diagnostic["severity"].as_str().unwrap() {
            "error" => "error",
            "warning" => "warning",
            _ => "notice",
        };
        let range = &diagnostic["range"];
        let prefix = format!(
            "::{command} file={},line={},col={},endLine={},endColumn={},title=wb-lsp {}::",
            diagnostic["path"].as_str().unwrap(),
            range["start"]["line"],
            range["start"]["column"],
            range["end"]["line"],
            range["end"]["column"],
            diagnostic["code"].as_str().unwrap(),
        );
        assert!(line.starts_with(&prefix), "{line}\n{prefix}");
        let message = diagnostic["message"].as_str().unwrap();
        assert_eq!(&line[prefix.len()..], message.replace('%', "%25"));
    }
}

// ---------------------------------------------------------------------------------------------------------------
// check: exit codes, colour, paths

#[test]
fn exit_codes() {
    let cli = fixture("cli");
    let example = fixture("example-repo");
    // Valid (the example's spec 0 package has a hint, which is neither an error nor a warning).
    let out = wb_lsp(&example, &["check", "--deny-warnings"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.ends_with("4 packages checked: 0 errors, 0 warnings\n"), "{out:?}");
    assert_eq!(wb_lsp(&workspace(), &["check", "fixtures/example-repo"]).code, 0);
    // Errors.
    assert_eq!(wb_lsp(&cli, &["check"]).code, 1);
    assert_eq!(wb_lsp(&cli, &["check", ".workbenches/broken/workbench.yml"]).code, 1);
    // Warnings only: exit 0, or 1 with --deny-warnings.
    let out = wb_lsp(&cli, &["check", ".workbenches/tidy"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.ends_with("1 package checked: 0 errors, 1 warning\n"), "{out:?}");
    assert_eq!(wb_lsp(&cli, &["check", "--deny-warnings", ".workbenches/tidy"]).code, 1);
    for format in ["json", "sarif", "github"] {
        assert_eq!(wb_lsp(&cli, &["check", "--deny-warnings", "--format", format, ".workbenches/tidy"]).code, 1);
    }
    // Usage errors.
    for args in [
        &["check", "--bogus"][..],
        &["check", "--format", "xml"],
        &["check", "--color", "sometimes"],
        &["frobnicate"],
        &["migrate", "--write", "--check"],
        &["init"],
        &["schema", "--spec", "2"],
    ] {
        let out = wb_lsp(&cli, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stdout.is_empty() && out.stderr.starts_with("error: "), "{args:?}: {out:?}");
    }
}

#[test]
fn model_catalog_option() {
    let cli = fixture("cli");
    let (_temp, temp) = temp_dir();
    // A file that does not exist or does not parse is a usage error, reported once.
    let missing = temp.join("missing.json");
    let out = wb_lsp(&cli, &["--model-catalog", missing.to_str().unwrap(), "check"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.is_empty());
    let expected = format!("error: Model catalog is unreadable: {}: ", missing.display());
    assert!(out.stderr.starts_with(&expected) && out.stderr.lines().count() == 1, "{out:?}");
    assert_eq!(out.stderr.matches("(os error").count(), 1, "the cause is printed once: {out:?}");
    let invalid = temp.join("invalid.json");
    write_file(&invalid, "{\"models\": ");
    let out = wb_lsp(&cli, &["check", "--model-catalog", invalid.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.starts_with("error: Model catalog is invalid: "), "{out:?}");
    let out = wb_lsp_env(&cli, &["check"], &[("WB_LSP_MODEL_CATALOG", missing.to_str().unwrap())]);
    assert_eq!(out.code, 2, "{out:?}");

    // A catalog that knows the `skilled` package's model removes its unknown-model warning.
    let catalog = temp.join("catalog.json");
    write_file(
        &catalog,
        r#"{"version": "test", "providers": {"acme": {"name": "Acme", "env": ["ACME_API_KEY"]}},
            "models": {"acme/house-model": {"name": "House", "providers": {"acme": "house-1"}}}}"#,
    );
    let codes = |args: &[&str], env: &[(&str, &str)]| -> Vec<String> {
        let mut all = vec!["check", "--format", "json", ".workbenches/skilled"];
        all.extend_from_slice(args);
        let out = wb_lsp_env(&cli, &all, env);
        let document: Value = serde_json::from_str(&out.stdout).unwrap();
        diagnostics(&document).iter().map(|d| d["code"].as_str().unwrap().to_owned()).collect()
    };
    assert!(codes(&[], &[]).contains(&"unknown-model".to_owned()));
    assert!(!codes(&["--model-catalog", catalog.to_str().unwrap()], &[]).contains(&"unknown-model".to_owned()));
    assert!(!codes(&[], &[("WB_LSP_MODEL_CATALOG", catalog.to_str().unwrap())]).contains(&"unknown-model".to_owned()));
}

#[test]
fn missing_paths_and_directories_without_manifests_are_reported_as_packages() {
    let (_temp, dir) = temp_dir();
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::create_dir_all(dir.join("repo/.workbenches/no-manifest")).unwrap();
    let (code, document) = check_json(&dir, &["does-not-exist", "empty", "repo"]);
    assert_eq!(code, 1);
    let diagnostic = |path: &str, code: &str, message: String| {
        json!({
            "code": code,
            "severity": "error",
            "message": message,
            "path": path,
            "range": {"start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 1}},
            "fixes": [],
        })
    };
    let missing = dir.join("does-not-exist");
    let manifest = dir.join("repo/.workbenches/no-manifest/workbench.yml");
    assert_eq!(
        document,
        json!({
            "version": 1,
            "packages": [
                {
                    "path": "does-not-exist",
                    "name": "does-not-exist",
                    "valid": false,
                    "diagnostics": [diagnostic(
                        "does-not-exist",
                        "path-not-found",
                        format!("Workbench path does not exist: {}", missing.display()),
                    )],
                },
                {
                    "path": "empty",
                    "name": "empty",
                    "valid": false,
                    "diagnostics": [diagnostic(
                        "empty",
                        "no-workbenches",
                        format!("No Workbenches found in {}", dir.join("empty").display()),
                    )],
                },
                {
                    "path": "repo/.workbenches/no-manifest/workbench.yml",
                    "name": "no-manifest",
                    "valid": false,
                    "diagnostics": [diagnostic(
                        "repo/.workbenches/no-manifest/workbench.yml",
                        "path-not-found",
                        format!("Workbench manifest does not exist: {}", manifest.display()),
                    )],
                },
            ],
            "summary": {"packages": 3, "errors": 3, "warnings": 0},
        })
    );
    // The human format shows them too (with no source line to point into), and the summary counts them.
    let out = wb_lsp(&dir, &["check", "--color", "never", "does-not-exist", "empty"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("error[path-not-found]: Workbench path does not exist: "), "{out:?}");
    assert!(out.stdout.contains("error[no-workbenches]: No Workbenches found in "), "{out:?}");
    assert!(out.stdout.ends_with("2 packages checked: 2 errors, 0 warnings\n"), "{out:?}");
    // With no path, the working directory is checked.
    let (code, document) = check_json(&dir.join("empty"), &[]);
    assert_eq!(code, 1);
    assert_eq!(document["packages"][0]["path"], ".");
    assert_eq!(document["packages"][0]["diagnostics"][0]["code"], "no-workbenches");
}

#[test]
fn colour_follows_the_color_option() {
    let cli = fixture("cli");
    let human = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["check"];
        all.extend_from_slice(args);
        wb_lsp_env(&cli, &all, env).stdout
    };
    assert!(human(&["--color", "always"], &[]).contains(ESC));
    // An explicit --color always wins over NO_COLOR.
    assert!(human(&["--color", "always"], &[("NO_COLOR", "1")]).contains(ESC));
    assert!(!human(&["--color", "never"], &[]).contains(ESC));
    // Auto: output to a pipe is never coloured.
    assert!(!human(&[], &[]).contains(ESC));
    assert!(!human(&["--color", "auto"], &[("NO_COLOR", "1")]).contains(ESC));
    // Only the human format is ever coloured.
    for format in ["json", "sarif", "github"] {
        assert!(!human(&["--color", "always", "--format", format], &[]).contains(ESC), "{format}");
    }
    // The uncoloured text is the coloured text without its escapes.
    let coloured = human(&["--color", "always"], &[]);
    assert_eq!(strip_ansi(&coloured), human(&["--color", "never"], &[]));
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            // CSI: ESC [ parameters final-byte.
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[test]
fn colour_auto_on_a_terminal_honours_no_color() {
    // Auto mode colours only a terminal, so this needs a pseudo-terminal: util-linux `script` provides one.
    let available = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("util-linux"));
    // Debian's bsdutils (essential: always installed) has it.
    assert!(available, "util-linux `script` is needed (Debian's bsdutils, or util-linux elsewhere)");
    let binary = env!("CARGO_BIN_EXE_wb-lsp").replace('\'', "'\\''");
    let on_terminal = |no_color: Option<&str>| -> String {
        let mut command = Command::new("script");
        isolate(&mut command)
            .args(["--quiet", "--return", "--command", &format!("'{binary}' check .workbenches/tidy"), "/dev/null"])
            .current_dir(fixture("cli"))
            .env_remove("NO_COLOR")
            .env_remove("WB_LSP_MODEL_CATALOG")
            .stdin(std::process::Stdio::null());
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        }
        let output = command.output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let coloured = on_terminal(None);
    assert!(coloured.contains("1 package checked"), "`script` could not run wb-lsp on a pseudo-terminal: {coloured}");
    assert!(coloured.contains(ESC), "{coloured}");
    let plain = on_terminal(Some("1"));
    assert!(plain.contains("1 package checked") && !plain.contains(ESC), "{plain}");
    // An empty NO_COLOR does not count (no-color.org).
    assert!(on_terminal(Some("")).contains(ESC));
}

// ---------------------------------------------------------------------------------------------------------------
// migrate

const LEGACY: &str = ".workbenches/legacy-release/workbench.yml";

#[test]
fn migrate_prints_a_unified_diff_and_writes_nothing() {
    let (_temp, repo) = fixture_copy("example-repo");
    let before = read(&repo.join(LEGACY));
    let out = wb_lsp(&repo, &["migrate"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    assert!(out.stdout.starts_with(&format!("--- a/{LEGACY}\n+++ b/{LEGACY}\n@@ -1,5 +1,5 @@\n")), "{out:?}");
    assert_eq!(out.stdout.matches("--- a/").count(), 1, "only the spec 0 package changes: {out:?}");
    for line in ["-spec: 0", "+spec: 1", "-runtime: docker", "+runtimes:", "+  docker:"] {
        assert!(out.stdout.lines().any(|l| l.starts_with(line)), "{line}: {out:?}");
    }
    assert_eq!(read(&repo.join(LEGACY)), before, "the default mode writes nothing");
    // The diff, applied, gives what --write writes.
    let migrated = wb_manifest::migrate::migrate_text(&before).unwrap().unwrap();
    assert_eq!(apply_unified_diff(&before, &out.stdout), migrated);
    // Paths name a package directory or a manifest file.
    assert_eq!(wb_lsp(&repo, &["migrate", ".workbenches/legacy-release"]).stdout, out.stdout);
    assert_eq!(wb_lsp(&repo, &["migrate", LEGACY]).stdout, out.stdout);
    assert_eq!(wb_lsp(&repo, &["migrate", ".workbenches/reviewer"]).stdout, "");
}

/// Applies a unified diff of one file (as `migrate` prints it) to the original text.
fn apply_unified_diff(original: &str, diff: &str) -> String {
    let old: Vec<&str> = original.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut cursor = 0;
    for line in diff.split_inclusive('\n').skip(2) {
        if let Some(header) = line.strip_prefix("@@ -") {
            let start: usize = header.split([',', ' ']).next().unwrap().parse().unwrap();
            while cursor + 1 < start {
                out.push_str(old[cursor]);
                cursor += 1;
            }
        } else if let Some(added) = line.strip_prefix('+') {
            out.push_str(added);
        } else if let Some(removed) = line.strip_prefix('-') {
            assert_eq!(old[cursor], removed);
            cursor += 1;
        } else if let Some(context) = line.strip_prefix(' ') {
            assert_eq!(old[cursor], context);
            out.push_str(context);
            cursor += 1;
        } else if !line.starts_with('\\') {
            panic!("unexpected diff line: {line:?}");
        }
    }
    for rest in &old[cursor..] {
        out.push_str(rest);
    }
    out
}

#[test]
fn migrate_check_and_write() {
    let (_temp, repo) = fixture_copy("example-repo");
    let manifest = repo.join(LEGACY);
    let before = read(&manifest);
    let out = wb_lsp(&repo, &["migrate", "--check"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(out.stderr, "1 manifest(s) would be migrated\n");
    assert_eq!(read(&manifest), before, "--check writes nothing");

    let out = wb_lsp(&repo, &["migrate", "--write"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(out.stderr, format!("migrated {LEGACY}\n"));
    let after = read(&manifest);
    assert_eq!(after, wb_manifest::migrate::migrate_text(&before).unwrap().unwrap());
    assert!(
        after.contains("spec: 1\n")
            && after.contains("runtimes:\n  docker: # the release job runs in CI's container\n    image: ghcr.io/"),
        "{after}"
    );
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(manifest.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    // Nothing is left to migrate.
    let out = wb_lsp(&repo, &["migrate", "--check"]);
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (0, "", ""), "{out:?}");
    assert_eq!(wb_lsp(&repo, &["migrate"]).stdout, "");
    assert_eq!(wb_lsp(&repo, &["migrate", "--write"]).code, 0);
    assert_eq!(read(&manifest), after, "migrating twice changes nothing");

    // The result checks clean: no errors, no warnings, and the spec 0 hint is gone.
    let (code, document) = check_json(&repo, &[]);
    assert_eq!(code, 0);
    assert_eq!(document["summary"], json!({"packages": 4, "errors": 0, "warnings": 0}));
    assert!(diagnostics(&document).is_empty(), "{document}");
    assert_eq!(wb_lsp(&repo, &["check", "--deny-warnings"]).code, 0);
}

#[test]
fn migrate_keeps_comments() {
    let (_temp, repo) = fixture_copy("example-repo");
    let manifest = repo.join(LEGACY);
    write_file(
        &manifest,
        "# yaml-language-server: $schema=https://workbenches.dev/schemas/v0/workbench.schema.json\n\
         # Release automation.\n\
         spec: 0 # legacy\n\
         version: 0.2.1\n\
         name: legacy-release\n\
         runner: opencode\n\
         model:\n\
         \x20 id: openai/gpt-5.1-codex # pinned\n\
         instructions: ./instructions.md\n\
         # Where it runs:\n\
         runtime: docker\n\
         # The release image.\n\
         image:\n\
         \x20 # Built from the package.\n\
         \x20 build: ./Dockerfile # not checked in yet\n\
         \x20 context: . # the package\n\
         docker:\n\
         \x20 engine:\n\
         \x20   mode: host # builds and pushes the service image\n\
         tools: [git] # and nothing else\n\
         # The end.\n",
    );
    write_file(&repo.join(".workbenches/legacy-release/Dockerfile"), "FROM scratch\n");
    let before = read(&manifest);
    let out = wb_lsp(&repo, &["migrate", "--write", LEGACY]);
    assert_eq!(out.code, 0, "{out:?}");
    let after = read(&manifest);
    for comment in before.lines().filter_map(|line| line.find('#').map(|at| line[at..].trim_end())) {
        assert!(after.contains(comment), "lost {comment:?}:\n{after}");
    }
    assert!(after.contains("runtimes:\n  docker:\n    image:\n      # Built from the package.\n"), "{after}");
    assert!(after.contains("      build: ./Dockerfile # not checked in yet\n"), "{after}");
    assert!(after.contains("        mode: host # builds and pushes the service image\n"), "{after}");
    let out = wb_lsp(&repo, &["check", "--format", "github", LEGACY]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out:?}");
}

#[test]
fn migrate_keeps_the_comment_after_the_runtime_value() {
    let (_temp, repo) = fixture_copy("example-repo");
    let before = read(&repo.join(LEGACY));
    assert!(before.contains("runtime: docker # the release job runs in CI's container\n"));
    assert_eq!(wb_lsp(&repo, &["migrate", "--write"]).code, 0);
    let after = read(&repo.join(LEGACY));
    assert!(after.contains("# the release job runs in CI's container"), "{after}");
}

#[test]
fn migrate_failures() {
    let (_temp, repo) = fixture_copy("example-repo");
    // A path that does not exist, and a directory without packages, are usage errors.
    let out = wb_lsp(&repo, &["migrate", "nope"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr, format!("error: Workbench path does not exist: {}\n", repo.join("nope").display()));
    let out = wb_lsp(&repo, &["migrate", "src"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr, format!("error: No Workbenches found in {}\n", repo.join("src").display()));
    // A manifest that cannot be migrated mechanically fails and is left alone; the others still migrate.
    let local_image = repo.join(".workbenches/local-image/workbench.yml");
    let text = "spec: 0\nversion: 0.1.0\nname: local-image\nrunner: opencode\nmodel:\n  id: openai/gpt-5.1\n\
                instructions: ./instructions.md\nruntime: local\nimage: ghcr.io/example/x:1\n";
    write_file(&local_image, text);
    write_file(&repo.join(".workbenches/local-image/instructions.md"), "# x\n");
    let out = wb_lsp(&repo, &["migrate", "--write"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains(
            "error: .workbenches/local-image/workbench.yml: cannot migrate: the local runtime takes no image; remove image first\n"
        ),
        "{out:?}"
    );
    assert!(out.stderr.contains(&format!("migrated {LEGACY}\n")), "{out:?}");
    assert_eq!(read(&local_image), text);
}

#[test]
fn migrate_refuses_a_migration_that_adds_errors() {
    let (_temp, repo) = fixture_copy("example-repo");
    // Spec 1 requires a Daytona class that spec 0 never checked.
    let daytona = repo.join(".workbenches/daytona/workbench.yml");
    let text = "spec: 0\nversion: 0.1.0\nname: daytona\nrunner: opencode\nmodel:\n  id: openai/gpt-5.1\n\
                instructions: ./instructions.md\nruntime: daytona\n";
    write_file(&daytona, text);
    write_file(&repo.join(".workbenches/daytona/instructions.md"), "# x\n");
    let out = wb_lsp(&repo, &["migrate", "--write", ".workbenches/daytona"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: .workbenches/daytona/workbench.yml: the migrated manifest would not check cleanly; fix its errors first\n"
    );
    assert_eq!(read(&daytona), text);
}

/// Every `workbench.yml` under `dir` whose YAML says `spec: 0`.
fn spec_0_manifests(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap()).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let kind = entry.file_type().unwrap();
        let path = entry.path();
        if kind.is_dir() {
            spec_0_manifests(&path, found);
        } else if kind.is_file() && entry.file_name() == "workbench.yml" {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let parsed = wb_syntax::parse_str(&text);
            let spec = parsed.root.as_ref().and_then(|root| root.as_mapping()).and_then(|m| m.get("spec"));
            if spec.is_some_and(|spec| matches!(spec.value, wb_syntax::Value::Number(n) if n == 0.0)) {
                found.push(path);
            }
        }
    }
}

#[test]
fn every_clean_spec_0_fixture_migrates_to_an_equivalent_spec_1_manifest() {
    // Other fixtures (fixtures/cases) come and go: discover them now.
    let mut manifests = Vec::new();
    spec_0_manifests(&workspace().join("fixtures"), &mut manifests);
    for expected in [fixture("example-repo").join(LEGACY), fixture("cli").join(".workbenches/tidy/workbench.yml")] {
        assert!(manifests.contains(&expected), "{} not found", expected.display());
    }
    let catalog = ModelCatalog::embedded();
    let mut migrated = Vec::new();
    for manifest in &manifests {
        let bytes = std::fs::read(manifest).unwrap();
        let original = check_manifest_bytes(&OsFileSystem, manifest, &bytes, catalog);
        if original.errors() > 0 {
            continue;
        }
        let text = String::from_utf8(bytes).unwrap();
        let Ok(Some(expected)) = wb_manifest::migrate::migrate_text(&text) else { continue };
        // End to end: the binary migrates a copy of the package's repository.
        let root = repository_root(manifest).unwrap();
        let relative = manifest.strip_prefix(&root).unwrap().to_str().unwrap();
        let (_temp, temp) = temp_dir();
        let copy = temp.join("repo");
        copy_tree(&root, &copy);
        let out = wb_lsp(&copy, &["migrate", "--write", relative]);
        assert_eq!(out.code, 0, "{}: {out:?}", manifest.display());
        let written = read(&copy.join(relative));
        assert_eq!(written, expected, "{}", manifest.display());
        let after = check_manifest_bytes(&OsFileSystem, &copy.join(relative), written.as_bytes(), catalog);
        let errors: Vec<_> = after.diagnostics.iter().filter(|d| d.severity == wb_manifest::Severity::Error).collect();
        assert!(errors.is_empty(), "{}: the migrated manifest has errors: {errors:#?}", manifest.display());
        assert_eq!(
            after.manifest.as_ref().unwrap().normalized(),
            original.manifest.as_ref().unwrap().normalized(),
            "{}: the migrated manifest means something else",
            manifest.display()
        );
        assert!(after.diagnostics.iter().all(|d| d.code != wb_manifest::Code::Spec0Manifest), "{}", manifest.display());
        let out = wb_lsp(&copy, &["check", relative]);
        assert_eq!(out.code, 0, "{}: {out:?}", manifest.display());
        migrated.push(manifest);
    }
    eprintln!("migrated {} of {} spec 0 manifests: {migrated:#?}", migrated.len(), manifests.len());
    assert!(migrated.len() >= 2, "{migrated:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// init

#[test]
fn init_scaffolds_a_package_that_checks_clean() {
    let (_temp, dir) = temp_dir();
    let out = wb_lsp(&dir, &["init", "demo"]);
    assert_eq!(out.code, 0, "{out:?}");
    let package = dir.join(".workbenches/demo");
    // The files it created and what to do next, relative to the working directory.
    assert_eq!(
        out.stdout,
        "Created .workbenches/demo/workbench.yml\nCreated .workbenches/demo/instructions.md\n\
         Next: describe the work in .workbenches/demo/instructions.md, then run \
         `wb-lsp check .workbenches/demo` and `wb-lsp smoke .workbenches/demo`\n"
    );
    let mut names: Vec<String> =
        std::fs::read_dir(&package).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["instructions.md", "workbench.yml"]);
    let manifest = read(&package.join("workbench.yml"));
    for line in ["spec: 1\n", "name: demo\n", "description: Repository-maintained expertise for demo tasks.\n"] {
        assert!(manifest.contains(line), "{line}: {manifest}");
    }
    assert!(manifest.ends_with("runtimes:\n  local: {}\n"), "{manifest}");
    assert_eq!(read(&package.join("instructions.md")).lines().count(), 3);
    let (code, document) = check_json(&dir, &[]);
    assert_eq!(code, 0);
    assert_eq!(document["summary"], json!({"packages": 1, "errors": 0, "warnings": 0}), "{document}");
    assert_eq!(document["packages"][0]["name"], "demo");
    // --dir chooses the repository.
    let out = wb_lsp(&dir, &["init", "other", "--dir", "nested/repo"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("Created nested/repo/.workbenches/other/workbench.yml\n"), "{out:?}");
    assert!(dir.join("nested/repo/.workbenches/other/workbench.yml").is_file());
    assert_eq!(wb_lsp(&dir.join("nested/repo"), &["check", "--deny-warnings"]).code, 0);
}

#[test]
fn init_with_runtimes_runner_and_model() {
    let (_temp, dir) = temp_dir();
    let out = wb_lsp(&dir, &["init", "api", "--runtimes", "docker,local", "--image", "ghcr.io/example/api:1.0.0"]);
    assert_eq!(out.code, 0, "{out:?}");
    let manifest = read(&dir.join(".workbenches/api/workbench.yml"));
    assert!(
        manifest.ends_with("runtimes:\n  docker:\n    image: ghcr.io/example/api:1.0.0\n  local: {}\n"),
        "{manifest}"
    );
    let args = ["init", "review", "--runner", "claude-code", "--model", "anthropic/claude-sonnet-4.5"];
    assert_eq!(wb_lsp(&dir, &args).code, 0);
    let manifest = read(&dir.join(".workbenches/review/workbench.yml"));
    assert!(manifest.contains("runner: claude-code\nmodel:\n  id: anthropic/claude-sonnet-4.5\n"), "{manifest}");
    let args = ["init", "sandbox", "--runtimes", "e2b,daytona", "--image", "ghcr.io/example/sandbox:2"];
    assert_eq!(wb_lsp(&dir, &args).code, 0);
    let manifest = read(&dir.join(".workbenches/sandbox/workbench.yml"));
    assert!(
        manifest.ends_with("runtimes:\n  e2b:\n    image: ghcr.io/example/sandbox:2\n  daytona:\n    class: linux\n"),
        "{manifest}"
    );
    let (code, document) = check_json(&dir, &[]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["summary"]["packages"], 3);
    assert_eq!(document["summary"]["errors"], 0, "{document}");
}

#[test]
fn init_errors() {
    let (_temp, dir) = temp_dir();
    let cases: [(&[&str], &str); 7] = [
        (&["Bad_Name"], "Invalid Workbench name: Bad_Name"),
        (&["x", "--runtimes", "docker"], "--image is required for the docker and e2b runtime"),
        (&["x", "--runtimes", "local,e2b"], "--image is required for the docker and e2b runtime"),
        (&["x", "--image", "ghcr.io/example/x:1"], "--image applies only to the docker and e2b runtimes"),
        (&["x", "--runtimes", "daytona", "--image", "x:1"], "--image applies only to the docker and e2b runtimes"),
        (&["x", "--runtimes", "local,local"], "--runtimes must not repeat a runtime"),
        (&["x", "--runtimes", "local,k8s"], "Unknown runtime: k8s. Known runtimes: local, docker, e2b, daytona"),
    ];
    for (args, message) in cases {
        let mut all = vec!["init"];
        all.extend_from_slice(args);
        let out = wb_lsp(&dir, &all);
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert_eq!(out.stderr, format!("error: {message}\n"), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        assert!(!dir.join(".workbenches").exists(), "{args:?} created files");
    }
    // An existing package directory is refused and left alone.
    assert_eq!(wb_lsp(&dir, &["init", "demo"]).code, 0);
    let manifest = dir.join(".workbenches/demo/workbench.yml");
    std::fs::write(&manifest, "edited\n").unwrap();
    let out = wb_lsp(&dir, &["init", "demo", "--runtimes", "docker", "--image", "x:1"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, format!("error: Workbench already exists: {}\n", dir.join(".workbenches/demo").display()));
    assert_eq!(read(&manifest), "edited\n");
    // So is an empty directory of that name.
    std::fs::create_dir_all(dir.join(".workbenches/empty")).unwrap();
    let out = wb_lsp(&dir, &["init", "empty"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, format!("error: Workbench already exists: {}\n", dir.join(".workbenches/empty").display()));
    assert!(std::fs::read_dir(dir.join(".workbenches/empty")).unwrap().next().is_none());
}

#[test]
fn init_refuses_an_unknown_model_and_names_the_nearest_catalog_ids() {
    let (_temp, dir) = temp_dir();
    let refused = |model: &str| {
        format!(
            "error: Model is not available in the model catalog: {model}. Configure unknown models directly with \
             explicit routes and runner_config.\n"
        )
    };
    let cases = [
        (
            "anthropic/claude-sonnet-4-5",
            "help: did you mean `anthropic/claude-sonnet-4.5`? (`wb-lsp models` lists the model catalog)\n",
        ),
        (
            "openai/gpt-5.6-tera",
            "help: did you mean `openai/gpt-5.6-terra`? (`wb-lsp models` lists the model catalog)\n",
        ),
        ("acme/nope", "help: `wb-lsp models` lists the model catalog\n"),
    ];
    for (model, help) in cases {
        let out = wb_lsp(&dir, &["init", "x", "--model", model]);
        assert_eq!(out.code, 1, "{model}: {out:?}");
        assert_eq!(out.stderr, format!("{}{help}", refused(model)), "{model}");
        assert!(out.stdout.is_empty(), "{model}: {out:?}");
        assert!(!dir.join(".workbenches").exists(), "{model} created files");
    }
    // An id of a known lab far from every catalog id lists that lab's models.
    let out = wb_lsp(&dir, &["init", "x", "--model", "xai/grok-99-ultra-max"]);
    assert_eq!(out.code, 1, "{out:?}");
    let help = out.stderr.lines().nth(1).unwrap_or_default();
    assert!(help.starts_with("help: did you mean one of `xai/"), "{out:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// models

#[test]
fn models_lists_the_catalog() {
    let root = workspace();
    let catalog = ModelCatalog::embedded();
    let out = wb_lsp(&root, &["models"]);
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("ID ") && lines[0].contains(" NAME ") && lines[0].ends_with(" PROVIDERS"), "{out:?}");
    assert_eq!(lines.len(), catalog.models.len() + 1, "{out:?}");
    let sonnet = lines.iter().find(|line| line.starts_with("anthropic/claude-sonnet-4.5 ")).expect("sonnet listed");
    assert!(
        sonnet.contains("Claude Sonnet 4.5") || sonnet.contains(&catalog.models["anthropic/claude-sonnet-4.5"].name)
    );
    assert!(sonnet.split("  ").last().unwrap().trim_start().starts_with("anthropic"), "the lab first: {sonnet}");

    let out = wb_lsp(&root, &["models", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let document: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_keys(&document, &["catalog", "models"]);
    assert_eq!(document["catalog"], catalog.version.as_str());
    let models = document["models"].as_array().unwrap();
    assert_eq!(models.len(), catalog.models.len());
    for model in models {
        assert_keys(model, &["id", "name", "providers"]);
        let id = model["id"].as_str().unwrap();
        let entry = &catalog.models[id];
        assert_eq!(model["name"], entry.name.as_str());
        let providers = model["providers"].as_array().unwrap();
        assert_eq!(providers.len(), entry.providers.len(), "{id}");
        for provider in providers {
            assert_keys(provider, &["provider", "model"]);
            assert_eq!(entry.providers[provider["provider"].as_str().unwrap()], provider["model"].as_str().unwrap());
        }
    }

    // A filter keeps the models whose id or name contains it.
    let out = wb_lsp(&root, &["models", "--json", "SONNET"]);
    let document: Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = document["models"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["anthropic/claude-sonnet-4.5"]);
    let out = wb_lsp(&root, &["models", "no-such-model-anywhere"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "No models match.\n"), "{out:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// check: SOURCE#selector and suggestions

/// Issue 41: a selector in a directory with no `.workbenches/` gets the reference's text, not "No Workbenches found
/// in …": from `check` (once, at the source's path) and `smoke`.
#[test]
fn a_selector_where_there_is_no_package_matches_nothing() {
    let (_temp, dir) = temp_dir();
    let (code, document) = check_json(&dir, &[".#tidy"]);
    assert_eq!(code, 1, "{document}");
    let found = diagnostics(&document);
    assert_eq!(found.len(), 1, "{document}");
    assert_eq!(found[0]["code"], "no-workbenches", "{document}");
    assert_eq!(found[0]["message"], "No matching Workbenches found", "{document}");
    assert_eq!(document["packages"][0]["path"], ".");
    let out = wb_lsp(&dir, &["smoke", ".#tidy"]);
    assert_eq!(out.stderr, "error: No matching Workbenches found\n", "{out:?}");
    // Without a selector the directory keeps its own text.
    let (_, document) = check_json(&dir, &[]);
    assert!(diagnostics(&document)[0]["message"].as_str().unwrap().starts_with("No Workbenches found in "));
}

#[test]
fn check_accepts_a_selector_like_run() {
    let dir = fixture("cli");
    let (_, all) = check_json(&dir, &[]);
    assert_eq!(all["summary"]["packages"], 3, "{all}");
    // By directory name, with or without a path in front.
    for source in ["#tidy", ".#tidy", &format!("{}#tidy", dir.display())] {
        let (code, document) = check_json(&dir, &[source]);
        assert_eq!(code, 0, "{source}: {document}");
        let packages = document["packages"].as_array().unwrap();
        assert_eq!(packages.len(), 1, "{source}: {document}");
        assert_eq!(packages[0]["path"], ".workbenches/tidy/workbench.yml", "{source}");
    }
    let (code, document) = check_json(&dir, &[".#broken"]);
    assert_eq!(code, 1, "{document}");
    assert_eq!(document["packages"].as_array().unwrap().len(), 1);
    assert_eq!(document["packages"][0]["path"], ".workbenches/broken/workbench.yml");
    // A selector that picks nothing is the reference's text, once, at the source's path.
    let (code, document) = check_json(&dir, &[".#nope"]);
    assert_eq!(code, 1, "{document}");
    let found = diagnostics(&document);
    assert_eq!(found.len(), 1, "{document}");
    assert_eq!(found[0]["code"], "no-workbenches");
    assert_eq!(found[0]["message"], "No matching Workbenches found");
    assert_eq!(document["packages"][0]["path"], ".");
    let out = wb_lsp(&dir, &["check", "--color", "never", ".#nope"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("error[no-workbenches]: No matching Workbenches found\n"), "{out:?}");
    // A path that does not exist keeps its own problem.
    let (_, document) = check_json(&dir, &["missing#tidy"]);
    assert_eq!(diagnostics(&document)[0]["code"], "path-not-found", "{document}");
}

#[test]
fn check_shows_each_suggestion_as_a_fix() {
    let dir = fixture("cases/suggestions");
    let cases = [
        ("runner-shortened", "Unsupported runner: claude", "Change to `claude-code`"),
        (
            "model-version-separator",
            "Unknown model anthropic/claude-sonnet-4-5.",
            "Change to `anthropic/claude-sonnet-4.5`",
        ),
        ("model-typo", "Unknown model openai/gpt-5.6-tera.", "Change to `openai/gpt-5.6-terra`"),
        ("provider-typo", "Unknown model provider: opnai", "Change to `openai`"),
        ("instructions-typo", "Instructions file does not exist: ", "Change to `./instructions.md`"),
        ("env-typo", "references undeclared environment variable: GITHUB_TOKN", "Change to `${GITHUB_TOKEN}`"),
        ("env-flow-empty", "references undeclared environment variable: GITHUB_TOKEN", "Declare `GITHUB_TOKEN` in env"),
    ];
    for (package, message, fix) in cases {
        let out = wb_lsp(&dir, &["check", "--color", "never", &format!(".#{package}")]);
        assert!(out.stdout.contains(message), "{package}: {out:?}");
        // A safe fix adds "(run `wb-lsp check --fix`)" to the line.
        assert!(out.stdout.contains(&format!("fix available: {fix}")), "{package}: {out:?}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// schema

// ---------------------------------------------------------------------------------------------------------------
// doctor

#[test]
fn doctor_reports_runners_docker_credentials_and_the_store_without_values() {
    use std::os::unix::fs::PermissionsExt;
    let (_temp, root) = temp_dir();
    let executable = |path: &Path| {
        write_file(path, "#!/bin/sh\nexit 0\n");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    // opencode from its npm package at the verified version, claude from elsewhere, pi only in the runner cache.
    let package = root.join("lib/node_modules/opencode-ai");
    write_file(&package.join("package.json"), r#"{"name": "opencode-ai", "version": "1.18.33"}"#);
    executable(&package.join("bin/opencode"));
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::os::unix::fs::symlink(package.join("bin/opencode"), root.join("bin/opencode")).unwrap();
    executable(&root.join("bin/claude"));
    let home = root.join("home");
    executable(&home.join(".cache/wb-lsp/runners/node_modules/.bin/pi"));
    let secret = "sk-doctor-canary-5ec2e7";
    let doctor = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
        command
            .args(args)
            .current_dir(&root)
            .env_clear()
            .env("PATH", root.join("bin"))
            .env("HOME", &home)
            .env("WORKBENCH_HOME", root.join("wb-home"))
            .env("DOCKER_HOST", "unix:///nonexistent-wb-lsp/docker.sock")
            .env("OPENAI_API_KEY", secret)
            .env("GOOGLE_API_KEY", secret);
        finish(&mut command)
    };
    let out = doctor(&["doctor", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret), "{out:?}");
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_keys(&report, &["runners", "docker", "credentials", "outcome_store"]);
    let runners = report["runners"].as_array().unwrap();
    let names: Vec<&str> = runners.iter().map(|r| r["runner"].as_str().unwrap()).collect();
    assert_eq!(names, ["opencode", "claude-code", "pi"]);
    assert_keys(
        &runners[0],
        &[
            "runner",
            "executable",
            "npm_package",
            "verified_versions",
            "path",
            "version",
            "verified",
            "in_cache",
            "install",
        ],
    );
    assert_eq!(runners[0]["path"], root.join("bin/opencode").display().to_string());
    assert_eq!((&runners[0]["version"], &runners[0]["verified"]), (&json!("1.18.33"), &json!(true)));
    assert_eq!(runners[0]["install"], "npm install -g opencode-ai@1.18.33");
    assert_eq!(runners[1]["executable"], "claude");
    assert_eq!(runners[1]["npm_package"], "@anthropic-ai/claude-code");
    assert_eq!((&runners[1]["version"], &runners[1]["verified"]), (&Value::Null, &Value::Null));
    assert_eq!(runners[2]["path"], Value::Null);
    assert_eq!(runners[2]["in_cache"], home.join(".cache/wb-lsp/runners/node_modules/.bin/pi").display().to_string());
    assert_keys(&report["docker"], &["reachable", "version", "error"]);
    assert_eq!(report["docker"]["reachable"], false);
    let credentials = report["credentials"].as_array().unwrap();
    let provider = |name: &str| credentials.iter().find(|c| c["provider"] == name).unwrap().clone();
    assert_keys(&provider("openai"), &["provider", "variables", "ready"]);
    assert_eq!(provider("openai")["variables"], json!([{"name": "OPENAI_API_KEY", "set": true}]));
    assert_eq!(
        provider("anthropic"),
        json!({"provider": "anthropic", "variables": [{"name": "ANTHROPIC_API_KEY", "set": false}], "ready": false})
    );
    assert_eq!(provider("google")["ready"], true);
    assert_keys(&report["outcome_store"], &["home", "bytes", "quota", "warning"]);
    assert_eq!(report["outcome_store"]["home"], root.join("wb-home").display().to_string());
    assert_eq!(report["outcome_store"]["bytes"], 0);
    assert!(report["outcome_store"]["quota"].as_u64().unwrap() > 0);

    let out = doctor(&["doctor"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("runner opencode: {}, version 1.18.33 (verified)", root.join("bin/opencode").display())
    );
    assert_eq!(
        lines[1],
        format!("runner claude-code: {}, version unknown (verified: 2.1.332)", root.join("bin/claude").display())
    );
    assert!(lines[2].starts_with("runner pi: `pi` is not on PATH but in the runner cache: "), "{}", lines[2]);
    assert!(lines[3].starts_with("docker: not reachable: "), "{}", lines[3]);
    assert!(lines.contains(&"credentials openai: OPENAI_API_KEY set"), "{lines:?}");
    assert!(lines.contains(&"credentials anthropic: ANTHROPIC_API_KEY not set"), "{lines:?}");
    assert!(lines.last().unwrap().starts_with("outcome store: "), "{lines:?}");
}

#[test]
fn schema_prints_the_committed_schemas() {
    let root = workspace();
    for spec in [0, 1] {
        let out = wb_lsp(&root, &["schema", "--spec", &spec.to_string()]);
        assert_eq!(out.code, 0, "{out:?}");
        let printed: Value = serde_json::from_str(&out.stdout).unwrap();
        let committed: Value =
            serde_json::from_str(&read(&root.join(format!("schemas/v{spec}/workbench.schema.json")))).unwrap();
        assert_eq!(printed, committed, "spec {spec}");
        assert!(jsonschema::draft202012::meta::is_valid(&printed), "spec {spec}");
    }
    assert_eq!(wb_lsp(&root, &["schema"]).stdout, wb_lsp(&root, &["schema", "--spec", "1"]).stdout);
}

/// A manifest written loosely: deep indentation, spacing around `:` and `-`, quotes it does not need, trailing
/// spaces and blank lines, and a comment that must stay with its line.
const LOOSE: &str = "spec: 1\nname:   \"loose\"\nversion: 1.0.0\ndescription: Loose.\nrunner: opencode\nmodel:\n      # the model\n      id: openai/gpt-5.1   \ninstructions: ./instructions.md\nskills:\n-    ./skills/a\n\n\n\nruntimes:\n  local: {}\n";
const LOOSE_FORMATTED: &str = "spec: 1\nname: loose\nversion: 1.0.0\ndescription: Loose.\nrunner: opencode\nmodel:\n  # the model\n  id: openai/gpt-5.1\ninstructions: ./instructions.md\nskills:\n  - ./skills/a\n\nruntimes:\n  local: {}\n";

#[test]
fn fmt_checks_diffs_and_writes_manifests() {
    let (_temp, repo) = fixture_copy("example-repo");
    let loose = repo.join(".workbenches/loose/workbench.yml");
    std::fs::create_dir_all(loose.parent().unwrap()).unwrap();
    std::fs::write(&loose, LOOSE).unwrap();
    let name = ".workbenches/loose/workbench.yml";

    let out = wb_lsp(&repo, &["fmt", "--check"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, format!("would reformat {name}\n"), "only the loose manifest: {out:?}");
    assert!(out.stderr.ends_with("1 would be reformatted, 4 already formatted\n"), "{out:?}");
    assert_eq!(read(&loose), LOOSE, "--check writes nothing");

    let out = wb_lsp(&repo, &["fmt", "--diff", name]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.starts_with(&format!("--- a/{name}\n+++ b/{name}\n")), "{out:?}");
    assert_eq!(apply_unified_diff(LOOSE, &out.stdout), LOOSE_FORMATTED);
    assert_eq!(read(&loose), LOOSE, "--diff writes nothing");

    let out = wb_lsp(&repo, &["fmt"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, format!("formatted {name}\n1 formatted, 4 already formatted\n"));
    assert_eq!(read(&loose), LOOSE_FORMATTED);
    let out = wb_lsp(&repo, &["fmt", "--check"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "formatting is idempotent: {out:?}");

    // The standard's order, only when asked: `runtimes` keeps the author's order.
    std::fs::write(&loose, "name: loose\nspec: 1\nruntimes:\n  local: {}\n  docker:\n    image: x\n").unwrap();
    assert_eq!(wb_lsp(&repo, &["fmt", "--check", name]).code, 0);
    let out = wb_lsp(&repo, &["fmt", "--field-order", name]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(read(&loose), "spec: 1\nname: loose\nruntimes:\n  local: {}\n  docker:\n    image: x\n");

    // A manifest that does not parse is reported and left alone; the exit code says so.
    std::fs::write(&loose, "spec: 1\nname: [\n").unwrap();
    let out = wb_lsp(&repo, &["fmt", "--check"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains(&format!("error: {name}: not formatted: it has syntax errors")), "{out:?}");
    assert_eq!(read(&loose), "spec: 1\nname: [\n");
    assert_eq!(wb_lsp(&repo, &["fmt", "missing-dir"]).code, 2);
}
