//! Claude Code: `claude -p --output-format stream-json`, with a staged `CLAUDE_CONFIG_DIR` holding
//! `settings.json` and `mcp.json` (headers keep `${VAR}`: Claude Code expands them itself).
//!
//! Verified against @anthropic-ai/claude-code 2.1.332 (crates/wb-lsp/tests/real_runners.rs). With
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (always set) it contacts nothing but the model endpoint; without
//! it, feature flags, telemetry and bootstrap calls to api.anthropic.com (docs/runners.md).

use serde_json::{Map, Value, json};
use wb_manifest::Access;

use super::{
    Adapter, StageContext, Support, TranslateState, Translation, base_environment, claude_control,
    combined_instructions,
};
use crate::error::{EngineError, Result};
use crate::events::{EventKind, Translated};

pub struct ClaudeCode;

/// True for variables Claude Code treats as its own (they are filtered from the runner's environment).
pub fn is_claude_variable(name: &str) -> bool {
    name.starts_with("CLAUDE") || name.starts_with("ANTHROPIC_")
}

/// A path as Claude Code's permission rules spell it: `//abs/path` is absolute, while `/path` would be
/// relative to the settings file (verified against claude 2.1.332: `Edit(/abs/**)` denies the write).
pub fn permission_path(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    if text.starts_with('/') { format!("/{text}") } else { text }
}

