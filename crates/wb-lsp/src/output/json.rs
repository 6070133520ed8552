//! `--format json`: one document with every package and diagnostic (the shape is documented in the README).

use serde_json::json;

use super::{Checked, Location};

fn range(location: &Location) -> serde_json::Value {
    json!({
        "start": {"line": location.start.line, "column": location.start.column},
        "end": {"line": location.end.line, "column": location.end.column},
    })
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
