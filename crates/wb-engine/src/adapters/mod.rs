//! Runner adapters: how each runner receives a Workbench (command line, environment, staged configuration)
//! and how its native event stream becomes canonical events (engine facts e).

mod claude_code;
mod claude_control;
mod native_asks;
mod opencode;
mod opencode_events;
mod opencode_server;
pub mod package_files;
mod pi;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use wb_manifest::Mcp;

use crate::bindings::{BoundWorkspace, Environment};
use crate::error::{EngineError, Result};
use crate::events::{EventKind, Translated};
use crate::routing::ModelRoute;
use crate::source::Package;

pub use claude_code::ClaudeCode;
pub use opencode::OpenCode;
pub use pi::Pi;

/// How well an adapter supports one capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "status", content = "detail")]
pub enum Support {
    Supported,
    Degraded(&'static str),
    Unsupported(&'static str),
}

/// Everything an adapter needs to prepare one run.
pub struct StageContext<'a> {
    pub package: &'a Package,
    pub route: &'a ModelRoute,
    /// The bound workspaces, at the paths the runner sees.
    pub workspaces: &'a [BoundWorkspace],
    pub env: &'a Environment,
    pub task: &'a str,
    /// A private directory the adapter owns for this run (removed at cleanup), where it writes.
    pub stage_dir: &'a Path,
    /// The same directory as the runner sees it (the host path locally, a container path in a container):
    /// every path in the command, environment and staged configuration uses this one.
    pub runner_stage_dir: &'a Path,
    /// The package directory as the runner sees it.
    pub runner_package_dir: &'a Path,
    /// The outbox, as the runner sees it.
    pub outbox: &'a Path,
    pub mcps: &'a [&'a Mcp],
    /// Provider credential variables of routes that were not selected: removed from the runner's environment.
    pub unselected_variables: &'a [String],
    /// The environment the engine inherited: the base of the runner's environment (and where `HOME` is).
    pub inherited: &'a BTreeMap<String, String>,
    /// The run is a session: the runner keeps its conversation, so that [`Adapter::next_turn`] can carry it on.
    pub session: bool,
    /// The runtime gives the runner a stdin the engine writes to while it runs: the runner may ask the person
    /// (permissions, questions) and be steered, where its protocol allows.
    pub interactive: bool,
}

/// What the runner receives. `env` holds values and is only ever handed to the runner's process.
pub struct Translation {
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub remove_env: Vec<String>,
    /// The runner-native configuration, printable (references, never values).
    pub native_key: &'static str,
    pub native: Value,
    /// Files staged for the runner, by path relative to the stage directory.
    pub staged_files: Vec<String>,
    pub skills: Vec<String>,
    pub warnings: Vec<String>,
    /// MCPs the engine enabled that this runner cannot use (their warnings say why).
    pub disabled_mcps: Vec<String>,
    /// What the runner reads on its stdin as it starts (the task, in its protocol), when it runs interactively:
    /// its stdin then stays open for the answers to what it asks, until it gives its result.
    pub stdin: Option<String>,
    /// The port the runner's server listens on in its runtime, when the command starts one the engine drives
    /// (OpenCode's): the runtime makes it reachable on this host's loopback ([`crate::runtime::Launched::server`]).
    pub server: Option<u16>,
}

/// The ends of a bridge to a runner that is a server ([`Adapter::bridge`]): the stdin the engine writes lines to
/// and the stdout it reads lines from.
pub type Bridged = (Box<dyn std::io::Write + Send>, Box<dyn std::io::Read + Send>);

/// Per-run state of event translation.
#[derive(Default)]
pub struct TranslateState {
    pub final_text: String,
    pub failed: Option<String>,
    pub tools: BTreeMap<String, String>,
    /// A new assistant message began: its first text replaces the final answer (Pi streams deltas).
    pub new_message: bool,
    /// The runner's own id of the conversation, when its events name it (OpenCode's `sessionID`).
    pub conversation: Option<String>,
    /// The route's price, when the catalog gives one: usage the runner reports without a cost is priced
    /// with it as it streams, so a spend cap can act before the runner's own total arrives.
    pub price: Option<wb_manifest::ModelCost>,
    /// The runner reported its final result (Claude Code's `result`): the run's work is done, and a stop
    /// after it does not make it a cancelled run.
    pub finished: bool,
    /// Usage reported so far by message (Claude Code repeats a message's usage on each of its events), and
    /// the sums already emitted, so the runner's final totals are emitted as what they add.
    pub usage: UsageSoFar,
    /// The native requests behind the requests the translation emitted, by request id, for the answers.
    pub asked: BTreeMap<String, Value>,
    /// The steers handed to the runner and not yet taken, by the runner's own id of each (Claude Code's message
    /// uuid): their steer ids, so the translation can say when the runner took one (`input.delivered`).
    pub steers: BTreeMap<String, String>,
    /// The runner's ids of the person's messages (OpenCode's server shows their parts like the runner's own).
    pub user_messages: std::collections::BTreeSet<String>,
}

