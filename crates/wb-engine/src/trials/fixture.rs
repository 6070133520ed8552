//! An attempt's starting repository, made fresh from its task's fixture: an empty repository, a copy of a
//! directory beside the task, or a clone of a repository at a full commit (its `subdir` the workspace), then the
//! task's overlay copied over it. The same function makes the copy an attempt's result is graded in, so the
//! gates never run where the agent worked.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wb_manifest::trial_task::{FixtureSource, TrialTask};

use crate::adapters::package_files::{Links, copy_tree};

/// How long a clone and its checkout may take.
const CLONE_DEADLINE: Duration = Duration::from_secs(600);

/// Why a fixture could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error("git {step} of {url} failed: {detail}")]
    Git { step: &'static str, url: String, detail: String },
    #[error("the fixture's subdir {0} is not a directory of the repository")]
    Subdir(String),
}

/// Makes task's fixture at `dest` (which must not exist) and answers the workspace: `dest`, or its `subdir`.
pub fn materialize(task: &TrialTask, dest: &Path) -> Result<PathBuf, FixtureError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| FixtureError::Io { what, path, source }
    };
    std::fs::create_dir(dest).map_err(io("cannot create", dest))?;
    std::fs::set_permissions(dest, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .map_err(io("cannot protect", dest))?;
    let workspace = match &task.fixture.source {
        FixtureSource::Empty => {
            git(&["init".as_ref(), "--quiet".as_ref(), dest.as_os_str()], "init", "an empty fixture")?;
            dest.to_owned()
        }
        FixtureSource::Dir(path) => {
            copy_tree(path, path, dest, Links::FollowInside).map_err(io("cannot copy the fixture", path))?;
            dest.to_owned()
        }
        FixtureSource::Git { url, commit, subdir } => {
            clone_into(url, commit, dest)?;
            match subdir {
                Some(subdir) => {
                    let inside = dest.join(subdir);
                    let real = inside.canonicalize().map_err(|_| FixtureError::Subdir(subdir.clone()))?;
                    let root = dest.canonicalize().map_err(io("cannot resolve", dest))?;
                    if !real.starts_with(&root) || !real.is_dir() {
                        return Err(FixtureError::Subdir(subdir.clone()));
                    }
                    real
                }
                None => dest.to_owned(),
            }
        }
    };
    if let Some(overlay) = &task.fixture.overlay {
        copy_tree(overlay, overlay, &workspace, Links::FollowInside).map_err(io("cannot copy the overlay", overlay))?;
    }
    Ok(workspace)
}

/// Clones `url` into the empty directory `dest` and checks out `reference` detached: a commit, a tag, or a
/// branch of the remote.
pub fn clone_into(url: &str, reference: &str, dest: &Path) -> Result<(), FixtureError> {
    if reference.starts_with('-') || url.starts_with('-') {
        return Err(FixtureError::Git { step: "clone", url: url.to_owned(), detail: "not a URL or ref".to_owned() });
    }
    let clone = ["clone", "--quiet", "--no-checkout", "--", url];
    let mut args: Vec<&std::ffi::OsStr> = clone.iter().map(|a| a.as_ref()).collect();
    args.push(dest.as_os_str());
    git(&args, "clone", url)?;
    let checkout = |reference: &str| {
        let words = ["checkout", "--quiet", "--detach", reference];
        let mut args: Vec<&std::ffi::OsStr> = vec!["-C".as_ref(), dest.as_os_str()];
        args.extend(words.iter().map(std::ffi::OsStr::new));
        git(&args, "checkout", url)
    };
    // A branch other than the default one is the remote's.
    checkout(reference).or_else(|error| checkout(&format!("origin/{reference}")).map_err(|_| error))
}

