//! Checks of a run's canonical events: the envelope against the official schema, sequence, run id, exactly one
//! terminal event, the data of the outcome events, and the types each runner's `success.jsonl` becomes.

use serde_json::Value;

use crate::event_validator;

/// Checks a whole run's events: each validates against the official schema, one run id of the right shape,
/// the runner's name, sequence 1..=n, exactly one terminal event and it is the last one.
pub fn check_events(events: &[Value], runner: &str) {
    let validator = event_validator();
    assert!(!events.is_empty(), "no events");
    let run_id = events[0]["run_id"].as_str().expect("run_id").to_owned();
    assert!(
        run_id.starts_with("wb_")
            && run_id.len() == 27
            && run_id[3..].chars().all(|c| matches!(c, 'a'..='f' | '0'..='9')),
        "run id {run_id}"
    );
    for (index, event) in events.iter().enumerate() {
        // `outcome.available` and `outcome.failed` are newer-engine events (engine facts (g)) the official
        // schema's enum does not list yet: their envelope is validated as a data-free type, their data here.
        let mut checked = event.clone();
        if matches!(event["type"].as_str(), Some("outcome.available" | "outcome.failed")) {
            check_outcome_event(event);
            checked["type"] = Value::from("run.ready");
        }
        // `plan.updated` is wb-lsp's extension (docs/lsp-extensions.md): its data is checked here.
        if event["type"] == "plan.updated" {
            check_plan_event(event);
            checked["type"] = Value::from("run.ready");
        }
        let errors: Vec<String> =
            validator.iter_errors(&checked).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "event {event} does not validate: {errors:?}");
        assert_eq!(event["sequence"], Value::from(index as u64 + 1), "sequence of {event}");
        assert_eq!(event["run_id"], Value::from(run_id.as_str()));
        assert_eq!(event["runner"], Value::from(runner));
        assert_eq!(event["protocol"], Value::from(0));
    }
    let terminal: Vec<&Value> = events
        .iter()
        .filter(|e| matches!(e["type"].as_str(), Some("run.completed" | "run.failed" | "run.cancelled")))
        .collect();
    assert_eq!(terminal.len(), 1, "exactly one terminal event: {events:#?}");
    assert!(std::ptr::eq(terminal[0], events.last().expect("events")), "the terminal event is the last one");
}

/// The data of a `plan.updated` event: `{items: [{text, status}], completed, total}`, the counts agreeing.
pub fn check_plan_event(event: &Value) {
    let items = event["data"]["items"].as_array().unwrap_or_else(|| panic!("plan items: {event}"));
    for item in items {
        assert!(item["text"].is_string(), "{event}");
        assert!(matches!(item["status"].as_str(), Some("pending" | "in_progress" | "completed")), "{event}");
    }
    let completed = items.iter().filter(|item| item["status"] == "completed").count() as u64;
    assert_eq!(event["data"]["completed"].as_u64(), Some(completed), "{event}");
    assert!(event["data"]["total"].as_u64().is_some_and(|total| total >= items.len() as u64), "{event}");
}

/// The data of an outcome event (engine facts (f)): `outcome.available` {outcome_id, completeness,
/// application_state, changesets, artifacts, links, warnings (counts), summary?}; `outcome.failed` {message}.
pub fn check_outcome_event(event: &Value) {
    let data = event["data"].as_object().unwrap_or_else(|| panic!("outcome event data: {event}"));
    if event["type"] == "outcome.failed" {
        assert!(data.len() == 1 && data["message"].as_str().is_some_and(|m| !m.is_empty()), "{event}");
        return;
    }
    let id = data["outcome_id"].as_str().unwrap_or_default();
    assert!(
        id.starts_with("wbo_")
            && (20..=64).contains(&(id.len() - 4))
            && id[4..].chars().all(|c| matches!(c, 'a'..='z' | '0'..='9')),
        "outcome id {id}"
    );
    assert!(matches!(data["completeness"].as_str(), Some("complete" | "partial")), "{event}");
    assert!(matches!(data["application_state"].as_str(), Some("pending" | "present" | "applied")), "{event}");
    for count in ["changesets", "artifacts", "links", "warnings"] {
        assert!(data[count].is_u64(), "{count} is a count: {event}");
    }
    let known = [
        "outcome_id",
        "completeness",
        "application_state",
        "changesets",
        "artifacts",
        "links",
        "warnings",
        "summary",
        "turn_index",
    ];
    assert!(data.keys().all(|k| known.contains(&k.as_str())), "unexpected keys: {event}");
    if let Some(summary) = data.get("summary") {
        assert!(summary.as_str().is_some_and(|s| !s.is_empty()), "{event}");
    }
}

pub fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["type"].as_str().unwrap_or_default().to_owned()).collect()
}

/// The canonical event types each runner's `success.jsonl` becomes, in order.
pub fn success_types(runner: &str) -> Vec<&'static str> {
    let tools = [
        "tool.started",
        "tool.completed",
        "file.changed",
        "tool.started",
        "tool.completed",
        "file.changed",
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
    ];
    let mut out = vec!["run.started", "run.ready"];
    match runner {
        "opencode" => {
            out.extend(["runner.event", "output.text"]);
            out.extend(tools);
            out.extend([
                "usage.updated",
                "runner.event",
                "runner.event",
                "runner.event",
                "output.text",
                "usage.updated",
            ]);
        }
        // Each assistant message's usage as it streams (priced for --max-cost), then what the result adds.
        "claude-code" => out.extend([
            "runner.event",
            "runner.event",
            "usage.updated",
            "output.text",
            "tool.started",
            "tool.completed",
            "file.changed",
            "tool.started",
            "usage.updated",
            "tool.completed",
            "file.changed",
            "tool.started",
            "usage.updated",
            "tool.completed",
            "tool.started",
            "usage.updated",
            "tool.completed",
            "runner.event",
            "runner.event",
            "output.text",
            "usage.updated",
            "usage.updated",
        ]),
        "pi" => {
            out.extend(["runner.event"; 6]);
            out.extend(["runner.event", "output.text", "output.text", "usage.updated"]);
            out.extend(tools);
            out.extend(["runner.event", "runner.event", "runner.event", "runner.event"]);
            out.extend(["output.text", "output.text", "usage.updated", "runner.event", "runner.event"]);
        }
        other => panic!("no runner {other}"),
    }
    out.extend(["outcome.available", "run.completed"]);
    out
}

/// The native types the untranslated events of each runner's `success.jsonl` carry, in order.
pub fn success_native_types(runner: &str) -> Vec<&'static str> {
    match runner {
        "opencode" => vec!["step_start", "session.compacted", "stdout", "step_start"],
        "claude-code" => vec!["system.init", "assistant.thinking", "stream_event", "stdout"],
        "pi" => vec![
            "session",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update.text_start",
            "turn_end",
            "stdout",
            "turn_start",
            "message_start",
            "turn_end",
            "agent_end",
        ],
        other => panic!("no runner {other}"),
    }
}
