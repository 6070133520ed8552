//! The outcome manifest (immutable) and the application receipt (mutable), their host rules, and where
//! they live: `$WORKBENCH_HOME/outcomes/<wbo_id>/{outcome.json,application.json}`.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io};
use crate::store::ContentStore;
use crate::util::{atomic_write, is_digest, now_utc, private_dir, random_hex, write_new};

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

fn is_id_of(text: &str, prefix: &str) -> bool {
    text.strip_prefix(prefix).is_some_and(|rest| {
        (20..=64).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

fn is_child_id(text: &str) -> bool {
    let bytes = text.as_bytes();
    (3..=128).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

fn is_utc(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 20
        && text.ends_with('Z')
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18].iter().all(|&i| b[i].is_ascii_digit())
}

/// Whether a symlink target stays inside the workspace when resolved from the link at `path`.
pub(crate) fn symlink_target_is_safe(path: &str, target: &str) -> bool {
    if target.is_empty() || target.len() > 4096 || target.starts_with('/') || target.contains('\\') {
        return false;
    }
    let mut depth: i64 = path.split('/').count() as i64 - 1;
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => depth += 1,
        }
    }
    true
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Invalid(message.into())
}

fn check_content(content: &Content) -> Result<()> {
    if !is_digest(&content.digest) {
        return Err(Error::InvalidDigest(content.digest.clone()));
    }
    if content.media_type.is_empty() || content.media_type.len() > 255 {
        return Err(invalid("Outcome content media_type must be 1 to 255 characters"));
    }
    Ok(())
}

/// An artifact path is relative to the outbox, a changeset entry's to its workspace (`within`).
fn check_path(path: &str, within: &str) -> Result<()> {
    match wb_manifest::outbox::unsafe_path_reason(path) {
        Some(reason) => Err(invalid(format!("Outcome path {}: {path}", reason.replace("the outbox", within)))),
        None => Ok(()),
    }
}

impl Changeset {
    /// The host rules for one changeset (the facts' texts).
    pub fn validate(&self) -> Result<()> {
        if !is_child_id(&self.id) {
            return Err(invalid(format!("Invalid outcome changeset id: {}", self.id)));
        }
        if let WorkspaceRef::Named { name } = &self.workspace {
            if name.is_empty() || name.len() > 128 {
                return Err(invalid("Outcome workspace name must be 1 to 128 characters"));
            }
        }
        if !is_digest(&self.base.snapshot_digest) {
            return Err(Error::InvalidDigest(self.base.snapshot_digest.clone()));
        }
        let mut paths = HashSet::new();
        let mut stats = Stats::default();
        for entry in &self.entries {
            check_path(entry.path(), "its workspace")?;
            if !paths.insert(entry.path()) {
                return Err(invalid("Outcome changeset paths must be unique"));
            }
            match entry {
                Entry::Add { .. } => stats.additions += 1,
                Entry::Modify { .. } => stats.modifications += 1,
                Entry::Delete { .. } => stats.deletions += 1,
            }
            if let Some(Fingerprint::File { digest, mode, .. }) = entry.before() {
                if !is_digest(digest) {
                    return Err(Error::InvalidDigest(digest.clone()));
                }
                check_mode(*mode)?;
            }
            for (mode, target) in [
                entry.before().and_then(|f| match f {
                    Fingerprint::Symlink { mode, target } => Some((*mode, target)),
                    Fingerprint::File { .. } => None,
                }),
                entry.after().and_then(|s| match s {
                    State::Symlink { mode, target } => Some((*mode, target)),
                    State::File { .. } => None,
                }),
            ]
            .into_iter()
            .flatten()
            {
                check_mode(mode)?;
                if !symlink_target_is_safe(entry.path(), target) {
                    return Err(Error::EscapingSymlink(entry.path().to_owned()));
                }
            }
            if let Some(State::File { content, mode }) = entry.after() {
                check_content(content)?;
                check_mode(*mode)?;
            }
        }
        for path in &paths {
            let mut prefix = String::new();
            for segment in path.split('/') {
                if !prefix.is_empty() && paths.contains(prefix.as_str()) {
                    return Err(invalid("Outcome change file and directory paths conflict"));
                }
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(segment);
            }
        }
        if stats.additions != self.stats.additions
            || stats.modifications != self.stats.modifications
            || stats.deletions != self.stats.deletions
            || self.stats.binary_files > self.entries.len() as u64
        {
            return Err(invalid("Outcome changeset stats do not match its entries"));
        }
        if let Some(review) = &self.review {
            check_content(review)?;
        }
        Ok(())
    }
}

fn check_mode(mode: u32) -> Result<()> {
    if mode > 0o777 {
        return Err(invalid(format!("Invalid outcome mode: {mode}")));
    }
    Ok(())
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

    /// Every host rule the schema leaves out, plus the schema's own shape rules.
    pub fn validate(&self) -> Result<()> {
        if self.version != 1 {
            return Err(invalid("Outcome version must be 1"));
        }
        if !is_id_of(&self.id, "wbo_") {
            return Err(invalid(format!("Invalid outcome id: {}", self.id)));
        }
        if !is_id_of(&self.run_id, "wb_") {
            return Err(invalid(format!("Invalid outcome run_id: {}", self.run_id)));
        }
        if !is_utc(&self.created_at) {
            return Err(invalid("Outcome created_at must be a UTC timestamp"));
        }
        if let Some(turn) = self.turn_index {
            if turn == 0 || turn > 9_007_199_254_740_991 {
                return Err(invalid("Outcome turn_index must be a positive safe integer"));
            }
            if self.completeness != Completeness::Partial || !self.changesets.is_empty() {
                return Err(invalid("Turn outcomes must be partial and contain no workspace changesets"));
            }
        }
        if let Some(summary) = &self.summary {
            if summary.is_empty() || summary.chars().count() > 16384 {
                return Err(invalid("Outcome summary must be 1 to 16384 characters"));
            }
        }
        let mut ids = HashSet::new();
        let mut unique = |id: &str| -> Result<()> {
            if !is_child_id(id) {
                return Err(invalid(format!("Invalid outcome child id: {id}")));
            }
            if !ids.insert(id.to_owned()) {
                return Err(invalid(format!("Outcome child ids must be unique: {id}")));
            }
            Ok(())
        };
        for changeset in &self.changesets {
            unique(&changeset.id)?;
            changeset.validate()?;
        }
        for artifact in &self.artifacts {
            unique(&artifact.id)?;
            if artifact.name.is_empty() || artifact.name.chars().count() > 512 {
                return Err(invalid("Outcome artifact name must be 1 to 512 characters"));
            }
            if let Some(path) = &artifact.path {
                check_path(path, "the outbox")?;
                if path == "outcome.json" {
                    return Err(invalid("Outcome artifact path must not be outcome.json"));
                }
                if path.trim().is_empty() {
                    return Err(invalid("Outcome artifact path must not be blank"));
                }
            }
            check_content(&artifact.content)?;
        }
        for link in &self.links {
            unique(&link.id)?;
            if link.label.is_empty() || link.label.chars().count() > 512 {
                return Err(invalid("Outcome link label must be 1 to 512 characters"));
            }
            if !(link.uri.starts_with("http://") || link.uri.starts_with("https://")) || link.uri.len() > 8192 {
                return Err(invalid(format!("Outcome link uri must be an http or https URL: {}", link.uri)));
            }
            let authority =
                link.uri.split_once("://").map_or("", |(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""));
            if authority.is_empty() || authority.contains('@') {
                return Err(invalid(format!("Outcome link uri must not carry credentials: {}", link.label)));
            }
            if let Some(kind) = &link.kind {
                if !matches!(kind.as_str(), "pull_request" | "preview" | "external") {
                    return Err(invalid(format!("Invalid outcome link kind: {kind}")));
                }
            }
        }
        for warning in &self.warnings {
            if warning.code.is_empty() || warning.code.len() > 128 || warning.message.is_empty() {
                return Err(invalid("Outcome warnings need a code and a message"));
            }
        }
        Ok(())
    }

    /// Parses and validates a manifest's text, with the facts' texts for entry shapes.
    pub fn parse(text: &str) -> Result<Outcome> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("Invalid outcome manifest: {e}")))?;
        let changesets = value.get("changesets").and_then(serde_json::Value::as_array);
        for changeset in changesets.into_iter().flatten() {
            let entries = changeset.get("entries").and_then(serde_json::Value::as_array);
            for entry in entries.into_iter().flatten() {
                let before = entry.get("before").is_some();
                let after = entry.get("after").is_some();
                match entry.get("operation").and_then(serde_json::Value::as_str) {
                    Some("add") if before || !after => {
                        return Err(invalid("Added outcome entry must have only an after state"));
                    }
                    Some("modify") if !before || !after => {
                        return Err(invalid("Modified outcome entry must have before and after states"));
                    }
                    Some("delete") if !before || after => {
                        return Err(invalid("Deleted outcome entry must have only a before state"));
                    }
                    _ => {}
                }
            }
        }
        let outcome: Outcome =
            serde_json::from_value(value).map_err(|e| invalid(format!("Invalid outcome manifest: {e}")))?;
        outcome.validate()?;
        Ok(outcome)
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

    pub fn validate(&self) -> Result<()> {
        if self.version != 1 || !is_id_of(&self.outcome_id, "wbo_") || !is_utc(&self.updated_at) {
            return Err(invalid("Invalid outcome receipt"));
        }
        match (self.state, &self.applied_at) {
            (ReceiptState::Applied, None) => Err(invalid("Applied outcome receipt must include applied_at")),
            (ReceiptState::Applied, Some(at)) if !is_utc(at) => Err(invalid("Invalid outcome receipt")),
            (ReceiptState::Pending | ReceiptState::Present, Some(_)) => {
                Err(invalid("Only an applied outcome receipt may include applied_at"))
            }
            _ => Ok(()),
        }
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

/// The outcomes of a Workbench home.
#[derive(Debug)]
pub struct OutcomeStore<'a> {
    pub content: &'a ContentStore,
}

