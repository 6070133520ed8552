//! A turn's canonical events as ACP `session/update`s, the runner's requests as `session/request_permission`,
//! and a pending outcome's files offered one by one for review and applied with the per-file apply.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde_json::{Value, json};
use wb_engine::events::{Event, EventKind};
use wb_engine::input::{Asked, Choice, Request};
use wb_engine::runs::Logged;
use wb_engine::runs::answers::{Given, answer};

use super::Agent;

/// The most text a prompt may carry.
const PROMPT_LIMIT: usize = 1024 * 1024;

/// The task of a prompt: its text blocks, with embedded resources given as text and links by their URI.
pub(super) fn prompt_text(blocks: &Value) -> Option<String> {
    let mut parts = Vec::new();
    for block in blocks.as_array()? {
        let text = |key: &str| block.get(key).and_then(Value::as_str);
        match text("type") {
            Some("text") => parts.push(text("text").unwrap_or_default().to_owned()),
            Some("resource_link") => parts.push(format!("@{}", text("uri").unwrap_or_default())),
            Some("resource") => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or_default();
                if let Some(body) = resource.get("text").and_then(Value::as_str) {
                    parts.push(format!("{uri}:\n```\n{body}\n```"));
                } else {
                    parts.push(format!("@{uri}"));
                }
            }
            _ => {}
        }
    }
    let task = parts.join("\n\n");
    (!task.trim().is_empty() && task.len() <= PROMPT_LIMIT).then_some(task)
}

/// The ACP kind of a tool, by its native name.
fn tool_kind(name: &str) -> &'static str {
    match name.to_ascii_lowercase().as_str() {
        "read" | "notebookread" => "read",
        "write" | "edit" | "multiedit" | "patch" | "apply_patch" | "notebookedit" => "edit",
        "bash" | "shell" | "exec" => "execute",
        "grep" | "glob" | "find" | "ls" | "list" | "codesearch" => "search",
        "webfetch" | "fetch" | "websearch" => "fetch",
        "todowrite" | "think" => "think",
        _ => "other",
    }
}

/// The update an event makes, if any. `cwd` makes a relative target absolute.
pub(super) fn update(event: &Event, cwd: &Path) -> Option<Value> {
    let data = &event.data;
    let text = |key: &str| data.get(key).and_then(Value::as_str);
    match event.known()? {
        EventKind::OutputText => {
            let chunk = text("text").filter(|t| !t.is_empty())?;
            Some(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": chunk}}))
        }
        EventKind::ToolStarted => {
            let name = text("name").unwrap_or("tool");
            let mut call = json!({
                "sessionUpdate": "tool_call",
                "toolCallId": text("id")?,
                "title": text("title").unwrap_or(name),
                "kind": tool_kind(name),
                "status": "in_progress",
            });
            if let Some(target) = text("target") {
                let path = if Path::new(target).is_absolute() { PathBuf::from(target) } else { cwd.join(target) };
                call["locations"] = json!([{"path": path.display().to_string()}]);
            }
            Some(call)
        }
        EventKind::ToolCompleted => {
            let failed = text("status") == Some("failed");
            let mut call = json!({"sessionUpdate": "tool_call_update", "toolCallId": text("id")?,
                "status": if failed { "failed" } else { "completed" }});
            if let Some(message) = text("message") {
                call["content"] = json!([{"type": "content", "content": {"type": "text", "text": message}}]);
            }
            Some(call)
        }
        EventKind::PlanUpdated => {
            let items = data.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
            let entries: Vec<Value> = items
                .iter()
                .map(|item| {
                    json!({"content": item.get("text").and_then(Value::as_str).unwrap_or_default(),
                        "priority": "medium",
                        "status": item.get("status").and_then(Value::as_str).unwrap_or("pending")})
                })
                .collect();
            Some(json!({"sessionUpdate": "plan", "entries": entries}))
        }
        _ => None,
    }
}

/// The `session/request_permission` calls a request makes (one per question of a question request), each with
/// the options and what each option answers.
pub(super) fn permission_calls(session: &str, request: &Request) -> Vec<(Value, Vec<(String, String)>)> {
    let option = |id: &str, name: &str, kind: &str| json!({"optionId": id, "name": name, "kind": kind});
    match &request.asked {
        Asked::Permission { message, options, tool } => {
            let mut offered = Vec::new();
            let mut answers = Vec::new();
            for choice in options {
                let (name, kind) = match choice {
                    Choice::Allow => ("Allow", "allow_once"),
                    Choice::AllowAlways => ("Allow for the rest of this run", "allow_always"),
                    Choice::Deny => ("Deny", "reject_once"),
                };
                offered.push(option(choice.as_str(), name, kind));
                answers.push((choice.as_str().to_owned(), choice.as_str().to_owned()));
            }
            let call = json!({"toolCallId": request.id, "title": message,
                "kind": tool_kind(tool.as_deref().unwrap_or_default()), "status": "pending"});
            vec![(json!({"sessionId": session, "toolCall": call, "options": offered}), answers)]
        }
        Asked::Question { questions } => questions
            .iter()
            .enumerate()
            .map(|(index, question)| {
                let mut offered: Vec<Value> = Vec::new();
                let mut answers = Vec::new();
                for (at, choice) in question.options.iter().enumerate() {
                    let id = format!("option-{at}");
                    offered.push(option(&id, &choice.label, "allow_once"));
                    answers.push((id, choice.label.clone()));
                }
                offered.push(option("dismiss", "Dismiss the question", "reject_once"));
                let title = match &question.header {
                    Some(header) => format!("{header}: {}", question.question),
                    None => question.question.clone(),
                };
                let call = json!({"toolCallId": format!("{}-{index}", request.id), "title": title, "kind": "other",
                    "status": "pending"});
                (json!({"sessionId": session, "toolCall": call, "options": offered}), answers)
            })
            .collect(),
        Asked::Authentication { .. } => Vec::new(),
    }
}

/// The option the client selected, from `session/request_permission`'s result.
fn selected(result: Option<&Value>) -> Option<&str> {
    let outcome = result?.get("outcome")?;
    (outcome.get("outcome").and_then(Value::as_str) == Some("selected"))
        .then(|| outcome.get("optionId").and_then(Value::as_str))
        .flatten()
}

/// Follows one turn for the client: its updates, its requests asked and answered, how it ended.
pub(super) struct Follower<'a> {
    agent: &'a Agent,
    session: &'a str,
    cwd: &'a Path,
    home: &'a Path,
    run_id: &'a str,
    stop: &'a AtomicBool,
    /// The runtime the run said it started on.
    pub(super) runtime: Option<String>,
    /// Why the run failed, when it did.
    pub(super) failure: Option<String>,
}

