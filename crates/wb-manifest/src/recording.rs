//! [`Recording`]: a file system that notes every question a check asks, so the language server knows which
//! files a package's diagnostics depend on (a change elsewhere does not recheck it), and tests can count reads.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::fs::{FileKind, FileSystem, ReadLimitError, normalize};

/// What one check asked of the file system.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dependencies {
    /// Every path asked about: read, resolved, or asked for its kind (including the ones that did not exist).
    pub asked: HashSet<PathBuf>,
    /// Directories whose entries were listed: a file appearing or vanishing in one can change the result.
    pub listed: HashSet<PathBuf>,
    /// Paths asked about that did not exist: anything created beneath one (a skill directory and its
    /// `SKILL.md`) can change the result.
    pub missing: HashSet<PathBuf>,
    /// How many times each file's content was read.
    pub reads: HashMap<PathBuf, usize>,
    /// A symbolic link was met: where it leads can change without any event for the paths asked.
    pub saw_link: bool,
}

impl Dependencies {
    /// Whether a change to `path` (created, changed or deleted) can change what the check found.
    pub fn depends_on(&self, path: &Path) -> bool {
        self.saw_link
            || self.asked.contains(path)
            || path.parent().is_some_and(|dir| self.listed.contains(dir))
            || path.ancestors().skip(1).any(|ancestor| self.missing.contains(ancestor))
    }
}

fn is_missing<T>(answer: &io::Result<T>) -> bool {
    matches!(answer, Err(error) if error.kind() == io::ErrorKind::NotFound)
}

/// `inner`, with every question noted (see the module docs).
pub struct Recording<'a> {
    inner: &'a dyn FileSystem,
    noted: Mutex<Dependencies>,
}

impl<'a> Recording<'a> {
    pub fn new(inner: &'a dyn FileSystem) -> Recording<'a> {
        Recording { inner, noted: Mutex::new(Dependencies::default()) }
    }

    /// What was asked so far.
    pub fn dependencies(&self) -> Dependencies {
        self.noted.lock().map(|noted| noted.clone()).unwrap_or_default()
    }

    fn note(&self, update: impl FnOnce(&mut Dependencies)) {
        if let Ok(mut noted) = self.noted.lock() {
            update(&mut noted);
        }
    }

    fn read_noted(&self, path: &Path) {
        self.note(|noted| {
            noted.asked.insert(path.to_owned());
            *noted.reads.entry(path.to_owned()).or_default() += 1;
        });
    }

    fn kind_noted(&self, path: &Path, kind: io::Result<FileKind>) -> io::Result<FileKind> {
        self.note(|noted| {
            noted.asked.insert(path.to_owned());
            noted.saw_link |= matches!(kind, Ok(FileKind::Symlink));
            if is_missing(&kind) {
                noted.missing.insert(path.to_owned());
            }
        });
        kind
    }
}

impl FileSystem for Recording<'_> {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read_noted(path);
        self.inner.read(path)
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        self.read_noted(path);
        self.inner.read_limited(path, limit)
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        let real = self.inner.real_path(path);
        self.note(|noted| {
            noted.asked.insert(path.to_owned());
            if is_missing(&real) {
                noted.missing.insert(path.to_owned());
            }
            if let Ok(real) = &real {
                // A path that resolves elsewhere went through a link.
                noted.saw_link |= *real != normalize(path);
                noted.asked.insert(real.clone());
            }
        });
        real
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        let kind = self.inner.kind(path);
        self.kind_noted(path, kind)
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        let kind = self.inner.kind_followed(path);
        self.kind_noted(path, kind)
    }

    fn size(&self, path: &Path) -> io::Result<u64> {
        let size = self.inner.size(path);
        self.note(|noted| {
            noted.asked.insert(path.to_owned());
            if is_missing(&size) {
                noted.missing.insert(path.to_owned());
            }
        });
        size
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.note(|noted| {
            noted.asked.insert(path.to_owned());
            noted.listed.insert(path.to_owned());
        });
        self.inner.read_dir(path)
    }

    fn cached_parse(&self, path: &Path, bytes: &[u8]) -> Option<Arc<wb_syntax::Parse>> {
        self.inner.cached_parse(path, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DiskCache, ModelCatalog, check_path};

    /// `check` reads every file it needs once: the manifest, the instructions and each `SKILL.md`; what a
    /// package asked about is what its diagnostics depend on.
    #[test]
    fn a_check_reads_each_file_once() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for name in ["alpha", "beta"] {
            let package = root.join(".workbenches").join(name);
            std::fs::create_dir_all(package.join("skills/review")).unwrap();
            std::fs::write(
                package.join("workbench.yml"),
                format!(
                    "spec: 1\nversion: 1.0.0\nname: {name}\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
                     instructions: ./instructions.md\nskills:\n  - ./skills/review\nruntimes:\n  local: {{}}\n"
                ),
            )
            .unwrap();
            std::fs::write(package.join("instructions.md"), "Do it.\n").unwrap();
            std::fs::write(package.join("skills/review/SKILL.md"), "---\nname: review\ndescription: Reviews.\n---\n")
                .unwrap();
        }
        let disk = DiskCache::new();
        let recording = Recording::new(&disk);
        let reports = check_path(&recording, &root, ModelCatalog::embedded());
        assert_eq!(reports.len(), 2);
        assert!(
            reports.iter().all(|r| r.is_valid()),
            "{:?}",
            reports.iter().map(|r| &r.diagnostics).collect::<Vec<_>>()
        );
        let dependencies = recording.dependencies();
        let mut reads: Vec<(String, usize)> = dependencies
            .reads
            .iter()
            .map(|(path, count)| (path.strip_prefix(&root).unwrap().display().to_string(), *count))
            .collect();
        reads.sort();
        let expected: Vec<(String, usize)> = ["alpha", "beta"]
            .iter()
            .flat_map(|name| {
                ["instructions.md", "skills/review/SKILL.md", "workbench.yml"]
                    .map(|file| (format!(".workbenches/{name}/{file}"), 1))
            })
            .collect();
        assert_eq!(reads, expected);
        assert!(!dependencies.saw_link);
        let skill_dir = root.join(".workbenches/alpha/skills/review");
        assert!(dependencies.depends_on(&skill_dir.join("new-file.md")), "a listed directory gains a file");
        assert!(dependencies.depends_on(&root.join(".workbenches/beta/instructions.md")));
        assert!(!dependencies.depends_on(&root.join("README.md")));

        // A skill that does not exist yet: creating its directory and `SKILL.md` rechecks the package.
        let gamma = root.join(".workbenches/gamma");
        std::fs::create_dir_all(&gamma).unwrap();
        std::fs::write(
            gamma.join("workbench.yml"),
            "spec: 1\nversion: 1.0.0\nname: gamma\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
             skills:\n  - ./skills/later\nruntimes:\n  local: {}\n",
        )
        .unwrap();
        let recording = Recording::new(&disk);
        let report = crate::check_package(&recording, &gamma.join("workbench.yml"), ModelCatalog::embedded());
        assert!(!report.is_valid(), "the skill is missing");
        let dependencies = recording.dependencies();
        assert!(dependencies.depends_on(&gamma.join("skills/later/SKILL.md")), "{:?}", dependencies.missing);
        assert!(!dependencies.depends_on(&root.join(".workbenches/alpha/instructions.md")));
    }
}
