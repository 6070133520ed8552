//! `wb-lsp trial`: a package's tasks attempted in each arm, every attempt a detached supervised run (this
//! binary's supervisor, as `run --detach` starts it) graded by gates the agent never sees; the job written at
//! every change under `$WORKBENCH_HOME/trials/<job>/`, the report at the end. The subcommands that read jobs
//! (status, kill, report, calibrate, regrade) are in `trial_jobs.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use wb_engine::trials::arms::{self, ArmSource};
use wb_engine::trials::attempts::{LoadedTask, RunAttempts, check_unchanged, load_tasks};
use wb_engine::trials::job::{self, Job};
use wb_manifest::ModelCatalog;

use super::jobs::{self, Supervisors};
use super::trial_jobs;
use crate::cli::{Schedule, TrialArgs, TrialCommand, TrialResumeArgs, TrialStartArgs};
use crate::exit::Exit;
use crate::supervisor;

pub fn run(args: &TrialArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    match &args.command {
        None => start(&args.start, catalog),
        Some(TrialCommand::Resume(resume_args)) => resume(resume_args),
        Some(TrialCommand::Status(status_args)) => trial_jobs::status(status_args),
        Some(TrialCommand::Kill(kill_args)) => trial_jobs::kill(kill_args),
        Some(TrialCommand::Report(report_args)) => trial_jobs::report(report_args),
        Some(TrialCommand::Calibrate(calibrate_args)) => trial_jobs::calibrate(calibrate_args, catalog),
        Some(TrialCommand::Regrade(regrade_args)) => trial_jobs::regrade(regrade_args),
    }
}

fn start(args: &TrialStartArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let package = trial_jobs::resolve_package(&args.source, &cwd, catalog)?;
    let tasks_dir = trial_jobs::tasks_dir(&package, args.tasks.dir.as_deref(), &cwd);
    let tasks = load_tasks(&tasks_dir, &package.name, &args.tasks.only)?;
    let arm_names = arms::parse(args.arms.as_deref(), args.against.is_some())?;
    let runtime = match &args.runtime {
        Some(runtime) => runtime.clone(),
        None => package.manifest.runtimes.first().map(|r| r.provider.value.clone()).context("no runtime declared")?,
    };
    let against = match &args.against {
        Some(path) => {
            let other = trial_jobs::resolve_package(&path.display().to_string(), &cwd, catalog)?;
            if other.manifest.runtime(&runtime).is_none() {
                anyhow::bail!("the --against package does not declare runtime {runtime}: its attempts could not run");
            }
            Some(other)
        }
        None => None,
    };
    let home = supervisor::home()?;
    let job_id = job::new_job_id();
    let dir = job::job_dir(&home, &job_id);
    let task_ids: Vec<String> = tasks.keys().cloned().collect();
    let mut job = Job::new(
        job_id,
        package.manifest_path.clone(),
        package.name.clone(),
        &task_ids,
        &arm_names,
        args.reps,
        runtime,
    );
    job.workbench_version = package.version.clone();
    job.max_cost_usd = args.schedule.max_cost;
    job.parallel = parallel(&args.schedule, &job.runtime);
    job.tasks_dir = tasks_dir;
    job.task_digests = tasks.iter().map(|(id, task)| (id.clone(), task.digest.clone())).collect();
    job.cwd = cwd.clone();
    job.env_files = args.env_files.iter().map(|file| wb_manifest::absolute(file, &cwd)).collect();
    // The job's directory first (0700), then each arm's package frozen into it.
    job::save(&home, &job)?;
    for arm in &arm_names {
        let (from, bare, frozen_as): (PathBuf, bool, &str) = match arm.as_str() {
            arms::AGAINST => match &against {
                Some(other) => (other.manifest_path.clone(), false, arms::AGAINST),
                None => anyhow::bail!("the against arm needs --against"),
            },
            arms::PLAIN => (package.manifest_path.clone(), true, arms::WORKBENCH),
            _ => (package.manifest_path.clone(), false, arms::WORKBENCH),
        };
        let into = dir.join("packages").join(frozen_as);
        let manifest = if into.exists() {
            job.arm_sources.values().find(|a| a.from == from).map(|a| a.manifest.clone()).context("frozen package")?
        } else {
            arms::freeze(&from, &into)?
        };
        job.arm_sources.insert(arm.clone(), ArmSource { manifest, from, bare });
    }
    job::save(&home, &job)?;
    eprintln!(
        "trial {}: {} attempts ({} tasks × {} arms × {} reps) on {}, {} at once",
        job.job_id,
        job.attempts.len(),
        tasks.len(),
        arm_names.len(),
        args.reps,
        job.runtime,
        job.parallel
    );
    eprintln!(
        "  (wb-lsp trial status {id}; Ctrl-C stops admitting; wb-lsp trial resume {id} goes on)",
        id = job.job_id
    );
    drive(&home, job, &tasks, args.json)
}

fn resume(args: &TrialResumeArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let mut job = job::load(&home, &args.job)?;
    if job.kind == job::JobKind::Batch {
        anyhow::bail!("{} is a batch: wb-lsp batch resume {}", job.job_id, job.job_id);
    }
    let tasks = load_tasks(&job.tasks_dir, &job.workbench, &[])?;
    check_unchanged(&job, &tasks)?;
    apply_schedule(&mut job, &args.schedule);
    job::save(&home, &job)?;
    let again = job.to_resume().len();
    eprintln!("trial {}: {again} of {} attempts to run", job.job_id, job.attempts.len());
    drive(&home, job, &tasks, args.json)
}

/// `--parallel` and `--max-cost` given again on resume replace the job's.
pub(super) fn apply_schedule(job: &mut Job, schedule: &Schedule) {
    if schedule.parallel.is_some() {
        job.parallel = parallel(schedule, &job.runtime);
    }
    if schedule.max_cost.is_some() {
        job.max_cost_usd = schedule.max_cost;
    }
}

/// `--parallel`, else the runtime's default: on this machine (local, docker) one attempt per core and per 2 GiB
/// of memory, whichever is fewer; on a sandbox service the account's usual concurrency (docs/trials.md#parallel).
pub(super) fn parallel(schedule: &Schedule, runtime: &str) -> usize {
    if let Some(parallel) = schedule.parallel {
        return usize::try_from(parallel).unwrap_or(1);
    }
    match runtime {
        "e2b" => 20,
        "daytona" => 10,
        _ => {
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            let memory = memory_gib().map_or(cores, |gib| usize::try_from(gib / 2).unwrap_or(1));
            cores.min(memory).max(1)
        }
    }
}

/// This machine's memory in GiB (`/proc/meminfo`).
fn memory_gib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / (1024 * 1024))
}

/// Runs the job's attempts to their verdicts, then writes and prints the report.
fn drive(home: &Path, mut job: Job, tasks: &BTreeMap<String, LoadedTask>, json: bool) -> anyhow::Result<Exit> {
    let mut launcher = Supervisors::new(home);
    let mut attempts = RunAttempts::new(home, &job, tasks, &mut launcher)?;
    let driven = jobs::run_job(home, &mut job, &mut attempts, json)?;
    drop(attempts);
    let report = wb_engine::trials::report::report(std::slice::from_ref(&job));
    let dir = job::job_dir(home, &job.job_id);
    trial_jobs::write_reports(&dir, &report)?;
    trial_jobs::print_report(&report, &dir, json)?;
    Ok(jobs::ending(&job, &driven, "trial"))
}