/// Whether Claude Code scrubs credentials from its tools' subprocesses (verified against 2.1.332). Scrubbing
/// needs bubblewrap on the host, and while it is on Claude Code expands no `${VAR}` in MCP headers (they are
/// sent empty). So it is on for a local run whose MCP servers need no reference and where `bwrap` works and
/// `socat` exists (Claude Code's sandbox needs both), and
/// off otherwise, with a warning saying why. In a container, the container is the isolation.
fn subprocess_scrub(context: &StageContext<'_>, mcp_references: bool, warnings: &mut Vec<String>) -> bool {
    if context.runner_stage_dir != context.stage_dir {
        return false;
    }
    if mcp_references {
        warnings.push(
            "Claude Code's tools see the run's environment: Claude Code expands MCP header references only without subprocess scrubbing"
                .to_owned(),
        );
        return false;
    }
    let path = context.inherited.get("PATH").map(String::as_str);
    let Some(bwrap) = crate::runtime::find_executable("bwrap", path) else {
        warnings.push(
            "Claude Code's tools see the run's environment: install bubblewrap (bwrap) so Claude Code can scrub credentials from them"
                .to_owned(),
        );
        return false;
    };
    // Claude Code's sandbox also needs socat (its network proxy): without it, a command the person allowed
    // fails with "Sandbox dependencies not available" (verified against 2.1.332).
    if crate::runtime::find_executable("socat", path).is_none() {
        warnings.push(
            "Claude Code's tools see the run's environment: install socat (with bubblewrap) so Claude Code can scrub credentials from them"
                .to_owned(),
        );
        return false;
    }
    // Present is not enough: without user namespaces (some containers and CI machines, any chroot) bwrap cannot
    // sandbox, and Claude Code would then refuse to start or fail every command. The probe asks for what Claude
    // Code's own does (2.1.332: a user and a network namespace).
    let works = std::process::Command::new(&bwrap)
        .args(["--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !works {
        warnings.push(format!(
            "Claude Code's tools see the run's environment: {} cannot create a sandbox here",
            bwrap.display()
        ));
    }
    works
}

impl Adapter for ClaudeCode {
    fn identity(&self) -> &'static super::Identity {
        &super::Identity {
            name: "claude-code",
            executable: "claude",
            npm_package: "@anthropic-ai/claude-code",
            verified_versions: &["2.1.332"],
        }
    }

    fn capabilities(&self) -> Vec<(&'static str, Support)> {
        super::capability_map(&[
            (
                "streamed_text",
                Support::Degraded("stream-json without partial messages carries each assistant message whole"),
            ),
            ("usage", Support::Supported),
            (
                "permissions",
                Support::Degraded(
                    "asked of the person on the local and docker runtimes, after the staged settings.json rules; on \
                     e2b and daytona, what the rules do not allow is denied",
                ),
            ),
            (
                "steering",
                Support::Degraded(
                    "send --steer is a user message on stdin, folded into the running turn at its next step, on \
                     the local and docker runtimes, not on e2b and daytona",
                ),
            ),
            (
                "questions",
                Support::Degraded("AskUserQuestion is asked on the local and docker runtimes, not on e2b and daytona"),
            ),
        ])
    }

    fn translate(&self, context: &StageContext<'_>) -> Result<Translation> {
        let skills = super::stage_skills(context)?;
        let mut warnings = Vec::new();
        let mut permissions = packaged_permissions(context)?;
        let servers = mcp_servers(context, &mut permissions, &mut warnings);
        workspace_permissions(context, &mut permissions, &mut warnings);
        let outbox = permission_path(context.outbox);
        permissions.allow.push(json!(format!("Read({outbox}/**)")));
        permissions.allow.push(json!(format!("Edit({outbox}/**)")));
        let settings = json!({"permissions": {"allow": permissions.allow, "deny": permissions.deny}});
        let mcp = json!({"mcpServers": servers.config});
        let dir = context.stage_dir;
        let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default();
        super::write_file(&dir.join("settings.json"), &pretty(&settings), 0o444)?;
        super::write_file(&dir.join("mcp.json"), &pretty(&mcp), 0o444)?;
        super::write_file(&dir.join("workbench-instructions.md"), &combined_instructions(context, None)?, 0o444)?;
        let (env, remove_env) = environment(context, servers.references_used, &mut warnings);
        let runner_dir = context.runner_stage_dir;
        let command = command(context, permissions.max_turns);
        let stdin = self.opening_input(&command, context.task, None);
        Ok(Translation {
            command,
            cwd: context.workspaces.first().map(|w| w.path.clone()).unwrap_or_default(),
            env,
            remove_env,
            native_key: "claude_config",
            native: json!({"directory": runner_dir.display().to_string(), "settings.json": settings, "mcp.json": mcp}),
            staged_files: super::list_staged(dir),
            skills,
            warnings,
            disabled_mcps: servers.disabled,
            stdin,
            server: None,
        })
    }

    fn next_turn(&self, first: &[String], task: &str, conversation: Option<&str>) -> Result<Vec<String>> {
        // An interactive runner reads its task on stdin (`opening_input`), not on the command line.
        let mut next =
            if claude_control::interactive(first) { first.to_vec() } else { super::with_task(first, task.to_owned()) };
        let Some(at) = next.iter().position(|argument| argument == "--session-id") else {
            return Err(EngineError::message("The first turn of the session was not started as a session"));
        };
        next[at] = "--resume".to_owned();
        // The conversation the runner reported (a resumed session's, from its first run), else the one named.
        if let (Some(id), Some(named)) = (conversation, next.get_mut(at + 1)) {
            id.clone_into(named);
        }
        Ok(next)
    }

    fn conversation_store(&self) -> Option<&'static str> {
        // `CLAUDE_CONFIG_DIR/projects/<workspace>/<session>.jsonl`.
        Some("projects")
    }

    fn opening_input(&self, command: &[String], task: &str, _conversation: Option<&str>) -> Option<String> {
        claude_control::interactive(command).then(|| claude_control::user_message(task))
    }

    fn steer_input(&self, id: &str, text: &str, state: &mut TranslateState) -> Option<String> {
        Some(claude_control::steer(id, text, state))
    }

    fn answer_input(
        &self,
        request: &crate::input::Request,
        answer: &crate::input::Answer,
        state: &mut TranslateState,
    ) -> Option<String> {
        claude_control::reply(request, answer, state)
    }

    fn translate_event(&self, event: &Value, state: &mut TranslateState) -> Vec<Translated> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("unknown");
        match kind {
            "assistant" => {
                let mut events = Vec::new();
                let content = event.pointer("/message/content").and_then(Value::as_array).cloned().unwrap_or_default();
                for block in content {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            let text = block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
                            state.final_text = text.clone();
                            events.push(Translated::new(EventKind::OutputText, json!({"text": text})));
                        }
                        Some("tool_use") => {
                            let id = block.get("id").and_then(Value::as_str).unwrap_or("tool").to_owned();
                            let name = block.get("name").and_then(Value::as_str).unwrap_or("tool").to_owned();
                            let mut data = json!({"id": id, "name": name});
                            if let Some(target) = block.pointer("/input/file_path").and_then(Value::as_str) {
                                data["target"] = json!(target);
                            }
                            state.tools.insert(id, serde_json::to_string(&data).unwrap_or_default());
                            events.push(Translated::new(EventKind::ToolStarted, data));
                            // The agent's todo list is its plan.
                            if name == "TodoWrite"
                                && let Some(todos) = block.pointer("/input/todos").and_then(Value::as_array)
                            {
                                events.push(crate::plan::updated(todos, "content", "status"));
                            }
                        }
                        Some(other) => events.push(Translated::native(&format!("assistant.{other}"))),
                        None => {}
                    }
                }
                if let Some(usage) = event.pointer("/message/usage") {
                    let id = event.pointer("/message/id").and_then(Value::as_str);
                    events.extend(message_usage(state, id, usage));
                }
                events
            }
            "user" => {
                let mut events: Vec<Translated> = claude_control::delivered(event, state).into_iter().collect();
                let content = event.pointer("/message/content").and_then(Value::as_array).cloned().unwrap_or_default();
                for block in content {
                    if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or("tool").to_owned();
                    let started: Value = state
                        .tools
                        .get(&id)
                        .and_then(|s| serde_json::from_str(s).ok())
                        .unwrap_or_else(|| json!({"id": id, "name": "tool"}));
                    let failed = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    events.extend(super::tool_completed(started, failed, None));
                }
                events
            }
            "result" => {
                let mut events = Vec::new();
                let usage = event.get("usage").cloned().unwrap_or(Value::Null);
                let cost = event.get("total_cost_usd").and_then(Value::as_f64);
                events.push(Translated::new(EventKind::UsageUpdated, final_usage(state, &usage, cost)));
                state.finished = true;
                if let Some(result) = event.get("result").and_then(Value::as_str) {
                    state.final_text = result.to_owned();
                }
                if event.get("is_error").and_then(Value::as_bool).unwrap_or(false) {
                    state.failed = Some(
                        event
                            .get("result")
                            .and_then(Value::as_str)
                            .unwrap_or("Claude Code reported an error")
                            .to_owned(),
                    );
                }
                events
            }
            "system" => {
                if let Some(id) = event.get("session_id").and_then(Value::as_str) {
                    state.conversation = Some(id.to_owned());
                }
                let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or("unknown");
                vec![Translated::native(&format!("system.{subtype}"))]
            }
            "control_request" | "control_cancel_request" => claude_control::control(event, state),
            "command_lifecycle" => match claude_control::delivered(event, state) {
                Some(delivered) => vec![delivered],
                None => vec![Translated::native("command_lifecycle")],
            },
            other => vec![Translated::native(other)],
        }
    }
}

