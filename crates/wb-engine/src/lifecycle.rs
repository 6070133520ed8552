//! The run lifecycle: resolve → select the runtime → bind workspaces and environment → requirements →
//! stage the runner's configuration → prepare the runtime → preflight → authentication readiness → (launch)
//! → cleanup, always. Dry run, smoke and run share every step up to the launch.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use wb_manifest::{FileSystem, ModelCatalog};
use wb_outcomes::Completeness;

use crate::adapters::{self, Adapter, StageContext, TranslateState, Translation};
use crate::bindings::{self, BoundWorkspace, Environment};
use crate::error::{EngineError, Result};
use crate::events::{Event, Redactor, Stream, Translated, new_run_id};
use crate::outcome;
use crate::requirements::RequirementReport;
use crate::routing::{self, Authentication, ModelRoute};
use crate::runtime::{self, Preflight, Runtime};
use crate::source::{self, Package};

/// A progress callback for long preparation steps (image builds and pulls).
#[derive(Clone)]
pub struct Progress(pub runtime::ProgressSink);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

/// What the person starting a run chose.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub source: String,
    pub cwd: PathBuf,
    /// The primary workspace (default: the working directory).
    pub primary: Option<PathBuf>,
    pub runtime: Option<String>,
    pub workspaces: Vec<String>,
    pub env: Vec<String>,
    pub env_files: Vec<PathBuf>,
    pub allow_host_docker: bool,
    pub allow_unchecked_gpu: bool,
    pub task: Option<String>,
    /// The environment the engine inherited (`std::env::vars()` in the CLI).
    pub inherited: BTreeMap<String, String>,
    /// Receives progress while the runtime prepares (the editor shows it).
    pub progress: Option<Progress>,
    /// `$WORKBENCH_HOME`, default `~/.workbench`.
    pub home: Option<PathBuf>,
    /// Dry run only: stage the runner's configuration in this new directory and keep it, so the printed
    /// command can be run by hand and the runner's own loaders can check what it would receive.
    pub stage_dir: Option<PathBuf>,
}

impl Options {
    fn workbench_home(&self) -> PathBuf {
        self.home
            .clone()
            .unwrap_or_else(|| wb_outcomes::workbench_home(|name| self.inherited.get(name).map(Into::into)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    DryRun,
    Smoke,
    Run,
}

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
    stage: Option<Stage>,
}

/// Where the runner's configuration is staged: a private temporary directory, or one the person asked to keep.
enum Stage {
    Temporary(tempfile::TempDir),
    Kept(PathBuf),
}

impl Stage {
    fn path(&self) -> &Path {
        match self {
            Stage::Temporary(dir) => dir.path(),
            Stage::Kept(path) => path,
        }
    }

    fn create(options: &Options, purpose: Purpose) -> Result<Stage> {
        match (&options.stage_dir, purpose) {
            (Some(dir), Purpose::DryRun) => {
                let dir = if dir.is_absolute() { dir.clone() } else { options.cwd.join(dir) };
                if std::fs::symlink_metadata(&dir).is_ok() {
                    return Err(EngineError::message(format!("The stage directory already exists: {}", dir.display())));
                }
                let failed = |e| EngineError::io(format!("cannot create the stage directory {}", dir.display()), e);
                if let Some(parent) = dir.parent() {
                    std::fs::create_dir_all(parent).map_err(failed)?;
                }
                // Private, like the temporary one: it may hold a link to the runner's sign-in file.
                let mut builder = std::fs::DirBuilder::new();
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder.create(&dir).map_err(failed)?;
                Ok(Stage::Kept(dir))
            }
            _ => tempfile::Builder::new()
                .prefix("wb-lsp-stage-")
                .tempdir()
                .map(Stage::Temporary)
                .map_err(|e| EngineError::io("cannot create the staging directory", e)),
        }
    }
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

/// Staged files are read-only for the runner; make them removable again.
fn make_writable(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(path) = stack.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if meta.file_type().is_symlink() {
                continue;
            }
            let mode = meta.permissions().mode() | 0o200;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode));
            if meta.is_dir() {
                if let Ok(entries) = std::fs::read_dir(&path) {
                    stack.extend(entries.flatten().map(|e| e.path()));
                }
            }
        }
    }
}

