//! `wb-lsp`: the language server (no arguments, `serve`, `--stdio`) and the command-line checker for Workbench
//! packages.

use std::process::ExitCode;

use clap::Parser;
use wb_lsp::exit::Exit;

fn main() -> ExitCode {
    // A supervisor's watchdog runs beside every detached run, hundreds at once in a trial: it starts without
    // building the command line's parser or loading the model catalog, which it never uses (a quarter of its
    // private memory).
    if std::env::args_os().nth(1).is_some_and(|arg| arg == wb_lsp::supervisor::watchdog::SUBCOMMAND)
        && std::env::args_os().len() == 2
    {
        return wb_lsp::supervisor::watchdog::watch().into();
    }
    let cli = wb_lsp::cli::Cli::parse();
    match wb_lsp::commands::run(cli) {
        Ok(exit) => exit.into(),
        Err(error) => {
            eprintln!("error: {error:#}");
            Exit::Usage.into()
        }
    }
}
