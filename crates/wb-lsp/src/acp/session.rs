//! An ACP session: the editor's working directory (the primary workspace), the package it runs (`--package`,
//! or its mode: one per package of the directory), and the supervised Workbench session that carries its
//! conversation. A prompt is a turn of that session: the first starts it, the next ones queue a turn on it, and
//! one after the session ended (cancelled, or ended to collect its outcome) resumes it, so the runner keeps the
//! conversation throughout.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_engine::runs;
use wb_engine::{Request, RunLimits, RunMode, RunRequest, SessionOptions, Settings as RunSettings};

use super::{Agent, Failure, INTERNAL, INVALID_PARAMS, INVALID_REQUEST, Settings, updates};
use crate::supervisor::{self, Start};

/// How long a session waits idle for the next prompt before it ends by itself (as `run --session` does).
const IDLE: Duration = Duration::from_secs(30 * 60);
/// How long ending a session may take (its final outcome is collected on the way).
const ENDING: Duration = Duration::from_secs(120);

/// A package a session can run: its mode id (the package's directory name) and its manifest.
struct Package {
    name: String,
    manifest: PathBuf,
}

pub(crate) struct Session {
    pub(crate) id: String,
    cwd: PathBuf,
    packages: Vec<Package>,
    mode: Mutex<String>,
    runtime: Option<String>,
    workspaces: Vec<String>,
    env_files: Vec<PathBuf>,
    /// The Workbench session of the conversation: the live one, or the last one (the next prompt resumes it).
    run: Mutex<Option<String>>,
    /// Where the runs of this session run (`run.started`'s runtime), once known.
    runtime_seen: Mutex<Option<String>>,
    /// Set by `session/cancel` (and when the client goes away): the running prompt stops.
    pub(crate) cancel: AtomicBool,
    /// A prompt is running.
    busy: AtomicBool,
}

impl Session {
    pub(super) fn new(settings: &Settings, cwd: PathBuf) -> Result<Session, Failure> {
        let packages = match &settings.package {
            Some(source) => {
                let manifest = wb_manifest::absolute(Path::new(source), &cwd);
                let manifest = if manifest.is_dir() { manifest.join("workbench.yml") } else { manifest };
                vec![package(manifest)]
            }
            None => match wb_manifest::discover(&wb_manifest::OsFileSystem, &cwd) {
                wb_manifest::Target::Manifest(manifest) => vec![package(manifest)],
                wb_manifest::Target::Packages(manifests) => {
                    manifests.into_iter().filter(|m| m.is_file()).map(package).collect()
                }
                _ => Vec::new(),
            },
        };
        let Some(first) = packages.first() else {
            return Err(Failure::new(
                INVALID_PARAMS,
                format!(
                    "no Workbench package in {} (.workbenches/<name>/workbench.yml): start `wb-lsp acp --package \
                     SOURCE` to name one",
                    cwd.display()
                ),
            ));
        };
        Ok(Session {
            id: format!("wbacp_{}", wb_outcomes::random_hex(12)),
            mode: Mutex::new(first.name.clone()),
            cwd,
            packages,
            runtime: settings.runtime.clone(),
            workspaces: settings.workspaces.clone(),
            env_files: settings.env_files.clone(),
            run: Mutex::default(),
            runtime_seen: Mutex::default(),
            cancel: AtomicBool::new(false),
            busy: AtomicBool::new(false),
        })
    }

    /// The answer to `session/new`: the session id, and the packages as modes when there are several.
    pub(super) fn describe(&self) -> Value {
        let mut result = json!({"sessionId": self.id});
        if self.packages.len() > 1 {
            let modes: Vec<Value> = self
                .packages
                .iter()
                .map(|p| json!({"id": p.name, "name": p.name, "description": p.manifest.display().to_string()}))
                .collect();
            result["modes"] = json!({"currentModeId": self.mode(), "availableModes": modes});
        }
        result
    }

    fn mode(&self) -> String {
        self.mode.lock().map(|mode| mode.clone()).unwrap_or_default()
    }

    /// `session/set_mode`: another package for the next prompt. The Workbench session of the one before ends
    /// (its conversation is the other package's).
    pub(super) fn set_mode(&self, mode: &str) -> Result<(), Failure> {
        if !self.packages.iter().any(|p| p.name == mode) {
            return Err(Failure::new(
                INVALID_PARAMS,
                format!("no mode {mode}: the modes are this directory's packages"),
            ));
        }
        if self.mode() != mode {
            self.end();
            if let Ok(mut run) = self.run.lock() {
                *run = None;
            }
            if let Ok(mut current) = self.mode.lock() {
                *current = mode.to_owned();
            }
        }
        Ok(())
    }

    fn manifest(&self) -> PathBuf {
        let mode = self.mode();
        self.packages.iter().find(|p| p.name == mode).map(|p| p.manifest.clone()).unwrap_or_default()
    }

    fn current_run(&self) -> Option<String> {
        self.run.lock().ok().and_then(|run| run.clone())
    }

    /// Ends the live Workbench session of this ACP session, if there is one, and waits for it to end (its final
    /// outcome collected).
    pub(super) fn end(&self) {
        let (Ok(home), Some(run_id)) = (supervisor::home(), self.current_run()) else { return };
        end_run(&home, &run_id);
    }