impl<'a> Follower<'a> {
    pub(super) fn new(
        agent: &'a Agent,
        session: &'a str,
        cwd: &'a Path,
        home: &'a Path,
        run_id: &'a str,
        stop: &'a AtomicBool,
    ) -> Follower<'a> {
        Follower { agent, session, cwd, home, run_id, stop, runtime: None, failure: None }
    }

    pub(super) fn event(&mut self, logged: &Logged) {
        let Some(event) = logged.event() else { return };
        match event.known() {
            Some(EventKind::RunStarted) => self.runtime = event.text("runtime").map(str::to_owned),
            Some(EventKind::RunFailed) => self.failure = event.text("message").map(str::to_owned),
            Some(EventKind::InputRequested | EventKind::QuestionRequested) => {
                if let Some(request) = Request::from_event(event) {
                    self.ask(&request);
                }
                return;
            }
            _ => {}
        }
        if let Some(update) = update(event, self.cwd) {
            self.agent.notify("session/update", json!({"sessionId": self.session, "update": update}));
        }
    }

    /// Asks the client, and answers the run with what the client chose (a refusal when it cancelled). A request
    /// already answered elsewhere (the CLI, another editor) is not asked; an answer that came first wins.
    fn ask(&self, request: &Request) {
        if !self.pending(&request.id) {
            return;
        }
        if let Asked::Authentication { message } = &request.asked {
            let text = format!("The runner needs a sign-in, which cannot be given here: {message}");
            let update = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
            self.agent.notify("session/update", json!({"sessionId": self.session, "update": update}));
            return;
        }
        let mut chosen = Vec::new();
        for (params, answers) in permission_calls(self.session, request) {
            let result = self.agent.request("session/request_permission", params, self.stop);
            let picked = selected(result.as_ref()).and_then(|id| answers.iter().find(|(option, _)| option == id));
            match picked {
                Some((_, word)) => chosen.push(word.clone()),
                None => {
                    let _ = answer(self.home, self.run_id, &request.id, Given::Reject);
                    return;
                }
            }
        }
        let text = match &request.asked {
            Asked::Question { .. } => {
                Value::Array(chosen.into_iter().map(|label| json!([label])).collect()).to_string()
            }
            _ => chosen.into_iter().next().unwrap_or_default(),
        };
        // Already answered elsewhere, or the run moved on: nothing more to do.
        let _ = answer(self.home, self.run_id, &request.id, Given::Text(&text));
    }

    /// Whether request `id` still waits. The run's record is written just after its event: a request not in it
    /// yet is looked for again for a moment before it is taken as answered already.
    fn pending(&self, id: &str) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            let record = wb_engine::runs::read_record(self.home, self.run_id);
            if record.as_ref().is_ok_and(|record| record.pending.iter().any(|request| request.id == id)) {
                return true;
            }
            let live = record.is_ok_and(|record| record.state().is_live());
            if !live || std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// After a turn on a runtime that edits a copy: each file of the run's pending outcome as a diff the client
