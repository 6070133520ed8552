//! Child processes in tests: run a command and keep what it printed, wait for a file a process writes, and
//! tell whether a process is gone.

use std::path::Path;
use std::process::{Command, Stdio};

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

/// Runs `command` to its end with standard input closed. A process killed by a signal, or printing anything
/// but UTF-8, fails the test. Messages name the program only: a command's environment may hold test secrets.
pub fn finish(command: &mut Command) -> Output {
    let program = Path::new(command.get_program()).display().to_string();
    let output = command.stdin(Stdio::null()).output().unwrap_or_else(|error| panic!("{program}: {error}"));
    Output {
        code: output.status.code().unwrap_or_else(|| panic!("{program} was killed by a signal")),
        stdout: String::from_utf8(output.stdout).unwrap_or_else(|error| panic!("{program} stdout: {error}")),
        stderr: String::from_utf8(output.stderr).unwrap_or_else(|error| panic!("{program} stderr: {error}")),
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
