//! `wb-lsp batch`: one task per line of a JSON Lines file, each a detached supervised run on its own
//! repository, on the trials' scheduler (admission, waiting out a full service, the spend cap, resume); the
//! results (status, cost, outcome) in a table and `results.json` at the end.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use wb_engine::trials::arms::{self, ArmSource};
use wb_engine::trials::batch::{BATCH_ARM, BatchAttempts, MAX_BATCH_BYTES, parse_items};
use wb_engine::trials::job::{self, Job, JobKind};
use wb_manifest::ModelCatalog;
use wb_outcomes::{FileMode, write_atomic};

use super::jobs::{self, Supervisors};
use super::trial_jobs;
use crate::cli::{BatchArgs, BatchCommand, BatchStartArgs, TrialResumeArgs};
use crate::exit::Exit;
use crate::supervisor;

pub fn run(args: &BatchArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    match &args.command {
        None => start(&args.start, catalog),
        Some(BatchCommand::Resume(resume_args)) => resume(resume_args),
        Some(BatchCommand::Status(status_args)) => trial_jobs::status(status_args),
        Some(BatchCommand::Kill(kill_args)) => trial_jobs::kill(kill_args),
    }
}

fn start(args: &BatchStartArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let file = wb_manifest::absolute(args.items.as_deref().context("the batch file")?, &cwd);
    let bytes = wb_engine::runs::layout::read_bounded(&file, MAX_BATCH_BYTES as u64 + 1)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let text = String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", file.display()))?;
    let items = parse_items(&file, &text)?;
    let package =
        args.workbench.as_deref().map(|source| trial_jobs::resolve_package(source, &cwd, catalog)).transpose()?;
    let home = supervisor::home()?;
    let ids: Vec<String> = items.iter().map(|(id, _)| id.clone()).collect();
    let name = package.as_ref().map_or_else(|| "batch".to_owned(), |p| p.name.clone());
    let runtime = args.runtime.clone().unwrap_or_default();
    let mut job = Job::new(job::new_job_id(), file, name, &ids, &[BATCH_ARM.to_owned()], 1, runtime);
    job.kind = JobKind::Batch;
    job.items = items.into_iter().collect();
    job.max_cost_usd = args.schedule.max_cost;
    job.parallel = super::trial::parallel(&args.schedule, &job.runtime);
    job.max_duration_secs = args.max_duration.map(|d| d.as_secs().max(1));
    job.cwd = cwd.clone();
    job.env_files = args.env_files.iter().map(|file| wb_manifest::absolute(file, &cwd)).collect();
    job::save(&home, &job)?;
    if let Some(package) = &package {
        let into = job::job_dir(&home, &job.job_id).join("packages").join(BATCH_ARM);
        let manifest = arms::freeze(&package.manifest_path, &into)?;
        job.arm_sources
            .insert(BATCH_ARM.to_owned(), ArmSource { manifest, from: package.manifest_path.clone(), bare: false });
        job::save(&home, &job)?;
    }
    eprintln!("batch {}: {} items, {} at once", job.job_id, job.attempts.len(), job.parallel);
    eprintln!(
        "  (wb-lsp batch status {id}; Ctrl-C stops admitting; wb-lsp batch resume {id} goes on)",
        id = job.job_id
    );
    drive(&home, job, args.json)
}

fn resume(args: &TrialResumeArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let mut job = job::load(&home, &args.job)?;
    if job.kind != JobKind::Batch {
        anyhow::bail!("{} is a trial: wb-lsp trial resume {}", job.job_id, job.job_id);
    }
    super::trial::apply_schedule(&mut job, &args.schedule);
    job::save(&home, &job)?;
    eprintln!("batch {}: {} of {} items to run", job.job_id, job.to_resume().len(), job.attempts.len());
    drive(&home, job, args.json)
}

/// One item's result, as the table and `results.json` show it.
#[derive(Serialize)]
struct Result<'a> {
    id: &'a str,
    /// `completed`, `failed`, `timed out`, `infra_error`, or `pending` (no result yet).
    status: &'a str,
    run_id: Option<&'a str>,
    outcome_id: Option<&'a str>,
    cost_usd: Option<f64>,
    duration_ms: Option<u64>,
    reason: Option<&'a str>,
}

fn drive(home: &Path, mut job: Job, json: bool) -> anyhow::Result<Exit> {
    let mut launcher = Supervisors::new(home);
    let mut attempts = BatchAttempts::new(home, &job, &mut launcher);
    let driven = jobs::run_job(home, &mut job, &mut attempts, json)?;
    let results: Vec<Result<'_>> = job
        .attempts
        .iter()
        .map(|a| Result {
            id: &a.key.task,
            status: a.verdict.map_or("pending", jobs::batch_status),
            run_id: a.run_id.as_deref(),
            outcome_id: a.outcome_id.as_deref(),
            cost_usd: a.cost_usd,
            duration_ms: a.duration_ms,
            reason: a.reason.as_deref().or_else(|| a.gates.first().map(|g| g.log.as_str()).filter(|l| !l.is_empty())),
        })
        .collect();
    let path = job::job_dir(home, &job.job_id).join("results.json");
    write_atomic(&path, &serde_json::to_vec_pretty(&results)?, FileMode::Exactly(0o644))
        .with_context(|| format!("cannot write {}", path.display()))?;
    if json {
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer(&mut stdout, &serde_json::json!({"type": "results", "results": results}))?;
        writeln!(stdout)?;
    } else {
        eprint!("{}", table(&results));
        eprintln!("results: {}", path.display());
    }
    Ok(jobs::ending(&job, &driven, "batch"))
}

fn table(results: &[Result<'_>]) -> String {
    let mut rows = vec![["id", "status", "cost", "duration", "outcome"].map(str::to_owned)];
    for result in results {
        rows.push([
            crate::render::printable(result.id).into_owned(),
            result.status.to_owned(),
            result.cost_usd.map_or_else(|| "-".to_owned(), |c| format!("${c:.3}")),
            result.duration_ms.map_or_else(|| "-".to_owned(), |ms| format!("{:.0}s", ms as f64 / 1000.0)),
            result.outcome_id.unwrap_or("-").to_owned(),
        ]);
    }
    let widths: Vec<usize> = (0..5).map(|c| rows.iter().map(|row| row[c].chars().count()).max().unwrap_or(0)).collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
            format!("{}\n", cells.join("  ").trim_end())
        })
        .collect()
}
