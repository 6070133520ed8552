//! Claude Code's interactive protocol (`--input-format stream-json --permission-prompt-tool stdio`, verified
//! with 2.1.332): the task is a user message on stdin; a tool call its settings neither allow nor deny comes as
//! a `can_use_tool` control request on stdout, answered with a `control_response` on stdin (`AskUserQuestion`
//! comes the same way, answered by allowing it with the answers added to its input); a request the runner
//! withdraws (its turn was interrupted) comes as `control_cancel_request`.

use serde_json::{Map, Value, json};

use super::TranslateState;
use super::native_asks::bounded;
use crate::events::Translated;
use crate::input::{Answer, Asked, Choice, Request};

/// The flags that make Claude Code read its task and answers on stdin and ask on stdout.
pub(super) const INTERACTIVE_FLAGS: [&str; 5] =
    ["--input-format", "stream-json", "--permission-prompt-tool", "stdio", "--replay-user-messages"];

/// Whether `command` runs Claude Code interactively.
pub(super) fn interactive(command: &[String]) -> bool {
    command.iter().any(|argument| argument == "--permission-prompt-tool")
}

/// The user message that gives Claude Code `task`, one JSON line.
pub(super) fn user_message(task: &str) -> String {
    message_with_uuid(task, &super::random_uuid())
}

fn message_with_uuid(text: &str, uuid: &str) -> String {
    json!({
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
        "session_id": "",
        "uuid": uuid,
    })
    .to_string()
}

/// A steer: a user message written while the turn runs (Claude Code folds it into the running turn at its next
/// step), its uuid kept in `state` so its delivery can be told.
pub(super) fn steer(id: &str, text: &str, state: &mut TranslateState) -> String {
    let uuid = super::random_uuid();
    state.steers.insert(uuid.clone(), id.to_owned());
    message_with_uuid(text, &uuid)
}

/// `input.delivered` for a steer Claude Code took: its `command_lifecycle` says `started` (or `completed`) for
/// the message's uuid, or its replay of the message (`isReplay`, with `--replay-user-messages`) comes.
pub(super) fn delivered(event: &Value, state: &mut TranslateState) -> Option<Translated> {
    let uuid = match event.get("type").and_then(Value::as_str)? {
        "command_lifecycle" if matches!(event.get("state").and_then(Value::as_str), Some("started" | "completed")) => {
            event.get("command_uuid").and_then(Value::as_str)?
        }
        "user" if event.get("isReplay").and_then(Value::as_bool) == Some(true) => {
            event.get("uuid").and_then(Value::as_str)?
        }
        _ => return None,
    };
    let id = state.steers.remove(uuid)?;
    Some(Translated::new(crate::events::EventKind::InputDelivered, json!({"id": id})))
}

/// The events of a control message from Claude Code: a permission request or questions (kept in `state` for
/// the answer), or the withdrawal of one.
pub(super) fn control(event: &Value, state: &mut TranslateState) -> Vec<Translated> {
    match event.get("type").and_then(Value::as_str) {
        Some("control_request")
            if event.pointer("/request/subtype").and_then(Value::as_str) == Some("can_use_tool") =>
        {
            let Some(request_id) = event.get("request_id").and_then(Value::as_str) else {
                return vec![Translated::native("control_request")];
            };
            let native = event.get("request").cloned().unwrap_or(Value::Null);
            let request = Request::new(asked(&native));
            let mut kept = native;
            kept["request_id"] = Value::from(request_id);
            state.asked.insert(request.id.clone(), kept);
            vec![request.event()]
        }
        Some("control_cancel_request") => {
            let request_id = event.get("request_id").and_then(Value::as_str);
            let withdrawn: Vec<String> = state
                .asked
                .iter()
                .filter(|(_, kept)| kept.get("request_id").and_then(Value::as_str) == request_id)
                .map(|(id, _)| id.clone())
                .collect();
            withdrawn
                .into_iter()
                .filter_map(|id| state.asked.remove(&id).map(|kept| (id, kept)))
                .map(|(id, kept)| Request { id, asked: asked(&kept) }.rejected("the runner withdrew the request"))
                .collect()
        }
        Some(other) => vec![Translated::native(other)],
        None => vec![Translated::native("unknown")],
    }
}

/// What a `can_use_tool` request asks: `AskUserQuestion`'s questions (an answer in the person's own words is
/// always allowed: Claude Code offers "Other" itself), or permission for the tool call, described by what it
/// would run or touch, with "allow always" where Claude Code suggests a rule.
fn asked(native: &Value) -> Asked {
    let text = |pointer: &str| native.pointer(pointer).and_then(Value::as_str).map(bounded);
    let tool = text("/tool_name").unwrap_or_else(|| "a tool".to_owned());
    if tool == "AskUserQuestion" {
        let list = native.pointer("/input/questions").and_then(Value::as_array).cloned().unwrap_or_default();
        let questions = super::native_asks::questions(&list, "multiSelect");
        if !questions.is_empty() {
            return Asked::Question { questions };
        }
    }
    let what = ["/input/command", "/input/file_path", "/input/url", "/input/pattern", "/blocked_path", "/description"]
        .iter()
        .find_map(|pointer| text(pointer))
        .unwrap_or_default();
    let name = text("/display_name").unwrap_or_else(|| tool.clone());
    let mut message = if what.is_empty() { name } else { format!("{name}: {what}") };
    if let Some(reason) = text("/decision_reason") {
        message = bounded(&format!("{message} ({reason})"));
    }
    let suggested = native.get("permission_suggestions").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    let suppressed = native.get("suppress_always_allow_rule").and_then(Value::as_bool).unwrap_or(false);
    let mut options = vec![Choice::Allow, Choice::Deny];
    if suggested && !suppressed {
        options.push(Choice::AllowAlways);
    }
    Asked::Permission { message, options, tool: Some(tool) }
}

