//! Trials: a package's tasks attempted with and without it (and against another version), each attempt graded
//! by gates the agent never sees. `arms.rs` is what each arm runs (the package frozen without its tasks);
//! `attempts.rs` an attempt as a detached run and its end; `job.rs` is a trial's job directory and the state of every attempt;
//! `fixture.rs` an attempt's fresh starting repository; `gates.rs` the gates run on a result and their verdict; `grade.rs` an attempt graded on a fresh copy;
//! `schedule.rs` the scheduler that admits, follows and grades the attempts; `report.rs` what the attempts say
//! (verdicts, costs, pass@k, the paired difference between arms); `render.rs` the report as Markdown and as a
//! self-contained HTML page with a chart. The tasks themselves are `wb_manifest::trial_task`'s.

pub mod arms;
pub mod attempts;
pub mod batch;
pub mod calibrate;
pub mod fixture;
pub mod gates;
pub mod gates_runtime;
pub mod grade;
pub mod job;
pub mod render;
pub mod report;
pub mod schedule;
