//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod answer;
mod batch;
mod trial;
pub use answer::*;
pub use batch::*;
pub use trial::*;

#[derive(Debug, Parser)]
#[command(name = "wb-lsp", version, about = "Language server and checker for Workbench packages")]
pub struct Cli {
    /// Speak LSP over stdio (the default when no command is given).
    #[arg(long, global = false)]
    pub stdio: bool,

    /// A model catalog file replacing the embedded one (also WB_LSP_MODEL_CATALOG).
    #[arg(long, global = true, value_name = "FILE", env = "WB_LSP_MODEL_CATALOG")]
    pub model_catalog: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check packages: a repository, a package directory or a manifest file (default: the current directory).
    Check(CheckArgs),
    /// Convert spec 0 manifests to spec 1, keeping comments and formatting.
    Migrate(MigrateArgs),
    /// Format manifests in place: indentation, spacing, quotes, blank lines; comments kept, meaning never
    /// changed (`--check` for CI).
    Fmt(FmtArgs),
    /// Scaffold a new package under .workbenches/NAME.
    Init(InitArgs),
    /// Print the JSON schema of a manifest spec.
    Schema(SchemaArgs),
    /// List the model catalog: each model's id, name and the providers serving it.
    Models(ModelsArgs),
    /// Resolve, preflight and translate a Workbench without launching the runner.
    DryRun(DryRunArgs),
    /// Check that each Workbench can start here, without a model request (exit 0 ready, 3 needs
    /// authentication, 1 failed).
    Smoke(RunArgs),
    /// Run a Workbench on a task: one-shot, or with --session a session that takes more turns (`send`).
    Run(RunCommandArgs),
    /// Send a session its next turn (a task), then follow that turn to its end (exit 0 when it completed).
    Send(SendArgs),
    /// Start an ended session again on a fresh runtime: the runner's conversation carries on, and the new
    /// outbox holds the latest revision of each file the session returned. With a task, its first turn runs.
    Resume(ResumeArgs),
    /// Prepare a Workbench's runtime image (pull or build and cache it) without preflight or a runner.
    Build(BuildArgs),
    /// Inspect, apply or export a run's outcome (ID: wbo_… or the run's wb_… id).
    Outcome(OutcomeArgs),
    /// List the retained outcomes, newest first.
    Outcomes(OutcomesArgs),
    /// Preview (or, with --apply, remove) old runs and outcomes under WORKBENCH_HOME, and the sandboxes of
    /// remote runs that no longer run; an outcome with an interrupted application and a running run are kept.
    Clean(CleanArgs),
    /// Report what this machine offers a run: runners (where, version, verified), the Docker engine, the
    /// credential variables of each catalog provider (names only) and the outcome store's size.
    Doctor(DoctorArgs),
    /// List runs, newest first: the active ones, and with --all the finished and lost ones too.
    #[command(visible_alias = "ps")]
    Runs(RunsArgs),
    /// Replay a run's events, then follow it until it ends (exit as `wait`).
    Attach(AttachArgs),
    /// Wait for a run to end (or a session to wait for its next turn): exit 0 completed or idle, 1 failed or
    /// lost, 2 it needs input (its requests listed), 124 timed out, 130 cancelled.
    Wait(WaitArgs),
    /// Answer what a run asked (a permission, a question), or refuse it with --reject: the run's runner gets the
    /// answer and goes on (docs/runs.md#answering).
    Answer(AnswerArgs),
    /// Cancel a run: its runner is stopped and its partial outcome collected, as on Ctrl-C.
    Kill(KillArgs),
    /// One line per active or recently finished run: package, activity, elapsed time, cost so far.
    Status(StatusArgs),
    /// Prove a package is worth running: its trial tasks attempted with it and without it (and against another
    /// version), each attempt a detached run graded by gates the agent never sees; a report at the end
    /// (docs/trials.md).
    Trial(TrialArgs),
    /// Run one task per line of a JSON Lines file, each on its own repository, as detached runs on the trials'
    /// scheduler: at most --parallel at once, a spend cap, resume; a results table at the end (docs/trials.md#batches).
    Batch(BatchArgs),
    /// Run the language server over stdio.
    Serve,
    /// Serve the Model Context Protocol over stdio: check, fix, dry_run, smoke and outcome as tools, so an agent
    /// writing a package gets the exact diagnostics (docs/mcp.md).
    Mcp(McpArgs),
    /// Be an Agent Client Protocol agent over stdio: each prompt a turn of a Workbench session, with its updates,
    /// permission requests, cancel and the outcome's diffs (docs/acp.md).
    Acp(AcpArgs),
    /// A run's supervisor (started by `run` and the language server; reads its request on stdin).
    #[command(name = "supervise-run", hide = true)]
    SuperviseRun,
    /// A supervisor's watchdog: stops what its supervisor leaves running should it die (reads on stdin).
    #[command(name = "supervise-watch", hide = true)]
    SuperviseWatch,
}

