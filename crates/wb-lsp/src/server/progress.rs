//! Progress of a large batch of diagnostics (opening a folder of many packages, a settings change): one
//! `window/workDoneProgress` per batch, begun once the client accepted the token, reported as results arrive,
//! ended when the last one is in.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use lsp_types as lsp;

/// Batches smaller than this finish before a progress bar would be read: none is shown.
pub const MIN_OWNERS: usize = 10;

/// How often a report is sent while a batch runs.
const REPORT_EVERY: Duration = Duration::from_millis(50);

/// A batch in flight.
pub struct CheckProgress {
    pub token: lsp::ProgressToken,
    total: usize,
    pending: HashSet<u64>,
    last_report: Instant,
    /// The client accepted the token and `begin` was sent.
    pub started: bool,
}

impl CheckProgress {
    pub fn new(token: lsp::ProgressToken) -> CheckProgress {
        CheckProgress { token, total: 0, pending: HashSet::new(), last_report: Instant::now(), started: false }
    }

    /// Adds scheduled generations to the batch.
    pub fn add(&mut self, generations: impl IntoIterator<Item = u64>) {
        for generation in generations {
            if self.pending.insert(generation) {
                self.total += 1;
            }
        }
    }

    /// The `begin` report (the batch may be partly done by the time the client accepted the token).
    pub fn begin(&mut self) -> lsp::WorkDoneProgress {
        self.started = true;
        let done = self.total - self.pending.len();
        lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
            title: "Checking Workbench packages".to_owned(),
            cancellable: Some(false),
            message: Some(format!("{done}/{}", self.total)),
            percentage: Some((done * 100 / self.total.max(1)) as u32),
        })
    }

    /// The `end` report.
    pub fn end(&self) -> lsp::WorkDoneProgress {
        let noun = if self.total == 1 { "package" } else { "packages" };
        lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd { message: Some(format!("Checked {} {noun}", self.total)) })
    }

    /// A result arrived for `generation`: the report to send now, if any (the end once the batch is done;
    /// nothing before the batch started).
    pub fn finished(&mut self, generation: u64) -> Option<lsp::WorkDoneProgress> {
        if !self.pending.remove(&generation) || !self.started {
            return None;
        }
        let done = self.total - self.pending.len();
        if self.pending.is_empty() {
            return Some(self.end());
        }
        if self.last_report.elapsed() < REPORT_EVERY {
            return None;
        }
        self.last_report = Instant::now();
        Some(lsp::WorkDoneProgress::Report(lsp::WorkDoneProgressReport {
            cancellable: Some(false),
            message: Some(format!("{done}/{}", self.total)),
            percentage: Some((done * 100 / self.total.max(1)) as u32),
        }))
    }

    pub fn is_done(&self) -> bool {
        self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_ends_when_its_last_result_arrives() {
        let mut progress = CheckProgress::new(lsp::ProgressToken::String("t".into()));
        progress.add([1, 2, 3]);
        assert!(progress.finished(1).is_none(), "nothing is sent before the client accepted the token");
        assert!(matches!(progress.begin(), lsp::WorkDoneProgress::Begin(ref b) if b.message.as_deref() == Some("1/3")));
        assert!(progress.finished(7).is_none(), "a result of another batch is not counted");
        progress.finished(2);
        assert!(!progress.is_done());
        match progress.finished(3) {
            Some(lsp::WorkDoneProgress::End(end)) => assert_eq!(end.message.as_deref(), Some("Checked 3 packages")),
            other => panic!("expected the end, got {other:?}"),
        }
        assert!(progress.is_done());
    }
}
