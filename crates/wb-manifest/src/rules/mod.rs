//! The manifest rules of the reference parser (engine facts b.3, b.4, b.7), reporting every problem instead of
//! the first, plus the run-time problems that can be known from the text alone (b.6).
//!
//! Cascades are avoided by checking each value once: when a value has the wrong type, nothing inside it is
//! checked, and a value that failed is left out of the [`Manifest`], so no later rule trips over it again.
//!
//! This module holds the shared state, the top level and the spec dispatch; each manifest section has its own
//! module, and the run-time problems (`run_time`) run last, on the [`Manifest`] the sections built.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use wb_syntax::{Entry, Mapping, Node, Parse, TextRange, Value};

use crate::catalog::ModelCatalog;
use crate::diagnostic::{Code, Diagnostic, DiagnosticTag};
use crate::fields;
use crate::manifest::Manifest;

mod env;
mod fixes;
mod mcps;
mod model;
mod requirements;
mod run_time;
mod runtimes;
pub(crate) mod suggestions;
mod values;
mod workspaces;

pub(crate) use fixes::ManifestText;
use suggestions::{absent_names, closest, closest_or_extension};
pub(crate) use values::js_trim;

/// The patterns are constants compiled once; a unit test proves each compiles, and a pattern that failed to
/// compile would match nothing rather than crash.
macro_rules! pattern {
    ($name:ident, $pattern:expr) => {
        pub(crate) fn $name() -> Option<&'static Regex> {
            static CELL: OnceLock<Option<Regex>> = OnceLock::new();
            CELL.get_or_init(|| Regex::new($pattern).ok()).as_ref()
        }
    };
}

pub(crate) fn matches(pattern: Option<&Regex>, text: &str) -> bool {
    pattern.is_some_and(|regex| regex.is_match(text))
}

/// Compiles the patterns every manifest's check matches against (a pass calls it on a thread of its pool while
/// it finds the packages, so no check waits for the compile).
pub fn prepare() {
    for pattern in [semver, model_id, provider_name, slug] {
        let _ = pattern();
    }
}

pattern!(semver, fields::SEMVER_PATTERN);
pattern!(model_id, fields::MODEL_ID_PATTERN);
pattern!(provider_name, fields::PROVIDER_PATTERN);
pattern!(slug, fields::SLUG_PATTERN);

/// A field's label in messages (`mcps[0]`, `runtimes.docker`), written out only when a message needs it: a
/// manifest without problems never spells its labels.
#[derive(Clone, Copy)]
pub(super) enum Label<'a> {
    Index(&'a str, usize),
    Key(&'a str, &'a str),
}

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Index(list, index) => write!(f, "{list}[{index}]"),
            Label::Key(parent, key) => write!(f, "{parent}.{key}"),
        }
    }
}

/// A value together with the key it was written under, so an empty value (`local:`) still has a place to point.
#[derive(Clone, Copy)]
struct Slot<'a> {
    node: &'a Node,
    key_range: Option<TextRange>,
}

