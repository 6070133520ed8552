//! `wb-lsp answer`: the person's answer to what a run asked. The answer is checked against the request (a choice
//! it offers, an option of each question) and written once to the run's directory (`runs::answers::answer`), then
//! followed in the run's log until the run says it took it.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use wb_engine::events::EventKind;
use wb_engine::input::Request;
use wb_engine::runs::answers::{Given, answer};
use wb_engine::runs::{self, LogReader};

use super::printable;
use super::runs::resolve;
use crate::cli::AnswerArgs;
use crate::exit::Exit;
use crate::supervisor;

/// The most bytes an answer read from a file or standard input may have.
const ANSWER_LIMIT: u64 = 1024 * 1024;
/// How long the run is given to say it took the answer.
const TAKEN_WITHIN: Duration = Duration::from_secs(15);

pub fn run(args: &AnswerArgs) -> anyhow::Result<Exit> {
    let home = supervisor::home()?;
    let record = resolve(&home, &args.run)?;
    if !Request::is_id(&args.request) {
        bail!("not a request id: {} (in_ and eight hex digits, as `wait` lists them)", printable(&args.request));
    }
    let text = if args.reject { None } else { Some(answer_text(args)?) };
    let given = text.as_deref().map_or(Given::Reject, Given::Text);
    if let Err(error) = answer(&home, &record.run_id, &args.request, given) {
        eprintln!("error: {}", printable(&error.to_string()));
        return Ok(Exit::Failure);
    }
    taken(&home, &record.run_id, &args.request, args)
}

/// The answer's text: the argument, the file's or standard input's.
fn answer_text(args: &AnswerArgs) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    if let Some(file) = &args.response_file {
        std::fs::File::open(file)
            .and_then(|file| file.take(ANSWER_LIMIT + 1).read_to_end(&mut bytes))
            .with_context(|| format!("cannot read {}", file.display()))?;
    } else if args.stdin {
        std::io::stdin().lock().take(ANSWER_LIMIT + 1).read_to_end(&mut bytes).context("cannot read standard input")?;
    } else if let Some(answer) = &args.answer {
        return Ok(answer.clone());
    } else {
        bail!("give an answer (allow, deny, allow_always, a question's answer), --response-file, --stdin or --reject");
    }
    if bytes.len() as u64 > ANSWER_LIMIT {
        bail!("the answer is larger than 1 MiB");
    }
    String::from_utf8(bytes).context("the answer is not UTF-8")
}

/// Follows the run's log until it says how it took the answer to `request`: prints that, exit 0 when the
/// answer went to the runner (a refusal asked with `--reject` too), 1 when the run refused it otherwise; 0 with
/// a note when the run has not said so yet.
fn taken(home: &std::path::Path, run_id: &str, request: &str, args: &AnswerArgs) -> anyhow::Result<Exit> {
    let mut reader = LogReader::open(home, run_id)?;
    let started = Instant::now();
    while started.elapsed() < TAKEN_WITHIN {
        for logged in reader.read_new()? {
            let Some(event) = logged.event() else { continue };
            let Some(kind) = event.known() else { continue };
            let answered = matches!(kind, EventKind::InputAccepted | EventKind::QuestionAnswered);
            let refused = matches!(kind, EventKind::InputRejected | EventKind::QuestionRejected);
            if !(answered || refused) || event.text("id") != Some(request) {
                continue;
            }
            let mut stdout = std::io::stdout().lock();
            if args.json {
                writeln!(stdout, "{}", serde_json::to_string(event)?)?;
            } else if answered {
                let how = event.text("answer").map_or_else(
                    || format!("{} answer(s)", event.data.get("answer_count").and_then(|n| n.as_u64()).unwrap_or(0)),
                    str::to_owned,
                );
                writeln!(stdout, "run {run_id}: request {request} answered ({how})")?;
            } else {
                let why = printable(event.text("reason").unwrap_or("refused"));
                writeln!(stdout, "run {run_id}: request {request} refused: {why}")?;
            }
            return Ok(Exit::failure_unless(answered || args.reject));
        }
        if !runs::read_record(home, run_id).is_ok_and(|record| record.state().is_live()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("run {run_id}: the answer to {request} is written; the run has not said it took it yet");
    Ok(Exit::Success)
}
