//! The files a template's `COPY` steps take from the build context: which entries a source covers (never a
//! credential, VCS or engine-state file, whether named directly or found in a copied directory), the SDK's
//! files hash of a step, and the archive uploaded for it.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{EngineError, Result};

/// The context entries a COPY source covers, as (relative POSIX path, host path), sorted as the SDK sorts
/// them. Refuses absolute or escaping sources, wildcards, and sources whose resolved path leaves the context.
pub fn copy_entries(context: &Path, src: &str) -> Result<Vec<(String, PathBuf)>> {
    if Path::new(src).is_absolute() {
        return Err(EngineError::staging(format!(
            "Invalid COPY source \"{src}\": absolute paths are not allowed. Use a relative path within the context directory."
        )));
    }
    if src.contains(['*', '?', '[']) {
        return Err(EngineError::staging(format!(
            "COPY source \"{src}\" uses a wildcard, which the E2B runtime does not support; name files or directories"
        )));
    }
    let mut parts: Vec<String> = Vec::new();
    for component in Path::new(src).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir if parts.pop().is_none() => {
                return Err(EngineError::staging(format!(
                    "Invalid COPY source \"{src}\": path escapes the context directory. The path must stay within the context directory."
                )));
            }
            _ => {}
        }
    }
    let relative = parts.join("/");
    // What never leaves the host (credential files, VCS metadata, the engine's state) is refused when a COPY
    // names it directly, as it is left out when a COPY finds it in a directory.
    if !relative.is_empty() && never_copied(&relative) {
        return Err(EngineError::staging(format!(
            "COPY source \"{src}\" names a credential, version-control or engine-state file, which never leaves \
             the host for an E2B template: remove it from the Dockerfile and pass secrets with env at run time"
        )));
    }
    let root = context.canonicalize().map_err(|error| {
        EngineError::io_at(context, format!("Cannot read the build context {}", context.display()), error)
    })?;
    let path = if relative.is_empty() { context.to_path_buf() } else { context.join(&relative) };
    let resolved =
        path.canonicalize().map_err(|_| EngineError::message(format!("No files found in {}", path.display())))?;
    if !resolved.starts_with(&root) {
        return Err(EngineError::staging(format!(
            "COPY source \"{src}\" resolves outside the build context {}",
            context.display()
        )));
    }
    let mut entries = Vec::new();
    let metadata = std::fs::symlink_metadata(&path)
        .map_err(|error| EngineError::io_at(&path, format!("Cannot read {}", path.display()), error))?;
    if !relative.is_empty() {
        entries.push((relative.clone(), path.clone()));
    }
    if metadata.is_dir() {
        walk(&path, &relative, &mut entries)?;
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn walk(dir: &Path, relative: &str, out: &mut Vec<(String, PathBuf)>) -> Result<()> {
    let read = std::fs::read_dir(dir)
        .map_err(|error| EngineError::io_at(dir, format!("Cannot read {}", dir.display()), error))?;
    for entry in read {
        let entry = entry.map_err(|error| EngineError::io_at(dir, format!("Cannot read {}", dir.display()), error))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if relative.is_empty() { name } else { format!("{relative}/{name}") };
        // What never leaves the host for a sandbox never leaves it for an image either: VCS metadata, dependency
        // trees, credential files, the engine's state.
        if never_copied(&rel) {
            continue;
        }
        let path = entry.path();
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        out.push((rel.clone(), path.clone()));
        if is_dir {
            walk(&path, &rel, out)?;
        }
    }
    Ok(())
}

/// Whether a context path (relative, `/`-separated) must never be copied into an image.
fn never_copied(relative: &str) -> bool {
    wb_outcomes::is_excluded(relative) || crate::runtime::remote::staging::staging_excludes(relative)
}

/// The SDK's `calculateFilesHash` for `COPY src dest` (links not followed).
pub fn files_hash(context: &Path, src: &str, dest: &str) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let entries = copy_entries(context, src)?;
    let mut hash = Sha256::new();
    hash.update(format!("COPY {src} {dest}").as_bytes());
    for (relative, path) in &entries {
        let unreadable =
            |error: std::io::Error| EngineError::io_at(path, format!("Cannot read {}", path.display()), error);
        hash.update(relative.as_bytes());
        let metadata = std::fs::symlink_metadata(path).map_err(unreadable)?;
        hash.update(metadata.mode().to_string().as_bytes());
        hash.update(metadata.size().to_string().as_bytes());
        if metadata.file_type().is_symlink() {
            let target = std::fs::read_link(path).map_err(unreadable)?;
            hash.update(target.to_string_lossy().as_bytes());
        } else if metadata.is_file() {
            hash.update(std::fs::read(path).map_err(unreadable)?);
        }
    }
    Ok(hex(&hash.finalize()))
}

/// The gzip tar of a COPY source's entries (paths relative to the context, links kept as links).
pub fn pack(context: &Path, src: &str) -> Result<Vec<u8>> {
    let entries = copy_entries(context, src)?;
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    builder.follow_symlinks(false);
    for (relative, path) in &entries {
        builder
            .append_path_with_name(path, relative)
            .map_err(|error| EngineError::io_at(path, format!("Cannot pack {}", path.display()), error))?;
    }
    let encoder = builder.into_inner().map_err(|error| EngineError::io(format!("Cannot pack {src}"), error))?;
    encoder.finish().map_err(|error| EngineError::io(format!("Cannot pack {src}"), error))
}

/// Lower-case hex of a digest (the files hash here, the template name's digest in `template.rs`).
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `COPY .env /app/.env` and its kind upload nothing: a credential named directly is refused like one found
    /// in a copied directory is left out.
    #[test]
    fn a_copy_that_names_a_credential_is_refused() -> Result<()> {
        let context = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        for (path, text) in [
            (".env", "KEY=secret"),
            ("id_rsa", "key"),
            ("certs/server.pem", "pem"),
            (".git/config", "[core]"),
            ("config/.npmrc", "//r/:_authToken=t"),
            ("app/main.js", "ok"),
            ("app/.env", "KEY=secret"),
        ] {
            let full = context.path().join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(|e| EngineError::io("mkdir", e))?;
            }
            std::fs::write(full, text).map_err(|e| EngineError::io("write", e))?;
        }
        for source in [".env", "./id_rsa", "certs/server.pem", ".git/config", "config/.npmrc", ".git"] {
            let error = copy_entries(context.path(), source).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains("never leaves the host"), "{source}: {error}");
            assert!(pack(context.path(), source).is_err(), "{source} is never packed");
        }
        let entries: Vec<String> = copy_entries(context.path(), "app")?.into_iter().map(|(p, _)| p).collect();
        assert_eq!(entries, ["app", "app/main.js"]);
        Ok(())
    }
}