/// Selects the runtime: `--runtime`, else the first declared.
fn select_runtime(package: &Package, requested: Option<&str>) -> Result<String> {
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

fn prepare_package(package: Package, options: &Options, catalog: &ModelCatalog, purpose: Purpose) -> Result<Prepared> {
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
    let mut runtime = runtime::runtime_for(&runtime_name)?;
    runtime.inherit_environment(&options.inherited);
    if let Some(progress) = &options.progress {
        runtime.set_progress(progress.0.clone());
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
    let tools: Vec<String> = package.manifest.tools.iter().map(|t| t.value.clone()).collect();
    let preflight =
        runtime.preflight(&runner, adapter.executable(), &tools, options.inherited.get("PATH").map(String::as_str))?;
    for unchecked in &requirements.unchecked {
        warnings.push(format!("requirement not checked: {unchecked}"));
    }
    if purpose == Purpose::Run && !authentication.ready {
        return Err(EngineError::NeedsAuthentication(format!(
            "No authenticated route is available for {}. {}",
            authentication.model,
            authentication.instruction.clone().unwrap_or_default()
        )));
    }
    warnings.dedup();
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
        stage: Some(stage),
    })
}

/// Resolves one package and prepares it (dry run and run work on exactly one package).
fn prepare_one(fs: &dyn FileSystem, options: &Options, catalog: &ModelCatalog, purpose: Purpose) -> Result<Prepared> {
    let mut packages = source::resolve(fs, &options.source, &options.cwd, catalog, true)?;
    let package = packages.pop().ok_or_else(|| EngineError::message("No matching Workbenches found"))??;
    prepare_package(package, options, catalog, purpose)
}

/// The translation a dry run prints: everything the runner would receive, with names instead of values.
#[derive(Clone, Debug, Serialize)]
pub struct DryRun {
    pub workbench: String,
    pub version: String,
    pub runner: String,
    /// The adapter's verified native versions and capability map.
    pub adapter: Value,
    pub runtime: String,
    pub command: Vec<String>,
    pub cwd: String,
    pub model_route: ModelRoute,
    pub authentication: Authentication,
    pub skills: Vec<String>,
    pub workspaces: Vec<Value>,
    pub env: Vec<String>,
    pub removed_env: Vec<String>,
    pub mcps: Value,
    pub requirements: RequirementReport,
    pub staged_files: Vec<String>,
    /// The kept stage directory (`--stage-dir`), where `staged_files` are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage_dir: Option<String>,
    /// What `native` is: `opencode_config`, `claude_config` or `pi_config`.
    pub native_key: String,
    /// The runner-native configuration, exactly as the runner receives it (references, never values).
    pub native: Value,
    pub warnings: Vec<String>,
}

fn workspace_json(workspaces: &[BoundWorkspace]) -> Vec<Value> {
    workspaces
        .iter()
        .map(|w| json!({"name": w.name.clone().unwrap_or_else(|| "primary".into()), "path": w.path.display().to_string(), "access": w.access.as_str()}))
        .collect()
}

/// Resolve, preflight and translate without launching.
pub fn dry_run(fs: &dyn FileSystem, options: &Options, catalog: &ModelCatalog) -> Result<DryRun> {
    if options.task.as_deref().is_none_or(|t| t.trim().is_empty()) {
        return Err(EngineError::message("This run mode requires a non-empty task"));
    }
    let kept =
        options.stage_dir.as_ref().map(|dir| if dir.is_absolute() { dir.clone() } else { options.cwd.join(dir) });
    let existed = kept.as_ref().is_some_and(|dir| std::fs::symlink_metadata(dir).is_ok());
    let mut prepared = match prepare_one(fs, options, catalog, Purpose::DryRun) {
        Ok(prepared) => prepared,
        Err(error) => {
            // A stage directory this dry run created is not left half-written.
            if let (Some(dir), false) = (&kept, existed) {
                make_writable(dir);
                let _ = std::fs::remove_dir_all(dir);
            }
            return Err(error);
        }
    };
    let redactor = Redactor::new(prepared.env.values());
    let translation = &prepared.translation;
    let report = DryRun {
        workbench: prepared.package.name.clone(),
        version: prepared.package.version.clone(),
        runner: prepared.adapter.name().to_owned(),
        adapter: json!({
            "verified_versions": prepared.adapter.verified_versions(),
            "capabilities": prepared
                .adapter
                .capabilities()
                .into_iter()
                .map(|(name, support)| (name.to_owned(), json!(support)))
                .collect::<serde_json::Map<String, Value>>(),
        }),
        runtime: prepared.runtime.name().to_owned(),
        command: translation.command.iter().map(|a| redactor.text(a)).collect(),
        cwd: translation.cwd.display().to_string(),
        model_route: prepared.route.clone(),
        authentication: prepared.authentication.clone(),
        skills: translation.skills.clone(),
        workspaces: workspace_json(&prepared.workspaces),
        env: prepared.env_names(),
        removed_env: translation.remove_env.clone(),
        mcps: json!({"enabled": prepared.enabled_mcps, "disabled": prepared.disabled_mcps}),
        requirements: prepared.requirements.clone(),
        staged_files: translation.staged_files.clone(),
        native_key: translation.native_key.to_owned(),
        native: redactor.value(&translation.native),
        warnings: prepared.warnings.clone(),
        stage_dir: match &prepared.stage {
            Some(Stage::Kept(dir)) => Some(dir.display().to_string()),
            _ => None,
        },
    };
    prepared.cleanup()?;
    Ok(report)
}

