//! The lines a person reads for one canonical run event (protocol 0): what the editors show in a run's buffer
//! or channel (the `text` of `workbench/runEvent`).

use serde_json::Value;
use wb_engine::events::{Event, EventKind};

use super::{continued, plural, printable, printable_lines};

/// The event's string field `name`, when it is a non-empty string.
fn field<'a>(data: &'a Value, name: &str) -> Option<&'a str> {
    data.get(name).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The readable lines of an event: the model's text, tools started and completed, files changed, usage, the
/// outcome and the ending. None for `runner.event` (it has no meaning for a reader) or an empty text; a message
/// of several lines gives as many lines, the later ones indented.
pub(crate) fn event_lines(event: &Event) -> Vec<String> {
    let data = &event.data;
    let detail = |first: String| match field(data, "message") {
        Some(message) => continued(&format!("{first}: "), message),
        None => vec![first],
    };
    match event.known() {
        Some(EventKind::RunStarted) => {
            let package = [field(data, "workbench"), field(data, "version")].into_iter().flatten();
            let package = package.collect::<Vec<_>>().join(" ");
            let package = if package.is_empty() { "Workbench".to_owned() } else { package };
            let runtime = field(data, "runtime").map(|r| format!(" on {r}")).unwrap_or_default();
            let line = format!("▶ Run {} started: {package}{runtime} ({})", event.run_id, event.runner);
            vec![printable(&line).into_owned()]
        }
        Some(EventKind::RunReady) => vec!["  the runner is ready".to_owned()],
        Some(EventKind::OutputText) => field(data, "text").map(printable_lines).unwrap_or_default(),
        Some(EventKind::ToolStarted) => vec![format!("⚙ {} started", tool_label(data))],
        Some(EventKind::ToolCompleted) if field(data, "status") == Some("failed") => {
            detail(format!("✗ {} failed", tool_label(data)))
        }
        Some(EventKind::ToolCompleted) => vec![format!("✓ {} completed", tool_label(data))],
        Some(EventKind::FileChanged) => {
            let tool = field(data, "tool").map(|t| format!(" ({})", printable(t))).unwrap_or_default();
            vec![format!("✎ {} changed{tool}", printable(field(data, "path").unwrap_or("a file")))]
        }
        Some(EventKind::UsageUpdated) => vec![format!("  usage: {}", usage(data))],
        Some(EventKind::OutcomeAvailable) => {
            let count = |name: &str| data.get(name).and_then(Value::as_u64).unwrap_or(0);
            vec![format!(
                "  outcome {} ({}, {}, {})",
                printable(field(data, "outcome_id").unwrap_or("?")),
                plural(count("changesets"), "changeset"),
                plural(count("artifacts"), "artifact"),
                plural(count("links"), "link")
            )]
        }
        Some(EventKind::OutcomeFailed) => detail("  outcome failed".to_owned()),
        Some(EventKind::RunCompleted) => vec![format!("■ Run completed{}", took(data))],
        Some(EventKind::RunFailed) => detail(format!("■ Run failed{}", took(data))),
        Some(EventKind::RunCancelled) => vec![format!("■ Run cancelled{}", took(data))],
        Some(EventKind::RunnerEvent) => Vec::new(),
        Some(EventKind::PlanUpdated) => {
            let mut lines = vec![format!("☰ plan {}", printable(&wb_engine::plan::PlanSummary::of(data).line()))];
            for item in data.get("items").and_then(Value::as_array).into_iter().flatten() {
                let mark = match field(item, "status") {
                    Some("completed") => "✓",
                    Some("in_progress") => "▸",
                    _ => "·",
                };
                lines.push(format!("  {mark} {}", printable(field(item, "text").unwrap_or_default())));
            }
            lines
        }
        _ => vec![printable(&format!("  {} {data}", event.kind)).into_owned()],
    }
}

/// `bash (ls -la)`: the tool's name and its title or target.
fn tool_label(data: &Value) -> String {
    let name = printable(field(data, "name").unwrap_or("tool"));
    match field(data, "title").or_else(|| field(data, "target")) {
        Some(detail) => format!("{name} ({})", printable(detail)),
        None => name.into_owned(),
    }
}

/// ` in 1.2 s`, ` in 850 ms`, or nothing without a duration.
fn took(data: &Value) -> String {
    match data.get("duration_ms").and_then(Value::as_f64) {
        Some(ms) if ms < 1000.0 => format!(" in {} ms", ms.round()),
        Some(ms) => format!(" in {:.1} s", ms / 1000.0),
        None => String::new(),
    }
}

const USAGE_FIELDS: [(&str, &str); 5] = [
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("reasoning_tokens", "reasoning"),
    ("cache_read_tokens", "cache read"),
    ("cache_write_tokens", "cache write"),
];

