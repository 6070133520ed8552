//! Engine errors. Their messages are the reference engine's texts (engine facts b.6) where it has one.

use std::path::PathBuf;

/// Why a dry run, smoke or run could not proceed. One variant per kind of failure, so callers decide by type
/// (a dry run lists [`EngineError::Missing`] as problems and fails on the rest; the CLI maps
/// [`EngineError::NeedsAuthentication`] to exit 3); the texts are the user's.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A refusal in the reference's words (a rule of the run lifecycle: a runtime not declared, a requirement
    /// not met, a binding missing). Never contains an environment value.
    #[error("{0}")]
    Message(String),
    /// The package has errors; the first is shown.
    #[error("{message}")]
    Invalid { message: String, path: PathBuf, line: u32, column: u32 },
    /// No route with credentials: smoke reports "needs-auth" (exit 3) instead of failing.
    #[error("{0}")]
    NeedsAuthentication(String),
    /// Preflight looked inside the runtime and did not find something the run needs (the runner, a declared
    /// tool, git or GNU tar in a sandbox, a readable asset, the host engine): the reference's text. A dry run
    /// reports it beside the translation; smoke and run stop.
    #[error("{0}")]
    Missing(String),
    /// The Docker engine could not be reached, or refused or failed a call.
    #[error("{0}")]
    Engine(String),
    /// A call to a sandbox service failed (its text names the service, the call and what happened; its
    /// failure says whether the service may still have acted).
    #[error(transparent)]
    Transport(crate::runtime::remote::http::failure::HttpError),
    /// Staging into a sandbox or collecting from it refused what it met (an unsafe archive entry, a file over
    /// a limit, a Dockerfile that copies a credential).
    #[error("{0}")]
    Staging(String),
    /// The outcome store (collecting, committing or reading an outcome).
    #[error(transparent)]
    Store(#[from] wb_outcomes::Error),
    /// The file system failed: what was being done, the path when one is known, and the cause. The cause is part
    /// of the text and deliberately not `source()`: chains (`{:#}`) would print it twice. A full disk is
    /// [`EngineError::NoSpace`] instead.
    #[error("{context}: {cause}")]
    Io { context: String, path: Option<PathBuf>, cause: std::io::Error },
    /// The step stopped because cancellation was asked (Ctrl-C, `kill`, a run's limit) while it ran: a wait, a
    /// template build, a call to a service.
    #[error("{0}")]
    Cancelled(String),
    /// A limit was reached: which one, and the text naming it.
    #[error("{text}")]
    Limit { limit: Limit, text: String },
    /// A service refused the call for now, too many requests (HTTP 429) after the retries.
    #[error(transparent)]
    RateLimited(crate::runtime::remote::http::failure::HttpError),
    /// No space left: on the host's disk (`ENOSPC`), or in a sandbox (its disk, its service's storage: HTTP 507).
    #[error("{text}")]
    NoSpace { on: Space, text: String },
    /// A service answered what the engine cannot use: not JSON, a field missing, another sandbox or process
    /// than the one asked for, a state it does not know.
    #[error("{0}")]
    Reply(String),
    /// This runtime or service cannot do what was asked (a service that cannot pause or reconnect, a Dockerfile
    /// form a builder does not take).
    #[error("{0}")]
    Unsupported(String),
}

/// Where an [`EngineError::NoSpace`] ran out of space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// This machine's file system.
    Host,
    /// A sandbox's disk, or the storage its service grants.
    Sandbox,
}

/// Which limit an [`EngineError::Limit`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The output of a command the engine keeps.
    Output,
    /// What one transfer into or out of a sandbox may carry.
    Transfer,
    /// The time a step may take (a sandbox starting, a template building, a command running).
    Time,
    /// The size of a file the engine reads (an environment file).
    FileSize,
    /// The entries a search may visit, or the directories it may guard.
    Entries,
}

