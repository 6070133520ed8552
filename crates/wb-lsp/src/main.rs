//! `wb-lsp`: the language server (no arguments, `serve`, `--stdio`) and the command-line checker for Workbench
//! packages.

use std::process::ExitCode;

use clap::Parser;

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
