//! Every step a dry run, smoke and run share before the launch: runtime selection, bindings, requirements,
//! optional MCPs, route selection, staging the runner's configuration, preparing the runtime and preflight.

use std::path::{Path, PathBuf};

use wb_manifest::{FileSystem, ModelCatalog};

use super::stage::{Stage, make_writable};
use super::{Options, Purpose, RunMode};
use crate::adapters::{self, Adapter, StageContext, Translation};
use crate::bindings::{self, BoundWorkspace, Environment};
use crate::error::{EngineError, Result};
use crate::events::new_run_id;
use crate::requirements::RequirementReport;
use crate::routing::{self, Authentication, ModelRoute};
use crate::runtime::{self, Preflight, PreflightRequest, Preparation, Provision, Runtime};
use crate::sessions;
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
    /// The route's price from the catalog, when it gives one (runner usage without a cost is priced with it).
    pub price: Option<wb_manifest::ModelCost>,
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
    /// In a dry run of a remote runtime: the calls a run would make, one step per line.
    pub plan: Vec<String>,
    /// The local working copies of the workspaces a remote runtime staged, `(host, copy)`; empty when the runner
    /// edits the host in place.
    pub working_copies: Vec<(PathBuf, PathBuf)>,
    /// A resumed session: the conversation id its predecessor kept (`Options::resume_from`).
    pub resumed_conversation: Option<String>,
    /// An adopted run (`Options::adopt`): its runner as found again, launched by the supervisor that died.
    pub(super) adopted: Option<crate::runtime::Launched>,
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

    /// The directory the runner's configuration is staged in, as the host sees it.
    pub fn stage_dir(&self) -> Option<&Path> {
        self.stage.as_ref().map(Stage::path)
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

/// The runtime named `name`, built with the run's configuration (`plan_only` for a dry run; `session` for a
/// session's run).
pub(super) fn open_runtime(name: &str, options: &Options, plan_only: bool, session: bool) -> Result<Box<dyn Runtime>> {
    runtime::runtime_for(
        name,
        runtime::Setup {
            inherited: options.context.inherited.clone(),
            progress: options.context.progress.as_ref().map(|progress| progress.0.clone()),
            home: options.workbench_home(),
            cancel: options.context.cancel.clone(),
            plan_only,
            // A session is resumed, never adopted: its runner's output need not be kept for a new supervisor.
            adoptable: !session,
        },
    )
}

/// What the run is allowed to do here: host Docker engine access only when both the package declares it and
/// the person authorised it; a Workbench home to keep what the run makes (never a shared place instead).
fn check_authorizations(package: &Package, runtime_name: &str, options: &Options) -> Result<()> {
    let host_engine = package.manifest.runtime(runtime_name).is_some_and(|r| r.host_engine);
    if options.request.settings.allow_host_docker && !package.manifest.runtimes.iter().any(|r| r.host_engine) {
        return Err(EngineError::message("--allow-host-docker requires a Workbench that declares docker.engine"));
    }
    if host_engine && !options.request.settings.allow_host_docker {
        return Err(EngineError::message(
            "Host Docker engine access requires explicit --allow-host-docker authorization",
        ));
    }
    if options.request.settings.home.is_none() {
        wb_outcomes::try_workbench_home(|name| options.context.inherited.get(name).map(Into::into))
            .map_err(|error| EngineError::message(error.to_string()))?;
    }
    Ok(())
}

/// The workspaces and environment bound for the run, every required variable set.
fn bind(package: &Package, options: &Options, catalog: &ModelCatalog) -> Result<(Vec<BoundWorkspace>, Environment)> {
    let primary = options.request.settings.primary.clone().map_or_else(
        || options.request.settings.cwd.clone(),
        |p| wb_manifest::absolute(&p, &options.request.settings.cwd),
    );
    let workspaces = bindings::bind_workspaces(
        &package.manifest,
        &package.name,
        &primary,
        &options.request.settings.workspaces,
        &options.request.settings.cwd,
    )?;
    // Relative env files name files below the run's working directory, not the engine process's.
    let env_files: Vec<PathBuf> = options
        .request
        .settings
        .env_files
        .iter()
        .map(|file| wb_manifest::absolute(file, &options.request.settings.cwd))
        .collect();
    let env = bindings::bind_environment(
        &package.manifest,
        &package.name,
        catalog,
        &options.request.env,
        &env_files,
        &options.context.inherited,
    )?;
    Ok((workspaces, env))
}

/// Fails on the first required variable that is not set.
fn require_variables(package: &Package, env: &Environment) -> Result<()> {
    match package.manifest.env.iter().find(|var| var.required && !env.is_set(&var.name.value)) {
        Some(var) => Err(EngineError::message(format!("Missing required environment variable: {}", var.name.value))),
        None => Ok(()),
    }
}

/// The MCP servers the run gets: those whose every referenced variable is set. An MCP referencing an
/// undeclared variable is an error; one whose variables are unset is disabled with a warning.
struct McpSelection<'p> {
    enabled: Vec<&'p wb_manifest::Mcp>,
    disabled: Vec<String>,
    warnings: Vec<String>,
}

