//! `dry_run`, `smoke` and `outcome`: the engine's and the outcome store's own entry points, as
//! `wb-lsp dry-run --json`, `smoke --json` and `outcome ID --json` call them. Relative paths resolve against the
//! root; the environment is the server's own (names reach the results, values never do: the engine redacts).

use std::path::PathBuf;

use serde_json::{Value, json};
use wb_engine::{EngineError, Options};
use wb_manifest::OsFileSystem;

use super::tools::{Call, RunArgs, ToolResult};
use crate::output;

/// The task of a dry run that was given none: the translation is the point, not the task.
const PLACEHOLDER_TASK: &str = "(dry run: no task given)";

fn options(call: &Call<'_>, args: RunArgs) -> Options {
    Options {
        source: args.source,
        cwd: call.root.to_path_buf(),
        primary: args.dir.map(PathBuf::from),
        runtime: args.runtime,
        workspaces: args.workspaces.into_iter().map(|(name, path)| format!("{name}={path}")).collect(),
        env_files: args.env_files.into_iter().map(PathBuf::from).collect(),
        allow_host_docker: args.allow_host_docker,
        allow_unchecked_gpu: args.allow_unchecked_gpu,
        task: args.task,
        inherited: wb_engine::bindings::process_environment(),
        progress: call.progress.clone(),
        cancel: Some(std::sync::Arc::clone(&call.cancel)),
        ..Options::default()
    }
}

/// An engine error as a failed result: an invalid package names where its first error is.
fn failure(call: &Call<'_>, error: &EngineError) -> ToolResult {
    match error {
        EngineError::Invalid { message, path, line, column } => ToolResult::failure(
            message,
            json!({"path": output::relative(path, call.root), "line": line, "column": column,
                   "hint": "the check tool lists every problem of the package"}),
        ),
        other => ToolResult::failure(&other.to_string(), json!({})),
    }
}

pub fn dry_run(call: &Call<'_>, mut args: RunArgs) -> ToolResult {
    args.task = args.task.filter(|task| !task.trim().is_empty()).or_else(|| Some(PLACEHOLDER_TASK.to_owned()));
    let options = options(call, args);
    match wb_engine::dry_run(&OsFileSystem, &options, call.catalog) {
        Ok(report) => match serde_json::to_value(&report) {
            Ok(value) => ToolResult::ok(value),
            Err(error) => ToolResult::failure(&format!("cannot encode the dry run: {error}"), json!({})),
        },
        Err(error) => failure(call, &error),
    }
}

pub fn smoke(call: &Call<'_>, args: RunArgs) -> ToolResult {
    let options = options(call, args);
    match wb_engine::smoke(&OsFileSystem, &options, call.catalog) {
        Ok(reports) => match serde_json::to_value(&reports) {
            Ok(reports) => ToolResult::ok(json!({"reports": reports})),
            Err(error) => ToolResult::failure(&format!("cannot encode the smoke reports: {error}"), json!({})),
        },
        Err(error) => failure(call, &error),
    }
}

/// `outcome`: the outcome, its receipt and what a partial apply took. Nothing is applied, exported or
/// recovered.
pub fn outcome(id: &str) -> ToolResult {
    match read_outcome(id) {
        Ok(value) => ToolResult::ok(value),
        Err(message) => ToolResult::failure(&message, json!({"id": id})),
    }
}

fn read_outcome(id: &str) -> Result<Value, String> {
    // Without a home there is no store: the error says what to set (never a shared fallback).
    let home = wb_outcomes::try_default_home().map_err(|error| error.to_string())?;
    let store = wb_outcomes::ContentStore::open(&home).map_err(|error| error.to_string())?;
    let outcomes = wb_outcomes::OutcomeStore::new(&store);
    let outcome_id = outcomes.resolve(id).map_err(|error| error.to_string())?;
    let outcome = outcomes.load(&outcome_id).map_err(|error| error.to_string())?;
    let receipt = outcomes.receipt(&outcome_id).map_err(|error| error.to_string())?;
    let taken = wb_outcomes::apply::taken(&store, &outcome_id).map_err(|error| error.to_string())?;
    Ok(json!({"outcome": outcome, "receipt": receipt, "taken": taken}))
}
