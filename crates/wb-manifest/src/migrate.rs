//! Spec 0 to spec 1 as minimal text edits: `spec: 0` becomes `spec: 1`, and `runtime`, `image` and
//! `docker` move under `runtimes.<runtime>`. Comments, key order and formatting elsewhere are untouched.

use std::path::Path;

use wb_syntax::{Entry, Mapping, Style, TextRange, Value};

use crate::diagnostic::{Fix, TextEdit};
use crate::fields::RUNTIME_PROVIDERS;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    #[error("the manifest does not parse as a YAML mapping")]
    NotAMapping,
    #[error("the manifest is written in flow style; migrate it by hand")]
    FlowStyle,
    #[error("the spec 0 manifest declares no valid runtime")]
    NoRuntime,
    #[error("runtime {0} is not a known provider (local, docker, e2b, daytona)")]
    UnknownRuntime(String),
    #[error("the local runtime takes no image; remove image first")]
    LocalImage,
    #[error("the manifest already declares runtimes")]
    RuntimesPresent,
}

/// One replacement in the manifest text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub range: TextRange,
    pub new_text: String,
}

/// The edits that turn a spec 0 manifest into spec 1 (also used for a spec 1 manifest that still carries spec
/// 0 fields). An empty list means there is nothing to migrate.
pub fn migration_edits(text: &str) -> Result<Vec<Edit>, MigrateError> {
    let parsed = wb_syntax::parse_str(text);
    let Some(root) = parsed.root.as_ref() else { return Err(MigrateError::NotAMapping) };
    let Value::Mapping(top) = &root.value else { return Err(MigrateError::NotAMapping) };
    let spec0 = top.get("spec").is_some_and(|spec| matches!(spec.value, Value::Number(n) if n == 0.0));
    let legacy: Vec<&Entry> = ["runtime", "image", "docker"].iter().filter_map(|key| top.entry(key)).collect();
    if !spec0 && legacy.is_empty() {
        return Ok(Vec::new());
    }
    if root.style == Style::Flow {
        return Err(MigrateError::FlowStyle);
    }
    if top.entry("runtimes").is_some() {
        return Err(MigrateError::RuntimesPresent);
    }
    let runtime = top.entry("runtime").ok_or(MigrateError::NoRuntime)?;
    let provider = runtime.value.as_str().map(str::trim).filter(|p| !p.is_empty()).ok_or(MigrateError::NoRuntime)?;
    if !RUNTIME_PROVIDERS.contains(&provider) {
        return Err(MigrateError::UnknownRuntime(provider.to_owned()));
    }
    let image = top.entry("image");
    let docker = top.entry("docker");
    if provider == "local" && image.is_some() {
        return Err(MigrateError::LocalImage);
    }
    let unit = indent_unit(text, top);
    let mut edits = Vec::new();
    if spec0 {
        if let Some(spec) = top.entry("spec") {
            edits.push(Edit { range: spec.value.range, new_text: "1".to_owned() });
        }
    }
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    // A comment after `runtime: X` stays with the provider's line.
    let comment = trailing_comment(text, runtime).map(|c| format!(" {c}")).unwrap_or_default();
    let mut block = format!("runtimes:{newline}");
    let moved: Vec<&Entry> = [image, docker].into_iter().flatten().collect();
    if moved.is_empty() {
        block.push_str(&format!("{unit}{provider}: {{}}{comment}{newline}"));
    } else {
        block.push_str(&format!("{unit}{provider}:{comment}{newline}"));
        let prefix = unit.repeat(2);
        for entry in &moved {
            let span = entry_lines(text, entry);
            for line in text[span.as_range()].split_inclusive('\n') {
                if line.trim().is_empty() {
                    block.push_str(line);
                } else {
                    block.push_str(&prefix);
                    block.push_str(line);
                }
            }
            if !block.ends_with('\n') {
                block.push_str(newline);
            }
        }
    }
    let runtime_span = entry_lines(text, runtime);
    edits.push(Edit { range: runtime_span, new_text: block });
    for entry in moved {
        edits.push(Edit { range: entry_lines(text, entry), new_text: String::new() });
    }
    edits.sort_by_key(|edit| edit.range.start);
    if edits.windows(2).any(|pair| pair[0].range.end > pair[1].range.start) {
        return Err(MigrateError::FlowStyle);
    }
    Ok(edits)
}

