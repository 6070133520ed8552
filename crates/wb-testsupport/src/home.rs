//! A scratch home for the processes a test starts: `HOME`, the XDG directories and `WORKBENCH_HOME` inside a
//! fresh temporary directory, so nothing a test runs reads or writes the developer's own home (a runner's
//! sign-in, an editor's configuration, `~/.workbench`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary home, removed when dropped: keep it while the processes given it run.
pub struct ScratchHome {
    _temp: tempfile::TempDir,
    path: PathBuf,
}

impl ScratchHome {
    #[allow(clippy::new_without_default)]
    pub fn new() -> ScratchHome {
        let temp = tempfile::Builder::new().prefix("wb-test-home-").tempdir().expect("a scratch home");
        let path = temp.path().canonicalize().expect("the scratch home's path");
        ScratchHome { _temp: temp, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Points `command`'s `HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME`, `XDG_CACHE_HOME` and
    /// `WORKBENCH_HOME` (`<home>/.workbench`, unless the command sets its own) into this home.
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        let own_workbench_home = command.get_envs().any(|(name, value)| name == "WORKBENCH_HOME" && value.is_some());
        command
            .env("HOME", &self.path)
            .env("XDG_CONFIG_HOME", self.path.join(".config"))
            .env("XDG_DATA_HOME", self.path.join(".local/share"))
            .env("XDG_STATE_HOME", self.path.join(".local/state"))
            .env("XDG_CACHE_HOME", self.path.join(".cache"));
        if !own_workbench_home {
            command.env("WORKBENCH_HOME", self.path.join(".workbench"));
        }
        command
    }
}

thread_local! {
    /// The scratch home of the test running on this thread (libtest runs each test on a thread of its own, so
    /// it is removed when the test ends).
    static TEST_HOME: ScratchHome = ScratchHome::new();
}

/// Gives `command` the scratch home of the running test (see [`ScratchHome::apply`]): one per test, shared by
/// the processes it starts, removed when it ends.
pub fn isolate(command: &mut Command) -> &mut Command {
    TEST_HOME.with(|home| home.apply(command))
}

/// Whether `command` sets `HOME` itself.
pub fn sets_home(command: &Command) -> bool {
    command.get_envs().any(|(name, value)| name == "HOME" && value.is_some())
}
