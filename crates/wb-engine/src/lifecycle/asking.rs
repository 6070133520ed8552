//! What the runner asks while a turn runs (`crate::input`), and what it is given: the runner's stdin, written
//! the turn's opening input as it starts and each answer as it comes; the requests the translation emitted, each
//! waiting for its answer file, the input timeout or `--no-input`; the answer checked once more, given to the
//! runner in its own words, and said in an event. Steers (`send --steer`, `runs::steering`) go to the runner's
//! own steering while the turn runs, and a session's queued turns are announced (`input.queued`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::adapters::{Adapter, TranslateState};
use crate::events::{EventKind, Translated};
use crate::input::{Answer, InputPolicy, Request};
use crate::runs::RunDir;
use crate::runs::answers::read_answer;
use crate::runtime::Launched;

/// How often the steers and the session's queue are looked at.
const POLL_EVERY: Duration = Duration::from_millis(250);

/// Where a run's answers and steers arrive and how long requests are waited for.
pub(crate) struct Inputs {
    pub(crate) dir: RunDir,
    pub(crate) policy: InputPolicy,
    /// The session's queued turns already announced (`input.queued`), over all its turns.
    pub(crate) announced: RefCell<BTreeSet<String>>,
}

impl Inputs {
    pub(crate) fn new(dir: RunDir, policy: InputPolicy) -> Inputs {
        Inputs { dir, policy, announced: RefCell::default() }
    }
}

/// One turn's stdin, pending requests and steers on their way.
pub(super) struct Asking<'a> {
    inputs: Option<&'a Inputs>,
    stdin: Option<Box<dyn Write + Send>>,
    pending: Vec<(Request, Instant)>,
    /// Steers given to the runner and not yet taken by it.
    steering: Vec<String>,
    /// When the steers were last looked at; `None` before the turn's first look.
    polled: Option<Instant>,
}

impl<'a> Asking<'a> {
    /// Takes the launched runner's stdin and writes it `opening` (the turn's task in the runner's protocol).
    /// Returns the problem when the runner was to read its task there and cannot.
    pub(super) fn start(
        inputs: Option<&'a Inputs>,
        launched: &mut Launched,
        opening: Option<&str>,
    ) -> (Asking<'a>, Option<String>) {
        let mut asking =
            Asking { inputs, stdin: launched.stdin.take(), pending: Vec::new(), steering: Vec::new(), polled: None };
        let problem = opening.and_then(|opening| match asking.write(opening) {
            Ok(()) => None,
            Err(error) => Some(format!("The runner did not take its task on its stdin: {error}")),
        });
        (asking, problem)
    }

    /// Notes the request `event` carries, if it is one: it now waits for its answer (with `--no-input` it is
    /// answered at once, by [`Asking::settle`]); or the withdrawal of one the runner no longer asks.
    pub(super) fn note(&mut self, event: &Translated) {
        if let Some(request) = Request::from_data(event.kind, &event.data) {
            self.pending.push((request, Instant::now()));
        } else if matches!(
            event.kind,
            EventKind::InputRejected
                | EventKind::QuestionRejected
                | EventKind::InputAccepted
                | EventKind::QuestionAnswered
        ) {
            let id = event.data.get("id").and_then(|id| id.as_str());
            self.pending.retain(|(request, _)| Some(request.id.as_str()) != id);
        } else if event.kind == EventKind::InputDelivered {
            let id = event.data.get("id").and_then(|id| id.as_str());
            self.steering.retain(|steer| Some(steer.as_str()) != id);
        }
    }

