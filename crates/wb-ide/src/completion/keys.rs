//! Key completion: the fields a mapping may still take, each with a snippet of its value's skeleton.

use wb_manifest::fields::{self, Field, Lookup, Segment, Shape};
use wb_syntax::{Node, TextRange};

use super::{CompletionItem, CompletionKind};
use super::{UNIT, env};

/// The fields a mapping at `path` may hold.
pub(super) fn fields_at(spec: u8, path: &[Segment]) -> Option<Vec<&'static Field>> {
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

/// The snippet that inserts a field with the skeleton of its value.
pub(super) fn field_snippet(field: &Field) -> String {
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

pub(super) fn runtime_snippet(name: &str) -> String {
    match name {
        "local" => "local: {}".to_owned(),
        "daytona" => format!("daytona:\n{UNIT}class: ${{1|linux,windows,gpu,macos|}}"),
        other => format!("{other}:\n{UNIT}image: $0"),
    }
}

pub(super) fn key_items(
    spec: u8,
    path: &[Segment],
    siblings: &[String],
    name_only: bool,
    replace: TextRange,
    root: Option<&Node>,
    text: &str,
) -> Vec<CompletionItem> {
    if path == [Segment::Key("env".into())] {
        return env::undeclared_items(root, text, name_only, replace);
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
                insert_text: if name_only { field.name.to_owned() } else { snippet },
                snippet: !name_only,
                replace,
                sort_text: format!("{}_{}", if field.required { 0 } else { 1 }, order_of(field.name)),
                deprecated: false,
            }
        })
        .collect()
}

/// Keeps the standard's field order in the menu.
pub(super) fn order_of(name: &str) -> String {
    let position = fields::TOP_LEVEL_FIELDS.iter().position(|f| f.name == name).unwrap_or(99);
    format!("{position:02}_{name}")
}