impl<'a> Slot<'a> {
    fn of_entry(entry: &'a Entry) -> Slot<'a> {
        Slot { node: &entry.value, key_range: Some(entry.key_range) }
    }

    fn of_item(node: &'a Node) -> Slot<'a> {
        Slot { node, key_range: None }
    }

    /// Where a problem with the value is shown: the value, or its key when the value is empty.
    fn range(self) -> TextRange {
        match self.key_range {
            Some(key) if self.node.range.is_empty() => key,
            _ => self.node.range,
        }
    }
}

pub(crate) struct Rules<'a> {
    path: PathBuf,
    text: &'a str,
    catalog: &'a ModelCatalog,
    spec: u8,
    diagnostics: Vec<Diagnostic>,
    manifest: Manifest,
    legacy_fields_present: bool,
    /// The document's line ending, for inserted text.
    newline: &'static str,
    /// Every well-formed MCP name so far, valid server or not, so duplicates are found regardless.
    mcp_names: Vec<(String, TextRange)>,
}

/// Checks a parsed manifest. Syntax errors of `parse` are not included (see [`crate::check`]).
pub(crate) fn check_manifest(path: &Path, parse: &Parse, catalog: &ModelCatalog) -> (Manifest, Vec<Diagnostic>) {
    let mut rules = Rules {
        path: path.to_owned(),
        text: &parse.text,
        catalog,
        spec: 1,
        diagnostics: Vec::new(),
        manifest: Manifest::default(),
        legacy_fields_present: false,
        newline: if parse.text.contains("\r\n") { "\r\n" } else { "\n" },
        mcp_names: Vec::new(),
    };
    rules.document(parse.root.as_ref());
    let has_error = rules.diagnostics.iter().any(|d| d.severity == crate::Severity::Error);
    rules.manifest.complete = !has_error;
    (rules.manifest, rules.diagnostics)
}

impl<'a> Rules<'a> {
    fn report(&mut self, code: Code, range: TextRange, message: impl Into<String>) -> &mut Diagnostic {
        self.diagnostics.push(Diagnostic::new(code, self.path.clone(), range, message));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    fn document(&mut self, root: Option<&Node>) {
        let Some(root) = root else {
            self.report(Code::ManifestNotObject, TextRange::empty(0), "Workbench manifest must be an object");
            return;
        };
        let Value::Mapping(top) = &root.value else {
            self.report(Code::ManifestNotObject, root.range, "Workbench manifest must be an object");
            return;
        };
        let anchor = top.entries.first().map_or(root.range, |entry| entry.key_range);
        self.spec(top, anchor);
        self.top_level_keys(top);
        let spec = self.spec;
        if let Some(entry) = top.entry("env") {
            self.env(entry);
        }
        if let Some(entry) = top.entry("workspaces") {
            self.workspaces(entry);
        }
        if spec == 1 {
            self.runtimes(top.entry("runtimes"), anchor);
            if let Some(entry) = top.entry("requirements") {
                self.requirements(entry);
            }
        } else {
            self.spec0_runtime(top, anchor);
        }
        self.manifest.version = self.text_field(top, "version", anchor);
        if let Some(version) = &self.manifest.version
            && !matches(semver(), &version.value)
        {
            let range = version.range;
            self.report(Code::InvalidVersion, range, "version must be a semantic version");
            self.manifest.version = None;
        }
        self.manifest.name = self.text_field(top, "name", anchor);
        if let Some(entry) = top.entry("description") {
            self.manifest.description = self.text(Slot::of_entry(entry), "description");
        }
        self.manifest.runner = self.text_field(top, "runner", anchor);
        self.model(top.entry("model"), anchor);
        self.manifest.instructions = self.text_field(top, "instructions", anchor);
        self.manifest.skills = self.string_array(top.entry("skills"), "skills");
        self.manifest.tools = self.string_array(top.entry("tools"), "tools");
        if let Some(entry) = top.entry("mcps") {
            self.mcps(entry);
        }
        if let Some(entry) = top.entry("runner_config") {
            self.manifest.runner_config = self.text(Slot::of_entry(entry), "runner_config");
        }
        self.runtime_problems(top);
        self.missing_field_fixes(top, anchor);
    }

    /// Attaches "Add `field`" fixes to the top-level missing-field diagnostics.
    fn missing_field_fixes(&mut self, top: &Mapping, anchor: TextRange) {
        for index in 0..self.diagnostics.len() {
            let diagnostic = &self.diagnostics[index];
            if diagnostic.code != Code::MissingField || diagnostic.range != anchor {
                continue;
            }
            let key = diagnostic.message.split([' ', '.']).next().unwrap_or_default().to_owned();
            if top.entry(&key).is_some() {
                continue;
            }
            if let Some(fix) = self.add_field_fix(top, &key) {
                self.diagnostics[index].fixes.push(fix);
            }
        }
    }

    fn spec(&mut self, top: &Mapping, anchor: TextRange) {
        let entry = top.entry("spec");
        let supported = match entry.map(|e| &e.value.value) {
            Some(Value::Number(n)) if *n == 0.0 => Some(0),
            Some(Value::Number(n)) if *n == 1.0 => Some(1),
            _ => None,
        };
        match supported {
            Some(spec) => {
                self.spec = spec;
                self.manifest.spec = spec;
                if spec == 0
                    && let Some(entry) = entry
                {
                    // Its "Migrate to spec 1" fix is attached by `check`, once the result is known to
                    // check no worse (`migrate::offer_migration`).
                    let range = Slot::of_entry(entry).range();
                    self.report(
                            Code::Spec0Manifest,
                            range,
                            "Spec 0 is frozen legacy; spec 1 declares runtimes. Run `wb-lsp migrate` to convert this manifest.",
                        )
                        .with_tag_mut(DiagnosticTag::Deprecated);
                }
            }
            None => {
                let shown = entry.map_or_else(|| "undefined".to_owned(), |e| e.value.js_string());
                let range = entry.map_or(anchor, |e| Slot::of_entry(e).range());
                self.report(
                    Code::UnsupportedSpec,
                    range,
                    format!("Manifest spec {shown} is not supported by this engine; upgrade wb"),
                );
                // Check the rest as the spec the fields suggest, so one wrong number does not hide everything.
                let legacy = ["runtime", "image", "docker"].iter().any(|k| top.entry(k).is_some());
                self.spec = if legacy && top.entry("runtimes").is_none() { 0 } else { 1 };
                self.manifest.spec = self.spec;
            }
        }
    }

    fn top_level_keys(&mut self, top: &Mapping) {
        if self.spec == 1 {
            let legacy: Vec<&Entry> = ["runtime", "image", "docker"].iter().filter_map(|key| top.entry(key)).collect();
            if let Some(first) = legacy.first() {
                self.legacy_fields_present = true;
                let list: Vec<&str> = legacy.iter().map(|e| e.key.as_str()).collect();
                let message = format!(
                    "Spec 1 manifests declare runtimes, not {}. Move them under runtimes; runtime, image, and docker are spec 0 fields.",
                    list.join(", ")
                );
                let path = self.path.clone();
                let others: Vec<TextRange> = legacy[1..].iter().map(|e| e.key_range).collect();
                // Its migration fix is attached by `check` (`migrate::offer_migration`).
                let diagnostic = self.report(Code::LegacyFieldInSpec1, first.key_range, message);
                for range in others {
                    diagnostic.related.push(crate::Related {
                        path: path.clone(),
                        range,
                        message: "also a spec 0 field".to_owned(),
                    });
                }
            }
        }
        let allowed = fields::names(fields::TOP_LEVEL_FIELDS, self.spec);
        let spec = self.spec;
        let unknown = |entry: &&Entry| {
            let legacy = spec == 1 && matches!(entry.key.as_str(), "runtime" | "image" | "docker");
            !(legacy || allowed.contains(&entry.key.as_str()))
        };
        // The names a rename could suggest are listed only when a key is not known (rarely).
        if !top.entries.iter().any(|entry| unknown(&entry)) {
            return;
        }
        let absent = absent_names(&allowed, top);
        for entry in top.entries.iter().filter(unknown) {
            self.unknown_field(entry, "manifest", &absent);
        }
    }
}

impl Diagnostic {
    fn with_tag_mut(&mut self, tag: DiagnosticTag) -> &mut Diagnostic {
        self.tags.push(tag);
        self
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_pattern_compiles() {
        for pattern in [super::semver(), super::model_id(), super::provider_name(), super::slug()] {
            assert!(pattern.is_some());
        }
    }
}
