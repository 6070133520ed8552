//! What applying selected files took (`outcome ID --apply --only PATH…`), kept beside the receipt in
//! `outcomes/<id>/taken.json` (the receipt itself stays `pending`, valid against the official schema, until
//! every changeset path holds the outcome's content). Its write is the commit point of a partial apply: the
//! journal names the transaction, and recovery finds it here once committed.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Faults;
use super::journal::write_stepped;
use crate::error::{Error, Result, io};
use crate::manifest::to_json;
use crate::store::{ContentStore, OutcomeStore};

/// The file beside the receipt.
pub(super) const TAKEN: &str = "taken.json";

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Taken {
    pub(super) version: u32,
    /// The labels taken so far (`path`, or `name:path` in a named workspace).
    pub(super) paths: BTreeSet<String>,
    /// The transaction that wrote this (a partial apply's commit point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) last_transaction: Option<String>,
}

pub(super) fn read(dir: &Path) -> Result<Taken> {
    let path = dir.join(TAKEN);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("Invalid {}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Taken::default()),
        Err(e) => Err(io(format!("Cannot read {}", path.display()))(e)),
    }
}

/// Adds `labels` to what was taken, naming `transaction` (the commit point of a partial apply).
pub(super) fn record(
    dir: &Path,
    labels: impl IntoIterator<Item = String>,
    transaction: Option<&str>,
    faults: &Faults,
) -> Result<()> {
    let mut taken = read(dir)?;
    taken.version = 1;
    taken.paths.extend(labels);
    taken.last_transaction = transaction.map(str::to_owned);
    write_stepped(&dir.join(TAKEN), to_json(&taken)?.as_bytes(), faults, "taken")
}

/// The paths of outcome `outcome_id` taken one by one so far (empty when none were).
pub fn taken(store: &ContentStore, outcome_id: &str) -> Result<BTreeSet<String>> {
    Ok(read(&OutcomeStore::new(store).dir(outcome_id)?)?.paths)
}
