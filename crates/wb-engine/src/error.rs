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
    Transport(#[from] crate::runtime::remote::http::failure::HttpError),
    /// Staging into a sandbox or collecting from it refused what it met (an unsafe archive entry, a file over
    /// a limit, a Dockerfile that copies a credential).
    #[error("{0}")]
    Staging(String),
    /// The outcome store (collecting, committing or reading an outcome).
    #[error(transparent)]
    Store(#[from] wb_outcomes::Error),
    /// The cause is part of the text and deliberately not `source()`: chains (`{:#}`) would print it twice.
    #[error("{context}: {cause}")]
    Io { context: String, cause: std::io::Error },
}

impl EngineError {
    pub fn message(text: impl Into<String>) -> EngineError {
        EngineError::Message(text.into())
    }

    pub fn io(context: impl Into<String>, cause: std::io::Error) -> EngineError {
        EngineError::Io { context: context.into(), cause }
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
    fn an_io_error_prints_its_cause_once() {
        let error = EngineError::io("cannot create the outbox", std::io::Error::other("disk full"));
        assert_eq!(error.to_string(), "cannot create the outbox: disk full");
        assert_eq!(format!("{:#}", anyhow::Error::new(error)), "cannot create the outbox: disk full");
    }
}
