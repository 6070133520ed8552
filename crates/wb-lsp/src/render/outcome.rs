//! The text of a committed outcome: its summary line by line (what `wb-lsp outcome ID` prints and
//! `workbench.outcome` answers as `lines`, each line naming the changeset or artifact it shows), the one-line
//! brief, a changeset's label, what a receipt state means for applying, and the counts of an application.

use serde::Serialize;
use wb_outcomes::{Changeset, Entry, Outcome, Receipt, ReceiptState, WorkspaceRef};

use super::{continued, plural, printable};

/// One line of an outcome's summary, with what it shows: a changeset (its header and each of its entries) or an
/// artifact. An editor opens the changeset's review diff or the artifact from such a line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SummaryLine {
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changeset: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
}

impl SummaryLine {
    fn plain(text: String) -> SummaryLine {
        SummaryLine { text, changeset: None, artifact: None }
    }
}

/// A serde enum's wire name (`complete`, `pending`).
pub(crate) fn wire_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// `primary workspace` or `workspace NAME`.
pub(crate) fn workspace_label(workspace: &WorkspaceRef) -> String {
    match workspace {
        WorkspaceRef::Primary => "primary workspace".to_owned(),
        WorkspaceRef::Named { name } => format!("workspace {}", printable(name)),
    }
}

fn changes(additions: u64, modifications: u64, deletions: u64) -> String {
    format!("{additions} added, {modifications} modified, {deletions} deleted")
}

/// `primary workspace: 1 added, 1 modified, 0 deleted`.
pub(crate) fn changeset_label(changeset: &Changeset) -> String {
    let stats = &changeset.stats;
    format!(
        "{}: {}",
        workspace_label(&changeset.workspace),
        changes(stats.additions, stats.modifications, stats.deletions)
    )
}

/// The summary, line by line: the header (id, run, completeness, receipt state), the summary the runner wrote
/// (continuation lines indented; none when it is empty), each changeset with its entries, the artifacts, the
/// links and the warnings. Everything the runner chose is made printable. An entry taken on its own
/// (`--apply --only`) while the receipt is still pending says so.
pub(crate) fn summary_lines(
    outcome: &Outcome,
    receipt: &Receipt,
    taken: &std::collections::BTreeSet<String>,
) -> Vec<SummaryLine> {
    let mut lines = vec![SummaryLine::plain(format!(
        "Outcome {} (run {}, {}, {})",
        printable(&outcome.id),
        printable(&outcome.run_id),
        wire_name(&outcome.completeness),
        wire_name(&receipt.state)
    ))];
    if let Some(summary) = outcome.summary.as_deref().filter(|s| !s.is_empty()) {
        lines.extend(continued("Summary: ", summary).into_iter().map(SummaryLine::plain));
    }
    if outcome.changesets.is_empty() {
        lines.push(SummaryLine::plain("Changesets: none".to_owned()));
    }
    for changeset in &outcome.changesets {
        let line = |text: String| SummaryLine { text, changeset: Some(changeset.id.clone()), artifact: None };
        let stats = &changeset.stats;
        lines.push(line(format!(
            "Changeset {} ({}): {}",
            printable(&changeset.id),
            workspace_label(&changeset.workspace),
            changes(stats.additions, stats.modifications, stats.deletions)
        )));
        for entry in &changeset.entries {
            let mark = match entry {
                Entry::Add { .. } => 'A',
                Entry::Modify { .. } => 'M',
                Entry::Delete { .. } => 'D',
            };
            let taken = receipt.state == ReceiptState::Pending
                && taken.contains(&wb_outcomes::review::label(changeset, entry.path()));
            let note = if taken { " (taken)" } else { "" };
            lines.push(line(format!("  {mark} {}{note}", printable(entry.path()))));
        }
    }
    lines.push(SummaryLine::plain(format!("Artifacts: {}", outcome.artifacts.len())));
    for artifact in &outcome.artifacts {
        let path = artifact.path.as_deref().map(|p| format!(" ({})", printable(p))).unwrap_or_default();
        let text = format!(
            "  {}{path}: {}, {} bytes",
            printable(&artifact.name),
            printable(&artifact.content.media_type),
            artifact.content.size_bytes
        );
        lines.push(SummaryLine { text, changeset: None, artifact: Some(artifact.id.clone()) });
    }
    lines.push(SummaryLine::plain(format!("Links: {}", outcome.links.len())));
    for link in &outcome.links {
        let kind = link.kind.as_deref().map(|k| format!(" [{}]", printable(k))).unwrap_or_default();
        lines.push(SummaryLine::plain(format!("  {}{kind}: {}", printable(&link.label), printable(&link.uri))));
    }
    for warning in &outcome.warnings {
        let text = format!("warning: {} ({})", printable(&warning.message), printable(&warning.code));
        lines.push(SummaryLine::plain(text));
    }
    lines
}

/// One line: `1 added, 1 modified, 1 deleted; 1 artifact; 1 link` (changes summed over the changesets), or
/// `no changes; ...`.
pub(crate) fn brief(outcome: &Outcome) -> String {
    let sum = |stat: fn(&Changeset) -> u64| outcome.changesets.iter().map(stat).sum::<u64>();
    let (added, modified, deleted) =
        (sum(|c| c.stats.additions), sum(|c| c.stats.modifications), sum(|c| c.stats.deletions));
    let changes =
        if added + modified + deleted == 0 { "no changes".to_owned() } else { changes(added, modified, deleted) };
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    format!(
        "{changes}; {}; {}",
        plural(count(outcome.artifacts.len()), "artifact"),
        plural(count(outcome.links.len()), "link")
    )
}

