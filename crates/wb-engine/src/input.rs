//! What a run asks the person, and what the person answers.
//!
//! A runner's permission request or question becomes a [`Request`] with an id the engine gives (`in_` and eight
//! hex digits), emitted as `input.requested` or `question.requested`; while one is pending the run is
//! `needs_input`. Whoever answers (`wb-lsp answer`, an editor, an ACP client) checks the [`Answer`] against the
//! request ([`Request::check`]) and writes it to the run's `answers/<request>.json`
//! (`crate::runs::answers::write_answer`), created once: the first answer wins. The run's owner, which waits for
//! it, reads it, checks it again,
//! hands it to the runner in the runner's own words and emits `input.accepted` / `question.answered` (or the
//! rejection). A request nobody answers is rejected after the input timeout, and every request at once with
//! `--no-input`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::events::{Event, EventKind, Translated};

/// How long a request waits for an answer by default (`--input-timeout`).
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How a run treats what its runner asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InputPolicy {
    /// Reject every request at once (`--no-input`, for CI): what runs did before they could ask.
    #[serde(default)]
    pub no_input: bool,
    /// Reject a request nobody answered after this long (`--input-timeout`; default [`DEFAULT_INPUT_TIMEOUT`]).
    #[serde(default)]
    pub timeout: Option<Duration>,
}

impl InputPolicy {
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_INPUT_TIMEOUT)
    }
}

/// One answer a permission request offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// Allow this once.
    Allow,
    Deny,
    /// Allow this and the same again for the rest of the run (only where the runner offers it).
    AllowAlways,
}

impl Choice {
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::Allow => "allow",
            Choice::Deny => "deny",
            Choice::AllowAlways => "allow_always",
        }
    }

    pub fn parse(word: &str) -> Option<Choice> {
        match word.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "allow" | "yes" | "y" => Some(Choice::Allow),
            "deny" | "no" | "n" => Some(Choice::Deny),
            "allow_always" | "always" => Some(Choice::AllowAlways),
            _ => None,
        }
    }
}

/// One question the agent asks, with the answers it offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    pub options: Vec<QuestionOption>,
    /// Several options may be chosen.
    pub multiple: bool,
    /// An answer may be the person's own text instead of an option.
    pub custom: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What a request asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Asked {
    /// Permission for a tool call: what it is, and the answers the runner offers.
    Permission {
        message: String,
        options: Vec<Choice>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// Questions for the person.
    Question { questions: Vec<Question> },
    /// The runner needs a sign-in: no answer can give it.
    Authentication { message: String },
}

/// A pending request of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: String,
    #[serde(flatten)]
    pub asked: Asked,
}

/// What a person answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Answer {
    /// A permission request's answer.
    Choice { choice: Choice },
    /// A question request's answers: for each question, the chosen labels or the person's own text.
    Answers { answers: Vec<Vec<String>> },
    /// The request refused, whatever it asked.
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// Why an answer cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("answer cannot supply credentials: request {0} asks for a sign-in, which only the runner can do")]
    Credentials(String),
    #[error("request {id} does not offer {given} (it offers {offered})")]
    NotOffered { id: String, given: String, offered: String },
    #[error("request {id} asks for permission: answer allow, deny or allow_always (as offered)")]
    NotAChoice { id: String },
    #[error("request {id} asks {count} questions: give a JSON array of answers, one per question")]
    OneAnswerPerQuestion { id: String, count: usize },
    #[error("question {index} of request {id}: {why}")]
    Question { id: String, index: usize, why: String },
    #[error("request {0} was already answered")]
    AlreadyAnswered(String),
    #[error("not a request id: {0:?} (in_ and eight hex digits)")]
    NotARequestId(String),
    #[error("run {run_id} is not running ({state}): it takes no answer")]
    NotRunning { run_id: String, state: &'static str },
    #[error("run {run_id} has no pending request {request} (answered, refused, or its turn ended)")]
    NotPending { run_id: String, request: String },
    #[error("cannot read run {run_id}: {source}")]
    Run {
        run_id: String,
        #[source]
        source: std::io::Error,
    },
    #[error("give an answer (allow, deny, allow_always, a question's answer) or refuse the request")]
    NoAnswer,
    #[error("cannot write the answer to request {id}: {source}")]
    Io {
        id: String,
        #[source]
        source: std::io::Error,
    },
}

