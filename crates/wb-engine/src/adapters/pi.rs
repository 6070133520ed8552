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
            (
                "steering",
                Support::Degraded(
                    "send --steer is Pi's RPC steer, taken at its next turn, on the local and docker runtimes, \
                     not on e2b and daytona",
                ),
            ),
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
        // Interactive: RPC mode, the task and steers as commands on stdin; else one print run with the task last.
        let mut command = match context.interactive {
            true => vec!["pi".to_owned(), "--mode".to_owned(), "rpc".to_owned()],
            false => vec!["pi".to_owned(), "--mode".to_owned(), "json".to_owned(), "--print".to_owned()],
        };
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
        let stdin = match context.interactive {
            true => self.opening_input(&command, context.task, None),
            false => {
                command.push(task_argument(context.task));
                None
            }
        };
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
            stdin,
            server: None,
        })
    }

    fn next_turn(&self, first: &[String], task: &str, _conversation: Option<&str>) -> Result<Vec<String>> {
        if !first.iter().any(|argument| argument == "--session-dir") {
            return Err(EngineError::message("The first turn of the session was not started as a session"));
        }
        if rpc(first) {
            // The task comes on stdin (`opening_input`).
            let mut next = first.to_vec();
            if !next.iter().any(|argument| argument == "--continue") {
                next.push("--continue".to_owned());
            }
            return Ok(next);
        }
        let mut next = super::with_task(first, task_argument(task));
        let at = next.len() - 1;
        next.insert(at, "--continue".to_owned());
        Ok(next)
    }

    fn opening_input(&self, command: &[String], task: &str, _conversation: Option<&str>) -> Option<String> {
        rpc(command).then(|| json!({"id": "wb_task", "type": "prompt", "message": task}).to_string())
    }

    fn steer_input(&self, id: &str, text: &str, state: &mut TranslateState) -> Option<String> {
        // Pi gives a steer no id: it is known again by its text, when Pi adds it to the conversation.
        state.steers.insert(text.to_owned(), id.to_owned());
        Some(json!({"type": "steer", "message": text}).to_string())
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
                match event.pointer("/message/role").and_then(Value::as_str) {
                    Some("assistant") => state.new_message = true,
                    // A steer Pi took into the conversation.
                    Some("user") => {
                        let text = message_text(event.pointer("/message/content"));
                        if let Some(id) = state.steers.remove(&text) {
                            return vec![Translated::new(EventKind::InputDelivered, json!({"id": id}))];
                        }
                    }
                    _ => {}
                }
                vec![Translated::native(kind)]
            }
            // RPC mode: the turn has ended (stdin then closes, and Pi exits).
            "agent_end" => {
                state.finished = true;
                vec![Translated::native(kind)]
            }
            // A command Pi refused: the task's prompt ends the run.
            "response" => {
                if event.get("success").and_then(Value::as_bool) == Some(false)
                    && event.get("id").and_then(Value::as_str) == Some("wb_task")
                {
                    let error = event.get("error").and_then(Value::as_str).unwrap_or("Pi refused the task");
                    state.failed = Some(error.to_owned());
                    state.finished = true;
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
/// Whether `command` runs Pi in RPC mode (interactive).
fn rpc(command: &[String]) -> bool {
    command.windows(2).any(|pair| pair[0] == "--mode" && pair[1] == "rpc")
}

/// The text of a message's content: a string, or its text parts joined.
fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
        }
        _ => String::new(),
    }
}

fn task_argument(task: &str) -> String {
    if task.starts_with(['-', '@']) { format!(" {task}") } else { task.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pi takes no `--`: on its command line (a print run, in a sandbox) a task that would read as an option or a
    /// file to include gets a leading space.
    #[test]
    fn a_task_on_the_command_line_never_reads_as_an_option() {
        assert_eq!(task_argument("--version"), " --version");
        assert_eq!(task_argument("@notes.md summarise"), " @notes.md summarise");
        assert_eq!(task_argument("plain"), "plain");
    }

    #[test]
    fn a_steer_is_known_again_by_its_text_when_pi_takes_it() {
        let mut state = TranslateState::default();
        let line = Pi.steer_input("in_00000001", "mention the moon", &mut state).unwrap_or_default();
        assert_eq!(
            serde_json::from_str::<Value>(&line).ok(),
            Some(json!({"type": "steer", "message": "mention the moon"}))
        );
        let taken = json!({"type": "message_start", "message": {"role": "user",
            "content": [{"type": "text", "text": "mention the moon"}]}});
        let events = Pi.translate_event(&taken, &mut state);
        assert_eq!(events[0].kind, EventKind::InputDelivered);
        assert_eq!(events[0].data, json!({"id": "in_00000001"}));
        assert!(state.steers.is_empty());
        let refused =
            json!({"type": "response", "id": "wb_task", "command": "prompt", "success": false, "error": "no model"});
        Pi.translate_event(&refused, &mut state);
        assert!(state.finished && state.failed.as_deref() == Some("no model"));
    }
}
