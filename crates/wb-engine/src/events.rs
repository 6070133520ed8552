//! The canonical event stream, protocol 0 (engine facts g): an envelope with a monotonic sequence per run,
//! translated types where the meaning is known, and exactly one terminal event.

use serde::Serialize;
use serde_json::{Value, json};

pub use crate::event_kind::EventKind;
pub use crate::redact::Redactor;
use crate::redact::StreamedText;

/// One event as emitted (NDJSON with `--json`), and as read back from a run's log.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Event {
    pub protocol: u8,
    pub run_id: String,
    pub sequence: u64,
    pub timestamp: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub runner: String,
    pub data: Value,
}

impl Event {
    /// The event's type, when this build knows it (a log may hold one a newer build wrote).
    pub fn known(&self) -> Option<EventKind> {
        EventKind::from_wire(&self.kind)
    }

    /// Whether the event is of type `kind`.
    pub fn is(&self, kind: EventKind) -> bool {
        self.kind == kind.as_str()
    }

    /// The string field `name` of its data.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.data.get(name).and_then(Value::as_str)
    }
}

/// A translated event before it gets its envelope.
#[derive(Clone, Debug, PartialEq)]
pub struct Translated {
    pub kind: EventKind,
    pub data: Value,
}

impl Translated {
    pub fn new(kind: EventKind, data: Value) -> Translated {
        Translated { kind, data }
    }

    /// An event the adapter does not translate: only its native type crosses, never its payload.
    pub fn native(native_type: &str) -> Translated {
        Translated::new(EventKind::RunnerEvent, json!({ "native_type": native_type }))
    }
}

/// A fresh run id, `wb_` + 24 lowercase hex characters.
pub fn new_run_id() -> String {
    format!("wb_{}", wb_outcomes::random_hex(12))
}

