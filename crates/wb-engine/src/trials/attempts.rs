//! A trial's attempts as detached supervised runs, the same code path as `run --detach`: each attempt's
//! workspace is a fresh copy of its task's fixture (the task's setup run there first), its run gets the task's
//! prompt and `timeoutMinutes` as its `--max-duration`, and once the run has ended its outcome is graded on
//! another fresh copy ([`super::grade`]). How a run is started and cancelled (the binary's supervisor) is the
//! caller's, behind [`Launcher`]; following runs is `runs/`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wb_manifest::trial_task::{self, TrialTask};
use wb_manifest::{FileSystem, OsFileSystem};
use wb_outcomes::ContentStore;

use super::fixture::materialize;
use super::job::{AttemptKey, GateResult, Job};
use super::schedule::{Attempts, GradeError, NotStarted, Poll, RunEnd};
use crate::events::EventKind;
use crate::runs::{self, RunState, RunStatus};
use crate::{Request, RunLimits, RunMode, RunRequest, Settings};

/// The text a run's terminal event starts with when `--max-duration` stopped it.
const TIME_LIMIT: &str = "Stopped by --max-duration";

/// A task ready to attempt: checked, with the prompt the agent gets.
#[derive(Clone, Debug)]
pub struct LoadedTask {
    pub task: TrialTask,
    pub prompt: String,
    /// `sha256:` of `task.json` and `prompt.md`.
    pub digest: String,
}

/// Why the tasks cannot be attempted.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("no trial tasks in {}: each is a directory with task.json and prompt.md", .0.display())]
    None(PathBuf),
    #[error("{message}\n  --> {}:{line}:{column}", path.display())]
    Invalid { message: String, path: PathBuf, line: u32, column: u32 },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("no trial task {0} (the tasks: {1})")]
    Unknown(String, String),
    #[error("trial task {0} changed since the job started: start a new trial to attempt it as it is now")]
    Changed(String),
}

/// Reads and checks every task under `tasks_dir` (or only those named in `only`), each with its `prompt.md`.
/// `package` is the name of the package the tasks are for. The first problem of a task stops: a trial of a
/// broken task would measure nothing.
pub fn load_tasks(tasks_dir: &Path, package: &str, only: &[String]) -> Result<BTreeMap<String, LoadedTask>, TaskError> {
    let fs = OsFileSystem;
    let files = match tasks_dir.parent() {
        Some(parent) if tasks_dir.file_name().is_some_and(|name| name == trial_task::TRIALS_DIR) => {
            trial_task::task_files(&fs, parent)
        }
        _ => task_dirs(tasks_dir),
    };
    let mut tasks = BTreeMap::new();
    for path in files {
        let read =
            |path: &Path| std::fs::read(path).map_err(|source| TaskError::Read { path: path.to_owned(), source });
        let bytes = read(&path)?;
        let text = String::from_utf8_lossy(&bytes);
        let (task, diagnostics) = trial_task::check_task(&fs, &path, &text, Some(package));
        let Some(task) = task else {
            let first = diagnostics.iter().find(|d| d.severity == wb_manifest::Severity::Error);
            let (message, line, column) = first.map_or_else(
                || ("the task is not valid".to_owned(), 1, 1),
                |d| {
                    let at =
                        wb_syntax::LineIndex::new(&text).line_col(d.range.start, wb_syntax::PositionEncoding::Utf32);
                    (d.message.clone(), at.line + 1, at.col + 1)
                },
            );
            return Err(TaskError::Invalid { message, path, line, column });
        };
        let prompt_path = task.dir.join(trial_task::PROMPT_FILE);
        let prompt = read(&prompt_path)?;
        let digest = format!("sha256:{}", wb_outcomes::sha256_hex(&[bytes.as_slice(), b"\0", &prompt].concat()));
        let prompt = String::from_utf8_lossy(&prompt).into_owned();
        tasks.insert(task.id.clone(), LoadedTask { task, prompt, digest });
    }
    if tasks.is_empty() {
        return Err(TaskError::None(tasks_dir.to_owned()));
    }
    if only.is_empty() {
        return Ok(tasks);
    }
    let names = tasks.keys().cloned().collect::<Vec<_>>().join(", ");
    if let Some(missing) = only.iter().find(|id| !tasks.contains_key(*id)) {
        return Err(TaskError::Unknown(missing.clone(), names));
    }
    tasks.retain(|id, _| only.contains(id));
    Ok(tasks)
}

