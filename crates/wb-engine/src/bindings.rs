//! Binding a run to the machine: named workspaces (`--workspace NAME=PATH`) and the environment (`--env`,
//! `--env-file` (read by [`crate::dotenv`]), inherited), with the reference's rules and texts (engine facts b.6).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wb_manifest::{Access, Manifest, ModelCatalog};

use crate::error::{EngineError, Limit, Result};

/// The largest `--env-file` read.
pub const ENV_FILE_LIMIT: u64 = 1024 * 1024;

/// A workspace of the run: the primary one (the runner's working directory) or a named one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundWorkspace {
    /// `None` for the primary workspace.
    pub name: Option<String>,
    pub path: PathBuf,
    pub access: Access,
}

impl BoundWorkspace {
    /// `WORKBENCH_WORKSPACE_<NAME>` (upper case, `-` → `_`).
    pub fn variable(&self) -> Option<String> {
        self.name.as_ref().map(|name| format!("WORKBENCH_WORKSPACE_{}", name.to_ascii_uppercase().replace('-', "_")))
    }
}

fn is_lower_slug(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn writable(path: &Path) -> bool {
    // No write bit at all is refused even for root, who could write anyway. Beyond the bits, `access(2)` asks
    // the kernel, which knows read-only mounts, owners and ACLs, without writing anything: a probe file could
    // meet a file or a symlink of its name in a workspace someone else prepared.
    std::fs::metadata(path).is_ok_and(|meta| meta.is_dir() && !meta.permissions().readonly())
        && nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
}

fn readable(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok()
}

/// Binds the primary workspace and every `--workspace NAME=PATH` against the manifest's declarations.
pub fn bind_workspaces(
    manifest: &Manifest,
    workbench: &str,
    primary: &Path,
    assignments: &[String],
    cwd: &Path,
) -> Result<Vec<BoundWorkspace>> {
    let mut given: Vec<(String, PathBuf)> = Vec::new();
    for assignment in assignments {
        let Some((name, path)) = assignment.split_once('=') else {
            return Err(EngineError::message("--workspace requires NAME=PATH"));
        };
        if !is_lower_slug(name) {
            return Err(EngineError::message("--workspace requires a lowercase NAME=PATH assignment"));
        }
        if path.trim().is_empty() {
            return Err(EngineError::message(format!("Workspace path must not be empty: {name}")));
        }
        if given.iter().any(|(seen, _)| seen == name) {
            return Err(EngineError::message(format!("Duplicate workspace binding: {name}")));
        }
        if !manifest.workspaces.iter().any(|w| w.name.value == name) {
            return Err(EngineError::message(format!("Workspace binding is not declared by {workbench}: {name}")));
        }
        given.push((name.to_owned(), wb_manifest::absolute(Path::new(path), cwd)));
    }
    let mut bound = vec![BoundWorkspace { name: None, path: primary.to_path_buf(), access: Access::ReadWrite }];
    for declared in &manifest.workspaces {
        match given.iter().find(|(name, _)| *name == declared.name.value) {
            Some((name, path)) => {
                bound.push(BoundWorkspace { name: Some(name.clone()), path: path.clone(), access: declared.access })
            }
            None if declared.required => {
                return Err(EngineError::message(format!(
                    "Missing required workspace binding: {}",
                    declared.name.value
                )));
            }
            None => {}
        }
    }
    for workspace in &bound {
        let label = workspace.name.clone().unwrap_or_else(|| "primary".to_owned());
        if !workspace.path.is_dir() {
            return Err(EngineError::message(format!("Workspace directory is unavailable: {label}")));
        }
    }
    let canonical: Vec<(String, PathBuf)> = bound
        .iter()
        .map(|w| {
            (
                w.name.clone().unwrap_or_else(|| "primary".to_owned()),
                w.path.canonicalize().unwrap_or_else(|_| w.path.clone()),
            )
        })
        .collect();
    for (index, (name, path)) in canonical.iter().enumerate() {
        if let Some((other, _)) = canonical[..index].iter().find(|(_, p)| p == path) {
            return Err(EngineError::message(format!(
                "Workspace bindings must resolve to distinct directories: {other}, {name}"
            )));
        }
    }
    for workspace in &bound {
        let label = workspace.name.clone().unwrap_or_else(|| "primary".to_owned());
        match workspace.access {
            Access::ReadWrite if !writable(&workspace.path) => {
                return Err(EngineError::message(format!("Workspace directory is not writable: {label}")));
            }
            Access::ReadOnly if !readable(&workspace.path) => {
                return Err(EngineError::message(format!("Workspace directory is not readable: {label}")));
            }
            _ => {}
        }
    }
    Ok(bound)
}

/// The environment a run sees: names bound to values. Values never leave this struct except into the
/// runner's process environment.
#[derive(Clone, Default)]
pub struct Environment {
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: values are secrets.
        f.debug_list().entries(self.values.keys()).finish()
    }
}

