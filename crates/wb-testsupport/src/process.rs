//! Child processes in tests: run a command and keep what it printed (by a deadline), wait for a file a process
//! writes, and tell whether a process is gone.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::deadline::deadline;

/// How long [`finish`] lets a command run: far longer than any test's command takes, short of hanging a
/// suite for ever.
pub const FINISH_WITHIN: Duration = Duration::from_secs(15 * 60);

/// What a finished process printed, and its exit code.
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// Runs `command` to its end with standard input closed, by [`FINISH_WITHIN`]. A process killed by a signal,
/// or printing anything but UTF-8, fails the test. Messages name the program only: a command's environment may
/// hold test secrets.
pub fn finish(command: &mut Command) -> Output {
    finish_within(command, FINISH_WITHIN, "its end")
}

/// [`finish`] by `within`: past it the process is killed and the test fails naming `what` it waited for and
/// what the process printed so far.
pub fn finish_within(command: &mut Command, within: Duration, what: &str) -> Output {
    let program = Path::new(command.get_program()).display().to_string();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{program}: {error}"));
    let end = Instant::now() + within;
    let waited = format!("{program}: {what}");
    let mut stdout = deadline(child.stdout.take().expect("piped stdout"), within, &format!("{waited} (stdout)"));
    let mut stderr = deadline(child.stderr.take().expect("piped stderr"), within, &format!("{waited} (stderr)"));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|error| panic!("{program}: {error}")) {
            break status;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            let (out, err) = (stdout.arrived(), stderr.arrived());
            panic!("{waited}: still running after {within:?}, killed\n--- stdout\n{out}--- stderr\n{err}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (stdout, stderr) = (stdout.bytes_to_end(), stderr.bytes_to_end());
    Output {
        code: status.code().unwrap_or_else(|| panic!("{program} was killed by a signal")),
        stdout: String::from_utf8(stdout).unwrap_or_else(|error| panic!("{program} stdout: {error}")),
        stderr: String::from_utf8(stderr).unwrap_or_else(|error| panic!("{program} stderr: {error}")),
    }
}

/// Waits (up to 20 s) for a file to appear.
pub fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether a process is gone (not running and not a zombie).
pub fn process_is_gone(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses; Z is a zombie, X dead.
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
        }
        Err(_) if Path::new("/proc/self").exists() => true,
        Err(_) => {
            let status = std::process::Command::new("kill").args(["-0", &pid.to_string()]).status();
            !status.is_ok_and(|s| s.success())
        }
    }
}