/// The usage a run's deltas have carried so far.
#[derive(Default)]
pub struct UsageSoFar {
    /// Each message's counts (input, output, cache read, cache write) as last reported.
    pub messages: BTreeMap<String, [u64; 4]>,
    /// The counts emitted so far, in the same order.
    pub emitted: [u64; 4],
    /// The cost emitted so far (estimates from the price).
    pub cost: f64,
}

/// Who a runner is: its name in manifests, its executable, its npm package and the versions verified.
#[derive(Debug)]
pub struct Identity {
    pub name: &'static str,
    /// The executable looked up on PATH.
    pub executable: &'static str,
    /// The npm package the runner ships in (what `scripts/install-runners.sh` installs).
    pub npm_package: &'static str,
    /// The native versions this adapter was verified against.
    pub verified_versions: &'static [&'static str],
}

pub trait Adapter: Send + Sync {
    fn identity(&self) -> &'static Identity;
    fn name(&self) -> &'static str {
        self.identity().name
    }
    /// The executable looked up on PATH.
    fn executable(&self) -> &'static str {
        self.identity().executable
    }
    /// The npm package the runner ships in (what `scripts/install-runners.sh` installs).
    fn npm_package(&self) -> &'static str {
        self.identity().npm_package
    }
    /// The native versions this adapter was verified against.
    fn verified_versions(&self) -> &'static [&'static str] {
        self.identity().verified_versions
    }
    fn capabilities(&self) -> Vec<(&'static str, Support)>;
    fn translate(&self, context: &StageContext<'_>) -> Result<Translation>;
    /// Translates one line of the runner's stdout (already parsed as JSON).
    fn translate_event(&self, event: &Value, state: &mut TranslateState) -> Vec<Translated>;
    /// The command of a session's next turn: `first` is the command [`Adapter::translate`] gave for the first
    /// turn (staged with `session`), `task` the new task, `conversation` the id the runner's events gave
    /// ([`TranslateState::conversation`]). The runner carries on its conversation, so the model sees the
    /// earlier turns.
    fn next_turn(&self, first: &[String], task: &str, conversation: Option<&str>) -> Result<Vec<String>>;
    /// Where in the stage directory the runner keeps a session's conversation (kept beside the run, so a
    /// resumed session carries it on); `None` when the runner keeps it in its own data directory.
    fn conversation_store(&self) -> Option<&'static str> {
        None
    }
    /// What the runner reads on its stdin as a turn with `task` starts, for a command that runs it
    /// interactively (see [`Translation::stdin`]); `None` for one that takes its task on the command line.
    /// After preflight found the runner (`version`: its version, when it could be read), for a runtime whose runner
    /// reads a stdin (`container`: in a container): the translation the run launches. OpenCode's server takes the
    /// place of one `run` where its version is one whose protocol the engine drives.
    fn settle(&self, _translation: &mut Translation, _version: Option<&str>, _container: bool) -> Result<()> {
        Ok(())
    }
    /// The port the server `command` starts listens on, for a runner the engine drives as a server.
    fn server_port(&self, _command: &[String]) -> Option<u16> {
        None
    }
    /// `conversation` is the runner's id of the conversation a later turn carries on.
    fn opening_input(&self, _command: &[String], _task: &str, _conversation: Option<&str>) -> Option<String> {
        None
    }
    /// For a runner the command starts as a server the engine drives (OpenCode's `serve`): the ends the engine
    /// writes lines to and reads lines from, bridged to the server, given the process's own `stdout` and
    /// `stdin`; `None` for a runner the engine talks to on its stdin and stdout.
    fn bridge(
        &self,
        _translation: &Translation,
        _server: Option<std::net::SocketAddr>,
        _stdout: &mut Option<Box<dyn std::io::Read + Send>>,
        _stdin: &mut Option<Box<dyn std::io::Write + Send>>,
    ) -> Option<std::io::Result<Bridged>> {
        None
    }
    /// The line that gives the runner `text` while its turn runs (its own steering), remembering in `state` how
    /// to tell when it took it (steer `id`); `None` when the runner cannot be steered.
    fn steer_input(&self, _id: &str, _text: &str, _state: &mut TranslateState) -> Option<String> {
        None
    }
    /// The line that gives the runner `answer` to `request` (its native reply, with what the translation kept of
    /// the native request in `state`); `None` when the runner cannot take one.
    fn answer_input(
        &self,
        _request: &crate::input::Request,
        _answer: &crate::input::Answer,
        _state: &mut TranslateState,
    ) -> Option<String> {
        None
    }
}

