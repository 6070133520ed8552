//! The VS Code extension (editors/vscode) in a real VS Code: code-server in headless Chromium, driven with
//! Playwright by editors/vscode/e2e/run.mjs, against the wb-lsp binary Cargo builds. The driver packages the
//! extension's .vsix (or takes `WB_VSCODE_VSIX`), installs it into code-server, opens a scratch repository and
//! asserts, from the page, diagnostics, completion, hover, a quick fix, the spec 0 → 1 migration, the code lenses
//! and palette commands (dry run, smoke, run with a fake OpenCode, the outcome's diff, artifact and apply), the
//! Workbench Runs view (a detached run listed with its cost, attached, killed, its outcome opened) and the
//! missing-server message. Screenshots go to `WB_VSCODE_ARTIFACTS` (default target/vscode-e2e).
//!
//! The setup (Node 24, code-server, playwright-core, Chromium) comes from scripts/install-vscode-e2e.sh, cached
//! under `WB_VSCODE_E2E_DIR` (default ~/.cache/wb-lsp/vscode-e2e); scripts/test.sh runs it. Without the setup
//! the test fails with that hint; `WB_LSP_SKIP_EDITOR_TESTS=1` skips it like the other editor tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SKIP_VARIABLE: &str = "WB_LSP_SKIP_EDITOR_TESTS";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

/// The setup's `NAME=VALUE` lines ($WB_VSCODE_E2E_DIR/env, written by scripts/install-vscode-e2e.sh), with the
/// process environment winning.
fn setup() -> Result<HashMap<String, String>, String> {
    let dir = std::env::var_os("WB_VSCODE_E2E_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache/wb-lsp/vscode-e2e")
    });
    let file = dir.join("env");
    let text = std::fs::read_to_string(&file)
        .map_err(|error| format!("{} is unreadable ({error}): run scripts/install-vscode-e2e.sh", file.display()))?;
    let mut values: HashMap<String, String> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    for name in ["WB_VSCODE_NODE", "WB_VSCODE_CODE_SERVER", "WB_VSCODE_CHROMIUM", "WB_VSCODE_NODE_PATH"] {
        if let Ok(value) = std::env::var(name) {
            values.insert(name.to_owned(), value);
        }
        let value = values.get(name).ok_or_else(|| format!("{} does not set {name}", file.display()))?;
        if !Path::new(value).exists() {
            return Err(format!(
                "{name}={value} (from {}) does not exist: run scripts/install-vscode-e2e.sh",
                file.display()
            ));
        }
    }
    values.insert("WB_VSCODE_E2E_DIR".to_owned(), dir.display().to_string());
    Ok(values)
}

#[test]
fn vscode_shows_diagnostics_completion_hover_fixes_runs_and_outcomes() {
    if std::env::var(SKIP_VARIABLE).is_ok_and(|value| value == "1") {
        eprintln!("skipping the VS Code test: {SKIP_VARIABLE}=1");
        return;
    }
    let values = match setup() {
        Ok(values) => values,
        Err(why) => panic!(
            "the real-VS-Code setup is missing: {why} (scripts/install-vscode-e2e.sh; {SKIP_VARIABLE}=1 skips it)"
        ),
    };
    let root = repository_root();
    let artifacts =
        std::env::var_os("WB_VSCODE_ARTIFACTS").map(PathBuf::from).unwrap_or_else(|| root.join("target/vscode-e2e"));
    let mut command = Command::new("timeout");
    command
        .args(["--kill-after=15", "600"])
        .arg(&values["WB_VSCODE_NODE"])
        .arg(root.join("editors/vscode/e2e/run.mjs"))
        .env("WB_LSP_BIN", env!("CARGO_BIN_EXE_wb-lsp"))
        .env("WB_VSCODE_ARTIFACTS", &artifacts)
        .current_dir(&root)
        .stdin(Stdio::null());
    for (name, value) in &values {
        command.env(name, value);
    }
    let output = command.output().expect("timeout and node run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}");
    assert!(
        output.status.success(),
        "the real-VS-Code test failed with {} (124/137: no result within 600 s); screenshots and logs in {}.\n\
         --- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        output.status,
        artifacts.display()
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
