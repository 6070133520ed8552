//! What a runner asks, read from its own words for the run's record: texts cut to a bound, and questions with
//! their options (Claude Code's `AskUserQuestion` and OpenCode's `question` tool share the shape, but for the
//! name of the flag that allows several answers).

use serde_json::Value;

use crate::input::{Question, QuestionOption};

/// The most characters of a text the run's record keeps of a request (a command, a question, a label).
const TEXT_LIMIT: usize = 1000;
/// The most questions, and options of a question, kept of one request.
const LIST_LIMIT: usize = 16;

/// `text` cut to [`TEXT_LIMIT`] characters.
pub(super) fn bounded(text: &str) -> String {
    match text.char_indices().nth(TEXT_LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The questions of a runner's list (each `{question, header?, options[{label, description?}], custom?}`, and
/// `multiple_key` saying whether several options may be chosen); one without its text is left out. An answer in
/// the person's own words is allowed unless the question says `custom: false`.
pub(super) fn questions(list: &[Value], multiple_key: &str) -> Vec<Question> {
    list.iter().take(LIST_LIMIT).filter_map(|native| question(native, multiple_key)).collect()
}

fn question(native: &Value, multiple_key: &str) -> Option<Question> {
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(bounded);
    let options = native.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
    Some(Question {
        question: text(native, "question").filter(|q| !q.trim().is_empty())?,
        header: text(native, "header").filter(|h| !h.trim().is_empty()),
        options: options
            .iter()
            .take(LIST_LIMIT)
            .filter_map(|option| {
                let label = text(option, "label").filter(|l| !l.trim().is_empty())?;
                Some(QuestionOption { label, description: text(option, "description").filter(|d| !d.is_empty()) })
            })
            .collect(),
        multiple: native.get(multiple_key).and_then(Value::as_bool).unwrap_or(false),
        custom: native.get("custom").and_then(Value::as_bool).unwrap_or(true),
    })
}
