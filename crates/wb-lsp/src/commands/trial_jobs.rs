//! The `trial` subcommands that work on jobs already made: `status`, `kill`, `report` (one report from one or
//! more jobs), `calibrate` (a package's gates against its fixture and references, no agent) and `regrade`
//! (the gates again on the kept outcomes); and the report files and table every trial ends with.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use wb_engine::trials::attempts::{Launch, Launcher, RunAttempts, load_tasks};
use wb_engine::trials::calibrate::calibrate as calibrate_task;
use wb_engine::trials::job::{self, AttemptState, Job, JobKind, Verdict};
use wb_engine::trials::render;
use wb_engine::trials::report::{Counts, Report, report as make_report};
use wb_engine::trials::schedule::{Attempts, NotStarted, RunEnd, TIME_LIMIT_REASON};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_outcomes::{FileMode, write_atomic};

use crate::cli::{TrialCalibrateArgs, TrialJobArgs, TrialReportArgs, TrialStatusArgs};
use crate::exit::Exit;
use crate::supervisor;

/// The one package `source` names, checked (a trial of a broken package would measure nothing).
pub(super) fn resolve_package(
    source: &str,
    cwd: &Path,
    catalog: &ModelCatalog,
) -> anyhow::Result<wb_engine::source::Package> {
    let mut found = wb_engine::source::resolve(&OsFileSystem, source, cwd, catalog, true)?;
    let package = found.pop().context("No matching Workbenches found")??;
    Ok(package)
}

/// Where a package's tasks are: `--tasks`, else its `trials/`.
pub(super) fn tasks_dir(package: &wb_engine::source::Package, dir: Option<&Path>, cwd: &Path) -> PathBuf {
    match dir {
        Some(dir) => wb_manifest::absolute(dir, cwd),
        None => package.package_dir.join(wb_manifest::trial_task::TRIALS_DIR),
    }
}

/// Writes `report.json`, `report.md` and `report.html` into `dir`, each whole or not at all.
pub(super) fn write_reports(dir: &Path, report: &Report) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = serde_json::to_vec_pretty(report)?;
    for (name, bytes) in [
        ("report.json", json),
        ("report.md", render::markdown(report).into_bytes()),
        ("report.html", render::html_page(report).into_bytes()),
    ] {
        let path = dir.join(name);
        write_atomic(&path, &bytes, FileMode::Exactly(0o644))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The report as a table on stderr (stdout: `report.json` with `--json`), and where its files are.
pub(super) fn print_report(report: &Report, dir: &Path, json: bool) -> anyhow::Result<()> {
    if json {
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer(&mut stdout, &serde_json::json!({"type": "report", "report": report}))?;
        writeln!(stdout)?;
        return Ok(());
    }
    eprint!("{}", table(report));
    eprintln!("report: {}", dir.join("report.html").display());
    Ok(())
}

/// One row per cell (task × arm), then one per arm.
fn table(report: &Report) -> String {
    let money = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |v| format!("${v:.3}"));
    let seconds = |ms: Option<f64>| ms.map_or_else(|| "-".to_owned(), |ms| format!("{:.0}s", ms / 1000.0));
    let mut rows = vec![[
        "task".to_owned(),
        "arm".to_owned(),
        "works".to_owned(),
        "failed".to_owned(),
        "inconcl.".to_owned(),
        "infra".to_owned(),
        "median".to_owned(),
        "median cost".to_owned(),
        "$/working".to_owned(),
    ]];
    let mut row = |task: &str, arm: &str, counts: &Counts, median: String, cost: Option<f64>, per: Option<f64>| {
        let [failed, inconclusive, infra] = counts.other_verdicts();
        let works = format!("{}/{}", counts.works, counts.graded());
        rows.push([
            task.to_owned(),
            arm.to_owned(),
            works,
            failed,
            inconclusive,
            infra,
            median,
            money(cost),
            money(per),
        ]);
    };
    for cell in &report.cells {
        let task = crate::render::printable(&cell.task);
        let median = seconds(cell.duration_ms_median);
        row(&task, &cell.arm, &cell.counts, median, cell.cost_usd_median, cell.dollars_per_working_result);
    }
    for total in &report.arm_totals {
        row("(all)", &total.arm, &total.counts, String::new(), total.cost_usd, total.dollars_per_working_result);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|row| row[c].chars().count()).max().unwrap_or(0)).collect();
    let mut text = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    for suspect in &report.suspect_gates {
        text.push_str(&format!(
            "suspect gate: {} of task {} failed in every arm ({} attempts)\n",
            crate::render::printable(&suspect.gate),
            crate::render::printable(&suspect.task),
            suspect.attempts
        ));
    }
    text
}