/// Claude Code's usage fields, in the order of [`super::UsageSoFar`]'s counts.
const USAGE_FIELDS: [(&str, &str); 4] = [
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_tokens", "cache_read_input_tokens"),
    ("cache_write_tokens", "cache_creation_input_tokens"),
];

fn usage_counts(usage: &Value) -> [u64; 4] {
    USAGE_FIELDS.map(|(_, native)| usage.get(native).and_then(Value::as_u64).unwrap_or(0))
}

/// A `usage.updated` delta of these counts, with their cost when there is one.
fn usage_event(delta: [u64; 4], cost: Option<f64>) -> Translated {
    let mut data = json!({"kind": "delta"});
    for ((key, _), count) in USAGE_FIELDS.iter().zip(delta) {
        if count > 0 {
            data[*key] = Value::from(count);
        }
    }
    if let Some(cost) = cost.filter(|c| c.is_finite() && *c >= 0.0) {
        data["cost_usd"] = Value::from(cost);
    }
    Translated::new(EventKind::UsageUpdated, data)
}

/// The usage of one assistant message as it streams: what it adds since the message was last seen (Claude
/// Code repeats a message's usage on every event of it), priced from the catalog when the route has a price,
/// so `--max-cost` can stop a run before the runner's own total arrives at the end.
fn message_usage(state: &mut TranslateState, id: Option<&str>, usage: &Value) -> Option<Translated> {
    let counts = usage_counts(usage);
    let key = id.map_or_else(|| format!("#{}", state.usage.messages.len()), str::to_owned);
    let before = state.usage.messages.get(&key).copied().unwrap_or_default();
    let delta: [u64; 4] = std::array::from_fn(|i| counts[i].saturating_sub(before[i]));
    state.usage.messages.insert(key, std::array::from_fn(|i| counts[i].max(before[i])));
    if delta.iter().all(|count| *count == 0) {
        return None;
    }
    for (emitted, count) in state.usage.emitted.iter_mut().zip(delta) {
        *emitted = emitted.saturating_add(count);
    }
    let cost = state.price.and_then(|price| price.estimate(delta[0], delta[1], delta[2], delta[3]));
    if let Some(cost) = cost {
        state.usage.cost += cost;
    }
    Some(usage_event(delta, cost))
}