/// Whether `id` has the shape [`new_run_id`] gives (`wb_` and 24 hex digits): safe as a directory name.
pub fn is_run_id(id: &str) -> bool {
    id.strip_prefix("wb_").is_some_and(|hex| hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Stamps events with the envelope: run id, monotonic sequence, time, runner. Redacts every string, and
/// streamed text as a whole: an `output.text` whose end could begin a bound value waits for the text that
/// follows, whatever other events (thinking, tools, usage, a new message) come between, until that text shows
/// it does not begin one, or [`Stream::flush_text`] or the terminal event release it. The events between go out
/// meanwhile, so held text may follow them.
pub struct Stream {
    run_id: String,
    runner: String,
    sequence: u64,
    redactor: Redactor,
    terminal: bool,
    /// `output.text` events held back, by their data.
    text: StreamedText<Value>,
}

impl Stream {
    pub fn new(run_id: String, runner: String, redactor: Redactor) -> Stream {
        Stream { run_id, runner, sequence: 0, redactor, terminal: false, text: StreamedText::default() }
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    pub fn is_finished(&self) -> bool {
        self.terminal
    }

    /// Envelopes a translated event, with the held text it releases: none when it is text held back, several
    /// when held text goes out with it (a text that completes it, or the terminal event). After the terminal
    /// event nothing more is emitted.
    pub fn stamp(&mut self, event: Translated) -> Vec<Event> {
        if self.terminal {
            return Vec::new();
        }
        let text =
            (event.kind == EventKind::OutputText).then(|| event.data.get("text").and_then(Value::as_str)).flatten();
        if let Some(text) = text {
            let data = self.redactor.value(&event.data);
            let released = self.text.push(&self.redactor, data, text);
            return self.text_events(released);
        }
        let terminal = event.kind.is_terminal();
        let mut out = if terminal { self.flush_text() } else { Vec::new() };
        self.terminal = terminal;
        let data = self.redactor.value(&event.data);
        out.push(self.envelope(event.kind, data));
        out
    }

    /// Every held text, redacted as it stands: the runner will write no more.
    pub fn flush_text(&mut self) -> Vec<Event> {
        if self.terminal {
            return Vec::new();
        }
        let released = self.text.finish(&self.redactor);
        self.text_events(released)
    }

    fn text_events(&mut self, released: Vec<(Value, String)>) -> Vec<Event> {
        released
            .into_iter()
            .map(|(mut data, text)| {
                data["text"] = Value::String(text);
                self.envelope(EventKind::OutputText, data)
            })
            .collect()
    }

    fn envelope(&mut self, kind: EventKind, data: Value) -> Event {
        self.sequence += 1;
        Event {
            protocol: 0,
            run_id: self.run_id.clone(),
            sequence: self.sequence,
            timestamp: wb_outcomes::now_utc(),
            kind: kind.as_str().to_owned(),
            runner: self.runner.clone(),
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids() {
        // Timestamps are `wb_outcomes::now_utc` (its tests pin the format).
        let id = new_run_id();
        assert!(id.starts_with("wb_") && id.len() == 27 && id[3..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(new_run_id(), new_run_id());
    }

    #[test]
    fn one_terminal_event_and_redaction() {
        let mut stream = Stream::new("wb_x".into(), "opencode".into(), Redactor::new(["hunter22"].into_iter()));
        let text: Vec<Value> = stream
            .stamp(Translated::new(EventKind::OutputText, json!({"text": "key=hunter22"})))
            .into_iter()
            .map(|e| e.data)
            .collect();
        assert_eq!(text, [json!({"text": "key=[redacted]"})]);
        assert_eq!(stream.stamp(Translated::new(EventKind::RunCompleted, json!({}))).len(), 1);
        assert!(stream.stamp(Translated::new(EventKind::RunFailed, json!({"message": "x"}))).is_empty());
    }

    /// The halves of a value in two texts, with every other kind of event between them, and across messages.
    #[test]
    fn a_value_split_across_other_events_is_redacted() {
        let between = [
            Translated::native("reasoning"),
            Translated::new(EventKind::ToolStarted, json!({"id": "t1", "name": "bash", "title": "ls"})),
            Translated::new(EventKind::ToolCompleted, json!({"id": "t1", "name": "bash", "status": "completed"})),
            Translated::new(EventKind::UsageUpdated, json!({"kind": "delta", "input_tokens": 3})),
        ];
        for (index, event) in between.into_iter().enumerate() {
            let redactor = Redactor::new(["hunter2-Pa55-w0rd"].into_iter());
            let mut stream = Stream::new("wb_x".into(), "opencode".into(), redactor);
            let mut events = Vec::new();
            events.extend(
                stream.stamp(Translated::new(EventKind::OutputText, json!({"text": "password: hunter2-", "id": "m1"}))),
            );
            events.extend(stream.stamp(event.clone()));
            events
                .extend(stream.stamp(Translated::new(EventKind::OutputText, json!({"text": "Pa55-w0rd", "id": "m2"}))));
            events.extend(stream.stamp(Translated::new(EventKind::RunCompleted, json!({}))));
            let all = serde_json::to_string(&events).unwrap_or_default();
            assert!(!all.contains("hunter2-") && !all.contains("Pa55"), "case {index}: {all}");
            let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
            assert_eq!(kinds, [event.kind.as_str(), "output.text", "output.text", "run.completed"], "case {index}");
            assert_eq!(events[1].data, json!({"text": "password: [redacted]", "id": "m1"}));
            assert_eq!(events[2].data, json!({"text": "", "id": "m2"}));
            let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
            assert_eq!(sequences, [1, 2, 3, 4]);
        }
    }

    #[test]
    fn held_text_goes_out_when_flushed_or_before_the_terminal_event() {
        let mut stream = Stream::new("wb_x".into(), "pi".into(), Redactor::new(["hunter22"].into_iter()));
        assert!(stream.stamp(Translated::new(EventKind::OutputText, json!({"text": "a hunt"}))).is_empty());
        let flushed = stream.flush_text();
        assert_eq!(flushed.len(), 1);
        assert_eq!(flushed[0].data, json!({"text": "a hunt"}));
        assert!(stream.stamp(Translated::new(EventKind::OutputText, json!({"text": "hun"}))).is_empty());
        let end = stream.stamp(Translated::new(EventKind::RunFailed, json!({"message": "x"})));
        let kinds: Vec<&str> = end.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["output.text", "run.failed"]);
        assert!(stream.flush_text().is_empty());
    }

    #[test]
    fn held_text_waits_for_the_text_after_other_events() {
        let mut stream = Stream::new("wb_x".into(), "pi".into(), Redactor::new(["hunter22"].into_iter()));
        let mut events = Vec::new();
        for event in [
            Translated::new(EventKind::OutputText, json!({"text": "key=hun", "id": "p1"})),
            Translated::new(EventKind::OutputText, json!({"text": "t", "id": "p1"})),
            Translated::new(EventKind::OutputText, json!({"text": "er22. a hu", "id": "p1"})),
            Translated::new(EventKind::OutputText, json!({"text": "Next part", "id": "p2"})),
            Translated::new(EventKind::OutputText, json!({"text": " ends with hu"})),
            Translated::native("x"),
            Translated::new(EventKind::RunCompleted, json!({})),
        ] {
            events.extend(stream.stamp(event));
        }
        let shown: Vec<(String, Value)> = events.iter().map(|e| (e.kind.clone(), e.data.clone())).collect();
        let text = |text: &str, id: Option<&str>| {
            let mut data = json!({"text": text});
            if let Some(id) = id {
                data["id"] = json!(id);
            }
            ("output.text".to_owned(), data)
        };
        assert_eq!(
            shown,
            [
                text("key=[redacted]", Some("p1")),
                text("", Some("p1")),
                text(". a hu", Some("p1")),
                text("Next part", Some("p2")),
                ("runner.event".to_owned(), json!({"native_type": "x"})),
                text(" ends with hu", None),
                ("run.completed".to_owned(), json!({})),
            ]
        );
        let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
        assert_eq!(sequences, (1..=7).collect::<Vec<u64>>());
    }
}