/// The `control_response` that gives Claude Code `answer` to `request`; `None` when the request is not one it
/// made (or was withdrawn).
pub(super) fn reply(request: &Request, answer: &Answer, state: &mut TranslateState) -> Option<String> {
    let kept = state.asked.remove(&request.id)?;
    let request_id = kept.get("request_id").and_then(Value::as_str)?.to_owned();
    let input = kept.get("input").cloned().unwrap_or_else(|| json!({}));
    let deny = |message: &str| json!({"behavior": "deny", "message": message});
    let response = match answer {
        Answer::Reject { reason } => {
            deny(&format!("The person refused this: {}", reason.as_deref().unwrap_or("no reason given")))
        }
        Answer::Choice { choice: Choice::Deny } => deny("The person denied this tool call."),
        Answer::Choice { choice: Choice::Allow } => json!({"behavior": "allow", "updatedInput": input}),
        Answer::Choice { choice: Choice::AllowAlways } => {
            // Claude Code's suggestions, kept for this run only: a suggested rule written to the workspace's
            // `.claude/settings.local.json` would be a file the outcome carries.
            let mut rules = kept.get("permission_suggestions").and_then(Value::as_array).cloned().unwrap_or_default();
            for rule in &mut rules {
                rule["destination"] = Value::from("session");
            }
            json!({"behavior": "allow", "updatedInput": input, "updatedPermissions": rules})
        }
        Answer::Answers { answers } => {
            let Asked::Question { questions } = &request.asked else { return None };
            let mut given = Map::new();
            for (question, answer) in questions.iter().zip(answers) {
                given.insert(question.question.clone(), Value::from(answer.join(", ")));
            }
            let mut updated = input;
            updated["answers"] = Value::Object(given);
            json!({"behavior": "allow", "updatedInput": updated})
        }
    };
    let line = json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    });
    Some(line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn can_use_tool(request: Value) -> Value {
        json!({"type": "control_request", "request_id": "native-1", "request": request})
    }

    #[test]
    fn a_bash_call_becomes_a_permission_request_and_its_answers_claude_code_replies() {
        let mut state = TranslateState::default();
        let native = can_use_tool(json!({"subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
            "input": {"command": "rm obsolete.txt"}, "tool_use_id": "toolu_1",
            "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm *"}],
                "behavior": "allow", "destination": "localSettings"}]}));
        let events = control(&native, &mut state);
        assert_eq!(events.len(), 1);
        let request = Request::from_data(events[0].kind, &events[0].data).expect("a request");
        let Asked::Permission { message, options, .. } = &request.asked else { panic!("{request:?}") };
        assert_eq!(message, "Bash: rm obsolete.txt");
        assert_eq!(options, &[Choice::Allow, Choice::Deny, Choice::AllowAlways]);
        let always = reply(&request, &Answer::Choice { choice: Choice::AllowAlways }, &mut state).expect("a reply");
        let always: Value = serde_json::from_str(&always).unwrap_or_default();
        assert_eq!(always["response"]["request_id"], "native-1");
        assert_eq!(always["response"]["response"]["behavior"], "allow");
        assert_eq!(always["response"]["response"]["updatedInput"]["command"], "rm obsolete.txt");
        assert_eq!(always["response"]["response"]["updatedPermissions"][0]["destination"], "session");
        assert!(reply(&request, &Answer::Choice { choice: Choice::Allow }, &mut state).is_none(), "answered once");
    }

    #[test]
    fn ask_user_question_becomes_questions_answered_in_its_input() {
        let mut state = TranslateState::default();
        let native = can_use_tool(json!({"subtype": "can_use_tool", "tool_name": "AskUserQuestion",
            "requires_user_interaction": true, "tool_use_id": "toolu_2",
            "input": {"questions": [{"question": "Which colour?", "header": "Colour", "multiSelect": true,
                "options": [{"label": "Red", "description": "warm"}, {"label": "Blue"}]}]}}));
        let events = control(&native, &mut state);
        let request = Request::from_data(events[0].kind, &events[0].data).expect("a request");
        let Asked::Question { questions } = &request.asked else { panic!("{request:?}") };
        assert!(questions[0].multiple && questions[0].custom && questions[0].options.len() == 2);
        let answer = request.answer_from_text(r#"[["Red", "Blue"]]"#).expect("offered labels");
        let line: Value =
            serde_json::from_str(&reply(&request, &answer, &mut state).unwrap_or_default()).unwrap_or_default();
        let updated = &line["response"]["response"]["updatedInput"];
        assert_eq!(updated["answers"]["Which colour?"], "Red, Blue");
        assert_eq!(updated["questions"][0]["header"], "Colour", "the original input kept");
    }

    #[test]
    fn a_withdrawn_request_is_rejected_and_cannot_be_answered() {
        let mut state = TranslateState::default();
        let native = can_use_tool(json!({"subtype": "can_use_tool", "tool_name": "Write",
            "input": {"file_path": "/tmp/x"}, "tool_use_id": "t"}));
        let asked = control(&native, &mut state);
        let request = Request::from_data(asked[0].kind, &asked[0].data).expect("a request");
        let events = control(&json!({"type": "control_cancel_request", "request_id": "native-1"}), &mut state);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data["id"], request.id.as_str());
        assert!(reply(&request, &Answer::Choice { choice: Choice::Allow }, &mut state).is_none());
    }
}