/// `task.json` of each directory of a `--tasks` directory, sorted.
fn task_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = OsFileSystem.read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .into_iter()
        .filter(|entry| entry.is_dir())
        .map(|entry| entry.join(trial_task::TASK_FILE))
        .filter(|file| file.is_file())
        .collect();
    files.sort();
    files
}

/// Refuses to go on with a job whose tasks changed since it was made.
pub fn check_unchanged(job: &Job, tasks: &BTreeMap<String, LoadedTask>) -> Result<(), TaskError> {
    for (id, digest) in &job.task_digests {
        match tasks.get(id) {
            Some(task) if &task.digest == digest => {}
            _ => return Err(TaskError::Changed(id.clone())),
        }
    }
    Ok(())
}

/// How long a run id chosen for an attempt may go unclaimed by a supervisor (its fixture is made, then the
/// supervisor starts and claims it at once) before the attempt is taken as never launched.
const SPAWN_GRACE: u64 = 30;

/// How the start of a launched run goes, as its launcher knows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Launch {
    /// Its runtime is being prepared.
    Starting,
    /// It has started: its record and log are there.
    Started,
    Failed(NotStarted),
    /// Not launched by this launcher (a resumed job's run).
    Unknown,
}

/// How the runs of attempts are started and cancelled (the binary starts its supervisor, as `run --detach`).
/// Starts do not wait for the runtimes to be prepared, so many attempts prepare at once.
pub trait Launcher {
    /// Starts the supervisor of `request` (its `run_id` set) and returns without waiting for the run to start.
    fn launch(&mut self, request: &RunRequest) -> Result<(), NotStarted>;
    /// How the start of run `run_id` goes.
    fn launched(&mut self, run_id: &str) -> Launch;
    /// Asks a run to stop (as `kill` does).
    fn cancel(&mut self, run_id: &str);
}

/// A job's attempts run on a runtime through `launcher`, graded on this machine.
pub struct RunAttempts<'a> {
    home: PathBuf,
    job: Job,
    tasks: &'a BTreeMap<String, LoadedTask>,
    launcher: &'a mut dyn Launcher,
    store: ContentStore,
    /// The environment the setup commands and the gates get, besides this process's.
    gate_env: Vec<(String, String)>,
}

/// How many attempts are graded at once.
const GRADERS: usize = 16;

/// What grading an attempt needs, shared by the graders running at once.
struct Grader<'g> {
    home: &'g Path,
    job: &'g Job,
    tasks: &'g BTreeMap<String, LoadedTask>,
    store: &'g ContentStore,
    gate_env: &'g [(String, String)],
}

impl Grader<'_> {
    /// Grades an ended attempt on a fresh copy, in its runtime; its copies are removed after.
    fn grade(&self, key: &AttemptKey, end: &RunEnd) -> Result<Vec<GateResult>, GradeError> {
        let loaded = self.tasks.get(&key.task).ok_or_else(|| GradeError::Runtime(format!("no task {}", key.task)))?;
        let dir = self
            .job
            .attempt_dir(self.home, key)
            .ok_or_else(|| GradeError::Runtime("not an attempt of the job".to_owned()))?;
        let scratch = dir.join("grading");
        let _ = std::fs::remove_dir_all(&scratch);
        let outcome = end.outcome_id.as_deref();
        let arm = self.job.arm_sources.get(&key.arm).map(|arm| arm.manifest.clone());
        let gates = match (self.job.runtime.as_str(), arm) {
            ("local", _) | (_, None) => {
                super::grade::grade_local(&loaded.task, self.store, outcome, &scratch, self.gate_env)
            }
            // The gates in a fresh container or sandbox of the attempt's runtime, never the agent's.
            (runtime, Some(manifest)) => {
                let inherited = crate::bindings::process_environment();
                super::grade::grade_with(&loaded.task, self.store, outcome, &scratch, self.gate_env, |gates, dir| {
                    super::gates_runtime::run_gates_in(runtime, &manifest, dir, gates, &inherited, self.home)
                })
            }
        };
        // The gates' verdict and logs are the evidence; the copies (the agent's and the graded) are not kept.
        let _ = std::fs::remove_dir_all(&scratch);
        let _ = std::fs::remove_dir_all(dir.join("work"));
        gates
    }
}

