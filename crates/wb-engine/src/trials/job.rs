//! A trial's job: `$WORKBENCH_HOME/trials/<job-id>/job.json`, every attempt (task × arm × rep) with its state,
//! run, verdict, cost and gate results. Written whole and atomically each time an attempt changes state, so a
//! job killed at any moment is read back as it was; `resume` takes exactly the attempts without a verdict or
//! with an infrastructure error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wb_outcomes::{FileMode, write_atomic};

use super::arms::ArmSource;

/// The shape of `job.json`.
pub const JOB_VERSION: u32 = 1;
/// The directory under the Workbench home that holds one directory per job.
pub const TRIALS_DIR: &str = "trials";
/// The largest `job.json` read back (hundreds of attempts are a few hundred kilobytes).
const MAX_JOB_BYTES: u64 = 64 * 1024 * 1024;
/// The most of a gate's output kept with its result.
pub const MAX_GATE_LOG_BYTES: usize = 16 * 1024;

/// What an attempt's verdict is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every gate passed.
    Works,
    /// A gate failed.
    Failed,
    /// A gate timed out, or the attempt hit its time limit.
    Inconclusive,
    /// The runtime could not be created or was lost, the service failed or refused, the runner could not
    /// start: never counted against the package.
    InfraError,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Works => "works",
            Verdict::Failed => "failed",
            Verdict::Inconclusive => "inconclusive",
            Verdict::InfraError => "infra_error",
        }
    }
}

/// Where an attempt is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptState {
    /// Not started (or to be started again by `resume`).
    Pending,
    /// Its run was started.
    Running,
    /// Its run ended; the gates run on its outcome.
    Grading,
    /// It has its verdict.
    Done,
}

/// One gate's result on an attempt's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub id: String,
    /// The exit status; none when the gate timed out or could not start.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub timed_out: bool,
    /// The end of its output, at most [`MAX_GATE_LOG_BYTES`].
    pub log: String,
}

/// Which attempt: a task, an arm and a repetition (from 1).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AttemptKey {
    pub task: String,
    pub arm: String,
    pub rep: u32,
}

/// One attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    #[serde(flatten)]
    pub key: AttemptKey,
    pub state: AttemptState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The detached run of the attempt (its `runs/<id>/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// When its run was started (seconds since 1970): a run that has no record long after is taken as never
    /// started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_id: Option<String>,
    /// What the run cost, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<GateResult>,
    /// Why the attempt is an infrastructure error or inconclusive, in a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Attempt {
    pub fn pending(key: AttemptKey) -> Attempt {
        Attempt {
            key,
            state: AttemptState::Pending,
            verdict: None,
            run_id: None,
            started_unix: None,
            outcome_id: None,
            cost_usd: None,
            tokens: None,
            duration_ms: None,
            gates: Vec::new(),
            reason: None,
        }
    }

    /// Whether `resume` runs it again: it has no verdict, or its verdict is an infrastructure error.
    pub fn to_resume(&self) -> bool {
        !matches!(self.verdict, Some(verdict) if verdict != Verdict::InfraError)
    }
}

/// One line of a batch file (`batch.rs` reads them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    /// The item's id (default: `line-N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A repository on this machine, worked on in place (made absolute when read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// A repository to clone into the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// What to check out of `git`: a commit, a tag or a branch (default: the remote's default branch).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The task the agent gets.
    pub task: String,
    /// The package (a SOURCE, relative to the item's repository; `#name` selects one of its packages). Default:
    /// `--workbench`, else the repository's own package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workbench: Option<String>,
}

/// What a job runs: a trial's attempts, graded by gates, or a batch's items, one run each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    #[default]
    Trial,
    Batch,
}

/// A job: what was asked, and every attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub version: u32,
    pub job_id: String,
    #[serde(default)]
    pub kind: JobKind,
    pub created_at: String,
    /// The package's manifest.
    pub package: PathBuf,
    /// The package's name.
    pub workbench: String,
    /// The package's version when the job was made.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workbench_version: String,
    /// The arms, in order (`workbench`, `plain`, `against`).
    pub arms: Vec<String>,
    pub reps: u32,
    pub runtime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// At most this many attempts at once.
    #[serde(default)]
    pub parallel: usize,
    /// Where the tasks were read (the package's `trials/`, or `--tasks`).
    #[serde(default)]
    pub tasks_dir: PathBuf,
    /// `sha256:` of each task's `task.json` and `prompt.md` when the job was made: `resume` refuses a task that
    /// changed since (its attempts would not be comparable).
    #[serde(default)]
    pub task_digests: BTreeMap<String, String>,
    /// Each arm's package, frozen in the job directory.
    #[serde(default)]
    pub arm_sources: BTreeMap<String, ArmSource>,
    /// The directory the trial was started from: the runs' working directory.
    #[serde(default)]
    pub cwd: PathBuf,
    /// `--env-file` files (names only; values are read again by each run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_files: Vec<PathBuf>,
    /// A batch's items by id (its attempts' tasks).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub items: BTreeMap<String, BatchItem>,
    /// Each run's `--max-duration` in seconds (a batch's; a trial's come from its tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_secs: Option<u64>,
    pub attempts: Vec<Attempt>,
}