/// The job `id`, or the latest (by when it was made) when none is named.
fn job_or_latest(home: &Path, id: Option<&str>) -> anyhow::Result<Job> {
    if let Some(id) = id {
        return Ok(job::load(home, id)?);
    }
    let dir = home.join(job::TRIALS_DIR);
    let entries =
        std::fs::read_dir(&dir).map_err(|_| anyhow::anyhow!("no trial has been run here ({})", dir.display()))?;
    entries
        .flatten()
        .filter_map(|entry| job::load(home, &entry.file_name().to_string_lossy()).ok())
        .max_by(|a, b| a.created_at.cmp(&b.created_at))
        .context("no trial job found")
}

pub(super) fn status(args: &TrialStatusArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let job = job_or_latest(&home, args.job.as_deref())?;
    let (done, works) = job.progress();
    let running =
        job.attempts.iter().filter(|a| matches!(a.state, AttemptState::Running | AttemptState::Grading)).count();
    let infra = job.attempts.iter().filter(|a| a.verdict == Some(Verdict::InfraError)).count();
    let spent = job.spent_usd();
    if args.json {
        let value = serde_json::json!({"job_id": job.job_id, "workbench": job.workbench, "runtime": job.runtime,
            "created_at": job.created_at, "total": job.attempts.len(), "done": done, "works": works,
            "running": running, "infra_errors": infra, "spent_usd": spent, "max_cost_usd": job.max_cost_usd});
        println!("{value}");
        return Ok(Exit::Success);
    }
    let batch = job.kind == JobKind::Batch;
    let (noun, worked) = if batch { ("batch", "completed") } else { ("trial", "works") };
    let line = format!(
        "{noun} {} · {} · {done}/{} done · {works} {worked} · {running} running · {infra} infra · ${spent:.2}",
        job.job_id,
        job.workbench,
        job.attempts.len()
    );
    println!("{line}");
    if !args.line {
        for attempt in &job.attempts {
            let state = match attempt.verdict {
                Some(verdict) if batch => super::jobs::batch_status(verdict).to_owned(),
                Some(verdict) => verdict.as_str().to_owned(),
                None => format!("{:?}", attempt.state).to_lowercase(),
            };
            let run = attempt.run_id.as_deref().unwrap_or("-");
            println!(
                "  {} · {} · rep {}: {state} (run {run})",
                crate::render::printable(&attempt.key.task),
                attempt.key.arm,
                attempt.key.rep
            );
        }
    }
    Ok(Exit::Success)
}

pub(super) fn kill(args: &TrialJobArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let job = job::load(&home, &args.job)?;
    let mut asked = 0;
    for attempt in job.attempts.iter().filter(|a| a.state == AttemptState::Running) {
        if let Some(run_id) = &attempt.run_id {
            super::jobs::cancel_run(&home, run_id);
            asked += 1;
        }
    }
    eprintln!(
        "trial {}: {asked} running attempts asked to stop (wb-lsp trial resume {} runs them again)",
        job.job_id, job.job_id
    );
    Ok(Exit::Success)
}

/// A job named by id, or by the path of its `job.json` (a shard's job copied from another machine).
fn load_any(home: &Path, name: &str) -> anyhow::Result<Job> {
    let path = PathBuf::from(name);
    if name.ends_with(".json") || path.is_dir() {
        let file = if path.is_dir() { path.join("job.json") } else { path };
        return Ok(job::load_file(&file)?);
    }
    Ok(job::load(home, name)?)
}

pub(super) fn report(args: &TrialReportArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let jobs = args.jobs.iter().map(|name| load_any(&home, name)).collect::<anyhow::Result<Vec<Job>>>()?;
    if let Some(other) = jobs.iter().find(|job| job.workbench != jobs[0].workbench) {
        anyhow::bail!(
            "job {} is a trial of {}, not {}: one report is of one package",
            other.job_id,
            other.workbench,
            jobs[0].workbench
        );
    }
    if let Some(batch) = jobs.iter().find(|job| job.kind == JobKind::Batch) {
        anyhow::bail!("{} is a batch: its results are in its results.json", batch.job_id);
    }
    let report = make_report(&jobs);
    let dir = match &args.out {
        Some(out) => out.clone(),
        None => job::job_dir(&home, &jobs[0].job_id),
    };
    write_reports(&dir, &report)?;
    print_report(&report, &dir, args.json)?;
    Ok(Exit::Success)
}

