//! Test-only fault injection: failures, concurrent edits and simulated kills at chosen points of an apply, and
//! the step hook the crash test (`wb-lsp`'s `tests/apply_crash.rs`) kills a real process with.

/// Test-only fault injection.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Fail just before installing the entry with this index (in plan order).
    pub fail_before_install: Option<usize>,
    /// Make every restore fail.
    pub fail_rollback: bool,
    /// Write to the destination of the entry with this index just before it is installed (a concurrent
    /// edit).
    pub touch_before_install: Option<usize>,
    /// Stop without any rollback once this many entries are installed (a simulated kill).
    pub crash_after_installs: Option<usize>,
    /// Stop without cleanup right after the receipt is written (a simulated kill).
    pub crash_after_receipt: bool,
    /// Called with the step's name after every file-system step of an apply or a recovery: the lease,
    /// each backup, the journal, each created directory, temp file, rename and removal, the receipt, each
    /// cleanup. The `wb-lsp` binary's crash test hook (`WB_LSP_CRASH_AT_STEP=N`) kills the process in the
    /// Nth call.
    pub step: Option<fn(&str)>,
}

impl Faults {
    pub(super) fn at(&self, name: impl FnOnce() -> String) {
        if let Some(step) = self.step {
            step(&name());
        }
    }
}
