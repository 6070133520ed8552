//! The agent's plan (its todo list: Claude Code's `TodoWrite`, OpenCode's `todo.updated`) as a `plan.updated`
//! event, an extension of protocol 0: `{items: [{text, status}], completed, total}`, `status` one of `pending`,
//! `in_progress`, `completed`. Each event carries the whole list as it now stands.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::events::{EventKind, Translated};

/// The most items of a plan an event carries, and the most characters of an item's text.
const ITEMS_LIMIT: usize = 100;
const TEXT_LIMIT: usize = 300;

/// Where a run's plan stands, as its record keeps it: how many items are done, of how many, and the one in
/// progress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanSummary {
    pub completed: u64,
    pub total: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
}

impl PlanSummary {
    /// `3/7 · writing tests`, or `3/7` with nothing in progress.
    pub fn line(&self) -> String {
        match &self.current {
            Some(current) => format!("{}/{} · {current}", self.completed, self.total),
            None => format!("{}/{}", self.completed, self.total),
        }
    }

    /// The summary a `plan.updated` event's data gives.
    pub fn of(data: &Value) -> PlanSummary {
        let items = data.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
        let current = items
            .iter()
            .find(|item| item.get("status").and_then(Value::as_str) == Some("in_progress"))
            .and_then(|item| item.get("text").and_then(Value::as_str))
            .map(str::to_owned);
        let count = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
        PlanSummary { completed: count("completed"), total: count("total"), current }
    }
}

/// `plan.updated` from a runner's list: each item's text (`text_key`) and status (`status_key`, mapped onto the
/// three statuses; anything else is `pending`).
pub fn updated(list: &[Value], text_key: &str, status_key: &str) -> Translated {
    let items: Vec<Value> = list
        .iter()
        .take(ITEMS_LIMIT)
        .map(|item| {
            let text: String =
                item.get(text_key).and_then(Value::as_str).unwrap_or_default().chars().take(TEXT_LIMIT).collect();
            let status = match item.get(status_key).and_then(Value::as_str) {
                Some("completed" | "done") => "completed",
                Some("in_progress" | "active") => "in_progress",
                _ => "pending",
            };
            json!({"text": text, "status": status})
        })
        .collect();
    let completed = items.iter().filter(|item| item["status"] == "completed").count();
    Translated::new(EventKind::PlanUpdated, json!({"items": items, "completed": completed, "total": list.len()}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_todo_list_becomes_a_plan_and_its_summary() {
        let list = [
            json!({"content": "Read the code", "status": "completed"}),
            json!({"content": "Write tests", "status": "in_progress", "activeForm": "Writing tests"}),
            json!({"content": "Ship", "status": "pending"}),
        ];
        let event = updated(&list, "content", "status");
        assert_eq!(event.kind, EventKind::PlanUpdated);
        assert_eq!(event.data["items"][1], json!({"text": "Write tests", "status": "in_progress"}));
        let summary = PlanSummary::of(&event.data);
        assert_eq!(summary.line(), "1/3 · Write tests");
    }
}