impl<'a> RunAttempts<'a> {
    pub fn new(
        home: &Path,
        job: &Job,
        tasks: &'a BTreeMap<String, LoadedTask>,
        launcher: &'a mut dyn Launcher,
    ) -> Result<RunAttempts<'a>, GradeError> {
        let store = ContentStore::open(home).map_err(|e| GradeError::Apply(e.to_string()))?;
        let gate_env = vec![("WORKBENCH_TRIAL".to_owned(), job.job_id.clone())];
        Ok(RunAttempts { home: home.to_owned(), job: job.clone(), tasks, launcher, store, gate_env })
    }

    fn grader(&self) -> Grader<'_> {
        Grader { home: &self.home, job: &self.job, tasks: self.tasks, store: &self.store, gate_env: &self.gate_env }
    }

    fn task(&self, key: &AttemptKey) -> Result<&'a LoadedTask, NotStarted> {
        self.tasks.get(&key.task).ok_or_else(|| NotStarted::Infra(format!("trial task {} is gone", key.task)))
    }

    fn attempt_dir(&self, key: &AttemptKey) -> Result<PathBuf, NotStarted> {
        self.job.attempt_dir(&self.home, key).ok_or_else(|| NotStarted::Infra("not an attempt of the job".to_owned()))
    }
}

impl Attempts for RunAttempts<'_> {
    fn start(&mut self, key: &AttemptKey, run_id: &str) -> Result<(), NotStarted> {
        let loaded = self.task(key)?;
        let arm = self
            .job
            .arm_sources
            .get(&key.arm)
            .ok_or_else(|| NotStarted::Infra(format!("the job has no package for arm {}", key.arm)))?;
        let dir = self.attempt_dir(key)?;
        // A resumed attempt starts again from nothing: what an earlier start left is not its work.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| NotStarted::Infra(format!("cannot create {}: {e}", dir.display())))?;
        let workspace =
            materialize(&loaded.task, &dir.join("work")).map_err(|e| NotStarted::Infra(format!("fixture: {e}")))?;
        super::grade::set_up(&loaded.task, &workspace, &self.gate_env).map_err(|e| NotStarted::Infra(e.to_string()))?;
        let max_duration = loaded.task.timeout_minutes.map(|minutes| Duration::from_secs_f64(minutes * 60.0));
        let attempt =
            AttemptRun { source: arm.manifest.display().to_string(), workspace, bare: arm.bare, max_duration };
        launch(self.launcher, &self.home, &self.job, attempt, &loaded.prompt, run_id)
    }

    fn poll(&mut self, run_id: &str) -> Poll {
        poll_launched(self.launcher, &self.home, &self.job, run_id)
    }

    fn grade(&mut self, key: &AttemptKey, end: &RunEnd) -> Result<Vec<GateResult>, GradeError> {
        self.grader().grade(key, end)
    }

    /// The ended attempts graded at once, up to [`GRADERS`] at a time: a fresh container or sandbox each is
    /// mostly waiting on the runtime.
    fn grade_all(&mut self, ended: &[(AttemptKey, RunEnd)]) -> Vec<Result<Vec<GateResult>, GradeError>> {
        let grader = self.grader();
        let mut results = Vec::with_capacity(ended.len());
        for chunk in ended.chunks(GRADERS) {
            std::thread::scope(|scope| {
                let graders: Vec<_> = chunk.iter().map(|(key, end)| scope.spawn(|| grader.grade(key, end))).collect();
                for grading in graders {
                    results.push(
                        grading.join().unwrap_or_else(|_| Err(GradeError::Runtime("the grading panicked".to_owned()))),
                    );
                }
            });
        }
        results
    }

    fn cancel(&mut self, run_id: &str) {
        self.launcher.cancel(run_id);
    }
}