/// `command` with its last argument (the task) replaced by `task`.
pub(crate) fn with_task(command: &[String], task: String) -> Vec<String> {
    let mut next = command.to_vec();
    match next.last_mut() {
        Some(last) => *last = task,
        None => next.push(task),
    }
    next
}

/// A random UUID (version 4), as runners name conversations.
pub(crate) fn random_uuid() -> String {
    let hex = wb_outcomes::random_hex(16);
    let variant = ["8", "9", "a", "b"][usize::from(hex.as_bytes()[16] % 4)];
    format!("{}-{}-4{}-{variant}{}-{}", &hex[0..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
}

/// The data of a `usage.updated` delta: each canonical counter found at its JSON pointer in `usage` (a runner's
/// own names), and the cost when the runner reports a non-negative one.
pub(crate) fn usage_delta(usage: &Value, counters: &[(&str, &str)], cost: Option<f64>) -> Value {
    let mut data = serde_json::json!({"kind": "delta"});
    for (key, pointer) in counters {
        if let Some(value) = usage.pointer(pointer).and_then(Value::as_u64) {
            data[*key] = Value::from(value);
        }
    }
    if let Some(cost) = cost.filter(|c| *c >= 0.0) {
        data["cost_usd"] = Value::from(cost);
    }
    data
}

/// The npm packages the runners ship in (the Pi CLI moved from `@mariozechner` to `@earendil-works`).
const RUNNER_PACKAGES: [&str; 4] =
    ["opencode-ai", "@anthropic-ai/claude-code", "@mariozechner/pi-coding-agent", "@earendil-works/pi-coding-agent"];

/// The version of an installed runner, read from the npm package its executable belongs to (no process is
/// started: `--version` costs over a second for some runners). `None` for an executable outside such a
/// package (another kind of install, a wrapper script).
pub fn installed_version(executable: &Path) -> Option<String> {
    let real = std::fs::canonicalize(executable).ok()?;
    for dir in real.ancestors().skip(1).take(4) {
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else { continue };
        let Ok(package) = serde_json::from_str::<Value>(&text) else { return None };
        let name = package.get("name").and_then(Value::as_str)?;
        return RUNNER_PACKAGES
            .contains(&name)
            .then(|| package.get("version").and_then(Value::as_str).map(str::to_owned))
            .flatten();
    }
    None
}

/// Whether the package's native configuration defines `provider` (a provider absent from the catalog):
/// OpenCode's `provider.<name>` (the `runner_config` file, or the directory's `opencode.json`), Pi's
/// `providers.<name>` in the directory's `models.json`. `None` when it cannot be told (no such file, not
/// JSON, another runner).
pub fn packaged_provider(package: &Package, runner: &str, provider: &str) -> Option<bool> {
    let path = runner_config_path(package)?;
    let (file, pointer) = match runner {
        "opencode" if package_files::is_dir(&package.package_dir, &path) => (path.join("opencode.json"), "/provider"),
        "opencode" => (path, "/provider"),
        "pi" => (path.join("models.json"), "/providers"),
        _ => return None,
    };
    let value: Value = serde_json::from_str(&package_files::read_text(&package.package_dir, &file).ok()?).ok()?;
    Some(value.pointer(pointer).and_then(Value::as_object).is_some_and(|providers| providers.contains_key(provider)))
}

/// Every runner wb-lsp has an adapter for.
pub const RUNNERS: [&str; 3] = ["opencode", "claude-code", "pi"];

/// `Runner CLI is unavailable: <runner>` (the reference's text), then which executable was looked for where
/// (`place`: `PATH`, `the image's PATH`), the npm package and version the adapter is verified with, and how to
/// install it.
pub fn runner_unavailable(runner: &str, place: &str) -> String {
    match adapter(runner) {
        Ok(found) => install_hint(runner, &*found, &format!("no `{}` executable on {place}", found.executable())),
        Err(_) => format!("Runner CLI is unavailable: {runner}"),
    }
}

/// [`runner_unavailable`] for the runner whose executable is `program` (what a launch knows), saying `why`.
pub fn executable_unavailable(program: &str, why: &str) -> String {
    let found = RUNNERS.iter().find_map(|runner| {
        adapter(runner).ok().filter(|a| a.executable() == program).map(|adapter| (*runner, adapter))
    });
    match found {
        Some((runner, adapter)) => install_hint(runner, &*adapter, why),
        None => format!("Runner CLI is unavailable: {program}"),
    }
}

fn install_hint(runner: &str, adapter: &dyn Adapter, why: &str) -> String {
    let package = adapter.npm_package();
    let version = adapter.verified_versions().last().copied().unwrap_or("latest");
    format!(
        "Runner CLI is unavailable: {runner} ({why}). Install {package} {version}, the version wb-lsp is verified \
         with: npm install -g {package}@{version} (or scripts/install-runners.sh, then put \
         ~/.cache/wb-lsp/runners/node_modules/.bin on PATH)"
    )
}

/// The adapter of a runner, or `Unsupported runner: <r>`.
pub fn adapter(runner: &str) -> Result<Box<dyn Adapter>> {
    match runner {
        "opencode" => Ok(Box::new(OpenCode)),
        "claude-code" => Ok(Box::new(ClaudeCode)),
        "pi" => Ok(Box::new(Pi)),
        other => Err(EngineError::message(format!("Unsupported runner: {other}"))),
    }
}

/// The `${NAME}` references of an MCP's headers, each name once.
pub fn mcp_references(mcp: &Mcp) -> Vec<String> {
    let mut names = Vec::new();
    for (_, value) in &mcp.headers {
        for reference in wb_manifest::env_refs::env_refs(&value.value) {
            if !names.iter().any(|n| n == reference.name) {
                names.push(reference.name.to_owned());
            }
        }
    }
    names
}

/// The package's `runner_config` path (lexical; every read checks it against the package boundary again).
pub fn runner_config_path(package: &Package) -> Option<PathBuf> {
    let config = package.manifest.runner_config.as_ref()?;
    Some(wb_manifest::normalize(&package.package_dir.join(&config.value)))
}

/// Copies the `runner_config` directory into `to`; it may contain no link at all (the checks refused them, and
/// one that appears since is refused here).
pub fn stage_runner_config_dir(package: &Package, from: &Path, to: &Path) -> Result<()> {
    package_files::copy_tree(&package.package_dir, from, to, package_files::Links::Refuse)
        .map_err(|e| EngineError::io("cannot stage runner_config", e))
}

/// The text of the `runner_config` file (or of `file` in its directory), read inside the package boundary.
pub fn runner_config_text(package: &Package, file: &Path) -> Result<String> {
    package_files::read_text(&package.package_dir, file)
        .map_err(|error| package_file_error(error, "runner_config does not exist", file))
}

/// A missing package file keeps the reference's text; one refused at use time (a link that appeared since the
/// checks, a special file, over the size limit) says why.
fn package_file_error(error: std::io::Error, missing: &str, path: &Path) -> EngineError {
    match error.kind() {
        std::io::ErrorKind::NotFound => EngineError::message(format!("{missing}: {}", path.display())),
        _ => EngineError::io(format!("cannot read {}", path.display()), error),
    }
}

/// Copies every skill to `<stage>/skills/<name>/`; returns the names in manifest order. A skill is copied from
/// inside the repository only: a link in it that leaves the repository stops the staging.
pub fn stage_skills(context: &StageContext<'_>) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let package = context.package;
    for skill in &package.manifest.skills {
        let dir = wb_manifest::normalize(&package.package_dir.join(&skill.value));
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let target = context.stage_dir.join("skills").join(&name);
        package_files::copy_tree(&package.root, &dir, &target, package_files::Links::FollowInside)
            .map_err(|e| EngineError::io(format!("cannot stage skill {name}"), e))?;
        names.push(name);
    }
    Ok(names)
}

/// The package instructions wrapped in the engine's context and runtime blocks.
pub fn combined_instructions(context: &StageContext<'_>, extra: Option<&str>) -> Result<String> {
    let package = context.package;
    let mut text = String::new();
    // Only the bare agent (a trial's `plain` arm) has none: it gets the runtime's facts and nothing of the package.
    if let Some(instructions) = &package.manifest.instructions {
        let instructions_path = wb_manifest::normalize(&package.package_dir.join(&instructions.value));
        let instructions = package_files::read_text(&package.root, &instructions_path)
            .map_err(|error| package_file_error(error, "Instructions file does not exist", &instructions_path))?;
        text.push_str(&format!(
            "<workbench_context>\nYou are running inside the Workbench {name}@{version}: a repository-owned package that prepares you for one class of work. Follow its instructions below. Use the skills it provides when they apply.\n</workbench_context>\n\n",
            name = package.name,
            version = package.version,
        ));
        if let Some(extra) = extra.filter(|e| !e.trim().is_empty()) {
            text.push_str(extra.trim_end());
            text.push_str("\n\n");
        }
        text.push_str(instructions.trim_end());
        text.push_str("\n\n");
    }
    text.push_str("<workbench_runtime>\n");
    for workspace in context.workspaces {
        match (&workspace.name, workspace.variable()) {
            (Some(name), Some(variable)) => text.push_str(&format!(
                "Workspace {name}: {} ({}; ${variable})\n",
                workspace.path.display(),
                workspace.access.as_str()
            )),
            _ => text.push_str(&format!(
                "Primary workspace (your working directory): {} (read-write)\n",
                workspace.path.display()
            )),
        }
    }
    text.push_str(&format!(
        "Outbox: {} ($WORKBENCH_OUTPUT_DIR). Write files there to return them as artifacts; you may describe them in {}/outcome.json.\nEdits to writable workspaces are made in place and are present when the run ends.\n</workbench_runtime>\n",
        context.outbox.display(),
        context.outbox.display()
    ));
    Ok(text)
}

/// The variables every runner gets: workspaces, the outbox, and the bound values of the selected route and of
/// the manifest's declared env.
pub fn base_environment(context: &StageContext<'_>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for workspace in context.workspaces {
        if let Some(variable) = workspace.variable() {
            env.insert(variable, workspace.path.display().to_string());
        }
    }
    env.insert("WORKBENCH_OUTPUT_DIR".to_owned(), context.outbox.display().to_string());
    for (name, value) in context.env.iter() {
        if !context.unselected_variables.iter().any(|v| v == name) {
            env.insert(name.to_owned(), value.to_owned());
        }
    }
    env
}

pub fn write_file(path: &Path, contents: &str, mode: u32) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| EngineError::io(format!("cannot create {}", parent.display()), e))?;
    }
    std::fs::write(path, contents).map_err(|e| EngineError::io(format!("cannot write {}", path.display()), e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    }
    Ok(())
}

