//! The root an MCP caller is confined to. The caller is the agent, not the person: every path argument
//! (`path`, `source`, `dir`, `workspaces`, `env_files`) must name something beneath the root once every link is
//! resolved, or the call is refused; an outcome is shown only when every workspace its run wrote lies beneath it.
//!
//! A path that passes is handed to the engine as its real path (relative to the root when it was given
//! relative), so a link the agent points elsewhere after the check is not followed by the name it checked.

use std::path::{Path, PathBuf};

use serde_json::json;
use wb_manifest::selector::split_source;

use super::call::ToolResult;

/// Why a path argument was refused: the field, what the agent gave, and the reason. Never the real path of
/// something outside the root (the agent learns nothing about what lies there).
#[derive(Debug)]
pub struct Refusal {
    field: &'static str,
    given: String,
    reason: String,
    /// Beneath the root but not there: said in the tools' usual words (`… does not exist`), not as a refusal.
    missing: Option<PathBuf>,
}

impl Refusal {
    pub fn into_result(self, root: &Path) -> ToolResult {
        if let Some(missing) = self.missing {
            let message = format!("{} does not exist", missing.display());
            return ToolResult::failure(&message, json!({"root": root.display().to_string(), "field": self.field}));
        }
        let message = format!("Refused `{}` {}: {}", self.field, self.given, self.reason);
        ToolResult::failure(
            &message,
            json!({"root": root.display().to_string(),
                   "refused": [{"field": self.field, "path": self.given, "reason": self.reason}]}),
        )
    }
}

/// `text` (relative to `root`, or absolute) as the real path of what it names, when that lies beneath `root`
/// (absolute, resolved). What is given relative stays relative to the root, in its resolved spelling.
pub fn path(root: &Path, field: &'static str, text: &str) -> Result<String, Refusal> {
    let refuse = |reason: &str| Refusal { field, given: text.to_owned(), reason: reason.to_owned(), missing: None };
    let spelled = if text.is_empty() { Path::new(".") } else { Path::new(text) };
    // `..` and absolute paths are judged on their spelling first, so nothing outside is even looked at.
    let lexical = wb_manifest::absolute(spelled, root);
    if !lexical.starts_with(root) {
        return Err(refuse("it is outside the server's root"));
    }
    let real = match lexical.canonicalize() {
        Ok(real) => real,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Refusal { missing: Some(lexical), ..refuse("it does not exist") });
        }
        Err(error) => return Err(refuse(&format!("it cannot be resolved: {error}"))),
    };
    if !real.starts_with(root) {
        return Err(refuse("it leads out of the server's root through a symbolic link"));
    }
    if spelled.is_absolute() {
        return Ok(real.display().to_string());
    }
    Ok(match real.strip_prefix(root) {
        Ok(rest) if rest.as_os_str().is_empty() => ".".to_owned(),
        Ok(rest) => rest.display().to_string(),
        Err(_) => real.display().to_string(),
    })
}

/// A `SOURCE` (`PATH` or `PATH#selector`) with its path confined; the selector is kept as given.
pub fn source(root: &Path, field: &'static str, text: &str) -> Result<String, Refusal> {
    let (path_text, selector) = split_source(text);
    let confined = path(root, field, path_text)?;
    Ok(match selector {
        Some(selector) => format!("{confined}#{selector}"),
        None => confined,
    })
}

/// Why an outcome is not shown to a caller confined to a root.
#[derive(Debug, thiserror::Error)]
pub enum NotThisRoots {
    #[error("it records no workspace, so it cannot be shown as this root's: use `wb-lsp outcome`")]
    NoWorkspace,
    #[error("its run worked outside the server's root")]
    Outside,
}

/// Whether the outcome with these workspace bindings may be shown to a caller confined to `root`: every
/// workspace its run wrote lies beneath the root (an outcome that records none is not shown: nothing says
/// whose it is).
pub fn outcome_visible(root: &Path, bindings: &wb_outcomes::WorkspaceBindings) -> Result<(), NotThisRoots> {
    let paths: Vec<&PathBuf> = bindings.primary.iter().chain(bindings.named.values()).collect();
    if paths.is_empty() {
        return Err(NotThisRoots::NoWorkspace);
    }
    for path in paths {
        // A workspace that is gone since is judged by the path recorded.
        let real = path.canonicalize().unwrap_or_else(|_| wb_manifest::absolute(path, root));
        if !real.starts_with(root) {
            return Err(NotThisRoots::Outside);
        }
    }
    Ok(())
}

/// The failure of an outcome that is not this root's: the same words whether it exists or not elsewhere.
pub fn outcome_refused(id: &str, reason: &str) -> ToolResult {
    ToolResult::failure(&format!("Outcome {id} is not shown: {reason}"), json!({"id": id}))
}

/// A value's confined form, for the arguments that are lists and maps.
pub fn each<'a>(
    root: &Path,
    field: &'static str,
    values: impl IntoIterator<Item = &'a mut String>,
) -> Result<(), Refusal> {
    for value in values {
        *value = path(root, field, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_beneath_the_root_or_are_refused() {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::os::unix::fs::symlink(base.join("outside"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("in")).unwrap();
        assert_eq!(path(&root, "path", "a/b").unwrap(), "a/b");
        assert_eq!(path(&root, "path", "").unwrap(), ".");
        assert_eq!(path(&root, "path", "./a/../a").unwrap(), "a");
        assert_eq!(path(&root, "path", "in").unwrap(), "a/b");
        assert_eq!(
            path(&root, "path", root.join("a").to_str().unwrap()).unwrap(),
            root.join("a").display().to_string()
        );
        for given in ["out", "out/x", "..", "../outside", "/etc/passwd", "a/../../outside"] {
            let refusal = path(&root, "path", given).unwrap_err();
            assert!(!refusal.reason.contains("outside/"), "{refusal:?}");
        }
        assert!(path(&root, "path", "missing").unwrap_err().reason.contains("does not exist"));
        assert_eq!(source(&root, "source", "./in#notes").unwrap(), "a/b#notes");
        assert!(source(&root, "source", "out#notes").is_err());
    }

    #[test]
    fn an_outcome_is_shown_only_when_its_workspaces_are_beneath_the_root() {
        let root = Path::new("/nonexistent-root-for-test");
        let mut bindings = wb_outcomes::WorkspaceBindings::default();
        assert!(outcome_visible(root, &bindings).is_err());
        bindings.primary = Some(root.join("work"));
        assert!(outcome_visible(root, &bindings).is_ok());
        bindings.named.insert("docs".into(), PathBuf::from("/elsewhere/docs"));
        assert!(outcome_visible(root, &bindings).is_err());
    }
}