/// Applies non-overlapping edits.
pub fn apply_edits(text: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|edit| edit.range.start);
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for edit in sorted {
        if edit.range.start < cursor || edit.range.end > text.len() {
            continue;
        }
        out.push_str(&text[cursor..edit.range.start]);
        out.push_str(&edit.new_text);
        cursor = edit.range.end;
    }
    out.push_str(&text[cursor..]);
    out
}

/// The migrated text, or `None` when there is nothing to migrate.
pub fn migrate_text(text: &str) -> Result<Option<String>, MigrateError> {
    let edits = migration_edits(text)?;
    if edits.is_empty() { Ok(None) } else { Ok(Some(apply_edits(text, &edits))) }
}

/// The migration as a quick fix, when one applies.
pub(crate) fn migration_fix(path: &Path, text: &str) -> Option<Fix> {
    let edits = migration_edits(text).ok().filter(|edits| !edits.is_empty())?;
    Some(Fix {
        title: "Migrate to spec 1".to_owned(),
        creates: Vec::new(),
        edits: edits
            .into_iter()
            .map(|edit| TextEdit { path: path.to_owned(), range: edit.range, new_text: edit.new_text })
            .collect(),
    })
}

/// The whole lines an entry occupies, from its key's line start through the newline after its value.
fn entry_lines(text: &str, entry: &Entry) -> TextRange {
    let start = text[..entry.key_range.start].rfind('\n').map_or(0, |at| at + 1);
    let end_of_value = entry.range().end.max(entry.key_range.end);
    let end = text[end_of_value..].find('\n').map_or(text.len(), |at| end_of_value + at + 1);
    TextRange::new(start, end)
}

/// The comment after an entry's value on its last line (`# ...`), if any.
fn trailing_comment<'t>(text: &'t str, entry: &Entry) -> Option<&'t str> {
    let end = entry.range().end.max(entry.key_range.end);
    let line_end = text[end..].find(['\n', '\r']).map_or(text.len(), |at| end + at);
    let rest = text[end..line_end].trim();
    rest.starts_with('#').then_some(rest)
}

/// The indentation step the document uses for nested blocks (two spaces when it has none).
fn indent_unit(text: &str, top: &Mapping) -> String {
    for entry in &top.entries {
        if let Value::Mapping(inner) = &entry.value.value {
            if entry.value.style == Style::Block {
                if let Some(first) = inner.entries.first() {
                    let line_start = text[..first.key_range.start].rfind('\n').map_or(0, |at| at + 1);
                    let indent = &text[line_start..first.key_range.start];
                    if !indent.is_empty() && indent.chars().all(|ch| ch == ' ') {
                        return indent.to_owned();
                    }
                }
            }
        }
    }
    "  ".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_runtime_image_and_docker_keeping_comments() {
        let text = "# header\nspec: 0 # legacy\nname: demo\nruntime: docker # where\nimage:\n  build: ./Dockerfile\n  context: .\ndocker:\n  engine:\n    mode: host\ntools: [cargo]\n";
        let migrated = migrate_text(text).expect("migrates").expect("changes");
        assert_eq!(
            migrated,
            "# header\nspec: 1 # legacy\nname: demo\nruntimes:\n  docker: # where\n    image:\n      build: ./Dockerfile\n      context: .\n    docker:\n      engine:\n        mode: host\ntools: [cargo]\n"
        );
    }

    #[test]
    fn local_runtime_becomes_empty_object() {
        let migrated = migrate_text("spec: 0\nruntime: local\n").expect("migrates");
        assert_eq!(migrated.as_deref(), Some("spec: 1\nruntimes:\n  local: {}\n"));
    }

    #[test]
    fn spec_1_is_left_alone_and_local_image_refused() {
        assert_eq!(migrate_text("spec: 1\nruntimes: {local: {}}\n"), Ok(None));
        assert_eq!(migrate_text("spec: 0\nruntime: local\nimage: x\n"), Err(MigrateError::LocalImage));
    }
}
