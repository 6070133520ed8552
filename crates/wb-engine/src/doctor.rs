//! `doctor`: what this machine offers a run — each runner (where it was found, its version, whether the adapter
//! is verified with it), the Docker engine, the credential variables of each catalog provider (names and
//! whether they are set, never values) and the outcome store's size against its quota.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use wb_manifest::ModelCatalog;

use crate::adapters::{self, RUNNERS};
use crate::runtime::{Docker, find_executable};

/// Where `scripts/install-runners.sh` installs the runners, below `$HOME`.
pub const RUNNER_CACHE_BIN: &str = ".cache/wb-lsp/runners/node_modules/.bin";

#[derive(Clone, Debug, Serialize)]
pub struct Doctor {
    pub runners: Vec<RunnerCheck>,
    pub docker: DockerCheck,
    pub credentials: Vec<ProviderCredentials>,
    pub outcome_store: StoreCheck,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunnerCheck {
    /// The `runner:` value.
    pub runner: String,
    pub executable: String,
    pub npm_package: String,
    pub verified_versions: Vec<String>,
    /// Where the executable is on PATH, if it is.
    pub path: Option<String>,
    /// The installed version, read from the npm package the executable belongs to (`None` for another kind
    /// of install).
    pub version: Option<String>,
    /// Whether that version is one the adapter is verified with (`None` when the version is unknown).
    pub verified: Option<bool>,
    /// An executable in the runner cache (`~/.cache/wb-lsp/runners`), which runs do not search: put its
    /// directory on PATH to use it.
    pub in_cache: Option<String>,
    /// The command that installs the verified version.
    pub install: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct DockerCheck {
    pub reachable: bool,
    pub version: Option<String>,
    /// Why it cannot be reached.
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProviderCredentials {
    pub provider: String,
    /// Its credential variables in preference order, each with whether it is set (the value is never read out).
    pub variables: Vec<Variable>,
    /// Whether any of them is set.
    pub ready: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Variable {
    pub name: String,
    pub set: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct StoreCheck {
    /// `$WORKBENCH_HOME`.
    pub home: String,
    pub bytes: u64,
    pub quota: u64,
    pub warning: Option<String>,
}

/// The report for a process whose environment is `inherited` (`PATH`, `HOME`, the provider variables).
pub fn doctor(inherited: &BTreeMap<String, String>, catalog: &ModelCatalog) -> Doctor {
    let path_variable = inherited.get("PATH").map(String::as_str);
    let home = inherited.get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let runners = RUNNERS.iter().filter_map(|runner| runner_check(runner, path_variable, home.as_deref())).collect();
    let docker = match Docker::new(crate::runtime::Setup::default()).and_then(|docker| docker.engine_version()) {
        Ok(version) => DockerCheck { reachable: true, version: Some(version), error: None },
        Err(error) => DockerCheck { reachable: false, version: None, error: Some(error.to_string()) },
    };
    let is_set = |name: &str| inherited.get(name).is_some_and(|value| !value.is_empty());
    let credentials = catalog
        .providers
        .iter()
        .map(|(provider, details)| {
            let variables: Vec<Variable> =
                details.env.iter().map(|name| Variable { name: name.clone(), set: is_set(name) }).collect();
            let ready = variables.iter().any(|v| v.set);
            ProviderCredentials { provider: provider.clone(), variables, ready }
        })
        .collect();
    let workbench_home = wb_outcomes::workbench_home(|name| inherited.get(name).map(Into::into));
    let (bytes, quota) = wb_outcomes::retention::store_usage(&workbench_home);
    Doctor {
        runners,
        docker,
        credentials,
        outcome_store: StoreCheck {
            home: workbench_home.display().to_string(),
            bytes,
            quota,
            warning: wb_outcomes::retention::quota_warning(&workbench_home),
        },
    }
}

fn runner_check(runner: &str, path_variable: Option<&str>, home: Option<&Path>) -> Option<RunnerCheck> {
    let adapter = adapters::adapter(runner).ok()?;
    let verified_versions: Vec<String> = adapter.verified_versions().iter().map(|v| (*v).to_owned()).collect();
    let found = find_executable(adapter.executable(), path_variable);
    let version = found.as_deref().and_then(adapters::installed_version);
    let verified = version.as_ref().map(|v| verified_versions.contains(v));
    let in_cache = home
        .map(|home| home.join(RUNNER_CACHE_BIN).join(adapter.executable()))
        .filter(|cached| find_executable(&cached.display().to_string(), None).is_some())
        .map(|cached| cached.display().to_string());
    let latest = verified_versions.last().cloned().unwrap_or_else(|| "latest".to_owned());
    Some(RunnerCheck {
        runner: runner.to_owned(),
        executable: adapter.executable().to_owned(),
        npm_package: adapter.npm_package().to_owned(),
        verified_versions,
        path: found.map(|p| p.display().to_string()),
        version,
        verified,
        in_cache,
        install: format!("npm install -g {}@{latest}", adapter.npm_package()),
    })
}
