//! `dry_run`, `smoke` and `outcome`: the engine's and the outcome store's own entry points, as
//! `wb-lsp dry-run --json`, `smoke --json` and `outcome ID --json` call them. Relative paths resolve against the
//! root (every path already confined beneath it: `confine.rs`); the environment is the server's own (names reach
//! the results, values never do: the engine redacts). What only the person grants is never granted here: no host
//! Docker engine, no values, and no sandbox on a paid service unless the server was started to allow it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wb_engine::{Context, EngineError, Options, Request, Settings};
use wb_manifest::OsFileSystem;

use super::call::{Call, RunArgs, ToolResult};
use super::confine;
use crate::output;

/// The task of a dry run that was given none: the translation is the point, not the task.
const PLACEHOLDER_TASK: &str = "(dry run: no task given)";

fn options(call: &Call<'_>, args: RunArgs) -> Options {
    let settings = Settings {
        source: args.source,
        cwd: call.root.to_path_buf(),
        primary: args.dir.map(PathBuf::from),
        runtime: args.runtime,
        workspaces: args.workspaces.into_iter().map(|(name, path)| format!("{name}={path}")).collect(),
        env_files: args.env_files.into_iter().map(PathBuf::from).collect(),
        // The caller is the agent: the host engine is the person's to grant, on the command line only.
        allow_host_docker: false,
        allow_unchecked_gpu: args.allow_unchecked_gpu,
        home: None,
        bare: false,
    };
    let context = Context {
        inherited: wb_engine::bindings::process_environment(),
        progress: call.progress.clone(),
        cancel: Some(std::sync::Arc::clone(&call.cancel)),
        ..Context::default()
    };
    // No `--env` values: the tools take none.
    Options { request: Request { settings, env: Vec::new(), task: args.task }, context }
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
    match wb_engine::dry_run(&OsFileSystem, &options, None, call.catalog) {
        Ok(report) => match serde_json::to_value(&report) {
            Ok(value) => ToolResult::ok(value),
            Err(error) => ToolResult::failure(&format!("cannot encode the dry run: {error}"), json!({})),
        },
        Err(error) => failure(call, &error),
    }
}

pub fn smoke(call: &Call<'_>, args: RunArgs) -> ToolResult {
    let options = options(call, args);
    if !call.remote_sandboxes
        && let Some(service) = remote_runtime(call, &options)
    {
        return ToolResult::failure(
            &format!(
                "Refused: a smoke check on {service} creates a sandbox on a paid service; the person must start the \
                 server with --allow-remote-sandboxes to allow it"
            ),
            json!({"runtime": service}),
        );
    }
    match wb_engine::smoke(&OsFileSystem, &options, call.catalog) {
        Ok(reports) => match serde_json::to_value(&reports) {
            Ok(reports) => ToolResult::ok(json!({"reports": reports})),
            Err(error) => ToolResult::failure(&format!("cannot encode the smoke reports: {error}"), json!({})),
        },
        Err(error) => failure(call, &error),
    }
}

/// The remote service one of the packages `options` names would run on (`--runtime`, else its first declared
/// runtime), if any. A source that does not resolve is left to the smoke check to report.
fn remote_runtime(call: &Call<'_>, options: &Options) -> Option<&'static str> {
    let settings = &options.request.settings;
    let packages =
        wb_engine::source::resolve(&OsFileSystem, &settings.source, &settings.cwd, call.catalog, false).ok()?;
    let services = wb_engine::runtime::services();
    packages.iter().flatten().find_map(|package| {
        let mut declared = package.manifest.runtimes.iter().map(|r| r.provider.value.as_str());
        // A runtime the package does not declare is the engine's to refuse.
        let runtime = match settings.runtime.as_deref() {
            Some(requested) => declared.find(|name| *name == requested)?,
            None => declared.next()?,
        };
        services.iter().map(|service| service.name()).find(|name| *name == runtime)
    })
}

/// `outcome`: the outcome, its receipt and what a partial apply took, when its run worked beneath the root.
/// Nothing is applied, exported or recovered.
pub fn outcome(root: &Path, id: &str) -> ToolResult {
    match read_outcome(root, id) {
        Ok(value) => ToolResult::ok(value),
        Err(Shown::Refused(reason)) => confine::outcome_refused(id, &reason),
        Err(Shown::Failed(message)) => ToolResult::failure(&message, json!({"id": id})),
    }
}

enum Shown {
    Refused(String),
    Failed(String),
}

impl From<String> for Shown {
    fn from(message: String) -> Shown {
        Shown::Failed(message)
    }
}

fn read_outcome(root: &Path, id: &str) -> Result<Value, Shown> {
    // Without a home there is no store: the error says what to set (never a shared fallback).
    let home = wb_outcomes::try_default_home().map_err(|error| error.to_string())?;
    let store = wb_outcomes::ContentStore::open(&home).map_err(|error| error.to_string())?;
    let outcomes = wb_outcomes::OutcomeStore::new(&store);
    let outcome_id = outcomes.resolve(id).map_err(|error| error.to_string())?;
    let bindings = outcomes.bindings(&outcome_id).map_err(|error| error.to_string())?;
    confine::outcome_visible(root, &bindings).map_err(|refused| Shown::Refused(refused.to_string()))?;
    let outcome = outcomes.load(&outcome_id).map_err(|error| error.to_string())?;
    let receipt = outcomes.receipt(&outcome_id).map_err(|error| error.to_string())?;
    let taken = wb_outcomes::apply::taken(&store, &outcome_id).map_err(|error| error.to_string())?;
    Ok(json!({"outcome": outcome, "receipt": receipt, "taken": taken}))
}
