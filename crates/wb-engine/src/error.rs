//! Engine errors. Their messages are the reference engine's texts (engine facts b.6) where it has one.

use std::path::PathBuf;

/// Why a dry run, smoke or run could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A message for the user, in the reference's words. Never contains an environment value.
    #[error("{0}")]
    Message(String),
    /// The package has errors; the first is shown.
    #[error("{message}")]
    Invalid { message: String, path: PathBuf, line: u32, column: u32 },
    /// No route with credentials: smoke reports "needs-auth" (exit 3) instead of failing.
    #[error("{0}")]
    NeedsAuthentication(String),
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
