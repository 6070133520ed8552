//! Completion at any position, also while the document does not parse.
//!
//! The cursor's context comes from the lines around it (indentation, `key:` and `- ` markers), not from the
//! parsed tree, so a half-typed line still gets keys, values and snippets.

use std::path::Path;

use wb_manifest::env_refs::env_refs;
use wb_manifest::fields::{self, Field, Lookup, Segment, Shape};
use wb_manifest::{FileKind, FileSystem, ModelCatalog};
use wb_syntax::{Node, TextRange};

use crate::context::{YamlPath, spec_of, spec_of_text};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Field,
    Value,
    Enum,
    File,
    Folder,
    Variable,
    Model,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionItem {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: Option<String>,
    pub documentation: Option<String>,
    /// The text that replaces `replace`; a snippet (`$1`, `${1|a,b|}`) when `snippet` is true.
    pub insert_text: String,
    pub snippet: bool,
    pub replace: TextRange,
    pub sort_text: String,
    pub deprecated: bool,
}

/// What the cursor is on.
#[derive(Debug, PartialEq)]
enum Place {
    /// Typing a key of the mapping at `path`.
    Key { path: YamlPath, siblings: Vec<String>, rest_of_line_has_colon: bool },
    /// Typing the value of the field at `path` (its last segment is the key, or an index for list items).
    Value { path: YamlPath, prefix: String },
}

struct Context {
    place: Place,
    /// What the completion replaces.
    replace: TextRange,
}

fn line_bounds(text: &str, offset: usize) -> (usize, usize) {
    let start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |at| offset + at);
    (start, end)
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A line's structure: indentation, dash items, and the `key:` it starts with.
struct LineShape<'t> {
    /// Column of the first dash, if the line starts a sequence item.
    dash: Option<usize>,
    /// Column where the content (after dashes) starts.
    content: usize,
    /// The key, when the content is `key:` or `key: value`.
    key: Option<&'t str>,
    /// The value after `key:` (trimmed, without a trailing comment), possibly empty.
    value: &'t str,
}

fn shape(line: &str) -> Option<LineShape<'_>> {
    let trimmed = line.trim_end_matches('\r');
    let mut column = indentation(trimmed);
    let mut rest = &trimmed[column..];
    if rest.is_empty() || rest.starts_with('#') {
        return None;
    }
    let mut dash = None;
    while rest == "-" || rest.starts_with("- ") {
        dash.get_or_insert(column);
        let after = &rest[1..];
        let spaces = after.len() - after.trim_start_matches(' ').len();
        column += 1 + spaces;
        rest = &after[spaces..];
    }
    let (key, value) = split_key(rest);
    Some(LineShape { dash, content: column, key, value })
}

/// Splits `key: value` (the colon must end the text or be followed by a space).
fn split_key(rest: &str) -> (Option<&str>, &str) {
    if rest.starts_with(['"', '\'', '{', '[', '#']) {
        return (None, rest);
    }
    let bytes = rest.as_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        if *byte == b':' && (index + 1 == bytes.len() || bytes[index + 1] == b' ') {
            let value = rest[index + 1..].trim();
            let value = if value.starts_with('#') { "" } else { value.split(" #").next().unwrap_or(value).trim() };
            return (Some(rest[..index].trim()), value);
        }
    }
    (None, rest)
}

/// The path of the block that contains a line whose content starts at `column` (`dash` set when the line is
/// itself a sequence item).
fn parent_path(lines: &[&str], line: usize, column: usize, dash: Option<usize>) -> YamlPath {
    let mut reversed = Vec::new();
    // The column an ancestor must be left of; items of a sequence live right of its dash.
    let mut target = dash.unwrap_or(column);
    let mut in_item = dash.is_some();
    let mut item_index = 0;
    for previous in lines[..line].iter().rev() {
        let Some(prev) = shape(previous) else { continue };
        if let Some(prev_dash) = prev.dash {
            if in_item {
                if prev_dash == target {
                    item_index += 1;
                }
                continue;
            }
            if prev.content == target && prev_dash < target {
                // Our line continues the item this dash opened.
                reversed.push(Segment::Index(0));
                target = prev_dash;
                in_item = true;
                item_index = 0;
                continue;
            }
            if prev_dash < target {
                target = prev_dash;
            }
            continue;
        }
        let indent = prev.content;
        let opens_block = prev.key.is_some() && prev.value.is_empty();
        if indent < target || (in_item && indent == target && opens_block) {
            if in_item {
                if !matches!(reversed.last(), Some(Segment::Index(_))) {
                    reversed.push(Segment::Index(item_index));
                }
                in_item = false;
            }
            match prev.key {
                Some(key) if opens_block => reversed.push(Segment::Key(key.to_owned())),
                _ => return Vec::new(),
            }
            target = indent;
            if indent == 0 {
                break;
            }
        }
    }
    if in_item && !matches!(reversed.last(), Some(Segment::Index(_))) {
        reversed.push(Segment::Index(item_index));
    }
    reversed.reverse();
    reversed
}

