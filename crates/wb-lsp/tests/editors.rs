//! The editor integrations (editors/) driven by the real editors, headless, against the real server binary:
//! tests/editors/nvim/run.sh (Neovim) and tests/editors/emacs/run.sh (Emacs with Eglot). Cargo builds the
//! binary; its path reaches the scripts as `WB_LSP_BIN`. A missing editor fails the test with an install hint
//! unless `WB_LSP_SKIP_EDITOR_TESTS=1`. The Helix snippet (editors/helix/languages.toml) is checked as TOML.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const SKIP_VARIABLE: &str = "WB_LSP_SKIP_EDITOR_TESTS";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

fn skipping() -> bool {
    std::env::var(SKIP_VARIABLE).is_ok_and(|value| value == "1")
}

/// True when `program` runs with `args` and exits successfully.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|output| output.status.success())
}

/// Runs an editor test script unless the editor is missing (a failure, or a skip under WB_LSP_SKIP_EDITOR_TESTS=1).
fn run_editor_script(editor: &str, available: bool, install: &str, script: &str) {
    if skipping() {
        eprintln!("skipping the {editor} test: {SKIP_VARIABLE}=1");
        return;
    }
    assert!(
        available,
        "{editor} is not installed, so the editor integration cannot be tested.\n\
         Install it (Debian/Ubuntu: `{install}`; scripts/test.sh does this) or set {SKIP_VARIABLE}=1 to skip \
         the editor tests."
    );
    let root = repository_root();
    let output = Command::new("bash")
        .arg(root.join(script))
        .env("WB_LSP_BIN", env!("CARGO_BIN_EXE_wb-lsp"))
        .current_dir(&root)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}");
    assert!(
        output.status.success(),
        "the {editor} integration test ({script}) failed with {}.\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        output.status
    );
}

#[test]
fn neovim_drives_the_server() {
    run_editor_script("Neovim", runs("nvim", &["--version"]), "apt-get install -y neovim", "tests/editors/nvim/run.sh");
}

#[test]
fn emacs_with_eglot_drives_the_server() {
    // Eglot comes with Emacs 29 and later; Debian 12's Emacs 28 needs elpa-eglot (found through site-start).
    let available = runs("emacs", &["--batch", "--eval", "(kill-emacs (if (locate-library \"eglot\") 0 1))"]);
    run_editor_script(
        "Emacs with Eglot",
        available,
        "apt-get install -y emacs-nox elpa-eglot",
        "tests/editors/emacs/run.sh",
    );
}

#[test]
fn helix_languages_toml_names_the_server_and_the_manifest_glob() {
    let path = repository_root().join("editors/helix/languages.toml");
    let text = std::fs::read_to_string(&path).expect("editors/helix/languages.toml");
    let document: toml::Table = toml::from_str(&text).expect("languages.toml is valid TOML");

    let languages = document.get("language").and_then(toml::Value::as_array).expect("[[language]] tables");
    let workbench = languages
        .iter()
        .find(|language| language.get("name").and_then(toml::Value::as_str) == Some("workbench"))
        .expect("a language named workbench");
    assert_eq!(workbench.get("scope").and_then(toml::Value::as_str), Some("source.yaml"));
    assert_eq!(workbench.get("grammar").and_then(toml::Value::as_str), Some("yaml"));

    let file_types = workbench.get("file-types").and_then(toml::Value::as_array).expect("file-types");
    let globs: Vec<&str> =
        file_types.iter().filter_map(|file_type| file_type.get("glob").and_then(toml::Value::as_str)).collect();
    assert_eq!(globs, [".workbenches/*/workbench.yml"], "file-types: {file_types:?}");
    assert!(
        file_types.iter().all(toml::Value::is_table),
        "a plain extension such as \"yml\" would claim every YAML file: {file_types:?}"
    );

    let servers = workbench.get("language-servers").and_then(toml::Value::as_array).expect("language-servers");
    assert_eq!(servers, &[toml::Value::from("wb-lsp")]);

    let server = document
        .get("language-server")
        .and_then(|servers| servers.get("wb-lsp"))
        .expect("a [language-server.wb-lsp] table");
    assert_eq!(server.get("command").and_then(toml::Value::as_str), Some("wb-lsp"));
    if let Some(args) = server.get("args") {
        let args = args.as_array().expect("args is an array");
        assert!(
            args.is_empty() || args == &[toml::Value::from("serve")] || args == &[toml::Value::from("--stdio")],
            "wb-lsp serves LSP with no arguments, `serve` or `--stdio`: {args:?}"
        );
    }
}
