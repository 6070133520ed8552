//! `wb-lsp`: the language server (no arguments, `serve`, `--stdio`) and the command-line checker for Workbench
//! packages.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: the checks and the server allocate many small, short-lived values (tree nodes, paths, strings)
/// from several threads, where it is faster than the system allocator and returns memory sooner.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = wb_lsp::cli::Cli::parse();
    match wb_lsp::commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
