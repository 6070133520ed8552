#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::os::unix::fs::symlink;

use common::{RUN_ID, assert_schema_valid, outcome_schema_valid};
use wb_outcomes::{
    Completeness, ContentStore, Error, Outcome, OutcomeBudget, OutcomeStore, Receipt, ReceiptState, Warning,
    WorkspaceBindings, collect_outbox, now_utc,
};
use wb_testsupport::write;

fn collect(outbox: &std::path::Path) -> wb_outcomes::Result<wb_outcomes::Collected> {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    collect_outbox(outbox, &store, &mut OutcomeBudget::new())
}

#[test]
fn collection_with_a_declaration_commits_a_schema_valid_outcome() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let outbox = tempfile::tempdir().unwrap();
    write(outbox.path(), "reports/findings.html", "<h1>Findings</h1>");
    write(outbox.path(), "notes.txt", "plain");
    write(outbox.path(), "data/outcome.json", "{\"nested\": \"is an artifact\"}");
    write(
        outbox.path(),
        "outcome.json",
        r#"{"version": 1, "summary": "Prepared a report",
            "artifacts": [{"path": "reports/findings.html", "name": "Findings.html", "description": "The report", "media_type": "text/html"}],
            "links": [{"label": "Implementation PR", "uri": "https://github.com/example/project/pull/42", "kind": "pull_request"}, {"label": "Preview", "uri": "http://localhost:3000/"}]}"#,
    );
    let collected = collect_outbox(outbox.path(), &store, &mut OutcomeBudget::new()).unwrap();
    assert_eq!(collected.summary.as_deref(), Some("Prepared a report"));
    let paths: Vec<&str> = collected.artifacts.iter().filter_map(|a| a.path.as_deref()).collect();
    assert_eq!(paths, ["data/outcome.json", "notes.txt", "reports/findings.html"]);
    let report = &collected.artifacts[2];
    assert_eq!(report.name, "Findings.html");
    assert_eq!(report.description.as_deref(), Some("The report"));
    assert_eq!(report.content.media_type, "text/html");
    assert_eq!(store.read(&report.content.digest).unwrap(), b"<h1>Findings</h1>");
    assert_eq!(collected.artifacts[1].name, "notes.txt");
    assert_eq!(collected.artifacts[1].content.media_type, "text/plain");
    assert_eq!(collected.links.len(), 2);
    assert_eq!(collected.links[0].kind.as_deref(), Some("pull_request"));

    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    assert!(outcome.id.starts_with("wbo_") && outcome.created_at.ends_with('Z'));
    outcome.summary = collected.summary;
    outcome.artifacts = collected.artifacts;
    outcome.links = collected.links;
    outcome.warnings.push(Warning { code: "partial_diff".into(), message: "A note".into() });
    let outcomes = OutcomeStore::new(&store);
    let receipt = outcomes.commit(&outcome, ReceiptState::Present, &WorkspaceBindings::default()).unwrap();
    assert_eq!(receipt.state, ReceiptState::Present);
    assert_schema_valid(home.path(), &outcome.id);
    assert_eq!(outcomes.load(&outcome.id).unwrap(), outcome);
    // Immutable: a second commit of the same id is refused and the manifest is unchanged.
    assert!(matches!(
        outcomes.commit(&outcome, ReceiptState::Present, &WorkspaceBindings::default()),
        Err(Error::AlreadyExists(_))
    ));
    let dir = home.path().join("outcomes").join(&outcome.id);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    for file in ["outcome.json", "application.json"] {
        assert_eq!(fs::metadata(dir.join(file)).unwrap().permissions().mode() & 0o777, 0o600);
    }

    // A turn snapshot: partial, no changesets, present.
    let mut turn = Outcome::new(RUN_ID, Completeness::Partial);
    turn.turn_index = Some(2);
    outcomes.commit(&turn, ReceiptState::Present, &WorkspaceBindings::default()).unwrap();
    assert_schema_valid(home.path(), &turn.id);

    // An applied receipt.
    let applied = Receipt::new(&turn.id, ReceiptState::Applied);
    assert!(applied.applied_at.is_some());
    outcomes.write_receipt(&applied).unwrap();
    assert_schema_valid(home.path(), &turn.id);
    let pending = Receipt::new(&turn.id, ReceiptState::Pending);
    outcomes.write_receipt(&pending).unwrap();
    assert_schema_valid(home.path(), &turn.id);
}

