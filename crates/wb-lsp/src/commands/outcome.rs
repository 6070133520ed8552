//! `wb-lsp outcome ID`: inspect a committed outcome (summary or JSON), apply it to workspaces, or export it.
//! ID is a `wbo_` outcome id or a `wb_` run id (resolved to that run's final outcome). Inspecting and
//! exporting never change a manifest or a receipt, and never run returned content.
//!
//! Test hook (hidden; `tests/apply_crash.rs`): with `WB_LSP_CRASH_AT_STEP=N` in the environment, `--apply`
//! and `--recover` send themselves SIGKILL (a real `kill -9`: no destructor, no cleanup) at their Nth
//! file-system step, counted from 0 (every lease, backup, journal, temp file, rename, removal, receipt and
//! cleanup step of `wb_outcomes::apply`), after printing `crash at step N: <step>` on stderr. A process
//! that reaches its end had fewer steps. Unset, nothing changes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{printable, printable_summary};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use wb_outcomes::{ContentStore, Entry, ListedOutcome, Outcome, OutcomeStore, Receipt, WorkspaceRef};

use crate::cli::OutcomeArgs;

pub fn run(args: &OutcomeArgs) -> anyhow::Result<ExitCode> {
    match execute(args) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => {
            eprintln!("error: {}", printable(&message));
            Ok(ExitCode::from(1))
        }
    }
}

fn execute(args: &OutcomeArgs) -> Result<String, String> {
    let store = ContentStore::open(&wb_outcomes::default_home()).map_err(|e| e.to_string())?;
    let outcomes = OutcomeStore::new(&store);
    let outcome_id = outcomes.resolve(&args.id).map_err(|e| e.to_string())?;
    if args.recover {
        let finished =
            wb_outcomes::apply::recover_with_faults(&store, &outcome_id, faults()).map_err(|e| e.to_string())?;
        return Ok(if args.json {
            format!("{}\n", json!({"outcome_id": outcome_id, "recovered": finished}))
        } else {
            format!("Recovered outcome {outcome_id}: {finished} interrupted application(s) finished or rolled back\n")
        });
    }
    if args.apply {
        let workspace = args.workspace.as_deref().map(absolute).transpose()?;
        let result = wb_outcomes::apply::apply_with_faults(&store, &outcome_id, workspace.as_deref(), faults())
            .map_err(|e| e.to_string())?;
        return Ok(if args.json {
            format!("{}\n", json!({"outcome_id": outcome_id, "applied": result.applied, "unchanged": result.unchanged}))
        } else {
            format!("Applied outcome {outcome_id}: {} applied, {} unchanged\n", result.applied, result.unchanged)
        });
    }
    if let Some(dest) = &args.export {
        let dest = wb_outcomes::export(&store, &outcome_id, dest).map_err(|e| e.to_string())?;
        return Ok(if args.json {
            format!("{}\n", json!({"outcome_id": outcome_id, "export": dest.display().to_string()}))
        } else {
            format!("Exported outcome {outcome_id} to {}\n", printable(&dest.display().to_string()))
        });
    }
    let outcome = outcomes.load(&outcome_id).map_err(|e| e.to_string())?;
    let receipt = outcomes.receipt(&outcome_id).map_err(|e| e.to_string())?;
    if args.json {
        let value = json!({"outcome": outcome, "receipt": receipt});
        return serde_json::to_string_pretty(&value).map(|text| format!("{text}\n")).map_err(|e| e.to_string());
    }
    Ok(summary(&outcome, &receipt))
}

/// The environment variable of the crash test hook.
const CRASH_AT_STEP: &str = "WB_LSP_CRASH_AT_STEP";

/// No faults, unless the crash test hook is set.
fn faults() -> wb_outcomes::apply::Faults {
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

fn absolute(path: &Path) -> Result<PathBuf, String> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir().map(|cwd| cwd.join(path)).map_err(|e| format!("the current directory is unavailable: {e}"))
}

/// `wb-lsp outcomes`: every retained outcome, newest first.
pub fn list(args: &crate::cli::OutcomesArgs) -> anyhow::Result<ExitCode> {
    let rows = wb_outcomes::list_outcomes(&wb_outcomes::default_home());
    let mut out = String::new();
    if args.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|ListedOutcome { outcome: o, application_state: state }| {
                json!({
                    "id": o.id, "run_id": o.run_id, "created_at": o.created_at, "completeness": state_name(&o.completeness),
                    "application_state": state, "changesets": o.changesets.len(), "artifacts": o.artifacts.len(), "links": o.links.len(),
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
                state_name(&o.completeness),
                printable(state),
                o.changesets.len(),
                o.artifacts.len(),
                o.links.len()
            ));
        }
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn state_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn summary(outcome: &Outcome, receipt: &Receipt) -> String {
    let mut out = format!(
        "Outcome {} (run {}, {}, {})\n",
        printable(&outcome.id),
        printable(&outcome.run_id),
        state_name(&outcome.completeness),
        state_name(&receipt.state)
    );
    if let Some(summary) = &outcome.summary {
        out.push_str(&format!("Summary: {}\n", printable_summary(summary)));
    }
    if outcome.changesets.is_empty() {
        out.push_str("Changesets: none\n");
    }
    for changeset in &outcome.changesets {
        let workspace = match &changeset.workspace {
            WorkspaceRef::Primary => "primary workspace".to_owned(),
            WorkspaceRef::Named { name } => format!("workspace {}", printable(name)),
        };
        let stats = &changeset.stats;
        out.push_str(&format!(
            "Changeset {} ({workspace}): {} added, {} modified, {} deleted\n",
            printable(&changeset.id),
            stats.additions,
            stats.modifications,
            stats.deletions
        ));
        for entry in &changeset.entries {
            let mark = match entry {
                Entry::Add { .. } => 'A',
                Entry::Modify { .. } => 'M',
                Entry::Delete { .. } => 'D',
            };
            out.push_str(&format!("  {mark} {}\n", printable(entry.path())));
        }
    }
    out.push_str(&format!("Artifacts: {}\n", outcome.artifacts.len()));
    for artifact in &outcome.artifacts {
        let path = artifact.path.as_deref().map(|p| format!(" ({})", printable(p))).unwrap_or_default();
        out.push_str(&format!(
            "  {}{path}: {}, {} bytes\n",
            printable(&artifact.name),
            printable(&artifact.content.media_type),
            artifact.content.size_bytes
        ));
    }
    out.push_str(&format!("Links: {}\n", outcome.links.len()));
    for link in &outcome.links {
        let kind = link.kind.as_deref().map(|k| format!(" [{}]", printable(k))).unwrap_or_default();
        out.push_str(&format!("  {}{kind}: {}\n", printable(&link.label), printable(&link.uri)));
    }
    for warning in &outcome.warnings {
        out.push_str(&format!("warning: {} ({})\n", printable(&warning.message), printable(&warning.code)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{printable, printable_summary};

    #[test]
    fn runner_text_cannot_reach_the_terminal_raw() {
        assert_eq!(printable("notes/a b\\c.txt"), "notes/a b\\c.txt");
        assert_eq!(printable("x\u{1b}[31mred\u{7}\r\u{9b}2J"), "x\\u{1b}[31mred\\u{7}\\r\\u{9b}2J");
        assert_eq!(printable("a\nb\tc\u{202e}d"), "a\\nb\\tc\\u{202e}d");
        assert_eq!(
            printable_summary("Done.\n\tOK\r\nApplied \u{1b}]0;t\u{7}"),
            "Done.\n  \tOK\n  Applied \\u{1b}]0;t\\u{7}"
        );
    }
}
