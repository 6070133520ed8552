//! A trial's report (`report.json`, version 1; its schema is `schemas/trial-report.schema.json`): per cell
//! (task × arm) the verdicts apart, durations, cost and tokens, dollars per working result over every attempt,
//! pass@k and pass^k from the repetitions; per arm the totals; the paired per-task difference between the first
//! arm and each other; the gates that fail in every arm. Infrastructure errors never count against a package:
//! they are left out of every rate. Several jobs (one per machine or CI shard) merge into one report.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::job::{Attempt, Job, Verdict};

/// The shape of `report.json`.
pub const REPORT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub version: u32,
    pub workbench: String,
    pub jobs: Vec<String>,
    pub arms: Vec<String>,
    pub tasks: Vec<String>,
    pub cells: Vec<Cell>,
    pub arm_totals: Vec<ArmTotals>,
    /// Each other arm against the first, task by task.
    pub pairs: Vec<Pair>,
    pub suspect_gates: Vec<SuspectGate>,
    /// Every attempt, with the evidence of its verdict.
    pub attempts: Vec<Attempt>,
}

/// The verdicts of a set of attempts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub attempts: usize,
    pub works: usize,
    pub failed: usize,
    pub inconclusive: usize,
    pub infra_errors: usize,
    /// Attempts without a verdict yet.
    pub pending: usize,
}

impl Counts {
    /// The failed, inconclusive and infra-error counts as a table's columns (every table lists them so).
    pub fn other_verdicts(&self) -> [String; 3] {
        [self.failed.to_string(), self.inconclusive.to_string(), self.infra_errors.to_string()]
    }

    fn of<'a>(attempts: impl IntoIterator<Item = &'a Attempt>) -> Counts {
        let mut counts = Counts::default();
        for attempt in attempts {
            counts.attempts += 1;
            match attempt.verdict {
                Some(Verdict::Works) => counts.works += 1,
                Some(Verdict::Failed) => counts.failed += 1,
                Some(Verdict::Inconclusive) => counts.inconclusive += 1,
                Some(Verdict::InfraError) => counts.infra_errors += 1,
                None => counts.pending += 1,
            }
        }
        counts
    }

    /// The attempts that count: graded and not an infrastructure error.
    pub fn graded(&self) -> usize {
        self.works + self.failed + self.inconclusive
    }

    /// Works over the attempts that count; none before any does.
    pub fn works_rate(&self) -> Option<f64> {
        (self.graded() > 0).then(|| self.works as f64 / self.graded() as f64)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub task: String,
    pub arm: String,
    #[serde(flatten)]
    pub counts: Counts,
    pub works_rate: Option<f64>,
    /// The standard error of the works rate over the repetitions.
    pub works_rate_spread: Option<f64>,
    pub duration_ms_median: Option<f64>,
    pub duration_ms_p90: Option<f64>,
    pub cost_usd_median: Option<f64>,
    pub tokens_median: Option<f64>,
    /// Every graded attempt's cost over the working results: null when a cost is unknown or nothing works.
    pub dollars_per_working_result: Option<f64>,
    /// pass@k for k = 1 … n (n the graded attempts): the chance that at least one of k attempts works.
    pub pass_at_k: Vec<f64>,
    /// pass^k for k = 1 … n: the chance that all of k attempts work.
    pub pass_all_k: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArmTotals {
    pub arm: String,
    #[serde(flatten)]
    pub counts: Counts,
    pub works_rate: Option<f64>,
    /// The cost of every graded attempt, when every one is known.
    pub cost_usd: Option<f64>,
    pub dollars_per_working_result: Option<f64>,
    /// Working results per dollar: null when a cost is unknown or nothing cost anything.
    pub working_results_per_dollar: Option<f64>,
}

/// An arm against the baseline arm (the first), on one task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pair {
    pub task: String,
    pub baseline: String,
    pub arm: String,
    /// The arm's works rate less the baseline's.
    pub works_rate_difference: Option<f64>,
    /// The arm's median cost less the baseline's.
    pub cost_usd_median_difference: Option<f64>,
}

/// A gate that no graded attempt passed, in any arm: more likely the gate is wrong than every agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuspectGate {
    pub task: String,
    pub gate: String,
    pub attempts: usize,
}

