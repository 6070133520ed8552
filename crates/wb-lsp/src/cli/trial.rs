//! `trial`'s arguments: starting a trial, and the subcommands that follow, merge, calibrate and regrade jobs.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `trial`: with a subcommand, that; without one, a new trial of a package.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct TrialArgs {
    #[command(subcommand)]
    pub command: Option<TrialCommand>,
    #[command(flatten)]
    pub start: TrialStartArgs,
}

#[derive(Debug, Subcommand)]
pub enum TrialCommand {
    /// Run exactly the attempts of a job that have no verdict or ended with an infrastructure error; a finished
    /// attempt is never run again.
    Resume(TrialResumeArgs),
    /// A job's progress: attempts done of all, how many work, the cost so far (default: the latest job).
    Status(TrialStatusArgs),
    /// Stop a job's running attempts (each as `kill` stops a run; they keep no verdict, `resume` runs them).
    Kill(TrialJobArgs),
    /// Write one report from one or more jobs (one per machine or CI shard): report.json, report.md and
    /// report.html.
    Report(TrialReportArgs),
    /// Check a package's gates: the untouched fixture must fail them, the `expert` reference pass every one,
    /// every other reference fail.
    Calibrate(TrialCalibrateArgs),
    /// Run the gates again on a job's kept outcomes (after a gate was fixed), without running any agent.
    Regrade(TrialJobArgs),
}

/// What a new trial attempts.
#[derive(Debug, Args)]
pub struct TrialStartArgs {
    /// A package directory, a manifest, or a repository (`PATH#selector` picks one package).
    #[arg(default_value = ".")]
    pub source: String,
    #[command(flatten)]
    pub tasks: TaskSelection,
    /// The arms, comma-separated: `workbench` (the package), `plain` (the bare agent: the same runner and model
    /// without the package's instructions, skills, MCPs or runner configuration), `against` (--against's
    /// package). Default: workbench,plain, or workbench,against with --against.
    #[arg(long, value_name = "ARMS")]
    pub arms: Option<String>,
    /// Another version of the package (a package directory or manifest) for the `against` arm.
    #[arg(long, value_name = "PATH")]
    pub against: Option<PathBuf>,
    /// Attempts of each task in each arm.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub reps: u32,
    #[command(flatten)]
    pub schedule: Schedule,
    /// A declared runtime (default: the package's first).
    #[arg(long)]
    pub runtime: Option<String>,
    /// Read variables from a dotenv file (repeatable) for every attempt.
    #[arg(long = "env-file", value_name = "FILE")]
    pub env_files: Vec<PathBuf>,
    /// Print the job's progress and its report as JSON lines.
    #[arg(long)]
    pub json: bool,
}

/// Which tasks: where they are, and which of them.
#[derive(Debug, Args)]
pub struct TaskSelection {
    /// A directory of tasks (default: the package's `trials/`).
    #[arg(long = "tasks", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Only this task (repeatable).
    #[arg(long = "task", value_name = "ID")]
    pub only: Vec<String>,
}

/// How many attempts run at once, and what the trial may spend.
#[derive(Debug, Args)]
pub struct Schedule {
    /// At most this many attempts at once (default: by the runtime; docs/trials.md#parallel).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub parallel: Option<u32>,
    /// Stop once the attempts' costs add up to this many US dollars: no attempt starts, the running ones stop.
    #[arg(long, value_name = "USD", value_parser = super::parse_cost)]
    pub max_cost: Option<f64>,
}

#[derive(Debug, Args)]
pub struct TrialResumeArgs {
    /// The job (wbt_…).
    pub job: String,
    #[command(flatten)]
    pub schedule: Schedule,
    /// Print the job's progress and its report as JSON lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TrialStatusArgs {
    /// The job (default: the latest).
    pub job: Option<String>,
    /// One line, for a status bar.
    #[arg(long)]
    pub line: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TrialJobArgs {
    /// The job (wbt_…).
    pub job: String,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TrialReportArgs {
    /// The jobs to merge (wbt_… ids, or paths of their job.json).
    #[arg(required = true, value_name = "JOB")]
    pub jobs: Vec<String>,
    /// Where to write the report files (default: the first job's directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print report.json on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TrialCalibrateArgs {
    /// A package directory, a manifest, or a repository (`PATH#selector` picks one package).
    #[arg(default_value = ".")]
    pub source: String,
    #[command(flatten)]
    pub tasks: TaskSelection,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}
