//! What a tool call runs with (the root, the catalog, cancellation, progress), the tools' arguments as typed
//! structs that refuse anything the schema does not describe, and the result every tool returns
//! (the JSON as text for any client, and as `structuredContent`): a leaf the tools (`check.rs`, `engine.rs`) and
//! the refusals of `confine.rs` build on, and `tools.rs` dispatches with. Each argument struct's input schema is
//! derived by `schemars` (in `tools.rs`): the fields' doc comments are the descriptions, `deny_unknown_fields` is
//! `additionalProperties: false`, and the `schemars` attributes state the bounds `tools::call` enforces.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wb_manifest::ModelCatalog;

/// What a tool call runs with.
pub struct Call<'a> {
    /// Absolute, with every symlink resolved.
    pub root: &'a Path,
    pub catalog: &'a ModelCatalog,
    /// Set when the client cancels the call: a runtime preparing stops at its next step.
    pub cancel: Arc<AtomicBool>,
    /// Where the engine reports what it is preparing, when the client asked for progress.
    pub progress: Option<wb_engine::lifecycle::Progress>,
    /// Held while `fix` checks and writes.
    pub writes: &'a Mutex<()>,
    /// The person started the server with `--allow-remote-sandboxes`: `smoke` may create sandboxes on E2B
    /// or Daytona (which cost money and run off this machine). Off by default.
    pub remote_sandboxes: bool,
}

/// A tool's result: a JSON object, and whether it reports a failure (a path that does not exist, a package
/// the engine refuses). A failure is still a result, which the agent reads; only a call the schema does not
/// accept is a JSON-RPC error.
pub struct ToolResult {
    value: Value,
    is_error: bool,
}

impl ToolResult {
    pub fn ok(value: Value) -> ToolResult {
        ToolResult { value, is_error: false }
    }

    /// A failure: `{"error": message}` plus `details`' fields (a location, what was refused).
    pub fn failure(message: &str, details: Value) -> ToolResult {
        let mut value = json!({"error": message});
        if let (Some(object), Value::Object(details)) = (value.as_object_mut(), details) {
            object.extend(details);
        }
        ToolResult { value, is_error: true }
    }

    /// The `tools/call` result: the JSON as text (what every client shows the model) and as
    /// `structuredContent` (2025-06-18; older clients ignore it).
    pub fn into_json(self) -> Value {
        let text = serde_json::to_string_pretty(&self.value).unwrap_or_default();
        json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": self.value,
            "isError": self.is_error,
        })
    }
}

/// `check`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckArgs {
    /// A repository (checks every .workbenches/<name>), a package directory or a workbench.yml; `PATH#name`
    /// picks packages by directory or `name`. Relative to the server's root.
    #[schemars(length(min = 1))]
    pub path: String,
}

/// `fix`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FixArgs {
    /// What to fix, as for check. Relative to the server's root.
    #[schemars(length(min = 1))]
    pub path: String,
}

/// `dry_run` and `smoke` (whose schema has no `task`, which `call` refuses): what `wb-lsp dry-run` and
/// `smoke` take, but what only the person may grant: no values (`--env`), no credentials, no host Docker
/// engine (`--allow-host-docker`). The caller is the agent; an argument the schema does not name is refused.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The package: its directory, its workbench.yml, or a repository with one package; `PATH#name` picks one
    /// package of a repository by directory or `name`. Relative to the server's root, and beneath it once every
    /// link is resolved.
    #[schemars(length(min = 1))]
    pub source: String,
    /// The task the runner would be given (default: a placeholder; only the translation is shown).
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub task: Option<String>,
    /// A runtime the manifest declares (local, docker, e2b, daytona); default: the first declared.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub runtime: Option<String>,
    /// The primary workspace (default: the server's root). Relative to the root, and beneath it.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub dir: Option<String>,
    /// Named workspaces to bind: {"NAME": "PATH"}, each path relative to the root, and beneath it.
    #[serde(default)]
    #[schemars(extend(
        "additionalProperties" = {"type": "string", "minLength": 1},
        "propertyNames" = {"pattern": "^[^=]+$"},
    ))]
    pub workspaces: BTreeMap<String, String>,
    /// Dotenv files to read variables from (names are reported, values never). Relative to the root.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub env_files: Vec<String>,
    /// Accept GPU requirements that cannot be checked here.
    #[serde(default)]
    pub allow_unchecked_gpu: bool,
}

/// `outcome`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeArgs {
    /// An outcome id (wbo_…) or a run id (wb_…: that run's final outcome).
    #[schemars(length(min = 1))]
    pub id: String,
}
