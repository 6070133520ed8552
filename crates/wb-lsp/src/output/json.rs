//! `--format json`: one document with every package and diagnostic (the shape is documented in the README).

use serde_json::json;

use super::{Checked, FixItem, Location};

fn range(location: &Location) -> serde_json::Value {
    json!({
        "start": {"line": location.start.line, "column": location.start.column},
        "end": {"line": location.end.line, "column": location.end.column},
    })
}

/// A fix: its edits use the diagnostic's paths and 1-based line/column ranges.
fn fix(fix: &FixItem) -> serde_json::Value {
    let edits: Vec<serde_json::Value> = fix
        .edits
        .iter()
        .map(|(location, new_text)| json!({"path": location.path, "range": range(location), "newText": new_text}))
        .collect();
    let creates: Vec<serde_json::Value> =
        fix.creates.iter().map(|(path, contents)| json!({"path": path, "contents": contents})).collect();
    json!({"title": fix.title, "safe": fix.safe, "creates": creates, "edits": edits})
}

pub fn render(checked: &Checked<'_>) -> String {
    let packages: Vec<serde_json::Value> = checked
        .packages
        .iter()
        .map(|package| {
            let diagnostics: Vec<serde_json::Value> = package
                .items
                .iter()
                .map(|item| {
                    json!({
                        "code": item.code.as_str(),
                        "severity": item.severity.as_str(),
                        "message": item.message,
                        "path": item.location.path,
                        "range": range(&item.location),
                        "fixes": item.fixes.iter().map(fix).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({"path": package.path, "name": package.name, "valid": package.valid, "diagnostics": diagnostics})
        })
        .collect();
    let document = json!({
        "version": 1,
        "packages": packages,
        "summary": {"packages": checked.packages.len(), "errors": checked.errors, "warnings": checked.warnings},
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}