/// The result of smoking one package (`SmokeReportData` of the reference).
#[derive(Clone, Debug, Serialize)]
pub struct Smoke {
    pub status: String,
    pub workbench: String,
    pub version: String,
    pub runtime: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<Value>,
    pub tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirements: Option<RequirementReport>,
    pub workspaces: Vec<Value>,
    /// `"host"` when the run is granted the host's Docker engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_engine: Option<String>,
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// Checks that each package can start here, without a model request.
pub fn smoke(fs: &dyn FileSystem, options: &Options, catalog: &ModelCatalog) -> Result<Vec<Smoke>> {
    let packages = source::resolve(fs, &options.source, &options.cwd, catalog, false)?;
    let mut reports = Vec::new();
    for package in packages {
        let (name, version) = match &package {
            Ok(package) => (package.name.clone(), package.version.clone()),
            Err(_) => (String::new(), String::new()),
        };
        let outcome = package.and_then(|package| prepare_package(package, options, catalog, Purpose::Smoke));
        let report = match outcome {
            Ok(mut prepared) => {
                let status = if prepared.authentication.ready { "ready" } else { "needs-auth" };
                let mut warnings = prepared.warnings.clone();
                let verified = prepared.adapter.verified_versions();
                // A container's runner path is not a host path: its version is not read from the host.
                let installed = if prepared.runtime.maps_paths() {
                    None
                } else {
                    prepared.preflight.runner.as_deref().and_then(adapters::installed_version)
                };
                if let Some(version) = installed.as_deref().filter(|v| !verified.contains(v)) {
                    warnings.push(format!(
                        "{} {version} is not a version wb-lsp is verified against ({}): its configuration or events may differ",
                        prepared.adapter.executable(),
                        verified.join(", ")
                    ));
                }
                if !prepared.authentication.ready {
                    if let Some(instruction) = &prepared.authentication.instruction {
                        warnings.push(instruction.clone());
                    }
                }
                let report = Smoke {
                    status: status.to_owned(),
                    workbench: prepared.package.name.clone(),
                    version: prepared.package.version.clone(),
                    runtime: prepared.runtime.name().to_owned(),
                    runner: Some(json!({
                        "name": prepared.adapter.name(),
                        "path": prepared.preflight.runner.as_ref().map(|p| p.display().to_string()),
                        "version": installed,
                        "verified": installed.as_deref().map(|v| verified.contains(&v)),
                    })),
                    tools: prepared
                        .preflight
                        .tools
                        .iter()
                        .map(|(name, path)| json!({"name": name, "path": path.display().to_string()}))
                        .collect(),
                    authentication: Some(prepared.authentication.clone()),
                    requirements: Some(prepared.requirements.clone()),
                    workspaces: workspace_json(&prepared.workspaces),
                    docker_engine: (prepared.runtime.name() == "docker"
                        && prepared.package.manifest.runtime("docker").is_some_and(|r| r.host_engine))
                    .then(|| "host".to_owned()),
                    warnings,
                    error: None,
                };
                prepared.cleanup()?;
                report
            }
            Err(error) => Smoke {
                status: "failed".to_owned(),
                workbench: name,
                version,
                runtime: options.runtime.clone().unwrap_or_default(),
                runner: None,
                tools: Vec::new(),
                authentication: None,
                requirements: None,
                workspaces: Vec::new(),
                docker_engine: None,
                warnings: Vec::new(),
                error: Some(json!({"code": "smoke_failed", "message": error.to_string()})),
            },
        };
        reports.push(report);
    }
    Ok(reports)
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    Completed,
    Failed(String),
    Cancelled,
}

/// The outcome of [`run`]: how it ended and the final answer.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub run_id: String,
    pub ending: Ending,
    pub final_text: String,
    /// The committed final outcome (`wbo_…`); `None` when collection failed or the runner never started.
    pub outcome_id: Option<String>,
}

