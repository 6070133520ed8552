//! The outcome manifest (immutable) and the application receipt (mutable): their types, as the standard's
//! schemas name them. The host rules they must pass are in `rules.rs` (symlink targets: `symlinks.rs`); where they live, in `store/outcomes.rs`.

mod rules;
mod symlinks;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::{now_utc, random_hex};

pub(crate) use rules::is_id_of;
pub(crate) use symlinks::{link_on_disk, symlink_stays_inside};

/// A content descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Content {
    pub digest: String,
    pub media_type: String,
    pub size_bytes: u64,
}

/// What an existing path looked like (`before`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Fingerprint {
    File { digest: String, mode: u32, size_bytes: u64 },
    Symlink { mode: u32, target: String },
}

/// What a path becomes (`after`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum State {
    File { content: Content, mode: u32 },
    Symlink { mode: u32, target: String },
}

/// One change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "lowercase", deny_unknown_fields)]
pub enum Entry {
    Add { path: String, after: State },
    Modify { path: String, before: Fingerprint, after: State },
    Delete { path: String, before: Fingerprint },
}

impl Entry {
    pub fn path(&self) -> &str {
        match self {
            Entry::Add { path, .. } | Entry::Modify { path, .. } | Entry::Delete { path, .. } => path,
        }
    }

    pub fn before(&self) -> Option<&Fingerprint> {
        match self {
            Entry::Add { .. } => None,
            Entry::Modify { before, .. } | Entry::Delete { before, .. } => Some(before),
        }
    }

    pub fn after(&self) -> Option<&State> {
        match self {
            Entry::Delete { .. } => None,
            Entry::Add { after, .. } | Entry::Modify { after, .. } => Some(after),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum WorkspaceRef {
    Primary,
    Named { name: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Base {
    pub snapshot_digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_revision: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stats {
    pub additions: u64,
    pub modifications: u64,
    pub deletions: u64,
    pub binary_files: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Changeset {
    pub id: String,
    pub workspace: WorkspaceRef,
    pub base: Base,
    pub entries: Vec<Entry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Content>,
    pub stats: Stats,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub content: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub id: String,
    pub label: String,
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Completeness {
    Complete,
    Partial,
}

/// The version 1 outcome manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    pub version: u32,
    pub id: String,
    pub run_id: String,
    pub created_at: String,
    pub completeness: Completeness,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_index: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub changesets: Vec<Changeset>,
    pub artifacts: Vec<Artifact>,
    pub links: Vec<Link>,
    pub warnings: Vec<Warning>,
}

/// A new outcome id: `wbo_` and 32 lower-case hex digits.
pub fn new_outcome_id() -> String {
    format!("wbo_{}", random_hex(16))
}

impl Outcome {
    /// An empty outcome for a run, created now.
    pub fn new(run_id: &str, completeness: Completeness) -> Outcome {
        Outcome {
            version: 1,
            id: new_outcome_id(),
            run_id: run_id.to_owned(),
            created_at: now_utc(),
            completeness,
            turn_index: None,
            summary: None,
            changesets: Vec::new(),
            artifacts: Vec::new(),
            links: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Every content descriptor the manifest references.
    pub fn contents(&self) -> Vec<&Content> {
        let mut out = Vec::new();
        for changeset in &self.changesets {
            out.extend(changeset.review.iter());
            for entry in &changeset.entries {
                if let Some(State::File { content, .. }) = entry.after() {
                    out.push(content);
                }
            }
        }
        out.extend(self.artifacts.iter().map(|a| &a.content));
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiptState {
    Pending,
    Present,
    Applied,
}

/// The mutable application receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    pub version: u32,
    pub outcome_id: String,
    pub state: ReceiptState,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_at: Option<String>,
}

impl Receipt {
    pub fn new(outcome_id: &str, state: ReceiptState) -> Receipt {
        let now = now_utc();
        let applied_at = (state == ReceiptState::Applied).then(|| now.clone());
        Receipt { version: 1, outcome_id: outcome_id.to_owned(), state, updated_at: now, applied_at }
    }
}

/// Where each changeset's workspace was when the outcome was collected (engine-private, stored next to
/// the manifest as `workspaces.json`; not part of the standard's manifest).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceBindings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<PathBuf>,
    #[serde(default)]
    pub named: BTreeMap<String, PathBuf>,
}

pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| Error::Invalid(format!("Cannot serialise outcome data: {e}")))
}