/// Lists staged files relative to the stage directory, sorted.
pub fn list_staged(stage: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![stage.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(relative) = path.strip_prefix(stage) {
                out.push(relative.display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// `tool.completed` for a tool whose `tool.started` data was `started` (id, name, optional title and target),
/// with `message` when it failed with one; then `file.changed` when it is a file tool that succeeded on a target.
pub fn tool_completed(started: Value, failed: bool, message: Option<&str>) -> Vec<Translated> {
    let name = started.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let changed = (!failed && is_file_tool(&name))
        .then(|| started.get("target").and_then(Value::as_str).map(str::to_owned))
        .flatten();
    let mut data = started;
    data["status"] = json!(if failed { "failed" } else { "completed" });
    if let Some(message) = message {
        data["message"] = json!(message);
    }
    let mut events = vec![Translated::new(EventKind::ToolCompleted, data)];
    if let Some(target) = changed {
        events.push(Translated::new(EventKind::FileChanged, json!({"path": target, "tool": name})));
    }
    events
}

/// A tool that edits files, by native name.
pub fn is_file_tool(name: &str) -> bool {
    matches!(name.to_ascii_lowercase().as_str(), "write" | "edit" | "multiedit" | "patch" | "apply_patch")
}

/// Every capability the registration needs a status for, with the entries all three one-shot adapters share;
/// `overrides` replaces entries by name.
pub fn capability_map(overrides: &[(&'static str, Support)]) -> Vec<(&'static str, Support)> {
    let mut map = common_capabilities();
    for (name, support) in overrides {
        if let Some(entry) = map.iter_mut().find(|(n, _)| n == name) {
            entry.1 = *support;
        }
    }
    map
}

/// Common capability entries.
fn common_capabilities() -> Vec<(&'static str, Support)> {
    vec![
        ("streamed_text", Support::Supported),
        ("tool_events", Support::Supported),
        ("file_changes", Support::Degraded("derived from file-editing tool calls")),
        ("usage", Support::Supported),
        ("permissions", Support::Unsupported("one-shot runs do not answer permission prompts")),
        ("questions", Support::Unsupported("the runner's questions are not asked of the person")),
        ("multi_turn", Support::Degraded("sessions (`run --session`, `send`, `resume`), on every runtime")),
        ("steering", Support::Unsupported("a turn's task is given when the turn starts")),
        ("image_input", Support::Unsupported("tasks are text")),
        ("image_generation", Support::Unsupported("not translated")),
        ("session_resume", Support::Supported),
        ("cancellation", Support::Supported),
        ("failures", Support::Supported),
        ("unknown_native_events", Support::Degraded("forwarded as runner.event with the native type only")),
    ]
}