/// Launches the runner one-shot and streams canonical events to `emit` until exactly one terminal event.
/// Setting `cancel` stops the runner and ends the run with `run.cancelled`.
pub fn run(
    fs: &dyn FileSystem,
    options: &Options,
    catalog: &ModelCatalog,
    cancel: Arc<AtomicBool>,
    emit: &mut dyn FnMut(&Event),
) -> Result<RunResult> {
    if options.task.as_deref().is_none_or(|t| t.trim().is_empty()) {
        return Err(EngineError::message("This run mode requires a non-empty task"));
    }
    let started = Instant::now();
    let mut prepared = prepare_one(fs, options, catalog, Purpose::Run)?;
    let redactor = Redactor::new(prepared.env.values());
    let mut stream = Stream::new(prepared.run_id.clone(), prepared.adapter.name().to_owned(), redactor.clone());
    let mut send = |stream: &mut Stream, event: Translated| {
        if let Some(event) = stream.stamp(event) {
            emit(&event);
        }
    };
    send(
        &mut stream,
        Translated::new(
            "run.started",
            json!({"workbench": prepared.package.name, "version": prepared.package.version, "runtime": prepared.runtime.name()}),
        ),
    );
    std::fs::create_dir_all(&prepared.outbox).map_err(|e| EngineError::io("cannot create the outbox", e))?;
    // The baseline of every writable workspace, before the runner can touch it.
    let baselines = outcome::baseline(&options.workbench_home(), &prepared.workspaces);
    let mut launched = match prepared.runtime.launch(&prepared.translation) {
        Ok(launched) => launched,
        Err(error) => {
            let message = redactor.text(&error.to_string());
            send(
                &mut stream,
                Translated::new("run.failed", json!({"message": message, "duration_ms": elapsed(started)})),
            );
            prepared.cleanup()?;
            return Ok(RunResult {
                run_id: prepared.run_id.clone(),
                ending: Ending::Failed(message),
                final_text: String::new(),
                outcome_id: None,
            });
        }
    };
    send(&mut stream, Translated::new("run.ready", json!({})));
    let (lines_tx, lines_rx) = crossbeam_lines();
    if let Some(stdout) = launched.stdout.take() {
        let tx = lines_tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Line::Out(line)).is_err() {
                    break;
                }
            }
            let _ = tx.send(Line::OutClosed);
        });
    }
    let stderr_tail = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut stderr_reader = None;
    if let Some(stderr) = launched.stderr.take() {
        let tail = Arc::clone(&stderr_tail);
        stderr_reader = Some(std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(std::result::Result::ok) {
                if let Ok(mut tail) = tail.lock() {
                    tail.push(line);
                    if tail.len() > 20 {
                        tail.remove(0);
                    }
                }
            }
        }));
    }
    drop(lines_tx);
    let mut state = TranslateState::default();
    let mut cancelled = false;
    loop {
        if cancel.load(Ordering::SeqCst) {
            prepared.runtime.cancel(&mut launched);
            cancelled = true;
            break;
        }
        match lines_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Line::Out(line)) => {
                let trimmed = line.trim();
                if trimmed.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(trimmed) {
                    Ok(value) => {
                        for event in prepared.adapter.translate_event(&value, &mut state) {
                            send(&mut stream, event);
                        }
                    }
                    Err(_) => send(&mut stream, Translated::native("stdout")),
                }
            }
            Ok(Line::OutClosed) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    let status = if cancelled { None } else { launched.wait() };
    // The runner has exited: let the stderr reader take its last lines before a failure quotes them (bounded,
    // in case something the runner started still holds the pipe).
    if let Some(reader) = stderr_reader {
        let deadline = Instant::now() + Duration::from_secs(1);
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let duration = json!({"duration_ms": elapsed(started)});
    let (ending, terminal) = if cancelled {
        (Ending::Cancelled, Translated::new("run.cancelled", duration))
    } else {
        let success = status.is_some_and(|s| s.success());
        match (&state.failed, success) {
            (None, true) => (Ending::Completed, Translated::new("run.completed", duration)),
            (failure, _) => {
                let detail = failure.clone().unwrap_or_else(|| {
                    let tail = stderr_tail.lock().map(|t| t.last().cloned().unwrap_or_default()).unwrap_or_default();
                    let code = status.and_then(|s| s.code).map_or("a signal".to_owned(), |c| format!("status {c}"));
                    if tail.is_empty() {
                        format!("The runner exited with {code}")
                    } else {
                        format!("The runner exited with {code}: {tail}")
                    }
                });
                let message = redactor.text(&detail);
                let data = json!({"message": message, "duration_ms": elapsed(started)});
                (Ending::Failed(message), Translated::new("run.failed", data))
            }
        }
    };
    // Execution has stopped: collect and commit the final outcome, then announce it before the terminal event.
    // An orderly stop (the runner exited by itself, successfully or not) gives a complete collection; a
    // cancelled runner may have left work half-written, so its outcome is partial.
    let completeness = if cancelled { Completeness::Partial } else { Completeness::Complete };
    let collected =
        outcome::collect(baselines, &prepared.run_id, &prepared.outbox, completeness, prepared.runtime.name());
    let outcome_id = match collected {
        Ok((outcome, receipt)) => {
            send(&mut stream, Translated::new("outcome.available", outcome::available_data(&outcome, &receipt)));
            Some(outcome.id)
        }
        Err(message) => {
            send(&mut stream, Translated::new("outcome.failed", json!({"message": redactor.text(&message)})));
            None
        }
    };
    send(&mut stream, terminal);
    let run_id = prepared.run_id.clone();
    prepared.cleanup()?;
    Ok(RunResult { run_id, ending, final_text: redactor.text(&state.final_text), outcome_id })
}

