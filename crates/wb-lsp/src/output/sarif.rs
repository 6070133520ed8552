//! `--format sarif`: SARIF 2.1.0 for GitHub code scanning and other analysis viewers.

use serde_json::{Value, json};
use wb_manifest::{Code, Severity};

use super::{Checked, FixItem, Location, docs_url};

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Information | Severity::Hint => "note",
    }
}

fn region(location: &Location) -> Value {
    json!({
        "startLine": location.start.line,
        "startColumn": location.start.column,
        "endLine": location.end.line,
        "endColumn": location.end.column,
    })
}

fn location(location: &Location) -> Value {
    json!({
        "physicalLocation": {
            "artifactLocation": {"uri": uri(&location.path)},
            "region": region(location),
        }
    })
}

/// A SARIF `fix`: one `artifactChange` per file, its `replacements` in the result's line/column convention.
/// A file the fix creates is an insertion at its start. `None` for a fix with nothing to change.
fn fix(fix: &FixItem) -> Option<Value> {
    let mut changes: Vec<(String, Vec<Value>)> = Vec::new();
    let mut add = |path: &str, replacement: Value| match changes.iter_mut().find(|(p, _)| p == path) {
        Some((_, replacements)) => replacements.push(replacement),
        None => changes.push((path.to_owned(), vec![replacement])),
    };
    for (path, contents) in &fix.creates {
        let start = json!({"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1});
        add(path, json!({"deletedRegion": start, "insertedContent": {"text": contents}}));
    }
    for (location, new_text) in &fix.edits {
        add(&location.path, json!({"deletedRegion": region(location), "insertedContent": {"text": new_text}}));
    }
    if changes.is_empty() {
        return None;
    }
    let artifact_changes: Vec<Value> = changes
        .into_iter()
        .map(|(path, replacements)| json!({"artifactLocation": {"uri": uri(&path)}, "replacements": replacements}))
        .collect();
    Some(json!({"description": {"text": fix.title}, "artifactChanges": artifact_changes}))
}

/// A relative URI reference for a path (percent-encoding what URIs do not allow).
fn uri(path: &str) -> String {
    let mut out = String::new();
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => out.push(char::from(byte)),
            b'\\' => out.push('/'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    if path.starts_with('/') { format!("file://{out}") } else { out }
}

pub fn render(checked: &Checked<'_>) -> String {
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|code| {
            json!({
                "id": code.as_str(),
                "shortDescription": {"text": code.summary()},
                "helpUri": docs_url(*code),
                "defaultConfiguration": {"level": level(code.severity())},
            })
        })
        .collect();
    let results: Vec<Value> = checked
        .packages
        .iter()
        .flat_map(|package| &package.items)
        .map(|item| {
            let rule_index = Code::ALL.iter().position(|code| *code == item.code).unwrap_or_default();
            let mut result = json!({
                "ruleId": item.code.as_str(),
                "ruleIndex": rule_index,
                "level": level(item.severity),
                "message": {"text": item.message},
                "locations": [location(&item.location)],
            });
            let fixes: Vec<Value> = item.fixes.iter().filter_map(fix).collect();
            if let (false, Value::Object(map)) = (fixes.is_empty(), &mut result) {
                map.insert("fixes".into(), Value::Array(fixes));
            }
            if !item.related.is_empty() {
                let related: Vec<Value> = item
                    .related
                    .iter()
                    .enumerate()
                    .map(|(id, (related, message))| {
                        let mut value = location(related);
                        if let Value::Object(map) = &mut value {
                            map.insert("id".into(), json!(id));
                            map.insert("message".into(), json!({"text": message}));
                        }
                        value
                    })
                    .collect();
                if let Value::Object(map) = &mut result {
                    map.insert("relatedLocations".into(), Value::Array(related));
                }
            }
            result
        })
        .collect();
    let document = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "wb-lsp",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/wb-lsp/wb-lsp",
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}