pub(super) fn calibrate(args: &TrialCalibrateArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let package = resolve_package(&args.source, &cwd, catalog)?;
    let tasks_dir = tasks_dir(&package, args.tasks.dir.as_deref(), &cwd);
    let tasks = load_tasks(&tasks_dir, &package.name, &args.tasks.only)?;
    let scratch = tempfile::Builder::new().prefix("wb-calibrate-").tempdir().context("a scratch directory")?;
    let mut problems = 0;
    for (id, loaded) in &tasks {
        let checks = calibrate_task(&loaded.task, &scratch.path().join("task"), &[])?;
        problems += checks.iter().filter(|check| !check.ok).count();
        if args.json {
            println!("{}", serde_json::json!({"task": id, "calibrations": checks}));
            continue;
        }
        for check in &checks {
            let mark = if check.ok { "ok" } else { "PROBLEM" };
            let failing: Vec<&str> =
                check.gates.iter().filter(|g| g.exit_code != Some(0)).map(|g| g.id.as_str()).collect();
            let detail = check.problem.clone().unwrap_or_else(|| format!("{} as expected", check.verdict.as_str()));
            println!(
                "{mark:<7} {} · {}: {} (failing gates: {})",
                crate::render::printable(id),
                check.subject,
                crate::render::printable(&detail),
                if failing.is_empty() { "none".to_owned() } else { failing.join(", ") }
            );
        }
    }
    Ok(Exit::failure_unless(problems == 0))
}

/// No agent runs in a regrade: a launcher that starts nothing.
struct NoRuns;

impl Launcher for NoRuns {
    fn launch(&mut self, _request: &wb_engine::RunRequest) -> Result<(), NotStarted> {
        Err(NotStarted::Infra("a regrade starts no run".to_owned()))
    }

    fn launched(&mut self, _run_id: &str) -> Launch {
        Launch::Unknown
    }

    fn cancel(&mut self, _run_id: &str) {}
}

pub(super) fn regrade(args: &TrialJobArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let mut job = job::load(&home, &args.job)?;
    if job.kind == JobKind::Batch {
        anyhow::bail!("{} is a batch: it has no gates to run again", job.job_id);
    }
    // The tasks as they are now (a fixed gate is the point), their digests kept for a later resume.
    let tasks = load_tasks(&job.tasks_dir, &job.workbench, &[])?;
    job.task_digests = tasks.iter().map(|(id, task)| (id.clone(), task.digest.clone())).collect();
    let graded: Vec<_> = job
        .attempts
        .iter()
        .filter(|a| matches!(a.verdict, Some(Verdict::Works | Verdict::Failed | Verdict::Inconclusive)))
        .map(|a| (a.key.clone(), a.outcome_id.clone(), a.reason.as_deref() == Some(TIME_LIMIT_REASON)))
        .collect();
    let mut launcher = NoRuns;
    let mut attempts = RunAttempts::new(&home, &job, &tasks, &mut launcher)?;
    let mut changed = 0;
    for (key, outcome_id, timed_out) in graded {
        let end = RunEnd { outcome_id, timed_out, ..RunEnd::default() };
        let gates = attempts.grade(&key, &end).map_err(|e| anyhow::anyhow!("{e}"))?;
        let verdict = match wb_engine::trials::gates::verdict(&gates) {
            Verdict::Failed if timed_out => Verdict::Inconclusive,
            verdict => verdict,
        };
        if let Some(attempt) = job.attempt_mut(&key) {
            changed += usize::from(attempt.verdict != Some(verdict));
            attempt.verdict = Some(verdict);
            attempt.gates = gates;
        }
    }
    drop(attempts);
    job::save(&home, &job)?;
    let report = make_report(std::slice::from_ref(&job));
    let dir = job::job_dir(&home, &job.job_id);
    write_reports(&dir, &report)?;
    eprintln!("trial {}: regraded, {changed} verdicts changed", job.job_id);
    print_report(&report, &dir, args.json)?;
    Ok(Exit::Success)
}
