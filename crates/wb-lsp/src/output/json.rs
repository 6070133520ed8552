//! `--format json`: one document with every package and diagnostic (the shape is documented in the README).
//!
//! The document is written straight from borrowed structs (fields in the documented order), not built as a
//! `serde_json::Value` first: with hundreds of diagnostics that tree, its maps and its copies of every string
//! cost more than the checks.

use serde::Serialize;

use super::{Checked, FixItem, Location, Package, Position};

#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    packages: Vec<PackageOut<'a>>,
    summary: Summary,
}

#[derive(Serialize)]
struct Summary {
    packages: usize,
    errors: usize,
    warnings: usize,
}

#[derive(Serialize)]
struct PackageOut<'a> {
    path: &'a str,
    name: &'a str,
    valid: bool,
    diagnostics: Vec<DiagnosticOut<'a>>,
}

#[derive(Serialize)]
struct DiagnosticOut<'a> {
    code: &'static str,
    severity: &'static str,
    message: &'a str,
    path: &'a str,
    range: Range,
    fixes: Vec<FixOut<'a>>,
}

#[derive(Serialize)]
struct Range {
    start: Position,
    end: Position,
}

impl Range {
    fn of(location: &Location) -> Range {
        Range { start: location.start, end: location.end }
    }
}

/// A fix: its edits use the diagnostic's paths and 1-based line/column ranges.
#[derive(Serialize)]
struct FixOut<'a> {
    title: &'a str,
    safe: bool,
    creates: Vec<Create<'a>>,
    edits: Vec<Edit<'a>>,
}

#[derive(Serialize)]
struct Create<'a> {
    path: &'a str,
    contents: &'a str,
}

#[derive(Serialize)]
struct Edit<'a> {
    path: &'a str,
    range: Range,
    #[serde(rename = "newText")]
    new_text: &'a str,
}

fn fix(fix: &FixItem) -> FixOut<'_> {
    FixOut {
        title: &fix.title,
        safe: fix.safe,
        creates: fix.creates.iter().map(|(path, contents)| Create { path, contents }).collect(),
        edits: fix
            .edits
            .iter()
            .map(|(location, new_text)| Edit { path: &location.path, range: Range::of(location), new_text })
            .collect(),
    }
}

fn package(package: &Package) -> PackageOut<'_> {
    let diagnostics = package
        .items
        .iter()
        .map(|item| DiagnosticOut {
            code: item.code.as_str(),
            severity: item.severity.as_str(),
            message: &item.message,
            path: &item.location.path,
            range: Range::of(&item.location),
            fixes: item.fixes.iter().map(fix).collect(),
        })
        .collect();
    PackageOut { path: &package.path, name: &package.name, valid: package.valid, diagnostics }
}

pub fn render(checked: &Checked<'_>) -> String {
    let document = Document {
        version: 1,
        packages: checked.packages.iter().map(package).collect(),
        summary: Summary { packages: checked.packages.len(), errors: checked.errors, warnings: checked.warnings },
    };
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}
