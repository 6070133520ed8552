//! The host rules of manifests and receipts: everything the schemas leave out (ids, timestamps, safe paths
//! and symlink targets, unique child ids, stats that match their entries), with the engine facts' texts.

use std::collections::{HashMap, HashSet};

use super::symlinks::{symlink_stays_inside, symlink_target_is_safe};
use super::{
    Changeset, Completeness, Content, Entry, Fingerprint, Outcome, Receipt, ReceiptState, State, Stats, WorkspaceRef,
};
use crate::digest::is_digest;
use crate::error::{Error, Result};

pub(crate) fn is_id_of(text: &str, prefix: &str) -> bool {
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
    match wb_manifest::outbox_declaration::unsafe_path_reason(path) {
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
        if let WorkspaceRef::Named { name } = &self.workspace
            && (name.is_empty() || name.len() > 128)
        {
            return Err(invalid("Outcome workspace name must be 1 to 128 characters"));
        }
        if !is_digest(&self.base.snapshot_digest) {
            return Err(Error::InvalidDigest(self.base.snapshot_digest.clone()));
        }
        let mut paths = HashSet::new();
        let mut stats = Stats::default();
        let links: HashMap<&str, &str> = self
            .entries
            .iter()
            .filter_map(|entry| match entry.after() {
                Some(State::Symlink { target, .. }) => Some((entry.path(), target.as_str())),
                _ => None,
            })
            .collect();
        let link_at = |path: &str| links.get(path).map(|target| (*target).to_owned());
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
            // A link that was there is judged as it was; a link the changeset makes, through every link it makes.
            if let Some(Fingerprint::Symlink { mode, target }) = entry.before() {
                check_mode(*mode)?;
                if !symlink_target_is_safe(entry.path(), target) {
                    return Err(Error::EscapingSymlink(entry.path().to_owned()));
                }
            }
            if let Some(State::Symlink { mode, target }) = entry.after() {
                check_mode(*mode)?;
                if !symlink_stays_inside(entry.path(), target, &link_at) {
                    return Err(Error::EscapingSymlink(entry.path().to_owned()));
                }
            }
            if let Some(State::File { content, mode }) = entry.after() {
                check_content(content)?;
                check_mode(*mode)?;
            }
        }
        // A file may not be the parent of another path in the same state; a directory replaced by a file (or a
        // file by a directory) is a deletion and an addition, each in its own state.
        let before: HashSet<&str> = self.entries.iter().filter(|e| e.before().is_some()).map(Entry::path).collect();
        let after: HashSet<&str> = self.entries.iter().filter(|e| e.after().is_some()).map(Entry::path).collect();
        if has_file_parent(&before) || has_file_parent(&after) {
            return Err(invalid("Outcome change file and directory paths conflict"));
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

/// Whether one path of a state is a proper prefix (a parent directory) of another.
fn has_file_parent(paths: &HashSet<&str>) -> bool {
    paths.iter().any(|path| path.match_indices('/').any(|(at, _)| paths.contains(&path[..at])))
}

fn check_mode(mode: u32) -> Result<()> {
    if mode > 0o777 {
        return Err(invalid(format!("Invalid outcome mode: {mode}")));
    }
    Ok(())
}

impl Outcome {
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
        if let Some(summary) = &self.summary
            && (summary.is_empty() || summary.chars().count() > 16384)
        {
            return Err(invalid("Outcome summary must be 1 to 16384 characters"));
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
            if let Some(kind) = &link.kind
                && !matches!(kind.as_str(), "pull_request" | "preview" | "external")
            {
                return Err(invalid(format!("Invalid outcome link kind: {kind}")));
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
}

impl Receipt {
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
