//! A supervisor's watchdog: a second process (a shell that becomes this binary's hidden `supervise-watch` once
//! its supervisor has ended, in a process group of its own) that outlives its supervisor and stops what the
//! supervisor leaves running should it die without its cleanup (SIGKILL, the OOM killer, a crash): the local
//! runner's process group, the Docker containers the supervisor created, its stage directory
//! (`wb_engine::leftovers`).
//!
//! It reads lines on its stdin, a pipe whose only writer is the supervisor: who the supervisor is (pid and start
//! time) and where its runs live, then the run's id once there is one. The pipe reaches its end only when the
//! supervisor has ended (its end of it is held for the life of the process), whichever way it ended; after an
//! orderly end there is nothing left and the sweep finds nothing.
//!
//! The parent-death signal (`PR_SET_PDEATHSIG`) is not used: setting it on the runner needs code between fork
//! and exec (`pre_exec`), which is `unsafe` and the workspace forbids it; it would also fire on the end of the
//! thread that forked, not of the process, and kill only the runner, not the processes it started. The
//! watchdog stops the whole group, and the Docker containers too, which no signal reaches.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use wb_engine::leftovers::{Identity, sweep_run};

use crate::exit::Exit;

/// The hidden subcommand that runs a watchdog.
pub const SUBCOMMAND: &str = "supervise-watch";
/// How long a watchdog waits for its supervisor to be gone once the pipe has ended.
const GONE_WAIT: Duration = Duration::from_secs(10);

/// One line from a supervisor to its watchdog.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Told {
    Owner { owner: Identity, home: PathBuf },
    Run { run_id: String },
}

/// The supervisor's end of the pipe: never closed before the process ends.
static PIPE: OnceLock<Mutex<ChildStdin>> = OnceLock::new();

/// What the watchdog is while its supervisor lives: a POSIX shell that keeps the lines it is told and, once the
/// pipe ends, becomes `wb-lsp supervise-watch` reading them. A running attempt of a trial then costs about a
/// tenth of a megabyte for its watchdog (an idle `dash`), not the 0.8 MiB of an idle wb-lsp, most of it the
/// binary's relocated read-only data.
const IDLE_SHELL: &str = r#"told=''
while IFS= read -r line; do told="$told$line
"; done
printf '%s' "$told" | exec "$0" supervise-watch"#;

/// Starts this supervisor's watchdog (once): idle in `/bin/sh` where there is one, else wb-lsp itself. A watchdog
/// that cannot start leaves the run unguarded, not stopped.
pub(super) fn start(home: PathBuf) {
    let Ok(program) = super::program() else { return };
    let spawn = |command: &mut Command| {
        command.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0).spawn()
    };
    let child = spawn(Command::new("/bin/sh").arg("-c").arg(IDLE_SHELL).arg(&program))
        .or_else(|_| spawn(Command::new(&program).arg(SUBCOMMAND)));
    let Some(stdin) = child.ok().and_then(|mut child| child.stdin.take()) else { return };
    if PIPE.set(Mutex::new(stdin)).is_ok() {
        tell(&Told::Owner { owner: Identity::of(std::process::id()), home });
    }
}

/// Tells the watchdog the run's id, once it has one.
pub(super) fn run_started(run_id: &str) {
    tell(&Told::Run { run_id: run_id.to_owned() });
}

fn tell(told: &Told) {
    let (Some(pipe), Ok(mut line)) = (PIPE.get(), serde_json::to_vec(told)) else { return };
    line.push(b'\n');
    if let Ok(mut pipe) = pipe.lock() {
        let _ = pipe.write_all(&line).and_then(|()| pipe.flush());
    }
}

/// The watchdog: waits for its supervisor's end, then sweeps what it left.
pub fn watch() -> Exit {
    let (mut owner, mut run_id) = (None, None);
    let stdin = BufReader::new(std::io::stdin().lock().take(1024 * 1024));
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<Told>(&line) {
            Ok(Told::Owner { owner: who, home }) => owner = Some((who, home)),
            Ok(Told::Run { run_id: id }) => run_id = Some(id),
            Err(_) => {}
        }
    }
    let Some((owner, home)) = owner else { return Exit::Success };
    // The pipe ends as the supervisor exits: its process may take a moment more to be gone.
    let since = Instant::now();
    while owner.alive() {
        if since.elapsed() > GONE_WAIT {
            return Exit::Success;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let runtime = run_id.as_deref().and_then(|id| wb_engine::runs::read_record(&home, id).ok()).map(|r| r.runtime);
    let swept = sweep_run(&home, run_id.as_deref(), owner, runtime.as_deref());
    Exit::failure_unless(swept.problems.is_empty())
}