/// The final `result`'s totals as the delta they add to what the messages carried: the run's deltas then
/// sum to the runner's own totals and its own cost (an estimate above it is not taken back).
fn final_usage(state: &mut TranslateState, usage: &Value, total_cost: Option<f64>) -> Value {
    let totals = usage_counts(usage);
    let delta: [u64; 4] = std::array::from_fn(|i| totals[i].saturating_sub(state.usage.emitted[i]));
    let cost = total_cost.map(|total| (total - state.usage.cost).max(0.0));
    usage_event(delta, cost).data
}

/// The permissions the run's `settings.json` grants and denies, and the turn limit.
struct Permissions {
    allow: Vec<Value>,
    deny: Vec<Value>,
    max_turns: Option<u64>,
}

/// The package's own `runner_config` (Claude Code settings): its permissions and `max_turns`. The reference
/// stages the file before preflight looks for the runner, so a content error comes first.
fn packaged_permissions(context: &StageContext<'_>) -> Result<Permissions> {
    let mut permissions = Permissions { allow: Vec::new(), deny: Vec::new(), max_turns: None };
    let Some(path) = super::runner_config_path(context.package) else { return Ok(permissions) };
    let text = super::runner_config_text(context.package, &path)?;
    if let Some(problem) = wb_manifest::claude_config_problem(text.as_bytes()) {
        return Err(EngineError::message(problem));
    }
    let value: Value = serde_json::from_str(&text)
        .map_err(|_| EngineError::message("Claude Code runner_config must contain valid JSON"))?;
    let list = |pointer: &str| value.pointer(pointer).and_then(Value::as_array).cloned().unwrap_or_default();
    permissions.allow = list("/permissions/allow");
    permissions.deny = list("/permissions/deny");
    permissions.max_turns = value.get("max_turns").and_then(Value::as_u64);
    Ok(permissions)
}

/// The run's MCP servers as `mcp.json` lists them.
struct Servers {
    config: Map<String, Value>,
    /// Some header references an environment variable (Claude Code expands those from its environment).
    references_used: bool,
    disabled: Vec<String>,
}

/// Every enabled MCP as an HTTP server, allowed by name; one whose headers reference a Claude or Anthropic
/// variable is disabled (Claude Code does not expand those).
fn mcp_servers(context: &StageContext<'_>, permissions: &mut Permissions, warnings: &mut Vec<String>) -> Servers {
    let mut servers = Servers { config: Map::new(), references_used: false, disabled: Vec::new() };
    for server in context.mcps {
        let references = super::mcp_references(server);
        if references.iter().any(|name| is_claude_variable(name)) {
            warnings.push(format!(
                "MCP {} is disabled because Claude Code does not expand Claude or Anthropic environment references in MCP headers",
                server.name.value
            ));
            servers.disabled.push(server.name.value.clone());
            continue;
        }
        servers.references_used |= !references.is_empty();
        let headers: Map<String, Value> =
            server.headers.iter().map(|(name, value)| (name.value.clone(), json!(value.value))).collect();
        servers
            .config
            .insert(server.name.value.clone(), json!({"type": "http", "url": server.url.value, "headers": headers}));
        permissions.allow.push(json!(format!("mcp__{}", server.name.value)));
    }
    servers
}

/// Every workspace readable; writable ones editable; read-only ones denied edits, which is needed when a
/// writable workspace contains them (deny beats allow). A read-only workspace that contains a writable one
/// cannot be denied without denying both: a warning says so.
fn workspace_permissions(context: &StageContext<'_>, permissions: &mut Permissions, warnings: &mut Vec<String>) {
    for workspace in context.workspaces {
        let path = permission_path(&workspace.path);
        permissions.allow.push(json!(format!("Read({path}/**)")));
        if workspace.access == Access::ReadWrite {
            permissions.allow.push(json!(format!("Edit({path}/**)")));
            continue;
        }
        let name = workspace.name.as_deref().unwrap_or("primary");
        match context.workspaces.iter().find(|w| w.access == Access::ReadWrite && w.path.starts_with(&workspace.path)) {
            Some(inner) => warnings.push(format!(
                "Claude Code cannot keep workspace {name} read-only: it contains the writable workspace {}",
                inner.name.as_deref().unwrap_or("primary")
            )),
            None => permissions.deny.push(json!(format!("Edit({path}/**)"))),
        }
    }
}

