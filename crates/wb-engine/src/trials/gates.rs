//! Running a task's gates on an attempt's result, on this machine (the local runtime's grading; a container or
//! a sandbox runs the same commands for the others): each gate is `sh -c RUN` in the graded directory, in a
//! process group of its own, with its deadline (its `timeoutSeconds`, else [`DEFAULT_GATE_TIMEOUT`]); its output
//! (both streams) is read as it comes and only its end kept. A gate that outlives its deadline is killed with
//! its whole group and is `timed_out`.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::job::{GateResult, MAX_GATE_LOG_BYTES, Verdict};
use wb_manifest::trial_task::Gate;

/// A gate's deadline when its task gives none.
pub const DEFAULT_GATE_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs every gate in `dir`, in order, all of them (a failed gate does not stop the next: the report shows
/// each).
pub fn run_gates(gates: &[Gate], dir: &Path, env: &[(String, String)]) -> Vec<GateResult> {
    gates.iter().map(|gate| run_gate(gate, dir, env)).collect()
}

/// The verdict gates give: `works` when every one passed, `inconclusive` when one timed out or could not
/// start, else `failed`. No gate is no verdict of `works`: a task without gates is refused by its check.
pub fn verdict(results: &[GateResult]) -> Verdict {
    if results.iter().any(|r| r.timed_out || r.exit_code.is_none()) {
        Verdict::Inconclusive
    } else if !results.is_empty() && results.iter().all(|r| r.exit_code == Some(0)) {
        Verdict::Works
    } else {
        Verdict::Failed
    }
}

fn run_gate(gate: &Gate, dir: &Path, env: &[(String, String)]) -> GateResult {
    let deadline = gate.timeout_seconds.map_or(DEFAULT_GATE_TIMEOUT, Duration::from_secs);
    let started = Instant::now();
    let result = |exit_code, timed_out, log: String| GateResult {
        id: gate.id.clone(),
        exit_code,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        timed_out,
        log: super::job::tail(&log),
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(pipe) => pipe,
        Err(error) => return result(None, false, format!("cannot start the gate: {error}")),
    };
    let mut command = Command::new("sh");
    command.arg("-c").arg(&gate.run).current_dir(dir).stdin(Stdio::null()).process_group(0);
    command.envs(env.iter().map(|(name, value)| (name, value)));
    let spawned = match writer.try_clone() {
        Ok(second) => command.stdout(writer).stderr(second).spawn(),
        Err(error) => Err(error),
    };
    // The parent's copies of the pipe's write end are gone with `command`: the reader sees the end when the
    // gate's group closes it.
    drop(command);
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => return result(None, false, format!("cannot start the gate: {error}")),
    };
    let collector = std::thread::spawn(move || read_tail(reader));
    let end = started + deadline;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= end => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    // The gate's whole group goes, whether the gate ended (what it left behind) or timed out.
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let status = match status {
        Some(status) => Some(status),
        None => {
            let _ = child.wait();
            None
        }
    };
    let log = collector.join().unwrap_or_default();
    match status {
        Some(status) => result(status.code(), false, log),
        None => result(None, true, format!("{log}\n(killed after {}s)", deadline.as_secs())),
    }
}

/// Reads a gate's output to its end, keeping at most twice [`MAX_GATE_LOG_BYTES`] (its end) as it goes.
pub(super) fn read_tail(mut reader: impl Read) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                kept.extend_from_slice(&buffer[..read]);
                if kept.len() > 2 * MAX_GATE_LOG_BYTES {
                    kept.drain(..kept.len() - MAX_GATE_LOG_BYTES);
                }
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(id: &str, run: &str, timeout: Option<u64>) -> Gate {
        Gate { id: id.into(), title: None, run: run.into(), timeout_seconds: timeout }
    }

    #[test]
    fn each_gate_runs_in_the_directory_and_its_status_is_the_verdict() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("answer.txt"), "42\n")?;
        let env = [("GATE_PROBE_VALUE".to_owned(), "seen".to_owned())];
        let results = run_gates(
            &[
                gate("answer", "grep -q 42 answer.txt && echo fine", None),
                gate("env", "echo $GATE_PROBE_VALUE >&2; exit 3", None),
            ],
            dir.path(),
            &env,
        );
        assert_eq!((results[0].exit_code, results[0].log.as_str()), (Some(0), "fine\n"));
        assert_eq!((results[1].exit_code, results[1].log.as_str()), (Some(3), "seen\n"));
        assert_eq!(verdict(&results), Verdict::Failed);
        assert_eq!(verdict(&results[..1]), Verdict::Works);
        Ok(())
    }

    #[test]
    fn a_gate_past_its_deadline_is_killed_with_its_group() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let started = Instant::now();
        // A background child holding the pipe open would keep the reader waiting without the group kill.
        let results = run_gates(&[gate("slow", "sleep 30 & sleep 30", Some(1))], dir.path(), &[]);
        assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
        assert!(results[0].timed_out && results[0].exit_code.is_none(), "{results:?}");
        assert_eq!(verdict(&results), Verdict::Inconclusive);
        Ok(())
    }

    #[test]
    fn only_the_end_of_a_flood_is_kept() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let results = run_gates(&[gate("flood", "yes line | head -c 5000000; echo last", None)], dir.path(), &[]);
        assert_eq!(results[0].exit_code, Some(0));
        assert!(results[0].log.ends_with("last\n") && results[0].log.len() <= MAX_GATE_LOG_BYTES + 4);
        Ok(())
    }
}
