//! A trial's arms and the packages they run. `workbench` is the package as it is, `plain` the bare agent (the
//! same runner, model and runtime with none of the package's instructions, skills, MCPs or runner
//! configuration: [`crate::Settings::bare`]), `against` another version of the package. Each arm's package is
//! frozen into the job when the trial starts, without its `trials/`: every attempt (a resumed one too) runs the
//! same files, and no runtime can show the agent the tasks, their gates or their references.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::package_files::{Links, copy_tree_except};

pub const WORKBENCH: &str = "workbench";
pub const PLAIN: &str = "plain";
pub const AGAINST: &str = "against";

/// What an arm runs: its frozen package's manifest, and whether it is the bare agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmSource {
    /// The frozen package's manifest, inside the job directory.
    pub manifest: PathBuf,
    /// The package it was frozen from.
    pub from: PathBuf,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

/// Why the arms asked for cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum ArmError {
    #[error("unknown arm `{0}`: the arms are workbench, plain and against (with --against PATH)")]
    Unknown(String),
    #[error("the arm `against` needs --against PATH (another version of the package)")]
    AgainstWithoutPath,
    #[error("--against names another version of the package: add `against` to --arms, or leave --arms out")]
    PathWithoutAgainst,
    #[error("arm `{0}` is named twice")]
    Twice(String),
    #[error("no arm to run")]
    Empty,
    #[error("cannot freeze the package {} for the trial: {source}", path.display())]
    Freeze { path: PathBuf, source: std::io::Error },
}

/// The arms of `--arms` (default: `workbench,plain`, and `against` when `--against` is given), in order.
pub fn parse(arms: Option<&str>, against: bool) -> Result<Vec<String>, ArmError> {
    let text = match arms {
        Some(text) => text.to_owned(),
        None if against => format!("{WORKBENCH},{AGAINST}"),
        None => format!("{WORKBENCH},{PLAIN}"),
    };
    let mut parsed: Vec<String> = Vec::new();
    for arm in text.split(',').map(str::trim).filter(|arm| !arm.is_empty()) {
        if ![WORKBENCH, PLAIN, AGAINST].contains(&arm) {
            return Err(ArmError::Unknown(arm.to_owned()));
        }
        if parsed.iter().any(|known| known == arm) {
            return Err(ArmError::Twice(arm.to_owned()));
        }
        parsed.push(arm.to_owned());
    }
    match (parsed.iter().any(|arm| arm == AGAINST), against) {
        _ if parsed.is_empty() => Err(ArmError::Empty),
        (true, false) => Err(ArmError::AgainstWithoutPath),
        (false, true) => Err(ArmError::PathWithoutAgainst),
        _ => Ok(parsed),
    }
}

/// Copies the package at `package_dir` into `dest/.workbenches/<its directory's name>/` without its `trials/`
/// (links inside the package followed, links leaving it refused): the frozen package's manifest path.
pub fn freeze(manifest: &Path, dest: &Path) -> Result<PathBuf, ArmError> {
    let package_dir = manifest.parent().unwrap_or(Path::new("."));
    let freeze_error = |source| ArmError::Freeze { path: package_dir.to_owned(), source };
    let name = package_dir.file_name().map_or_else(|| "package".into(), |name| name.to_os_string());
    let target = dest.join(".workbenches").join(name);
    copy_tree_except(package_dir, package_dir, &target, Links::FollowInside, &[wb_manifest::trial_task::TRIALS_DIR])
        .map_err(freeze_error)?;
    let file = manifest.file_name().map_or_else(|| "workbench.yml".into(), |name| name.to_os_string());
    Ok(target.join(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arms_default_to_the_package_and_the_bare_agent_and_against_needs_its_path() {
        assert_eq!(parse(None, false).ok(), Some(vec![WORKBENCH.to_owned(), PLAIN.to_owned()]));
        assert_eq!(parse(None, true).ok(), Some(vec![WORKBENCH.to_owned(), AGAINST.to_owned()]));
        assert_eq!(parse(Some("plain, workbench"), false).ok(), Some(vec![PLAIN.to_owned(), WORKBENCH.to_owned()]));
        assert!(matches!(parse(Some("workbench,against"), false), Err(ArmError::AgainstWithoutPath)));
        assert!(matches!(parse(Some("workbench"), true), Err(ArmError::PathWithoutAgainst)));
        assert!(matches!(parse(Some("bare"), false), Err(ArmError::Unknown(_))));
        assert!(matches!(parse(Some("plain,plain"), false), Err(ArmError::Twice(_))));
        assert!(matches!(parse(Some(" , "), false), Err(ArmError::Empty)));
    }

    #[test]
    fn a_frozen_package_has_everything_but_its_trials() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let package = temp.path().join("repo/.workbenches/demo");
        std::fs::create_dir_all(package.join("trials/fix/references/expert"))?;
        std::fs::create_dir_all(package.join("skills/one"))?;
        std::fs::write(package.join("workbench.yml"), "spec: 1\n")?;
        std::fs::write(package.join("skills/one/SKILL.md"), "skill\n")?;
        std::fs::write(package.join("trials/fix/task.json"), "{}")?;
        let frozen = freeze(&package.join("workbench.yml"), &temp.path().join("job/packages/workbench"))
            .map_err(std::io::Error::other)?;
        assert_eq!(frozen, temp.path().join("job/packages/workbench/.workbenches/demo/workbench.yml"));
        let dir = frozen.parent().map(Path::to_path_buf).unwrap_or_default();
        assert_eq!(std::fs::read_to_string(&frozen)?, "spec: 1\n");
        assert_eq!(std::fs::read_to_string(dir.join("skills/one/SKILL.md"))?, "skill\n");
        assert!(!dir.join("trials").exists(), "the tasks went with the package");
        Ok(())
    }
}
