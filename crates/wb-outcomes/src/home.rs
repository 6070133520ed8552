//! Where the Workbench home is: the one rule the engine (which stores a run's outcome there) and every front
//! end (which looks the outcome up) must share, or a lookup misses what a run stored.
//!
//! The home is never a directory other users share: without `WORKBENCH_HOME` and `HOME`, it is in the home
//! directory the user database gives this process's user, and without that there is none (a shared
//! `$TMPDIR/workbench` could be created first, or linked elsewhere, by anyone).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The directory of the home that holds one directory per run (`runs/<run-id>/`, laid out by the engine's
/// `wb_engine::runs::RunDir`; the outcome store keeps its own directories beside it).
pub const RUNS_DIR: &str = "runs";

/// `<home>/runs`: where every run's directory is.
pub fn runs_dir(home: &Path) -> PathBuf {
    home.join(RUNS_DIR)
}

/// Why there is no Workbench home.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no Workbench home: WORKBENCH_HOME and HOME are unset and the user database has no home directory for user {uid}; set WORKBENCH_HOME to a directory only you can write"
)]
pub struct NoHome {
    pub uid: u32,
}

/// What [`workbench_home`] answers when there is no home: a path that never exists and that a user other than
/// root cannot create, so nothing is stored anywhere shared (callers that can show an error use
/// [`try_workbench_home`] instead).
pub const NO_HOME: &str = "/nonexistent/workbench-home-unset";

/// The Workbench home for an environment (`variable` looks a name up in it): a non-empty `WORKBENCH_HOME`,
/// else `.workbench` in a non-empty `HOME`, else `.workbench` in the home directory the user database gives
/// this process's user. An empty value counts as unset, as it does for `HOME` everywhere.
pub fn try_workbench_home(variable: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, NoHome> {
    home_with(variable, passwd_home)
}

/// [`try_workbench_home`], with [`NO_HOME`] when there is none.
pub fn workbench_home(variable: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    try_workbench_home(variable).unwrap_or_else(|_| PathBuf::from(NO_HOME))
}

/// The Workbench home of this process's environment ([`workbench_home`]).
pub fn default_home() -> PathBuf {
    workbench_home(|name| std::env::var_os(name))
}

/// The Workbench home of this process's environment, or why there is none ([`try_workbench_home`]).
pub fn try_default_home() -> Result<PathBuf, NoHome> {
    try_workbench_home(|name| std::env::var_os(name))
}

fn home_with(
    variable: impl Fn(&str) -> Option<OsString>,
    passwd: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf, NoHome> {
    let set = |name: &str| variable(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    set("WORKBENCH_HOME")
        .or_else(|| set("HOME").map(|home| home.join(".workbench")))
        .or_else(|| passwd().map(|home| home.join(".workbench")))
        .ok_or_else(|| NoHome { uid: nix::unistd::getuid().as_raw() })
}

/// This process's user's home directory in the user database (`getpwuid_r`), when it has an absolute one.
fn passwd_home() -> Option<PathBuf> {
    let user = nix::unistd::User::from_uid(nix::unistd::getuid()).ok().flatten()?;
    Some(user.dir).filter(|dir| dir.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_of(pairs: &[(&str, &str)], passwd: Option<&str>) -> Result<PathBuf, NoHome> {
        home_with(
            |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(v)),
            || passwd.map(PathBuf::from),
        )
    }

    #[test]
    fn an_empty_workbench_home_counts_as_unset() {
        let some = Some("/p");
        assert_eq!(home_of(&[("WORKBENCH_HOME", "/w"), ("HOME", "/h")], some), Ok(PathBuf::from("/w")));
        assert_eq!(home_of(&[("WORKBENCH_HOME", ""), ("HOME", "/h")], some), Ok(PathBuf::from("/h/.workbench")));
        assert_eq!(home_of(&[("HOME", "/h")], some), Ok(PathBuf::from("/h/.workbench")));
    }

    /// Without `WORKBENCH_HOME` and `HOME`, the home is the user database's, never the shared temporary
    /// directory; without that either, there is none, and the error says what to set.
    #[test]
    fn without_home_the_user_database_decides_and_nothing_is_shared() {
        assert_eq!(
            home_of(&[("WORKBENCH_HOME", ""), ("HOME", "")], Some("/home/ada")),
            Ok("/home/ada/.workbench".into())
        );
        let none = home_of(&[], None);
        let uid = nix::unistd::getuid().as_raw();
        assert_eq!(none, Err(NoHome { uid }));
        let message = none.map_err(|error| error.to_string()).unwrap_err();
        assert!(message.contains("set WORKBENCH_HOME"), "{message}");
        assert_eq!(workbench_home(|_| None), passwd_home().map_or(PathBuf::from(NO_HOME), |h| h.join(".workbench")));
        assert!(!workbench_home(|_| None).starts_with(std::env::temp_dir()), "never the shared temporary directory");
        // This process's user is in the database (the test runs as a real user).
        assert!(passwd_home().is_some());
    }
}