impl<'a> OutcomeStore<'a> {
    pub fn new(content: &'a ContentStore) -> OutcomeStore<'a> {
        OutcomeStore { content }
    }

    pub fn dir(&self, outcome_id: &str) -> Result<PathBuf> {
        if !is_id_of(outcome_id, "wbo_") {
            return Err(invalid(format!("Invalid outcome id: {outcome_id}")));
        }
        Ok(self.content.home().join("outcomes").join(outcome_id))
    }

    /// Validates and commits a manifest (written once, never replaced), its receipt and its bindings.
    /// Every referenced content must already be in the store.
    pub fn commit(&self, outcome: &Outcome, state: ReceiptState, bindings: &WorkspaceBindings) -> Result<Receipt> {
        outcome.validate()?;
        for content in outcome.contents() {
            if !self.content.contains(&content.digest) {
                return Err(Error::MissingContent(content.digest.clone()));
            }
        }
        let text = to_json(outcome)?;
        if text.len() as u64 > self.content.limits().per_manifest {
            return Err(Error::Quota(self.content.limits().per_manifest));
        }
        let dir = self.dir(&outcome.id)?;
        private_dir(dir.parent().unwrap_or(Path::new("/")))?;
        fs::DirBuilder::new().mode_0700().create(&dir).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::AlreadyExists(outcome.id.clone())
            } else {
                Error::Io { context: format!("Cannot create {}", dir.display()), cause: e }
            }
        })?;
        atomic_write(&dir.join("workspaces.json"), to_json(bindings)?.as_bytes(), 0o600)?;
        let receipt = Receipt::new(&outcome.id, state);
        atomic_write(&dir.join("application.json"), to_json(&receipt)?.as_bytes(), 0o600)?;
        // The manifest last: its presence marks a committed outcome.
        write_new(&dir.join("outcome.json"), text.as_bytes())?;
        Ok(receipt)
    }

    pub fn load(&self, outcome_id: &str) -> Result<Outcome> {
        let path = self.dir(outcome_id)?.join("outcome.json");
        let text = read_existing(&path, outcome_id)?;
        Outcome::parse(&text)
    }

    pub fn receipt(&self, outcome_id: &str) -> Result<Receipt> {
        let path = self.dir(outcome_id)?.join("application.json");
        let text = read_existing(&path, outcome_id)?;
        let receipt: Receipt =
            serde_json::from_str(&text).map_err(|e| invalid(format!("Invalid outcome receipt: {e}")))?;
        receipt.validate()?;
        Ok(receipt)
    }

    pub fn write_receipt(&self, receipt: &Receipt) -> Result<()> {
        receipt.validate()?;
        atomic_write(&self.dir(&receipt.outcome_id)?.join("application.json"), to_json(receipt)?.as_bytes(), 0o600)
    }

    pub fn bindings(&self, outcome_id: &str) -> Result<WorkspaceBindings> {
        let path = self.dir(outcome_id)?.join("workspaces.json");
        match fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| invalid(format!("Invalid outcome bindings: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(WorkspaceBindings::default()),
            Err(e) => Err(Error::Io { context: format!("Cannot read {}", path.display()), cause: e }),
        }
    }
}

trait Mode0700 {
    fn mode_0700(&mut self) -> &mut Self;
}

impl Mode0700 for fs::DirBuilder {
    fn mode_0700(&mut self) -> &mut Self {
        std::os::unix::fs::DirBuilderExt::mode(self, 0o700)
    }
}

fn read_existing(path: &Path, outcome_id: &str) -> Result<String> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotFound(outcome_id.to_owned())),
        Err(e) => Err(io(format!("Cannot read {}", path.display()))(e)),
    }
}

pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| invalid(format!("Cannot serialise outcome data: {e}")))
}
