//! `wb-lsp clean`: previews (or with `--apply` removes) the old runs, outcomes and unreferenced content of
//! WORKBENCH_HOME, as the reference's `wb clean` does; an outcome with an interrupted application is kept. Also
//! what processes that died left behind, whatever its age: the Docker containers they created and their stage
//! directories (`wb_engine::leftovers`).

use std::io::Write;

use serde_json::json;
use wb_outcomes::retention::{Cleaning, clean, human_size as size, preview};

use super::printable;
use crate::cli::CleanArgs;
use crate::exit::Exit;

pub fn run(args: &CleanArgs) -> anyhow::Result<Exit> {
    let older_than = match older_than(&args.older_than) {
        Ok(age) => age,
        Err(message) => {
            eprintln!("error: {}", printable(&message.to_string()));
            return Ok(Exit::Usage);
        }
    };
    let home = wb_outcomes::default_home();
    // A run whose owner lives is never removed, however long it has been quiet; nor one whose sandbox is kept for
    // a recovery (listed below, never dropped: it goes with `outcome RUN --recover` or `--discard-recovery`).
    let (checkpoints, unreadable) = wb_engine::runtime::remote::recovery::list(&home);
    let active = wb_engine::runs::list(&home)
        .into_iter()
        .filter(|record| record.state().is_live())
        .map(|record| record.run_id)
        .chain(checkpoints.iter().map(|checkpoint| checkpoint.run_id.clone()))
        .collect();
    let cleaning = if args.apply {
        match clean(&home, older_than, &active) {
            Ok(cleaning) => cleaning,
            Err(error) => {
                eprintln!("error: {}", printable(&error.to_string()));
                return Ok(Exit::Failure);
            }
        }
    } else {
        preview(&home, older_than, &active)
    };
    // Sandboxes of this home's remote runs that no longer run (a killed supervisor leaves them to the lease),
    // on the services whose credentials are set.
    let inherited = wb_engine::bindings::process_environment();
    let orphans = wb_engine::runtime::remote::orphans::orphans(&home, &inherited, args.apply);
    for problem in &orphans.problems {
        eprintln!("warning: cannot look for sandboxes left by old runs: {}", printable(problem));
    }
    // Containers and stage directories whose creator has ended (a supervisor killed before its cleanup).
    let containers = wb_engine::runtime::docker::remove_leftovers(None, !args.apply).unwrap_or_else(|problem| {
        eprintln!("warning: cannot look for containers left by old runs: {}", printable(&problem.to_string()));
        Vec::new()
    });
    let stages = wb_engine::lifecycle::stage_leftovers(None, !args.apply);
    for problem in &unreadable {
        eprintln!("warning: a recovery checkpoint cannot be read (kept): {}", printable(problem));
    }
    let text = if args.json {
        let mut value = serde_json::to_value(&cleaning)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("older_than".into(), json!(args.older_than));
            object.insert("applied".into(), json!(args.apply));
            object.insert("bytes".into(), json!(cleaning.bytes()));
            object.insert("sandboxes".into(), serde_json::to_value(&orphans.sandboxes)?);
            object.insert("recoveries".into(), serde_json::to_value(&checkpoints)?);
            object.insert("containers".into(), json!(containers));
            object.insert("stage_directories".into(), json!(stages));
        }
        format!("{value}\n")
    } else {
        let mut text = String::new();
        for orphan in &orphans.sandboxes {
            text.push_str(&format!(
                "{} {} sandbox {} of run {} ({})\n",
                if args.apply { "Destroyed" } else { "Would destroy" },
                orphan.service,
                printable(&orphan.sandbox),
                orphan.run_id,
                orphan.run_state
            ));
        }
        let verb = if args.apply { "Removed" } else { "Would remove" };
        for container in &containers {
            text.push_str(&format!("{verb} container {} (the process that made it has ended)\n", printable(container)));
        }
        for stage in &stages {
            text.push_str(&format!(
                "{verb} stage directory {} (the process that made it has ended)\n",
                printable(&stage.display().to_string())
            ));
        }
        for checkpoint in &checkpoints {
            text.push_str(&format!(
                "Kept for recovery: {} sandbox {} of run {} ({}, {}): wb-lsp outcome {} --recover or --discard-recovery\n",
                checkpoint.service,
                printable(&checkpoint.sandbox_id),
                checkpoint.run_id,
                if checkpoint.paused { "paused" } else { "running until its lease ends" },
                printable(&checkpoint.created_at),
                checkpoint.run_id
            ));
        }
        text.push_str(&human(&cleaning, &args.older_than, args.apply));
        text
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Exit::Success)
}

/// `--older-than` in the one duration grammar (`wb_engine::duration`), except a bare number: `clean` removes
/// things, and `30` is as likely meant as days as seconds.
fn older_than(text: &str) -> Result<std::time::Duration, wb_engine::duration::InvalidValue> {
    let name = "--older-than";
    let trimmed = text.trim();
    if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        let why = format!(
            "a bare number is ambiguous for what clean removes; write {trimmed}d for days or {trimmed}s for seconds"
        );
        return Err(wb_engine::duration::invalid(name, text, &why));
    }
    wb_engine::duration::parse_for(name, text)
}

fn human(cleaning: &Cleaning, older_than: &str, applied: bool) -> String {
    let mut out = String::new();
    let nothing = cleaning.runs.is_empty() && cleaning.outcomes.is_empty() && cleaning.blobs.count == 0;
    if nothing {
        out.push_str(&format!("Nothing older than {} to remove\n", printable(older_than)));
    } else {
        out.push_str(if applied { "Removed:\n" } else { "Would remove:\n" });
        for run in &cleaning.runs {
            out.push_str(&format!(
                "  run\t{}\tmodified {}\t{}\n",
                printable(&run.id),
                run.modified_at,
                size(run.bytes)
            ));
        }
        for outcome in &cleaning.outcomes {
            out.push_str(&format!(
                "  outcome\t{}\tcreated {}\t{}\t{}\n",
                printable(&outcome.id),
                printable(&outcome.created_at),
                printable(&outcome.application_state),
                size(outcome.bytes)
            ));
        }
        if cleaning.blobs.count > 0 {
            out.push_str(&format!(
                "  content\t{} unreferenced blob(s)\t{}\n",
                cleaning.blobs.count,
                size(cleaning.blobs.bytes)
            ));
        }
    }
    for kept in &cleaning.kept {
        out.push_str(&format!("Kept {}: {}\n", printable(&kept.id), kept.reason));
    }
    let counts = format!(
        "{} run(s), {} outcome(s) and {} blob(s) ({})",
        cleaning.runs.len(),
        cleaning.outcomes.len(),
        cleaning.blobs.count,
        size(cleaning.bytes())
    );
    if applied {
        out.push_str(&format!("Removed {counts}\n"));
    } else if !nothing {
        out.push_str(&format!("Run wb-lsp clean --apply to remove {counts}\n"));
    }
    out
}