/// The report of one job, or of several merged (they must be of one package; an attempt of the same task, arm
/// and repetition in two jobs counts twice, as the shards ran it twice).
pub fn report(jobs: &[Job]) -> Report {
    let workbench = jobs.first().map(|job| job.workbench.clone()).unwrap_or_default();
    let mut arms: Vec<String> = Vec::new();
    for arm in jobs.iter().flat_map(|job| &job.arms) {
        if !arms.contains(arm) {
            arms.push(arm.clone());
        }
    }
    let attempts: Vec<Attempt> = jobs.iter().flat_map(|job| job.attempts.iter().cloned()).collect();
    let tasks: Vec<String> = attempts.iter().map(|a| a.key.task.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut cells = Vec::new();
    for task in &tasks {
        for arm in &arms {
            let of_cell: Vec<&Attempt> = attempts.iter().filter(|a| &a.key.task == task && &a.key.arm == arm).collect();
            if !of_cell.is_empty() {
                cells.push(cell(task, arm, &of_cell));
            }
        }
    }
    let arm_totals = arms.iter().map(|arm| totals(arm, attempts.iter().filter(|a| &a.key.arm == arm))).collect();
    let pairs = pairs(&cells, &arms, &tasks);
    let suspect_gates = suspect_gates(&attempts);
    Report {
        version: REPORT_VERSION,
        workbench,
        jobs: jobs.iter().map(|job| job.job_id.clone()).collect(),
        arms,
        tasks,
        cells,
        arm_totals,
        pairs,
        suspect_gates,
        attempts,
    }
}

fn graded<'a>(attempts: &'a [&'a Attempt]) -> impl Iterator<Item = &'a Attempt> + 'a {
    attempts.iter().copied().filter(|a| a.verdict.is_some_and(|v| v != Verdict::InfraError))
}

fn cell(task: &str, arm: &str, attempts: &[&Attempt]) -> Cell {
    let counts = Counts::of(attempts.iter().copied());
    let n = counts.graded();
    let durations: Vec<f64> = graded(attempts).filter_map(|a| a.duration_ms.map(|d| d as f64)).collect();
    let costs: Vec<f64> = graded(attempts).filter_map(|a| a.cost_usd).collect();
    let tokens: Vec<f64> = graded(attempts).filter_map(|a| a.tokens.map(|t| t as f64)).collect();
    let rate = counts.works_rate();
    Cell {
        task: task.to_owned(),
        arm: arm.to_owned(),
        works_rate: rate,
        works_rate_spread: rate.filter(|_| n > 1).map(|p| (p * (1.0 - p) / n as f64).sqrt()),
        duration_ms_median: percentile(&durations, 0.5),
        duration_ms_p90: percentile(&durations, 0.9),
        cost_usd_median: percentile(&costs, 0.5),
        tokens_median: percentile(&tokens, 0.5),
        dollars_per_working_result: per_working_result(&counts, &costs),
        pass_at_k: (1..=n).map(|k| pass_at_k(n, counts.works, k)).collect(),
        pass_all_k: (1..=n).map(|k| pass_all_k(n, counts.works, k)).collect(),
        counts,
    }
}

/// The cost of every graded attempt over the working results; `costs` holds the known costs.
fn per_working_result(counts: &Counts, costs: &[f64]) -> Option<f64> {
    (costs.len() == counts.graded() && counts.works > 0).then(|| costs.iter().sum::<f64>() / counts.works as f64)
}

fn totals<'a>(arm: &str, attempts: impl Iterator<Item = &'a Attempt>) -> ArmTotals {
    let attempts: Vec<&Attempt> = attempts.collect();
    let counts = Counts::of(attempts.iter().copied());
    let costs: Vec<f64> = graded(&attempts).filter_map(|a| a.cost_usd).collect();
    let cost =
        (counts.graded() > 0 && costs.len() == counts.graded()).then(|| costs.iter().fold(0.0, |sum, c| sum + c));
    ArmTotals {
        arm: arm.to_owned(),
        works_rate: counts.works_rate(),
        cost_usd: cost,
        dollars_per_working_result: per_working_result(&counts, &costs),
        working_results_per_dollar: cost.filter(|c| *c > 0.0).map(|c| counts.works as f64 / c),
        counts,
    }
}

fn pairs(cells: &[Cell], arms: &[String], tasks: &[String]) -> Vec<Pair> {
    let Some(baseline) = arms.first() else { return Vec::new() };
    let find = |task: &str, arm: &str| cells.iter().find(|c| c.task == task && c.arm == arm);
    let mut pairs = Vec::new();
    for task in tasks {
        for arm in arms.iter().skip(1) {
            let (Some(base), Some(other)) = (find(task, baseline), find(task, arm)) else { continue };
            let difference = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a - b);
            pairs.push(Pair {
                task: task.clone(),
                baseline: baseline.clone(),
                arm: arm.clone(),
                works_rate_difference: difference(other.works_rate, base.works_rate),
                cost_usd_median_difference: difference(other.cost_usd_median, base.cost_usd_median),
            });
        }
    }
    pairs
}

fn suspect_gates(attempts: &[Attempt]) -> Vec<SuspectGate> {
    // Per task and gate: how many graded attempts ran it, and whether one passed.
    let mut gates: BTreeMap<(String, String), (usize, bool)> = BTreeMap::new();
    for attempt in attempts.iter().filter(|a| matches!(a.verdict, Some(Verdict::Works | Verdict::Failed))) {
        for gate in &attempt.gates {
            let entry = gates.entry((attempt.key.task.clone(), gate.id.clone())).or_default();
            entry.0 += 1;
            entry.1 |= gate.exit_code == Some(0);
        }
    }
    gates
        .into_iter()
        .filter(|(_, (runs, passed))| *runs > 0 && !passed)
        .map(|((task, gate), (attempts, _))| SuspectGate { task, gate, attempts })
        .collect()
}

/// The `p`-quantile of `values` by linear interpolation between the closest ranks; none for no values.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
    let (a, b) = (sorted.get(low).copied()?, sorted.get(high).copied()?);
    Some(a + (b - a) * (rank - low as f64))
}

