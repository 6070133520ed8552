//! `wb-lsp outcome ID`: inspect a committed outcome (summary or JSON), apply it to workspaces, or export it.
//! ID is a `wbo_` outcome id or a `wb_` run id (resolved to that run's final outcome). Inspecting and
//! exporting never change a manifest or a receipt, and never run returned content.
//!
//! Test hook, only in a build with the `test-hooks` feature (the tests' build; `tests/apply_crash.rs`): with
//! `WB_LSP_CRASH_AT_STEP=N` in the environment, `--apply` and `--recover` send themselves SIGKILL (a real
//! `kill -9`: no destructor, no cleanup) at their Nth file-system step, counted from 0 (every lease, backup,
//! journal, temp file, rename, removal, receipt and cleanup step of `wb_outcomes::apply`), after printing
//! `crash at step N: <step>` on stderr. A process that reaches its end had fewer steps. Unset, nothing
//! changes; a normal build has no such hook and never reads the variable.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::printable;
use crate::exit::Exit;
use crate::render;
use crate::render::outcome::{applied_counts, wire_name};

use serde_json::json;
use wb_outcomes::{ContentStore, ListedOutcome, Outcome, OutcomeStore, Receipt};

use crate::cli::OutcomeArgs;

/// Exit 0 when done; 1 when the outcome refuses (not found, a conflict, busy, already present, an unsafe
/// destination); 2 when the file system failed (the convention of every command: an I/O failure is exit 2).
pub fn run(args: &OutcomeArgs) -> anyhow::Result<Exit> {
    if let Some(only) = &args.diff {
        let diff = ContentStore::open(&wb_outcomes::default_home()).and_then(|store| {
            let outcomes = OutcomeStore::new(&store);
            let outcome = outcomes.load(&outcomes.resolve(&args.id)?)?;
            super::diff::text(&store, &outcome, only)
        });
        return match diff {
            Ok(text) => {
                let text = if super::diff::colour(args.color) { super::diff::coloured(&text) } else { text };
                super::diff::page(&text)?;
                Ok(Exit::Success)
            }
            Err(error) => {
                eprintln!("error: {}", printable(&error.to_string()));
                Ok(if matches!(error, wb_outcomes::Error::Io { .. }) { Exit::Usage } else { Exit::Failure })
            }
        };
    }
    if let Some(result) = sandbox_recovery(args) {
        return match result {
            Ok(text) => {
                std::io::stdout().lock().write_all(text.as_bytes())?;
                Ok(Exit::Success)
            }
            Err(error) => {
                eprintln!("error: {}", printable(&error.to_string()));
                Ok(if error.is_file_system() { Exit::Usage } else { Exit::Failure })
            }
        };
    }
    match execute(args) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            Ok(Exit::Success)
        }
        Err(error) => {
            eprintln!("error: {}", printable(&error.to_string()));
            Ok(if matches!(error, wb_outcomes::Error::Io { .. }) { Exit::Usage } else { Exit::Failure })
        }
    }
}

/// `--recover` and `--discard-recovery` for a run whose sandbox was kept after a failed collection (its
/// checkpoint exists); `None` when the id names no such run (`--recover` then finishes interrupted applications).
fn sandbox_recovery(args: &OutcomeArgs) -> Option<wb_engine::Result<String>> {
    use wb_engine::runtime::remote::recovery;
    if !(args.recover || args.discard_recovery) {
        return None;
    }
    if !args.id.starts_with("wb_") {
        let refused = format!("--discard-recovery takes the id of a run (wb_…), not {}", args.id);
        return args.discard_recovery.then(|| Err(wb_engine::EngineError::message(refused)));
    }
    let home = wb_outcomes::default_home();
    match recovery::load(&home, &args.id) {
        Ok(Some(_)) => {}
        Ok(None) if args.discard_recovery => {
            return Some(Err(wb_engine::EngineError::message(format!("Run {} has no recovery checkpoint", args.id))));
        }
        Ok(None) => return None,
        Err(error) => return Some(Err(error)),
    }
    let inherited = wb_engine::bindings::process_environment();
    if args.discard_recovery {
        return Some(recovery::discard(&home, &inherited, &args.id).map(|kept| {
            if args.json {
                format!("{}\n", json!({"run_id": kept.run_id, "discarded": kept.sandbox_id}))
            } else {
                format!(
                    "Deleted {} sandbox {} of run {} and its recovery checkpoint\n",
                    kept.service,
                    printable(&kept.sandbox_id),
                    kept.run_id
                )
            }
        }));
    }
    Some(recovery::recover(&home, &inherited, &args.id).map(|recovered| {
        let mut text = if args.json {
            format!(
                "{}\n",
                json!({"run_id": args.id, "sandbox_id": recovered.sandbox_id, "outcome_id": recovered.outcome.id,
                       "application_state": recovered.receipt.state, "warnings": recovered.warnings})
            )
        } else {
            let mut text = format!(
                "Recovered run {} from sandbox {}: partial outcome {}\n",
                args.id,
                printable(&recovered.sandbox_id),
                recovered.outcome.id
            );
            text.push_str(&summary(&recovered.outcome, &recovered.receipt, &Default::default()));
            text
        };
        if !args.json {
            for warning in &recovered.warnings {
                text.push_str(&format!("warning: {}\n", printable(warning)));
            }
        }
        text
    }))
}

