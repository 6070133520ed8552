//! Every step a dry run, smoke and run share before the launch: runtime selection, bindings, requirements,
//! optional MCPs, route selection, staging the runner's configuration, preparing the runtime and preflight.

use std::path::PathBuf;

use wb_manifest::{FileSystem, ModelCatalog};

use super::stage::{Stage, make_writable};
use super::{Options, Purpose};
use crate::adapters::{self, Adapter, StageContext, Translation};
use crate::bindings::{self, BoundWorkspace, Environment};
use crate::error::{EngineError, Result};
use crate::events::new_run_id;
use crate::requirements::RequirementReport;
use crate::routing::{self, Authentication, ModelRoute};
use crate::runtime::{self, Preflight, Runtime};
use crate::source::{self, Package};

/// A package bound and staged, ready to launch. Dropping it removes the staged files.
pub struct Prepared {
    pub package: Package,
    pub run_id: String,
    pub runtime: Box<dyn Runtime>,
    pub adapter: Box<dyn Adapter>,
    pub workspaces: Vec<BoundWorkspace>,
    pub env: Environment,
    pub route: ModelRoute,
    pub authentication: Authentication,
    pub requirements: RequirementReport,
    pub preflight: Preflight,
    pub translation: Translation,
    pub outbox: PathBuf,
    pub warnings: Vec<String>,
    pub enabled_mcps: Vec<String>,
    pub disabled_mcps: Vec<String>,
    /// What preflight found missing (the dry run only: it shows the translation anyway; the other modes stop).
    pub preflight_problems: Vec<String>,
    pub(super) stage: Option<Stage>,
}

impl Prepared {
    /// Removes what preparation created (the staged directory; the runtime's resources). Idempotent.
    pub fn cleanup(&mut self) -> Result<()> {
        let runtime_result = self.runtime.cleanup();
        if let Some(Stage::Temporary(stage)) = self.stage.take() {
            make_writable(stage.path());
            stage.close().map_err(|e| EngineError::io("cannot remove the staged configuration", e))?;
        }
        runtime_result
    }

