//! Adopting a remote run whose supervisor died: the sandbox and the runner in it live on (the lease still
//! runs), so a new supervisor can take the run over instead of leaving it lost.
//!
//! At launch the runtime writes `runs/<id>/remote.json` (0600): the service, the sandbox's id, each writable
//! workspace (its baseline commit and the digest of the staged archive kept in the sandbox) and the service's
//! handle on the runner's process (Daytona: the session and command; E2B: the process and the file its output
//! is also written to). [`RemoteRuntime::adopt`] finds the sandbox again by this run's labels (it must be the
//! recorded one), rebuilds the working copies from the kept archives, and reattaches to the process with its
//! output from the first byte; the run's lifecycle replays that output and logs only the events past the last
//! one already in the log.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::kept::{KeptWorkspace, kept_workspaces, rebuild_copies};
use super::{RemoteRuntime, SandboxInfo, labels};
use crate::error::{EngineError, Result};
use crate::runs::RunDir;
use crate::runs::layout::REMOTE;
use crate::runtime::{Handle, Launched, Provision};

/// What a new supervisor needs to take a remote run over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    pub service: String,
    pub sandbox_id: String,
    pub workspaces: Vec<KeptWorkspace>,
    /// The service's handle on the runner's process ([`super::provider::Sandbox::reattach`] reads it).
    pub process: serde_json::Value,
}

/// The attachment of `run_id`, or `None` when its runner was never launched in a sandbox.
pub fn load(home: &Path, run_id: &str) -> Result<Option<Attachment>> {
    let dir = RunDir::new(home, run_id);
    let path = dir.file(REMOTE);
    let bytes = match dir.read_bytes(REMOTE) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EngineError::io(format!("cannot read {}", path.display()), e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| EngineError::message(format!("{} is not a remote run's attachment: {e}", path.display())))
}

impl RemoteRuntime {
    /// Takes the existing sandbox `id` (a recovery's or an adoption's) as this runtime's: reconnected by its id,
    /// and refused should the service answer with another.
    pub(super) fn reconnect_to(&mut self, id: &str) -> Result<()> {
        let lease = self.lease;
        let sandbox = self.provider()?.reconnect(id, lease)?;
        if sandbox.id() != id {
            return Err(EngineError::reply(format!("{} gave sandbox {} for sandbox {id}", self.title(), sandbox.id())));
        }
        self.sandbox = Some(std::sync::Arc::from(sandbox));
        self.info = Some(SandboxInfo {
            provider: self.name().to_owned(),
            id: id.to_owned(),
            template: String::new(),
            destroyed: false,
        });
        Ok(())
    }

    /// Writes the run's attachment once its runner is launched (a failure is said, the run goes on: it only
    /// cannot be adopted).
    pub(super) fn record_attachment(&self, process: serde_json::Value) {
        let (Some(run_id), Some(sandbox)) = (&self.run_id, &self.sandbox) else { return };
        let Some(workspaces) = kept_workspaces(self) else { return };
        let attachment =
            Attachment { service: self.name().to_owned(), sandbox_id: sandbox.id().to_owned(), workspaces, process };
        if let Err(error) = RunDir::new(&self.setup.home, run_id).write(REMOTE, &attachment, true) {
            self.report_progress(&format!("The run cannot be adopted should its supervisor die: {error}"));
        }
    }

    /// Takes over `run_id` of `workbench`: the sandbox found by the run's labels (it must be the one recorded at
    /// launch), the working copies rebuilt, the runner's process reattached with its output from the start.
    pub(super) fn adopt_run(&mut self, workbench: &str, run_id: &str) -> Result<(Provision, Launched)> {
        let adopted = self.take_over(workbench, run_id);
        if adopted.is_err() {
            // An adoption that failed leaves the sandbox as it found it (cleanup would destroy it): the run can
            // be adopted again, or `clean` reclaims it.
            self.keeper = None;
            self.sandbox = None;
        }
        adopted
    }

    fn take_over(&mut self, workbench: &str, run_id: &str) -> Result<(Provision, Launched)> {
        let home = self.setup.home.clone();
        let attachment = load(&home, run_id)?.ok_or_else(|| {
            EngineError::message(format!("Run {run_id} cannot be adopted: its runner was never launched in a sandbox"))
        })?;
        if attachment.service != self.name() {
            return Err(EngineError::message(format!(
                "Run {run_id} ran on {}, not {}",
                attachment.service,
                self.name()
            )));
        }
        self.workbench = workbench.to_owned();
        self.run_id = Some(run_id.to_owned());
        let title = self.title();
        let found = self.provider()?.find(&labels(run_id, workbench))?;
        if found != [attachment.sandbox_id.clone()] {
            return Err(EngineError::message(format!(
                "Run {run_id} cannot be adopted: {title} has {} for its labels, not its sandbox {}",
                if found.is_empty() { "no sandbox".to_owned() } else { format!("sandboxes {}", found.join(", ")) },
                attachment.sandbox_id
            )));
        }
        self.reconnect_to(&attachment.sandbox_id)?;
        self.report_progress(&format!("Adopting {title} sandbox {}", attachment.sandbox_id));
        rebuild_copies(self, &home, &attachment.workspaces)?;
        let process = self.sandbox()?.reattach(&attachment.process)?;
        self.keep_alive();
        let working_copies = self.copies.iter().map(|c| (c.host.clone(), c.path().to_path_buf())).collect();
        let launched = Launched {
            stdin: None,
            stdout: Some(process.stdout),
            stderr: Some(process.stderr),
            server: None,
            handle: Handle::Remote { exit: process.exit, killer: process.killer },
        };
        Ok((Provision { requirements: None, working_copies }, launched))
    }
}