/// `3 input, 1 output tokens; $0.0013`: the counts a `usage.updated` has, then its cost.
fn usage(data: &Value) -> String {
    let parts: Vec<String> = USAGE_FIELDS
        .iter()
        .filter_map(|(name, label)| data.get(*name).filter(|v| v.is_number()).map(|v| format!("{v} {label}")))
        .collect();
    let mut line = if parts.is_empty() { "updated".to_owned() } else { format!("{} tokens", parts.join(", ")) };
    if let Some(cost) = data.get("cost_usd").and_then(Value::as_f64) {
        line.push_str(&format!("; ${cost:.4}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use wb_engine::events::Event;

    use super::event_lines;

    fn lines(kind: &str, data: Value) -> Vec<String> {
        let event = Event {
            protocol: 0,
            run_id: "wb_1".into(),
            sequence: 1,
            timestamp: "2026-12-01T00:00:00.000Z".into(),
            kind: kind.into(),
            runner: "opencode".into(),
            data,
        };
        event_lines(&event)
    }

    #[test]
    fn every_event_type_reads_as_lines() {
        let started = json!({"workbench": "demo", "version": "0.1.0", "runtime": "local"});
        assert_eq!(lines("run.started", started), ["▶ Run wb_1 started: demo 0.1.0 on local (opencode)"]);
        assert_eq!(lines("run.started", json!({})), ["▶ Run wb_1 started: Workbench (opencode)"]);
        assert_eq!(lines("run.ready", json!({})), ["  the runner is ready"]);
        assert_eq!(lines("output.text", json!({"text": "first\r\nsecond", "id": "t"})), ["first", "second"]);
        assert!(lines("output.text", json!({"text": ""})).is_empty());
        assert_eq!(lines("tool.started", json!({"name": "bash", "title": "ls -la"})), ["⚙ bash (ls -la) started"]);
        assert_eq!(lines("tool.started", json!({"name": "write", "target": "a.ts"})), ["⚙ write (a.ts) started"]);
        assert_eq!(lines("tool.completed", json!({"name": "bash", "status": "completed"})), ["✓ bash completed"]);
        assert_eq!(
            lines("tool.completed", json!({"name": "bash", "status": "failed", "message": "exit 2"})),
            ["✗ bash failed: exit 2"]
        );
        assert_eq!(lines("file.changed", json!({"path": "a.ts", "tool": "write"})), ["✎ a.ts changed (write)"]);
        assert_eq!(
            lines(
                "usage.updated",
                json!({"kind": "delta", "input_tokens": 3, "output_tokens": 1, "cost_usd": 0.00125})
            ),
            ["  usage: 3 input, 1 output tokens; $0.0013"]
        );
        assert_eq!(lines("usage.updated", json!({"kind": "delta"})), ["  usage: updated"]);
        assert_eq!(
            lines("outcome.available", json!({"outcome_id": "wbo_a", "changesets": 1, "artifacts": 2, "links": 0})),
            ["  outcome wbo_a (1 changeset, 2 artifacts, 0 links)"]
        );
        assert_eq!(lines("outcome.failed", json!({"message": "no file: x"})), ["  outcome failed: no file: x"]);
        assert_eq!(lines("run.completed", json!({"duration_ms": 1234})), ["■ Run completed in 1.2 s"]);
        assert_eq!(
            lines("run.failed", json!({"message": "The runner exited with status 1", "duration_ms": 5})),
            ["■ Run failed in 5 ms: The runner exited with status 1"]
        );
        assert_eq!(lines("run.cancelled", json!({})), ["■ Run cancelled"]);
        assert!(lines("runner.event", json!({"native_type": "step_start"})).is_empty());
        assert_eq!(lines("something.new", json!({"a": 1})), ["  something.new {\"a\":1}"]);
    }

    #[test]
    fn messages_of_several_lines_are_indented_and_nothing_drives_a_terminal() {
        assert_eq!(
            lines("run.failed", json!({"message": "boom\r\n■ Run completed\n\u{1b}[2J", "duration_ms": 1500})),
            ["■ Run failed in 1.5 s: boom", "  ■ Run completed", "  \\u{1b}[2J"]
        );
        assert_eq!(
            lines("tool.started", json!({"name": "ba\u{7}sh", "title": "a\nb\u{202e}"})),
            ["⚙ ba\\u{7}sh (a\\nb\\u{202e}) started"]
        );
        assert_eq!(lines("output.text", json!({"text": "red \u{1b}[31m\tok\nnext"})), ["red \\u{1b}[31m\tok", "next"]);
        assert_eq!(lines("file.changed", json!({"path": "a\rb"})), ["✎ a\\rb changed"]);
        assert_eq!(lines("run.started", json!({"workbench": "x\u{9b}"})), ["▶ Run wb_1 started: x\\u{9b} (opencode)"]);
    }
}
