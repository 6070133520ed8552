//! `answer`'s arguments: what a run asked, and the person's answer to it.

use std::path::PathBuf;

use clap::Args;

/// `answer RUN REQUEST [ANSWER]`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("given").args(["answer", "response_file", "stdin", "reject"])))]
pub struct AnswerArgs {
    /// The run (`wb_…`, or the start of its id).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The request (`in_…`), as `wait` and `attach` list it.
    #[arg(value_name = "REQUEST")]
    pub request: String,
    /// A permission's `allow`, `deny` or `allow_always` (where offered); a question's answer (an option's label, or
    /// your own words where it allows them), or a JSON array of answers, one per question (each a string or an
    /// array of strings where several may be chosen).
    #[arg(value_name = "ANSWER")]
    pub answer: Option<String>,
    /// Read the answer from this file (at most 1 MiB).
    #[arg(long, value_name = "FILE")]
    pub response_file: Option<PathBuf>,
    /// Read the answer from standard input (at most 1 MiB).
    #[arg(long)]
    pub stdin: bool,
    /// Refuse the request, whatever it asks.
    #[arg(long)]
    pub reject: bool,
    /// Print the event that says how the run took the answer, as JSON.
    #[arg(long)]
    pub json: bool,
}
