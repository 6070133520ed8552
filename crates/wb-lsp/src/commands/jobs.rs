//! What `trial` and `batch` share: running a job's attempts on the scheduler (Ctrl-C stops admitting, a second
//! leaves), telling the terminal or a JSON reader as each ends, starting each run's supervisor without waiting for
//! its runtime ([`Supervisors`]), asking a run to stop, and the exit status a job ends with.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wb_engine::RunRequest;
use wb_engine::runs;
use wb_engine::trials::attempts::{Launch, Launcher};
use wb_engine::trials::job::{AttemptKey, GateResult, Job, JobKind, Verdict};
use wb_engine::trials::schedule::{self, Attempts, GradeError, Limits, NotStarted, Poll, RunEnd};

use crate::exit::Exit;
use crate::supervisor::{self, Start};

/// How often the running attempts are looked at.
const POLL: Duration = Duration::from_millis(500);

/// How a job's run ended.
pub(super) struct Driven {
    /// `--max-cost` was reached.
    capped: bool,
    /// Ctrl-C stopped admitting.
    stopped: bool,
}

/// Runs the job's attempts until each has its verdict (or the cap, or Ctrl-C, stops admitting), telling the
/// terminal (or, with `json`, stdout) as each ends.
pub(super) fn run_job(home: &Path, job: &mut Job, attempts: &mut dyn Attempts, json: bool) -> anyhow::Result<Driven> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            // A second Ctrl-C leaves at once: the running attempts go on (`resume` follows them).
            Exit::Cancelled.now();
        }
        eprintln!("stopping: nothing new starts; the running ones finish (Ctrl-C again to leave them running)");
    });
    let limits = Limits { parallel: job.parallel.max(1), max_cost_usd: job.max_cost_usd, poll: POLL };
    let mut shown = Shown { inner: attempts, progress: Progress::new(job, json) };
    let capped = schedule::run(home, job, &mut shown, &limits, &stop)?;
    Ok(Driven { capped, stopped: stop.load(Ordering::SeqCst) })
}

/// The exit status of a job that ran: cancelled when the cap or Ctrl-C stopped it, failure when an attempt
/// has no verdict or an infrastructure error (the `resume` command named), else success.
pub(super) fn ending(job: &Job, driven: &Driven, command: &str) -> Exit {
    let open = job.attempts.iter().filter(|a| a.verdict.is_none() || a.verdict == Some(Verdict::InfraError)).count();
    if driven.capped {
        eprintln!("--max-cost was reached: {open} have no verdict (wb-lsp {command} resume {})", job.job_id);
        return Exit::Cancelled;
    }
    if driven.stopped {
        return Exit::Cancelled;
    }
    if open > 0 {
        eprintln!("{open} have no verdict or an infrastructure error: wb-lsp {command} resume {}", job.job_id);
        return Exit::Failure;
    }
    Exit::Success
}

/// What a batch item's verdict says of its run.
pub(super) fn batch_status(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Works => "completed",
        Verdict::Failed => "failed",
        Verdict::Inconclusive => "timed out",
        Verdict::InfraError => "infra_error",
    }
}

/// The job's attempts, with the terminal told of each change.
struct Shown<'a> {
    inner: &'a mut dyn Attempts,
    progress: Progress,
}

impl Attempts for Shown<'_> {
    fn start(&mut self, key: &AttemptKey, run_id: &str) -> Result<(), NotStarted> {
        self.inner.start(key, run_id)
    }

    fn poll(&mut self, run_id: &str) -> Poll {
        self.inner.poll(run_id)
    }

    fn grade(&mut self, key: &AttemptKey, end: &RunEnd) -> Result<Vec<GateResult>, GradeError> {
        self.inner.grade(key, end)
    }

    fn grade_all(&mut self, ended: &[(AttemptKey, RunEnd)]) -> Vec<Result<Vec<GateResult>, GradeError>> {
        self.inner.grade_all(ended)
    }

    fn cancel(&mut self, run_id: &str) {
        self.inner.cancel(run_id);
    }

    fn changed(&mut self, job: &Job) {
        self.inner.changed(job);
        self.progress.show(job);
    }
}

/// What the terminal (or a JSON reader) is told as attempts end.
struct Progress {
    json: bool,
    /// Each attempt's verdict as last shown.
    shown: Vec<Option<Verdict>>,
}

impl Progress {
    fn new(job: &Job, json: bool) -> Progress {
        Progress { json, shown: job.attempts.iter().map(|a| a.verdict).collect() }
    }

