//! Server state: open documents (the overlay over the disk), workspace roots, configuration, and the
//! immutable snapshots read requests run on.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use wb_manifest::{
    Code, DiskCache, FileKind, FileSystem, MAX_MANIFEST_BYTES, ModelCatalog, PackageReport, ReadLimitError, Severity,
};
use wb_syntax::{LineIndex, Parse, PositionEncoding};

use super::client_features::ClientFeatures;

/// One open document.
#[derive(Clone, Debug)]
pub struct Document {
    pub text: Arc<str>,
    pub version: i32,
    pub index: Arc<LineIndex>,
}

impl Document {
    pub fn new(text: String, version: i32) -> Document {
        let text: Arc<str> = Arc::from(text);
        let index = Arc::new(LineIndex::shared(Arc::clone(&text)));
        Document { text, version, index }
    }
}

/// The user's settings (`workbench.*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub model_catalog: Option<PathBuf>,
    /// Per-code severity; `None` switches the code off.
    pub severity: HashMap<Code, Option<Severity>>,
    pub run_time_warnings: bool,
    /// Which inlay hints are shown (`workbench.inlayHints`).
    pub inlay_hints: InlayHints,
    /// Formatting also puts keys in the standard's order (`workbench.format.fieldOrder`).
    pub format_field_order: bool,
}

/// The kinds of inlay hints (`workbench.inlayHints.context`, `.route`, `.env`), each on unless switched off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlayHints {
    /// The context a package injects: tokens and cost after `instructions:` and each skill.
    pub context: bool,
    /// The route and credential after `model.id`.
    pub route: bool,
    /// Whether each `env` entry is bound.
    pub env: bool,
}

impl Default for InlayHints {
    fn default() -> InlayHints {
        InlayHints { context: true, route: true, env: true }
    }
}

/// The settings when the user set nothing; [`Config::from_json`] starts from them.
impl Default for Config {
    fn default() -> Config {
        Config {
            model_catalog: None,
            severity: HashMap::new(),
            run_time_warnings: true,
            inlay_hints: InlayHints::default(),
            format_field_order: false,
        }
    }
}

impl Config {
    pub fn from_json(value: &serde_json::Value) -> (Config, Vec<String>) {
        let mut problems = Vec::new();
        let mut config = Config::default();
        let value = value.get("workbench").unwrap_or(value);
        if let Some(path) = value.get("modelCatalog").and_then(|v| v.as_str()).filter(|s| !s.is_empty()) {
            config.model_catalog = Some(PathBuf::from(path));
        }
        if let Some(flag) = value.get("runTimeWarnings").and_then(serde_json::Value::as_bool) {
            config.run_time_warnings = flag;
        }
        if let Some(format) = value.get("format").and_then(|v| v.as_object()) {
            for (name, flag) in format {
                match (name.as_str(), flag.as_bool()) {
                    ("fieldOrder", Some(flag)) => config.format_field_order = flag,
                    ("fieldOrder", None) => problems.push("workbench.format.fieldOrder: expected true or false".into()),
                    _ => problems.push(format!("workbench.format: unknown setting {name} (fieldOrder)")),
                }
            }
        }
        if let Some(hints) = value.get("inlayHints").and_then(|v| v.as_object()) {
            for (name, flag) in hints {
                let Some(flag) = flag.as_bool() else {
                    problems.push(format!("workbench.inlayHints.{name}: expected true or false"));
                    continue;
                };
                match name.as_str() {
                    "context" => config.inlay_hints.context = flag,
                    "route" => config.inlay_hints.route = flag,
                    "env" => config.inlay_hints.env = flag,
                    _ => problems.push(format!("workbench.inlayHints: unknown kind {name} (context, route, env)")),
                }
            }
        }
        if let Some(map) = value.get("severity").and_then(|v| v.as_object()) {
            for (name, level) in map {
                let Some(code) = Code::from_name(name) else {
                    problems.push(format!("workbench.severity: unknown diagnostic code {name}"));
                    continue;
                };
                let level = match level.as_str() {
                    Some("error") => Some(Severity::Error),
                    Some("warning") => Some(Severity::Warning),
                    Some("information") => Some(Severity::Information),
                    Some("hint") => Some(Severity::Hint),
                    Some("off") => None,
                    _ => {
                        problems.push(format!(
                            "workbench.severity.{name}: expected error, warning, information, hint or off"
                        ));
                        continue;
                    }
                };
                config.severity.insert(code, level);
            }
        }
        (config, problems)
    }

    /// Applies severity overrides and the run-time switch to a report's diagnostics.
    pub fn apply(&self, report: &mut PackageReport) {
        report.diagnostics.retain_mut(|diagnostic| {
            if !self.run_time_warnings && diagnostic.code.is_run_time() {
                return false;
            }
            match self.severity.get(&diagnostic.code) {
                Some(Some(severity)) => {
                    diagnostic.severity = *severity;
                    true
                }
                Some(None) => false,
                None => true,
            }
        });
    }
}

