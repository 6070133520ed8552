//! The build context of a Docker image: a deterministic tar archive of the context directory (credential
//! files and VCS/dependency directories left out) and its content hash.
//!
//! The context and the Dockerfile must resolve inside the repository (`wb_manifest::boundary`, checked again
//! here), and the walk never follows a link: every entry is opened from the context's handle with
//! `O_NOFOLLOW`, and a link is stored as a link (its target text only; Docker resolves it inside the context),
//! so no byte from outside the repository enters the archive.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::adapters::package_files::{self, EntryKind, Tree};
use crate::error::{EngineError, Result};

/// Directory names never sent to the engine in a build context.
const EXCLUDED_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj", "node_modules", ".venv", "__pycache__"];

/// A build context: the tar archive, its content hash (with the Dockerfile's) and the Dockerfile's name in it.
pub struct ContextArchive {
    pub tar: Vec<u8>,
    pub hash: String,
    pub dockerfile: String,
    /// Paths in the archive, sorted.
    pub entries: Vec<String>,
}

/// The Dockerfile's name in the archive when it lies outside the context (or was excluded).
const OUTSIDE_DOCKERFILE: &str = ".wb-lsp.Dockerfile";

/// Builds the context archive of `context` (credential files and VCS/dependency directories left out) and its
/// content hash; both `context` and `dockerfile` must resolve inside `repository`. Modification times and
/// owners are not part of the archive, so the hash (and the image tag) only change when the content does.
pub fn context_archive(repository: &Path, context: &Path, dockerfile: &Path) -> Result<ContextArchive> {
    let dockerfile_text = package_files::read_bytes(repository, dockerfile)
        .map_err(|_| EngineError::message(format!("Dockerfile does not exist: {}", dockerfile.display())))?;
    let tree = Tree::open(repository, context).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => {
            EngineError::message(format!("Docker build context does not exist: {}", context.display()))
        }
        _ => EngineError::io(format!("cannot archive the Docker build context {}", context.display()), error),
    })?;
    let mut builder = tar::Builder::new(Vec::new());
    let mut hasher = Sha256::new();
    let mut entries = Vec::new();
    let mut stack = vec![PathBuf::new()];
    let io = |e: std::io::Error| EngineError::io("cannot archive the Docker build context", e);
    while let Some(relative) = stack.pop() {
        // Directories are pushed in reverse so the walk stays in sorted order.
        let mut subdirs = Vec::new();
        for (name, kind) in tree.list(&relative).map_err(io)? {
            let name = name.to_string_lossy().into_owned();
            let path = relative.join(&name);
            let key = path.to_string_lossy().replace('\\', "/");
            if kind == EntryKind::Directory {
                // The outcomes policy (VCS metadata, dependency trees, credential directories) plus build caches.
                if EXCLUDED_DIRS.contains(&name.as_str()) || wb_outcomes::is_excluded(&key) {
                    continue;
                }
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, format!("{key}/"), std::io::empty()).map_err(io)?;
                hasher.update(format!("D\0{key}\0").as_bytes());
                entries.push(format!("{key}/"));
                subdirs.push(path);
            } else if wb_outcomes::is_excluded(&key) {
                // Credential files and secret-bearing names never leave the host, as for outcomes.
                continue;
            } else if kind == EntryKind::Link {
                let target = tree.read_link(&path).map_err(io)?;
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, &key, &target).map_err(io)?;
                hasher.update(format!("L\0{key}\0{}\0", target.display()).as_bytes());
                entries.push(key);
            } else if let EntryKind::File(permissions) = kind {
                let mut data = Vec::new();
                tree.open_file(&path).and_then(|mut file| file.read_to_end(&mut data)).map_err(io)?;
                let mode = if permissions & 0o111 != 0 { 0o755 } else { 0o644 };
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(mode);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, &key, data.as_slice()).map_err(io)?;
                hasher.update(format!("F\0{key}\0{mode:o}\0{}\0", data.len()).as_bytes());
                hasher.update(&data);
                entries.push(key);
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    let inside = dockerfile
        .strip_prefix(context)
        .ok()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .filter(|p| entries.contains(p));
    let dockerfile_name = match inside {
        Some(name) => name,
        None => {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(dockerfile_text.len() as u64);
            builder.append_data(&mut header, OUTSIDE_DOCKERFILE, dockerfile_text.as_slice()).map_err(io)?;
            OUTSIDE_DOCKERFILE.to_owned()
        }
    };
    hasher.update(format!("DOCKERFILE\0{dockerfile_name}\0").as_bytes());
    hasher.update(&dockerfile_text);
    let tar = builder.into_inner().map_err(io)?;
    let hash: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(ContextArchive { tar, hash, dockerfile: dockerfile_name, entries })
}
