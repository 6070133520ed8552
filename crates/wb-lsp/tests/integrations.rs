//! The one-step integrations, tested with the real tools: the pre-commit hook (tests/integrations/pre-commit.sh,
//! with pre-commit from PyPI), the GitHub Action (tests/integrations/action.sh, which runs action.yml's steps
//! locally), the VS Code extension's unit tests (`npm ci && npm test` in editors/vscode), and the SchemaStore
//! catalog (schemas/catalog.json). Cargo builds the binary; its path reaches the scripts as `WB_LSP_BIN`.
//! A missing tool fails the test with an install hint unless `WB_LSP_SKIP_INTEGRATION_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

const SKIP_VARIABLE: &str = "WB_LSP_SKIP_INTEGRATION_TESTS";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

fn skipping(what: &str) -> bool {
    let skip = std::env::var(SKIP_VARIABLE).is_ok_and(|value| value == "1");
    if skip {
        eprintln!("skipping {what}: {SKIP_VARIABLE}=1");
    }
    skip
}

/// True when `program` runs with `args` and exits successfully.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|output| output.status.success())
}

/// Fails with an install hint when a tool is missing.
fn require(available: bool, tool: &str, install: &str) {
    assert!(
        available,
        "{tool} is not available, so this integration cannot be tested.\n\
         Install it ({install}) or set {SKIP_VARIABLE}=1 to skip the integration tests."
    );
}

