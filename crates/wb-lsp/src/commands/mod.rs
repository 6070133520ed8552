//! The subcommands. Each returns the process exit code; `Err` means a usage or I/O failure (exit 2).

mod answer;
mod batch;
mod check;
mod clean;
mod diff;
mod doctor;
mod execute;
mod fmt;
mod followed;
mod init;
mod inline;
mod jobs;
mod mcp;
mod migrate;
mod models;
mod outcome;
mod runs;
mod sessions;
mod steer;
mod trial;
mod trial_jobs;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use wb_manifest::ModelCatalog;

use crate::cli::{Cli, Command};
use crate::exit::Exit;
pub(crate) use crate::render::{printable, printable_text};

pub fn run(cli: Cli) -> anyhow::Result<Exit> {
    if matches!(cli.command, Some(Command::Check(_))) {
        // The pool that checks the packages starts its threads, and compiles the rules' patterns, while the
        // catalog loads and the packages are found, instead of after.
        rayon::spawn(wb_manifest::prepare);
    }
    let catalog = load_catalog(cli.model_catalog.as_deref())?;
    let catalog: &ModelCatalog = &catalog;
    match cli.command {
        Some(Command::Check(args)) => check::run(&args, catalog),
        Some(Command::Migrate(args)) => migrate::run(&args, catalog),
        Some(Command::Fmt(args)) => fmt::run(&args),
        Some(Command::Init(args)) => init::run(&args, catalog),
        Some(Command::Models(args)) => models::run(&args, catalog),
        Some(Command::DryRun(args)) => execute::dry_run(&args, catalog),
        Some(Command::Smoke(args)) => execute::smoke(&args, catalog),
        Some(Command::Build(args)) => execute::build(&args, catalog),
        Some(Command::Run(args)) => execute::run(&args, catalog),
        Some(Command::Send(args)) => sessions::send(&args),
        Some(Command::Resume(args)) => sessions::resume(&args),
        Some(Command::Outcome(args)) => outcome::run(&args),
        Some(Command::Outcomes(args)) => outcome::list(&args),
        Some(Command::Clean(args)) => clean::run(&args),
        Some(Command::Doctor(args)) => doctor::run(&args, catalog),
        Some(Command::Runs(args)) => runs::list(&args),
        Some(Command::Attach(args)) => runs::attach(&args),
        Some(Command::Wait(args)) => runs::wait(&args),
        Some(Command::Answer(args)) => answer::run(&args),
        Some(Command::Kill(args)) => runs::kill(&args),
        Some(Command::Status(args)) => runs::status(&args),
        Some(Command::Mcp(args)) => mcp::run(&args, catalog),
        Some(Command::Acp(args)) => crate::acp::run(&args),
        Some(Command::Trial(args)) => trial::run(&args, catalog),
        Some(Command::Batch(args)) => batch::run(&args, catalog),
        Some(Command::SuperviseRun) => Ok(crate::supervisor::supervise(catalog)),
        Some(Command::SuperviseWatch) => Ok(crate::supervisor::watchdog::watch()),
        Some(Command::Schema(args)) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(wb_manifest::schema::schema_text(args.spec).as_bytes())?;
            Ok(Exit::Success)
        }
        Some(Command::Serve) | None => {
            // `--stdio` is accepted for clients that pass it; stdio is the only transport.
            let _ = cli.stdio;
            // `exit` without `shutdown` ends with status 1 (the LSP specification).
            Ok(crate::server::run_stdio()?.exit_code())
        }
    }
}

fn load_catalog(path: Option<&Path>) -> anyhow::Result<std::borrow::Cow<'static, ModelCatalog>> {
    match path {
        // The error's message already names its cause; keeping it as a source too would print the cause twice.
        Some(path) => {
            ModelCatalog::from_file(path).map(std::borrow::Cow::Owned).map_err(|error| anyhow::anyhow!("{error}"))
        }
        None => Ok(std::borrow::Cow::Borrowed(ModelCatalog::embedded())),
    }
}

pub(crate) fn current_dir() -> anyhow::Result<PathBuf> {
    std::env::current_dir().context("the current directory is unavailable")
}
