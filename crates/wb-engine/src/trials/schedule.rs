//! The scheduler of a trial's attempts: admits attempts up to `parallel` at once, waits for a slot when the
//! runtime says it is full (a 429, "too many sandboxes") instead of failing the attempt, polls the running ones,
//! grades each that ended, and writes the job at every change of state. It never starts an attempt again that
//! has a run: after a crash (of the trial, of the machine) the attempts found running are followed to their
//! end, and only those without a run, or ended by an infrastructure error, are started. Crossing `--max-cost`
//! stops admitting and cancels the running attempts (they keep no verdict: `resume` runs them). What an attempt
//! is (a detached supervised run on a runtime) is behind [`Attempts`].

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::job::{AttemptKey, AttemptState, GateResult, Job, JobError, Verdict, save};

/// The reason an attempt that hit its time limit keeps (its failure is then inconclusive).
pub const TIME_LIMIT_REASON: &str = "the attempt hit its time limit";

/// Why an attempt did not start.
#[derive(Clone, Debug, PartialEq)]
pub enum NotStarted {
    /// The runtime has no room now (a provider's 429 or sandbox limit): try again when a slot frees.
    Busy,
    /// The runtime could not start it (not the package's fault): the attempt is an infrastructure error.
    Infra(String),
}

/// What a run that ended left.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunEnd {
    pub outcome_id: Option<String>,
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
    pub duration_ms: Option<u64>,
    /// The run hit its time limit: its result is graded, but a failure is inconclusive.
    pub timed_out: bool,
    /// The runtime failed or was lost under it: an infrastructure error, not graded.
    pub infra_error: Option<String>,
    /// It was cancelled (the cost cap, `trial kill`): no verdict.
    pub cancelled: bool,
    /// It failed, but left an outcome to grade: why.
    pub failure: Option<String>,
}

/// Where a run is.
#[derive(Clone, Debug, PartialEq)]
pub enum Poll {
    /// It goes on (or is still being prepared); what it has cost so far, when known (counted against `--max-cost`
    /// while it runs).
    Running {
        cost_usd: Option<f64>,
    },
    Ended(RunEnd),
    /// Its start, which was under way, did not come to a run: busy (started again when a slot frees) or an
    /// infrastructure error.
    NotStarted(NotStarted),
    /// Its id was chosen but no supervisor ever took it (the job was killed before): it is started again.
    NeverLaunched,
}