/// What one attempt's run is: its package, its workspace, whether it is the bare agent, its time limit.
pub(super) struct AttemptRun {
    pub(super) source: String,
    pub(super) workspace: PathBuf,
    pub(super) bare: bool,
    pub(super) max_duration: Option<Duration>,
}

/// Starts `attempt` of `job` on `task` through `launcher`, as a detached run with id `run_id`.
pub(super) fn launch(
    launcher: &mut dyn Launcher,
    home: &Path,
    job: &Job,
    attempt: AttemptRun,
    task: &str,
    run_id: &str,
) -> Result<(), NotStarted> {
    let request = RunRequest {
        request: Request {
            settings: Settings {
                source: attempt.source,
                cwd: job.cwd.clone(),
                primary: Some(attempt.workspace),
                runtime: (!job.runtime.is_empty()).then(|| job.runtime.clone()),
                env_files: job.env_files.clone(),
                home: Some(home.to_owned()),
                bare: attempt.bare,
                ..Settings::default()
            },
            env: Vec::new(),
            task: Some(task.to_owned()),
        },
        // Nobody is there to answer an attempt's runner: what it asks is refused at once, as `--no-input` does.
        mode: RunMode::start(
            RunLimits {
                max_cost_usd: None,
                max_duration: attempt.max_duration,
                input: crate::input::InputPolicy { no_input: true, timeout: None },
            },
            None,
        ),
        run_id: Some(run_id.to_owned()),
    };
    launcher.launch(&request)
}

/// Where a run `launcher` started (or one of `job` started by another process, resumed) is.
pub(super) fn poll_launched(launcher: &mut dyn Launcher, home: &Path, job: &Job, run_id: &str) -> Poll {
    match launcher.launched(run_id) {
        Launch::Starting => Poll::Running { cost_usd: None },
        Launch::Failed(not_started) => Poll::NotStarted(not_started),
        Launch::Started => poll_run(home, run_id),
        Launch::Unknown => {
            // A resumed job's run. Without its record it is still being prepared while the supervisor that
            // claimed its id lives; one that died, or none that came, means it never started.
            let dir = runs::RunDir::new(home, run_id);
            if dir.file(runs::layout::RECORD).exists() {
                return poll_run(home, run_id);
            }
            let claimed = runs::layout::read_bounded(&dir.file(runs::layout::CLAIM), runs::layout::CLAIM.limit)
                .ok()
                .and_then(|label| crate::leftovers::Identity::from_label(&String::from_utf8_lossy(&label)));
            let started = job.attempts.iter().find(|a| a.run_id.as_deref() == Some(run_id));
            let age = started.and_then(|a| a.started_unix).map(|at| super::job::unix_now().saturating_sub(at));
            match claimed {
                Some(supervisor) if supervisor.alive() => Poll::Running { cost_usd: None },
                Some(_) => Poll::NotStarted(NotStarted::Infra(format!(
                    "the supervisor of run {run_id} ended before the run started"
                ))),
                None if age.is_some_and(|age| age < SPAWN_GRACE) => Poll::Running { cost_usd: None },
                None => Poll::NeverLaunched,
            }
        }
    }
}

