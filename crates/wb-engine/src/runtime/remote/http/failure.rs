//! How a call to a service failed, as the engine's errors carry it (`EngineError::Transport`): a leaf the
//! crate's error type names without depending on the transport.

/// Why a call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The service answered this status.
    Status(u16),
    /// The deadline passed (the service may still have acted).
    Deadline,
    Cancelled,
    /// The reply was larger than the limit.
    TooLarge,
    /// The connection failed or broke.
    Connection,
}

/// A failed call: the text (service, method, path, what happened; redacted) and why.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{text}")]
pub struct HttpError {
    pub text: String,
    pub failure: Failure,
}

impl HttpError {
    /// The service may have done what was asked (a deadline passed, the call was cancelled in flight, or the
    /// service failed on its side).
    pub fn uncertain(&self) -> bool {
        matches!(self.failure, Failure::Deadline | Failure::Cancelled)
            || matches!(self.failure, Failure::Status(s) if s >= 500)
    }
}