/// Keys already present in the block the cursor's line belongs to.
fn sibling_keys(lines: &[&str], line: usize, column: usize, in_item: bool) -> Vec<String> {
    let mut keys = Vec::new();
    let mut collect = |index: usize| -> bool {
        let Some(other) = shape(lines[index]) else { return true };
        if index != line {
            if other.content < column && other.dash.is_none() {
                return false;
            }
            if let Some(dash) = other.dash {
                if dash < column && !(in_item && other.content == column) {
                    return false;
                }
                if in_item && other.content == column {
                    if let Some(key) = other.key {
                        keys.push(key.to_owned());
                    }
                    return false;
                }
            }
            if other.content == column && other.dash.is_none() {
                if let Some(key) = other.key {
                    keys.push(key.to_owned());
                }
            }
        }
        true
    };
    for index in (0..line).rev() {
        if !collect(index) {
            break;
        }
    }
    for (index, text) in lines.iter().enumerate().skip(line + 1) {
        if let Some(other) = shape(text) {
            if other.dash.is_some_and(|dash| dash < column) {
                break;
            }
        }
        if !collect(index) {
            break;
        }
    }
    keys
}

fn word_end(text: &str, offset: usize) -> usize {
    let rest = &text[offset..];
    offset + rest.find(|ch: char| ch.is_whitespace() || ch == ':' || ch == '#').unwrap_or(rest.len())
}

fn context(text: &str, offset: usize) -> Option<Context> {
    let (line_start, line_end) = line_bounds(text, offset);
    let prefix = &text[line_start..offset];
    if prefix.trim_start().starts_with('#') || prefix.contains(" #") {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let line = text[..line_start].matches('\n').count();
    let current = shape(prefix).unwrap_or(LineShape { dash: None, content: indentation(prefix), key: None, value: "" });
    let full_line = &text[line_start..line_end];
    if let Some(key) = current.key {
        // After `key:` — a value. Its prefix is what follows the colon up to the cursor.
        let colon = prefix.find(&format!("{key}:")).map_or(prefix.len(), |at| at + key.len() + 1);
        let typed = prefix[colon..].trim_start();
        let value_start = offset - typed.len();
        let end = (line_end - (full_line.len() - full_line.trim_end().len())).max(value_start);
        let end = text[value_start..end].find(" #").map_or(end, |at| value_start + at).max(offset);
        let mut path = parent_path(&lines, line, current.content, current.dash);
        path.push(Segment::Key(key.to_owned()));
        return Some(Context {
            place: Place::Value { path, prefix: typed.to_owned() },
            replace: TextRange::new(value_start, end),
        });
    }
    let typed = &prefix[current.content.min(prefix.len())..];
    let path = parent_path(&lines, line, current.content, current.dash);
    let start = offset - typed.len();
    let rest_of_line = &text[offset..line_end];
    let end = word_end(text, offset);
    if current.dash.is_some() && !typed.contains(':') {
        // `- x`: an item of a list of scalars, or the first key of an object item.
        let is_object_list = matches!(
            lookup_field(spec_of_text(text), &path[..path.len().saturating_sub(1)]),
            Some(Field { shape: Shape::ObjectList { .. }, .. })
        );
        if !is_object_list {
            let line_value_end = line_end - (full_line.len() - full_line.trim_end().len());
            return Some(Context {
                place: Place::Value { path, prefix: typed.to_owned() },
                replace: TextRange::new(start, line_value_end.max(offset)),
            });
        }
    }
    let siblings = sibling_keys(&lines, line, current.content, current.dash.is_some());
    Some(Context {
        place: Place::Key { path, siblings, rest_of_line_has_colon: rest_of_line.contains(':') },
        replace: TextRange::new(start, end),
    })
}

fn lookup_field(spec: u8, path: &[Segment]) -> Option<&'static Field> {
    match fields::lookup(spec, path)? {
        Lookup::Field(field) => Some(field),
        Lookup::MapKey { .. } => None,
    }
}

