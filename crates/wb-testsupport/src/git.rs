//! `git` for tests: a fixed identity, no signing, and no repository inherited from the environment.

use std::path::Path;
use std::process::Command;

/// Runs `git -C root ARGS` as a test author (no signing) and returns its standard output; a failure fails the
/// test with git's standard error. `GIT_DIR`, `GIT_WORK_TREE` and `GIT_INDEX_FILE` are removed, so tests run
/// from a Git hook still work on `root`'s own repository.
pub fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap_or_else(|error| panic!("git {args:?} in {}: {error}", root.display()));
    assert!(output.status.success(), "git {args:?} in {}: {}", root.display(), String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}