/// `run` takes what dry-run and smoke take, and its limits.
#[derive(Debug, Args)]
pub struct RunCommandArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Stop the run cleanly (a partial outcome, as on Ctrl-C) once the costs its runner reports add up to more
    /// than this many US dollars.
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// Stop the run cleanly once it has gone on this long: `90s`, `30m`, `1h30m`, `2w` (a bare number is
    /// seconds; docs/runs.md#durations).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_duration: Option<std::time::Duration>,
    /// Refuse at once whatever the runner asks (a permission, a question), saying so in the event: for CI,
    /// where nobody answers.
    #[arg(long, conflicts_with = "input_timeout")]
    pub no_input: bool,
    /// Refuse a request nobody answered (`answer`) after this long [default: 30m].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub input_timeout: Option<std::time::Duration>,
    /// Start the run and return once it has started, printing its id: it goes on without this command
    /// (`attach`, `wait`, `status`, `kill` reach it).
    #[arg(long, short = 'd')]
    pub detach: bool,
    /// Keep the run open as a session after its first turn: the runtime and the runner's conversation stay,
    /// `send` runs the next turn, `kill` ends it and collects the final outcome. The command returns when the
    /// first turn has ended.
    #[arg(long)]
    pub session: bool,
    /// End a session (its final outcome collected) after it has waited this long for a turn.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30m", requires = "session")]
    pub idle_timeout: std::time::Duration,
}

/// A turn's task: the argument, a file, or standard input.
#[derive(Debug, Args)]
pub struct TurnTask {
    /// The task of the turn.
    #[arg(value_name = "TASK", conflicts_with_all = ["task_file", "stdin"])]
    pub task: Option<String>,
    /// Read the task from a file.
    #[arg(long, value_name = "FILE", conflicts_with = "stdin")]
    pub task_file: Option<PathBuf>,
    /// Read the task from standard input.
    #[arg(long)]
    pub stdin: bool,
}

/// `resume`: an ended session, and optionally the first task of its new run.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub run: RunRef,
    /// The first turn's task (without one, the session waits for `send`).
    #[command(flatten)]
    pub turn: TurnTask,
    /// Set a declared variable or provider key: NAME=value (repeatable; a session keeps no values).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Read variables from a dotenv file (repeatable), besides the session's own.
    #[arg(long = "env-file", value_name = "FILE")]
    pub env_files: Vec<PathBuf>,
    /// Print each event of the first turn as a JSON line.
    #[arg(long)]
    pub json: bool,
    /// Return once the session has started, printing its new id.
    #[arg(long, short = 'd')]
    pub detach: bool,
    /// End the session after it has waited this long for a turn.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30m")]
    pub idle_timeout: std::time::Duration,
}

/// `send`: a session and its next task.
#[derive(Debug, Args)]
pub struct SendArgs {
    #[command(flatten)]
    pub run: RunRef,
    #[command(flatten)]
    pub turn: TurnTask,
    /// Print each event of the turn as a JSON line (as `run --json`).
    #[arg(long)]
    pub json: bool,
    /// Queue the turn and return at once, printing its input id (the turn's `turn.started` names it).
    #[arg(long, short = 'd')]
    pub detach: bool,
    /// Steer the running turn: the text goes to the runner's own steering now, and this waits until the runner
    /// took it (`input.delivered`, exit 0) or it was refused (exit 1); never a later turn.
    #[arg(long, conflicts_with_all = ["queue", "detach"])]
    pub steer: bool,
    /// Queue the task as the next turn even while a turn runs (first in, first out).
    #[arg(long)]
    pub queue: bool,
}

