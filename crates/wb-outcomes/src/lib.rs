//! The outcomes contract (`shared/spec/outcomes.md`, engine facts (f)): what a run returns, made durable,
//! verifiable and safely applicable.
//!
//! - [`ContentStore`]: content-addressed blobs under `$WORKBENCH_HOME/blobs/sha256/<2 hex>/<rest>`.
//! - [`Snapshot`] and [`build_changeset`]: a workspace baseline and the changeset between two snapshots.
//! - [`collect_outbox`]: the artifacts, summary and links of a run's outbox.
//! - [`Outcome`], [`Receipt`] and [`OutcomeStore`]: the immutable manifest and the mutable receipt.
//! - [`apply`], [`recover`] and [`export`]: all-or-nothing application to workspaces (journalled, so an
//!   interrupted apply is finished or rolled back), and export to a directory.

pub mod apply;
mod error;
mod export;
mod manifest;
mod outbox;
mod snapshot;
mod store;
mod util;

pub use apply::{ApplyResult, apply, recover};
pub use error::{Error, Result};
pub use export::export;
pub use manifest::{
    Artifact, Base, Changeset, Completeness, Content, Entry, Fingerprint, Link, Outcome, OutcomeStore, Receipt,
    ReceiptState, State, Stats, Warning, WorkspaceBindings, WorkspaceRef, new_outcome_id,
};
pub use outbox::{Collected, collect_outbox};
pub use snapshot::{SNAPSHOT_DIGEST_METHOD, Snapshot, SnapshotFile, build_changeset, is_excluded};
pub use store::{ContentStore, Limits, OutcomeBudget};
pub use util::{is_digest, now_utc, sha256_hex};

use std::path::PathBuf;

/// `$WORKBENCH_HOME`, else `~/.workbench`.
pub fn default_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("WORKBENCH_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(home));
    }
    std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|home| PathBuf::from(home).join(".workbench"))
}
