//! The outcomes library's one error type.

use std::path::PathBuf;

/// Every failure of the outcomes library. Display texts follow the reference engine's exact texts where it
/// has one (engine facts (f)).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cause is part of the text and deliberately not a `source`: a chain printer (`{error:#}`) would
    /// print it twice.
    #[error("{context}: {cause}")]
    Io { context: String, cause: std::io::Error },
    #[error("Outcome storage quota exceeded ({0} bytes). Review wb clean before removing retained results.")]
    Quota(u64),
    #[error("Invalid outcome digest: {0}")]
    InvalidDigest(String),
    #[error("Outcome content does not match its digest: {0}")]
    DigestMismatch(String),
    #[error("Outcome content is missing: {0}")]
    MissingContent(String),
    /// A manifest, receipt, changeset or declaration rule (the message is the rule's text).
    #[error("{0}")]
    Invalid(String),
    /// Outbox collection failed (never reported as an empty success).
    #[error("Outcome collection failed: {0}")]
    Collection(String),
    #[error("Escaping symlink is not allowed in outcome: {0}")]
    EscapingSymlink(String),
    #[error("Expected an outcome id (wbo_…) or a run id (wb_…): {0}")]
    UnknownId(String),
    #[error("Run has no outcome: {0}")]
    RunHasNoOutcome(String),
    #[error("Outcome not found: {0}")]
    NotFound(String),
    #[error("Outcome is already recorded: {0}")]
    AlreadyExists(String),
    #[error("Outcome is being applied by another process: {0}")]
    Busy(String),
    #[error("Outcome changes are already present in the workspace")]
    AlreadyPresent,
    #[error("Outcome requires named workspace: {0}")]
    MissingNamedWorkspace(String),
    #[error("Outcome workspace is unavailable or unsafe: {}", .0.display())]
    UnsafeWorkspace(PathBuf),
    #[error("Outcome destination has an unsafe parent: {}", .0.display())]
    UnsafeParent(PathBuf),
    #[error("Outcome destination is not a file: {0}")]
    NotAFile(String),
    #[error("Outcome path is unsafe: {0}")]
    UnsafePath(String),
    /// Labels are `path` for the primary workspace and `name:path` for named ones.
    #[error("Outcome conflicts with current workspace content: {}", .0.join(", "))]
    Conflict(Vec<String>),
    #[error("The outcome changes no such path: {0}")]
    NotInOutcome(String),
    #[error("Workspace changed during outcome application: {0}")]
    ChangedDuring(String),
    #[error("Workspace changed after outcome installation: {0}")]
    ChangedAfter(String),
    #[error("Outcome application failed and could not fully roll back. Recovery backups remain at {}", .0.display())]
    RollbackFailed(PathBuf),
    #[error("Outcome export destination already exists: {}", .0.display())]
    ExportExists(PathBuf),
    #[error("Outcome export is incomplete at {}: {detail}", .path.display())]
    ExportIncomplete { path: PathBuf, detail: String },
    #[error("Workspace snapshot failed: {0}")]
    Snapshot(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |cause| Error::Io { context, cause }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `{error:#}` prints (anyhow's alternate form): the error, then each source after `: `.
    fn chain(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    }

    #[test]
    fn an_io_error_names_its_cause_once() {
        let error = io("Cannot write /w/receipt.json")(std::io::Error::other("disk full"));
        assert_eq!(error.to_string(), "Cannot write /w/receipt.json: disk full");
        assert_eq!(chain(&error), "Cannot write /w/receipt.json: disk full");
    }
}
