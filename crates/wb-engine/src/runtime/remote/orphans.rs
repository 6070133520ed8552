//! Sandboxes whose run is gone: a run whose supervisor was killed leaves its sandbox to the service's lease.
//! `clean` finds them by the labels every sandbox carries and destroys them, but only those of runs this
//! Workbench home knows and that no longer run (ended, or lost): a sandbox labelled with a run this home has
//! no record of may be another machine's live run on the same account, and is never touched; nor is a sandbox
//! kept behind a recovery checkpoint.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::EngineError;
use crate::runs;
use crate::runtime::services;

/// How far back runs are looked at: a sandbox older than its lease is gone anyway.
const LOOK_BACK: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// A sandbox whose run no longer runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Orphan {
    /// The runtime (`e2b`, `daytona`).
    pub service: String,
    pub sandbox: String,
    pub run_id: String,
    /// The run's state here: `completed`, `failed`, `cancelled` or `lost`.
    pub run_state: String,
}

/// What a look for orphans found, and what stopped it (a service that could not be asked).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Orphans {
    pub sandboxes: Vec<Orphan>,
    /// Destroyed (with `apply`).
    pub destroyed: usize,
    pub problems: Vec<String>,
}

/// Finds (and with `apply` destroys) the sandboxes of this home's remote runs that no longer run, on every
/// service whose credentials are in `inherited`. Services without credentials are not asked.
pub fn orphans(home: &Path, inherited: &BTreeMap<String, String>, apply: bool) -> Orphans {
    let mut found = Orphans::default();
    let runs: Vec<runs::RunRecord> = runs::list(home)
        .into_iter()
        .filter(|record| !record.state().is_live())
        .filter(|record| record.elapsed_since_start().is_some_and(|age| age <= LOOK_BACK))
        // A sandbox kept for a recovery goes only with `--recover` or `--discard-recovery`.
        .filter(|record| !matches!(super::recovery::load(home, &record.run_id), Ok(Some(_)) | Err(_)))
        .collect();
    let Ok(tokio) = client_runtime() else {
        found.problems.push("cannot start the services' client".to_owned());
        return found;
    };
    for service in services() {
        let ours: Vec<&runs::RunRecord> = runs.iter().filter(|record| record.runtime == service.name()).collect();
        if !has_credentials(service.credential_keys(), inherited) || ours.is_empty() {
            continue;
        }
        let mut provider = match service.connect(inherited, tokio.handle().clone()) {
            Ok(provider) => provider,
            Err(error) => {
                found.problems.push(format!("{}: {error}", service.title()));
                continue;
            }
        };
        for record in ours {
            let labels = super::labels(&record.run_id, &record.workbench);
            let ids = match provider.find(&labels) {
                Ok(ids) => ids,
                Err(error) => {
                    found.problems.push(format!("{}: {error}", service.title()));
                    break;
                }
            };
            if ids.is_empty() {
                continue;
            }
            if apply {
                match provider.reclaim(&labels) {
                    Ok(destroyed) => found.destroyed += destroyed,
                    Err(error) => found.problems.push(format!("{}: {error}", service.title())),
                }
            }
            found.sandboxes.extend(ids.into_iter().map(|sandbox| Orphan {
                service: service.name().to_owned(),
                sandbox,
                run_id: record.run_id.clone(),
                run_state: record.state().as_str().to_owned(),
            }));
        }
    }
    found
}

/// Destroys the sandboxes of one remote run that no longer runs (`kill` of a lost run: its supervisor died and
/// its sandbox went on until its lease). Answers the sandboxes destroyed; an error names what could not be done
/// (no credentials, a service that could not be asked).
pub fn reclaim_run(record: &runs::RunRecord, inherited: &BTreeMap<String, String>) -> crate::Result<Vec<String>> {
    if record.state().is_live() {
        return Err(EngineError::message(format!("run {} is still running", record.run_id)));
    }
    let Some(service) = services().into_iter().find(|service| service.name() == record.runtime) else {
        return Ok(Vec::new());
    };
    if !has_credentials(service.credential_keys(), inherited) {
        return Err(EngineError::message(format!(
            "{}: its sandbox is left to its lease: no {} in the environment to destroy it with",
            service.title(),
            service.credential_keys().join(" or ")
        )));
    }
    let tokio = client_runtime().map_err(|_| EngineError::message("cannot start the services' client"))?;
    let named = |error: EngineError| EngineError::message(format!("{}: {error}", service.title()));
    let mut provider = service.connect(inherited, tokio.handle().clone()).map_err(named)?;
    let labels = super::labels(&record.run_id, &record.workbench);
    let ids = provider.find(&labels).map_err(named)?;
    if !ids.is_empty() {
        provider.reclaim(&labels).map_err(named)?;
    }
    Ok(ids)
}

fn has_credentials(keys: &[&str], inherited: &BTreeMap<String, String>) -> bool {
    keys.iter().any(|key| inherited.get(*key).is_some_and(|value| !value.trim().is_empty()))
}

/// The providers drive their calls with `Handle::block_on`, which needs a runtime with its own workers.
fn client_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()
}
