//! Runtimes: where a run happens. A runtime prepares its environment, checks requirements and preflights
//! inside it, launches the runner, cancels it, and cleans up (always, idempotently).

mod local;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use local::Local;

use crate::adapters::Translation;
use crate::error::{EngineError, Result};
use crate::requirements::RequirementReport;
use crate::source::Package;

/// What preflight found: the runner's and every tool's location inside the runtime.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Preflight {
    pub runner: Option<PathBuf>,
    pub tools: Vec<(String, PathBuf)>,
}

/// A launched runner process.
pub struct Launched {
    pub child: std::process::Child,
}

pub trait Runtime: Send {
    fn name(&self) -> &'static str;
    /// The environment the engine inherited (`Options::inherited`). A runtime on the host bases the runner's
    /// environment on it and looks the runner up on its `PATH`, as preflight did; others ignore it.
    fn inherit_environment(&mut self, _inherited: &BTreeMap<String, String>) {}
    /// Checks the manifest's requirements against this runtime, before anything is prepared.
    fn check_requirements(&self, package: &Package, allow_unchecked_gpu: bool) -> Result<RequirementReport>;
    /// Prepares the environment (pull or build an image, create a sandbox). Local: nothing to do.
    fn prepare(&mut self, package: &Package) -> Result<()>;
    /// Looks up the runner executable and every declared tool inside the runtime.
    fn preflight(
        &self,
        runner: &str,
        executable: &str,
        tools: &[String],
        path_variable: Option<&str>,
    ) -> Result<Preflight>;
    /// Starts the runner with its translation (stdout piped for events).
    fn launch(&mut self, translation: &Translation) -> Result<Launched>;
    /// Stops a launched runner and everything it started.
    fn cancel(&mut self, launched: &mut Launched);
    /// Releases whatever `prepare` created. Safe to call more than once.
    fn cleanup(&mut self) -> Result<()>;
}

/// The runtime for a declared provider name. Providers this build cannot run are refused explicitly: a run
/// never falls back to the host.
pub fn runtime_for(provider: &str) -> Result<Box<dyn Runtime>> {
    match provider {
        "local" => Ok(Box::new(Local::default())),
        "docker" | "e2b" | "daytona" => Err(EngineError::message(format!(
            "The {provider} runtime is not supported by this wb-lsp build; select a declared local runtime with --runtime local"
        ))),
        other => Err(EngineError::message(format!("Unsupported runtime: {other}"))),
    }
}
