//! OpenCode's events as canonical events: those of `opencode run --format json`, and those of its server
//! (`opencode serve`, verified with 1.18.33), whose parts are translated the same way; and the engine's answers
//! as the server's replies. The bridge (`opencode_server`) hands over each event of the run's OpenCode
//! session as one line (`{"type", "properties"}`), plus lines of its own (`wb.session`, `wb.error`,
//! `wb.warning`); it takes back the lines built here (`{"op": "prompt" | "post", …}`) and makes the HTTP calls.
//!
//! A tool's permission comes as `permission.asked` (answered on `/permission/{id}/reply` with `once`, `always`
//! or `reject`; a reject with a message lets the model go on with it), a question as `question.asked`
//! (`/question/{id}/reply` with one list of labels per question, or `/question/{id}/reject`, which ends
//! OpenCode's turn). A steer is a user message posted while the turn runs: it is delivered when an assistant
//! message names it (or a later one) as its parent.

use serde_json::{Value, json};

use super::TranslateState;
use super::native_asks::bounded;
use crate::events::{EventKind, Translated};
use crate::input::{Answer, Asked, Choice, Request};

/// The bridge's line that starts a turn: the task, in the conversation `session` when it carries one on.
pub(super) fn prompt(task: &str, session: Option<&str>) -> String {
    json!({"op": "prompt", "text": task, "session": session}).to_string()
}

/// Whether `id` is an id OpenCode gave (letters, digits, `_`): it goes into a request path as it is.
fn plain_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn post(path: String, body: Value) -> String {
    json!({"op": "post", "path": path, "body": body}).to_string()
}

/// A new user message id that sorts after every message OpenCode made so far (it orders messages by id):
/// `msg_`, 12 hex digits of the time in milliseconds (times 4096), 14 random characters.
fn message_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default();
    let stamp = millis.wrapping_mul(0x1000) & 0xffff_ffff_ffff;
    format!("msg_{stamp:012x}{}", &wb_outcomes::random_hex(7))
}

/// A steer: a user message posted to the running session, its id kept in `state` so its delivery can be told.
pub(super) fn steer(id: &str, text: &str, state: &mut TranslateState) -> Option<String> {
    let session = state.conversation.clone().filter(|s| plain_id(s))?;
    let message = message_id();
    state.steers.insert(message.clone(), id.to_owned());
    Some(post(
        format!("/session/{session}/prompt_async"),
        json!({"parts": [{"type": "text", "text": text}], "messageID": message}),
    ))
}

/// The reply that gives OpenCode `answer` to `request`; `None` when the request is not one it made (or it was
/// settled already).
pub(super) fn reply(request: &Request, answer: &Answer, state: &mut TranslateState) -> Option<String> {
    let kept = state.asked.remove(&request.id)?;
    let native = kept.get("id").and_then(Value::as_str).filter(|id| plain_id(id))?;
    let refused = |why: &str| json!({"reply": "reject", "message": why});
    match (kept.get("native").and_then(Value::as_str)?, answer) {
        ("permission", Answer::Choice { choice }) => {
            let body = match choice {
                Choice::Allow => json!({"reply": "once"}),
                Choice::AllowAlways => json!({"reply": "always"}),
                Choice::Deny => refused("The person denied this tool call."),
            };
            Some(post(format!("/permission/{native}/reply"), body))
        }
        ("permission", Answer::Reject { reason }) => {
            let why = format!("The person refused this: {}", reason.as_deref().unwrap_or("no reason given"));
            Some(post(format!("/permission/{native}/reply"), refused(&why)))
        }
        ("question", Answer::Answers { answers }) => {
            Some(post(format!("/question/{native}/reply"), json!({"answers": answers})))
        }
        ("question", Answer::Reject { .. }) => Some(post(format!("/question/{native}/reject"), json!({}))),
        _ => None,
    }
}

