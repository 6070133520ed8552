//! What the runner asks while a turn runs (`crate::input`): the runner's stdin, written the turn's opening input
//! as it starts and each answer as it comes; the requests the translation emitted, each waiting for its answer
//! file, the input timeout or `--no-input`; the answer checked once more, given to the runner in its own words,
//! and said in an event.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::adapters::{Adapter, TranslateState};
use crate::events::{EventKind, Translated};
use crate::input::{Answer, InputPolicy, Request};
use crate::runs::RunDir;
use crate::runs::answers::read_answer;
use crate::runtime::Launched;

/// Where a run's answers arrive and how long they are waited for.
pub(crate) struct Inputs {
    pub(crate) dir: RunDir,
    pub(crate) policy: InputPolicy,
}

/// One turn's stdin and pending requests.
pub(super) struct Asking<'a> {
    inputs: Option<&'a Inputs>,
    stdin: Option<Box<dyn Write + Send>>,
    pending: Vec<(Request, Instant)>,
}

impl<'a> Asking<'a> {
    /// Takes the launched runner's stdin and writes it `opening` (the turn's task in the runner's protocol).
    /// Returns the problem when the runner was to read its task there and cannot.
    pub(super) fn start(
        inputs: Option<&'a Inputs>,
        launched: &mut Launched,
        opening: Option<&str>,
    ) -> (Asking<'a>, Option<String>) {
        let mut asking = Asking { inputs, stdin: launched.stdin.take(), pending: Vec::new() };
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
        } else if matches!(event.kind, EventKind::InputRejected | EventKind::QuestionRejected) {
            let id = event.data.get("id").and_then(|id| id.as_str());
            self.pending.retain(|(request, _)| Some(request.id.as_str()) != id);
        }
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

    /// Rejects what still waits (the turn ended without it); returns the events that say so.
    pub(super) fn abandon(&mut self, reason: &str) -> Vec<Translated> {
        self.pending.drain(..).map(|(request, _)| request.rejected(reason)).collect()
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
