//! `wb-lsp`: the language server (no arguments, `serve`, `--stdio`) and the command-line checker for Workbench
//! packages.

use std::process::ExitCode;

use clap::Parser;
use wb_lsp::exit::Exit;

fn main() -> ExitCode {
    let cli = wb_lsp::cli::Cli::parse();
    match wb_lsp::commands::run(cli) {
        Ok(exit) => exit.into(),
        Err(error) => {
            eprintln!("error: {error:#}");
            Exit::Usage.into()
        }
    }
}