    fn show(&mut self, job: &Job) {
        for (index, attempt) in job.attempts.iter().enumerate() {
            let Some(shown) = self.shown.get_mut(index) else { continue };
            if *shown == attempt.verdict {
                continue;
            }
            *shown = attempt.verdict;
            let Some(verdict) = attempt.verdict else { continue };
            let (done, works) = job.progress();
            if self.json {
                let line = serde_json::json!({"type": "attempt", "job_id": job.job_id, "done": done,
                    "total": job.attempts.len(), "works": works, "spent_usd": job.spent_usd(), "attempt": attempt});
                println!("{line}");
                continue;
            }
            let cost = attempt.cost_usd.map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.4}"));
            let seconds = attempt.duration_ms.map_or_else(String::new, |ms| format!(", {:.0} s", ms as f64 / 1000.0));
            let reason = attempt.reason.as_deref().map(|r| format!(": {}", super::printable(r))).unwrap_or_default();
            let (what, said) = match job.kind {
                JobKind::Trial => (
                    format!("{} · {} · rep {}", super::printable(&attempt.key.task), attempt.key.arm, attempt.key.rep),
                    verdict.as_str(),
                ),
                JobKind::Batch => (super::printable(&attempt.key.task).into_owned(), batch_status(verdict)),
            };
            eprintln!("  [{done}/{}] {what}: {said}{reason} ({cost}{seconds})", job.attempts.len());
        }
    }
}

/// Starts runs as `run --detach` does: this binary's supervisor, in a process group of its own. Each
/// supervisor's start is read on a thread of its own (a small stack: hundreds prepare at once), which then
/// waits for the supervisor to end, so none is left a zombie.
pub(super) struct Supervisors {
    home: PathBuf,
    /// How each launched run's start went, written by its thread.
    launches: Arc<Mutex<HashMap<String, Launch>>>,
}

impl Supervisors {
    pub(super) fn new(home: &Path) -> Supervisors {
        Supervisors { home: home.to_owned(), launches: Arc::default() }
    }

    fn set(launches: &Mutex<HashMap<String, Launch>>, run_id: &str, launch: Launch) {
        if let Ok(mut launches) = launches.lock() {
            launches.insert(run_id.to_owned(), launch);
        }
    }
}

impl Launcher for Supervisors {
    fn launch(&mut self, request: &RunRequest) -> Result<(), NotStarted> {
        let run_id = request.run_id.clone().ok_or_else(|| NotStarted::Infra("a run without an id".to_owned()))?;
        let starting = supervisor::spawn(request).map_err(|e| NotStarted::Infra(format!("{e:#}")))?;
        Supervisors::set(&self.launches, &run_id, Launch::Starting);
        let launches = Arc::clone(&self.launches);
        let id = run_id.clone();
        let follow = move || {
            let launch = match starting.wait_started(&mut |_| {}) {
                Ok(Start::Started { mut child, .. }) => {
                    Supervisors::set(&launches, &id, Launch::Started);
                    let _ = child.wait();
                    return;
                }
                Ok(Start::Failed(failure)) if failure.busy => {
                    eprintln!("  the service has no room now (429): waiting for a slot to start an attempt again");
                    Launch::Failed(NotStarted::Busy)
                }
                Ok(Start::Failed(failure)) => Launch::Failed(NotStarted::Infra(failure.message)),
                Err(error) => Launch::Failed(NotStarted::Infra(format!("{error:#}"))),
            };
            Supervisors::set(&launches, &id, launch);
        };
        std::thread::Builder::new()
            .name(format!("start {run_id}"))
            .stack_size(128 * 1024)
            .spawn(follow)
            .map(|_| ())
            .map_err(|e| NotStarted::Infra(format!("cannot follow the run's start: {e}")))
    }

    fn launched(&mut self, run_id: &str) -> Launch {
        self.launches.lock().ok().and_then(|launches| launches.get(run_id).cloned()).unwrap_or(Launch::Unknown)
    }

    fn cancel(&mut self, run_id: &str) {
        cancel_run(&self.home, run_id);
    }
}

/// Asks run `run_id` to stop, as `kill` does, when its supervisor is alive and is the process that started it.
pub(super) fn cancel_run(home: &Path, run_id: &str) {
    if let Ok(record) = runs::read_record(home, run_id)
        && record.state().is_live()
        && record.pid_start.is_some()
        && record.interrupt_cancels
    {
        let _ = supervisor::interrupt(record.pid);
    }
}
