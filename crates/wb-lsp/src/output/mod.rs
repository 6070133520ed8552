//! Output formats of `check`. [`Checked`] turns reports (byte ranges) into what every format prints: paths
//! relative to the working directory and 1-based line/column positions in Unicode characters.

pub mod github;
pub mod human;
pub mod json;
pub mod sarif;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wb_manifest::{Code, PackageReport, Severity};
use wb_syntax::{LineIndex, PositionEncoding, TextRange};

/// Where a code's documentation lives.
pub fn docs_url(code: Code) -> String {
    format!("https://github.com/wb-lsp/wb-lsp/blob/main/docs/diagnostics.md#{}", code.as_str())
}

/// A 1-based line and column (Unicode characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug)]
pub struct Location {
    pub path: String,
    pub absolute: PathBuf,
    pub range: TextRange,
    pub start: Position,
    pub end: Position,
}

#[derive(Clone, Debug)]
pub struct Item {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub location: Location,
    pub related: Vec<(Location, String)>,
    pub fixes: Vec<FixItem>,
}

/// A fix as the formats print it: its title, whether `check --fix` applies it, the files it creates (path
/// relative to the working directory, contents) and its edits (where, and the new text).
#[derive(Clone, Debug)]
pub struct FixItem {
    pub title: String,
    pub safe: bool,
    pub creates: Vec<(String, String)>,
    pub edits: Vec<(Location, String)>,
}

pub struct Package {
    pub path: String,
    pub name: String,
    pub valid: bool,
    pub items: Vec<Item>,
}

pub struct Checked<'a> {
    pub packages: Vec<Package>,
    pub errors: usize,
    pub warnings: usize,
    pub reports: &'a [PackageReport],
}

impl<'a> Checked<'a> {
    pub fn new(reports: &'a [PackageReport], cwd: &Path) -> Checked<'a> {
        let mut indexes: HashMap<PathBuf, Arc<LineIndex>> = HashMap::new();
        // A text several paths lead to (a `SKILL.md` named through many links) is indexed once.
        let mut by_text: HashMap<*const u8, Arc<LineIndex>> = HashMap::new();
        let mut sources: HashMap<PathBuf, Arc<str>> = HashMap::new();
        for report in reports {
            for (path, text) in &report.sources {
                sources.entry(path.clone()).or_insert_with(|| text.clone());
            }
        }
        let mut locate = |path: &Path, range: TextRange| -> Location {
            let index = indexes.entry(path.to_owned()).or_insert_with(|| match sources.get(path) {
                Some(text) => Arc::clone(
                    by_text.entry(Arc::as_ptr(text).cast::<u8>()).or_insert_with(|| Arc::new(LineIndex::new(text))),
                ),
                None => Arc::new(LineIndex::new("")),
            });
            let (start, end) = index.range(range, PositionEncoding::Utf32);
            Location {
                path: relative(path, cwd),
                absolute: path.to_owned(),
                range,
                start: Position { line: start.line + 1, column: start.col + 1 },
                end: Position { line: end.line + 1, column: end.col + 1 },
            }
        };
        let mut packages = Vec::new();
        let (mut errors, mut warnings) = (0, 0);
        for report in reports {
            errors += report.errors();
            warnings += report.warnings();
            let items = report
                .diagnostics
                .iter()
                .map(|d| Item {
                    code: d.code,
                    severity: d.severity,
                    message: d.message.clone(),
                    location: locate(&d.path, d.range),
                    related: d.related.iter().map(|r| (locate(&r.path, r.range), r.message.clone())).collect(),
                    fixes: d
                        .fixes
                        .iter()
                        .map(|f| FixItem {
                            title: f.title.clone(),
                            safe: f.safe,
                            creates: f
                                .creates
                                .iter()
                                .map(|(path, contents)| (relative(path, cwd), contents.clone()))
                                .collect(),
                            edits: f.edits.iter().map(|e| (locate(&e.path, e.range), e.new_text.clone())).collect(),
                        })
                        .collect(),
                })
                .collect();
            // Without a manifest name, a package is named after its directory; a path that does not exist or
            // holds no manifest is named after itself, not after its parent.
            let about_itself =
                report.manifest.is_none() && report.manifest_path.file_name().is_some_and(|n| n != "workbench.yml");
            let directory = if about_itself { &report.manifest_path } else { &report.package_dir };
            let name = report
                .name
                .clone()
                .unwrap_or_else(|| directory.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            packages.push(Package {
                path: relative(&report.manifest_path, cwd),
                name,
                valid: report.is_valid(),
                items,
            });
        }
        Checked { packages, errors, warnings, reports }
    }

    /// The text of a file a diagnostic points into.
    pub fn source(&self, path: &Path) -> Option<&Arc<str>> {
        self.reports.iter().find_map(|report| report.sources.get(path))
    }
}

/// A path relative to the working directory when it is inside it, else absolute.
pub fn relative(path: &Path, cwd: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rest) if rest.as_os_str().is_empty() => ".".to_owned(),
        Ok(rest) => rest.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

pub fn summary_line(checked: &Checked<'_>) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!(
        "{} checked: {}, {}",
        plural(checked.packages.len(), "package"),
        plural(checked.errors, "error"),
        plural(checked.warnings, "warning")
    )
}