fn select_mcps<'p>(package: &'p Package, env: &Environment) -> Result<McpSelection<'p>> {
    let mut selection = McpSelection { enabled: Vec::new(), disabled: Vec::new(), warnings: Vec::new() };
    for mcp in &package.manifest.mcps {
        let references = adapters::mcp_references(mcp);
        if let Some(undeclared) = references.iter().find(|name| package.manifest.env_var(name).is_none()) {
            return Err(EngineError::message(format!(
                "MCP {} references undeclared environment variable: {undeclared}",
                mcp.name.value
            )));
        }
        if references.iter().all(|name| env.is_set(name)) {
            selection.enabled.push(mcp);
        } else {
            selection.warnings.push(format!("optional MCP disabled: {}", mcp.name.value));
            selection.disabled.push(mcp.name.value.clone());
        }
    }
    Ok(selection)
}

/// The model route and whether it can authenticate; and the other providers' keys, which stay away from
/// the runner unless the package declares them (a gateway of its own may take one).
fn choose_route(
    package: &Package,
    catalog: &ModelCatalog,
    runner: &str,
    env: &Environment,
    options: &Options,
) -> Result<(ModelRoute, Authentication, Vec<String>)> {
    let routes = routing::allowed_routes(&package.manifest, catalog, runner)?;
    let packaged = |provider: &str| {
        package.manifest.runner_config.is_some()
            && adapters::packaged_provider(package, runner, provider) != Some(false)
    };
    let (route, authentication) = routing::select_route(
        &routes,
        catalog,
        runner,
        env,
        options.context.inherited.get("HOME").map(String::as_str),
        &packaged,
    );
    let route = route.ok_or_else(|| {
        EngineError::message(format!("No provider route is available for model {}", authentication.model))
    })?;
    let selected: Vec<String> = catalog.provider(&route.provider).map(|p| p.env.clone()).unwrap_or_default();
    let unselected = bindings::provider_variables(catalog)
        .into_iter()
        .filter(|v| !selected.contains(v) && package.manifest.env_var(v).is_none())
        .collect();
    Ok((route, authentication, unselected))
}

/// The run's directories as the runner sees them: the host's, or the container's (with the mounts that put
/// the host's there).
struct RunnerView {
    workspaces: Vec<BoundWorkspace>,
    outbox: PathBuf,
    stage_dir: PathBuf,
    package_dir: PathBuf,
    mounts: Vec<runtime::Mount>,
}

impl RunnerView {
    fn new(
        placement: runtime::Placement,
        workspaces: &[BoundWorkspace],
        package: &Package,
        stage: &Stage,
        outbox: &std::path::Path,
    ) -> RunnerView {
        if placement.maps_paths() {
            let layout = runtime::container_layout(workspaces, &package.package_dir, stage.path(), outbox);
            RunnerView {
                workspaces: layout.workspaces,
                outbox: layout.outbox,
                stage_dir: layout.stage_dir,
                package_dir: layout.package_dir,
                mounts: layout.mounts,
            }
        } else {
            RunnerView {
                workspaces: workspaces.to_vec(),
                outbox: outbox.to_path_buf(),
                stage_dir: stage.path().to_path_buf(),
                package_dir: package.package_dir.clone(),
                mounts: Vec::new(),
            }
        }
    }
}

