//! `dry_run`: resolve, preflight and translate without launching, reporting everything the runner would
//! receive (names, never values), and what preflight found missing (the translation is shown anyway).

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};
use wb_manifest::{FileSystem, ModelCatalog};

use super::prepare::prepare_one;
use super::stage::{Stage, make_writable, requested_dir};
use super::{Options, Purpose, WorkspaceReport, require_task};
use crate::error::Result;
use crate::requirements::RequirementReport;
use crate::routing::{Authentication, ModelRoute};

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
    /// What the runner reads on its stdin as it starts (its task, in its protocol), when it runs interactively.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    pub cwd: String,
    pub model_route: ModelRoute,
    pub authentication: Authentication,
    pub skills: Vec<String>,
    pub workspaces: Vec<WorkspaceReport>,
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
    /// What would stop a run here (preflight: the runner or a tool missing); empty when it could launch. The
    /// translation is complete either way.
    pub problems: Vec<String>,
    /// What a run on a remote runtime would ask the service for (nothing was created), one call per line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runtime_calls: Vec<String>,
}

/// Resolve, preflight and translate without launching. `stage_dir`: stage the runner's configuration in this new
/// directory (relative to the request's working directory) and keep it, so the printed command can be run by
/// hand and the runner's own loaders can check what it would receive.
pub fn dry_run(
    fs: &dyn FileSystem,
    options: &Options,
    stage_dir: Option<&Path>,
    catalog: &ModelCatalog,
) -> Result<DryRun> {
    require_task(options, None)?;
    let kept = requested_dir(stage_dir, &options.request.settings.cwd);
    let existed = kept.as_ref().is_some_and(|dir| std::fs::symlink_metadata(dir).is_ok());
    let mut prepared = match prepare_one(fs, options, catalog, Purpose::DryRun { stage_dir }) {
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
    let redactor = super::redactor(&prepared);
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
        stdin: translation.stdin.as_deref().map(|stdin| redactor.text(stdin)),
        cwd: translation.cwd.display().to_string(),
        model_route: prepared.route.clone(),
        authentication: prepared.authentication.clone(),
        skills: translation.skills.clone(),
        workspaces: WorkspaceReport::list(&prepared.workspaces),
        env: prepared.env_names(),
        removed_env: translation.remove_env.clone(),
        mcps: json!({"enabled": prepared.enabled_mcps, "disabled": prepared.disabled_mcps}),
        requirements: prepared.requirements.clone(),
        staged_files: translation.staged_files.clone(),
        native_key: translation.native_key.to_owned(),
        native: redactor.value(&translation.native),
        warnings: prepared.warnings.clone(),
        problems: prepared.preflight_problems.clone(),
        runtime_calls: prepared.plan.clone(),
        stage_dir: match &prepared.stage {
            Some(Stage::Kept(dir)) => Some(dir.display().to_string()),
            _ => None,
        },
    };
    prepared.cleanup()?;
    Ok(report)
}
