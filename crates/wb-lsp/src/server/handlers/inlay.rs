//! `textDocument/inlayHint`: gathers what lies outside the document (the environment a run from here inherits,
//! the repository's `.env` as the editor sees it, the route the engine would take) and asks `wb_ide` for the
//! hints within the requested range. Each kind can be switched off (`workbench.inlayHints.context`, `.route`,
//! `.env`).

use std::collections::HashSet;
use std::path::Path;

use lsp_types as lsp;
use wb_manifest::FileSystem;

use super::super::snapshot::Snapshot;
use super::File;

/// The largest `.env` read, as `--env-file` reads it.
const MAX_DOTENV_BYTES: usize = 1024 * 1024;

pub fn handle(snapshot: &Snapshot, params: lsp::InlayHintParams) -> anyhow::Result<Option<Vec<lsp::InlayHint>>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let config = &snapshot.config.inlay_hints;
    let kinds = wb_ide::HintKinds { context: config.context, route: config.route, env: config.env };
    let range =
        wb_syntax::TextRange::new(file.offset(snapshot, params.range.start), file.offset(snapshot, params.range.end));
    let manifest = wb_manifest::manifest_model(&file.path, &file.parse, &snapshot.catalog);
    let inherited = wb_engine::bindings::process_environment();
    let route =
        if kinds.route { wb_engine::routing::route_summary(&manifest, &snapshot.catalog, &inherited) } else { None };
    let dotenv = if kinds.env { dotenv_names(&snapshot.overlay, &file.path) } else { HashSet::new() };
    let bound = |name: &str| inherited.get(name).is_some_and(|value| !value.is_empty());
    let inputs = wb_ide::HintInputs {
        fs: &snapshot.overlay,
        manifest_path: &file.path,
        root,
        manifest: &manifest,
        catalog: &snapshot.catalog,
        route,
        bound: &bound,
        dotenv: &dotenv,
    };
    let hints = wb_ide::inlay_hints(&inputs, kinds, range)
        .into_iter()
        .map(|hint| lsp::InlayHint {
            position: file.range(snapshot, wb_syntax::TextRange::empty(hint.offset)).start,
            label: lsp::InlayHintLabel::String(hint.label),
            kind: None,
            text_edits: None,
            tooltip: Some(lsp::InlayHintTooltip::String(hint.tooltip.to_owned())),
            padding_left: Some(true),
            padding_right: None,
            data: None,
        })
        .collect();
    Ok(Some(hints))
}

/// The names the repository's `.env` assigns, as the editor has it (an unsaved buffer counts); an unreadable,
/// oversized or malformed file assigns none.
fn dotenv_names(fs: &dyn FileSystem, manifest: &Path) -> HashSet<String> {
    let Some(root) = wb_manifest::repository_root(manifest) else { return HashSet::new() };
    let Ok(bytes) = fs.read_limited(&root.join(".env"), MAX_DOTENV_BYTES) else { return HashSet::new() };
    let text = String::from_utf8_lossy(&bytes);
    wb_engine::dotenv::parse(&text)
        .map(|entries| entries.into_iter().map(|(name, _)| name).collect())
        .unwrap_or_default()
}
