//! The outcomes contract (the standard's outcomes specification, engine facts (f)): what a run returns, made durable,
//! verifiable and safely applicable.
//!
//! - [`ContentStore`]: content-addressed blobs under `$WORKBENCH_HOME/blobs/sha256/<2 hex>/<rest>`.
//! - [`Snapshot`] and [`Changeset::between`]: a workspace baseline and the changeset between two snapshots.
//! - [`collect_outbox`]: the artifacts, summary and links of a run's outbox.
//! - [`Outcome`], [`Receipt`] and [`OutcomeStore`]: the immutable manifest and the mutable receipt, and which
//!   outcome a run id stands for ([`OutcomeStore::resolve`]).
//! - [`apply`], [`recover`] and [`export`]: all-or-nothing application to workspaces (journalled, so an
//!   interrupted apply is finished or rolled back), and export to a directory.
//! - [`retention`]: which old runs, outcomes and blobs `wb-lsp clean` removes (never an interrupted
//!   application).
//! - [`workspace_git`], [`workspace_git_output`]: Git on an agent-writable workspace, running nothing its
//!   configuration names, within a deadline.
//! - [`Root`]: a file beneath a directory an agent may be changing, found, read and replaced through
//!   directory handles that never follow a link (how `fix`, `fmt` and `migrate --write` write manifests).
//! - [`workbench_home`]: where all of it lives, one rule for the engine and every front end.
//! - [`write_atomic`], [`create_private_dir`], [`random_hex`], [`now_utc`]: the atomic writes, private (0700)
//!   directories, random ids and RFC 3339 timestamps the
//!   engine and the CLI share.

pub mod apply;
mod beneath;
mod confined;
mod digest;
mod error;
mod export;
mod files;
mod home;
mod ids;
mod manifest;
mod outbox_collection;
pub mod retention;
pub mod review;
mod snapshot;
mod store;

pub use apply::{ApplyResult, apply, apply_to_copy, recover};
pub use confined::{Confined, Refusal, Root};
pub use digest::{is_digest, sha256_hex};
pub use error::{Error, Result};
pub use export::export;
pub use files::{FileMode, create_private_dir, write_atomic};
pub use home::{
    NO_HOME, NoHome, RUNS_DIR, default_home, runs_dir, try_default_home, try_workbench_home, workbench_home,
};
pub use ids::{now_utc, random_hex};
pub use manifest::{
    Artifact, Base, Changeset, Completeness, Content, Entry, Fingerprint, Link, Outcome, Receipt, ReceiptState, State,
    Stats, Warning, WorkspaceBindings, WorkspaceRef, new_outcome_id,
};
pub use outbox_collection::{Collected, collect_outbox};
#[doc(hidden)]
pub use snapshot::set_git_deadline;
pub use snapshot::{SNAPSHOT_DIGEST_METHOD, Snapshot, SnapshotFile, is_excluded, workspace_git, workspace_git_output};
pub use store::{ContentStore, Limits, ListedOutcome, OutcomeBudget, OutcomeStore, list_outcomes};