impl Request {
    /// A new request with a fresh id.
    pub fn new(asked: Asked) -> Request {
        Request { id: format!("in_{}", wb_outcomes::random_hex(4)), asked }
    }

    /// Whether `id` is a request id (`in_` and eight lowercase hex digits): what may name an answer's file.
    pub fn is_id(id: &str) -> bool {
        id.strip_prefix("in_")
            .is_some_and(|hex| hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    }

    /// The event that says the run asks it.
    pub fn event(&self) -> Translated {
        match &self.asked {
            Asked::Question { questions } => {
                Translated::new(EventKind::QuestionRequested, json!({"id": self.id, "questions": questions}))
            }
            Asked::Permission { message, options, tool } => {
                let mut data = json!({"id": self.id, "kind": "permission", "message": message, "options": options});
                if let Some(tool) = tool {
                    data["tool"] = Value::from(tool.as_str());
                }
                Translated::new(EventKind::InputRequested, data)
            }
            Asked::Authentication { message } => Translated::new(
                EventKind::InputRequested,
                json!({"id": self.id, "kind": "authentication", "message": message, "options": []}),
            ),
        }
    }

    /// The request an `input.requested` or `question.requested` event carries.
    pub fn from_event(event: &Event) -> Option<Request> {
        Request::from_data(event.known()?, &event.data)
    }

    /// The request an event of type `kind` with `data` carries, if it is a request.
    pub fn from_data(kind: EventKind, data: &Value) -> Option<Request> {
        let text = |key: &str| data.get(key).and_then(Value::as_str);
        let id = text("id")?.to_owned();
        let asked = match kind {
            EventKind::QuestionRequested => {
                Asked::Question { questions: serde_json::from_value(data.get("questions")?.clone()).ok()? }
            }
            EventKind::InputRequested => {
                let message = text("message").unwrap_or_default().to_owned();
                match text("kind") {
                    Some("authentication") => Asked::Authentication { message },
                    _ => Asked::Permission {
                        message,
                        options: serde_json::from_value(data.get("options")?.clone()).ok()?,
                        tool: text("tool").map(str::to_owned),
                    },
                }
            }
            _ => return None,
        };
        Some(Request { id, asked })
    }

    /// `permission`, `question` or `authentication`.
    pub fn kind(&self) -> &'static str {
        match self.asked {
            Asked::Permission { .. } => "permission",
            Asked::Question { .. } => "question",
            Asked::Authentication { .. } => "authentication",
        }
    }

    /// One line that says what is asked and how it may be answered: `permission · in_1a2b3c4d: Bash: ls (allow,
    /// deny, allow_always)`.
    pub fn details(&self) -> String {
        let what = match &self.asked {
            Asked::Permission { message, options, .. } => {
                let options: Vec<&str> = options.iter().map(|o| o.as_str()).collect();
                format!("{message} ({})", options.join(", "))
            }
            Asked::Question { questions } => questions
                .iter()
                .map(|q| {
                    let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
                    let mut offered = labels.join(" / ");
                    if q.custom {
                        offered.push_str(if labels.is_empty() { "your answer" } else { " / your answer" });
                    }
                    let several = if q.multiple { ", several" } else { "" };
                    format!("{} ({offered}{several})", q.question)
                })
                .collect::<Vec<_>>()
                .join("; "),
            Asked::Authentication { message } => message.clone(),
        };
        let what: String = what.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        format!("{} · {}: {what}", self.kind(), self.id)
    }

