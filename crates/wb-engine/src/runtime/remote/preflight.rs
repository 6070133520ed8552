//! Preflight inside the sandbox: one command looks up git, tar (with `--null`), the runner and every tool
//! with `command -v`, and checks that the package's assets are readable; what is missing is named with the
//! reference's texts, naming the image.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::provider::User;
use super::shell::quote;
use super::{Preflight, RemoteRuntime};
use crate::error::{EngineError, Result};

impl RemoteRuntime {
    pub(super) fn preflight_in_sandbox(&self, runner: &str, executable: &str, tools: &[String]) -> Result<Preflight> {
        if self.sandbox.is_none() && self.setup.plan_only {
            return Ok(Preflight::default());
        }
        let mut names = vec!["git".to_owned(), "tar".to_owned(), executable.to_owned()];
        names.extend(tools.iter().cloned());
        let quoted: Vec<String> = names.iter().map(|n| quote(n)).collect();
        let assets: Vec<String> = self.assets.iter().map(|a| quote(a)).collect();
        let script = format!(
            "for n in {}; do p=$(command -v \"$n\" 2>/dev/null) && printf 'found\\t%s\\t%s\\n' \"$n\" \"$p\"; done; \
             if tar --help 2>&1 | grep -q -- --null; then echo tar-null; fi; \
             for f in {}; do test -r \"$f\" || printf 'unreadable\\t%s\\n' \"$f\"; done; true",
            quoted.join(" "),
            if assets.is_empty() { "''".to_owned() } else { assets.join(" ") }
        );
        let output = self.run_checked("Runtime preflight failed", &script, User::Default)?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
        let mut tar_null = false;
        let mut unreadable = Vec::new();
        for line in text.lines() {
            let parts: Vec<&str> = line.split('\t').collect();
            match parts.as_slice() {
                ["found", name, path] => {
                    found.entry((*name).to_owned()).or_insert_with(|| PathBuf::from(path));
                }
                ["unreadable", path] if !path.is_empty() => unreadable.push((*path).to_owned()),
                ["tar-null"] => tar_null = true,
                _ => {}
            }
        }
        let image = self.image_name();
        let title = self.title();
        if !found.contains_key("git") {
            return Err(EngineError::missing(format!(
                "Git is unavailable in {title} image {image}; {title} workspace outcome collection requires git"
            )));
        }
        if !found.contains_key("tar") || !tar_null {
            return Err(EngineError::missing(format!(
                "GNU tar is unavailable in {title} image {image}; {title} workspace outcome collection requires tar --null support"
            )));
        }
        let runner_path = found.get(executable).cloned().ok_or_else(|| {
            EngineError::missing(format!("Runner CLI is unavailable in {title} image {image}: {runner}"))
        })?;
        let mut located = Vec::new();
        for tool in tools {
            let path = found.get(tool).cloned().ok_or_else(|| {
                EngineError::missing(format!("Required CLI tool is unavailable in {title} image {image}: {tool}"))
            })?;
            located.push((tool.clone(), path));
        }
        if let Some(path) = unreadable.first() {
            return Err(EngineError::missing(format!("Required runtime asset is unreadable: {path}")));
        }
        if let Ok(mut found) = self.runner_path.lock() {
            *found = Some((executable.to_owned(), runner_path.display().to_string()));
        }
        Ok(Preflight { runner: Some(runner_path), tools: located, runner_version: None })
    }
}
