//! The exit statuses of `wb-lsp`, one table: every command ends with an [`Exit`], made a process `ExitCode`
//! here and nowhere else. README.md's "Exit status" table lists exactly [`Exit::ALL`] (the tidy test holds them
//! together).

use std::process::ExitCode;

use serde::{Deserialize, Serialize};

/// How a command ended. The meanings are README's; each command's section says which of them it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
#[repr(u8)]
pub enum Exit {
    /// Success: no errors, nothing left to change, the run completed and its outcome was collected.
    Success = 0,
    /// Failure: errors found (or warnings with `--deny-warnings`), something that would change with `--check`,
    /// a run that failed, was lost or whose outcome could not be collected, an outcome refused.
    Failure = 1,
    /// Usage or I/O: a command line that cannot be used, or the file system failed; from `wait`: the run needs
    /// input (`answer`).
    Usage = 2,
    /// Needs authentication: no model route has credentials (`smoke`, `run`).
    NeedsAuthentication = 3,
    /// Timed out: `wait --timeout` passed first (the run goes on).
    Timeout = 124,
    /// Cancelled: Ctrl-C, `kill`, or a `--max-cost`/`--max-duration` limit crossed.
    Cancelled = 130,
}

impl Exit {
    /// Every status with its meaning, as README's table lists them.
    pub const ALL: &[(Exit, &str)] = &[
        (Exit::Success, "no errors, nothing left to change, the run completed and its outcome was collected"),
        (
            Exit::Failure,
            "errors found (or warnings with `--deny-warnings`), something that would change with `--check`, a run \
             that failed, was lost or whose outcome could not be collected, an outcome refused",
        ),
        (
            Exit::Usage,
            "a command line that cannot be used, or the file system failed; from `wait`: the run needs input (`answer`)",
        ),
        (Exit::NeedsAuthentication, "no model route has credentials (`smoke`, `run`)"),
        (Exit::Timeout, "`wait --timeout` passed first (the run goes on)"),
        (Exit::Cancelled, "Ctrl-C, `kill`, or a `--max-cost`/`--max-duration` limit crossed"),
    ];

    /// The number the process exits with.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Success when `ok`, else failure.
    pub const fn failure_unless(ok: bool) -> Exit {
        if ok { Exit::Success } else { Exit::Failure }
    }

    /// Ends the process at once with this status (a second Ctrl-C, an interrupt before a run started).
    pub fn now(self) -> ! {
        std::process::exit(i32::from(self.code()))
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

impl From<Exit> for u8 {
    fn from(exit: Exit) -> u8 {
        exit.code()
    }
}

/// A number that is none of [`Exit::ALL`]'s.
#[derive(Debug, thiserror::Error)]
#[error("{0} is not an exit status of wb-lsp")]
pub struct UnknownExit(u8);

impl TryFrom<u8> for Exit {
    type Error = UnknownExit;

    fn try_from(code: u8) -> Result<Exit, UnknownExit> {
        Exit::ALL.iter().map(|(exit, _)| *exit).find(|exit| exit.code() == code).ok_or(UnknownExit(code))
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn every_status_goes_over_the_wire_as_its_number() {
        for (exit, _) in Exit::ALL {
            let wire = serde_json::to_string(exit).unwrap();
            assert_eq!(wire, exit.code().to_string());
            assert_eq!(serde_json::from_str::<Exit>(&wire).unwrap(), *exit);
        }
        assert!(serde_json::from_str::<Exit>("7").is_err());
    }
}
