//! What a tool call runs with (the root, the catalog, cancellation, progress), the tools' arguments as typed
//! structs that refuse anything the schema does not describe, and the result every tool returns
//! (the JSON as text for any client, and as `structuredContent`): a leaf the tools (`check.rs`, `engine.rs`) and
//! the refusals of `confine.rs` build on, and `tools.rs` dispatches with.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

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

/// `check` and `fix`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    pub path: String,
}

/// `dry_run` and `smoke` (which takes no `task`): what `wb-lsp dry-run` and `smoke` take, but what only the
/// person may grant: no values (`--env`), no credentials, no host Docker engine (`--allow-host-docker`). The
/// caller is the agent; an argument the schema does not name is refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    pub source: String,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub runtime: Option<String>,
    #[serde(default)]
    pub dir: Option<String>,
    #[serde(default)]
    pub workspaces: BTreeMap<String, String>,
    #[serde(default)]
    pub env_files: Vec<String>,
    #[serde(default)]
    pub allow_unchecked_gpu: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeArgs {
    pub id: String,
}
