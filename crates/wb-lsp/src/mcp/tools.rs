//! The tools: each one's name, description and input schema (what `tools/list` answers, each derived by
//! `schemars` from its argument struct in `call.rs`), and each call checked against its schema and dispatched.

use std::path::Path;

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::call::{Call, CheckArgs, FixArgs, OutcomeArgs, RunArgs, ToolResult};
use super::confine;

/// Why a call is refused before its tool runs (a JSON-RPC invalid-params error).
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    #[error("Unknown tool: {0} (the tools are check, fix, dry_run, smoke and outcome)")]
    UnknownTool(String),
    /// Arguments the tool's schema does not accept: the tool, and why.
    #[error("Invalid arguments for {tool}: {why}")]
    Arguments { tool: String, why: String },
}

fn invalid(tool: &str, why: String) -> Rejected {
    Rejected::Arguments { tool: tool.to_owned(), why }
}

/// Runs the tool `name`; `Err` (a JSON-RPC invalid-params error) for an unknown tool or arguments its schema
/// does not accept.
pub fn call(context: &Call<'_>, name: &str, arguments: Value) -> Result<ToolResult, Rejected> {
    match name {
        "check" | "fix" => {
            let path = if name == "check" {
                parse::<CheckArgs>(name, arguments)?.path
            } else {
                parse::<FixArgs>(name, arguments)?.path
            };
            non_empty(name, "path", &path)?;
            let path = match confine::source(context.root, "path", &path) {
                Ok(path) => path,
                Err(refusal) => return Ok(refusal.into_result(context.root)),
            };
            Ok(if name == "check" { super::check::check(context, &path) } else { super::check::fix(context, &path) })
        }
        "dry_run" => {
            let args = run_args(name, parse(name, arguments)?)?;
            Ok(match confined(context.root, args) {
                Ok(args) => super::engine::dry_run(context, args),
                Err(refusal) => refusal.into_result(context.root),
            })
        }
        "smoke" => {
            let args: RunArgs = parse(name, arguments)?;
            // A smoke check sends no task: its schema has none.
            if args.task.is_some() {
                return Err(invalid(name, "unknown field `task`".to_owned()));
            }
            Ok(match confined(context.root, run_args(name, args)?) {
                Ok(args) => super::engine::smoke(context, args),
                Err(refusal) => refusal.into_result(context.root),
            })
        }
        "outcome" => {
            let id = parse::<OutcomeArgs>(name, arguments)?.id;
            non_empty(name, "id", &id)?;
            Ok(super::engine::outcome(context.root, &id))
        }
        _ => Err(Rejected::UnknownTool(name.to_owned())),
    }
}

/// Every path argument resolved beneath the root, or the first that is not.
fn confined(root: &Path, mut args: RunArgs) -> Result<RunArgs, confine::Refusal> {
    args.source = confine::source(root, "source", &args.source)?;
    if let Some(dir) = &mut args.dir {
        *dir = confine::path(root, "dir", dir)?;
    }
    confine::each(root, "workspaces", args.workspaces.values_mut())?;
    confine::each(root, "env_files", args.env_files.iter_mut())?;
    Ok(args)
}

/// The strings the schema gives `minLength: 1` are not empty, and workspace names match its `propertyNames`.
fn run_args(tool: &str, args: RunArgs) -> Result<RunArgs, Rejected> {
    non_empty(tool, "source", &args.source)?;
    for (field, value) in [("runtime", &args.runtime), ("dir", &args.dir), ("task", &args.task)] {
        if let Some(value) = value {
            non_empty(tool, field, value)?;
        }
    }
    for (name, path) in &args.workspaces {
        non_empty(tool, "workspaces", path)?;
        if name.is_empty() || name.contains('=') {
            return Err(invalid(tool, "a workspace name must be non-empty, without `=`".to_owned()));
        }
    }
    for file in &args.env_files {
        non_empty(tool, "env_files", file)?;
    }
    Ok(args)
}

fn non_empty(tool: &str, field: &str, value: &str) -> Result<(), Rejected> {
    if value.is_empty() {
        return Err(invalid(tool, format!("`{field}` must not be empty")));
    }
    Ok(())
}

fn parse<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, Rejected> {
    if !arguments.is_object() {
        return Err(invalid(tool, format!("expected an object, got {arguments}")));
    }
    serde_json::from_value(arguments).map_err(|error| invalid(tool, error.to_string()))
}

