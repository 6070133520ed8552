//! A run's supervisor: the process that owns a run, so the run outlives whoever started it.
//!
//! `wb-lsp run` (with or without `--detach`) and the language server never run the engine themselves: they
//! start this binary's hidden `supervise-run` command in a process group of its own (a terminal's Ctrl-C and
//! hang-up do not reach it), hand it the run's [`RunRequest`] on its stdin, and read [`Control`] lines on its stdout while
//! the runtime prepares: progress, then either `started` (the run's log exists and holds `run.started`) or
//! `failed` (the run never started: a bad package, missing credentials, a cancelled preparation). From then
//! on the supervisor writes only its run's log, record and, at the end, its result
//! (`wb_engine::runs`), and whoever wants the run follows those (`wb_engine::runs::follow`): the caller that
//! started it, `attach`, `wait`, the editor. SIGINT, SIGTERM and SIGHUP to the supervisor cancel the run (`kill`, the caller's Ctrl-C
//! forwarded, a shutdown, a hang-up), and the run's `run.cancelled` names the signal. Should the supervisor die
//! without its cleanup, its [`watchdog`] stops what it left running.
//!
//! Environment values never travel in a request: the supervisor inherits its caller's environment.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use wb_engine::{EngineError, Options, RunRequest};
use wb_manifest::{ModelCatalog, OsFileSystem};

use crate::exit::Exit;
use wb_engine::runs::layout::CLAIM;

pub mod watchdog;

/// The hidden subcommand that runs a supervisor.
pub const SUBCOMMAND: &str = "supervise-run";
/// The largest request a supervisor reads (a task is text; 16 MiB is far beyond any).
const REQUEST_LIMIT: u64 = 16 * 1024 * 1024;
/// The longest control line a caller reads.
const CONTROL_LINE_LIMIT: u64 = 1024 * 1024;

/// Why a run did not start, as the supervisor reports it to its caller.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NotStarted {
    pub message: String,
    /// The exit status the CLI gives it: failure, needs authentication, or cancelled while preparing.
    pub code: Exit,
    /// Where in the package, for an invalid one: path, line, column.
    pub location: Option<(PathBuf, u32, u32)>,
    /// The service had no room for it (HTTP 429 after the retries): worth starting again later, unlike a failure.
    #[serde(default)]
    pub busy: bool,
}

/// One line from the supervisor to its caller, while the run starts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    Progress(String),
    Started { run_id: String },
    Failed(NotStarted),
}

/// A started supervisor, before its run has started.
pub struct Starting {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

/// What came of a [`Starting`] supervisor.
pub enum Start {
    Started { run_id: String, child: Child },
    Failed(NotStarted),
}

impl Starting {
    /// The supervisor's process id (SIGINT to it cancels the run).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads control lines until the run started or failed to; `progress` gets each progress message.
    pub fn wait_started(mut self, progress: &mut dyn FnMut(&str)) -> anyhow::Result<Start> {
        loop {
            let mut line = Vec::new();
            let read = (&mut self.stdout).take(CONTROL_LINE_LIMIT).read_until(b'\n', &mut line)?;
            if read == 0 {
                let status = self.child.wait()?;
                anyhow::bail!("the run's supervisor ended before the run started ({status})");
            }
            match serde_json::from_slice::<Control>(&line) {
                Ok(Control::Progress(message)) => progress(&message),
                Ok(Control::Started { run_id }) => return Ok(Start::Started { run_id, child: self.child }),
                Ok(Control::Failed(failure)) => {
                    let _ = self.child.wait();
                    return Ok(Start::Failed(failure));
                }
                Err(error) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    anyhow::bail!("the run's supervisor said something unreadable: {error}");
                }
            }
        }
    }
}