impl Job {
    /// A new job of every task × arm × rep, each pending.
    pub fn new(
        job_id: String,
        package: PathBuf,
        workbench: String,
        tasks: &[String],
        arms: &[String],
        reps: u32,
        runtime: String,
    ) -> Job {
        let mut attempts = Vec::new();
        for task in tasks {
            for arm in arms {
                for rep in 1..=reps {
                    attempts.push(Attempt::pending(AttemptKey { task: task.clone(), arm: arm.clone(), rep }));
                }
            }
        }
        Job {
            version: JOB_VERSION,
            job_id,
            kind: JobKind::Trial,
            created_at: wb_outcomes::now_utc(),
            package,
            workbench,
            workbench_version: String::new(),
            arms: arms.to_vec(),
            reps,
            runtime,
            max_cost_usd: None,
            parallel: 1,
            tasks_dir: PathBuf::new(),
            task_digests: BTreeMap::new(),
            arm_sources: BTreeMap::new(),
            cwd: PathBuf::new(),
            env_files: Vec::new(),
            items: BTreeMap::new(),
            max_duration_secs: None,
            attempts,
        }
    }

    /// The attempts `resume` runs, in order.
    pub fn to_resume(&self) -> Vec<AttemptKey> {
        self.attempts.iter().filter(|a| a.to_resume()).map(|a| a.key.clone()).collect()
    }

    /// The directory of attempt `key` in the job's directory, numbered in the order of [`Job::attempts`]: its
    /// workspace (`work/`) and the copy it is graded in (`grading/`), both removed once it is graded.
    pub fn attempt_dir(&self, home: &Path, key: &AttemptKey) -> Option<PathBuf> {
        let index = self.attempts.iter().position(|a| &a.key == key)?;
        Some(job_dir(home, &self.job_id).join("attempts").join(format!("{:04}", index + 1)))
    }

    pub fn attempt_mut(&mut self, key: &AttemptKey) -> Option<&mut Attempt> {
        self.attempts.iter_mut().find(|a| &a.key == key)
    }

    /// What the attempts cost so far (those whose cost is known).
    pub fn spent_usd(&self) -> f64 {
        self.attempts.iter().filter_map(|a| a.cost_usd).fold(0.0, |sum, cost| sum + cost)
    }

    /// How many attempts have a verdict, and how many of those work.
    pub fn progress(&self) -> (usize, usize) {
        let done = self.attempts.iter().filter(|a| a.verdict.is_some()).count();
        let works = self.attempts.iter().filter(|a| a.verdict == Some(Verdict::Works)).count();
        (done, works)
    }
}

/// Now, in seconds since 1970.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The directory of job `job_id` under `home`.
pub fn job_dir(home: &Path, job_id: &str) -> PathBuf {
    home.join(TRIALS_DIR).join(job_id)
}

/// A new job id: `wbt_` and 16 random hex digits.
pub fn new_job_id() -> String {
    format!("wbt_{}", wb_outcomes::random_hex(8))
}

/// Every job under `home` that can be read, newest first (at most `limit`, the newest by their directory's
/// time).
pub fn list(home: &Path, limit: usize) -> Vec<Job> {
    let Ok(entries) = std::fs::read_dir(home.join(TRIALS_DIR)) else { return Vec::new() };
    let mut dirs: Vec<(std::time::SystemTime, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some((modified, entry.file_name().to_string_lossy().into_owned()))
        })
        .collect();
    dirs.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    let mut jobs: Vec<Job> = dirs.into_iter().take(limit).filter_map(|(_, id)| load(home, &id).ok()).collect();
    jobs.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    jobs
}

/// How old a job is, from its `created_at`.
pub fn age(job: &Job) -> Option<std::time::Duration> {
    let created: jiff::Timestamp = job.created_at.parse().ok()?;
    let seconds = jiff::Timestamp::now().as_second().checked_sub(created.as_second())?;
    Some(std::time::Duration::from_secs(u64::try_from(seconds).ok()?))
}

/// Why a job could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("trial job {0} does not exist")]
    Missing(String),
    #[error("trial job id must be wbt_ and hex digits: {0}")]
    BadId(String),
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a trial job: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// Writes `job.json` whole and atomically (the directory made 0700 when new).
pub fn save(home: &Path, job: &Job) -> Result<(), JobError> {
    let dir = job_dir(home, &job.job_id);
    let path = dir.join("job.json");
    let write = |source| JobError::Write { path: path.clone(), source };
    std::fs::create_dir_all(&dir).map_err(write)?;
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).map_err(write)?;
    let bytes = serde_json::to_vec_pretty(job).map_err(|e| write(std::io::Error::other(e)))?;
    write_atomic(&path, &bytes, FileMode::Exactly(0o600)).map_err(write)
}