/// Every step before the launch, in the lifecycle's order: the runtime, authorisations, bindings,
/// requirements, the runner's adapter, MCPs, the route, the staged translation, then the runtime's phases
/// (prepare, provision unless a dry run, preflight).
pub(super) fn prepare_package(
    package: Package,
    options: &Options,
    catalog: &ModelCatalog,
    purpose: Purpose<'_>,
) -> Result<Prepared> {
    let mode = purpose.run_mode();
    let session = mode.is_some_and(|mode| mode.session().is_some());
    let runtime_name = select_runtime(&package, options.request.settings.runtime.as_deref())?;
    check_authorizations(&package, &runtime_name, options)?;
    let mut runtime = open_runtime(&runtime_name, options, purpose.is_dry_run(), session)?;
    let (workspaces, env) = bind(&package, options, catalog)?;
    let requirements = runtime.check_requirements(&package, options.request.settings.allow_unchecked_gpu)?;
    let runner = package.manifest.runner.as_ref().map(|r| r.value.clone()).unwrap_or_default();
    let adapter = adapters::adapter(&runner)?;
    require_variables(&package, &env)?;
    let mcps = select_mcps(&package, &env)?;
    let (route, authentication, unselected) = choose_route(&package, catalog, &runner, &env, options)?;
    let adopting = mode.and_then(RunMode::adopting).map(str::to_owned);
    let run_id = adopting.clone().or_else(|| options.context.run_id.clone()).unwrap_or_else(new_run_id);
    let outbox = crate::runs::RunDir::new(&options.workbench_home(), &run_id).outbox();
    let stage = Stage::create(options, purpose)?;
    let task = options.request.task.clone().unwrap_or_default();
    let view = RunnerView::new(runtime.placement(), &workspaces, &package, &stage, &outbox);
    let mut translation = adapter.translate(&StageContext {
        package: &package,
        route: &route,
        workspaces: &view.workspaces,
        env: &env,
        task: &task,
        stage_dir: stage.path(),
        runner_stage_dir: &view.stage_dir,
        runner_package_dir: &view.package_dir,
        outbox: &view.outbox,
        mcps: &mcps.enabled,
        unselected_variables: &unselected,
        inherited: &options.context.inherited,
        session,
        // Local and container runners read a stdin; a sandbox's runner does not yet.
        interactive: runtime.placement() != crate::runtime::Placement::Sandbox,
    })?;
    // A resumed session takes its predecessor's conversation and files before anything is staged.
    let resumed_conversation = match mode.and_then(RunMode::resume_from) {
        Some(from) => resume_into(&options.workbench_home(), from, stage.path(), &outbox, adapter.as_ref())?,
        None => None,
    };
    let mut warnings = mcps.warnings;
    warnings.extend(translation.warnings.iter().cloned());
    let enabled_mcps: Vec<String> = mcps
        .enabled
        .iter()
        .map(|m| m.name.value.clone())
        .filter(|name| !translation.disabled_mcps.contains(name))
        .collect();
    let mut disabled_mcps = mcps.disabled;
    disabled_mcps.extend(translation.disabled_mcps.iter().cloned());
    // An adopted run's runtime is found again as its supervisor left it: nothing is prepared or checked anew.
    let (preparation, provision, adopted) = match &adopting {
        Some(id) => {
            let (provision, launched) = runtime.adopt(&package, id)?;
            (Preparation::default(), provision, Some(launched))
        }
        None => {
            let preparation = runtime.prepare(&package, view.mounts)?;
            // A remote runtime's sandbox is billed: a run that cannot authenticate never creates one.
            if mode.is_some() && runtime.placement() == runtime::Placement::Sandbox && !authentication.ready {
                return Err(needs_authentication(&authentication));
            }
            let provision = if purpose.is_dry_run() { Provision::default() } else { runtime.provision(&run_id)? };
            (preparation, provision, None)
        }
    };
    let requirements = provision.requirements.unwrap_or(requirements);
    let (preflight, preflight_problems) = match adopted {
        Some(_) => (Preflight::default(), Vec::new()),
        None => preflight(runtime.as_ref(), &package, &runner, adapter.executable(), options, purpose)?,
    };
    // Where the runner reads a stdin, the runner found may take the interactive form of its command.
    if adopted.is_none() && runtime.placement() != runtime::Placement::Sandbox {
        adapter.settle(&mut translation, preflight.runner_version.as_deref(), runtime.placement().maps_paths())?;
    }
    warnings.extend(requirements.unchecked.iter().map(|unchecked| format!("requirement not checked: {unchecked}")));
    if mode.is_some() && !authentication.ready {
        return Err(needs_authentication(&authentication));
    }
    remove_repeated(&mut warnings);
    let price = catalog.models.get(&route.canonical).and_then(|model| model.cost);
    Ok(Prepared {
        package,
        run_id,
        runtime,
        adapter,
        workspaces,
        env,
        price,
        route,
        authentication,
        requirements,
        preflight,
        translation,
        outbox,
        warnings,
        enabled_mcps,
        disabled_mcps,
        preflight_problems,
        plan: preparation.plan,
        working_copies: provision.working_copies,
        resumed_conversation,
        adopted,
        stage: Some(stage),
    })
}