/// A tool's input schema, derived from its arguments' type: no `$schema`, and neither the type's name nor its
/// doc comment (the tool's own title and description say what it is), only what a client checks arguments by.
fn input_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .with_transform(RecursiveTransform(for_clients))
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    schema.remove("title");
    schema.remove("description");
    schema.to_value()
}

/// One subschema as clients read it: a doc comment's lines joined into one description (a blank line still
/// starts a paragraph), and an optional field typed as what to send when it is sent (`"string"`, not
/// `["string", "null"]`, and no `"default": null`: the agent leaves the field out instead).
fn for_clients(schema: &mut Schema) {
    if let Some(Value::String(description)) = schema.get_mut("description") {
        *description =
            description.split("\n\n").map(|paragraph| paragraph.replace('\n', " ")).collect::<Vec<_>>().join("\n\n");
    }
    if let Some(Value::Array(types)) = schema.get_mut("type")
        && types.iter().any(|kind| kind == "null")
    {
        types.retain(|kind| kind != "null");
        if let [kind] = types.as_slice() {
            let kind = kind.clone();
            schema.insert("type".to_owned(), kind);
        }
        if schema.get("default").is_some_and(Value::is_null) {
            schema.remove("default");
        }
    }
}

/// What `tools/list` answers.
pub fn list() -> Vec<Value> {
    // A smoke check sends no task: `smoke` takes `dry_run`'s arguments but that one.
    let mut smoke = input_schema::<RunArgs>();
    if let Some(Value::Object(properties)) = smoke.get_mut("properties") {
        properties.retain(|name, _| name != "task");
    }
    vec![
        json!({
            "name": "check",
            "title": "Check Workbench packages",
            "description": "Check Workbench packages as `wb-lsp check` does and return every problem at once. Each \
                diagnostic has `code` (stable, kebab-case; documented in docs/diagnostics.md), `severity` (error or \
                warning), `message`, `path` (relative to `root`), `range` ({start, end} of 1-based `line` and \
                `column`, in characters; end exclusive) and `fixes` ({title, safe, creates, edits: [{path, range, \
                newText}]}). Call it after each edit of a manifest, its instructions, skills or runner_config; \
                `summary.errors` is 0 when the packages are valid.",
            "inputSchema": input_schema::<CheckArgs>(),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        }),
        json!({
            "name": "fix",
            "title": "Apply the safe fixes",
            "description": "Apply every safe fix (`safe: true` in check's fixes: a misspelt runner or key, an \
                undeclared ${NAME}, a spec 0 migration) to the manifests under `path`, as `wb-lsp check --fix` does, \
                then check again. Returns `changed` (each file written, with the fixes applied) and `remaining` \
                (check's result after the fixes). Writes only files whose real path is inside the server's root; \
                if any would be outside, nothing is written and the result is an error.",
            "inputSchema": input_schema::<FixArgs>(),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        }),
        json!({
            "name": "dry_run",
            "title": "Dry run a package",
            "description": "Resolve, preflight and translate one package without launching its runner, as \
                `wb-lsp dry-run --json` does: the runner's command, model route, authentication, skills, workspaces, \
                environment variable names (never values), MCP servers, the runner-native configuration, warnings \
                and `problems` (what would stop a run here; empty when it could launch). A package with errors is \
                an error result naming the first one. On the docker runtime this builds the package's image; on \
                e2b and daytona it creates nothing. Paths must lie beneath the server's root.",
            "inputSchema": input_schema::<RunArgs>(),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true},
        }),
        json!({
            "name": "smoke",
            "title": "Smoke-check packages",
            "description": "Check that each package under `source` can start here, without a model request, as \
                `wb-lsp smoke --json` does. Returns `reports`: one per package, with `status` (ready, needs-auth or \
                failed), the runner found, tools, authentication, requirements, workspaces, warnings and `error`. \
                On docker this builds the image and starts a container; on e2b and daytona it creates a sandbox, \
                which the server refuses unless the person started it with --allow-remote-sandboxes.",
            "inputSchema": smoke,
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true},
        }),
        json!({
            "name": "outcome",
            "title": "Show a run's outcome",
            "description": "Show a run's outcome as `wb-lsp outcome ID --json` does: `outcome` (its changesets, \
                artifacts, links, completeness), `receipt` (its application state) and `taken` (paths a partial \
                apply took). Read-only: it never applies anything. Only outcomes of runs whose workspaces lie beneath the \
                server's root are shown.",
            "inputSchema": input_schema::<OutcomeArgs>(),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        }),
    ]
}