    /// The answer `text` gives this request: a permission's choice, a question's answer (one question), or a JSON
    /// array of answers, one per question (each a string or an array of strings).
    pub fn answer_from_text(&self, text: &str) -> Result<Answer, AnswerError> {
        let answer = match &self.asked {
            Asked::Authentication { .. } => return Err(AnswerError::Credentials(self.id.clone())),
            Asked::Permission { .. } => match Choice::parse(text) {
                Some(choice) => Answer::Choice { choice },
                None => return Err(AnswerError::NotAChoice { id: self.id.clone() }),
            },
            Asked::Question { questions } => match serde_json::from_str::<Vec<Value>>(text.trim()) {
                Ok(list) => Answer::Answers { answers: list.iter().map(answer_strings).collect() },
                Err(_) if questions.len() == 1 => Answer::Answers { answers: vec![vec![text.trim().to_owned()]] },
                Err(_) => {
                    return Err(AnswerError::OneAnswerPerQuestion { id: self.id.clone(), count: questions.len() });
                }
            },
        };
        self.check(&answer)?;
        Ok(answer)
    }

    /// Whether `answer` answers this request: a choice it offers; for each question, one answer (several where
    /// it allows), each an offered label or, where it allows, the person's own text.
    pub fn check(&self, answer: &Answer) -> Result<(), AnswerError> {
        let id = self.id.clone();
        match (&self.asked, answer) {
            (_, Answer::Reject { .. }) => Ok(()),
            (Asked::Authentication { .. }, _) => Err(AnswerError::Credentials(id)),
            (Asked::Permission { options, .. }, Answer::Choice { choice }) => {
                if options.contains(choice) {
                    return Ok(());
                }
                let offered: Vec<&str> = options.iter().map(|o| o.as_str()).collect();
                Err(AnswerError::NotOffered { id, given: choice.as_str().to_owned(), offered: offered.join(", ") })
            }
            (Asked::Permission { .. }, Answer::Answers { .. }) => Err(AnswerError::NotAChoice { id }),
            (Asked::Question { questions }, Answer::Choice { .. }) => {
                Err(AnswerError::OneAnswerPerQuestion { id, count: questions.len() })
            }
            (Asked::Question { questions }, Answer::Answers { answers }) => {
                if answers.len() != questions.len() {
                    return Err(AnswerError::OneAnswerPerQuestion { id, count: questions.len() });
                }
                let problem =
                    questions.iter().zip(answers).enumerate().find_map(|(index, (question, given))| {
                        question_problem(question, given).map(|why| (index, why))
                    });
                match problem {
                    Some((index, why)) => Err(AnswerError::Question { id, index: index + 1, why }),
                    None => Ok(()),
                }
            }
        }
    }

    /// The event that says how the request was answered: `input.accepted` with the choice, `question.answered`
    /// with the count of answers, or the rejection with its reason.
    pub fn answered(&self, answer: &Answer) -> Translated {
        match (answer, &self.asked) {
            (Answer::Reject { reason }, _) => self.rejected(reason.as_deref().unwrap_or("rejected")),
            (Answer::Choice { choice }, _) => {
                Translated::new(EventKind::InputAccepted, json!({"id": self.id, "answer": choice.as_str()}))
            }
            (Answer::Answers { answers }, _) => {
                Translated::new(EventKind::QuestionAnswered, json!({"id": self.id, "answer_count": answers.len()}))
            }
        }
    }

    /// The event that says the request was refused, and why.
    pub fn rejected(&self, reason: &str) -> Translated {
        let kind = match self.asked {
            Asked::Question { .. } => EventKind::QuestionRejected,
            _ => EventKind::InputRejected,
        };
        Translated::new(kind, json!({"id": self.id, "reason": reason}))
    }
}

/// One question's answers from a JSON value: a string is one answer, an array its strings.
fn answer_strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        other => vec![other.to_string()],
    }
}