/// Where run `run_id` is: running (with its cost so far), or ended with what the scheduler needs.
pub fn poll_run(home: &Path, run_id: &str) -> Poll {
    let record = match runs::read_record(home, run_id) {
        Ok(record) => record,
        Err(error) => {
            return Poll::Ended(RunEnd {
                infra_error: Some(format!("the record of run {run_id} cannot be read: {error}")),
                ..RunEnd::default()
            });
        }
    };
    let state = record.state();
    if state.is_live() {
        return Poll::Running { cost_usd: record.cost_usd };
    }
    let result = runs::read_result(home, run_id).ok();
    // The terminal event is out, the supervisor still cleans up (a container, a sandbox): not ended yet.
    if result.is_none() && state != RunState::Lost && record.owner_alive() {
        return Poll::Running { cost_usd: record.cost_usd };
    }
    let duration_ms = record.elapsed().map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let outcome_id = result.as_ref().and_then(|r| r.outcome_id.clone()).or_else(|| record.outcome_id.clone());
    let message = record.message.clone().unwrap_or_default();
    let mut end = RunEnd {
        outcome_id,
        cost_usd: record.cost_usd,
        tokens: tokens(home, run_id),
        duration_ms,
        ..RunEnd::default()
    };
    match (state, record.status) {
        (RunState::Lost, _) => {
            end.infra_error = Some("the run's supervisor ended before the run did (lost)".to_owned());
        }
        (_, RunStatus::Cancelled) if message.starts_with(TIME_LIMIT) => end.timed_out = true,
        (_, RunStatus::Cancelled) => end.cancelled = true,
        // A run that failed with nothing collected has nothing to grade: the runtime or the runner failed.
        (_, RunStatus::Failed) if end.outcome_id.is_none() => {
            end.infra_error = Some(if message.is_empty() { "the run failed".to_owned() } else { message });
        }
        (_, RunStatus::Failed) => {
            end.failure = Some(if message.is_empty() { "the run failed".to_owned() } else { message })
        }
        _ => {}
    }
    Poll::Ended(end)
}

/// The tokens a run's usage events add up to, when it reported any.
fn tokens(home: &Path, run_id: &str) -> Option<u64> {
    let mut reader = runs::LogReader::open(home, run_id).ok()?;
    let logged = reader.read_new().ok()?;
    let mut total: Option<u64> = None;
    for event in logged.iter().filter_map(runs::Logged::event) {
        if event.known() != Some(EventKind::UsageUpdated) {
            continue;
        }
        let data = &event.data;
        let field = |name: &str| data.get(name).and_then(serde_json::Value::as_u64);
        let tokens = field("total_tokens").or_else(|| match (field("input_tokens"), field("output_tokens")) {
            (None, None) => None,
            (input, output) => Some(input.unwrap_or(0) + output.unwrap_or(0)),
        });
        if let Some(tokens) = tokens {
            total = Some(total.unwrap_or(0).saturating_add(tokens));
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launcher of another process: it knows none of the runs.
    struct Elsewhere;

    impl Launcher for Elsewhere {
        fn launch(&mut self, _request: &RunRequest) -> Result<(), NotStarted> {
            Ok(())
        }
        fn launched(&mut self, _run_id: &str) -> Launch {
            Launch::Unknown
        }
        fn cancel(&mut self, _run_id: &str) {}
    }

    #[test]
    fn a_resumed_attempt_without_a_record_is_told_by_its_supervisors_claim() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let names = ["t".to_owned()];
        let mut job = Job::new("tj".into(), "/p".into(), "p".into(), &names, &["workbench".into()], 1, "local".into());
        let run_id = "wb_0123456789abcdef01234567";
        let attempt = &mut job.attempts[0];
        attempt.run_id = Some(run_id.to_owned());
        attempt.started_unix = Some(super::super::job::unix_now());
        let poll = |job: &Job| poll_launched(&mut Elsewhere, home.path(), job, run_id);
        // Just chosen, not claimed yet: its supervisor may be starting.
        assert!(matches!(poll(&job), Poll::Running { .. }));
        // Chosen long ago and never claimed: it never launched, and is started again.
        job.attempts[0].started_unix = Some(0);
        assert!(matches!(poll(&job), Poll::NeverLaunched));
        // Claimed by a supervisor that lives (this process): its start is under way.
        let dir = runs::RunDir::new(home.path(), run_id);
        let claim = |identity: crate::leftovers::Identity| {
            dir.create()
                .and_then(|()| runs::layout::write_private(&dir.file(runs::layout::CLAIM), identity.label().as_bytes()))
        };
        claim(crate::leftovers::Identity::of(std::process::id())).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(poll(&job), Poll::Running { .. }));
        // Claimed by one that died before the run started: an infrastructure error, said so.
        claim(crate::leftovers::Identity { pid: u32::MAX - 1, start: Some(1) }).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(poll(&job), Poll::NotStarted(NotStarted::Infra(reason)) if reason.contains("ended before")));
    }
}