    /// Every [`POLL_EVERY`]: gives the runner the steers that came (or refuses them), and announces the turns
    /// queued since; returns the events that say so.
    pub(super) fn poll(&mut self, adapter: &dyn Adapter, state: &mut TranslateState) -> Vec<Translated> {
        let Some(inputs) = self.inputs.filter(|_| self.polled.is_none_or(|at| at.elapsed() >= POLL_EVERY)) else {
            return Vec::new();
        };
        self.polled = Some(Instant::now());
        let mut said = Vec::new();
        for steer in crate::runs::steering::take_steers(&inputs.dir) {
            let refused = |reason: &str| {
                Translated::new(EventKind::InputRejected, json!({"id": steer.id, "kind": "steer", "reason": reason}))
            };
            if self.stdin.is_none() {
                said.push(refused("this runner reads nothing while its turn runs here: it cannot be steered"));
                continue;
            }
            let Some(line) = adapter.steer_input(&steer.id, &steer.text, state) else {
                said.push(refused("this runner cannot be steered"));
                continue;
            };
            match self.write(&line) {
                Ok(()) => {
                    self.steering.push(steer.id.clone());
                    said.push(Translated::new(EventKind::InputAccepted, json!({"id": steer.id, "kind": "steer"})));
                }
                Err(error) => said.push(refused(&format!("the runner did not take it: {error}"))),
            }
        }
        let queued = crate::sessions::queued_ids(&inputs.dir.inbox());
        let mut announced = inputs.announced.borrow_mut();
        for (position, id) in queued.iter().enumerate() {
            if announced.insert(id.clone()) {
                said.push(Translated::new(EventKind::InputQueued, json!({"id": id, "position": position + 1})));
            }
        }
        said
    }

    /// Whether a request waits for its answer.
    pub(super) fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Gives the runner every answer that has come, and the rejection of every request past the input timeout
    /// (all of them with `--no-input`); returns the events that say so.
    pub(super) fn settle(&mut self, adapter: &dyn Adapter, state: &mut TranslateState) -> Vec<Translated> {
        let mut said = Vec::new();
        let mut index = 0;
        while index < self.pending.len() {
            let (request, asked_at) = &self.pending[index];
            let Some(answer) = self.decide(request, asked_at.elapsed()) else {
                index += 1;
                continue;
            };
            let (request, _) = self.pending.remove(index);
            said.push(self.deliver(adapter, state, &request, &answer));
        }
        said
    }

    /// The answer `request` has now: the one written for it (checked again), or a rejection (`--no-input`,
    /// the timeout); `None` while it waits.
    fn decide(&self, request: &Request, waited: Duration) -> Option<Answer> {
        let reject = |reason: String| Some(Answer::Reject { reason: Some(reason) });
        let Some(inputs) = self.inputs else {
            return reject("this run cannot be answered: it has no run directory".to_owned());
        };
        if inputs.policy.no_input {
            return reject("--no-input: this run takes no input".to_owned());
        }
        if let Some(answer) = read_answer(&inputs.dir, &request.id) {
            return match request.check(&answer) {
                Ok(()) => Some(answer),
                Err(error) => reject(format!("the answer did not fit the request: {error}")),
            };
        }
        let timeout = inputs.policy.timeout();
        (waited >= timeout)
            .then(|| format!("nobody answered within {} (--input-timeout)", crate::duration::format(timeout)))
            .and_then(reject)
    }

    /// Gives `answer` to the runner; the event that says how `request` was answered, or that the runner could not
    /// take it.
    fn deliver(
        &mut self,
        adapter: &dyn Adapter,
        state: &mut TranslateState,
        request: &Request,
        answer: &Answer,
    ) -> Translated {
        let Some(line) = adapter.answer_input(request, answer, state) else {
            return request.rejected("the runner cannot take an answer");
        };
        match self.write(&line) {
            Ok(()) => request.answered(answer),
            Err(error) => request.rejected(&format!("the runner did not take the answer: {error}")),
        }
    }

    /// Rejects what still waits (the turn ended without it), and the steers the runner did not take or that came
    /// too late to be given (never kept for the next turn); returns the events that say so.
    pub(super) fn abandon(&mut self, reason: &str) -> Vec<Translated> {
        let mut said: Vec<Translated> = self.pending.drain(..).map(|(request, _)| request.rejected(reason)).collect();
        let given = self.inputs.map(|inputs| crate::runs::steering::take_steers(&inputs.dir)).unwrap_or_default();
        let late = self.steering.drain(..).chain(given.into_iter().map(|steer| steer.id));
        said.extend(late.map(|id| {
            let reason = "the turn ended before the runner took it";
            Translated::new(EventKind::InputRejected, json!({"id": id, "kind": "steer", "reason": reason}))
        }));
        said
    }

    /// Closes the runner's stdin: it has given its result and reads nothing more.
    pub(super) fn close(&mut self) {
        self.stdin = None;
    }

    fn write(&mut self, line: &str) -> std::io::Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, "the runner has no stdin open"));
        };
        let mut bytes = line.trim_end_matches('\n').as_bytes().to_vec();
        bytes.push(b'\n');
        stdin.write_all(&bytes).and_then(|()| stdin.flush())
    }
}