    /// Names of the variables the runner receives from the engine (never their values).
    pub fn env_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.translation.env.keys().cloned().collect();
        names.sort();
        names
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

/// Selects the runtime: `--runtime`, else the first declared.
pub(super) fn select_runtime(package: &Package, requested: Option<&str>) -> Result<String> {
    let declared: Vec<&str> = package.manifest.runtimes.iter().map(|r| r.provider.value.as_str()).collect();
    match requested {
        Some(name) if declared.contains(&name) => Ok(name.to_owned()),
        Some(name) => Err(EngineError::message(format!(
            "Workbench {} does not declare runtime: {name}. Declared runtimes: {}",
            package.name,
            declared.join(", ")
        ))),
        None => declared
            .first()
            .map(|d| (*d).to_owned())
            .ok_or_else(|| EngineError::message("runtimes must declare at least one runtime")),
    }
}

/// The runtime named `name`, given the inherited environment and the progress sink.
pub(super) fn open_runtime(name: &str, options: &Options) -> Result<Box<dyn Runtime>> {
    let mut runtime = runtime::runtime_for(name)?;
    runtime.inherit_environment(&options.inherited);
    if let Some(progress) = &options.progress {
        runtime.set_progress(progress.0.clone());
    }
    Ok(runtime)
}

pub(super) fn prepare_package(
    package: Package,
    options: &Options,
    catalog: &ModelCatalog,
    purpose: Purpose,
) -> Result<Prepared> {
    let runtime_name = select_runtime(&package, options.runtime.as_deref())?;
    let runtime_config = package.manifest.runtime(&runtime_name).cloned();
    let host_engine = runtime_config.as_ref().is_some_and(|r| r.host_engine);
    if options.allow_host_docker && !package.manifest.runtimes.iter().any(|r| r.host_engine) {
        return Err(EngineError::message("--allow-host-docker requires a Workbench that declares docker.engine"));
    }
    if host_engine && !options.allow_host_docker {
        return Err(EngineError::message(
            "Host Docker engine access requires explicit --allow-host-docker authorization",
        ));
    }
    // Everything a run keeps lives in the Workbench home; without one (no WORKBENCH_HOME, HOME or user
    // database entry) nothing is stored in a shared place instead.
    if options.home.is_none() {
        wb_outcomes::try_workbench_home(|name| options.inherited.get(name).map(Into::into))
            .map_err(|error| EngineError::message(error.to_string()))?;
    }
    let mut runtime = open_runtime(&runtime_name, options)?;
    runtime.set_home(&options.workbench_home());
    runtime.watch_cancel(options.cancel.clone());
    if purpose == Purpose::DryRun {
        runtime.plan_only();
    }
    let primary =
        options.primary.clone().map_or_else(|| options.cwd.clone(), |p| wb_manifest::absolute(&p, &options.cwd));
    let workspaces =
        bindings::bind_workspaces(&package.manifest, &package.name, &primary, &options.workspaces, &options.cwd)?;
    // Relative env files name files below the run's working directory, not the engine process's.
    let env_files: Vec<PathBuf> =
        options.env_files.iter().map(|file| wb_manifest::absolute(file, &options.cwd)).collect();
    let env = bindings::bind_environment(
        &package.manifest,
        &package.name,
        catalog,
        &options.env,
        &env_files,
        &options.inherited,
    )?;
    let requirements = runtime.check_requirements(&package, options.allow_unchecked_gpu)?;
    let runner = package.manifest.runner.as_ref().map(|r| r.value.clone()).unwrap_or_default();
    let adapter = adapters::adapter(&runner)?;
    for var in &package.manifest.env {
        if var.required && !env.is_set(&var.name.value) {
            return Err(EngineError::message(format!("Missing required environment variable: {}", var.name.value)));
        }
    }
    let mut warnings = Vec::new();
    let mut enabled = Vec::new();
    let mut disabled = Vec::new();
    for mcp in &package.manifest.mcps {
        let references = adapters::mcp_references(mcp);
        if let Some(undeclared) = references.iter().find(|name| package.manifest.env_var(name).is_none()) {
            return Err(EngineError::message(format!(
                "MCP {} references undeclared environment variable: {undeclared}",
                mcp.name.value
            )));
        }
        if references.iter().all(|name| env.is_set(name)) {
            enabled.push(mcp);
        } else {
            warnings.push(format!("optional MCP disabled: {}", mcp.name.value));
            disabled.push(mcp.name.value.clone());
        }
    }
    let routes = routing::allowed_routes(&package.manifest, catalog, &runner)?;
    let packaged = |provider: &str| {
        package.manifest.runner_config.is_some()
            && adapters::packaged_provider(&package, &runner, provider) != Some(false)
    };
    let (route, authentication) = routing::select_route(
        &routes,
        catalog,
        &runner,
        &env,
        options.inherited.get("HOME").map(String::as_str),
        &packaged,
    );
    let route = route.ok_or_else(|| {
        EngineError::message(format!("No provider route is available for model {}", authentication.model))
    })?;
    let selected_variables: Vec<String> = catalog.provider(&route.provider).map(|p| p.env.clone()).unwrap_or_default();
    // Other providers' keys stay away from the runner, unless the package declares them (a gateway of its own
    // may take one).
    let unselected: Vec<String> = bindings::provider_variables(catalog)
        .into_iter()
        .filter(|v| !selected_variables.contains(v) && package.manifest.env_var(v).is_none())
        .collect();
    let run_id = new_run_id();
    let outbox = options.workbench_home().join("runs").join(&run_id).join("outbox");
    let stage = Stage::create(options, purpose)?;
    let task = options.task.clone().unwrap_or_default();
    // What the runner sees: the host's paths, or the container's (the runtime mounts the host's there).
    let (runner_workspaces, runner_outbox, runner_stage, runner_package) = if runtime.maps_paths() {
        let layout = runtime::container_layout(&workspaces, &package.package_dir, stage.path(), &outbox);
        runtime.set_mounts(layout.mounts);
        (layout.workspaces, layout.outbox, layout.stage_dir, layout.package_dir)
    } else {
        (workspaces.clone(), outbox.clone(), stage.path().to_path_buf(), package.package_dir.clone())
    };
    let context = StageContext {
        package: &package,
        route: &route,
        workspaces: &runner_workspaces,
        env: &env,
        task: &task,
        stage_dir: stage.path(),
        runner_stage_dir: &runner_stage,
        runner_package_dir: &runner_package,
        outbox: &runner_outbox,
        mcps: &enabled,
        unselected_variables: &unselected,
        inherited: &options.inherited,
    };
    let translation = adapter.translate(&context)?;
    warnings.extend(translation.warnings.iter().cloned());
    let enabled_mcps: Vec<String> =
        enabled.iter().map(|m| m.name.value.clone()).filter(|name| !translation.disabled_mcps.contains(name)).collect();
    disabled.extend(translation.disabled_mcps.iter().cloned());
    runtime.prepare(&package)?;
    // A remote runtime's sandbox is billed: a run that cannot authenticate never creates one.
    if purpose == Purpose::Run && runtime.is_remote() && !authentication.ready {
        return Err(needs_authentication(&authentication));
    }
    let mut requirements = requirements;
    if purpose != Purpose::DryRun {
        runtime.provision(&run_id)?;
        if let Some(report) = runtime.requirement_report() {
            requirements = report;
        }
    }
    let tools: Vec<String> = package.manifest.tools.iter().map(|t| t.value.clone()).collect();
    let mut preflight_problems = Vec::new();
    let preflight = match runtime.preflight(
        &runner,
        adapter.executable(),
        &tools,
        options.inherited.get("PATH").map(String::as_str),
    ) {
        Ok(found) => found,
        // A dry run launches nothing: what is missing is reported beside the translation.
        Err(EngineError::Message(problem)) if purpose == Purpose::DryRun => {
            preflight_problems.push(problem);
            Preflight { runner: None, tools: Vec::new() }
        }
        Err(error) => return Err(error),
    };
    for unchecked in &requirements.unchecked {
        warnings.push(format!("requirement not checked: {unchecked}"));
    }
    if purpose == Purpose::Run && !authentication.ready {
        return Err(needs_authentication(&authentication));
    }
    remove_repeated(&mut warnings);
    Ok(Prepared {
        package,
        run_id,
        runtime,
        adapter,
        workspaces,
        env,
        route,
        authentication,
        requirements,
        preflight,
        translation,
        outbox,
        warnings,
        enabled_mcps,
        disabled_mcps: disabled,
        preflight_problems,
        stage: Some(stage),
    })
}

fn needs_authentication(authentication: &Authentication) -> EngineError {
    EngineError::NeedsAuthentication(format!(
        "No authenticated route is available for {}. {}",
        authentication.model,
        authentication.instruction.clone().unwrap_or_default()
    ))
}

/// Resolves one package and prepares it (dry run and run work on exactly one package).
pub(super) fn prepare_one(
    fs: &dyn FileSystem,
    options: &Options,
    catalog: &ModelCatalog,
    purpose: Purpose,
) -> Result<Prepared> {
    let mut packages = source::resolve(fs, &options.source, &options.cwd, catalog, true)?;
    let package = packages.pop().ok_or_else(|| EngineError::message("No matching Workbenches found"))??;
    prepare_package(package, options, catalog, purpose)
}

/// Keeps the first occurrence of every text, in order (`Vec::dedup` only removes adjacent repeats, and
/// warnings from different steps can repeat apart).
fn remove_repeated(texts: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    texts.retain(|text| seen.insert(text.clone()));
}

#[cfg(test)]
mod tests {
    use super::remove_repeated;

    #[test]
    fn repeated_warnings_are_removed_keeping_the_first_seen_order() {
        let mut warnings: Vec<String> = ["b", "a", "b", "c", "a", "a"].map(str::to_owned).to_vec();
        remove_repeated(&mut warnings);
        assert_eq!(warnings, ["b", "a", "c"]);
    }
}
