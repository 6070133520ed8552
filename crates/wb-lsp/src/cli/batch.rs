//! `batch`'s arguments: one task per line of a JSON Lines file, on the trials' scheduler.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::trial::{Schedule, TrialJobArgs, TrialResumeArgs, TrialStatusArgs};

/// `batch`: with a subcommand, that; without one, a new batch.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BatchArgs {
    #[command(subcommand)]
    pub command: Option<BatchCommand>,
    #[command(flatten)]
    pub start: BatchStartArgs,
}

#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Run exactly the items of a batch that have no result or ended with an infrastructure error.
    Resume(TrialResumeArgs),
    /// A batch's progress: items done of all, completed so far, the cost so far (default: the latest job).
    Status(TrialStatusArgs),
    /// Stop a batch's running items (they keep no result: `resume` runs them again).
    Kill(TrialJobArgs),
}

/// What a new batch runs.
#[derive(Debug, Args)]
pub struct BatchStartArgs {
    /// The batch file: one JSON object a line, `{"dir": PATH}` (a repository here, worked on in place) or
    /// `{"git": URL, "ref": REF}` (cloned), with `"task": TEXT`, and optionally `"id"` and `"workbench"`.
    #[arg(value_name = "ITEMS.jsonl", required = true)]
    pub items: Option<PathBuf>,
    /// The package every item runs (default: each item's own repository's package, or its `workbench`).
    #[arg(long, value_name = "SOURCE")]
    pub workbench: Option<String>,
    /// A declared runtime (default: each package's first).
    #[arg(long)]
    pub runtime: Option<String>,
    #[command(flatten)]
    pub schedule: Schedule,
    /// Stop each item's run cleanly once it has gone on this long: `90s`, `30m`, `1h30m`.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    pub max_duration: Option<std::time::Duration>,
    /// Read variables from a dotenv file (repeatable) for every item.
    #[arg(long = "env-file", value_name = "FILE")]
    pub env_files: Vec<PathBuf>,
    /// Print each item's result and the results as JSON lines.
    #[arg(long)]
    pub json: bool,
}