/// A run: its `wb_…` id, or a unique prefix of one.
#[derive(Debug, Args)]
pub struct RunRef {
    #[arg(value_name = "RUN")]
    pub run: String,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Finished and lost runs too.
    #[arg(long)]
    pub all: bool,
    /// Machine-readable output (one JSON array of run records with their state).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    #[command(flatten)]
    pub run: RunRef,
    /// Print each event as a JSON line (as `run --json`).
    #[arg(long)]
    pub json: bool,
    /// Adopting a lost remote run started with `--env`: the same NAME=value again (its value was never kept).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Adopting a lost remote run: read variables from a dotenv file too (repeatable).
    #[arg(long = "env-file", value_name = "FILE")]
    pub env_files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    #[command(flatten)]
    pub run: RunRef,
    /// Return at the first event after this sequence number instead of at the end (exit 0 when one came).
    #[arg(long, value_name = "SEQ")]
    pub after: Option<u64>,
    /// Give up after this long (exit 124): `90s`, `30m`, `1h30m` (a bare number is seconds; docs/runs.md#durations).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Print the run's record (with its state) as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    #[command(flatten)]
    pub run: RunRef,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A single line for a status bar or tmux: the active runs and their cost.
    #[arg(long)]
    pub line: bool,
    /// Machine-readable output (one JSON array).
    #[arg(long)]
    pub json: bool,
}

/// A `--max-cost` value that is not a finite, non-negative number.
#[derive(Debug, thiserror::Error)]
#[error("expected a non-negative amount of US dollars, like 0.50, not {0:?}")]
pub struct NotACost(String);

/// A dollar amount: a finite, non-negative number.
fn parse_cost(text: &str) -> Result<f64, NotACost> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(cost) if cost.is_finite() && cost >= 0.0 => Ok(cost),
        _ => Err(NotACost(text.to_owned())),
    }
}

/// A duration flag's value in the one grammar (`wb_engine::duration`, documented in docs/runs.md#durations).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, wb_engine::duration::Documented> {
    wb_engine::duration::clap_parser(text)
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A package directory, a manifest, or a repository (`PATH#selector` picks one package).
    #[arg(default_value = ".")]
    pub source: String,
    /// The task (dry-run and run).
    #[arg(long, short = 't')]
    pub task: Option<String>,
    /// Read the task from a file.
    #[arg(long, conflicts_with = "task")]
    pub task_file: Option<PathBuf>,
    /// The primary workspace (default: the current directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A declared runtime (default: the first declared).
    #[arg(long)]
    pub runtime: Option<String>,
    /// Bind a named workspace: NAME=PATH (repeatable).
    #[arg(long = "workspace", value_name = "NAME=PATH")]
    pub workspaces: Vec<String>,
    /// Set a declared variable or provider key: NAME=value (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Read variables from a dotenv file (repeatable; at most 1 MiB each).
    #[arg(long = "env-file", value_name = "FILE")]
    pub env_files: Vec<PathBuf>,
    /// Grant host Docker engine access to a Workbench that declares docker.engine.
    #[arg(long)]
    pub allow_host_docker: bool,
    /// Run although GPU requirements cannot be checked.
    #[arg(long)]
    pub allow_unchecked_gpu: bool,
    /// Machine-readable output (dry-run: the translation; smoke: one object per package; run: NDJSON events).
    #[arg(long)]
    pub json: bool,
    /// Run: print only the final answer.
    #[arg(long)]
    pub r#final: bool,
}

