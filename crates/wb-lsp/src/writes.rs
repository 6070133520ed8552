//! The one way wb-lsp rewrites a manifest (`fix` of the MCP server, `check --fix`, `fmt`, `migrate --write`):
//! through [`wb_outcomes::Root`], the root opened once and each manifest reached, read and replaced through
//! directory handles that never follow a link. A manifest whose real path is outside the root is refused and
//! named; one reached through links inside the root is written at its real path, the links left as they are.
//!
//! The root of the command-line writers ([`cli_root`]) is the manifest's repository (the directory holding
//! `.workbenches`, the boundary `check` judges manifests by), or the manifest's own directory when it has
//! none. The MCP server's root is its `--root`.
//!
//! Test hook, only in a build with the `test-hooks` feature (the tests'; `tests/hostile_writes.rs`): with
//! `WB_LSP_BEFORE_WRITE=COMMAND` in the environment, each write runs `sh -c COMMAND` once its temporary file is
//! complete, just before the rename (a test swaps a directory for a link there). A normal build never reads it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use wb_outcomes::{Confined, Refusal, Root};

/// The roots opened so far, each once.
#[derive(Default)]
pub(crate) struct Roots {
    opened: HashMap<PathBuf, Rc<Root>>,
}

/// A manifest found beneath its root and read through the handle that will write it.
pub(crate) struct Manifest {
    file: Confined,
    root: Rc<Root>,
    /// Its content when it was found.
    pub text: String,
}

/// Why a manifest is not written.
pub(crate) enum Unreached {
    /// It is not reached beneath the root: its real path is outside, a link appeared on its way, or it is not
    /// a regular file.
    Refused(String),
    /// It is beneath the root but cannot be read as a manifest: unreadable, not UTF-8, or over the size limit.
    Unreadable(String),
}

/// The root a command-line writer confines `manifest` to: its repository, else its own directory.
pub(crate) fn cli_root(manifest: &Path) -> PathBuf {
    wb_manifest::repository_root(manifest)
        .or_else(|| manifest.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("/"))
}

impl Roots {
    /// Finds `manifest` beneath `root` (opened on first use) and reads it, or says why not: a real path
    /// outside the root (`boundary` names it in the message: "repository", "root"), a file that is not
    /// regular, not UTF-8, or over the manifest size limit.
    pub(crate) fn manifest(&mut self, manifest: &Path, root: &Path, boundary: &str) -> Result<Manifest, Unreached> {
        let root = match self.opened.get(root) {
            Some(opened) => Rc::clone(opened),
            None => {
                let opened = Rc::new(Root::open(root).map_err(|error| {
                    Unreached::Refused(format!("its {boundary} {} cannot be opened: {error}", root.display()))
                })?);
                self.opened.insert(root.to_path_buf(), Rc::clone(&opened));
                opened
            }
        };
        let mut file = root.file(manifest).map_err(|refusal| match refusal {
            Refusal::Outside { real } => Unreached::Refused(format!(
                "its real path {} is outside the {boundary} {} (a symbolic link leads out of it)",
                real.display(),
                root.path().display()
            )),
            Refusal::Io(error) => Unreached::Unreadable(format!("it cannot be read: {error}")),
            other => Unreached::Refused(other.to_string()),
        })?;
        let limit = wb_manifest::MAX_MANIFEST_BYTES as u64;
        let bytes = file.read(limit).map_err(|error| Unreached::Unreadable(format!("it cannot be read: {error}")))?;
        let text = String::from_utf8(bytes).map_err(|_| Unreached::Unreadable("it is not UTF-8 text".to_owned()))?;
        Ok(Manifest { file, root, text })
    }
}

impl Manifest {
    /// Where it really is (its real path).
    pub(crate) fn real_path(&self) -> PathBuf {
        self.root.path().join(self.file.relative())
    }

    /// Replaces its content with `text` (its permission bits kept), through the directory it was found in.
    pub(crate) fn write(&self, text: &str) -> std::io::Result<()> {
        self.file.replace(text.as_bytes(), before_write)
    }
}

/// Nothing: a write as it ships. A build with the `test-hooks` feature runs the test hook here.
fn before_write() {
    #[cfg(feature = "test-hooks")]
    hook::before_write();
}

#[cfg(feature = "test-hooks")]
mod hook {
    /// The environment variable of the test hook.
    const BEFORE_WRITE: &str = "WB_LSP_BEFORE_WRITE";

    pub(super) fn before_write() {
        if let Some(command) = std::env::var_os(BEFORE_WRITE) {
            let _ = std::process::Command::new("sh").arg("-c").arg(command).status();
        }
    }
}