/// The canonical events of one line from the bridge.
pub(super) fn translate(event: &Value, state: &mut TranslateState) -> Vec<Translated> {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("unknown");
    let properties = event.get("properties").cloned().unwrap_or(Value::Null);
    let text = |pointer: &str| properties.pointer(pointer).and_then(Value::as_str);
    match kind {
        "wb.session" => {
            state.conversation = event.get("sessionID").and_then(Value::as_str).map(str::to_owned);
            Vec::new()
        }
        "wb.error" => {
            let message = event.get("message").and_then(Value::as_str).unwrap_or("OpenCode's server failed");
            state.failed = Some(message.to_owned());
            Vec::new()
        }
        "wb.warning" => {
            let message = event.get("message").and_then(Value::as_str).unwrap_or_default();
            vec![Translated::new(EventKind::RunnerEvent, json!({"native_type": "server", "warning": message}))]
        }
        "message.part.updated" => part(&properties, state),
        "message.updated" => message(&properties, state),
        "session.idle" => {
            state.finished = state.failed.is_none();
            Vec::new()
        }
        "session.error" => {
            // A cancelled turn aborts its message: the run says it was cancelled, not that it failed.
            if text("/error/name") != Some("MessageAbortedError") {
                let message = text("/error/data/message").unwrap_or("OpenCode reported an error");
                state.failed = Some(bounded(message));
            }
            Vec::new()
        }
        "todo.updated" => {
            let todos = properties.get("todos").and_then(Value::as_array).cloned().unwrap_or_default();
            vec![crate::plan::updated(&todos, "content", "status")]
        }
        "permission.asked" | "question.asked" => asked_event(kind, &properties, state),
        "permission.replied" | "question.replied" | "question.rejected" => settled(kind, &properties, state),
        "session.status" | "session.updated" | "session.diff" | "message.part.delta" => Vec::new(),
        other => vec![Translated::native(other)],
    }
}

/// A part of a message: the assistant's text once complete, a tool call as it goes, a step's usage.
fn part(properties: &Value, state: &mut TranslateState) -> Vec<Translated> {
    let part = properties.get("part").cloned().unwrap_or(Value::Null);
    let message = part.get("messageID").and_then(Value::as_str).unwrap_or_default();
    if state.user_messages.contains(message) {
        return Vec::new();
    }
    let as_run_event = |kind: &str| json!({"type": kind, "part": part});
    match part.get("type").and_then(Value::as_str) {
        Some("text") if part.pointer("/time/end").is_some() && part.get("synthetic") != Some(&Value::Bool(true)) => {
            translate_run_event(&as_run_event("text"), state)
        }
        Some("tool") => translate_run_event(&as_run_event("tool_use"), state),
        Some("step-finish") => translate_run_event(&as_run_event("step_finish"), state),
        _ => Vec::new(),
    }
}

