//! A task's gates in the attempt's kind of runtime, never where the agent worked: on Docker each gate in a fresh
//! container of the package's image (the one the attempts ran, cached), the graded copy mounted as its
//! workspace; on E2B and Daytona a fresh sandbox of the package's template, the graded copy staged into it, each
//! gate a command there, the sandbox destroyed after. Each gate's exit status, duration and the end of its output
//! are kept as on this machine, and a gate past its deadline is stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wb_manifest::trial_task::Gate;
use wb_manifest::{ModelCatalog, OsFileSystem};

use super::gates::{DEFAULT_GATE_TIMEOUT, read_tail};
use super::job::{GateResult, tail};
use super::schedule::GradeError;
use crate::adapters::Translation;
use crate::runtime::{self, Handle, Mount, Runtime};

/// Where the graded copy is in the gates' containers and sandboxes.
const WORKSPACE: &str = runtime::paths::WORKSPACE;

/// Runs `gates` on runtime `name` (docker, e2b, daytona) for the package at `manifest`, with `dir` as their
/// workspace.
pub fn run_gates_in(
    name: &str,
    manifest: &Path,
    dir: &Path,
    gates: &[Gate],
    inherited: &BTreeMap<String, String>,
    home: &Path,
) -> Result<Vec<GateResult>, GradeError> {
    let runtime_error = |e: crate::EngineError| match e {
        crate::EngineError::RateLimited(_) => GradeError::Busy(e.to_string()),
        other => GradeError::Runtime(other.to_string()),
    };
    let source = manifest.display().to_string();
    let mut found =
        crate::source::resolve(&OsFileSystem, &source, dir, ModelCatalog::embedded(), true).map_err(runtime_error)?;
    let package =
        found.pop().ok_or_else(|| GradeError::Runtime(format!("no package at {source}")))?.map_err(runtime_error)?;
    let setup = runtime::Setup {
        inherited: inherited.clone(),
        progress: None,
        home: home.to_owned(),
        cancel: None,
        plan_only: false,
        adoptable: false,
    };
    let mut runtime = runtime::runtime_for(name, setup).map_err(runtime_error)?;
    let mounts = vec![Mount { host: dir.to_owned(), target: PathBuf::from(WORKSPACE), read_only: false }];
    // A sandbox's working copy of the graded directory (a temporary directory of the runtime's) goes with it:
    // nothing is collected from the gates.
    let results = runtime
        .prepare(&package, mounts)
        .and_then(|_| runtime.provision(&crate::events::new_run_id()))
        .map_err(runtime_error)
        .map(|_| gates.iter().map(|gate| run_gate(runtime.as_mut(), gate)).collect());
    let _ = runtime.cleanup();
    results
}

fn run_gate(runtime: &mut dyn Runtime, gate: &Gate) -> GateResult {
    let started = Instant::now();
    let deadline = gate.timeout_seconds.map_or(DEFAULT_GATE_TIMEOUT, Duration::from_secs);
    let result = |exit_code: Option<i32>, timed_out: bool, log: String| GateResult {
        id: gate.id.clone(),
        exit_code,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        timed_out,
        log: tail(&log),
    };
    let translation = Translation {
        command: vec!["sh".to_owned(), "-c".to_owned(), gate.run.clone()],
        cwd: PathBuf::from(WORKSPACE),
        env: BTreeMap::new(),
        remove_env: Vec::new(),
        native_key: "",
        native: serde_json::Value::Null,
        staged_files: Vec::new(),
        skills: Vec::new(),
        warnings: Vec::new(),
        disabled_mcps: Vec::new(),
        stdin: None,
        server: None,
    };
    let mut launched = match runtime.launch(&translation) {
        Ok(launched) => launched,
        Err(error) => return result(None, false, format!("cannot start the gate: {error}")),
    };
    let readers: Vec<_> = [launched.stdout.take(), launched.stderr.take()]
        .into_iter()
        .flatten()
        .map(|stream| std::thread::spawn(move || read_tail(stream)))
        .collect();
    let exit = match &launched.handle {
        Handle::Container { exit, .. } | Handle::Remote { exit, .. } => exit.recv_timeout(deadline).ok(),
        Handle::Child(_) => None,
    };
    if exit.is_none() {
        runtime.cancel(&mut launched);
    }
    let log: String = readers.into_iter().map(|reader| reader.join().unwrap_or_default()).collect();
    match exit {
        Some(exit) => result(exit.code.and_then(|code| i32::try_from(code).ok()), false, log),
        None => result(None, true, format!("{log}\n(stopped after {}s)", deadline.as_secs())),
    }
}