impl Environment {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    pub fn is_set(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.values.values().map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// Every provider credential variable the catalog knows.
pub fn provider_variables(catalog: &ModelCatalog) -> Vec<String> {
    let mut names: Vec<String> = catalog.providers.values().flat_map(|p| p.env.iter().cloned()).collect();
    // Sorted, so `dedup` meets every repeat.
    names.sort();
    names.dedup();
    names
}

/// Whether a variable's name says it holds a credential (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`,
/// `DATABASE_PASSWORD`, `OPENAI_API_KEY`, ...). A runner on the host gets such variables only when the package
/// declares them (or the selected route needs them), and their values are redacted from what the run emits.
/// This process's environment, as a run inherits it. `std::env::vars()` panics on a variable that is not
/// Unicode; such variables cannot be bound anyway, so they are left out.
pub fn process_environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

pub fn is_credential_name(name: &str) -> bool {
    const SUFFIXES: [&str; 10] = [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "SECRET_KEY",
        "PRIVATE_KEY",
        "CREDENTIALS",
    ];
    const NAMES: [&str; 2] = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"];
    let name = name.to_ascii_uppercase();
    NAMES.contains(&name.as_str())
        || SUFFIXES
            .iter()
            .any(|suffix| name.strip_suffix(suffix).is_some_and(|rest| rest.is_empty() || rest.ends_with('_')))
}

/// Binds the environment: `--env` over `--env-file` over the inherited environment. Only declared names and
/// provider credential variables are bound; other dotenv entries are ignored.
pub fn bind_environment(
    manifest: &Manifest,
    workbench: &str,
    catalog: &ModelCatalog,
    overrides: &[String],
    env_files: &[PathBuf],
    inherited: &BTreeMap<String, String>,
) -> Result<Environment> {
    let providers = provider_variables(catalog);
    let wanted = |name: &str| manifest.env_var(name).is_some() || providers.iter().any(|p| p == name);
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in inherited {
        if wanted(name) {
            values.insert(name.clone(), value.clone());
        }
    }
    for file in env_files {
        let shown = file.display();
        let meta = std::fs::metadata(file)
            .map_err(|_| EngineError::message(format!("Environment file is unavailable: {shown}")))?;
        if !meta.is_file() {
            return Err(EngineError::message(format!("Environment file is unavailable: {shown}")));
        }
        if meta.len() > ENV_FILE_LIMIT {
            return Err(EngineError::limit(Limit::FileSize, format!("Environment file exceeds 1 MiB: {shown}")));
        }
        let bytes = std::fs::read(file)
            .map_err(|_| EngineError::message(format!("Environment file is unreadable: {shown}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| EngineError::message(format!("Environment file is malformed: {shown}")))?;
        // The reference's text names the file only; `dotenv::Malformed` knows the line.
        let entries = crate::dotenv::parse(&text)
            .map_err(|_| EngineError::message(format!("Environment file is malformed: {shown}")))?;
        for (name, value) in entries {
            if wanted(&name) {
                values.insert(name, value);
            }
        }
    }
    for assignment in overrides {
        let Some((name, value)) = assignment.split_once('=') else {
            return Err(EngineError::message("--env requires NAME=value"));
        };
        if !crate::dotenv::is_name(name) {
            return Err(EngineError::message("--env requires an uppercase NAME=value assignment"));
        }
        if !wanted(name) {
            return Err(EngineError::message(format!("Environment override is not supported by {workbench}: {name}")));
        }
        values.insert(name.to_owned(), value.to_owned());
    }
    Ok(Environment { values })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names() {
        for name in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "NPM_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "AZURE_CLIENT_SECRET",
            "DATABASE_PASSWORD",
            "OPENAI_API_KEY",
            "STRIPE_SECRET_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "TOKEN",
            "my_token",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "TOKENIZERS_PARALLELISM", "PASSWORD_STORE_DIR", "SSH_AUTH_SOCK", "MYTOKEN"] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn the_write_probe_writes_nothing() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        assert!(writable(dir.path()));
        assert!(!writable(&dir.path().join("missing")));
        assert_eq!(std::fs::read_dir(dir.path()).map(Iterator::count).unwrap_or(1), 0);
    }

    #[test]
    fn environment_debug_shows_names_only() {
        let env = Environment { values: [("TOKEN".to_owned(), "s3cret".to_owned())].into_iter().collect() };
        let shown = format!("{env:?}");
        assert!(shown.contains("TOKEN") && !shown.contains("s3cret"));
    }
}
