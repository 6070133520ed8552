//! Pi: `pi --mode json --print`, with a staged `PI_CODING_AGENT_DIR` (the runner_config directory, skills and
//! `APPEND_SYSTEM.md`). Pi has no native MCP transport.
//!
//! Verified against @mariozechner/pi-coding-agent 0.73.1 (crates/wb-lsp/tests/real_runners.rs). Print mode
//! contacts nothing but the model; `PI_OFFLINE=1` (always set) stops its find/grep tools from downloading fd or
//! ripgrep from GitHub (docs/runners.md).

use serde_json::{Value, json};

use super::{Adapter, StageContext, Support, TranslateState, Translation, base_environment, combined_instructions};
use crate::error::{EngineError, Result};
use crate::events::{EventKind, Translated};

pub struct Pi;

pub const PI_MCP_MESSAGE: &str =
    "Pi does not provide a native MCP transport. This Workbench requires an explicit Pi extension before it can run.";

impl Adapter for Pi {
    fn identity(&self) -> &'static super::Identity {
        &super::Identity {
            name: "pi",
            executable: "pi",
            npm_package: "@mariozechner/pi-coding-agent",
            verified_versions: &["0.73.1"],
        }
    }

    fn capabilities(&self) -> Vec<(&'static str, Support)> {
        super::capability_map(&[
            ("streamed_text", Support::Supported),
            ("usage", Support::Supported),
            ("permissions", Support::Unsupported("Pi has no permission prompts: its tools run without asking")),
            ("questions", Support::Unsupported("Pi has no question protocol")),
        ])
    }

    fn translate(&self, context: &StageContext<'_>) -> Result<Translation> {
        let package = context.package;
        if !package.manifest.mcps.is_empty() {
            return Err(EngineError::unsupported(PI_MCP_MESSAGE));
        }
        let dir = context.stage_dir;
        let mut shipped = None;
        if let Some(path) = super::runner_config_path(package) {
            super::stage_runner_config_dir(package, &path, dir)?;
            shipped = super::runner_config_text(package, &path.join("APPEND_SYSTEM.md")).ok();
        }
        let skills = super::stage_skills(context)?;
        let system = combined_instructions(context, shipped.as_deref())?;
        super::write_file(&dir.join("APPEND_SYSTEM.md"), &system, 0o444)?;
        // The user's Pi sign-in, linked (never copied) when it exists.
        if let Some(home) = context.inherited.get("HOME") {
            let auth = std::path::Path::new(&home).join(".pi/agent/auth.json");
            if auth.is_file() {
                #[cfg(unix)]
                let _ = std::os::unix::fs::symlink(&auth, dir.join("auth.json"));
            }
        }
        // Pi's tools never ask, so nothing but a read-only mount (the docker runtime's) keeps a workspace read-only.
        let mut warnings = Vec::new();
        if context.runner_stage_dir == context.stage_dir {
            for workspace in context.workspaces.iter().filter(|w| w.access == wb_manifest::Access::ReadOnly) {
                if let Some(name) = &workspace.name {
                    warnings.push(format!(
                        "Pi cannot keep workspace {name} read-only on the local runtime: its tools run without asking (the docker runtime mounts it read-only)"
                    ));
                }
            }
        }
        let mut env = base_environment(context);
        env.insert("PI_CODING_AGENT_DIR".to_owned(), context.runner_stage_dir.display().to_string());
        // No start-up network operations: Pi's find and grep tools would otherwise download fd or ripgrep from
        // GitHub when missing (verified against 0.73.1); an engine run uses what the runtime provides.
        env.insert("PI_OFFLINE".to_owned(), "1".to_owned());
        let primary = context.workspaces.first().map(|w| w.path.clone()).unwrap_or_default();
        let mut command = vec!["pi".to_owned(), "--mode".to_owned(), "json".to_owned(), "--print".to_owned()];
        // A session keeps its conversation in the stage directory, where `--continue` finds it.
        match context.session {
            true => command
                .extend(["--session-dir".to_owned(), context.runner_stage_dir.join("sessions").display().to_string()]),
            false => command.push("--no-session".to_owned()),
        }
        command.extend([
            "--no-context-files".to_owned(),
            "--provider".to_owned(),
            context.route.native_provider.clone(),
            "--model".to_owned(),
            context.route.model.clone(),
        ]);
        for skill in &skills {
            command.push("--skill".to_owned());
            command.push(context.runner_stage_dir.join("skills").join(skill).display().to_string());
        }
        command.push(task_argument(context.task));
        Ok(Translation {
            command,
            cwd: primary,
            env,
            remove_env: context.unselected_variables.to_vec(),
            native_key: "pi_config",
            native: json!({"directory": context.runner_stage_dir.display().to_string(), "append_system": "APPEND_SYSTEM.md"}),
            staged_files: super::list_staged(dir),
            skills,
            warnings,
            disabled_mcps: Vec::new(),
            stdin: None,
        })
    }

    fn next_turn(&self, first: &[String], task: &str, _conversation: Option<&str>) -> Result<Vec<String>> {
        if !first.iter().any(|argument| argument == "--session-dir") {
            return Err(EngineError::message("The first turn of the session was not started as a session"));
        }
        let mut next = super::with_task(first, task_argument(task));
        let at = next.len() - 1;
        next.insert(at, "--continue".to_owned());
        Ok(next)
    }

    fn conversation_store(&self) -> Option<&'static str> {
        Some("sessions")
    }

    fn translate_event(&self, event: &Value, state: &mut TranslateState) -> Vec<Translated> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("unknown");
        match kind {
            "message_update" => match event.pointer("/assistantMessageEvent/type").and_then(Value::as_str) {
                Some("text_delta") => {
                    let text =
                        event.pointer("/assistantMessageEvent/delta").and_then(Value::as_str).unwrap_or_default();
                    // The final answer is the last assistant message's text, not every message's.
                    if std::mem::take(&mut state.new_message) {
                        state.final_text.clear();
                    }
                    state.final_text.push_str(text);
                    vec![Translated::new(EventKind::OutputText, json!({"text": text}))]
                }
                Some(other) => vec![Translated::native(&format!("message_update.{other}"))],
                None => vec![Translated::native(kind)],
            },
            "message_start" => {
                if event.pointer("/message/role").and_then(Value::as_str) == Some("assistant") {
                    state.new_message = true;
                }
                vec![Translated::native(kind)]
            }
            "tool_execution_start" => {
                let id = event.get("toolCallId").and_then(Value::as_str).unwrap_or("tool").to_owned();
                let name = event.get("toolName").and_then(Value::as_str).unwrap_or("tool").to_owned();
                let mut data = json!({"id": id, "name": name});
                if let Some(target) =
                    event.pointer("/args/path").or_else(|| event.pointer("/args/file_path")).and_then(Value::as_str)
                {
                    data["target"] = json!(target);
                }
                state.tools.insert(id, serde_json::to_string(&data).unwrap_or_default());
                vec![Translated::new(EventKind::ToolStarted, data)]
            }
            "tool_execution_end" => {
                let id = event.get("toolCallId").and_then(Value::as_str).unwrap_or("tool").to_owned();
                let started: Value = state.tools.get(&id).and_then(|s| serde_json::from_str(s).ok()).unwrap_or_else(
                    || json!({"id": id, "name": event.get("toolName").and_then(Value::as_str).unwrap_or("tool")}),
                );
                let failed = event.get("isError").and_then(Value::as_bool).unwrap_or(false);
                super::tool_completed(started, failed, None)
            }
            "message_end" => {
                let usage = event.pointer("/message/usage").cloned().unwrap_or(Value::Null);
                if usage.is_null() {
                    // A message to the model (the task) carries no usage.
                    return vec![Translated::native(kind)];
                }
                let counters = [
                    ("input_tokens", "/input"),
                    ("output_tokens", "/output"),
                    ("cache_read_tokens", "/cacheRead"),
                    ("cache_write_tokens", "/cacheWrite"),
                ];
                let data = super::usage_delta(&usage, &counters, usage.pointer("/cost/total").and_then(Value::as_f64));
                if let Some(message) = event.pointer("/message/errorMessage").and_then(Value::as_str) {
                    state.failed = Some(message.to_owned());
                }
                vec![Translated::new(EventKind::UsageUpdated, data)]
            }
            other => vec![Translated::native(other)],
        }
    }
}

/// The task as Pi's last argument. Pi takes no `--`: an argument starting with `-` is an option and one
/// starting with `@` a file to include (verified against 0.73.1), so such a task gets a leading space.
fn task_argument(task: &str) -> String {
    if task.starts_with(['-', '@']) { format!(" {task}") } else { task.to_owned() }
}