/// Runs `git ARGS` for a fixture: nothing it is configured with runs (no hooks, no prompt, no pager, no
/// system configuration), only the network protocols a clone needs, within [`CLONE_DEADLINE`].
fn git(args: &[&std::ffi::OsStr], step: &'static str, url: &str) -> Result<(), FixtureError> {
    let failed = |detail: String| FixtureError::Git { step, url: url.to_owned(), detail };
    let mut child = Command::new("git")
        .args(["--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", "https:http:ssh:git:file")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot start git: {e}")))?;
    // Read as it comes (a full pipe would stall git), at most 4 KiB kept.
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut detail = Vec::new();
        if let Some(stderr) = stderr {
            let mut limited = std::io::Read::take(stderr, 4096);
            let _ = std::io::Read::read_to_end(&mut limited, &mut detail);
            let _ = std::io::copy(&mut limited.into_inner(), &mut std::io::sink());
        }
        detail
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > CLONE_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => break None,
        }
    };
    let detail = reader.join().unwrap_or_default();
    match status {
        Some(status) if status.success() => Ok(()),
        Some(_) => {
            let text: String =
                String::from_utf8_lossy(&detail).trim().chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            Err(failed(text))
        }
        None => Err(failed(format!("no answer within {} s", CLONE_DEADLINE.as_secs()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wb_manifest::trial_task::Fixture;

    fn task(source: FixtureSource, overlay: Option<PathBuf>) -> TrialTask {
        TrialTask {
            dir: PathBuf::from("/"),
            id: "t".into(),
            title: "T".into(),
            workbench: None,
            fixture: Fixture { source, overlay },
            timeout_minutes: None,
            setup: Vec::new(),
            gates: Vec::new(),
            criteria: Vec::new(),
        }
    }

    fn run(dir: &Path, args: &[&str]) {
        let status =
            Command::new("git").arg("-C").arg(dir).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status();
        assert!(status.is_ok_and(|s| s.success()), "git {args:?}");
    }

    #[test]
    fn a_directory_fixture_is_copied_and_the_overlay_laid_over_it() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let fixture = temp.path().join("fixture");
        let overlay = temp.path().join("overlay");
        std::fs::create_dir_all(fixture.join("src"))?;
        std::fs::create_dir_all(&overlay)?;
        std::fs::write(fixture.join("src/a.txt"), "fixture")?;
        std::fs::write(fixture.join("b.txt"), "kept")?;
        std::fs::write(overlay.join("b.txt"), "overlaid")?;
        let made = materialize(&task(FixtureSource::Dir(fixture.clone()), Some(overlay)), &temp.path().join("one"));
        let workspace = made.map_err(std::io::Error::other)?;
        assert_eq!(std::fs::read_to_string(workspace.join("src/a.txt"))?, "fixture");
        assert_eq!(std::fs::read_to_string(workspace.join("b.txt"))?, "overlaid");
        assert_eq!(std::fs::read_to_string(fixture.join("b.txt"))?, "kept", "the fixture itself is untouched");
        // A second attempt gets its own fresh copy; an existing destination is refused.
        assert!(materialize(&task(FixtureSource::Dir(fixture.clone()), None), &temp.path().join("two")).is_ok());
        assert!(materialize(&task(FixtureSource::Dir(fixture), None), &temp.path().join("two")).is_err());
        Ok(())
    }

    #[test]
    fn an_empty_fixture_is_a_new_repository_and_a_git_one_is_checked_out_at_its_commit() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let empty = materialize(&task(FixtureSource::Empty, None), &temp.path().join("empty"))
            .map_err(std::io::Error::other)?;
        assert!(empty.join(".git").is_dir());
        assert_eq!(std::fs::read_dir(&empty)?.count(), 1);

        let origin = temp.path().join("origin");
        std::fs::create_dir_all(origin.join("app"))?;
        run(&origin, &["init", "--quiet"]);
        std::fs::write(origin.join("app/v.txt"), "one")?;
        run(&origin, &["add", "."]);
        run(&origin, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "one"]);
        let first = Command::new("git").arg("-C").arg(&origin).args(["rev-parse", "HEAD"]).output()?;
        let first = String::from_utf8_lossy(&first.stdout).trim().to_owned();
        std::fs::write(origin.join("app/v.txt"), "two")?;
        run(&origin, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", "two"]);
        let url = format!("file://{}", origin.display());
        let source = FixtureSource::Git { url: url.clone(), commit: first, subdir: Some("app".into()) };
        let workspace = materialize(&task(source, None), &temp.path().join("clone")).map_err(std::io::Error::other)?;
        assert_eq!(std::fs::read_to_string(workspace.join("v.txt"))?, "one", "the task's commit, not the newest");
        let escape = FixtureSource::Git { url, commit: "0".repeat(40), subdir: None };
        let failed = materialize(&task(escape, None), &temp.path().join("bad"));
        assert!(matches!(failed, Err(FixtureError::Git { step: "checkout", .. })), "{failed:?}");
        Ok(())
    }
}
