//! The canonical event stream, protocol 0 (engine facts g): an envelope with a monotonic sequence per run,
//! translated types where the meaning is known, and exactly one terminal event.

use serde::Serialize;
use serde_json::{Value, json};

/// One event as emitted (NDJSON with `--json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
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

/// A translated event before it gets its envelope.
#[derive(Clone, Debug, PartialEq)]
pub struct Translated {
    pub kind: &'static str,
    pub data: Value,
}

impl Translated {
    pub fn new(kind: &'static str, data: Value) -> Translated {
        Translated { kind, data }
    }

    /// An event the adapter does not translate: only its native type crosses, never its payload.
    pub fn native(native_type: &str) -> Translated {
        Translated::new("runner.event", json!({ "native_type": native_type }))
    }
}

/// A fresh run id, `wb_` + 24 lowercase hex characters.
pub fn new_run_id() -> String {
    format!("wb_{}", wb_outcomes::random_hex(12))
}

/// Removes environment values from text before it leaves the engine.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new<'a>(values: impl Iterator<Item = &'a str>) -> Redactor {
        // Very short values would redact ordinary words; they are not credentials anyway.
        let mut secrets: Vec<String> = values.filter(|v| v.len() >= 4).map(str::to_owned).collect();
        // Longest first, so a value that contains another is replaced whole; by text within a length, so that
        // `dedup` meets every repeat (two values of the same length need not be adjacent otherwise).
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[redacted]");
            }
        }
        out
    }

    pub fn value(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (self.text(k), self.value(v))).collect()),
            other => other.clone(),
        }
    }
}

/// Stamps events with the envelope: run id, monotonic sequence, time, runner. Redacts every string.
pub struct Stream {
    run_id: String,
    runner: String,
    sequence: u64,
    redactor: Redactor,
    terminal: bool,
}

impl Stream {
    pub fn new(run_id: String, runner: String, redactor: Redactor) -> Stream {
        Stream { run_id, runner, sequence: 0, redactor, terminal: false }
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    pub fn is_finished(&self) -> bool {
        self.terminal
    }

    /// Envelopes a translated event. After the terminal event nothing more is emitted.
    pub fn stamp(&mut self, event: Translated) -> Option<Event> {
        if self.terminal {
            return None;
        }
        if matches!(event.kind, "run.completed" | "run.failed" | "run.cancelled") {
            self.terminal = true;
        }
        self.sequence += 1;
        Some(Event {
            protocol: 0,
            run_id: self.run_id.clone(),
            sequence: self.sequence,
            timestamp: wb_outcomes::now_utc(),
            kind: event.kind.to_owned(),
            runner: self.runner.clone(),
            data: self.redactor.value(&event.data),
        })
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
        let text = stream.stamp(Translated::new("output.text", json!({"text": "key=hunter22"}))).map(|e| e.data);
        assert_eq!(text, Some(json!({"text": "key=[redacted]"})));
        assert!(stream.stamp(Translated::new("run.completed", json!({}))).is_some());
        assert!(stream.stamp(Translated::new("run.failed", json!({"message": "x"}))).is_none());
    }

    #[test]
    fn every_repeated_secret_is_kept_once_longest_first() {
        let redactor = Redactor::new(["abcd", "wxyz", "abcd", "longer-value", "wxyz"].into_iter());
        assert_eq!(redactor.secrets, ["longer-value", "abcd", "wxyz"]);
    }
}