/// Looks the runner and every tool up inside the runtime. A dry run launches nothing: what is missing is
/// reported beside the translation. Anything else (the engine unreachable, a service failing) means preflight
/// could not look, and fails the dry run too.
fn preflight(
    runtime: &dyn Runtime,
    package: &Package,
    runner: &str,
    executable: &str,
    options: &Options,
    purpose: Purpose<'_>,
) -> Result<(Preflight, Vec<String>)> {
    let tools: Vec<String> = package.manifest.tools.iter().map(|t| t.value.clone()).collect();
    let request = PreflightRequest {
        runner,
        executable,
        tools: &tools,
        path_variable: options.context.inherited.get("PATH").map(String::as_str),
    };
    match runtime.preflight(&request) {
        Ok(found) => Ok((found, Vec::new())),
        Err(EngineError::Missing(problem)) if purpose.is_dry_run() => Ok((Preflight::default(), vec![problem])),
        Err(error) => Err(error),
    }
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
    purpose: Purpose<'_>,
) -> Result<Prepared> {
    let mut packages =
        source::resolve(fs, &options.request.settings.source, &options.request.settings.cwd, catalog, true)?;
    let mut package = packages.pop().ok_or_else(|| EngineError::message("No matching Workbenches found"))??;
    if options.request.settings.bare {
        package.strip_to_bare();
    }
    prepare_package(package, options, catalog, purpose)
}

/// Keeps the first occurrence of every text, in order (`Vec::dedup` only removes adjacent repeats, and
/// warnings from different steps can repeat apart).
fn remove_repeated(texts: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    texts.retain(|text| seen.insert(text.clone()));
}

/// A resumed session takes its predecessor's conversation (into the new stage directory `stage`) and the latest
/// revision of each file its chain of sessions returned (into the new `outbox`), before anything is staged.
/// Returns the conversation's id.
fn resume_into(
    home: &Path,
    from: &str,
    stage: &Path,
    outbox: &Path,
    adapter: &dyn crate::adapters::Adapter,
) -> Result<Option<String>> {
    let id = sessions::restore_conversation(home, from, stage, adapter.conversation_store())
        .map_err(|error| EngineError::io(format!("Cannot take the conversation of session {from}"), error))?;
    let chain = sessions::chain(home, from);
    wb_outcomes::create_private_dir(outbox)
        .map_err(|error| EngineError::io(format!("Cannot create the outbox {}", outbox.display()), error))?;
    sessions::seed_outbox(home, &chain, outbox)?;
    Ok(id)
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