impl From<crate::runtime::remote::http::failure::HttpError> for EngineError {
    /// A failed call by its kind: cancelled, rate limited, out of storage (507), or else a transport failure.
    fn from(error: crate::runtime::remote::http::failure::HttpError) -> EngineError {
        use crate::runtime::remote::http::failure::Failure;
        match error.failure {
            Failure::Cancelled => EngineError::Cancelled(error.text),
            Failure::Status(429) => EngineError::RateLimited(error),
            Failure::Status(507) => EngineError::NoSpace { on: Space::Sandbox, text: error.text },
            _ => EngineError::Transport(error),
        }
    }
}

impl EngineError {
    pub fn message(text: impl Into<String>) -> EngineError {
        EngineError::Message(text.into())
    }

    /// The file system failed at no one path (or one the context names); a full disk is [`EngineError::NoSpace`].
    pub fn io(context: impl Into<String>, cause: std::io::Error) -> EngineError {
        EngineError::file_system(context.into(), None, cause)
    }

    /// The file system failed at `path`; a full disk is [`EngineError::NoSpace`].
    pub fn io_at(path: impl Into<PathBuf>, context: impl Into<String>, cause: std::io::Error) -> EngineError {
        EngineError::file_system(context.into(), Some(path.into()), cause)
    }

    fn file_system(context: String, path: Option<PathBuf>, cause: std::io::Error) -> EngineError {
        if cause.kind() == std::io::ErrorKind::StorageFull {
            return EngineError::NoSpace { on: Space::Host, text: format!("{context}: {cause}") };
        }
        EngineError::Io { context, path, cause }
    }

    /// Cancellation stopped the step.
    pub fn cancelled(text: impl Into<String>) -> EngineError {
        EngineError::Cancelled(text.into())
    }

    /// A limit was reached.
    pub fn limit(limit: Limit, text: impl Into<String>) -> EngineError {
        EngineError::Limit { limit, text: text.into() }
    }

    /// A service's answer the engine cannot use.
    pub fn reply(text: impl Into<String>) -> EngineError {
        EngineError::Reply(text.into())
    }

    /// This runtime or service cannot do it.
    pub fn unsupported(text: impl Into<String>) -> EngineError {
        EngineError::Unsupported(text.into())
    }

    /// The file system failed (an I/O error or a full disk): the CLI's exit 2 where a command tells it apart.
    pub fn is_file_system(&self) -> bool {
        matches!(self, EngineError::Io { .. } | EngineError::NoSpace { on: Space::Host, .. })
    }

    /// A refusal while staging or collecting.
    pub fn staging(text: impl Into<String>) -> EngineError {
        EngineError::Staging(text.into())
    }

    /// Something preflight did not find.
    pub fn missing(text: impl Into<String>) -> EngineError {
        EngineError::Missing(text.into())
    }
}

pub type Result<T> = std::result::Result<T, EngineError>;

#[cfg(test)]
mod tests {
    use super::EngineError;

    #[test]
    fn a_full_disk_is_no_space_with_the_same_text() {
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let error = EngineError::io_at("/tmp/x", "cannot write /tmp/x", full);
        assert!(matches!(error, EngineError::NoSpace { on: super::Space::Host, .. }), "{error:?}");
        assert!(error.is_file_system());
        assert!(error.to_string().starts_with("cannot write /tmp/x: "), "{error}");
    }

    #[test]
    fn a_call_s_failure_becomes_its_kind() {
        use crate::runtime::remote::http::failure::{Failure, HttpError};
        let of = |failure| EngineError::from(HttpError { text: "E2B GET /x failed".to_owned(), failure });
        assert!(matches!(of(Failure::Cancelled), EngineError::Cancelled(_)));
        assert!(matches!(of(Failure::Status(429)), EngineError::RateLimited(_)));
        assert!(matches!(of(Failure::Status(507)), EngineError::NoSpace { on: super::Space::Sandbox, .. }));
        assert!(matches!(of(Failure::Status(500)), EngineError::Transport(_)));
        assert_eq!(of(Failure::Status(429)).to_string(), "E2B GET /x failed");
    }

    #[test]
    fn an_io_error_prints_its_cause_once() {
        let error = EngineError::io("cannot create the outbox", std::io::Error::other("disk full"));
        assert_eq!(error.to_string(), "cannot create the outbox: disk full");
        assert_eq!(format!("{:#}", anyhow::Error::new(error)), "cannot create the outbox: disk full");
    }
}