/// Starts a supervisor for `request` (this same binary), in a process group of its own.
pub fn spawn(request: &RunRequest) -> anyhow::Result<Starting> {
    let mut child = Command::new(program()?)
        .arg(SUBCOMMAND)
        .current_dir(&request.request.settings.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .context("cannot start the run's supervisor")?;
    let body = serde_json::to_vec(request)?;
    let written = child.stdin.take().context("the supervisor's stdin").and_then(|mut stdin| {
        stdin.write_all(&body)?;
        Ok(())
    });
    let stdout = child.stdout.take().context("the supervisor's stdout");
    match (written, stdout) {
        (Ok(()), Ok(stdout)) => Ok(Starting { child, stdout: BufReader::new(stdout) }),
        (Err(error), _) | (_, Err(error)) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(error.context("cannot hand the run to its supervisor"))
        }
    }
}

/// This program, to start as the supervisor. A binary replaced while this process runs (an upgrade, a
/// rebuild) has left its path: `/proc/self/exe` still runs the very binary this process is.
pub(crate) fn program() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find this program to start the run's supervisor")?;
    if exe.is_file() {
        return Ok(exe);
    }
    let own = PathBuf::from("/proc/self/exe");
    if own.exists() {
        Ok(own)
    } else {
        anyhow::bail!("this program ({}) is gone: cannot start the run's supervisor", exe.display())
    }
}

/// Sends SIGINT to a supervisor: it cancels its run (or its preparation).
pub fn interrupt(pid: u32) -> std::io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| std::io::Error::other(format!("{pid} is not a process id")))?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT)?;
    Ok(())
}

/// The supervisor: reads its request, runs it to the end, keeps the result beside the log. The exit code is
/// the run's (as `wait` gives it); nobody may be reading it.
pub fn supervise(catalog: &ModelCatalog) -> Exit {
    let mut body = Vec::new();
    let request = std::io::stdin()
        .take(REQUEST_LIMIT)
        .read_to_end(&mut body)
        .map_err(|error| error.to_string())
        .and_then(|_| serde_json::from_slice::<RunRequest>(&body).map_err(|error| error.to_string()));
    let RunRequest { request, mode, run_id } = match request {
        Ok(request) => request,
        Err(error) => {
            say(&Control::Failed(NotStarted {
                message: format!("The run's supervisor got an unreadable request: {error}"),
                code: Exit::Usage,
                location: None,
                busy: false,
            }));
            return Exit::Usage;
        }
    };
    if let Some(id) = run_id.as_deref().filter(|id| !wb_engine::events::is_run_id(id)) {
        say(&Control::Failed(NotStarted {
            message: format!("The run's supervisor got a run id that is not one: {id:?}"),
            code: Exit::Usage,
            location: None,
            busy: false,
        }));
        return Exit::Usage;
    }
    let home = request.settings.home.clone().or_else(|| wb_outcomes::try_default_home().ok());
    // A run id chosen ahead is claimed at once: whoever chose it (a trial resumed after a kill) can tell a start
    // under way from one that never began.
    if let (Some(home), Some(id)) = (&home, &run_id) {
        let dir = wb_engine::runs::RunDir::new(home, id);
        let me = wb_engine::leftovers::Identity::of(std::process::id()).label();
        let _ = dir.create().and_then(|()| wb_engine::runs::layout::write_private(&dir.file(CLAIM), me.as_bytes()));
    }
    let cancel = Arc::new(AtomicBool::new(false));
    let reason: Arc<Mutex<Option<String>>> = Arc::default();
    cancel_on_signals(&cancel, &reason);
    let progress =
        wb_engine::lifecycle::Progress(Arc::new(|message: &str| say(&Control::Progress(message.to_owned()))));
    if let Some(home) = home.clone() {
        watchdog::start(home);
    }
    // An adopted run emits nothing for what its log holds: it is started once its log carries on here.
    let adopted = Arc::new(AtomicBool::new(false));
    let on_adopted = mode.adopting().map(|_| {
        let told = Arc::clone(&adopted);
        wb_engine::lifecycle::Progress(Arc::new(move |run_id: &str| {
            told.store(true, Ordering::SeqCst);
            watchdog::run_started(run_id);
            say(&Control::Started { run_id: run_id.to_owned() });
        }))
    });
    let context = wb_engine::Context {
        inherited: wb_engine::bindings::process_environment(),
        progress: Some(progress),
        cancel: Some(Arc::clone(&cancel)),
        cancel_reason: Some(reason),
        interrupt_cancels: true,
        on_adopted,
        run_id,
    };
    let options = Options { request, context };
    let mut started = false;
    let mut emit = |event: &wb_engine::events::Event| {
        if !started && !adopted.load(Ordering::SeqCst) {
            started = true;
            watchdog::run_started(&event.run_id);
            say(&Control::Started { run_id: event.run_id.clone() });
        }
    };
    let result = wb_engine::run(&OsFileSystem, &options, &mode, catalog, Arc::clone(&cancel), &mut emit);
    let result = match result {
        Ok(result) => result,
        Err(error) => {
            // The run never started: its claim goes (the chooser reads the failure on the control line).
            if let (Some(home), Some(id)) = (&home, &options.context.run_id) {
                let dir = wb_engine::runs::RunDir::new(home, id);
                let _ = std::fs::remove_file(dir.file(CLAIM));
                let _ = std::fs::remove_dir(dir.path());
            }
            let failure = not_started(&error, cancel.load(Ordering::SeqCst));
            let code = failure.code;
            say(&Control::Failed(failure));
            return code;
        }
    };
    if let Some(home) = home {
        let _ = wb_engine::runs::write_result(&home, &result);
    }
    run_exit_code(&result)
}