fn elapsed(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

enum Line {
    Out(String),
    OutClosed,
}

fn crossbeam_lines() -> (std::sync::mpsc::Sender<Line>, std::sync::mpsc::Receiver<Line>) {
    std::sync::mpsc::channel()
}

/// What `build` prepared for one package (`wb build`): the image, or why it could not.
#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    pub workbench: String,
    pub version: String,
    pub runtime: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::runtime::ImageInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Prepares each package's runtime (pull or build its image) without preflight or a runner.
pub fn build(fs: &dyn FileSystem, options: &Options, catalog: &ModelCatalog) -> Result<Vec<BuildReport>> {
    let packages = source::resolve(fs, &options.source, &options.cwd, catalog, false)?;
    let mut reports = Vec::new();
    for package in packages {
        let report = match package {
            Ok(package) => {
                let prepared = select_runtime(&package, options.runtime.as_deref()).and_then(|name| {
                    let mut runtime = runtime::runtime_for(&name)?;
                    runtime.inherit_environment(&options.inherited);
                    if let Some(progress) = &options.progress {
                        runtime.set_progress(progress.0.clone());
                    }
                    runtime.prepare(&package)?;
                    let image = runtime.image();
                    runtime.cleanup()?;
                    Ok((name, image))
                });
                match prepared {
                    Ok((runtime, image)) => BuildReport {
                        workbench: package.name.clone(),
                        version: package.version.clone(),
                        runtime,
                        image,
                        error: None,
                    },
                    Err(error) => BuildReport {
                        workbench: package.name.clone(),
                        version: package.version.clone(),
                        runtime: options.runtime.clone().unwrap_or_default(),
                        image: None,
                        error: Some(error.to_string()),
                    },
                }
            }
            Err(error) => BuildReport {
                workbench: String::new(),
                version: String::new(),
                runtime: options.runtime.clone().unwrap_or_default(),
                image: None,
                error: Some(error.to_string()),
            },
        };
        reports.push(report);
    }
    Ok(reports)
}