fn execute(args: &OutcomeArgs) -> Result<String, wb_outcomes::Error> {
    let store = ContentStore::open(&wb_outcomes::default_home())?;
    let outcomes = OutcomeStore::new(&store);
    let outcome_id = outcomes.resolve(&args.id)?;
    if args.recover {
        let finished = wb_outcomes::apply::recover_with_faults(&store, &outcome_id, faults())?;
        return Ok(if args.json {
            format!("{}\n", json!({"outcome_id": outcome_id, "recovered": finished}))
        } else {
            format!("Recovered outcome {outcome_id}: {finished} interrupted application(s) finished or rolled back\n")
        });
    }
    if args.apply {
        let workspace = args.workspace.as_deref().map(absolute).transpose()?;
        let result = if args.only.is_empty() {
            wb_outcomes::apply::apply_with_faults(&store, &outcome_id, workspace.as_deref(), faults())?
        } else {
            wb_outcomes::apply::apply_only_with_faults(&store, &outcome_id, workspace.as_deref(), &args.only, faults())?
        };
        let state = outcomes.receipt(&outcome_id)?.state;
        return Ok(if args.json {
            let value = json!({"outcome_id": outcome_id, "applied": result.applied, "unchanged": result.unchanged,
                "application_state": state});
            format!("{value}\n")
        } else if args.only.is_empty() {
            format!("Applied outcome {outcome_id}: {}\n", applied_counts(result.applied, result.unchanged))
        } else {
            format!(
                "Applied {} of outcome {outcome_id}: {} (the outcome is {})\n",
                args.only.iter().map(|p| printable(p)).collect::<Vec<_>>().join(", "),
                applied_counts(result.applied, result.unchanged),
                wire_name(&state)
            )
        });
    }
    if let Some(dest) = &args.export {
        let dest = wb_outcomes::export(&store, &outcome_id, dest)?;
        return Ok(if args.json {
            format!("{}\n", json!({"outcome_id": outcome_id, "export": dest.display().to_string()}))
        } else {
            format!("Exported outcome {outcome_id} to {}\n", printable(&dest.display().to_string()))
        });
    }
    let outcome = outcomes.load(&outcome_id)?;
    let receipt = outcomes.receipt(&outcome_id)?;
    let taken = wb_outcomes::apply::taken(&store, &outcome_id)?;
    if args.json {
        let value = json!({"outcome": outcome, "receipt": receipt, "taken": taken});
        return Ok(format!("{value:#}\n"));
    }
    Ok(summary(&outcome, &receipt, &taken))
}

/// No faults: an apply as it ships. A build with the `test-hooks` feature adds the crash test hook.
fn faults() -> wb_outcomes::apply::Faults {
    #[cfg(feature = "test-hooks")]
    return crash_hook::faults();
    #[cfg(not(feature = "test-hooks"))]
    wb_outcomes::apply::Faults::default()
}

/// The crash test hook (`WB_LSP_CRASH_AT_STEP`), compiled only into the tests' build.
#[cfg(feature = "test-hooks")]
mod crash_hook {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The environment variable of the crash test hook.
    const CRASH_AT_STEP: &str = "WB_LSP_CRASH_AT_STEP";

    /// No faults, unless the crash test hook is set.
    pub(super) fn faults() -> wb_outcomes::apply::Faults {
        let mut faults = wb_outcomes::apply::Faults::default();
        if crash_step().is_some() {
            faults.step = Some(step);
        }
        faults
    }

    fn crash_step() -> Option<usize> {
        static STEP: OnceLock<Option<usize>> = OnceLock::new();
        *STEP.get_or_init(|| std::env::var(CRASH_AT_STEP).ok().and_then(|v| v.trim().parse().ok()))
    }

    fn step(name: &str) {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let index = COUNT.fetch_add(1, Ordering::SeqCst);
        if crash_step() == Some(index) {
            eprintln!("crash at step {index}: {name}");
            let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
            // Not reached; if the kill failed, still stop without any cleanup (the test sees SIGABRT).
            std::process::abort();
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf, wb_outcomes::Error> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|cause| wb_outcomes::Error::Io { context: "the current directory is unavailable".to_owned(), cause })
}

/// `wb-lsp outcomes`: every retained outcome, newest first.
pub fn list(args: &crate::cli::OutcomesArgs) -> anyhow::Result<Exit> {
    let rows = wb_outcomes::list_outcomes(&wb_outcomes::default_home());
    let mut out = String::new();
    if args.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|ListedOutcome { outcome: o, application_state: state }| {
                json!({
                    "id": o.id, "run_id": o.run_id, "created_at": o.created_at, "completeness": wire_name(&o.completeness),
                    "application_state": state, "changesets": o.changesets.len(), "artifacts": o.artifacts.len(), "links": o.links.len(),
                    "turn_index": o.turn_index,
                })
            })
            .collect();
        out.push_str(&format!("{}\n", serde_json::Value::Array(list)));
    } else if rows.is_empty() {
        out.push_str("No outcomes\n");
    } else {
        for ListedOutcome { outcome: o, application_state: state } in &rows {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{} changeset(s), {} artifact(s), {} link(s)\n",
                printable(&o.id),
                printable(&o.run_id),
                printable(&o.created_at),
                wire_name(&o.completeness),
                printable(state),
                o.changesets.len(),
                o.artifacts.len(),
                o.links.len()
            ));
        }
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(Exit::Success)
}

/// The summary of `wb-lsp outcome ID`: the lines `workbench.outcome` answers too.
fn summary(outcome: &Outcome, receipt: &Receipt, taken: &std::collections::BTreeSet<String>) -> String {
    let mut out = String::new();
    for line in render::outcome::summary_lines(outcome, receipt, taken) {
        out.push_str(&line.text);
        out.push('\n');
    }
    out
}