    /// The turn for `task`: queued on the live session, or on a new one (started, or resuming the last one).
    /// Returns the run and the queued input the turn is for (`None`: the session's first turn).
    fn turn(&self, home: &Path, task: &str) -> Result<(String, Option<String>), Failure> {
        let internal = |error: std::io::Error| Failure::new(INTERNAL, error.to_string());
        let previous = self.current_run();
        if let Some(run_id) = &previous
            && runs::read_record(home, run_id).is_ok_and(|record| record.state().is_live())
        {
            let input = wb_engine::sessions::queue(home, run_id, task).map_err(internal)?;
            return Ok((run_id.clone(), Some(input)));
        }
        let limits = RunLimits { max_cost_usd: None, max_duration: None, input: Default::default() };
        let request = match previous {
            Some(previous) => {
                let kept = wb_engine::sessions::load_options(home, &previous).map_err(internal)?;
                RunRequest {
                    request: Request { settings: kept.settings, env: Vec::new(), task: Some(task.to_owned()) },
                    mode: RunMode::Session {
                        limits: kept.limits,
                        session: SessionOptions { idle_timeout: IDLE },
                        resume_from: Some(previous),
                    },
                    run_id: None,
                }
            }
            None => RunRequest {
                request: Request {
                    settings: RunSettings {
                        source: self.manifest().display().to_string(),
                        cwd: self.cwd.clone(),
                        primary: Some(self.cwd.clone()),
                        runtime: self.runtime.clone(),
                        workspaces: self.workspaces.clone(),
                        env_files: self.env_files.clone(),
                        allow_host_docker: false,
                        allow_unchecked_gpu: false,
                        home: None,
                        bare: false,
                    },
                    env: Vec::new(),
                    task: Some(task.to_owned()),
                },
                mode: RunMode::start(limits, Some(SessionOptions { idle_timeout: IDLE })),
                run_id: None,
            },
        };
        let failed = |error: anyhow::Error| Failure::new(INTERNAL, format!("{error:#}"));
        let started = supervisor::spawn(&request).and_then(|starting| starting.wait_started(&mut |_| {}));
        match started.map_err(failed)? {
            Start::Started { run_id, mut child } => {
                // Reaped when it ends; the session outlives this prompt.
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
                if let Ok(mut run) = self.run.lock() {
                    *run = Some(run_id.clone());
                }
                Ok((run_id, None))
            }
            Start::Failed(failure) => Err(Failure::new(
                INTERNAL,
                match failure.location {
                    Some((path, line, column)) => {
                        format!("{}\n  --> {}:{line}:{column}", failure.message, path.display())
                    }
                    None => failure.message,
                },
            )),
        }
    }
}

fn package(manifest: PathBuf) -> Package {
    let name = manifest
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workbench".to_owned());
    Package { name, manifest }
}

/// Asks the supervisor of `run_id` to end it (as `wb-lsp kill` does) and waits until it has.
fn end_run(home: &Path, run_id: &str) {
    let Ok(record) = runs::read_record(home, run_id) else { return };
    if !record.state().is_live() || record.pid_start.is_none() || !record.interrupt_cancels {
        return;
    }
    if supervisor::interrupt(record.pid).is_err() {
        return;
    }
    let asked = Instant::now();
    while asked.elapsed() < ENDING {
        if runs::read_record(home, run_id).map_or(true, |record| !record.state().is_live()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Clears a flag when dropped.
struct Clear<'a>(&'a AtomicBool);

impl Drop for Clear<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// `session/prompt`: one turn, streamed; its stop reason.
pub(super) fn prompt(agent: &Agent, session: &Session, params: &Value) -> Result<Value, Failure> {
    if session.busy.swap(true, Ordering::SeqCst) {
        return Err(Failure::new(INVALID_REQUEST, "a prompt of this session is still running"));
    }
    let _busy = Clear(&session.busy);
    session.cancel.store(false, Ordering::SeqCst);
    let task = updates::prompt_text(params.get("prompt").unwrap_or(&Value::Null))
        .ok_or_else(|| Failure::new(INVALID_PARAMS, "the prompt holds no text"))?;
    let home = supervisor::home().map_err(|error| Failure::new(INTERNAL, format!("{error:#}")))?;
    let (run_id, input) = session.turn(&home, &task)?;
    let mut follower = updates::Follower::new(agent, &session.id, &session.cwd, &home, &run_id, &session.cancel);
    let followed = runs::follow_turn(&home, &run_id, Some(&session.cancel), input.as_deref(), &mut |logged| {
        follower.event(logged);
    });
    let (_, end) = followed.map_err(|error| Failure::new(INTERNAL, error.to_string()))?;
    if let Some(runtime) = follower.runtime.take()
        && let Ok(mut seen) = session.runtime_seen.lock()
    {
        *seen = Some(runtime);
    }
    if session.cancel.load(Ordering::SeqCst) || end.status == "cancelled" {
        // The runner is stopped with its session; the next prompt resumes the conversation.
        end_run(&home, &run_id);
        return Ok(json!({"stopReason": "cancelled"}));
    }
    if end.status != "completed" {
        let why = follower.failure.take().unwrap_or_else(|| "the Workbench session ended before the turn".to_owned());
        return Err(Failure::new(INTERNAL, why));
    }
    // On a runtime that edits a copy (e2b, daytona), the changes come home as the session's final outcome:
    // the session ends to collect it, and its files are offered for review one by one.
    let copy =
        session.runtime_seen.lock().ok().and_then(|seen| seen.clone()).is_some_and(|r| r == "e2b" || r == "daytona");
    if copy {
        end_run(&home, &run_id);
        updates::offer_outcome(agent, &session.id, &run_id, &session.cancel);
    }
    Ok(json!({"stopReason": if session.cancel.load(Ordering::SeqCst) { "cancelled" } else { "end_turn" }}))
}