/// The fields a mapping at `path` may hold.
fn fields_at(spec: u8, path: &[Segment]) -> Option<Vec<&'static Field>> {
    if path.is_empty() {
        return Some(fields::top_level(spec).collect());
    }
    let children: &'static [Field] = match fields::lookup(spec, path)? {
        Lookup::Field(field) => match &field.shape {
            Shape::Object { fields, .. } | Shape::ObjectList { fields, .. } => fields,
            Shape::Image => fields::IMAGE_BUILD_FIELDS,
            _ => return None,
        },
        Lookup::MapKey { map, .. } => match &map.shape {
            Shape::NamedMap { fields, .. } => fields,
            _ => return None,
        },
    };
    Some(children.iter().filter(|field| field.specs.includes(spec)).collect())
}

const UNIT: &str = "  ";

/// The snippet that inserts a field with the skeleton of its value.
fn field_snippet(field: &Field) -> String {
    let name = field.name;
    let choice = |values: &[&str]| format!("${{1|{}|}}", values.join(","));
    match &field.shape {
        Shape::Spec => format!("{name}: {}", choice(&["1", "0"])),
        Shape::Text { suggestions, .. } if !suggestions.is_empty() => format!("{name}: {}", choice(suggestions)),
        Shape::Text { .. } | Shape::Url | Shape::Image => format!("{name}: $0"),
        Shape::Enum(values) => format!("{name}: {}", choice(values)),
        Shape::Boolean => format!("{name}: {}", choice(&["true", "false"])),
        Shape::PositiveInteger | Shape::PositiveNumber => format!("{name}: ${{1:1}}"),
        Shape::TextList => format!("{name}:\n{UNIT}- $0"),
        Shape::EnumList(values) => format!("{name}: [{}]", choice(values)),
        Shape::Object { fields: children, nullable } => {
            if children.is_empty() && *nullable {
                return format!("{name}: {{}}");
            }
            if name == "runtimes" {
                return format!("{name}:\n{UNIT}${{1|local: {{\\}},docker:\n{UNIT}{UNIT}image: |}}$0");
            }
            let required: Vec<&Field> = children.iter().filter(|f| f.required).collect();
            if required.is_empty() {
                return format!("{name}:\n{UNIT}$0");
            }
            let mut out = format!("{name}:");
            for (index, child) in required.iter().enumerate() {
                out.push_str(&format!("\n{UNIT}{}: ${}", child.name, index + 1));
            }
            out
        }
        Shape::ObjectList { fields: children, .. } => {
            let required: Vec<&Field> = children.iter().filter(|f| f.required).collect();
            let mut out = format!("{name}:\n{UNIT}- ");
            for (index, child) in required.iter().enumerate() {
                if index > 0 {
                    out.push_str(&format!("\n{UNIT}  "));
                }
                out.push_str(&format!("{}: ${}", child.name, index + 1));
            }
            out
        }
        Shape::NamedMap { fields: children, .. } => {
            let placeholder = if name == "env" { "NAME" } else { "name" };
            let mut out = format!("{name}:\n{UNIT}${{1:{placeholder}}}:");
            match children.iter().find(|f| f.name == "access") {
                Some(_) => out.push_str(&format!("\n{UNIT}{UNIT}access: ${{2|read-only,read-write|}}")),
                None => out.push_str(&format!("\n{UNIT}{UNIT}required: ${{2|true,false|}}")),
            }
            out
        }
        Shape::StringMap => format!("{name}:\n{UNIT}${{1:Authorization}}: ${{2:Bearer \\${{${{3:TOKEN}}\\}}}}"),
    }
}

fn runtime_snippet(name: &str) -> String {
    match name {
        "local" => "local: {}".to_owned(),
        "daytona" => format!("daytona:\n{UNIT}class: ${{1|linux,windows,gpu,macos|}}"),
        other => format!("{other}:\n{UNIT}image: $0"),
    }
}