#[test]
fn collection_failures_are_errors() {
    type Setup = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, Setup, &str)> = vec![
        (
            "symlink",
            Box::new(|p| {
                write(p, "real.txt", "x");
                symlink("real.txt", p.join("link.txt")).unwrap();
            }),
            "Outcome collection failed: Outbox contains a symbolic link: link.txt",
        ),
        (
            "fifo",
            Box::new(|p| {
                let status = std::process::Command::new("mkfifo").arg(p.join("pipe")).status().unwrap();
                assert!(status.success());
            }),
            "Outcome collection failed: Outbox contains a special file: pipe",
        ),
        (
            "invalid json",
            Box::new(|p| write(p, "outcome.json", "{not json")),
            "Outcome collection failed: Declared outcome is not valid JSON",
        ),
        (
            "not an object",
            Box::new(|p| write(p, "outcome.json", "[1]")),
            "Outcome collection failed: Declared outcome must be an object",
        ),
        (
            "bad version",
            Box::new(|p| write(p, "outcome.json", r#"{"version": 2}"#)),
            "Outcome collection failed: Declared outcome version must be 1",
        ),
        (
            "missing declared",
            Box::new(|p| write(p, "outcome.json", r#"{"version": 1, "artifacts": [{"path": "missing.txt"}]}"#)),
            "Outcome collection failed: Declared artifact file does not exist: missing.txt",
        ),
        (
            "escaping declared",
            Box::new(|p| write(p, "outcome.json", r#"{"version": 1, "artifacts": [{"path": "../x"}]}"#)),
            "Outcome collection failed: Declared artifact path must stay inside the outbox",
        ),
        (
            "bad link",
            Box::new(|p| write(p, "outcome.json", r#"{"version": 1, "links": [{"label": "x", "uri": "ftp://x"}]}"#)),
            "Outcome collection failed: Declared link uri must be an absolute http or https URL",
        ),
    ];
    for (name, setup, expected) in cases {
        let outbox = tempfile::tempdir().unwrap();
        setup(outbox.path());
        let error = collect(outbox.path()).unwrap_err().to_string();
        assert!(error.starts_with(expected), "{name}: {error}");
    }
    // A missing outbox is an error too, never an empty success.
    assert!(collect(std::path::Path::new("/nonexistent/outbox")).is_err());
    // An empty outbox is an empty (successful) collection.
    let empty = tempfile::tempdir().unwrap();
    assert!(collect(empty.path()).unwrap().artifacts.is_empty());
}

fn invalid(mutate: impl Fn(&mut Outcome)) -> String {
    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    mutate(&mut outcome);
    outcome.validate().unwrap_err().to_string()
}

#[test]
fn manifest_and_receipt_rules() {
    let content = wb_outcomes::Content {
        digest: format!("sha256:{}", "a".repeat(64)),
        media_type: "text/plain".into(),
        size_bytes: 1,
    };
    let artifact = |id: &str, path: Option<&str>| wb_outcomes::Artifact {
        id: id.into(),
        name: "n".into(),
        path: path.map(str::to_owned),
        content: content.clone(),
        description: None,
    };
    assert_eq!(
        invalid(|o| o.artifacts.push(artifact("art", Some("outcome.json")))),
        "Outcome artifact path must not be outcome.json"
    );
    assert_eq!(
        invalid(|o| {
            o.artifacts.push(artifact("dup", None));
            o.links.push(wb_outcomes::Link {
                id: "dup".into(),
                label: "l".into(),
                uri: "https://x".into(),
                kind: None,
            });
        }),
        "Outcome child ids must be unique: dup"
    );
    assert_eq!(
        invalid(|o| o.links.push(wb_outcomes::Link {
            id: "pr_link".into(),
            label: "PR".into(),
            uri: "https://user:token@github.com/x/y/pull/1".into(),
            kind: None
        })),
        "Outcome link uri must not carry credentials: PR"
    );
    assert_eq!(invalid(|o| o.turn_index = Some(0)), "Outcome turn_index must be a positive safe integer");
    assert_eq!(
        invalid(|o| o.turn_index = Some(1)),
        "Turn outcomes must be partial and contain no workspace changesets"
    );
    assert_eq!(
        invalid(|o| {
            let mut a = artifact("art", None);
            a.content.digest = "sha256:XYZ".into();
            o.artifacts.push(a);
        }),
        "Invalid outcome digest: sha256:XYZ"
    );
    let mut changeset = wb_outcomes::Changeset {
        id: "cs1".into(),
        workspace: wb_outcomes::WorkspaceRef::Primary,
        base: wb_outcomes::Base { snapshot_digest: content.digest.clone(), git_revision: None },
        entries: vec![
            wb_outcomes::Entry::Add {
                path: "a".into(),
                after: wb_outcomes::State::File { content: content.clone(), mode: 0o644 },
            },
            wb_outcomes::Entry::Add {
                path: "a/b".into(),
                after: wb_outcomes::State::File { content: content.clone(), mode: 0o644 },
            },
        ],
        review: None,
        stats: wb_outcomes::Stats { additions: 2, ..Default::default() },
    };
    assert_eq!(changeset.validate().unwrap_err().to_string(), "Outcome change file and directory paths conflict");
    changeset.entries[1] = changeset.entries[0].clone();
    assert_eq!(changeset.validate().unwrap_err().to_string(), "Outcome changeset paths must be unique");
    changeset.entries.pop();
    assert_eq!(changeset.validate().unwrap_err().to_string(), "Outcome changeset stats do not match its entries");
    changeset.stats.additions = 1;
    changeset.validate().unwrap();
    changeset.entries[0] = wb_outcomes::Entry::Add {
        path: "l".into(),
        after: wb_outcomes::State::Symlink { mode: 0o777, target: "../x".into() },
    };
    assert_eq!(changeset.validate().unwrap_err().to_string(), "Escaping symlink is not allowed in outcome: l");

    // Entry shapes are enforced when reading a manifest (the facts' texts are the serde variants).
    let bad_add = r#"{"path": "a", "operation": "add", "before": {"kind": "symlink", "mode": 511, "target": "x"}, "after": {"kind": "symlink", "mode": 511, "target": "x"}}"#;
    assert!(serde_json::from_str::<wb_outcomes::Entry>(bad_add).is_err());
    let mut manifest = serde_json::to_value(Outcome::new(RUN_ID, Completeness::Complete)).unwrap();
    let entry_cases = [
        (bad_add, "Added outcome entry must have only an after state"),
        (
            r#"{"path": "a", "operation": "modify", "after": {"kind": "symlink", "mode": 511, "target": "x"}}"#,
            "Modified outcome entry must have before and after states",
        ),
        (
            r#"{"path": "a", "operation": "delete", "before": {"kind": "symlink", "mode": 511, "target": "x"}, "after": {"kind": "symlink", "mode": 511, "target": "x"}}"#,
            "Deleted outcome entry must have only a before state",
        ),
    ];
    for (entry, expected) in entry_cases {
        let mut cs = serde_json::to_value(&changeset).unwrap();
        cs["entries"] = serde_json::json!([serde_json::from_str::<serde_json::Value>(entry).unwrap()]);
        manifest["changesets"] = serde_json::json!([cs]);
        assert_eq!(Outcome::parse(&manifest.to_string()).unwrap_err().to_string(), expected);
    }

    // Receipts.
    let mut receipt = Receipt::new("wbo_abcdefghij0123456789", ReceiptState::Applied);
    receipt.applied_at = None;
    assert_eq!(receipt.validate().unwrap_err().to_string(), "Applied outcome receipt must include applied_at");
    receipt.state = ReceiptState::Pending;
    receipt.applied_at = Some(now_utc());
    assert_eq!(receipt.validate().unwrap_err().to_string(), "Only an applied outcome receipt may include applied_at");

    // A valid outcome is schema-valid as serialised.
    let mut outcome = Outcome::new(RUN_ID, Completeness::Partial);
    outcome.changesets.push(changeset.clone());
    outcome.changesets[0].entries[0] = wb_outcomes::Entry::Add {
        path: "dir/l".into(),
        after: wb_outcomes::State::Symlink { mode: 0o777, target: "../x".into() },
    };
    outcome.validate().unwrap();
    assert!(outcome_schema_valid(&outcome));
}
