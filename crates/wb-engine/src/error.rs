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
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
}

impl EngineError {
    pub fn message(text: impl Into<String>) -> EngineError {
        EngineError::Message(text.into())
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> EngineError {
        EngineError::Io { context: context.into(), source }
    }
}

pub type Result<T> = std::result::Result<T, EngineError>;
