//! The full check of one manifest given as bytes: its size, its YAML, the manifest rules and the package's
//! files. The entry points (`check/mod.rs`) call it with the migration fix to offer; a migration's guard
//! (`migrate.rs`) calls it to check the migrated text.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use wb_syntax::{SyntaxErrorKind, TextRange};

use super::PackageReport;
use crate::catalog::ModelCatalog;
use crate::diagnostic::{Code, Diagnostic, Fix, Severity, TextEdit};
use crate::fs::FileSystem;
use crate::limits::MAX_MANIFEST_BYTES;
use crate::package::{PackageChecks, repository_root};

/// What a check adds to a manifest's diagnostics before they are sorted: the "Migrate to spec 1" fix (the
/// check's entry points, `check/mod.rs`), or nothing (checking a migration's result, so the migration guard
/// never recurses).
pub(crate) type Offer<'a> = Option<&'a dyn Fn(&str, &mut [Diagnostic])>;

/// The full check of one manifest's bytes (size, YAML, manifest rules, package files), `offer` adding what it
/// adds.
pub(crate) fn check_bytes(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    bytes: &[u8],
    catalog: &ModelCatalog,
    offer: Offer<'_>,
) -> PackageReport {
    // Every "did you mean" of one check draws on one budget (a `return` below ends the pass's closure).
    crate::rules::suggestions::in_pass(|| {
        let package_dir = manifest_path.parent().map(Path::to_path_buf).unwrap_or_default();
        if bytes.len() > MAX_MANIFEST_BYTES {
            return PackageReport::problem(manifest_path, Code::FileTooLarge, too_large_message(bytes.len() as u64));
        }
        let parse = fs.cached_parse(manifest_path, bytes).unwrap_or_else(|| Arc::new(wb_syntax::parse(bytes)));
        let mut diagnostics: Vec<Diagnostic> =
            parse.errors.iter().map(|error| syntax_diagnostic(manifest_path, &parse.text, error)).collect();
        let fatal_syntax = parse.errors.iter().any(|e| e.kind != SyntaxErrorKind::ByteOrderMark);
        let (manifest, rule_diagnostics) = crate::rules::check_manifest(manifest_path, &parse, catalog);
        // A document that failed to parse is partial: its missing fields are a consequence, not a problem.
        let partial = parse.errors.iter().any(|e| {
            use SyntaxErrorKind as K;
            matches!(e.kind, K::Syntax | K::Tab | K::TooDeep | K::TooManyNodes)
        });
        diagnostics.extend(rule_diagnostics.into_iter().filter(|d| !(partial && d.code == Code::MissingField)));
        let root = repository_root(manifest_path);
        let anchor = parse
            .root
            .as_ref()
            .and_then(|root| root.as_mapping())
            .and_then(|m| m.entries.first())
            .map_or(TextRange::empty(0), |e| e.key_range);
        if root.is_none() {
            diagnostics.push(Diagnostic::new(
                Code::OutsideWorkbenchesDirectory,
                manifest_path,
                anchor,
                "Workbench must live beneath a .workbenches directory",
            ));
        }
        let mut checks = PackageChecks {
            fs,
            manifest_path,
            manifest_parse: &parse,
            package_dir: &package_dir,
            root: root.as_deref(),
            diagnostics: Vec::new(),
            sources: Vec::new(),
            real_boundaries: Default::default(),
            skill_files: Default::default(),
            siblings: Default::default(),
            dockerfiles: Default::default(),
            prose_files: Default::default(),
            omitted: Default::default(),
        };
        checks.run(&manifest);
        diagnostics.extend(checks.diagnostics);
        if let Some(offer) = offer {
            offer(&parse.text, &mut diagnostics);
        }
        let mut sources = BTreeMap::new();
        sources.insert(manifest_path.to_owned(), Arc::clone(&parse.text));
        sources.extend(checks.sources);
        crate::diagnostic::sort_diagnostics(&mut diagnostics);
        crate::diagnostic::cap_diagnostics(&mut diagnostics, checks.omitted);
        let valid = !fatal_syntax && manifest.is_complete();
        let mut manifest = manifest;
        manifest.complete = valid && !diagnostics.iter().any(|d| d.severity == Severity::Error);
        PackageReport {
            manifest_path: manifest_path.to_owned(),
            package_dir,
            name: manifest.name.as_ref().map(|n| n.value.clone()),
            manifest: Some(manifest),
            diagnostics,
            sources,
        }
    })
}

pub(super) fn too_large_message(size: u64) -> String {
    format!("Workbench manifest is too large: {size} bytes (the limit is {} MiB)", MAX_MANIFEST_BYTES / (1024 * 1024))
}

fn syntax_diagnostic(path: &Path, text: &str, error: &wb_syntax::SyntaxError) -> Diagnostic {
    let code = match error.kind {
        SyntaxErrorKind::Syntax => Code::YamlSyntax,
        SyntaxErrorKind::Tab => Code::TabIndentation,
        SyntaxErrorKind::DuplicateKey => Code::DuplicateKey,
        SyntaxErrorKind::MultipleDocuments => Code::MultipleDocuments,
        SyntaxErrorKind::Tag => Code::UnsupportedTag,
        SyntaxErrorKind::ComplexKey => Code::ComplexKey,
        SyntaxErrorKind::ByteOrderMark => Code::ByteOrderMark,
        SyntaxErrorKind::InvalidUtf8 => Code::InvalidUtf8,
        SyntaxErrorKind::AliasBudget => Code::AliasExpansionLimit,
        SyntaxErrorKind::TooDeep => Code::NestingTooDeep,
        SyntaxErrorKind::TooManyNodes => Code::TooManyNodes,
    };
    let mut diagnostic = Diagnostic::new(code, path, error.range, error.message.clone());
    if let Some((range, message)) = &error.related {
        diagnostic = diagnostic.with_related(path, *range, message.clone());
    }
    if code == Code::ByteOrderMark && text.starts_with('\u{feff}') {
        diagnostic = diagnostic.with_fix(Fix {
            title: "Remove the byte-order mark".to_owned(),
            creates: Vec::new(),
            edits: vec![TextEdit { path: path.to_owned(), range: TextRange::new(0, 3), new_text: String::new() }],
            safe: true,
        });
    }
    if code == Code::DuplicateKey {
        diagnostic = diagnostic.with_tag(crate::DiagnosticTag::Unnecessary);
    }
    diagnostic
}