/// The runner's environment and the inherited variables it must not see. Claude's own variables come only
/// from the engine (the selected route's credentials); a gateway route points Claude Code at the gateway; an
/// engine run is headless and pinned (no auto-update, telemetry or other side traffic).
fn environment(
    context: &StageContext<'_>,
    references_used: bool,
    warnings: &mut Vec<String>,
) -> (std::collections::BTreeMap<String, String>, Vec<String>) {
    let mut env = base_environment(context);
    let mut remove_env: Vec<String> = context.unselected_variables.to_vec();
    remove_env.extend(context.inherited.keys().filter(|k| is_claude_variable(k) && !env.contains_key(*k)).cloned());
    let gateway = match context.route.provider.as_str() {
        "openrouter" => Some(("OPENROUTER_API_KEY", "https://openrouter.ai/api")),
        "vercel" => Some(("AI_GATEWAY_API_KEY", "https://ai-gateway.vercel.sh/claude-code")),
        _ => None,
    };
    if let Some((key_name, base_url)) = gateway {
        if let Some(key) = context.env.get(key_name) {
            env.insert("ANTHROPIC_AUTH_TOKEN".to_owned(), key.to_owned());
        }
        env.insert("ANTHROPIC_BASE_URL".to_owned(), base_url.to_owned());
        env.insert("ANTHROPIC_API_KEY".to_owned(), String::new());
    }
    // A base URL the user set on purpose (a gateway, a local server) is kept.
    if let Some(base) = context.inherited.get("ANTHROPIC_BASE_URL") {
        env.entry("ANTHROPIC_BASE_URL".to_owned()).or_insert_with(|| base.clone());
    }
    env.insert("CLAUDE_CONFIG_DIR".to_owned(), context.runner_stage_dir.display().to_string());
    env.insert("CLAUDE_CODE_DISABLE_AUTO_MEMORY".to_owned(), "1".to_owned());
    let scrub = subprocess_scrub(context, references_used, warnings);
    env.insert("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB".to_owned(), if scrub { "1" } else { "0" }.to_owned());
    env.insert("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_owned(), "1".to_owned());
    env.insert("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned());
    remove_env.retain(|name| !env.contains_key(name));
    (env, remove_env)
}

/// `claude -p` in stream-json with the staged instructions, MCP configuration and settings, every other
/// workspace and the outbox added, and the task after `--` (`--add-dir` and `--mcp-config` take several
/// values: `--` keeps the task from being read as one).
fn command(context: &StageContext<'_>, max_turns: Option<u64>) -> Vec<String> {
    let runner_dir = context.runner_stage_dir;
    let mut command: Vec<String> = [
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        &context.route.model,
        "--append-system-prompt-file",
        &runner_dir.join("workbench-instructions.md").display().to_string(),
        "--strict-mcp-config",
        "--mcp-config",
        &runner_dir.join("mcp.json").display().to_string(),
        "--settings",
        &runner_dir.join("settings.json").display().to_string(),
        "--setting-sources",
        "user",
    ]
    .map(str::to_owned)
    .to_vec();
    for workspace in context.workspaces.iter().skip(1) {
        command.extend(["--add-dir".to_owned(), workspace.path.display().to_string()]);
    }
    command.extend(["--add-dir".to_owned(), context.outbox.display().to_string()]);
    if let Some(turns) = max_turns {
        command.extend(["--max-turns".to_owned(), turns.to_string()]);
    }
    // A session's conversation gets its id now; the next turn resumes it (`--resume`).
    if context.session {
        command.extend(["--session-id".to_owned(), super::random_uuid()]);
    }
    // Interactive: the task and the answers to what it asks come on stdin, and a positional task would be ignored.
    if context.interactive {
        command.extend(claude_control::INTERACTIVE_FLAGS.map(str::to_owned));
    } else {
        command.extend(["--".to_owned(), context.task.to_owned()]);
    }
    command
}
