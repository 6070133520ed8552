//! The `wb-lsp` binary as it ships, for the benches.
//!
//! The binary cargo builds beside a bench is not it: benches, like tests, turn on the dev-dependency's
//! `test-hooks` feature, and with it the hooks' code and strings (another layout, other pages resident). This one
//! is built with `cargo build --release` into `target/bench-product`, a target directory of its own, so the two
//! builds never replace each other.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The release `wb-lsp` without test hooks, built once per process (cargo does nothing when it is up to date).
pub fn wb_lsp() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = workspace.join("target/bench-product");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("building the product wb-lsp (release, no test hooks) into {}", target.display());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "wb-lsp", "--bin", "wb-lsp", "--target-dir"])
        .arg(&target)
        .current_dir(&workspace)
        .status()
        .expect("run cargo");
    assert!(status.success(), "cargo build of the product wb-lsp failed");
    target.join("release/wb-lsp").canonicalize().expect("the product wb-lsp")
}
