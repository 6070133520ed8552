//! The manifest rules of the reference parser (engine facts b.3, b.4, b.7), reporting every problem instead of
//! the first, plus the run-time problems that can be known from the text alone (b.6).
//!
//! Cascades are avoided by checking each value once: when a value has the wrong type, nothing inside it is
//! checked, and a value that failed is left out of the [`Manifest`], so no later rule trips over it again.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use wb_syntax::{Entry, Mapping, Node, Parse, TextRange, Value};

use crate::diagnostic::{Code, Diagnostic, DiagnosticTag, Fix, TextEdit};
use crate::fields::{self, Field};
use crate::model::{
    Access, EnvVar, Image, Manifest, Mcp, ModelPolicy, Requirements, Route, Runtime, Spanned, Workspace,
};
use crate::models::ModelCatalog;

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

pattern!(semver, fields::SEMVER_PATTERN);
pattern!(model_id, fields::MODEL_ID_PATTERN);
pattern!(provider_name, fields::PROVIDER_PATTERN);
pattern!(slug, fields::SLUG_PATTERN);
pattern!(env_name, fields::ENV_NAME_PATTERN);
pattern!(env_reference, r"\$\{([A-Z][A-Z0-9_]*)\}");

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

    fn rename_fix(&self, range: TextRange, replacement: &str) -> Fix {
        Fix {
            title: format!("Change to `{replacement}`"),
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.path.clone(), range, new_text: replacement.to_owned() }],
        }
    }

    /// Deletes a block-style entry: its whole lines, when nothing else shares them.
    fn remove_entry_fix(&self, entry: &Entry) -> Option<Fix> {
        let line_start = self.text[..entry.key_range.start].rfind('\n').map_or(0, |at| at + 1);
        let before = &self.text[line_start..entry.key_range.start];
        if !before.trim().is_empty() {
            return None;
        }
        let end = entry.range().end.max(entry.key_range.end);
        let line_end = self.text[end..].find('\n').map_or(self.text.len(), |at| end + at + 1);
        let after = self.text[end..line_end].trim();
        if !(after.is_empty() || after.starts_with('#')) {
            return None;
        }
        Some(Fix {
            title: format!("Remove `{}`", entry.key),
            creates: Vec::new(),
            edits: vec![TextEdit {
                path: self.path.clone(),
                range: TextRange::new(line_start, line_end),
                new_text: String::new(),
            }],
        })
    }

    /// Inserts `lines` (each without indentation or newline) as new entries after the last entry of a block
    /// mapping, at the indentation of its first key.
    fn append_entries_fix(&self, mapping: &Mapping, title: String, lines: &[String]) -> Option<Fix> {
        let first = mapping.entries.first()?;
        let last_end = mapping.entries.iter().map(|e| e.range().end.max(e.key_range.end)).max()?;
        let line_start = self.text[..first.key_range.start].rfind('\n').map_or(0, |at| at + 1);
        let indent = &self.text[line_start..first.key_range.start];
        if !indent.chars().all(|ch| ch == ' ') {
            return None;
        }
        let newline = self.newline;
        let (at, mut new_text) = match self.text[last_end..].find('\n') {
            Some(offset) => (last_end + offset + 1, String::new()),
            None => (self.text.len(), newline.to_owned()),
        };
        for line in lines {
            new_text.push_str(indent);
            new_text.push_str(line);
            new_text.push_str(newline);
        }
        Some(Fix {
            title,
            creates: Vec::new(),
            edits: vec![TextEdit { path: self.path.clone(), range: TextRange::empty(at), new_text }],
        })
    }

    /// A placeholder for a missing required top-level field.
    fn add_field_fix(&self, top: &Mapping, key: &str) -> Option<Fix> {
        let package = self.path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
        let lines: Vec<String> = match key {
            "version" => vec!["version: 0.1.0".into()],
            "name" => vec![format!("name: {}", package.unwrap_or_else(|| "my-workbench".into()))],
            "runner" => vec!["runner: opencode".into()],
            "instructions" => vec!["instructions: ./instructions.md".into()],
            "model" => vec!["model:".into(), format!("  id: {}", crate::init::DEFAULT_MODEL)],
            "runtimes" => vec!["runtimes:".into(), "  local: {}".into()],
            "runtime" => vec!["runtime: local".into()],
            _ => return None,
        };
        self.append_entries_fix(top, format!("Add `{key}`"), &lines)
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
        if let Some(version) = &self.manifest.version {
            if !matches(semver(), &version.value) {
                let range = version.range;
                self.report(Code::InvalidVersion, range, "version must be a semantic version");
                self.manifest.version = None;
            }
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
                if spec == 0 {
                    if let Some(entry) = entry {
                        let range = Slot::of_entry(entry).range();
                        let fix = crate::migrate::migration_fix(&self.path, self.text);
                        let diagnostic = self
                            .report(
                                Code::Spec0Manifest,
                                range,
                                "Spec 0 is frozen legacy; spec 1 declares runtimes. Run `wb-lsp migrate` to convert this manifest.",
                            )
                            .with_tag_mut(DiagnosticTag::Deprecated);
                        if let Some(fix) = fix {
                            diagnostic.fixes.push(fix);
                        }
                    }
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
                let fix = crate::migrate::migration_fix(&self.path, self.text);
                let diagnostic = self.report(Code::LegacyFieldInSpec1, first.key_range, message);
                for range in others {
                    diagnostic.related.push(crate::Related {
                        path: path.clone(),
                        range,
                        message: "also a spec 0 field".to_owned(),
                    });
                }
                if let Some(mut fix) = fix {
                    fix.title = "Move them under `runtimes`".to_owned();
                    diagnostic.fixes.push(fix);
                }
            }
        }
        let allowed = fields::names(fields::TOP_LEVEL_FIELDS, self.spec);
        let absent = absent_names(&allowed, top);
        for entry in &top.entries {
            let legacy = self.spec == 1 && matches!(entry.key.as_str(), "runtime" | "image" | "docker");
            if legacy || allowed.contains(&entry.key.as_str()) {
                continue;
            }
            self.unknown_field(entry, "manifest", &absent);
        }
    }

    fn unknown_field(&mut self, entry: &Entry, label: &str, absent: &[&str]) {
        let suggestion = closest(&entry.key, absent);
        let mut fixes: Vec<Fix> = suggestion.map(|name| self.rename_fix(entry.key_range, name)).into_iter().collect();
        fixes.extend(self.remove_entry_fix(entry));
        let diagnostic =
            self.report(Code::UnknownField, entry.key_range, format!("Unknown {label} field: {}", entry.key));
        diagnostic.fixes.extend(fixes);
    }

    fn check_keys(&mut self, mapping: &Mapping, fields: &'static [Field], label: &str) {
        let allowed = fields::names(fields, self.spec);
        let absent = absent_names(&allowed, mapping);
        for entry in &mapping.entries {
            if !allowed.contains(&entry.key.as_str()) {
                self.unknown_field(entry, label, &absent);
            }
        }
    }

    /// A required or optional non-empty string, trimmed.
    fn text(&mut self, slot: Slot<'_>, label: &str) -> Option<Spanned<String>> {
        match &slot.node.value {
            Value::String(text) if !js_trim(text).is_empty() => {
                Some(Spanned::new(js_trim(text).to_owned(), slot.range()))
            }
            Value::String(_) | Value::Null => {
                self.report(Code::EmptyValue, slot.range(), format!("{label} must be a non-empty string"));
                None
            }
            _ => {
                self.report(Code::InvalidType, slot.range(), format!("{label} must be a non-empty string"));
                None
            }
        }
    }

    fn text_field(&mut self, mapping: &Mapping, key: &str, anchor: TextRange) -> Option<Spanned<String>> {
        self.text_in(mapping, key, key, anchor)
    }

    fn text_in(&mut self, mapping: &Mapping, key: &str, label: &str, anchor: TextRange) -> Option<Spanned<String>> {
        match mapping.entry(key) {
            Some(entry) => self.text(Slot::of_entry(entry), label),
            None => {
                self.report(Code::MissingField, anchor, format!("{label} must be a non-empty string"));
                None
            }
        }
    }

    fn record<'n>(&mut self, slot: Slot<'n>, label: &str) -> Option<&'n Mapping> {
        match &slot.node.value {
            Value::Mapping(mapping) => Some(mapping),
            _ => {
                self.report(Code::InvalidType, slot.range(), format!("{label} must be an object"));
                None
            }
        }
    }

    fn boolean(&mut self, mapping: &Mapping, key: &str, label: &str, default: bool) -> bool {
        match mapping.entry(key) {
            None => default,
            Some(entry) => match entry.value.value {
                Value::Bool(value) => value,
                _ => {
                    let range = Slot::of_entry(entry).range();
                    self.report(Code::InvalidType, range, format!("{label} must be a boolean"));
                    default
                }
            },
        }
    }

    fn string_array(&mut self, entry: Option<&Entry>, label: &str) -> Vec<Spanned<String>> {
        let Some(entry) = entry else { return Vec::new() };
        let Value::Sequence(items) = &entry.value.value else {
            let range = Slot::of_entry(entry).range();
            self.report(Code::InvalidType, range, format!("{label} must be an array of strings"));
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            match &item.value {
                Value::String(text) => {
                    if !js_trim(text).is_empty() {
                        out.push(Spanned::new(js_trim(text).to_owned(), item.range));
                    }
                }
                _ => {
                    self.report(Code::InvalidType, item.range, format!("{label} must be an array of strings"));
                }
            }
        }
        out
    }

    fn model(&mut self, entry: Option<&Entry>, anchor: TextRange) {
        let Some(entry) = entry else {
            self.report(Code::MissingField, anchor, "model must be an object");
            return;
        };
        let Some(model) = self.record(Slot::of_entry(entry), "model") else { return };
        self.check_keys(model, fields::MODEL_FIELDS, "model");
        let id = self.text_in(model, "id", "model.id", entry.key_range).and_then(|id| {
            if matches(model_id(), &id.value) {
                Some(id)
            } else {
                self.report(Code::InvalidModelId, id.range, "model.id must be a provider-neutral lab/model identifier");
                None
            }
        });
        let mut routes = Vec::new();
        let routes_entry = model.entry("routes");
        if let Some(routes_entry) = routes_entry {
            let slot = Slot::of_entry(routes_entry);
            match &routes_entry.value.value {
                Value::Sequence(items) if !items.is_empty() => {
                    for (index, item) in items.iter().enumerate() {
                        if let Some(route) = self.route(item, index, &routes) {
                            routes.push(route);
                        }
                    }
                }
                Value::Sequence(_) => {
                    self.report(Code::EmptyValue, slot.range(), "model.routes must be a non-empty array");
                }
                _ => {
                    self.report(Code::InvalidType, slot.range(), "model.routes must be a non-empty array");
                }
            }
        }
        if let Some(id) = id {
            self.manifest.model = Some(ModelPolicy { id, routes, routes_declared: routes_entry.is_some() });
        }
    }

    fn route(&mut self, item: &Node, index: usize, previous: &[Route]) -> Option<Route> {
        let label = format!("model.routes[{index}]");
        let route = self.record(Slot::of_item(item), &label)?;
        self.check_keys(route, fields::ROUTE_FIELDS, &label);
        let anchor = route.entries.first().map_or(item.range, |e| e.key_range);
        let provider = self.text_in(route, "provider", &format!("{label}.provider"), anchor);
        let model = match route.entry("model") {
            Some(entry) => self.text(Slot::of_entry(entry), &format!("{label}.model")),
            None => None,
        };
        let provider = provider?;
        if !matches(provider_name(), &provider.value) {
            self.report(Code::InvalidName, provider.range, format!("Invalid {label}.provider"));
            return None;
        }
        if let Some(first) = previous.iter().find(|r| r.provider.value == provider.value) {
            let (path, first_range) = (self.path.clone(), first.provider.range);
            let message = format!("Duplicate model route provider: {}", provider.value);
            self.report(Code::DuplicateName, provider.range, message).related.push(crate::Related {
                path,
                range: first_range,
                message: "first route for this provider".to_owned(),
            });
            return None;
        }
        Some(Route { provider, model })
    }

    fn mcps(&mut self, entry: &Entry) {
        let Value::Sequence(items) = &entry.value.value else {
            let range = Slot::of_entry(entry).range();
            self.report(Code::InvalidType, range, "mcps must be an array");
            return;
        };
        for (index, item) in items.iter().enumerate() {
            if let Some(mcp) = self.mcp(item, index) {
                self.manifest.mcps.push(mcp);
            }
        }
    }

    fn mcp(&mut self, item: &Node, index: usize) -> Option<Mcp> {
        let label = format!("mcps[{index}]");
        let mcp = self.record(Slot::of_item(item), &label)?;
        self.check_keys(mcp, fields::MCP_FIELDS, &label);
        let anchor = mcp.entries.first().map_or(item.range, |e| e.key_range);
        let mut ok = true;
        let name = self.text_in(mcp, "name", &format!("{label}.name"), anchor).and_then(|name| {
            if !matches(slug(), &name.value) {
                self.report(Code::InvalidName, name.range, format!("Invalid MCP name: {}", name.value));
                return None;
            }
            if let Some((_, first_range)) = self.mcp_names.iter().find(|(seen, _)| *seen == name.value) {
                let (path, first_range) = (self.path.clone(), *first_range);
                self.report(Code::DuplicateName, name.range, format!("Duplicate MCP name: {}", name.value))
                    .related
                    .push(crate::Related { path, range: first_range, message: "first MCP with this name".to_owned() });
                return None;
            }
            self.mcp_names.push((name.value.clone(), name.range));
            Some(name)
        });
        if let Some(transport) = mcp.entry("transport") {
            // An empty value means the default, `http`.
            if !transport.value.is_null() && transport.value.as_str() != Some("http") {
                let range = Slot::of_entry(transport).range();
                let fix = self.rename_fix(transport.value.range, "http");
                let diagnostic = self.report(Code::InvalidValue, range, format!("{label}.transport must be http"));
                if transport.value.as_str().is_some() {
                    diagnostic.fixes.push(fix);
                }
                ok = false;
            }
        }
        let url = self.text_in(mcp, "url", &format!("{label}.url"), anchor).and_then(|url| {
            match url::Url::parse(&url.value) {
                Err(_) => {
                    self.report(Code::InvalidUrl, url.range, format!("{label}.url must be an absolute URL"));
                    None
                }
                Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => {
                    self.report(Code::InvalidUrl, url.range, format!("{label}.url must use http or https"));
                    None
                }
                Ok(_) => Some(url),
            }
        });
        let mut headers = Vec::new();
        if let Some(entry) = mcp.entry("headers") {
            if let Some(map) = self.record(Slot::of_entry(entry), &format!("{label}.headers")) {
                for header in &map.entries {
                    let value = self.text(Slot::of_entry(header), &format!("{label}.headers.{}", header.key));
                    match value {
                        Some(value) => headers.push((Spanned::new(header.key.clone(), header.key_range), value)),
                        None => ok = false,
                    }
                }
            } else {
                ok = false;
            }
        }
        match (name, url) {
            (Some(name), Some(url)) if ok => Some(Mcp { name, url, headers, range: item.range }),
            _ => None,
        }
    }

    fn env(&mut self, entry: &Entry) {
        let Some(env) = self.record(Slot::of_entry(entry), "env") else { return };
        for var in &env.entries {
            if !matches(env_name(), &var.key) {
                let upper = var.key.to_ascii_uppercase().replace('-', "_");
                let fix = matches(env_name(), &upper).then(|| self.rename_fix(var.key_range, &upper));
                let diagnostic = self.report(
                    Code::InvalidName,
                    var.key_range,
                    format!("Invalid environment variable name: {}", var.key),
                );
                if let Some(fix) = fix {
                    diagnostic.fixes.push(fix);
                }
                continue;
            }
            let label = format!("env.{}", var.key);
            let Some(declaration) = self.record(Slot::of_entry(var), &label) else { continue };
            self.check_keys(declaration, fields::ENV_FIELDS, &label);
            let required = self.boolean(declaration, "required", &format!("{label}.required"), true);
            self.manifest.env.push(EnvVar { name: Spanned::new(var.key.clone(), var.key_range), required });
        }
    }

    fn workspaces(&mut self, entry: &Entry) {
        let Some(workspaces) = self.record(Slot::of_entry(entry), "workspaces") else { return };
        for workspace in &workspaces.entries {
            if !matches(slug(), &workspace.key) || workspace.key == "primary" {
                self.report(
                    Code::InvalidName,
                    workspace.key_range,
                    format!("Invalid workspace name: {}", workspace.key),
                );
                continue;
            }
            let label = format!("workspaces.{}", workspace.key);
            let Some(declaration) = self.record(Slot::of_entry(workspace), &label) else { continue };
            self.check_keys(declaration, fields::WORKSPACE_FIELDS, &label);
            let required = self.boolean(declaration, "required", &format!("{label}.required"), true);
            let access = match declaration.entry("access") {
                None => Access::ReadOnly,
                Some(access) if access.value.is_null() => Access::ReadOnly,
                Some(access) => match access.value.as_str() {
                    Some("read-only") => Access::ReadOnly,
                    Some("read-write") => Access::ReadWrite,
                    other => {
                        let range = Slot::of_entry(access).range();
                        let fix = other
                            .and_then(|value| closest(value, fields::ACCESS_VALUES))
                            .map(|value| self.rename_fix(access.value.range, value));
                        let diagnostic = self.report(
                            Code::InvalidValue,
                            range,
                            format!("{label}.access must be read-only or read-write"),
                        );
                        if let Some(fix) = fix {
                            diagnostic.fixes.push(fix);
                        }
                        Access::ReadOnly
                    }
                },
            };
            let name = Spanned::new(workspace.key.clone(), workspace.key_range);
            self.manifest.workspaces.push(Workspace { name, required, access });
        }
    }

    fn runtimes(&mut self, entry: Option<&Entry>, anchor: TextRange) {
        let Some(entry) = entry else {
            // With spec 0 runtime fields present, `legacy-field-in-spec-1` already says where they must go.
            if !self.legacy_fields_present {
                self.report(Code::MissingField, anchor, "runtimes is required in spec 1");
            }
            return;
        };
        let Value::Mapping(runtimes) = &entry.value.value else {
            let range = Slot::of_entry(entry).range();
            self.report(Code::InvalidType, range, "runtimes must be an object");
            return;
        };
        if runtimes.entries.is_empty() {
            let range = Slot::of_entry(entry).range();
            self.report(Code::EmptyValue, range, "runtimes must declare at least one runtime");
            return;
        }
        for runtime in &runtimes.entries {
            let key = runtime.key.as_str();
            let Some(field) = fields::find(fields::RUNTIMES_FIELDS, key, 1) else {
                let absent: Vec<&str> =
                    fields::RUNTIME_PROVIDERS.iter().copied().filter(|p| runtimes.entry(p).is_none()).collect();
                let fix = closest(key, &absent).map(|name| self.rename_fix(runtime.key_range, name));
                let diagnostic = self.report(
                    Code::UnknownRuntimeProvider,
                    runtime.key_range,
                    format!("Unknown runtime provider: {key}. Known providers: local, docker, e2b, daytona"),
                );
                if let Some(fix) = fix {
                    diagnostic.fixes.push(fix);
                }
                continue;
            };
            let empty = Mapping::default();
            let config = match &runtime.value.value {
                Value::Mapping(mapping) => mapping,
                Value::Null => &empty,
                _ => {
                    let range = Slot::of_entry(runtime).range();
                    self.report(
                        Code::InvalidType,
                        range,
                        format!("runtimes.{key} must be an object or an empty value"),
                    );
                    continue;
                }
            };
            let fields::Shape::Object { fields: allowed, .. } = &field.shape else { continue };
            self.check_keys(config, allowed, &format!("runtimes.{key}"));
            let image_label = format!("runtimes.{key}.image");
            let mut result = Runtime {
                provider: Spanned::new(key.to_owned(), runtime.key_range),
                image: None,
                host_engine: false,
                class: None,
                image_label: image_label.clone(),
            };
            let mut ok = true;
            if matches!(key, "docker" | "e2b" | "daytona") {
                match config.entry("image") {
                    Some(image) => {
                        result.image = self.image(image, "image");
                        ok &= result.image.is_some();
                    }
                    None if key != "daytona" => {
                        self.report(Code::MissingImage, runtime.key_range, format!("{image_label} is required"));
                        ok = false;
                    }
                    None => {}
                }
            }
            if key == "docker" {
                if let Some(docker) = config.entry("docker") {
                    match self.docker(docker, "docker") {
                        Some(host) => result.host_engine = host,
                        None => ok = false,
                    }
                }
            }
            if key == "daytona" {
                result.class = self.daytona_class(config, runtime.key_range);
                ok &= result.class.is_some();
            }
            if ok {
                self.manifest.runtimes.push(result);
            }
        }
    }

    fn daytona_class(&mut self, config: &Mapping, anchor: TextRange) -> Option<Spanned<String>> {
        let class = self.text_in(config, "class", "runtimes.daytona.class", anchor)?;
        if fields::DAYTONA_CLASSES.contains(&class.value.as_str()) {
            return Some(class);
        }
        let fix = closest(&class.value, fields::DAYTONA_CLASSES).map(|value| self.rename_fix(class.range, value));
        let diagnostic = self.report(
            Code::InvalidValue,
            class.range,
            "runtimes.daytona.class must be one of linux, windows, gpu, macos",
        );
        if let Some(fix) = fix {
            diagnostic.fixes.push(fix);
        }
        None
    }

    /// An image: a published reference or a build object. `label` is `image` in both specs (the reference
    /// uses un-prefixed labels for value checks).
    fn image(&mut self, entry: &Entry, label: &str) -> Option<Image> {
        match &entry.value.value {
            Value::Mapping(build) => {
                self.check_keys(build, fields::IMAGE_BUILD_FIELDS, label);
                let dockerfile = self.text_in(build, "build", &format!("{label}.build"), entry.key_range);
                let context = match build.entry("context") {
                    Some(context) => match self.text(Slot::of_entry(context), &format!("{label}.context")) {
                        Some(context) => Some(context),
                        None => return None,
                    },
                    None => None,
                };
                Some(Image::Build { build: dockerfile?, context })
            }
            Value::String(_) => self.text(Slot::of_entry(entry), label).map(Image::Published),
            _ => {
                // Anything that is not a string goes through the build-object check, as in the reference.
                let range = Slot::of_entry(entry).range();
                self.report(Code::InvalidType, range, format!("{label} must be an object"));
                None
            }
        }
    }

    /// `docker: {engine: {mode: host}}`. Returns whether host mode is declared, or `None` when invalid.
    fn docker(&mut self, entry: &Entry, label: &str) -> Option<bool> {
        let docker = self.record(Slot::of_entry(entry), label)?;
        self.check_keys(docker, fields::DOCKER_FIELDS, label);
        let Some(engine) = docker.entry("engine") else { return Some(false) };
        let engine_label = format!("{label}.engine");
        let engine_map = self.record(Slot::of_entry(engine), &engine_label)?;
        self.check_keys(engine_map, fields::DOCKER_ENGINE_FIELDS, &engine_label);
        match engine_map.entry("mode") {
            Some(mode) if mode.value.as_str() == Some("host") => Some(true),
            Some(mode) => {
                let range = Slot::of_entry(mode).range();
                self.report(Code::InvalidValue, range, format!("{engine_label}.mode must be host"));
                None
            }
            None => {
                self.report(Code::MissingField, engine.key_range, format!("{engine_label}.mode must be host"));
                None
            }
        }
    }

    fn spec0_runtime(&mut self, top: &Mapping, anchor: TextRange) {
        let runtime = self.text_field(top, "runtime", anchor);
        let mut result = runtime.map(|provider| Runtime {
            provider,
            image: None,
            host_engine: false,
            class: None,
            image_label: "image".to_owned(),
        });
        let mut ok = true;
        if let Some(docker) = top.entry("docker") {
            match self.docker(docker, "docker") {
                Some(host) => {
                    if let Some(result) = result.as_mut() {
                        if host && result.provider.value != "docker" {
                            let range = docker.key_range;
                            self.report(
                                Code::DockerEngineRequiresDocker,
                                range,
                                "docker.engine requires runtime: docker",
                            );
                            ok = false;
                        }
                        result.host_engine = host;
                    }
                }
                None => ok = false,
            }
        }
        if let Some(image) = top.entry("image") {
            let image = self.image(image, "image");
            ok &= image.is_some();
            if let Some(result) = result.as_mut() {
                result.image = image;
            }
        }
        if let (Some(result), true) = (result, ok) {
            self.manifest.runtimes.push(result);
        }
    }

    fn requirements(&mut self, entry: &Entry) {
        let Some(requirements) = self.record(Slot::of_entry(entry), "requirements") else { return };
        self.check_keys(requirements, fields::REQUIREMENTS_FIELDS, "requirements");
        let mut result = Requirements::default();
        if let Some(os) = requirements.entry("os") {
            result.os = self.enum_list(os, "requirements.os", fields::OS_VALUES);
        }
        if let Some(arch) = requirements.entry("arch") {
            result.arch = self.enum_list(arch, "requirements.arch", fields::ARCH_VALUES);
        }
        if let Some(cpu) = requirements.entry("cpu") {
            match cpu.value.value {
                Value::Number(n) if n.fract() == 0.0 && (1.0..=9_007_199_254_740_991.0).contains(&n) => {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let count = n as u64;
                    result.cpu = Some(count);
                }
                _ => {
                    let range = Slot::of_entry(cpu).range();
                    self.report(Code::InvalidValue, range, "requirements.cpu must be a positive integer");
                }
            }
        }
        result.gpu = self.boolean(requirements, "gpu", "requirements.gpu", false);
        for (key, slot) in [("memory_gb", &mut result.memory_gb), ("disk_gb", &mut result.disk_gb)] {
            if let Some(value) = requirements.entry(key) {
                match value.value.value {
                    Value::Number(n) if n.is_finite() && n > 0.0 => *slot = Some(n),
                    _ => {
                        let range = Slot::of_entry(value).range();
                        self.report(Code::InvalidValue, range, format!("requirements.{key} must be a positive number"));
                    }
                }
            }
        }
        self.manifest.requirements = result;
    }

    fn enum_list(&mut self, entry: &Entry, label: &str, allowed: &[&str]) -> Option<Vec<String>> {
        let items = match &entry.value.value {
            Value::Sequence(items) if !items.is_empty() => items,
            Value::Sequence(_) => {
                let range = Slot::of_entry(entry).range();
                self.report(Code::EmptyValue, range, format!("{label} must be a non-empty array"));
                return None;
            }
            _ => {
                let range = Slot::of_entry(entry).range();
                self.report(Code::InvalidType, range, format!("{label} must be a non-empty array"));
                return None;
            }
        };
        let mut values: Vec<(String, TextRange)> = Vec::new();
        let mut ok = true;
        for item in items {
            match item.as_str().filter(|value| allowed.contains(value)) {
                Some(value) => {
                    if let Some((_, first)) = values.iter().find(|(seen, _)| seen == value) {
                        let (path, first) = (self.path.clone(), *first);
                        self.report(Code::DuplicateName, item.range, format!("{label} must not repeat an entry"))
                            .related
                            .push(crate::Related { path, range: first, message: "first listed here".to_owned() });
                        ok = false;
                    } else {
                        values.push((value.to_owned(), item.range));
                    }
                }
                None => {
                    let fix = item.as_str().and_then(|v| closest(v, allowed)).map(|v| self.rename_fix(item.range, v));
                    let message = format!("{label} entries must be one of {}", allowed.join(", "));
                    let diagnostic = self.report(Code::InvalidValue, item.range, message);
                    if let Some(fix) = fix {
                        diagnostic.fixes.push(fix);
                    }
                    ok = false;
                }
            }
        }
        ok.then(|| values.into_iter().map(|(value, _)| value).collect())
    }

    /// Problems the reference finds only at smoke or run time, reported early.
    fn runtime_problems(&mut self, top: &Mapping) {
        let runner = self.manifest.runner.clone();
        if let Some(runner) = &runner {
            if !fields::RUNNERS.contains(&runner.value.as_str()) {
                let fix = closest(&runner.value, fields::RUNNERS).map(|name| self.rename_fix(runner.range, name));
                let diagnostic =
                    self.report(Code::UnsupportedRunner, runner.range, format!("Unsupported runner: {}", runner.value));
                if let Some(fix) = fix {
                    diagnostic.fixes.push(fix);
                }
            }
        }
        let runner_name = runner.as_ref().map(|r| r.value.as_str());
        // MCP header references.
        let env_declared = top.entry("env").is_some_and(|e| matches!(e.value.value, Value::Mapping(_)));
        let mcps = self.manifest.mcps.clone();
        for mcp in &mcps {
            let mut claude_disabled = None;
            for (_, value) in &mcp.headers {
                for (name, range) in self.env_references(value) {
                    let declared = self.manifest.env_var(&name).is_some();
                    let invalid_env_entry = env_declared
                        && top
                            .entry("env")
                            .and_then(|e| e.value.as_mapping())
                            .is_some_and(|m| m.entry(&name).is_some());
                    if !declared && !invalid_env_entry {
                        let fix = self.declare_env_fix(top, &name);
                        let diagnostic = self.report(
                            Code::UndeclaredEnvReference,
                            range,
                            format!("MCP {} references undeclared environment variable: {name}", mcp.name.value),
                        );
                        diagnostic.fixes.extend(fix);
                    }
                    if runner_name == Some("claude-code")
                        && (name.starts_with("CLAUDE") || name.starts_with("ANTHROPIC_"))
                    {
                        claude_disabled.get_or_insert(range);
                    }
                }
            }
            if let Some(range) = claude_disabled {
                self.report(
                    Code::ClaudeMcpDisabled,
                    range,
                    format!(
                        "MCP {} is disabled because Claude Code does not expand Claude or Anthropic environment references in MCP headers",
                        mcp.name.value
                    ),
                );
            }
        }
        if runner_name == Some("pi") {
            if let Some(entry) = top.entry("mcps") {
                if entry.value.as_sequence().is_some_and(|items| !items.is_empty()) {
                    self.report(
                        Code::PiMcpUnsupported,
                        entry.key_range,
                        "Pi does not provide a native MCP transport. This Workbench requires an explicit Pi extension before it can run.",
                    );
                }
            }
        }
        let runtimes = self.manifest.runtimes.clone();
        for runtime in &runtimes {
            match runtime.provider.value.as_str() {
                "daytona" => {
                    if let Some(class) = &runtime.class {
                        if class.value != "linux" {
                            self.report(
                                Code::DaytonaClassUnsupported,
                                class.range,
                                format!(
                                    "The reference engine runs only the linux Daytona class; a {} sandbox cannot run yet",
                                    class.value
                                ),
                            );
                        }
                    }
                    match &runtime.image {
                        Some(Image::Published(_)) => {}
                        Some(Image::Build { build, .. }) => {
                            self.report(
                                Code::DaytonaImageRequired,
                                build.range,
                                "runtimes.daytona.image must name a published image to run; Daytona cannot build one",
                            );
                        }
                        None => {
                            self.report(
                                Code::DaytonaImageRequired,
                                runtime.provider.range,
                                "runtimes.daytona.image is required to run; the sandbox is created from this entry's own published image",
                            );
                        }
                    }
                }
                "local" if self.spec == 0 => {
                    if let Some(image) = top.entry("image") {
                        self.report(
                            Code::LocalRuntimeImage,
                            image.key_range,
                            "image is not supported with the local runtime",
                        );
                    }
                }
                "local" | "docker" | "e2b" => {}
                other => {
                    let message = format!("Unsupported runtime: {other}");
                    let fix = closest(other, fields::RUNTIME_PROVIDERS)
                        .map(|name| self.rename_fix(runtime.provider.range, name));
                    let diagnostic = self.report(Code::UnsupportedRuntime, runtime.provider.range, message);
                    if let Some(fix) = fix {
                        diagnostic.fixes.push(fix);
                    }
                }
            }
        }
        self.model_routes();
    }

    fn declare_env_fix(&self, top: &Mapping, name: &str) -> Option<Fix> {
        let title = format!("Declare `{name}` in env");
        let valid_name = matches(env_name(), name);
        if !valid_name {
            return None;
        }
        match top.entry("env") {
            Some(env) => match &env.value.value {
                Value::Mapping(map) if env.value.style == wb_syntax::Style::Block && !map.entries.is_empty() => {
                    self.append_entries_fix(map, title, &[format!("{name}:"), "  required: true".to_owned()])
                }
                _ => None,
            },
            None => self.append_entries_fix(
                top,
                title,
                &["env:".to_owned(), format!("  {name}:"), "    required: true".to_owned()],
            ),
        }
    }

    /// `${NAME}` references in a header value, with ranges inside the source when they can be found there.
    fn env_references(&self, value: &Spanned<String>) -> Vec<(String, TextRange)> {
        let source = self.text.get(value.range.as_range()).unwrap_or_default();
        let Some(pattern) = env_reference() else { return Vec::new() };
        pattern
            .captures_iter(&value.value)
            .filter_map(|captures| {
                let whole = captures.get(0)?.as_str();
                let name = captures.get(1)?.as_str().to_owned();
                let range = source.find(whole).map_or(value.range, |at| {
                    TextRange::new(value.range.start + at, value.range.start + at + whole.len())
                });
                Some((name, range))
            })
            .collect()
    }

    fn model_routes(&mut self) {
        let Some(model) = self.manifest.model.clone() else { return };
        let catalog = self.catalog;
        for route in &model.routes {
            // A route that names its own native model needs no catalog entry for its provider.
            if route.model.is_none() && catalog.provider(&route.provider.value).is_none() {
                self.report(
                    Code::UnknownModelProvider,
                    route.provider.range,
                    format!("Unknown model provider: {}", route.provider.value),
                );
            }
        }
        match catalog.model(&model.id.value) {
            Some(entry) => {
                for route in &model.routes {
                    let known = catalog.provider(&route.provider.value).is_some();
                    if known && route.model.is_none() && !entry.providers.contains_key(&route.provider.value) {
                        self.report(
                            Code::ProviderDoesNotServeModel,
                            route.provider.range,
                            format!("Provider {} does not serve model {}", route.provider.value, model.id.value),
                        );
                    }
                }
            }
            None => {
                let explicit =
                    model.routes_declared && !model.routes.is_empty() && model.routes.iter().all(|r| r.model.is_some());
                if !explicit || self.manifest.runner_config.is_none() {
                    self.report(
                        Code::UnknownModel,
                        model.id.range,
                        format!(
                            "Unknown model {}. Unknown models require explicit route model IDs and packaged runner_config.",
                            model.id.value
                        ),
                    );
                }
            }
        }
    }
}