/// Reads job `job_id` back.
pub fn load(home: &Path, job_id: &str) -> Result<Job, JobError> {
    let valid =
        job_id.strip_prefix("wbt_").is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if !valid {
        return Err(JobError::BadId(job_id.to_owned()));
    }
    let job = load_file(&job_dir(home, job_id).join("job.json")).map_err(|error| match error {
        JobError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            JobError::Missing(job_id.to_owned())
        }
        other => other,
    })?;
    if job.job_id != job_id {
        return Err(JobError::Invalid { path: job_dir(home, job_id), reason: format!("it is job {}", job.job_id) });
    }
    Ok(job)
}

/// Reads a `job.json` wherever it is (a shard's, copied from another machine): a regular file within the size
/// limit, of this version.
pub fn load_file(path: &Path) -> Result<Job, JobError> {
    let path = path.to_owned();
    let size = match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => meta.len(),
        Ok(_) => return Err(JobError::Invalid { path, reason: "not a regular file".to_owned() }),
        Err(source) => return Err(JobError::Read { path, source }),
    };
    if size > MAX_JOB_BYTES {
        return Err(JobError::Invalid { path, reason: format!("{size} bytes, over the limit") });
    }
    let bytes = std::fs::read(&path).map_err(|source| JobError::Read { path: path.clone(), source })?;
    let job: Job =
        serde_json::from_slice(&bytes).map_err(|e| JobError::Invalid { path: path.clone(), reason: e.to_string() })?;
    if job.version != JOB_VERSION {
        return Err(JobError::Invalid { path, reason: format!("version {} of job {}", job.version, job.job_id) });
    }
    Ok(job)
}

/// The end of `text`, at most [`MAX_GATE_LOG_BYTES`] bytes on a character boundary.
pub fn tail(text: &str) -> String {
    if text.len() <= MAX_GATE_LOG_BYTES {
        return text.to_owned();
    }
    let mut start = text.len() - MAX_GATE_LOG_BYTES;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        let tasks = ["a".to_owned(), "b".to_owned()];
        let arms = ["workbench".to_owned(), "plain".to_owned()];
        Job::new(
            new_job_id(),
            PathBuf::from("/r/.workbenches/p/workbench.yml"),
            "p".to_owned(),
            &tasks,
            &arms,
            3,
            "local".to_owned(),
        )
    }

    #[test]
    fn every_task_arm_and_rep_is_an_attempt_and_resume_takes_what_has_no_verdict() {
        let mut job = job();
        assert_eq!(job.attempts.len(), 12);
        let first = job.attempts[0].key.clone();
        let second = job.attempts[1].key.clone();
        let third = job.attempts[2].key.clone();
        for (key, verdict) in [(&first, Verdict::Works), (&second, Verdict::InfraError), (&third, Verdict::Failed)] {
            if let Some(attempt) = job.attempt_mut(key) {
                attempt.verdict = Some(verdict);
                attempt.state = AttemptState::Done;
            }
        }
        let again = job.to_resume();
        assert_eq!(again.len(), 10);
        assert!(again.contains(&second) && !again.contains(&first) && !again.contains(&third));
        assert_eq!(job.progress(), (3, 1));
    }

    #[test]
    fn a_job_reads_back_as_written_and_a_bad_id_or_file_is_refused() -> Result<(), JobError> {
        let home = tempfile::tempdir().map_err(|source| JobError::Write { path: PathBuf::new(), source })?;
        let mut job = job();
        job.attempts[0].cost_usd = Some(0.25);
        job.attempts[0].gates.push(GateResult {
            id: "t".into(),
            exit_code: Some(0),
            duration_ms: 5,
            timed_out: false,
            log: "ok".into(),
        });
        save(home.path(), &job)?;
        assert_eq!(load(home.path(), &job.job_id)?, job);
        assert!(matches!(load(home.path(), "../x"), Err(JobError::BadId(_))));
        assert!(matches!(load(home.path(), "wbt_00"), Err(JobError::Missing(_))));
        let path = job_dir(home.path(), &job.job_id).join("job.json");
        std::fs::write(&path, "{").map_err(|source| JobError::Write { path: path.clone(), source })?;
        assert!(matches!(load(home.path(), &job.job_id), Err(JobError::Invalid { .. })));
        Ok(())
    }

    #[test]
    fn a_gate_log_keeps_its_end() {
        let long = format!("{}é{}", "a".repeat(MAX_GATE_LOG_BYTES), "end");
        let kept = tail(&long);
        assert!(kept.ends_with("éend") || kept.ends_with("end"));
        assert!(kept.len() <= MAX_GATE_LOG_BYTES + "…".len());
    }
}