/// SIGINT, SIGTERM and SIGHUP each cancel the run, naming the signal. Handlers are installed (through
/// `signal-hook`), not the signals blocked: a supervisor started with them ignored (an editor's language server
/// may start it so) still hears them, and processes it starts get the default dispositions back at `exec`.
/// Nothing is installed when the handlers cannot be (then the signals end the process, as before).
fn cancel_on_signals(cancel: &Arc<AtomicBool>, reason: &Arc<Mutex<Option<String>>>) {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else { return };
    let (cancel, reason) = (Arc::clone(cancel), Arc::clone(reason));
    std::thread::spawn(move || {
        for signal in signals.forever() {
            let name = match signal {
                SIGINT => "SIGINT",
                SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            if let Ok(mut reason) = reason.lock() {
                reason.get_or_insert_with(|| format!("Cancelled by {name}"));
            }
            cancel.store(true, Ordering::SeqCst);
        }
    });
}

/// Writes one control line to the caller (stdout, one locked write). The caller may be gone (detached,
/// killed): the run goes on regardless.
fn say(message: &Control) {
    if let Ok(mut line) = serde_json::to_vec(message) {
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&line).and_then(|()| out.flush());
    }
}

/// An engine error before `run.started`, as the caller reports it.
fn not_started(error: &EngineError, cancelled: bool) -> NotStarted {
    let code = if cancelled {
        Exit::Cancelled
    } else if matches!(error, EngineError::NeedsAuthentication(_)) {
        Exit::NeedsAuthentication
    } else {
        Exit::Failure
    };
    let busy = matches!(error, EngineError::RateLimited(_));
    match error {
        EngineError::Invalid { message, path, line, column } => {
            NotStarted { message: message.clone(), code, location: Some((path.clone(), *line, *column)), busy }
        }
        other => NotStarted { message: other.to_string(), code, location: None, busy },
    }
}

/// The Workbench home the runs live under (`WORKBENCH_HOME`, default `~/.workbench`).
pub fn home() -> anyhow::Result<PathBuf> {
    wb_outcomes::try_default_home().map_err(|error| anyhow::anyhow!("{error}"))
}

/// A finished run's exit status: success when it completed with its outcome, failure when it failed (or its
/// work was not collected), cancelled.
pub(crate) fn run_exit_code(result: &wb_engine::RunResult) -> Exit {
    match result.ending {
        // The runner succeeded but its work could not be collected (outcome.failed says why): not a success.
        wb_engine::Ending::Completed if result.outcome_error.is_some() => Exit::Failure,
        wb_engine::Ending::Completed => Exit::Success,
        wb_engine::Ending::Failed(_) => Exit::Failure,
        wb_engine::Ending::Cancelled => Exit::Cancelled,
    }
}