/// Completion items at `offset` of a manifest's text.
pub fn completions(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    text: &str,
    offset: usize,
    catalog: &ModelCatalog,
) -> Vec<CompletionItem> {
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return Vec::new();
    }
    let Some(context) = context(text, offset) else { return Vec::new() };
    let parsed = wb_syntax::parse_str(text);
    let spec = if parsed.root.is_some() { spec_of(parsed.root.as_ref()) } else { spec_of_text(text) };
    let replace = context.replace;
    match context.place {
        Place::Key { path, siblings, rest_of_line_has_colon } => {
            key_items(spec, &path, &siblings, rest_of_line_has_colon, replace, parsed.root.as_ref(), text)
        }
        Place::Value { path, prefix } => {
            let package = manifest_path.parent().unwrap_or(Path::new("/"));
            value_items(spec, &path, &prefix, replace, parsed.root.as_ref(), catalog, fs, package)
        }
    }
}

fn key_items(
    spec: u8,
    path: &[Segment],
    siblings: &[String],
    plain: bool,
    replace: TextRange,
    root: Option<&Node>,
    text: &str,
) -> Vec<CompletionItem> {
    if path == [Segment::Key("env".into())] {
        // Names referenced in MCP headers but not declared yet.
        let declared: Vec<String> = declared_env(root, text);
        let names: Vec<String> = referenced_env(text).into_iter().filter(|n| !declared.contains(n)).collect();
        return names
            .into_iter()
            .map(|name| CompletionItem {
                label: name.clone(),
                kind: CompletionKind::Variable,
                detail: Some("referenced in an MCP header".into()),
                documentation: None,
                insert_text: if plain { name.clone() } else { format!("{name}:\n{UNIT}required: ${{1|true,false|}}") },
                snippet: !plain,
                replace,
                sort_text: format!("0_{name}"),
                deprecated: false,
            })
            .collect();
    }
    let Some(candidates) = fields_at(spec, path) else { return Vec::new() };
    let is_runtimes = path == [Segment::Key("runtimes".into())];
    candidates
        .into_iter()
        .filter(|field| !siblings.iter().any(|s| s == field.name))
        .filter(|field| !(spec == 1 && matches!(field.name, "runtime" | "image" | "docker") && path.is_empty()))
        .map(|field| {
            let snippet = if is_runtimes { runtime_snippet(field.name) } else { field_snippet(field) };
            let detail = match (field.required, field.default) {
                (true, _) => "required".to_owned(),
                (false, Some(default)) => format!("optional, default {default}"),
                (false, None) => "optional".to_owned(),
            };
            CompletionItem {
                label: field.name.to_owned(),
                kind: CompletionKind::Field,
                detail: Some(detail),
                documentation: Some(field.doc.to_owned()),
                insert_text: if plain { field.name.to_owned() } else { snippet },
                snippet: !plain,
                replace,
                sort_text: format!("{}_{}", if field.required { 0 } else { 1 }, order_of(field.name)),
                deprecated: false,
            }
        })
        .collect()
}

/// Keeps the standard's field order in the menu.
fn order_of(name: &str) -> String {
    let position = fields::TOP_LEVEL_FIELDS.iter().position(|f| f.name == name).unwrap_or(99);
    format!("{position:02}_{name}")
}

fn value_item(
    label: &str,
    kind: CompletionKind,
    detail: Option<String>,
    replace: TextRange,
    rank: usize,
) -> CompletionItem {
    CompletionItem {
        label: label.to_owned(),
        kind,
        detail,
        documentation: None,
        insert_text: label.to_owned(),
        snippet: false,
        replace,
        sort_text: format!("{rank:04}_{label}"),
        deprecated: false,
    }
}