/// What a receipt state means for applying the outcome.
pub(crate) fn receipt_explanation(state: &ReceiptState) -> &'static str {
    match state {
        ReceiptState::Pending => "its changes are not in the workspace yet",
        ReceiptState::Present => "the run already made its changes in the workspace",
        ReceiptState::Applied => "it was already applied",
    }
}

/// `3 applied, 0 unchanged`: what an application wrote.
pub(crate) fn applied_counts(applied: usize, unchanged: usize) -> String {
    format!("{applied} applied, {unchanged} unchanged")
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wb_outcomes::{
        Artifact, Base, Changeset, Completeness, Content, Entry, Fingerprint, Link, Outcome, Receipt, ReceiptState,
        State, Stats, Warning, WorkspaceRef,
    };

    use super::{SummaryLine, brief, changeset_label, receipt_explanation, summary_lines};

    fn content(media_type: &str, size_bytes: u64) -> Content {
        Content { digest: format!("sha256:{}", "a".repeat(64)), media_type: media_type.into(), size_bytes }
    }

    fn outcome(summary: Option<&str>) -> Outcome {
        let file = || State::File { content: content("text/plain", 1), mode: 0o644 };
        let before = Fingerprint::File { digest: content("text/plain", 1).digest, mode: 0o644, size_bytes: 1 };
        Outcome {
            version: 1,
            id: "wbo_00000000000000000000".into(),
            run_id: "wb_1".into(),
            created_at: "2026-12-01T00:00:00Z".into(),
            completeness: Completeness::Complete,
            turn_index: None,
            summary: summary.map(str::to_owned),
            changesets: vec![Changeset {
                id: "primary".into(),
                workspace: WorkspaceRef::Primary,
                base: Base { snapshot_digest: content("", 0).digest, git_revision: None },
                entries: vec![
                    Entry::Modify { path: "README.md".into(), before, after: file() },
                    Entry::Add { path: "notes/a\u{1b}[2J.txt".into(), after: file() },
                ],
                review: None,
                stats: Stats { additions: 1, modifications: 1, deletions: 0, binary_files: 0 },
            }],
            artifacts: vec![Artifact {
                id: "art_findings".into(),
                name: "Findings.html".into(),
                path: Some("reports/findings.html".into()),
                content: content("text/html", 18),
                description: None,
            }],
            links: vec![Link {
                id: "lnk_pr".into(),
                label: "PR".into(),
                uri: "https://example.com/pr/1".into(),
                kind: Some("pull_request".into()),
            }],
            warnings: vec![Warning { code: "w".into(), message: "odd\nthing".into() }],
        }
    }

    fn texts(lines: &[SummaryLine]) -> Vec<&str> {
        lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn the_summary_names_what_each_line_opens_and_escapes_runner_text() {
        let receipt = Receipt::new("wbo_00000000000000000000", ReceiptState::Pending);
        let lines = summary_lines(&outcome(Some("Done.\r\n\tsecond \u{7}")), &receipt, &Default::default());
        assert_eq!(
            texts(&lines),
            [
                "Outcome wbo_00000000000000000000 (run wb_1, complete, pending)",
                "Summary: Done.",
                "  \tsecond \\u{7}",
                "Changeset primary (primary workspace): 1 added, 1 modified, 0 deleted",
                "  M README.md",
                "  A notes/a\\u{1b}[2J.txt",
                "Artifacts: 1",
                "  Findings.html (reports/findings.html): text/html, 18 bytes",
                "Links: 1",
                "  PR [pull_request]: https://example.com/pr/1",
                "warning: odd\\nthing (w)",
            ]
        );
        let opens: Vec<(Option<&str>, Option<&str>)> =
            lines.iter().map(|l| (l.changeset.as_deref(), l.artifact.as_deref())).collect();
        let changeset = (Some("primary"), None);
        assert_eq!(opens[3..6], [changeset, changeset, changeset]);
        assert_eq!(opens[7], (None, Some("art_findings")));
        assert!(opens[..3].iter().chain([&opens[6]]).chain(&opens[8..]).all(|open| *open == (None, None)));
        assert_eq!(
            serde_json::to_value(&lines[6..8]).ok(),
            Some(json!([{"text": "Artifacts: 1"},
                {"text": "  Findings.html (reports/findings.html): text/html, 18 bytes", "artifact": "art_findings"}]))
        );
    }

    #[test]
    fn an_empty_or_absent_summary_gives_no_summary_line() {
        let receipt = Receipt::new("wbo_00000000000000000000", ReceiptState::Present);
        for summary in [None, Some("")] {
            let lines = summary_lines(&outcome(summary), &receipt, &Default::default());
            assert!(lines[1].text.starts_with("Changeset primary"), "{summary:?}: {:?}", texts(&lines));
        }
    }

    #[test]
    fn brief_label_and_explanations() {
        let outcome = outcome(None);
        assert_eq!(brief(&outcome), "1 added, 1 modified, 0 deleted; 1 artifact; 1 link");
        let empty = Outcome { changesets: Vec::new(), artifacts: Vec::new(), links: Vec::new(), ..outcome.clone() };
        assert_eq!(brief(&empty), "no changes; 0 artifacts; 0 links");
        assert_eq!(changeset_label(&outcome.changesets[0]), "primary workspace: 1 added, 1 modified, 0 deleted");
        assert_eq!(receipt_explanation(&ReceiptState::Present), "the run already made its changes in the workspace");
    }
}
