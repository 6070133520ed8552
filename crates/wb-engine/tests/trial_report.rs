//! A trial's `report.json` validates against its documented schema (`schemas/trial-report.schema.json`), with
//! the nulls an unknown cost gives, an infrastructure error, pending attempts and a suspect gate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use wb_engine::trials::job::{Attempt, AttemptKey, AttemptState, GateResult, Job, Verdict};
use wb_engine::trials::report::report;

fn schema() -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/trial-report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn attempt(task: &str, arm: &str, rep: u32, verdict: Option<Verdict>, cost: Option<f64>) -> Attempt {
    let mut attempt = Attempt::pending(AttemptKey { task: task.into(), arm: arm.into(), rep });
    if let Some(verdict) = verdict {
        attempt.state = AttemptState::Done;
        attempt.verdict = Some(verdict);
        attempt.run_id = Some(format!("wb_{task}{arm}{rep}"));
        attempt.duration_ms = Some(1200);
        attempt.tokens = Some(4000);
        attempt.gates.push(GateResult {
            id: "tests".into(),
            exit_code: Some(i32::from(verdict != Verdict::Works)),
            duration_ms: 30,
            timed_out: false,
            log: "ran".into(),
        });
    }
    attempt.cost_usd = cost;
    attempt
}

#[test]
fn a_report_validates_against_its_schema() {
    let tasks = ["a".to_owned(), "b".to_owned()];
    let arms = ["workbench".to_owned(), "plain".to_owned()];
    let mut job = Job::new(
        "wbt_1f".into(),
        "/r/.workbenches/p/workbench.yml".into(),
        "p".into(),
        &tasks,
        &arms,
        2,
        "local".into(),
    );
    job.attempts = vec![
        attempt("a", "workbench", 1, Some(Verdict::Works), Some(0.2)),
        attempt("a", "workbench", 2, Some(Verdict::InfraError), None),
        attempt("a", "plain", 1, Some(Verdict::Failed), None),
        attempt("a", "plain", 2, Some(Verdict::Inconclusive), Some(0.4)),
        attempt("b", "workbench", 1, Some(Verdict::Failed), Some(0.1)),
        attempt("b", "plain", 1, None, None),
    ];
    let value = serde_json::to_value(report(&[job])).unwrap();
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{value:#}");
    // The schema is strict: an unknown field is refused.
    let mut extra = value.clone();
    extra["cells"][0]["bonus"] = serde_json::json!(1);
    assert!(!validator.is_valid(&extra));
}