fn show(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Runs a script of tests/integrations with the binary under test, and fails with its output if it fails.
fn run_script(script: &str) {
    let root = repository_root();
    let started = Instant::now();
    let output = wb_testsupport::isolate(&mut Command::new("bash"))
        .arg(root.join(script))
        .env("WB_LSP_BIN", env!("CARGO_BIN_EXE_wb-lsp"))
        .current_dir(&root)
        .output()
        .expect("bash runs");
    let (stdout, stderr) = show(&output);
    eprintln!("{stdout}{script} took {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        output.status.success(),
        "{script} failed with {}.\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        output.status
    );
}

#[test]
fn pre_commit_hook_checks_the_repository() {
    if skipping("the pre-commit test") {
        return;
    }
    require(runs("git", &["--version"]), "git", "Debian: apt-get install -y git");
    require(
        runs("python3", &["-m", "pre_commit", "--version"]),
        "pre-commit for python3",
        "pip install pre-commit; scripts/test.sh does this",
    );
    run_script("tests/integrations/pre-commit.sh");
}

#[test]
fn github_action_runs_its_steps_locally() {
    if skipping("the GitHub Action test") {
        return;
    }
    require(runs("python3", &["--version"]), "python3", "Debian: apt-get install -y python3");
    require(
        runs("python3", &["-c", "import yaml"]),
        "PyYAML for python3",
        "pip install pyyaml; scripts/test.sh does this",
    );
    run_script("tests/integrations/action.sh");
}

#[test]
fn vscode_extension_unit_tests_pass() {
    if skipping("the VS Code extension tests") {
        return;
    }
    require(
        runs("npm", &["--version"]),
        "npm (with Node.js 20 or later)",
        "Node.js 20 or later with npm; `npm ci` also needs the npm registry",
    );
    let directory = repository_root().join("editors/vscode");
    for args in [&["ci", "--no-audit", "--no-fund", "--loglevel=error"][..], &["test"][..]] {
        let started = Instant::now();
        let output = Command::new("npm").args(args).current_dir(&directory).output().expect("npm runs");
        let (stdout, stderr) = show(&output);
        eprintln!("npm {} took {:.1} s", args.join(" "), started.elapsed().as_secs_f64());
        if args[0] == "test" {
            // node:test's summary (`# tests N`, `# pass N`, `# fail N`).
            let summary: Vec<&str> =
                stdout.lines().filter(|line| line.starts_with("# ") && !line.starts_with("# Subtest")).collect();
            eprintln!("{}", summary.join("\n"));
        }
        assert!(
            output.status.success(),
            "`npm {}` in editors/vscode failed with {}.\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
            args.join(" "),
            output.status
        );
    }
}

/// A glob as SchemaStore's `fileMatch` uses it (minimatch): `**` spans directories, `*` one segment's characters.
fn glob_matches(pattern: &str, path: &str) -> bool {
    fn segments(pattern: &[&str], path: &[&str]) -> bool {
        match pattern.split_first() {
            None => path.is_empty(),
            Some((&"**", rest)) => (0..=path.len()).any(|skip| segments(rest, &path[skip..])),
            Some((first, rest)) => path
                .split_first()
                .is_some_and(|(segment, tail)| segment_matches(first, segment) && segments(rest, tail)),
        }
    }
    fn segment_matches(pattern: &str, segment: &str) -> bool {
        let pattern: Vec<char> = pattern.chars().collect();
        let segment: Vec<char> = segment.chars().collect();
        fn go(p: &[char], s: &[char]) -> bool {
            match p.split_first() {
                None => s.is_empty(),
                Some(('*', rest)) => (0..=s.len()).any(|skip| go(rest, &s[skip..])),
                Some(('?', rest)) => !s.is_empty() && go(rest, &s[1..]),
                Some((c, rest)) => s.first() == Some(c) && go(rest, &s[1..]),
            }
        }
        go(&pattern, &segment)
    }
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    segments(&pattern, &path)
}

#[test]
fn glob_matching_follows_minimatch_for_the_patterns_used() {
    assert!(glob_matches("**/.workbenches/*/workbench.yml", ".workbenches/x/workbench.yml"));
    assert!(glob_matches("**/.workbenches/*/workbench.yml", "a/b/.workbenches/x/workbench.yml"));
    assert!(!glob_matches("**/.workbenches/*/workbench.yml", ".workbenches/workbench.yml"));
    assert!(!glob_matches("**/.workbenches/*/workbench.yml", ".workbenches/x/y/workbench.yml"));
    assert!(glob_matches("*.json", "a.json"));
    assert!(!glob_matches("*.json", "d/a.json"));
}

#[test]
fn schema_catalog_maps_manifests_to_our_schemas() {
    let root = repository_root();
    let text = std::fs::read_to_string(root.join("schemas/catalog.json")).expect("schemas/catalog.json");
    let catalog: serde_json::Value = serde_json::from_str(&text).expect("schemas/catalog.json is JSON");
    let schema_id = |spec: u8| -> String {
        let path = root.join(format!("schemas/v{spec}/workbench.schema.json"));
        let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        schema["$id"].as_str().expect("the schema has an $id").to_owned()
    };
    let (v0, v1) = (schema_id(0), schema_id(1));
    assert_eq!(v1, "https://raw.githubusercontent.com/wb-lsp/wb-lsp/main/schemas/v1/workbench.schema.json");

    // The shape of SchemaStore's catalog format (https://json.schemastore.org/schema-catalog.json).
    let top = catalog.as_object().expect("the catalog is an object");
    assert_eq!(top.get("$schema").and_then(|v| v.as_str()), Some("https://json.schemastore.org/schema-catalog.json"));
    assert!(top.get("version").is_some_and(serde_json::Value::is_number), "version is a number");
    for key in top.keys() {
        assert!(["$schema", "version", "schemas"].contains(&key.as_str()), "unexpected top-level key {key}");
    }
    let schemas = top.get("schemas").and_then(|v| v.as_array()).expect("schemas is an array");
    assert_eq!(schemas.len(), 1, "one entry: the Workbench manifest");
    let entry = schemas[0].as_object().expect("a schema entry is an object");
    for key in entry.keys() {
        assert!(
            ["name", "description", "fileMatch", "url", "versions"].contains(&key.as_str()),
            "unexpected key {key} in the schema entry"
        );
    }
    for key in ["name", "description", "url"] {
        assert!(entry.get(key).and_then(|v| v.as_str()).is_some_and(|s| !s.is_empty()), "{key} is a non-empty string");
    }

    let url = entry["url"].as_str().unwrap();
    assert_eq!(url, v1, "the catalog points at our v1 schema");
    let versions = entry.get("versions").and_then(|v| v.as_object()).expect("versions");
    assert_eq!(versions.get("0").and_then(|v| v.as_str()), Some(v0.as_str()));
    assert_eq!(versions.get("1").and_then(|v| v.as_str()), Some(v1.as_str()));
    for link in versions.values().map(|v| v.as_str().unwrap()).chain([url]) {
        assert!(link.starts_with("https://"), "SchemaStore requires https URLs: {link}");
        let local = link
            .strip_prefix("https://raw.githubusercontent.com/wb-lsp/wb-lsp/main/")
            .expect("a URL into this repository's main branch");
        assert!(root.join(local).is_file(), "{local} exists in the repository");
    }

    let file_match: Vec<&str> = entry["fileMatch"]
        .as_array()
        .expect("fileMatch is an array")
        .iter()
        .map(|v| v.as_str().expect("fileMatch entries are strings"))
        .collect();
    let mut unique = file_match.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), file_match.len(), "fileMatch entries are unique");
    let matches = |path: &str| file_match.iter().any(|pattern| glob_matches(pattern, path));
    for manifest in [".workbenches/x/workbench.yml", "repo/.workbenches/docs-writer/workbench.yml"] {
        assert!(matches(manifest), "fileMatch {file_match:?} covers {manifest}");
    }
    for other in [
        "workbench.yml",
        ".workbenches/workbench.yml",
        ".workbenches/x/skills/y/workbench.yml",
        ".workbenches/x/config.yml",
        ".github/workflows/ci.yml",
    ] {
        assert!(!matches(other), "fileMatch {file_match:?} does not claim {other}");
    }
    // The VS Code extension's yamlValidation uses the same pattern.
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("editors/vscode/package.json")).unwrap()).unwrap();
    assert_eq!(package["contributes"]["yamlValidation"][0]["fileMatch"].as_str(), file_match.first().copied());
}