/// `dry-run` takes what `run` takes, and may keep its staged configuration.
#[derive(Debug, Args)]
pub struct DryRunArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Stage the runner's configuration in this new directory and keep it (to run the printed command by hand
    /// or inspect the files)
    #[arg(long, value_name = "DIR")]
    pub stage_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// A package directory, a manifest, or a repository (`PATH#selector` picks one package).
    #[arg(default_value = ".")]
    pub source: String,
    /// A declared runtime (default: the first declared).
    #[arg(long)]
    pub runtime: Option<String>,
    /// One JSON object per package.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
    Sarif,
    Github,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Paths to check: a repository, a package directory or a manifest (`PATH#selector` picks packages by
    /// directory or `name`).
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Exit 1 on warnings too.
    #[arg(long)]
    pub deny_warnings: bool,
    /// When to use colour in human output (NO_COLOR is honoured in auto mode).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Apply every safe fix to the manifests (atomically, each file whole), say what changed on stderr, then
    /// check again and report what is left.
    #[arg(long)]
    pub fix: bool,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Paths to migrate (default: the current directory).
    pub paths: Vec<PathBuf>,
    /// Write the migrated manifests instead of printing a diff.
    #[arg(long, conflicts_with = "check")]
    pub write: bool,
    /// Exit 1 if any manifest would change; write nothing.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args)]
pub struct FmtArgs {
    /// Paths to format: a repository, a package directory or a manifest (default: the current directory).
    pub paths: Vec<PathBuf>,
    /// Write nothing; list the manifests that are not formatted and exit 1 if there are any.
    #[arg(long)]
    pub check: bool,
    /// Write nothing; print what formatting would change as a unified diff (exit 1 if anything would).
    #[arg(long)]
    pub diff: bool,
    /// Also put each mapping's keys in the standard's order, moving each entry with its comments.
    #[arg(long)]
    pub field_order: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The package name (lowercase and hyphenated).
    pub name: String,
    /// The repository directory to create `.workbenches/NAME` in (default: the current directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The runner.
    #[arg(long, default_value = "opencode")]
    pub runner: String,
    /// The model id (lab/model), from the model catalog.
    #[arg(long)]
    pub model: Option<String>,
    /// Comma-separated runtimes, in order (local, docker, e2b, daytona).
    #[arg(long, value_delimiter = ',')]
    pub runtimes: Vec<String>,
    /// The image for the docker and e2b runtimes.
    #[arg(long)]
    pub image: Option<String>,
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Only models whose id or name contains this text (any case).
    pub filter: Option<String>,
    /// Machine-readable output (one JSON object).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The spec whose schema to print.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub spec: u8,
}

#[derive(Debug, Args)]
pub struct OutcomeArgs {
    /// An outcome id (wbo_…) or a run id (wb_…, its final outcome).
    pub id: String,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Apply the outcome's changesets to their workspaces (all or nothing).
    #[arg(long, conflicts_with = "export")]
    pub apply: bool,
    /// Export the outcome to DIR (which must not exist).
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// With --apply: the primary workspace to apply to (default: the run's).
    #[arg(long, value_name = "DIR", requires = "apply")]
    pub workspace: Option<PathBuf>,
    /// With --apply: take only these paths (`path`, or `name:path` in a named workspace), with the checks and
    /// the crash safety of a whole apply; the receipt becomes `applied` once every path holds the outcome's
    /// content.
    #[arg(long, value_name = "PATH", num_args = 1.., requires = "apply")]
    pub only: Vec<String>,
    /// Print the changes as a unified diff: every file, or only these paths (`path`, `name:path`); paged like
    /// `git diff` on a terminal.
    #[arg(long, value_name = "PATH", num_args = 0.., conflicts_with_all = ["apply", "export", "recover", "json"])]
    pub diff: Option<Vec<String>>,
    /// With --diff: colour (auto: on a terminal, unless NO_COLOR is set).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, requires = "diff")]
    pub color: ColorChoice,
    /// For a run whose collection failed with its sandbox kept (E2B): reconnect to that sandbox and collect a
    /// partial outcome. Otherwise: finish or roll back an application that was interrupted (a crash during
    /// --apply).
    #[arg(long, conflicts_with_all = ["apply", "export"])]
    pub recover: bool,
    /// For a run whose collection failed with its sandbox kept: delete the sandbox and its checkpoint.
    #[arg(long, conflicts_with_all = ["apply", "export", "recover"])]
    pub discard_recovery: bool,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The directory relative tool paths resolve against, and the only one `fix` writes in (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Let the `smoke` tool create sandboxes on E2B and Daytona (they cost money and run off this machine). The
    /// tools' caller is the agent: without this, a smoke check on those runtimes is refused.
    #[arg(long)]
    pub allow_remote_sandboxes: bool,
}

#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The package every session runs (a manifest or package directory, relative to the session's directory).
    /// Without it a session runs a package of its directory's `.workbenches`, chosen as the session's mode.
    #[arg(long, value_name = "SOURCE")]
    pub package: Option<String>,
    /// The runtime the sessions run on (default: the package's own choice).
    #[arg(long, value_name = "RUNTIME")]
    pub runtime: Option<String>,
    /// Bind a named workspace: NAME=PATH (repeatable).
    #[arg(long = "workspace", value_name = "NAME=PATH")]
    pub workspaces: Vec<String>,
    /// Read variables from a dotenv file (repeatable; at most 1 MiB each). Values are never passed on the
    /// command line here: the agent's environment and these files give them.
    #[arg(long = "env-file", value_name = "FILE")]
    pub env_files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct OutcomesArgs {
    /// Machine-readable output (one JSON array).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Machine-readable output (one JSON object).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Remove what last changed longer ago than this: `30d`, `2w`, `12h`, `1h30m` (docs/runs.md#durations; a bare
    /// number is refused here: write `30d` or `30s`).
    #[arg(long, value_name = "AGE", default_value = "30d")]
    pub older_than: String,
    /// Remove them (without it, only list what would go).
    #[arg(long)]
    pub apply: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}
