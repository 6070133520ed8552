//! The answers to a run's requests (`crate::input`), one file each under `runs/<id>/answers/`: written once
//! (the first answer wins), read by the run's owner.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use super::RunDir;
use crate::input::{Answer, AnswerError, Request};

/// The most bytes an answer file may hold.
const ANSWER_LIMIT: u64 = 1024 * 1024;

/// What a person gives for a request: an answer's text, or a refusal.
#[derive(Clone, Copy, Debug)]
pub enum Given<'a> {
    Text(&'a str),
    Reject,
}

/// Answers request `request` of run `run_id` under the Workbench home `home`: the run must be live and the
/// request pending, the answer must fit it (`Request::answer_from_text`); it is then written, once. Returns the
/// request and the answer written. What `wb-lsp answer`, the language server and the ACP agent share.
pub fn answer(
    home: &std::path::Path,
    run_id: &str,
    request: &str,
    given: Given<'_>,
) -> Result<(Request, Answer), AnswerError> {
    if !Request::is_id(request) {
        return Err(AnswerError::NotARequestId(request.to_owned()));
    }
    let record =
        super::read_record(home, run_id).map_err(|source| AnswerError::Run { run_id: run_id.to_owned(), source })?;
    let state = record.state();
    if !state.is_live() {
        return Err(AnswerError::NotRunning { run_id: record.run_id, state: state.as_str() });
    }
    let Some(pending) = record.pending.into_iter().find(|pending| pending.id == request) else {
        return Err(AnswerError::NotPending { run_id: record.run_id, request: request.to_owned() });
    };
    let answer = match given {
        Given::Reject => Answer::Reject { reason: Some("refused by the person".to_owned()) },
        Given::Text(text) => pending.answer_from_text(text)?,
    };
    write_answer(&RunDir::new(home, run_id), &pending.id, &answer)?;
    Ok((pending, answer))
}

/// Writes the answer to `request` of the run in `dir`, once: a second answer is [`AnswerError::AlreadyAnswered`].
pub fn write_answer(dir: &RunDir, request: &str, answer: &Answer) -> Result<(), AnswerError> {
    // The id names a file: only what a request id can be.
    if !Request::is_id(request) {
        return Err(AnswerError::NotARequestId(request.to_owned()));
    }
    let io = |source| AnswerError::Io { id: request.to_owned(), source };
    let answers = dir.answers();
    wb_outcomes::create_private_dir(&answers).map_err(io)?;
    let bytes = serde_json::to_vec(answer).map_err(|error| io(std::io::Error::other(error)))?;
    // Written under a temporary name, then linked to its own: the answer appears whole, and only once.
    let temporary = answers.join(format!(".{request}.{}", wb_outcomes::random_hex(4)));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary).map_err(io)?;
    let written = file.write_all(&bytes).and_then(|()| file.sync_all());
    drop(file);
    let linked = written.and_then(|()| std::fs::hard_link(&temporary, dir.answer(request)));
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(AnswerError::AlreadyAnswered(request.to_owned()))
        }
        Err(error) => Err(io(error)),
    }
}

/// The answer to `request` of the run in `dir`, once one was written; `None` before, or when what is there is
/// not an answer (it is left for the timeout).
pub fn read_answer(dir: &RunDir, request: &str) -> Option<Answer> {
    if !Request::is_id(request) {
        return None;
    }
    let bytes = super::layout::read_bounded(&dir.answer(request), ANSWER_LIMIT).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Choice;

    #[test]
    fn the_first_answer_wins() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = RunDir::new(home.path(), "wb_0123456789abcdef01234567");
        dir.create().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_answer(&dir, "in_00000001"), None);
        let allow = Answer::Choice { choice: Choice::Allow };
        assert!(write_answer(&dir, "in_00000001", &allow).is_ok());
        let deny = Answer::Choice { choice: Choice::Deny };
        assert!(matches!(write_answer(&dir, "in_00000001", &deny), Err(AnswerError::AlreadyAnswered(_))));
        assert_eq!(read_answer(&dir, "in_00000001"), Some(allow));
        let left = std::fs::read_dir(dir.answers()).map(|d| d.flatten().count()).unwrap_or(0);
        assert_eq!(left, 1, "no temporary file is left");
        assert!(Request::is_id("in_00000001") && !Request::is_id("in_../x") && !Request::is_id("in_0000000A"));
        assert!(matches!(write_answer(&dir, "../../x", &deny), Err(AnswerError::NotARequestId(_))));
    }
}
