//! A trial in one line, as the code lens on a manifest and the editors' lists show it: the package's version,
//! the works of the package's own arm over its graded attempts, the dollars per working result, and its age.

use std::time::Duration;

use wb_engine::trials::arms::WORKBENCH;
use wb_engine::trials::job::{self, Job};

/// `trials 1.0.0: 9/10 works · $0.30 per working result · 2 days ago` (the first arm's figures when the job
/// has no `workbench` arm).
pub(crate) fn summary(trial: &Job) -> String {
    let report = wb_engine::trials::report::report(std::slice::from_ref(trial));
    let totals = report.arm_totals.iter().find(|t| t.arm == WORKBENCH).or_else(|| report.arm_totals.first());
    let (works, graded, per_working) =
        totals.map_or((0, 0, None), |t| (t.counts.works, t.counts.graded(), t.dollars_per_working_result));
    let version = if trial.workbench_version.is_empty() {
        String::new()
    } else {
        format!(" {}", super::printable(&trial.workbench_version))
    };
    let cost = per_working.map_or_else(String::new, |dollars| format!(" · ${dollars:.2} per working result"));
    let (done, _) = trial.progress();
    let running =
        if done < trial.attempts.len() { format!(" ({done}/{} done)", trial.attempts.len()) } else { String::new() };
    let age = job::age(trial).map_or_else(String::new, |age| format!(" · {}", ago(age)));
    format!("trials{version}: {works}/{graded} works{cost}{running}{age}")
}

/// `just now`, `5 minutes ago`, `3 hours ago`, `2 days ago`.
pub(crate) fn ago(age: Duration) -> String {
    let seconds = age.as_secs();
    let (count, unit) = match seconds {
        0..60 => return "just now".to_owned(),
        60..3_600 => (seconds / 60, "minute"),
        3_600..86_400 => (seconds / 3_600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    format!("{count} {unit}{} ago", if count == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_age_reads_as_a_person_says_it() {
        assert_eq!(ago(Duration::from_secs(5)), "just now");
        assert_eq!(ago(Duration::from_secs(60)), "1 minute ago");
        assert_eq!(ago(Duration::from_secs(7_300)), "2 hours ago");
        assert_eq!(ago(Duration::from_secs(2 * 86_400 + 5)), "2 days ago");
    }
}