/// What is wrong with `given` as the answers to `question`, if anything.
fn question_problem(question: &Question, given: &[String]) -> Option<String> {
    if given.is_empty() || given.iter().any(|answer| answer.trim().is_empty()) {
        return Some("an answer is empty".to_owned());
    }
    if given.len() > 1 && !question.multiple {
        return Some(format!("it takes one answer, not {}", given.len()));
    }
    // A question that offers nothing can only be answered in the person's own words.
    let custom = question.custom || question.options.is_empty();
    for answer in given {
        if !custom && !question.options.iter().any(|option| &option.label == answer) {
            let labels: Vec<&str> = question.options.iter().map(|o| o.label.as_str()).collect();
            return Some(format!("{answer:?} is not one of its options ({})", labels.join(", ")));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permission(options: &[Choice]) -> Request {
        Request::new(Asked::Permission { message: "Bash: ls".into(), options: options.to_vec(), tool: None })
    }

    fn question(multiple: bool, custom: bool) -> Question {
        Question {
            question: "Which colour?".into(),
            header: None,
            options: vec![
                QuestionOption { label: "red".into(), description: None },
                QuestionOption { label: "blue".into(), description: Some("the sky".into()) },
            ],
            multiple,
            custom,
        }
    }

    #[test]
    fn a_permission_takes_only_what_it_offers() {
        let request = permission(&[Choice::Allow, Choice::Deny]);
        assert_eq!(request.answer_from_text("allow").ok(), Some(Answer::Choice { choice: Choice::Allow }));
        assert_eq!(request.answer_from_text(" Deny ").ok(), Some(Answer::Choice { choice: Choice::Deny }));
        assert!(matches!(request.answer_from_text("allow_always"), Err(AnswerError::NotOffered { .. })));
        assert!(matches!(request.answer_from_text("maybe"), Err(AnswerError::NotAChoice { .. })));
        let always = permission(&[Choice::Allow, Choice::Deny, Choice::AllowAlways]);
        assert_eq!(always.answer_from_text("allow-always").ok(), Some(Answer::Choice { choice: Choice::AllowAlways }));
    }

    #[test]
    fn questions_take_offered_labels_one_each_unless_several_or_own_words_are_allowed() {
        let one = Request::new(Asked::Question { questions: vec![question(false, false)] });
        assert_eq!(one.answer_from_text("blue").ok(), Some(Answer::Answers { answers: vec![vec!["blue".into()]] }));
        assert!(matches!(one.answer_from_text("green"), Err(AnswerError::Question { index: 1, .. })));
        assert!(matches!(one.answer_from_text(r#"[["red","blue"]]"#), Err(AnswerError::Question { .. })));
        let several = Request::new(Asked::Question { questions: vec![question(true, false), question(false, true)] });
        let answer = several.answer_from_text(r#"[["red","blue"], "green"]"#).ok();
        assert_eq!(
            answer,
            Some(Answer::Answers { answers: vec![vec!["red".into(), "blue".into()], vec!["green".into()]] })
        );
        assert!(matches!(several.answer_from_text("red"), Err(AnswerError::OneAnswerPerQuestion { count: 2, .. })));
        assert!(matches!(several.answer_from_text(r#"["red"]"#), Err(AnswerError::OneAnswerPerQuestion { .. })));
        assert!(matches!(several.answer_from_text(r#"["red", ""]"#), Err(AnswerError::Question { index: 2, .. })));
    }

    #[test]
    fn a_sign_in_cannot_be_answered_but_any_request_can_be_rejected() {
        let request = Request::new(Asked::Authentication { message: "Sign in to OpenAI".into() });
        let error = request.answer_from_text("allow").unwrap_err();
        assert!(error.to_string().starts_with("answer cannot supply credentials"), "{error}");
        assert!(request.check(&Answer::Reject { reason: None }).is_ok());
    }

    #[test]
    fn requests_round_trip_through_their_events() {
        for request in [
            permission(&[Choice::Allow, Choice::Deny, Choice::AllowAlways]),
            Request::new(Asked::Question { questions: vec![question(true, true)] }),
            Request::new(Asked::Authentication { message: "Sign in".into() }),
        ] {
            let translated = request.event();
            let event = Event {
                protocol: 0,
                run_id: "wb_0123456789abcdef01234567".into(),
                sequence: 1,
                timestamp: "2026-12-07T00:00:00Z".into(),
                kind: translated.kind.as_str().into(),
                runner: "claude-code".into(),
                data: translated.data,
            };
            assert_eq!(Request::from_event(&event), Some(request.clone()));
            assert!(request.details().starts_with(&format!("{} · {}: ", request.kind(), request.id)));
        }
    }
}