/// A message as it changes: a user message is remembered (its parts are the person's, not the runner's); an
/// assistant message whose parent is a steer (or a later message) says the runner took the steer.
fn message(properties: &Value, state: &mut TranslateState) -> Vec<Translated> {
    let info = properties.get("info").cloned().unwrap_or(Value::Null);
    let id = info.get("id").and_then(Value::as_str).unwrap_or_default();
    match info.get("role").and_then(Value::as_str) {
        Some("user") => {
            if state.user_messages.len() < 10_000 {
                state.user_messages.insert(id.to_owned());
            }
            Vec::new()
        }
        Some("assistant") => {
            let Some(parent) = info.get("parentID").and_then(Value::as_str) else { return Vec::new() };
            let taken: Vec<String> =
                state.steers.range(..=parent.to_owned()).map(|(message, _)| message.clone()).collect();
            taken
                .into_iter()
                .filter_map(|message| state.steers.remove(&message))
                .map(|steer| Translated::new(EventKind::InputDelivered, json!({"id": steer})))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A permission request or questions, kept in `state` for the answer.
fn asked_event(kind: &str, properties: &Value, state: &mut TranslateState) -> Vec<Translated> {
    let Some(native) = properties.get("id").and_then(Value::as_str).filter(|id| plain_id(id)) else {
        return vec![Translated::native(kind)];
    };
    let asked = if kind == "question.asked" {
        let list = properties.get("questions").and_then(Value::as_array).cloned().unwrap_or_default();
        let questions = super::native_asks::questions(&list, "multiple");
        if questions.is_empty() {
            return vec![Translated::native(kind)];
        }
        Asked::Question { questions }
    } else {
        permission(properties)
    };
    let request = Request::new(asked);
    let native_kind = if kind == "question.asked" { "question" } else { "permission" };
    state.asked.insert(request.id.clone(), json!({"native": native_kind, "id": native}));
    vec![request.event()]
}

/// What a permission request asks: the permission and what it is for (the command, the path), with "allow
/// always" where OpenCode offers patterns to remember.
fn permission(properties: &Value) -> Asked {
    let name = properties.get("permission").and_then(Value::as_str).map(bounded).unwrap_or_else(|| "a tool".into());
    let patterns: Vec<&str> =
        properties.get("patterns").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let what = properties
        .pointer("/metadata/command")
        .or_else(|| properties.pointer("/metadata/filepath"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| patterns.join(", "));
    let message = if what.is_empty() { name.clone() } else { bounded(&format!("{name}: {what}")) };
    let mut options = vec![Choice::Allow, Choice::Deny];
    if properties.get("always").and_then(Value::as_array).is_some_and(|always| !always.is_empty()) {
        options.push(Choice::AllowAlways);
    }
    Asked::Permission { message, options, tool: Some(name) }
}

/// A request OpenCode settled by itself (an "always" that covers another pending request, a reject that ends
/// the turn's other requests): it is no longer waited for. The engine's own replies were taken out of `state`
/// when they were given, so they are not said twice.
fn settled(kind: &str, properties: &Value, state: &mut TranslateState) -> Vec<Translated> {
    let native = properties.get("requestID").and_then(Value::as_str);
    let ours: Vec<String> = state
        .asked
        .iter()
        .filter(|(_, kept)| kept.get("id").and_then(Value::as_str) == native)
        .map(|(id, _)| id.clone())
        .collect();
    let reply = properties.get("reply").and_then(Value::as_str);
    ours.into_iter()
        .filter_map(|id| state.asked.remove(&id).map(|kept| (id, kept)))
        .map(|(id, kept)| {
            let asked = match kept.get("native").and_then(Value::as_str) {
                Some("question") => Asked::Question { questions: Vec::new() },
                _ => Asked::Permission { message: String::new(), options: Vec::new(), tool: None },
            };
            let request = Request { id, asked };
            match (kind, reply) {
                ("permission.replied", Some("once")) => request.answered(&Answer::Choice { choice: Choice::Allow }),
                ("permission.replied", Some("always")) => {
                    request.answered(&Answer::Choice { choice: Choice::AllowAlways })
                }
                _ => request.rejected("the runner settled the request itself"),
            }
        })
        .collect()
}

/// One event of `opencode run --format json` (the server's parts are translated the same way).
pub(super) fn translate_run_event(event: &Value, state: &mut TranslateState) -> Vec<Translated> {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("unknown");
    if state.conversation.is_none()
        && let Some(session) = event.get("sessionID").and_then(Value::as_str)
    {
        state.conversation = Some(session.to_owned());
    }
    let part = event.get("part").cloned().unwrap_or(Value::Null);
    match kind {
        "text" => {
            let text = part.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
            state.final_text = text.clone();
            let mut data = json!({"text": text});
            if let Some(id) = part.get("id").and_then(Value::as_str) {
                data["id"] = json!(id);
            }
            vec![Translated::new(EventKind::OutputText, data)]
        }
        "tool_use" => {
            let id = part.get("callID").or_else(|| part.get("id")).and_then(Value::as_str).unwrap_or("tool").to_owned();
            let name = part.get("tool").and_then(Value::as_str).unwrap_or("tool").to_owned();
            let status = part.pointer("/state/status").and_then(Value::as_str).unwrap_or("completed");
            let target = part
                .pointer("/state/input/filePath")
                .or_else(|| part.pointer("/state/input/path"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut started = json!({"id": id, "name": name});
            if let Some(title) = part.pointer("/state/title").and_then(Value::as_str) {
                started["title"] = json!(title);
            }
            if let Some(target) = &target {
                started["target"] = json!(target);
            }
            let mut events = Vec::new();
            if !state.tools.contains_key(&id) {
                state.tools.insert(id.clone(), name.clone());
                events.push(Translated::new(EventKind::ToolStarted, started.clone()));
            }
            if matches!(status, "completed" | "error") {
                let message = part.pointer("/state/error").and_then(Value::as_str);
                events.extend(super::tool_completed(started, status == "error", message));
            }
            events
        }
        "step_finish" => {
            let tokens = part.get("tokens").cloned().unwrap_or(Value::Null);
            let counters = [
                ("input_tokens", "/input"),
                ("output_tokens", "/output"),
                ("reasoning_tokens", "/reasoning"),
                ("cache_read_tokens", "/cache/read"),
                ("cache_write_tokens", "/cache/write"),
            ];
            vec![Translated::new(
                EventKind::UsageUpdated,
                super::usage_delta(&tokens, &counters, part.get("cost").and_then(Value::as_f64)),
            )]
        }
        "error" => {
            let message = event
                .pointer("/error/data/message")
                .or_else(|| event.pointer("/error/message"))
                .and_then(Value::as_str)
                .unwrap_or("OpenCode reported an error");
            state.failed = Some(message.to_owned());
            Vec::new()
        }
        other => vec![Translated::native(other)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str, properties: Value) -> Value {
        json!({"type": kind, "properties": properties})
    }

    #[test]
    fn a_permission_request_is_asked_and_its_answers_are_opencode_replies() {
        let mut state = TranslateState::default();
        let asked = translate(
            &line(
                "permission.asked",
                json!({"id": "per_1", "sessionID": "ses_1", "permission": "bash", "patterns": ["echo hi > a"],
                    "metadata": {"command": "echo hi > a"}, "always": ["echo *"],
                    "tool": {"messageID": "msg_1", "callID": "c1"}}),
            ),
            &mut state,
        );
        let request = Request::from_data(asked[0].kind, &asked[0].data).expect("a request");
        let Asked::Permission { message, options, .. } = &request.asked else { panic!("{request:?}") };
        assert_eq!(message, "bash: echo hi > a");
        assert_eq!(options, &[Choice::Allow, Choice::Deny, Choice::AllowAlways]);
        let line: Value = serde_json::from_str(
            &reply(&request, &Answer::Choice { choice: Choice::Deny }, &mut state).unwrap_or_default(),
        )
        .unwrap_or_default();
        assert_eq!(line["path"], "/permission/per_1/reply");
        assert_eq!(line["body"]["reply"], "reject");
        assert!(line["body"]["message"].as_str().is_some_and(|m| m.contains("denied")), "the model is told");
        assert!(reply(&request, &Answer::Choice { choice: Choice::Allow }, &mut state).is_none(), "answered once");
    }

    #[test]
    fn questions_are_answered_with_labels_and_a_reply_opencode_made_itself_settles_the_request() {
        let mut state = TranslateState::default();
        let asked = translate(
            &line(
                "question.asked",
                json!({"id": "que_1", "sessionID": "s", "questions": [{"question": "Which colour?", "header": "C",
                    "options": [{"label": "Red", "description": "Warm"}, {"label": "Blue"}]}]}),
            ),
            &mut state,
        );
        let request = Request::from_data(asked[0].kind, &asked[0].data).expect("a request");
        let answer = request.answer_from_text("Blue").expect("an offered label");
        let body: Value =
            serde_json::from_str(&reply(&request, &answer, &mut state).unwrap_or_default()).unwrap_or_default();
        assert_eq!(body["path"], "/question/que_1/reply");
        assert_eq!(body["body"]["answers"], json!([["Blue"]]));

        let asked = translate(
            &line("permission.asked", json!({"id": "per_2", "permission": "edit", "patterns": ["a.txt"]})),
            &mut state,
        );
        assert!(Request::from_data(asked[0].kind, &asked[0].data).is_some());
        let settled =
            translate(&line("permission.replied", json!({"requestID": "per_2", "reply": "always"})), &mut state);
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].kind, EventKind::InputAccepted);
        assert!(state.asked.is_empty());
    }

    #[test]
    fn a_steer_is_delivered_when_an_assistant_message_is_parented_on_it_and_user_text_is_not_output() {
        let mut state = TranslateState { conversation: Some("ses_1".into()), ..TranslateState::default() };
        let posted: Value =
            serde_json::from_str(&steer("in_1", "also say hi", &mut state).unwrap_or_default()).unwrap_or_default();
        assert_eq!(posted["path"], "/session/ses_1/prompt_async");
        let message = posted["body"]["messageID"].as_str().unwrap_or_default().to_owned();
        assert!(message.starts_with("msg_") && message.len() == 30, "{message}");
        let user = json!({"info": {"id": message, "role": "user"}});
        assert!(translate(&line("message.updated", user), &mut state).is_empty());
        let text = json!({"part": {"type": "text", "messageID": message, "text": "also say hi", "time": {"end": 1}}});
        assert!(translate(&line("message.part.updated", text), &mut state).is_empty(), "the person's own text");
        let older = json!({"info": {"id": "msg_a", "role": "assistant", "parentID": "msg_000000000000"}});
        assert!(translate(&line("message.updated", older), &mut state).is_empty());
        let newer = json!({"info": {"id": "msg_b", "role": "assistant", "parentID": message}});
        let delivered = translate(&line("message.updated", newer), &mut state);
        assert_eq!(delivered.len(), 1);
        assert_eq!(delivered[0].data["id"], "in_1");
        assert!(state.steers.is_empty());
    }

    #[test]
    fn the_runners_parts_are_its_text_tools_and_usage_and_a_plan_comes_from_its_todos() {
        let mut state = TranslateState::default();
        let part = |part: Value| line("message.part.updated", json!({"part": part}));
        let tool = |status: &str| {
            part(json!({"type": "tool", "messageID": "msg_a", "callID": "c1", "tool": "write",
                "state": {"status": status, "input": {"filePath": "/w/notes.txt"}}}))
        };
        let started = translate(&tool("running"), &mut state);
        assert_eq!(started.iter().map(|e| e.kind).collect::<Vec<_>>(), [EventKind::ToolStarted]);
        let done = translate(&tool("completed"), &mut state);
        let kinds: Vec<EventKind> = done.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::ToolCompleted, EventKind::FileChanged]);
        let unfinished = part(json!({"type": "text", "messageID": "msg_a", "text": "Wri"}));
        assert!(translate(&unfinished, &mut state).is_empty(), "text is taken once complete");
        let text = part(json!({"type": "text", "messageID": "msg_a", "text": "Written.", "time": {"end": 2}}));
        assert_eq!(translate(&text, &mut state)[0].data["text"], "Written.");
        let step = part(json!({"type": "step-finish", "messageID": "msg_a", "tokens": {"input": 3, "output": 4},
            "cost": 0.5}));
        assert_eq!(translate(&step, &mut state)[0].kind, EventKind::UsageUpdated);
        let todos = json!({"todos": [{"content": "Write notes", "status": "completed", "priority": "high"},
            {"content": "Review", "status": "pending", "priority": "low"}]});
        let plan = translate(&line("todo.updated", todos), &mut state);
        assert_eq!(plan[0].kind, EventKind::PlanUpdated);
        assert_eq!((plan[0].data["completed"].as_u64(), plan[0].data["total"].as_u64()), (Some(1), Some(2)));
    }

    #[test]
    fn idle_ends_the_turn_and_an_abort_is_no_failure() {
        let mut state = TranslateState::default();
        let aborted = json!({"error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}}});
        translate(&line("session.error", aborted), &mut state);
        assert!(state.failed.is_none());
        translate(&line("session.idle", json!({"sessionID": "s"})), &mut state);
        assert!(state.finished);
        let mut state = TranslateState::default();
        let failed = json!({"error": {"name": "APIError", "data": {"message": "model unavailable"}}});
        translate(&line("session.error", failed), &mut state);
        translate(&line("session.idle", json!({})), &mut state);
        assert_eq!(state.failed.as_deref(), Some("model unavailable"));
        assert!(!state.finished);
    }
}