/// The parse of the open document used last, shared by every snapshot: an edit's diagnostics parse it once,
/// and the hover and completion requests that follow answer from that tree. One is kept (the tree of a
/// 10,000-line manifest is about 2 MB); a document is matched by path and version, so a stale tree is never
/// used. A new version of the kept document is parsed from the kept tree ([`wb_syntax::reparse`]: only the
/// top-level entry an edit changed is parsed again).
#[derive(Default)]
pub struct ParseCache {
    latest: Mutex<Option<(PathBuf, i32, Arc<Parse>)>>,
}

impl ParseCache {
    /// The parse of `document` at `path`: the kept one, or a new one (then kept).
    pub fn get(&self, path: &Path, document: &Document) -> Arc<Parse> {
        let mut previous = None;
        if let Ok(mut latest) = self.latest.lock() {
            match latest.take() {
                Some((kept, version, parse)) if kept == path && version == document.version => {
                    let found = Arc::clone(&parse);
                    *latest = Some((kept, version, parse));
                    return found;
                }
                Some((kept, _, parse)) if kept == path => previous = Some(parse),
                other => *latest = other,
            }
        }
        let parse = match previous {
            // The kept tree is taken over when nothing else holds it (a request still reading an older
            // version may); otherwise it is copied.
            Some(previous) => {
                let previous = Arc::try_unwrap(previous).unwrap_or_else(|shared| Parse::clone(&shared));
                wb_syntax::reparse_shared(previous, Arc::clone(&document.text))
            }
            None => wb_syntax::parse_shared(Arc::clone(&document.text)),
        };
        let parse = Arc::new(parse);
        if let Ok(mut latest) = self.latest.lock() {
            *latest = Some((path.to_owned(), document.version, Arc::clone(&parse)));
        }
        parse
    }
}

/// The file system the checks see: open documents win over the disk. Each snapshot has its own
/// [`DiskCache`], so a batch of checks asks the disk each question once and a later batch asks again.
#[derive(Clone)]
pub struct Overlay {
    pub documents: Arc<HashMap<PathBuf, Document>>,
    pub parses: Arc<ParseCache>,
    pub disk: Arc<DiskCache>,
}

impl FileSystem for Overlay {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.documents.get(path) {
            Some(document) => Ok(document.text.as_bytes().to_vec()),
            None => self.disk.read(path),
        }
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        if self.documents.contains_key(path) {
            return Ok(FileKind::File);
        }
        self.disk.kind(path)
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        if self.documents.contains_key(path) {
            return Ok(FileKind::File);
        }
        self.disk.kind_followed(path)
    }

    /// Always the disk's answer: a buffer never changes where a path leads, so a link out of the package is
    /// seen even while the file it names is open.
    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        self.disk.real_path(path)
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        match self.documents.get(path) {
            Some(document) if document.text.len() > limit => Err(ReadLimitError::TooLarge(document.text.len() as u64)),
            Some(document) => Ok(document.text.as_bytes().to_vec()),
            None => self.disk.read_limited(path, limit),
        }
    }

    fn size(&self, path: &Path) -> io::Result<u64> {
        match self.documents.get(path) {
            Some(document) => Ok(document.text.len() as u64),
            None => self.disk.size(path),
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries = self.disk.read_dir(path).or_else(|error| {
            if self.documents.keys().any(|doc| doc.parent() == Some(path)) { Ok(Vec::new()) } else { Err(error) }
        })?;
        for doc in self.documents.keys() {
            if doc.parent() == Some(path) && !entries.contains(doc) {
                entries.push(doc.clone());
            }
        }
        entries.sort();
        Ok(entries)
    }

    fn cached_parse(&self, path: &Path, bytes: &[u8]) -> Option<Arc<Parse>> {
        let document = self.documents.get(path)?;
        (document.text.as_bytes() == bytes).then(|| self.parses.get(path, document))
    }
}

/// What a request handler reads: a consistent view taken when the request arrived.
#[derive(Clone)]
pub struct Snapshot {
    pub overlay: Overlay,
    pub encoding: PositionEncoding,
    pub catalog: Arc<ModelCatalog>,
    pub config: Arc<Config>,
    pub manifests: Arc<BTreeSet<PathBuf>>,
    /// The client applies `CreateFile` in workspace edits.
    pub resource_operations: bool,
    /// What the client can show and insert (snippets, Markdown).
    pub features: ClientFeatures,
}

impl Snapshot {
    pub fn document(&self, path: &Path) -> Option<&Document> {
        self.overlay.documents.get(path)
    }