/// reviews, applied (`apply --only`) when taken. Files not taken stay pending, and the client is told how to
/// take them later.
pub(super) fn offer_outcome(agent: &Agent, session: &str, run_id: &str, stop: &AtomicBool) {
    let say = |text: String| {
        let update = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
        agent.notify("session/update", json!({"sessionId": session, "update": update}));
    };
    let offered = match super::outcome::offer(agent, session, run_id, stop) {
        Ok(Some(summary)) => summary,
        Ok(None) => return,
        Err(error) => format!("\n\nThe run's outcome could not be offered: {error}"),
    };
    say(offered);
}

#[cfg(test)]
mod tests {
    use super::*;
    use wb_engine::input::{Question, QuestionOption};

    fn event(kind: EventKind, data: Value) -> Event {
        Event {
            protocol: 0,
            run_id: "wb_0".into(),
            sequence: 1,
            timestamp: String::new(),
            kind: kind.as_str().into(),
            runner: "claude-code".into(),
            data,
        }
    }

    #[test]
    fn events_become_the_updates_acp_defines() {
        let cwd = Path::new("/repo");
        let text = update(&event(EventKind::OutputText, json!({"text": "Hello"})), cwd).unwrap_or_default();
        assert_eq!(text["sessionUpdate"], "agent_message_chunk");
        assert_eq!(text["content"], json!({"type": "text", "text": "Hello"}));
        let started = json!({"id": "t1", "name": "Write", "target": "notes.txt"});
        let call = update(&event(EventKind::ToolStarted, started), cwd).unwrap_or_default();
        assert_eq!(call["kind"], "edit");
        assert_eq!(call["title"], "Write");
        assert_eq!(call["locations"][0]["path"], "/repo/notes.txt");
        let done = json!({"id": "t1", "name": "Write", "status": "failed", "message": "denied"});
        let done = update(&event(EventKind::ToolCompleted, done), cwd).unwrap_or_default();
        assert_eq!(done["status"], "failed");
        let plan = json!({"items": [{"text": "Write tests", "status": "in_progress"}], "completed": 0, "total": 1});
        let plan = update(&event(EventKind::PlanUpdated, plan), cwd).unwrap_or_default();
        assert_eq!(plan["entries"], json!([{"content": "Write tests", "priority": "medium", "status": "in_progress"}]));
        assert!(update(&event(EventKind::UsageUpdated, json!({})), cwd).is_none());
    }

    #[test]
    fn a_permission_offers_the_runner_choices_and_a_question_one_call_per_question() {
        let request = Request::new(Asked::Permission {
            message: "Bash: rm x".into(),
            options: vec![Choice::Allow, Choice::Deny, Choice::AllowAlways],
            tool: Some("Bash".into()),
        });
        let calls = permission_calls("s1", &request);
        assert_eq!(calls.len(), 1);
        let kinds: Vec<&str> =
            calls[0].0["options"].as_array().into_iter().flatten().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["allow_once", "reject_once", "allow_always"]);
        assert_eq!(calls[0].0["toolCall"]["kind"], "execute");
        let question = |text: &str| Question {
            question: text.into(),
            header: None,
            options: vec![QuestionOption { label: "Red".into(), description: None }],
            multiple: false,
            custom: true,
        };
        let asked = Request::new(Asked::Question { questions: vec![question("Colour?"), question("Shade?")] });
        let calls = permission_calls("s1", &asked);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].1, [("option-0".to_owned(), "Red".to_owned())]);
        let picked = json!({"outcome": {"outcome": "selected", "optionId": "option-0"}});
        assert_eq!(selected(Some(&picked)), Some("option-0"));
        assert_eq!(selected(Some(&json!({"outcome": {"outcome": "cancelled"}}))), None);
    }

    #[test]
    fn a_prompt_is_its_text_with_resources_inline() {
        let blocks = json!([{"type": "text", "text": "Fix it"},
            {"type": "resource", "resource": {"uri": "file:///repo/a.rs", "text": "fn main() {}"}},
            {"type": "resource_link", "uri": "file:///repo/b.rs", "name": "b.rs"}, {"type": "image", "data": ""}]);
        let text = prompt_text(&blocks).unwrap_or_default();
        assert!(text.starts_with("Fix it\n\nfile:///repo/a.rs:\n```\nfn main() {}\n```"), "{text}");
        assert!(text.ends_with("@file:///repo/b.rs"), "{text}");
        assert!(prompt_text(&json!([{"type": "text", "text": "  "}])).is_none());
    }
}
