//! Shared pieces of the fuzz targets: an in-memory package to check against, and the range invariants every
//! result must satisfy.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use wb_manifest::{FileKind, FileSystem, PackageReport, ReadLimitError};
use wb_syntax::TextRange;

/// The manifest path every target checks (inside a repository's `.workbenches`, so package checks run).
pub const MANIFEST: &str = "/repo/.workbenches/pkg/workbench.yml";

/// A small repository held in memory: one package with instructions, a skill, a Dockerfile and runner
/// configs, plus a sibling package and a credential-like file.
pub struct MemFs {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemFs {
    pub fn sample() -> MemFs {
        let mut files = BTreeMap::new();
        let mut add = |path: &str, text: &str| {
            files.insert(PathBuf::from(path), text.as_bytes().to_vec());
        };
        add("/repo/README.md", "# repo\n");
        add("/repo/Dockerfile", "FROM debian\n");
        add("/repo/.workbenches/pkg/instructions.md", "Do the work.\n");
        add("/repo/.workbenches/pkg/Dockerfile", "FROM node:22\n");
        add("/repo/.workbenches/pkg/opencode.json", "{\"model\": \"x\"}\n");
        add("/repo/.workbenches/pkg/claude.json", "{\"permissions\": {}}\n");
        add("/repo/.workbenches/pkg/.env", "TOKEN=secret\n");
        add(
            "/repo/.workbenches/pkg/skills/review/SKILL.md",
            "---\nname: review\ndescription: Review changes.\n---\n\n# Review\n",
        );
        add("/repo/.workbenches/pkg/skills/broken/SKILL.md", "---\nname: [\n---\nbody ☃\n");
        add("/repo/.workbenches/pkg/skills/empty/README.md", "no skill here\n");
        add("/repo/.workbenches/pkg/pi/settings.json", "{}\n");
        add("/repo/.workbenches/other/workbench.yml", "spec: 1\nname: other\nrunner: codex\n");
        MemFs { files }
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.files.keys().any(|file| file != path && file.starts_with(path))
    }
}

impl FileSystem for MemFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.files.get(path) {
            Some(bytes) => Ok(bytes.clone()),
            None if self.is_dir(path) => Err(io::Error::other("is a directory")),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        match self.files.get(path) {
            Some(bytes) if bytes.len() > limit => Err(ReadLimitError::TooLarge(bytes.len() as u64)),
            _ => Ok(self.read(path)?),
        }
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        if self.files.contains_key(path) {
            Ok(FileKind::File)
        } else if self.is_dir(path) {
            Ok(FileKind::Directory)
        } else {
            Err(io::ErrorKind::NotFound.into())
        }
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        self.kind(path)
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        // No links in memory: a path that exists is its own real path.
        self.kind(path).map(|_| path.to_path_buf())
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        if !self.is_dir(path) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let mut entries: Vec<PathBuf> = self
            .files
            .keys()
            .filter_map(|file| file.strip_prefix(path).ok())
            .filter_map(|rest| rest.components().next())
            .map(|first| path.join(first))
            .collect();
        entries.sort();
        entries.dedup();
        Ok(entries)
    }
}

/// Panics unless `range` is ordered, inside `text` and on character boundaries.
pub fn assert_range(text: &str, range: TextRange, what: &str) {
    assert!(range.start <= range.end, "{what}: reversed range {range:?}");
    assert!(range.end <= text.len(), "{what}: range {range:?} past the end ({})", text.len());
    assert!(
        text.is_char_boundary(range.start) && text.is_char_boundary(range.end),
        "{what}: range {range:?} splits a character"
    );
}

/// Checks every range of a report against the text of the file it points into.
pub fn assert_report(report: &PackageReport) {
    let text_of = |path: &Path| report.sources.get(path).map(|text| &**text);
    for diagnostic in &report.diagnostics {
        let what = format!("{:?} {}", diagnostic.code, diagnostic.message);
        match text_of(&diagnostic.path) {
            Some(text) => assert_range(text, diagnostic.range, &what),
            None => assert!(diagnostic.range.start <= diagnostic.range.end, "{what}: reversed range"),
        }
        for related in &diagnostic.related {
            if let Some(text) = text_of(&related.path) {
                assert_range(text, related.range, &what);
            }
        }
        for fix in &diagnostic.fixes {
            for edit in &fix.edits {
                if let Some(text) = text_of(&edit.path) {
                    assert_range(text, edit.range, &what);
                }
            }
        }
    }
}
