//! `textDocument/inlayHint`: after `instructions:` and each skill, the context it injects (tokens, an estimate,
//! and its cost a run when the catalog prices the model); after `model.id`, the route a run from here would take
//! and the credential it would use (by name); after each `env` entry, whether it is bound in the server's
//! environment or the repository's `.env` (never a value). Each kind can be switched off
//! (`workbench.inlayHints.context`, `.route`, `.env`).

use std::collections::{BTreeMap, HashSet};

use lsp_types as lsp;
use wb_manifest::Manifest;

use super::super::snapshot::Snapshot;
use super::File;

pub fn handle(snapshot: &Snapshot, params: lsp::InlayHintParams) -> anyhow::Result<Option<Vec<lsp::InlayHint>>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let config = &snapshot.config.inlay_hints;
    let manifest = snapshot.check(&file.path).manifest;
    let mut hints = Vec::new();
    let hint = |offset: usize, label: String, tooltip: &str| lsp::InlayHint {
        position: file.range(snapshot, wb_syntax::TextRange::empty(offset)).start,
        label: lsp::InlayHintLabel::String(label),
        kind: None,
        text_edits: None,
        tooltip: Some(lsp::InlayHintTooltip::String(tooltip.to_owned())),
        padding_left: Some(true),
        padding_right: None,
        data: None,
    };
    if config.context {
        let price = manifest
            .as_ref()
            .and_then(|m| m.model.as_ref())
            .and_then(|m| wb_ide::input_price(&snapshot.catalog, &m.id.value));
        for size in wb_ide::context_sizes(&snapshot.overlay, &file.path, root) {
            let tooltip = "Injected into every run. Tokens are estimated as a quarter of the bytes; the cost uses \
                           the model catalog's input price.";
            hints.push(hint(size.after, wb_ide::context_label(&size, price), tooltip));
        }
    }
    let Some(manifest) = manifest else { return Ok(Some(hints)) };
    let inherited = wb_engine::bindings::process_environment();
    if config.route
        && let Some((offset, label)) = route_label(snapshot, &manifest, &inherited)
    {
        hints.push(hint(offset, label, "The route a run started from this editor would take (credential names only)."));
    }
    if config.env {
        let dotenv: HashSet<String> = repository_dotenv(&file.path).into_iter().collect();
        for var in manifest.env.iter().take(wb_ide::MAX_HINTS) {
            let name = var.name.value.as_str();
            let label = if inherited.get(name).is_some_and(|value| !value.is_empty()) {
                "bound".to_owned()
            } else if dotenv.contains(name) {
                "in .env (pass --env-file .env)".to_owned()
            } else if var.required {
                "not bound (required)".to_owned()
            } else {
                "not bound".to_owned()
            };
            hints.push(hint(var.name.range.end, label, "Whether a run from here gets a value (never shown)."));
        }
    }
    hints.sort_by_key(|hint| (hint.position.line, hint.position.character));
    Ok(Some(hints))
}

/// `→ openai/gpt-5.6-terra via OPENAI_API_KEY`, `→ … (the runner's own login)`, or which variables would make
/// one ready; after the model id.
fn route_label(
    snapshot: &Snapshot,
    manifest: &Manifest,
    inherited: &BTreeMap<String, String>,
) -> Option<(usize, String)> {
    let model = manifest.model.as_ref()?;
    let runner = manifest.runner.as_ref()?.value.as_str();
    let catalog = &snapshot.catalog;
    let routes = wb_engine::routing::allowed_routes(manifest, catalog, runner).ok()?;
    let name = manifest.name.as_ref().map(|n| n.value.as_str()).unwrap_or_default();
    let env = wb_engine::bindings::bind_environment(manifest, name, catalog, &[], &[], inherited).ok()?;
    let home = inherited.get("HOME").map(String::as_str);
    let (_, authentication) = wb_engine::routing::select_route(&routes, catalog, runner, &env, home, &|_| false);
    let label = match (authentication.ready, authentication.route, authentication.method.as_deref()) {
        (true, Some(route), Some("environment")) => {
            format!("→ {route} via {}", authentication.variable.unwrap_or_default())
        }
        (true, Some(route), Some("runner")) => format!("→ {route} (the runner's own login)"),
        (true, Some(route), _) => format!("→ {route}"),
        _ => {
            let mut names: Vec<String> = routes
                .iter()
                .filter_map(|route| catalog.provider(&route.provider))
                .flat_map(|provider| provider.env.iter().cloned())
                .collect();
            names.dedup();
            if names.is_empty() { "no route".to_owned() } else { format!("no credentials: set {}", names.join(" or ")) }
        }
    };
    Some((model.id.range.end, label))
}

/// The names the repository's `.env` assigns (an unreadable or malformed file assigns none).
fn repository_dotenv(manifest: &std::path::Path) -> Vec<String> {
    let Some(root) = wb_manifest::repository_root(manifest) else { return Vec::new() };
    let path = root.join(".env");
    let Ok(meta) = std::fs::metadata(&path) else { return Vec::new() };
    if !meta.is_file() || meta.len() > 1024 * 1024 {
        return Vec::new();
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    wb_engine::dotenv::parse(&text)
        .map(|entries| entries.into_iter().map(|(name, _)| name).collect())
        .unwrap_or_default()
}
