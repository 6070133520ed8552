//! JSON schemas (draft 2020-12) generated from the field catalog, for editors that use yaml-language-server.
//! The committed copies under `schemas/` are checked against this generator by a test.

use serde_json::{Map, Value, json};

use crate::fields::{self, Field, Shape};

/// The `$id` of our schema for a spec.
pub fn schema_id(spec: u8) -> String {
    format!("https://raw.githubusercontent.com/wb-lsp/wb-lsp/main/schemas/v{spec}/workbench.schema.json")
}

/// The schema of one spec (0 or 1), pretty-printed with a trailing newline.
pub fn schema_text(spec: u8) -> String {
    let mut text = serde_json::to_string_pretty(&schema(spec)).unwrap_or_default();
    text.push('\n');
    text
}

pub fn schema(spec: u8) -> Value {
    let (title, description) = if spec == 0 {
        (
            "Workbench manifest, spec 0 (frozen legacy)",
            "Spec 0 declares a single `runtime` with top-level `image` and `docker`. New packages use spec 1; `wb-lsp migrate` converts.",
        )
    } else {
        (
            "Workbench manifest, spec 1",
            "A versioned package that prepares an AI coding runner to do one class of work. Spec 1 declares its environment with `requirements` and `runtimes`.",
        )
    };
    let top: Vec<&Field> = fields::top_level(spec).collect();
    let mut root = object_schema(&top, spec, false);
    let Value::Object(map) = &mut root else { return root };
    let mut head = Map::new();
    head.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    head.insert("$id".into(), json!(schema_id(spec)));
    head.insert("title".into(), json!(title));
    head.insert("description".into(), json!(description));
    head.extend(std::mem::take(map));
    if spec == 0 {
        // The engine rule `docker.engine requires runtime: docker`, as the official schema states it.
        head.insert(
            "allOf".into(),
            json!([{
                "if": {"required": ["docker"], "properties": {"docker": {"required": ["engine"]}}},
                "then": {"properties": {"runtime": {"const": "docker"}}}
            }]),
        );
    }
    Value::Object(head)
}

fn object_schema(fields: &[&Field], spec: u8, nullable: bool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields {
        properties.insert(field.name.to_owned(), field_schema(field, spec));
        if field.required {
            required.push(json!(field.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), if nullable { json!(["object", "null"]) } else { json!("object") });
    schema.insert("additionalProperties".into(), json!(false));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("properties".into(), Value::Object(properties));
    Value::Object(schema)
}

fn field_schema(field: &Field, spec: u8) -> Value {
    let mut schema = match shape_schema(&field.shape, spec) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if field.name == "runtimes" {
        schema.insert("minProperties".into(), json!(1));
    }
    let mut out = Map::new();
    out.insert("description".into(), json!(field.doc));
    out.insert("markdownDescription".into(), json!(field.doc));
    if let Some(default) = field.default
        && let Ok(value) = serde_json::from_str::<Value>(default)
    {
        out.insert("default".into(), value);
    }
    out.extend(schema);
    Value::Object(out)
}

fn text_schema() -> Value {
    json!({"type": "string", "minLength": 1})
}

fn shape_schema(shape: &Shape, spec: u8) -> Value {
    match shape {
        Shape::Spec => json!({"const": spec}),
        Shape::Text { pattern, suggestions } => {
            let mut schema = json!({"type": "string", "minLength": 1});
            if let (Some(pattern), Value::Object(map)) = (pattern, &mut schema) {
                map.insert("pattern".into(), json!(pattern.replace(r"\d", "[0-9]")));
            }
            if let (false, Value::Object(map)) = (suggestions.is_empty(), &mut schema) {
                map.insert("examples".into(), json!(suggestions));
            }
            schema
        }
        Shape::Url => json!({"type": "string", "format": "uri", "pattern": "^https?://"}),
        Shape::Enum(values) => json!({"type": "string", "enum": values}),
        Shape::Boolean => json!({"type": "boolean"}),
        Shape::PositiveInteger => json!({"type": "integer", "minimum": 1}),
        Shape::PositiveNumber => json!({"type": "number", "exclusiveMinimum": 0}),
        Shape::TextList => json!({"type": "array", "items": text_schema()}),
        Shape::EnumList(values) => {
            json!({"type": "array", "minItems": 1, "uniqueItems": true, "items": {"type": "string", "enum": values}})
        }
        Shape::Object { fields, nullable } => {
            let list: Vec<&Field> = fields.iter().filter(|f| f.specs.includes(spec)).collect();
            object_schema(&list, spec, *nullable)
        }
        Shape::ObjectList { fields, min_items } => {
            let list: Vec<&Field> = fields.iter().collect();
            let mut schema = json!({"type": "array", "items": object_schema(&list, spec, false)});
            if let (true, Value::Object(map)) = (*min_items > 0, &mut schema) {
                map.insert("minItems".into(), json!(min_items));
            }
            schema
        }
        Shape::NamedMap { key_pattern, key_doc, fields } => {
            let list: Vec<&Field> = fields.iter().collect();
            let mut value = object_schema(&list, spec, false);
            if let Value::Object(map) = &mut value {
                map.insert("description".into(), json!(key_doc));
            }
            json!({"type": "object", "propertyNames": {"pattern": key_pattern}, "additionalProperties": value})
        }
        Shape::StringMap => json!({"type": "object", "additionalProperties": text_schema()}),
        Shape::Image => {
            let list: Vec<&Field> = fields::IMAGE_BUILD_FIELDS.iter().collect();
            json!({"oneOf": [text_schema(), object_schema(&list, spec, false)]})
        }
    }
}