/// The chance that at least one of `k` attempts drawn from `n` (of which `c` work) works: 1 − C(n−c, k)/C(n, k).
pub fn pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if k == 0 || k > n {
        return 0.0;
    }
    if n - c < k {
        return 1.0;
    }
    // C(n−c, k)/C(n, k) = ∏_{i=0}^{k−1} (n−c−i)/(n−i)
    1.0 - (0..k).map(|i| (n - c - i) as f64 / (n - i) as f64).product::<f64>()
}

/// The chance that all of `k` attempts drawn from `n` (of which `c` work) work: C(c, k)/C(n, k).
pub fn pass_all_k(n: usize, c: usize, k: usize) -> f64 {
    if k == 0 || k > n || c < k {
        return 0.0;
    }
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trials::job::{AttemptKey, AttemptState, GateResult};

    fn attempt(task: &str, arm: &str, rep: u32, verdict: Verdict, cost: Option<f64>, ms: u64) -> Attempt {
        let mut attempt = Attempt::pending(AttemptKey { task: task.into(), arm: arm.into(), rep });
        attempt.state = AttemptState::Done;
        attempt.verdict = Some(verdict);
        attempt.cost_usd = cost;
        attempt.duration_ms = Some(ms);
        let passed = verdict == Verdict::Works;
        attempt.gates = vec![
            GateResult {
                id: "tests".into(),
                exit_code: Some(i32::from(!passed)),
                duration_ms: 1,
                timed_out: false,
                log: String::new(),
            },
            GateResult {
                id: "broken".into(),
                exit_code: Some(1),
                duration_ms: 1,
                timed_out: false,
                log: String::new(),
            },
        ];
        attempt
    }

    fn job(attempts: Vec<Attempt>) -> Job {
        let mut job = Job::new(
            "wbt_01".into(),
            "/p".into(),
            "p".into(),
            &[],
            &["workbench".into(), "plain".into()],
            3,
            "local".into(),
        );
        job.attempts = attempts;
        job
    }

    #[test]
    fn pass_at_k_and_pass_all_k_follow_their_definitions() {
        assert_eq!(pass_at_k(3, 0, 1), 0.0);
        assert!((pass_at_k(3, 1, 1) - 1.0 / 3.0).abs() < 1e-12);
        assert!((pass_at_k(3, 1, 2) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 1, 3), 1.0);
        assert!((pass_all_k(3, 2, 2) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(pass_all_k(3, 3, 3), 1.0);
        assert_eq!(pass_all_k(3, 2, 3), 0.0);
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(2.5));
        assert_eq!(percentile(&[10.0], 0.9), Some(10.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn cells_arms_pairs_and_suspect_gates() {
        let report = report(&[job(vec![
            attempt("t", "workbench", 1, Verdict::Works, Some(0.30), 1000),
            attempt("t", "workbench", 2, Verdict::Works, Some(0.30), 3000),
            attempt("t", "workbench", 3, Verdict::InfraError, None, 10),
            attempt("t", "plain", 1, Verdict::Works, Some(0.50), 2000),
            attempt("t", "plain", 2, Verdict::Failed, Some(0.50), 2000),
            attempt("t", "plain", 3, Verdict::Inconclusive, None, 9000),
        ])]);
        let with = &report.cells[0];
        assert_eq!(
            (with.arm.as_str(), with.counts.works, with.counts.infra_errors, with.counts.graded()),
            ("workbench", 2, 1, 2)
        );
        assert_eq!(with.works_rate, Some(1.0), "the infrastructure error does not count");
        assert_eq!(with.dollars_per_working_result, Some(0.30));
        assert_eq!(with.duration_ms_median, Some(2000.0));
        assert_eq!(with.pass_at_k, [1.0, 1.0]);
        let without = &report.cells[1];
        assert_eq!(without.works_rate, Some(1.0 / 3.0));
        assert_eq!(without.dollars_per_working_result, None, "a cost is unknown: null, never 0");
        assert_eq!(report.arm_totals[0].working_results_per_dollar, Some(2.0 / 0.6));
        assert_eq!(report.pairs.len(), 1);
        let difference = report.pairs[0].works_rate_difference.unwrap_or_default();
        assert!((difference - (1.0 / 3.0 - 1.0)).abs() < 1e-12, "{difference}");
        assert_eq!(report.suspect_gates, [SuspectGate { task: "t".into(), gate: "broken".into(), attempts: 4 }]);
    }

    #[test]
    fn jobs_merge_into_one_report() {
        let first = job(vec![attempt("t", "workbench", 1, Verdict::Works, Some(0.1), 1)]);
        let mut second = job(vec![attempt("u", "workbench", 1, Verdict::Failed, Some(0.1), 1)]);
        second.job_id = "wbt_02".into();
        let merged = report(&[first, second]);
        assert_eq!(merged.jobs, ["wbt_01", "wbt_02"]);
        assert_eq!(merged.tasks, ["t", "u"]);
        assert_eq!(merged.arm_totals[0].counts.attempts, 2);
    }
}
