//! `--format sarif`: SARIF 2.1.0 for GitHub code scanning and other analysis viewers.

use serde_json::{Value, json};
use wb_manifest::{Code, Severity};

use super::{Checked, Location, docs_url};

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Information | Severity::Hint => "note",
    }
}

fn location(location: &Location) -> Value {
    json!({
        "physicalLocation": {
            "artifactLocation": {"uri": uri(&location.path)},
            "region": {
                "startLine": location.start.line,
                "startColumn": location.start.column,
                "endLine": location.end.line,
                "endColumn": location.end.column,
            }
        }
    })
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
