//! Value completion: enums, runners, model ids and routes from the catalog, and package paths.

use std::path::Path;

use wb_manifest::fields::{Segment, Shape};
use wb_manifest::{FileSystem, ModelCatalog};
use wb_syntax::{Node, TextRange};

use super::env;
use super::paths::{PathWant, path_items};
use super::{CompletionItem, CompletionKind, lookup_field, value_item};

#[allow(clippy::too_many_arguments)]
pub(super) fn value_items(
    spec: u8,
    path: &[Segment],
    prefix: &str,
    replace: TextRange,
    root: Option<&Node>,
    catalog: &ModelCatalog,
    fs: &dyn FileSystem,
    package: &Path,
) -> Vec<CompletionItem> {
    // `${` inside an MCP header: declared environment names.
    if path.len() >= 4 && path[0] == Segment::Key("mcps".into()) && path[2] == Segment::Key("headers".into()) {
        return env::reference_items(prefix, replace, root);
    }
    let key = match path.last() {
        Some(Segment::Key(key)) => key.as_str(),
        Some(Segment::Index(_)) => match path.get(path.len().saturating_sub(2)) {
            Some(Segment::Key(key)) => key.as_str(),
            _ => "",
        },
        None => return Vec::new(),
    };
    let list_item = matches!(path.last(), Some(Segment::Index(_)));
    let field_path: Vec<Segment> = if list_item { path[..path.len() - 1].to_vec() } else { path.to_vec() };
    let field = lookup_field(spec, &field_path);
    let in_model = path.first() == Some(&Segment::Key("model".into()));
    match (key, field.map(|f| &f.shape)) {
        ("id", _) if in_model && path.len() == 2 => model_items(catalog, replace),
        ("provider", _) if in_model => provider_items(catalog, model_id(root).as_deref(), replace),
        ("model", _) if in_model && path.len() == 4 => native_model_items(catalog, root, path, replace),
        ("instructions", _) => path_items(fs, package, prefix, replace, PathWant::Markdown),
        ("runner_config", _) => path_items(fs, package, prefix, replace, PathWant::Any),
        ("skills", _) if list_item => path_items(fs, package, prefix, replace, PathWant::Skill),
        ("build", _) => path_items(fs, package, prefix, replace, PathWant::Dockerfile),
        ("context", _) => path_items(fs, package, prefix, replace, PathWant::Directory),
        (_, Some(Shape::Spec)) => {
            ["1", "0"].iter().enumerate().map(|(r, v)| value_item(v, CompletionKind::Enum, None, replace, r)).collect()
        }
        (_, Some(Shape::Enum(values))) => enum_items(values, replace),
        (_, Some(Shape::EnumList(values))) => enum_list_items(values, prefix, replace, list_item),
        (_, Some(Shape::Boolean)) => enum_items(&["true", "false"], replace),
        (_, Some(Shape::Text { suggestions, .. })) if !suggestions.is_empty() => enum_items(suggestions, replace),
        _ => Vec::new(),
    }
}

/// `model.id`: every catalog model, in the catalog's order, with who serves it.
fn model_items(catalog: &ModelCatalog, replace: TextRange) -> Vec<CompletionItem> {
    catalog
        .models
        .iter()
        .enumerate()
        .map(|(rank, (id, model))| {
            let providers: Vec<&str> = model.providers.keys().map(String::as_str).collect();
            let mut item = value_item(id, CompletionKind::Model, Some(model.name.clone()), replace, rank);
            item.documentation = Some(format!("Served by {}", providers.join(", ")));
            item
        })
        .collect()
}

/// A provider under `model`: those serving the selected model (every catalog provider when there is none),
/// each with its credential variables.
fn provider_items(catalog: &ModelCatalog, model: Option<&str>, replace: TextRange) -> Vec<CompletionItem> {
    let serving: Vec<String> = match model.and_then(|id| catalog.model(id)) {
        Some(model) => model.providers.keys().cloned().collect(),
        None => catalog.providers.keys().cloned().collect(),
    };
    serving
        .iter()
        .enumerate()
        .map(|(rank, provider)| {
            let detail = catalog.provider(provider).map(|p| format!("{} ({})", p.name, p.env.join(", ")));
            value_item(provider, CompletionKind::Enum, detail, replace, rank)
        })
        .collect()
}

/// A route's `model`: the native id its provider serves the selected model under.
fn native_model_items(
    catalog: &ModelCatalog,
    root: Option<&Node>,
    path: &[Segment],
    replace: TextRange,
) -> Vec<CompletionItem> {
    let id = model_id(root);
    let (Some(model), Some(provider)) = (id.as_deref().and_then(|id| catalog.model(id)), route_provider(root, path))
    else {
        return Vec::new();
    };
    let detail = Some(format!("{provider} model id"));
    model
        .providers
        .get(&provider)
        .map(|native| vec![value_item(native, CompletionKind::Value, detail, replace, 0)])
        .unwrap_or_default()
}

/// A list of enumerated values: in block style, the values not yet listed; inline, the whole flow list, or
/// inside `[...]` the values not yet listed, replacing what was typed after the last `[` or `,`.
fn enum_list_items(values: &[&str], prefix: &str, replace: TextRange, list_item: bool) -> Vec<CompletionItem> {
    let present: Vec<&str> = prefix.trim_matches(['[', ']']).split(',').map(str::trim).collect();
    let remaining: Vec<&str> = values.iter().copied().filter(|v| !present.contains(v)).collect();
    if list_item {
        return enum_items(&remaining, replace);
    }
    match prefix.rfind(['[', ',']) {
        Some(at) => {
            let start = replace.start + at + 1;
            let start = start + prefix[at + 1..].len() - prefix[at + 1..].trim_start().len();
            let typed_end = replace.start + prefix.len();
            enum_items(&remaining, TextRange::new(start, typed_end.max(start)))
        }
        None => {
            let mut items = enum_items(values, replace);
            for item in &mut items {
                item.insert_text = format!("[{}]", item.label);
            }
            items
        }
    }
}

pub(super) fn enum_items(values: &[&str], replace: TextRange) -> Vec<CompletionItem> {
    values.iter().enumerate().map(|(rank, v)| value_item(v, CompletionKind::Enum, None, replace, rank)).collect()
}

pub(super) fn model_id(root: Option<&Node>) -> Option<String> {
    root?.as_mapping()?.get("model")?.as_mapping()?.get("id")?.as_str().map(|s| s.trim().to_owned())
}

pub(super) fn route_provider(root: Option<&Node>, path: &[Segment]) -> Option<String> {
    let Some(Segment::Index(index)) = path.get(2) else { return None };
    let routes = root?.as_mapping()?.get("model")?.as_mapping()?.get("routes")?.as_sequence()?;
    routes.get(*index)?.as_mapping()?.get("provider")?.as_str().map(str::to_owned)
}