/// Why an attempt's result could not be graded (an infrastructure error: the attempt is not the package's fault).
#[derive(Debug, thiserror::Error)]
pub enum GradeError {
    #[error(transparent)]
    Fixture(#[from] super::fixture::FixtureError),
    #[error("cannot apply the attempt's outcome: {0}")]
    Apply(String),
    #[error("cannot start the grading runtime: {0}")]
    Runtime(String),
    /// The service had no room for the grading sandbox: the attempt is graded again later.
    #[error("the service has no room to grade now: {0}")]
    Busy(String),
}

/// What the scheduler asks of the runtime.
pub trait Attempts {
    /// Starts an attempt as a detached run with id `run_id` (chosen, and saved in the job, before the run is
    /// launched: a job killed while the run starts still knows the run, and a resume follows it).
    fn start(&mut self, key: &AttemptKey, run_id: &str) -> Result<(), NotStarted>;
    fn poll(&mut self, run_id: &str) -> Poll;
    /// Grades an ended attempt's result: each gate's result.
    fn grade(&mut self, key: &AttemptKey, end: &RunEnd) -> Result<Vec<GateResult>, GradeError>;
    /// Asks a running attempt's run to stop.
    fn cancel(&mut self, run_id: &str);
    /// Grades every ended attempt of `ended`, in order (a runtime may grade them at once).
    fn grade_all(&mut self, ended: &[(AttemptKey, RunEnd)]) -> Vec<Result<Vec<GateResult>, GradeError>> {
        ended.iter().map(|(key, end)| self.grade(key, end)).collect()
    }
    /// The job changed (and was saved): an attempt started, ended or was graded.
    fn changed(&mut self, _job: &Job) {}
}

/// How the scheduler runs.
#[derive(Clone, Debug)]
pub struct Limits {
    /// At most this many attempts at once.
    pub parallel: usize,
    /// The trial's spend cap: once the attempts' costs reach it, no attempt starts and the running ones stop.
    pub max_cost_usd: Option<f64>,
    /// How long to wait between looks at the running attempts.
    pub poll: Duration,
}

/// Runs the job's attempts to their verdicts (or until `stop` is set: then nothing more is admitted, and the
/// running attempts are left to their runs, to be followed by `resume`). The job is saved under `home` at every
/// change. Answers whether the cost cap stopped it.
pub fn run(
    home: &Path,
    job: &mut Job,
    attempts: &mut dyn Attempts,
    limits: &Limits,
    stop: &Arc<AtomicBool>,
) -> Result<bool, JobError> {
    let mut capped = false;
    let mut busy_rounds = 0u32;
    // What this call starts: the attempts without a run or with an infrastructure error, each at most once
    // (no automatic retry: a failed start could have cost money; `resume` is the retry).
    let mut to_start: Vec<AttemptKey> = job
        .attempts
        .iter()
        .filter(|a| a.to_resume() && !matches!(a.state, AttemptState::Running | AttemptState::Grading))
        .map(|a| a.key.clone())
        .collect();
    to_start.reverse();
    let mut full_after_start = false;
    loop {
        // Follow what runs; grade what ended.
        let running: Vec<(AttemptKey, String)> = job
            .attempts
            .iter()
            .filter(|a| matches!(a.state, AttemptState::Running | AttemptState::Grading))
            .filter_map(|a| a.run_id.clone().map(|run| (a.key.clone(), run)))
            .collect();
        let mut ended = Vec::new();
        for (key, run_id) in &running {
            match attempts.poll(run_id) {
                Poll::Ended(end) => ended.push((key.clone(), end)),
                Poll::Running { cost_usd: Some(cost) } => update(job, key, |a| a.cost_usd = Some(cost)),
                Poll::Running { cost_usd: None } => {}
                Poll::NeverLaunched => {
                    update(job, key, |a| {
                        a.state = AttemptState::Pending;
                        a.run_id = None;
                        a.started_unix = None;
                    });
                    to_start.push(key.clone());
                    save(home, job)?;
                }
                Poll::NotStarted(NotStarted::Busy) => {
                    update(job, key, |a| {
                        a.state = AttemptState::Pending;
                        a.run_id = None;
                        a.started_unix = None;
                    });
                    to_start.push(key.clone());
                    full_after_start = true;
                    save(home, job)?;
                }
                Poll::NotStarted(NotStarted::Infra(reason)) => {
                    update(job, key, |a| {
                        a.state = AttemptState::Done;
                        a.verdict = Some(Verdict::InfraError);
                        a.reason = Some(reason);
                    });
                    save(home, job)?;
                    attempts.changed(job);
                }
            }
        }
        finish(home, job, attempts, &ended)?;
        let over = limits.max_cost_usd.is_some_and(|cap| job.spent_usd() >= cap);
        if over && !capped {
            capped = true;
            for (_, run_id) in running.iter() {
                attempts.cancel(run_id);
            }
        }
        let in_flight =
            job.attempts.iter().filter(|a| matches!(a.state, AttemptState::Running | AttemptState::Grading)).count();
        let admitting = !capped && !stop.load(Ordering::SeqCst);
        if in_flight == 0 && (to_start.is_empty() || !admitting) {
            return Ok(capped);
        }
        let mut slots = limits.parallel.max(1).saturating_sub(in_flight);
        let mut full = std::mem::take(&mut full_after_start);
        while admitting && slots > 0 && !full {
            let Some(key) = to_start.pop() else { break };
            let key = &key;
            // The run's id is in the job before its supervisor starts: killed at any moment after this save, the
            // job still names the run, and `resume` follows it instead of starting the attempt again.
            let run_id = crate::events::new_run_id();
            update(job, key, |a| {
                a.state = AttemptState::Running;
                a.run_id = Some(run_id.clone());
                a.started_unix = Some(super::job::unix_now());
                a.verdict = None;
                a.reason = None;
            });
            save(home, job)?;
            match attempts.start(key, &run_id) {
                Ok(()) => {
                    slots -= 1;
                    busy_rounds = 0;
                }
                Err(NotStarted::Busy) => {
                    full = true;
                    update(job, key, |a| {
                        a.state = AttemptState::Pending;
                        a.run_id = None;
                        a.started_unix = None;
                    });
                    to_start.push(key.clone());
                }
                Err(NotStarted::Infra(reason)) => update(job, key, |a| {
                    a.state = AttemptState::Done;
                    a.verdict = Some(Verdict::InfraError);
                    a.reason = Some(reason);
                }),
            }
            save(home, job)?;
            attempts.changed(job);
        }
        if full {
            // Wait for a slot, longer while the runtime stays full (at most 30 s between tries).
            busy_rounds = busy_rounds.saturating_add(1);
            let wait = limits.poll.saturating_mul(busy_rounds.min(30));
            std::thread::sleep(wait.min(Duration::from_secs(30)));
        } else {
            std::thread::sleep(limits.poll);
        }
    }
}

fn update(job: &mut Job, key: &AttemptKey, change: impl FnOnce(&mut super::job::Attempt)) {
    if let Some(attempt) = job.attempt_mut(key) {
        change(attempt);
    }
}

/// Attempts whose runs ended: their costs kept, then graded all at once (or an infrastructure error, or no
/// verdict if cancelled).
fn finish(
    home: &Path,
    job: &mut Job,
    attempts: &mut dyn Attempts,
    ended: &[(AttemptKey, RunEnd)],
) -> Result<(), JobError> {
    if ended.is_empty() {
        return Ok(());
    }
    for (key, end) in ended {
        update(job, key, |a| {
            a.state = AttemptState::Grading;
            a.outcome_id = end.outcome_id.clone();
            a.cost_usd = end.cost_usd;
            a.tokens = end.tokens;
            a.duration_ms = end.duration_ms;
        });
    }
    save(home, job)?;
    let to_grade: Vec<(AttemptKey, RunEnd)> =
        ended.iter().filter(|(_, end)| end.infra_error.is_none() && !end.cancelled).cloned().collect();
    let mut graded = attempts.grade_all(&to_grade).into_iter();
    for (key, end) in ended {
        let (verdict, gates, reason) = if let Some(reason) = &end.infra_error {
            (Some(Verdict::InfraError), Vec::new(), Some(reason.clone()))
        } else if end.cancelled {
            (None, Vec::new(), Some("cancelled before its end".to_owned()))
        } else {
            match graded.next() {
                // No room to grade now: the attempt stays `grading` and is graded again at the next look.
                Some(Err(GradeError::Busy(_))) => continue,
                Some(Ok(gates)) => {
                    let verdict = match super::gates::verdict(&gates) {
                        Verdict::Failed if end.timed_out => Verdict::Inconclusive,
                        verdict => verdict,
                    };
                    let reason = end.timed_out.then(|| TIME_LIMIT_REASON.to_owned());
                    (Some(verdict), gates, reason)
                }
                Some(Err(reason)) => (Some(Verdict::InfraError), Vec::new(), Some(format!("grading failed: {reason}"))),
                None => (Some(Verdict::InfraError), Vec::new(), Some("it was not graded".to_owned())),
            }
        };
        update(job, key, |a| {
            a.gates = gates;
            a.reason = reason;
            a.verdict = verdict;
            match verdict {
                Some(_) => a.state = AttemptState::Done,
                // No verdict (cancelled): started again by `resume`, as a new run.
                None => {
                    a.state = AttemptState::Pending;
                    a.run_id = None;
                }
            }
        });
    }
    save(home, job)?;
    attempts.changed(job);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A runtime that runs each attempt for `rounds` polls, with a verdict by task, a cost each, and room for
    /// `room` at once (more is `Busy`).
    #[derive(Default)]
    struct Fake {
        rounds: BTreeMap<String, u32>,
        started: Vec<AttemptKey>,
        live: BTreeMap<String, (AttemptKey, u32)>,
        cancelled: Vec<String>,
        most_at_once: usize,
        room: usize,
        busy_answers: u32,
        infra_task: Option<String>,
        /// Starts accepted, then refused while preparing (as a service's 429 at create): busy this many times.
        busy_while_preparing: u32,
        /// Starts accepted, then failed while preparing, for this task.
        failing_while_preparing: Option<String>,
        /// Grades refused for room (the grading sandbox's 429) before they are answered.
        busy_grades: u32,
        graded: u32,
        /// Runs that ended, as a run's record keeps its end.
        ended: BTreeMap<String, RunEnd>,
    }

    impl Attempts for Fake {
        fn start(&mut self, key: &AttemptKey, run_id: &str) -> Result<(), NotStarted> {
            if self.live.len() >= self.room {
                self.busy_answers += 1;
                return Err(NotStarted::Busy);
            }
            if self.infra_task.as_deref() == Some(key.task.as_str()) {
                return Err(NotStarted::Infra("sandbox create failed: 503".into()));
            }
            self.started.push(key.clone());
            self.live.insert(run_id.to_owned(), (key.clone(), 0));
            self.most_at_once = self.most_at_once.max(self.live.len());
            Ok(())
        }

        fn poll(&mut self, run_id: &str) -> Poll {
            if let Some(end) = self.ended.get(run_id) {
                return Poll::Ended(end.clone());
            }
            if self.busy_while_preparing > 0 && self.live.contains_key(run_id) {
                self.busy_while_preparing -= 1;
                self.live.remove(run_id);
                return Poll::NotStarted(NotStarted::Busy);
            }
            let failing =
                self.live.get(run_id).is_some_and(|(key, _)| Some(&key.task) == self.failing_while_preparing.as_ref());
            if failing {
                self.live.remove(run_id);
                return Poll::NotStarted(NotStarted::Infra("quota exceeded".into()));
            }
            let Some((key, seen)) = self.live.get_mut(run_id) else {
                return Poll::Ended(RunEnd { cancelled: true, ..RunEnd::default() });
            };
            *seen += 1;
            let cancelled = self.cancelled.iter().any(|r| r == run_id);
            if *seen < self.rounds.get(&key.task).copied().unwrap_or(1) && !cancelled {
                return Poll::Running { cost_usd: None };
            }
            self.live.remove(run_id);
            let end = RunEnd { cost_usd: Some(0.5), cancelled, ..RunEnd::default() };
            self.ended.insert(run_id.to_owned(), end.clone());
            Poll::Ended(end)
        }

        fn grade(&mut self, key: &AttemptKey, _: &RunEnd) -> Result<Vec<GateResult>, GradeError> {
            if self.busy_grades > 0 {
                self.busy_grades -= 1;
                return Err(GradeError::Busy("429".into()));
            }
            self.graded += 1;
            let passed = key.arm == "workbench";
            Ok(vec![GateResult {
                id: "g".into(),
                exit_code: Some(i32::from(!passed)),
                duration_ms: 1,
                timed_out: false,
                log: String::new(),
            }])
        }

        fn cancel(&mut self, run_id: &str) {
            self.cancelled.push(run_id.to_owned());
        }
    }

    fn job(tasks: &[&str]) -> Job {
        let tasks: Vec<String> = tasks.iter().map(|t| (*t).to_owned()).collect();
        Job::new(
            super::super::job::new_job_id(),
            "/p".into(),
            "p".into(),
            &tasks,
            &["workbench".into(), "plain".into()],
            2,
            "local".into(),
        )
    }

    fn limits(parallel: usize, max_cost_usd: Option<f64>) -> Limits {
        Limits { parallel, max_cost_usd, poll: Duration::from_millis(1) }
    }

    #[test]
    fn every_attempt_gets_a_verdict_within_the_parallel_limit_and_busy_waits_for_a_slot() -> Result<(), JobError> {
        let home = tempfile::tempdir().map_err(|source| JobError::Write { path: "/".into(), source })?;
        let mut job = job(&["a", "b"]);
        let mut fake = Fake { room: 2, rounds: [("a".into(), 3)].into(), ..Fake::default() };
        let capped = run(home.path(), &mut job, &mut fake, &limits(3, None), &Arc::new(AtomicBool::new(false)))?;
        assert!(!capped);
        assert_eq!(fake.started.len(), 8, "each of 2 tasks × 2 arms × 2 reps once");
        assert!(fake.most_at_once <= 2 && fake.busy_answers > 0, "a full runtime is waited out, never failed");
        assert!(job.attempts.iter().all(|a| a.state == AttemptState::Done));
        let works = job.attempts.iter().filter(|a| a.verdict == Some(Verdict::Works)).count();
        assert_eq!(works, 4);
        assert_eq!(super::super::job::load(home.path(), &job.job_id)?, job, "saved as it ended");
        Ok(())
    }

    #[test]
    fn an_infra_error_is_the_only_attempt_resume_runs_and_a_running_one_is_followed_not_restarted()
    -> Result<(), JobError> {
        let home = tempfile::tempdir().map_err(|source| JobError::Write { path: "/".into(), source })?;
        let mut job = job(&["a", "b"]);
        let mut fake = Fake { room: 8, infra_task: Some("b".into()), ..Fake::default() };
        run(home.path(), &mut job, &mut fake, &limits(8, None), &Arc::new(AtomicBool::new(false)))?;
        let infra: Vec<&AttemptKey> =
            job.attempts.iter().filter(|a| a.verdict == Some(Verdict::InfraError)).map(|a| &a.key).collect();
        assert_eq!(infra.len(), 4);
        assert_eq!(job.to_resume().len(), 4);

        // Resume: the service is back; a run found running (the trial died while it ran) is followed.
        let mut fake = Fake { room: 8, ..fake };
        fake.infra_task = None;
        fake.started.clear();
        let running = job.to_resume()[0].clone();
        fake.live.insert("wb_old".into(), (running.clone(), 0));
        if let Some(attempt) = job.attempt_mut(&running) {
            attempt.state = AttemptState::Running;
            attempt.run_id = Some("wb_old".into());
            attempt.verdict = None;
        }
        run(home.path(), &mut job, &mut fake, &limits(8, None), &Arc::new(AtomicBool::new(false)))?;
        assert_eq!(fake.started.len(), 3, "the three without a run started, the running one followed");
        assert!(!fake.started.contains(&running));
        assert!(job.attempts.iter().all(|a| a.verdict.is_some_and(|v| v != Verdict::InfraError)));
        Ok(())
    }

    #[test]
    fn a_start_refused_while_preparing_waits_for_a_slot_or_is_an_infra_error() -> Result<(), JobError> {
        let home = tempfile::tempdir().map_err(|source| JobError::Write { path: "/".into(), source })?;
        let mut job = job(&["a", "b"]);
        let mut fake =
            Fake { room: 8, busy_while_preparing: 3, failing_while_preparing: Some("b".into()), ..Fake::default() };
        run(home.path(), &mut job, &mut fake, &limits(8, None), &Arc::new(AtomicBool::new(false)))?;
        let verdicts =
            |task: &str| job.attempts.iter().filter(|a| a.key.task == task).map(|a| a.verdict).collect::<Vec<_>>();
        assert!(verdicts("a").iter().all(|v| matches!(v, Some(Verdict::Works | Verdict::Failed))), "{job:#?}");
        assert!(verdicts("b").iter().all(|v| *v == Some(Verdict::InfraError)), "{job:#?}");
        // Three starts were refused for room and started again; none of them is an error.
        assert_eq!(fake.started.len(), 8 + 3);
        Ok(())
    }

    #[test]
    fn a_grade_refused_for_room_is_graded_again_later_not_failed() -> Result<(), JobError> {
        let home = tempfile::tempdir().map_err(|source| JobError::Write { path: "/".into(), source })?;
        let mut job = job(&["a"]);
        let mut fake = Fake { room: 8, busy_grades: 5, ..Fake::default() };
        run(home.path(), &mut job, &mut fake, &limits(8, None), &Arc::new(AtomicBool::new(false)))?;
        assert!(job.attempts.iter().all(|a| matches!(a.verdict, Some(Verdict::Works | Verdict::Failed))), "{job:#?}");
        assert_eq!((fake.started.len(), fake.graded), (4, 4), "each attempt run once and graded once");
        Ok(())
    }

    #[test]
    fn the_cost_cap_stops_admitting_and_cancels_what_runs() -> Result<(), JobError> {
        let home = tempfile::tempdir().map_err(|source| JobError::Write { path: "/".into(), source })?;
        let mut job = job(&["a", "b"]);
        let mut fake = Fake { room: 8, rounds: [("a".into(), 1), ("b".into(), 50)].into(), ..Fake::default() };
        let capped = run(home.path(), &mut job, &mut fake, &limits(8, Some(1.0)), &Arc::new(AtomicBool::new(false)))?;
        assert!(capped);
        assert!(job.spent_usd() >= 1.0);
        assert!(!fake.cancelled.is_empty(), "the running attempts were asked to stop");
        let unfinished = job.attempts.iter().filter(|a| a.verdict.is_none()).count();
        assert!(unfinished > 0 && unfinished == job.to_resume().len(), "what was stopped is resumable");
        Ok(())
    }
}
