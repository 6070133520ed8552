//! Package checks on the file system (engine facts b.2 and b.5): where the package lives, and the files its
//! manifest names: image build paths, instructions, skills and `runner_config`.

mod dockerfile;
mod prose;
mod runner_config;
mod skills;
mod trials;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wb_syntax::TextRange;

pub(crate) use prose::ProseFiles;
pub use runner_config::claude_config_problem;
pub(crate) use skills::SkillFiles;

use crate::boundary::{MAX_PACKAGE_FILE_BYTES, real_boundary, resolve_within_real};
use crate::diagnostic::{Code, Diagnostic, Fix, TextEdit};
use crate::fs::{FileKind, FileSystem, ReadLimitError, is_inside};
use crate::manifest::{Image, Manifest, Spanned};

/// The repository root of a manifest: the parent of the nearest ancestor directory named `.workbenches`.
pub fn repository_root(manifest_path: &Path) -> Option<PathBuf> {
    manifest_path
        .ancestors()
        .skip(1)
        .find(|dir| dir.file_name().is_some_and(|name| name == ".workbenches"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

pub(crate) struct PackageChecks<'a> {
    pub fs: &'a dyn FileSystem,
    pub manifest_path: &'a Path,
    /// The manifest's parse, for the fixes that edit it from a diagnostic in another file.
    pub manifest_parse: &'a wb_syntax::Parse,
    pub package_dir: &'a Path,
    pub root: Option<&'a Path>,
    pub diagnostics: Vec<Diagnostic>,
    /// Texts of other files that diagnostics point into (skill manifests, runner_config JSON, Dockerfiles); a
    /// text several paths lead to is one allocation.
    pub sources: Vec<(PathBuf, Arc<str>)>,
    /// The real paths of the repository and the package, resolved once for all the paths checked in them.
    pub real_boundaries: [std::cell::OnceCell<PathBuf>; 2],
    /// The skill files and directories met so far.
    pub skill_files: SkillFiles,
    /// The names of the entries of each kind in a directory, listed once for every "did you mean" in it.
    pub siblings: HashMap<(PathBuf, FileKind), crate::rules::suggestions::Candidates>,
    /// The real paths of the Dockerfiles looked into.
    pub dockerfiles: std::collections::HashSet<PathBuf>,
    /// The Markdown files read for the prose checks.
    pub prose_files: ProseFiles,
    /// The diagnostics left out of the report before they were made (see [`crate::diagnostic::cap_diagnostics`]).
    pub omitted: crate::diagnostic::Omitted,
}

impl PackageChecks<'_> {
    fn report(&mut self, code: Code, range: TextRange, message: String) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic::new(code, self.manifest_path, range, message));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    /// Resolves a package-relative path value, checking it is relative and stays inside `boundary`.
    fn resolve(&mut self, value: &Spanned<String>, label: &str, boundary: Option<&Path>) -> Option<PathBuf> {
        let raw = Path::new(&value.value);
        if raw.is_absolute() || value.value.starts_with('/') || value.value.starts_with('\\') || has_drive(&value.value)
        {
            self.report(Code::PathNotRelative, value.range, format!("{label} must be a relative path"));
            return None;
        }
        let resolved = crate::fs::join_normalized(self.package_dir, &value.value);
        if let Some(boundary) = boundary
            && !is_inside(&resolved, boundary)
        {
            self.report(Code::PathOutsideRepository, value.range, format!("{label} must remain inside the repository"));
            return None;
        }
        Some(resolved)
    }

    /// Requires the real path of `path` (the lexical resolution of `value`) inside the repository or, with
    /// `package_only`, the package; reports `path-outside-boundary` at the value otherwise.
    fn within(&mut self, value: &Spanned<String>, label: &str, path: &Path, package_only: bool) -> bool {
        let (boundary, name) = self.boundary(package_only);
        let real =
            self.real_boundaries[usize::from(name == "package")].get_or_init(|| real_boundary(self.fs, boundary));
        match resolve_within_real(self.fs, path, real) {
            Ok(_) => true,
            Err(escape) => {
                let message = escape.message(label, &value.value, name);
                self.report(Code::PathOutsideBoundary, value.range, message);
                false
            }
        }
    }

    /// The directory a path must stay in, and its name in messages.
    fn boundary(&self, package_only: bool) -> (&Path, &'static str) {
        match (package_only, self.root) {
            (false, Some(root)) => (root, "repository"),
            _ => (self.package_dir, "package"),
        }
    }

    /// "Change to `nearest`" when an entry of `kind` with a name near the missing `path` exists beside it.
    fn nearest_fix(&mut self, value: &Spanned<String>, path: &Path, kind: FileKind) -> Option<Fix> {
        let dir = path.parent()?;
        let fs = self.fs;
        let names = self
            .siblings
            .entry((dir.to_owned(), kind))
            .or_insert_with(|| crate::nearest_path::entry_names(fs, dir, kind));
        let near = crate::nearest_path::nearest_sibling(names, path, &value.value)?;
        Some(Fix {
            title: format!("Change to `{near}`"),
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.manifest_path.to_owned(), range: value.range, new_text: near }],
            // A guess at which file was meant: offered, never applied by `check --fix`.
            safe: false,
        })
    }

    /// Reads a file the package names, at most [`MAX_PACKAGE_FILE_BYTES`]; a larger one is reported at the
    /// value (`what` names it in the message).
    fn read_bounded(&mut self, path: &Path, range: TextRange, what: &str) -> Result<Vec<u8>, Option<std::io::Error>> {
        match self.fs.read_limited(path, MAX_PACKAGE_FILE_BYTES) {
            Ok(bytes) => Ok(bytes),
            Err(ReadLimitError::TooLarge(size)) => {
                self.too_large(path, size, range, what);
                Err(None)
            }
            Err(ReadLimitError::Io(error)) => Err(Some(error)),
        }
    }

    fn too_large(&mut self, path: &Path, size: u64, range: TextRange, what: &str) {
        let limit = MAX_PACKAGE_FILE_BYTES / (1024 * 1024);
        let message = format!("{what} is too large: {size} bytes (the limit is {limit} MiB): {}", path.display());
        self.report(Code::FileTooLarge, range, message);
    }

    pub fn run(&mut self, manifest: &Manifest) {
        let root = self.root.map(Path::to_path_buf);
        let root = root.as_deref();
        for runtime in &manifest.runtimes {
            if let Some(Image::Build { build, context }) = &runtime.image {
                let prefix = runtime.image_label.clone();
                let label = format!("{prefix}.build");
                if let Some(dockerfile) = self.resolve(build, &label, root) {
                    if !self.within(build, &label, &dockerfile, false) {
                        // Refused: nothing of it is read.
                    } else if matches!(self.fs.kind_followed(&dockerfile), Ok(FileKind::File)) {
                        self.dockerfile_credentials(build, &dockerfile);
                    } else {
                        self.report(
                            Code::MissingBuildFile,
                            build.range,
                            format!("Dockerfile does not exist: {}", dockerfile.display()),
                        );
                    }
                }
                let default_context = Spanned::new(".".to_owned(), build.range);
                let context = context.as_ref().unwrap_or(&default_context);
                let label = format!("{prefix}.context");
                if let Some(dir) = self.resolve(context, &label, root)
                    && self.within(context, &label, &dir, false)
                    && !matches!(self.fs.kind_followed(&dir), Ok(FileKind::Directory))
                {
                    self.report(
                        Code::MissingBuildFile,
                        context.range,
                        format!("Build context is not a directory: {}", dir.display()),
                    );
                }
            }
        }
        if let Some(instructions) = &manifest.instructions
            && let Some(path) = self.resolve(instructions, "instructions", root)
        {
            if !self.within(instructions, "instructions", &path, false) {
                // Refused: nothing of it is read.
            } else if matches!(self.fs.kind_followed(&path), Ok(FileKind::File)) {
                // Read once, bounded (the engine reads it into the system prompt): the prose checks read it.
                match self.read_bounded(&path, instructions.range, "Instructions file") {
                    Ok(bytes) => self.prose_files.instructions = Some((path, text_of(bytes))),
                    Err(None) => {}
                    Err(Some(error)) => {
                        let message = format!("Instructions file is unreadable: {}: {error}", path.display());
                        self.report(Code::IoError, instructions.range, message);
                    }
                }
            } else {
                let title = manifest.name.as_ref().map_or("Instructions", |n| n.value.as_str()).to_owned();
                let rename = self.nearest_fix(instructions, &path, FileKind::File);
                let fix = Fix {
                    title: format!("Create {}", instructions.value),
                    creates: vec![(
                        path.clone(),
                        format!("# {title}\n\nDescribe how to do this class of work in this repository.\n"),
                    )],
                    edits: Vec::new(),
                    safe: false,
                };
                self.report(
                    Code::MissingInstructions,
                    instructions.range,
                    format!("Instructions file does not exist: {}", path.display()),
                )
                .fixes
                .extend(rename.into_iter().chain([fix]));
            }
        }
        self.skills(manifest, root);
        self.prose(manifest);
        self.runner_config(manifest);
        self.trials(manifest);
    }
}

/// A file's text as read (no copy), or with what is not UTF-8 replaced.
fn text_of(bytes: Vec<u8>) -> Arc<str> {
    let text = String::from_utf8(bytes).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
    Arc::from(text)
}

fn has_drive(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}