    /// The text of a file: the open buffer or the disk.
    pub fn text(&self, path: &Path) -> Option<String> {
        self.overlay.read(path).ok().map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The text, line index and parse of a file: the open buffer's (its parse shared, see [`ParseCache`]), or
    /// the disk's. `None` for a text over [`MAX_MANIFEST_BYTES`], which no feature parses: `check` refuses such a
    /// manifest on disk, and an editor buffer gets the same `file-too-large` diagnostic and empty answers.
    pub fn file(&self, path: &Path) -> Option<(Arc<str>, Arc<LineIndex>, Arc<Parse>)> {
        match self.document(path) {
            Some(document) if is_oversize(&document.text) => None,
            Some(document) => {
                Some((Arc::clone(&document.text), Arc::clone(&document.index), self.overlay.parses.get(path, document)))
            }
            None => {
                let bytes = self.overlay.read_limited(path, MAX_MANIFEST_BYTES).ok()?;
                let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes));
                drop(bytes);
                let index = Arc::new(LineIndex::shared(Arc::clone(&text)));
                let parse = Arc::new(wb_syntax::parse_shared(Arc::clone(&text)));
                Some((text, index, parse))
            }
        }
    }

    /// The line index of a file: the open buffer's, or one built from the disk.
    pub fn index(&self, path: &Path) -> Option<Arc<LineIndex>> {
        match self.document(path) {
            Some(document) => Some(Arc::clone(&document.index)),
            None => self.text(path).map(|text| Arc::new(LineIndex::new(&text))),
        }
    }

    /// Checks a package with the user's configuration applied.
    pub fn check(&self, manifest: &Path) -> PackageReport {
        let mut report = wb_manifest::check_package(&self.overlay, manifest, &self.catalog);
        self.config.apply(&mut report);
        report
    }
}

/// Whether a text is over the manifest size limit ([`MAX_MANIFEST_BYTES`], the one `check` applies on disk):
/// the editor features never parse it.
pub fn is_oversize(text: &str) -> bool {
    text.len() > MAX_MANIFEST_BYTES
}

/// True for a path that looks like a Workbench manifest.
pub fn is_manifest(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "workbench.yml")
}

pub fn is_skill(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "SKILL.md")
}

/// A trial task: `trials/<id>/task.json`.
pub fn is_trial_task(path: &Path) -> bool {
    wb_manifest::trial_task::is_task_file(path)
}

/// A file that is checked on its own while it is open (besides the manifest that may also read it): a skill's
/// `SKILL.md`, an outbox declaration, a trial task.
pub fn is_open_owner(path: &Path) -> bool {
    is_skill(path) || is_outbox_declaration(path) || is_trial_task(path)
}

/// An outbox declaration: `outcome.json` directly inside a directory named `outbox`.
pub fn is_outbox_declaration(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "outcome.json")
        && path.parent().and_then(Path::file_name).is_some_and(|name| name == "outbox")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_without_keys_are_the_defaults() {
        let (config, problems) = Config::from_json(&serde_json::json!({}));
        assert!(problems.is_empty());
        assert_eq!(config, Config::default());
        assert!(Config::default().run_time_warnings, "run-time warnings are on unless switched off");
    }

    /// Each version's parse is the full parse of its text, whether it came from the kept tree of the previous
    /// version (held elsewhere or not), from a version kept for another path, or back from a newer version.
    #[test]
    fn the_parse_cache_answers_each_version_as_a_full_parse() {
        let cache = ParseCache::default();
        let path = Path::new("/repo/.workbenches/a/workbench.yml");
        let other = Path::new("/repo/.workbenches/b/workbench.yml");
        let texts = [
            "spec: 1\nname: a\ndescription: one\nenv:\n  A:\n    required: true\n",
            "spec: 1\nname: a\ndescription: one, edited\nenv:\n  A:\n    required: true\n",
            "spec: 1\nname: a\ndescription: one, edited\nenv:\n  A:\n    required: [\n",
            "spec: 1\nname: a\ndescription: two\nenv:\n  A:\n    required: false\n  B: {}\n",
        ];
        let mut held = Vec::new();
        for (version, text) in texts.iter().enumerate() {
            let document = Document::new((*text).to_owned(), version as i32);
            let parse = cache.get(path, &document);
            let full = wb_syntax::parse_str(text);
            assert_eq!((&parse.text, &parse.root, &parse.errors), (&full.text, &full.root, &full.errors), "v{version}");
            assert!(Arc::ptr_eq(&parse, &cache.get(path, &document)), "the same version answers from the kept tree");
            if version == 1 {
                held.push(parse);
            }
        }
        let document = Document::new(texts[0].to_owned(), 0);
        let back = cache.get(path, &document);
        assert_eq!(back.root, wb_syntax::parse_str(texts[0]).root, "an older version");
        let elsewhere = Document::new(texts[3].replace("name: a", "name: b"), 7);
        assert_eq!(cache.get(other, &elsewhere).root, wb_syntax::parse_str(&elsewhere.text).root);
        assert_eq!(held[0].root, wb_syntax::parse_str(texts[1]).root, "a tree a request still holds is left as it was");
    }
}
