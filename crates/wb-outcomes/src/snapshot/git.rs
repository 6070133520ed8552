//! Git on an agent-writable workspace: the one way to run it there (nothing the repository's configuration
//! names is run), within a deadline (`listing.rs` asks it which files a Git workspace holds and its `HEAD`).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Configuration that makes Git run a command, overridden on every invocation (a `-c` setting wins over every
/// configuration file, included ones too): the workspace's `.git/config` is written by the agent. None of the
/// commands used here runs hooks, diffs, pagers, editors, signing or credential helpers, and none converts
/// content (no `diff`, `status`, `add`; `hash-object` only with `--no-filters`), so attribute-driven filters
/// and textconv never apply; these settings guard the rest. Every transport is refused by
/// `GIT_ALLOW_PROTOCOL` (which, unlike `protocol.allow`, a `protocol.<name>.allow` in the repository cannot
/// re-enable), so `core.sshCommand`, `ext::` remotes and credential helpers are never reached.
const NEUTRAL_CONFIG: &[&str] =
    &["core.fsmonitor=false", "core.untrackedCache=false", "core.hooksPath=/dev/null", "protocol.allow=never"];

/// `git -C <root>` on an agent-writable workspace: nothing its configuration names is run (see
/// [`NEUTRAL_CONFIG`]), and it is isolated from the surroundings: a run started from a Git hook (which sets
/// `GIT_DIR`, `GIT_INDEX_FILE`...) still looks at the workspace's own repository; nothing prompts, takes optional
/// locks or goes to the network (a partial clone would otherwise fetch missing blobs on `cat-file`;
/// `GIT_ALLOW_PROTOCOL` also stops it on Git before 2.44, which ignores `GIT_NO_LAZY_FETCH`). The user's own
/// system and global configuration stay in force (their `core.excludesFile` decides what a snapshot lists): the
/// agent cannot write them from a container, and a local runner runs as the user anyway.
pub fn workspace_git(root: &Path) -> Command {
    let mut command = Command::new("git");
    for name in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_EXTERNAL_DIFF",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_ASKPASS",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_PROXY_COMMAND",
    ] {
        command.env_remove(name);
    }
    command
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_ALLOW_PROTOCOL", "")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .arg("--no-pager")
        .arg("-C")
        .arg(root);
    for setting in NEUTRAL_CONFIG {
        command.args(["-c", setting]);
    }
    command
}

/// How long one Git invocation on a workspace may take, in milliseconds, before it is killed (then it failed):
/// a FIFO the agent leaves as a `.gitignore`, or names as `core.excludesFile`, blocks Git for ever, and the
/// engine with it. Generous: listing a million-file workspace, or hashing a fresh checkout's racily clean files,
/// stays far below it.
static DEADLINE_MS: AtomicU64 = AtomicU64::new(300_000);

/// Sets [`DEADLINE_MS`] for this process (tests).
#[doc(hidden)]
pub fn set_git_deadline(deadline: Duration) {
    DEADLINE_MS.store(u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// `git <args>` on an agent-writable workspace ([`workspace_git`]), within the deadline: its standard output
/// when it succeeded.
pub fn workspace_git_output(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    git(root, args)
}

pub(crate) fn git(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    run(workspace_git(root).args(args), None)
}

/// Runs Git with `input` on its standard input.
pub(super) fn git_with_input(root: &Path, args: &[&str], input: Vec<u8>) -> Option<Vec<u8>> {
    run(workspace_git(root).args(args), Some(input))
}

/// How often a Git command whose output is still open is checked for having exited (something it started may
/// hold the pipe) or for being past the deadline.
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// Runs a Git command to completion within the deadline and returns its standard output when it succeeded.
/// Input is written and output read from threads, so neither can deadlock against the other or the deadline.
/// The end of the output wakes the wait at once (Git exits right after closing it), so a quick command is not
/// held up by polling.
fn run(command: &mut Command, input: Option<Vec<u8>>) -> Option<Vec<u8>> {
    let stdin = if input.is_some() { Stdio::piped() } else { Stdio::null() };
    let mut child = command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().ok()?;
    let writer = match (child.stdin.take(), input) {
        (Some(mut stdin), Some(input)) => Some(std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })),
        _ => None,
    };
    let (closed, output_closed) = mpsc::channel();
    let reader = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.read_to_end(&mut out);
            let _ = closed.send(());
            out
        })
    });
    let deadline = Instant::now() + Duration::from_millis(DEADLINE_MS.load(Ordering::Relaxed));
    let status = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match output_closed.recv_timeout(left.min(CHECK_EVERY)) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break wait_until(&mut child, deadline),
            Err(RecvTimeoutError::Timeout) => match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {}
                _ => break kill(&mut child),
            },
        }
    };
    let out = reader.and_then(|reader| reader.join().ok()).unwrap_or_default();
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    status.filter(|status| status.success()).map(|_| out)
}

/// Waits for a child that closed its output to exit, until the deadline (then it is killed).
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_micros(50);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            _ => return kill(child),
        }
    }
}

fn kill(child: &mut Child) -> Option<ExitStatus> {
    let _ = child.kill();
    let _ = child.wait();
    None
}