impl Diagnostic {
    fn with_tag_mut(&mut self, tag: DiagnosticTag) -> &mut Diagnostic {
        self.tags.push(tag);
        self
    }
}

/// The allowed names a mapping does not use yet (the candidates of "did you mean"), computed once per mapping.
fn absent_names<'n>(allowed: &[&'n str], mapping: &Mapping) -> Vec<&'n str> {
    let present: std::collections::HashSet<&str> = mapping.entries.iter().map(|e| e.key.as_str()).collect();
    allowed.iter().copied().filter(|name| !present.contains(name)).collect()
}

/// JavaScript's `String.prototype.trim`: its whitespace set differs from Rust's (`U+FEFF` is whitespace,
/// `U+0085` is not), and the reference engine trims with JavaScript.
pub(crate) fn js_trim(text: &str) -> &str {
    fn is_js_space(ch: char) -> bool {
        matches!(
            ch,
            '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
        )
    }
    text.trim_matches(is_js_space)
}

/// The closest candidate within a small edit distance, for "did you mean" fixes.
pub(crate) fn closest<'c>(value: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let value = value.to_ascii_lowercase();
    let limit = if value.len() <= 3 { 1 } else { 2 };
    candidates
        .iter()
        .map(|candidate| (edit_distance(&value, candidate), *candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 2 {
        return usize::MAX;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let value = (previous[j] + cost).min(previous[j + 1] + 1).min(current[j] + 1);
            current.push(value);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_pattern_compiles() {
        for pattern in [
            super::semver(),
            super::model_id(),
            super::provider_name(),
            super::slug(),
            super::env_name(),
            super::env_reference(),
        ] {
            assert!(pattern.is_some());
        }
    }

    #[test]
    fn trims_like_javascript() {
        assert_eq!(super::js_trim("\u{feff} a \u{3000}"), "a");
        assert_eq!(super::js_trim("\u{85}a"), "\u{85}a");
    }

    #[test]
    fn closest_suggests_small_typos_only() {
        assert_eq!(super::closest("desciption", &["description", "name"]), Some("description"));
        assert_eq!(super::closest("zzz", &["description", "name"]), None);
    }
}