#[allow(clippy::too_many_arguments)]
fn value_items(
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
        if let Some(open) = prefix.rfind("${").filter(|at| !prefix[*at..].contains('}')) {
            let name_start = replace.start + open + 2;
            let typed_end = replace.start + prefix.len();
            let replace = TextRange::new(name_start, typed_end.max(name_start));
            return declared_env(root, "")
                .into_iter()
                .enumerate()
                .map(|(rank, name)| {
                    let mut item =
                        value_item(&name, CompletionKind::Variable, Some("declared in env".into()), replace, rank);
                    item.insert_text = format!("{name}}}");
                    item
                })
                .collect();
        }
        return Vec::new();
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
        ("id", _) if in_model && path.len() == 2 => catalog
            .models
            .iter()
            .enumerate()
            .map(|(rank, (id, model))| {
                let providers: Vec<&str> = model.providers.keys().map(String::as_str).collect();
                let mut item = value_item(id, CompletionKind::Model, Some(model.name.clone()), replace, rank);
                item.documentation = Some(format!("Served by {}", providers.join(", ")));
                item
            })
            .collect(),
        ("provider", _) if in_model => {
            let id = model_id(root);
            let serving: Vec<String> = match id.as_deref().and_then(|id| catalog.model(id)) {
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
        ("model", _) if in_model && path.len() == 4 => {
            let id = model_id(root);
            let provider = route_provider(root, path);
            match (id.as_deref().and_then(|id| catalog.model(id)), provider) {
                (Some(model), Some(provider)) => model
                    .providers
                    .get(&provider)
                    .map(|native| {
                        vec![value_item(
                            native,
                            CompletionKind::Value,
                            Some(format!("{provider} model id")),
                            replace,
                            0,
                        )]
                    })
                    .unwrap_or_default(),
                _ => Vec::new(),
            }
        }
        ("instructions", _) => path_items(fs, package, prefix, replace, PathWant::Markdown),
        ("runner_config", _) => path_items(fs, package, prefix, replace, PathWant::Any),
        ("skills", _) if list_item => path_items(fs, package, prefix, replace, PathWant::Skill),
        ("build", _) => path_items(fs, package, prefix, replace, PathWant::Dockerfile),
        ("context", _) => path_items(fs, package, prefix, replace, PathWant::Directory),
        (_, Some(Shape::Spec)) => {
            ["1", "0"].iter().enumerate().map(|(r, v)| value_item(v, CompletionKind::Enum, None, replace, r)).collect()
        }
        (_, Some(Shape::Enum(values))) => enum_items(values, replace),
        (_, Some(Shape::EnumList(values))) => {
            let present: Vec<&str> = prefix.trim_matches(['[', ']']).split(',').map(str::trim).collect();
            let remaining: Vec<&str> = values.iter().copied().filter(|v| !present.contains(v)).collect();
            if list_item {
                enum_items(&remaining, replace)
            } else {
                // Inline: offer the flow list; inside `[...]`, the single values.
                let open = prefix.rfind(['[', ',']);
                match open {
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
        }
        (_, Some(Shape::Boolean)) => enum_items(&["true", "false"], replace),
        (_, Some(Shape::Text { suggestions, .. })) if !suggestions.is_empty() => enum_items(suggestions, replace),
        _ => Vec::new(),
    }
}

fn enum_items(values: &[&str], replace: TextRange) -> Vec<CompletionItem> {
    values.iter().enumerate().map(|(rank, v)| value_item(v, CompletionKind::Enum, None, replace, rank)).collect()
}

fn model_id(root: Option<&Node>) -> Option<String> {
    root?.as_mapping()?.get("model")?.as_mapping()?.get("id")?.as_str().map(|s| s.trim().to_owned())
}

fn route_provider(root: Option<&Node>, path: &[Segment]) -> Option<String> {
    let Some(Segment::Index(index)) = path.get(2) else { return None };
    let routes = root?.as_mapping()?.get("model")?.as_mapping()?.get("routes")?.as_sequence()?;
    routes.get(*index)?.as_mapping()?.get("provider")?.as_str().map(str::to_owned)
}

/// Environment names declared in `env` (from the tree, else from the text).
fn declared_env(root: Option<&Node>, text: &str) -> Vec<String> {
    if let Some(env) = root.and_then(Node::as_mapping).and_then(|m| m.get("env")).and_then(Node::as_mapping) {
        return env.entries.iter().map(|e| e.key.clone()).collect();
    }
    let mut names = Vec::new();
    let mut inside = false;
    let mut child_indent = None;
    for line in text.lines() {
        let Some(shape) = shape(line) else { continue };
        if shape.content == 0 {
            inside = shape.key == Some("env");
            child_indent = None;
            continue;
        }
        if inside {
            let indent = *child_indent.get_or_insert(shape.content);
            if shape.content == indent {
                if let Some(key) = shape.key {
                    names.push(key.to_owned());
                }
            }
        }
    }
    names
}

/// The names the text references as `${NAME}`, each once, in order of first use.
fn referenced_env(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for reference in env_refs(text) {
        if !names.iter().any(|n| n == reference.name) {
            names.push(reference.name.to_owned());
        }
    }
    names
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PathWant {
    Markdown,
    Skill,
    Dockerfile,
    Directory,
    Any,
}

/// Package-relative paths under the directory the typed prefix names.
fn path_items(
    fs: &dyn FileSystem,
    package: &Path,
    prefix: &str,
    replace: TextRange,
    want: PathWant,
) -> Vec<CompletionItem> {
    let typed = prefix.trim_matches(['"', '\'']);
    let (dir_part, _) = typed.rsplit_once('/').map_or(("", typed), |(dir, name)| (dir, name));
    let dir_text = if dir_part.is_empty() && typed.starts_with('/') { "/" } else { dir_part };
    let base =
        if dir_text.is_empty() { package.to_path_buf() } else { wb_manifest::normalize(&package.join(dir_text)) };
    let Ok(entries) = fs.read_dir(&base) else { return Vec::new() };
    let shown_dir = if dir_part.is_empty() { "./".to_owned() } else { format!("{dir_part}/") };
    let mut items = Vec::new();
    for entry in entries {
        let Some(name) = entry.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        if name.starts_with('.') && want != PathWant::Any {
            continue;
        }
        let kind = fs.kind_followed(&entry).unwrap_or(FileKind::Other);
        let is_dir = kind == FileKind::Directory;
        let include = match want {
            PathWant::Markdown => is_dir || name.ends_with(".md"),
            PathWant::Dockerfile => is_dir || name.starts_with("Dockerfile") || name.ends_with(".Dockerfile"),
            PathWant::Directory | PathWant::Skill => is_dir,
            PathWant::Any => true,
        };
        if !include {
            continue;
        }
        let label = format!("{shown_dir}{name}");
        let has_skill =
            want == PathWant::Skill && matches!(fs.kind_followed(&entry.join("SKILL.md")), Ok(FileKind::File));
        let (kind, rank) = if has_skill || (!is_dir) { (CompletionKind::File, 0) } else { (CompletionKind::Folder, 1) };
        let detail = if has_skill { Some("skill (has SKILL.md)".to_owned()) } else { None };
        let mut item = value_item(&label, kind, detail, replace, rank);
        if is_dir && !has_skill && want != PathWant::Directory {
            item.kind = CompletionKind::Folder;
        }
        items.push(item);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> (Place, TextRange) {
        let offset = text.find('|').expect("cursor");
        let text = text.replace('|', "");
        let context = context(&text, offset).expect("context");
        (context.place, context.replace)
    }

    fn key(path: &[&str]) -> YamlPath {
        path.iter().map(|s| s.parse::<usize>().map_or_else(|_| Segment::Key((*s).to_owned()), Segment::Index)).collect()
    }

    #[test]
    fn top_level_key() {
        let (place, range) = at("spec: 1\nna|\n");
        assert_eq!(place, Place::Key { path: vec![], siblings: vec!["spec".into()], rest_of_line_has_colon: false });
        assert_eq!(range, TextRange::new(8, 10));
    }

    #[test]
    fn nested_key_and_value() {
        let (place, _) = at("model:\n  id: x\n  ro|\n");
        assert!(
            matches!(place, Place::Key { ref path, ref siblings, .. } if *path == key(&["model"]) && siblings == &["id".to_owned()])
        );
        let (place, range) = at("runtimes:\n  daytona:\n    class: li|\n");
        assert_eq!(place, Place::Value { path: key(&["runtimes", "daytona", "class"]), prefix: "li".into() });
        assert_eq!(range, TextRange::new(32, 34));
    }

    #[test]
    fn list_items() {
        let (place, _) = at("mcps:\n  - name: db\n    u|\n");
        assert!(matches!(place, Place::Key { ref path, .. } if *path == key(&["mcps", "0"])), "{place:?}");
        let (place, _) = at("skills:\n  - ./a\n  - ./|\n");
        assert!(
            matches!(place, Place::Value { ref path, ref prefix } if *path == key(&["skills", "1"]) && prefix == "./"),
            "{place:?}"
        );
        let (place, _) = at("mcps:\n  - name: db\n    headers:\n      Authorization: Bearer ${|\n");
        assert!(
            matches!(place, Place::Value { ref path, .. } if *path == key(&["mcps", "0", "headers", "Authorization"])),
            "{place:?}"
        );
    }
}
