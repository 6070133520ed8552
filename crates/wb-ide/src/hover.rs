//! Hover: documentation for every key, and facts about values (runner, model, env names, paths).

use std::path::Path;

use wb_manifest::fields::{self, Field, Lookup, Segment, Shape};
use wb_manifest::{FileKind, FileSystem, ModelCatalog};
use wb_syntax::{Node, TextRange};

use crate::context::{locate, spec_of};
use crate::navigation::{env_reference_at, header_references};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hover {
    pub markdown: String,
    pub range: TextRange,
}

fn type_of(shape: &Shape) -> String {
    match shape {
        Shape::Spec => "integer `0` or `1`".into(),
        Shape::Text { pattern: Some(pattern), .. } => format!("string matching `{pattern}`"),
        Shape::Text { .. } => "non-empty string".into(),
        Shape::Url => "`http://` or `https://` URL".into(),
        Shape::Enum(values) => values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(" | "),
        Shape::Boolean => "boolean".into(),
        Shape::PositiveInteger => "positive integer".into(),
        Shape::PositiveNumber => "positive number".into(),
        Shape::TextList => "list of strings".into(),
        Shape::EnumList(values) => {
            format!("non-empty list of {}", values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", "))
        }
        Shape::Object { nullable: true, .. } => "object or empty".into(),
        Shape::Object { .. } => "object".into(),
        Shape::ObjectList { .. } => "list of objects".into(),
        Shape::NamedMap { .. } => "map of names to objects".into(),
        Shape::StringMap => "map of strings".into(),
        Shape::Image => "image reference or `{build, context}`".into(),
    }
}

fn example_of(field: &Field) -> Option<&'static str> {
    Some(match field.name {
        "spec" => "spec: 1",
        "version" => "version: 0.1.0",
        "runner" => "runner: opencode",
        "model" => "model:\n  id: openai/gpt-5.6-terra",
        "id" => "id: openai/gpt-5.6-terra",
        "instructions" => "instructions: ./instructions.md",
        "skills" => "skills:\n  - ./skills/migrations",
        "tools" => "tools: [cargo, psql]",
        "mcps" => "mcps:\n  - name: database\n    url: https://api.example.com/mcp",
        "env" => "env:\n  DATABASE_API_TOKEN:\n    required: false",
        "workspaces" => "workspaces:\n  api:\n    access: read-write",
        "requirements" => "requirements:\n  os: [linux]\n  cpu: 4",
        "runtimes" => "runtimes:\n  local: {}\n  docker:\n    image: ghcr.io/example/tool:1.0",
        "image" => "image:\n  build: ./Dockerfile\n  context: .",
        _ => return None,
    })
}

fn field_markdown(field: &Field) -> String {
    let requirement = match (field.required, field.default) {
        (true, _) => "required".to_owned(),
        (false, Some(default)) => format!("optional, default `{default}`"),
        (false, None) => "optional".to_owned(),
    };
    let mut text = format!("**{}**: {} ({requirement})\n\n{}", field.name, type_of(&field.shape), field.doc);
    if let Some(example) = example_of(field) {
        text.push_str(&format!("\n\n```yaml\n{example}\n```"));
    }
    text
}

fn runner_markdown(runner: &str) -> Option<String> {
    let about = match runner {
        "opencode" => {
            "OpenCode (`opencode run --format json`). Configuration goes through `OPENCODE_CONFIG_CONTENT`; a `runner_config` may be a file or a directory."
        }
        "claude-code" => {
            "Claude Code (`claude -p --output-format stream-json`). A `runner_config` must be a JSON file with `permissions` and `max_turns`."
        }
        "pi" => "Pi (`pi --mode json`). A `runner_config` must be a directory; Pi has no native MCP transport.",
        _ => return None,
    };
    Some(format!("**runner** `{runner}`\n\n{about}"))
}

fn model_markdown(catalog: &ModelCatalog, id: &str) -> String {
    match catalog.model(id) {
        None => format!(
            "**model** `{id}`\n\nNot in the model catalog ({}). Unknown models need an explicit `model` on every route and a packaged `runner_config`.",
            catalog.version
        ),
        Some(model) => {
            let mut text =
                format!("**{}** `{id}`\n\n| provider | native id | credentials |\n|---|---|---|\n", model.name);
            for (provider, native) in catalog.default_routes(id) {
                let env = catalog.provider(provider).map(|p| p.env.join(", ")).unwrap_or_default();
                text.push_str(&format!("| {provider} | `{native}` | {env} |\n"));
            }
            text
        }
    }
}

fn provider_markdown(catalog: &ModelCatalog, provider: &str) -> String {
    match catalog.provider(provider) {
        Some(info) => format!(
            "**provider** `{provider}`: {}\n\nCredentials: {}",
            info.name,
            info.env.iter().map(|e| format!("`{e}`")).collect::<Vec<_>>().join(", ")
        ),
        None => format!("**provider** `{provider}`\n\nNot in the model catalog ({}).", catalog.version),
    }
}

fn env_markdown(root: &Node, name: &str, text: &str) -> String {
    let declaration =
        root.as_mapping().and_then(|m| m.get("env")).and_then(Node::as_mapping).and_then(|env| env.get(name));
    let required = declaration.and_then(|d| d.as_mapping()).and_then(|d| d.get("required")).map(|r| r.js_string());
    let mut out = match (declaration, required) {
        (None, _) => format!("**env** `{name}`: not declared in `env`"),
        (Some(_), Some(required)) => format!("**env** `{name}`: declared, required: `{required}`"),
        (Some(_), None) => format!("**env** `{name}`: declared, required (default)"),
    };
    let mut mcps: Vec<&Node> = Vec::new();
    for reference in header_references(text, root).into_iter().filter(|r| r.name == name) {
        if !mcps.iter().any(|seen| std::ptr::eq(*seen, reference.mcp)) {
            mcps.push(reference.mcp);
        }
    }
    let users: Vec<&str> = mcps.iter().filter_map(|mcp| mcp.as_mapping()?.get("name")?.as_str()).collect();
    if !users.is_empty() {
        out.push_str(&format!("\n\nReferenced by MCP {}", users.join(", ")));
    }
    out.push_str("\n\nThe value is supplied when a run starts (`--env`, `--env-file` or the environment); it never appears in the manifest or in generated configuration.");
    out
}

/// Hover of a path value. Nothing behind a link out of the repository (or package) is read: the hover says so.
fn path_markdown(fs: &dyn FileSystem, manifest_path: &Path, value: &str, skill: bool) -> String {
    let package = manifest_path.parent().unwrap_or(Path::new("/"));
    let boundary = wb_manifest::repository_root(manifest_path).unwrap_or_else(|| package.to_path_buf());
    let resolved = wb_manifest::normalize(&package.join(value));
    let mut out = format!("`{}`", resolved.display());
    let escapes = |path: &Path| wb_manifest::boundary::resolve_within(fs, path, &boundary).is_err();
    if escapes(&resolved) || (skill && escapes(&resolved.join("SKILL.md"))) {
        out.push_str("\n\nleads outside the repository, into /proc, /sys or /dev, or to a special file");
        return out;
    }
    let kind = fs.kind_followed(&resolved).ok();
    match kind {
        None => out.push_str("\n\ndoes not exist"),
        Some(FileKind::Directory) if skill => {
            let skill_file = resolved.join("SKILL.md");
            match fs.read_limited(&skill_file, wb_manifest::boundary::MAX_PACKAGE_FILE_BYTES) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    let directory = resolved.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let check = wb_manifest::skill::check_skill_text(&text, value, &directory);
                    if let Some(name) = check.name {
                        out.push_str(&format!("\n\n**skill** `{}`", name.value));
                    }
                    if let Some(description) = check.description {
                        out.push_str(&format!("\n\n{}", description.value));
                    }
                }
                Err(_) => out.push_str("\n\nhas no SKILL.md"),
            }
        }
        Some(FileKind::Directory) => out.push_str(" (directory)"),
        Some(_) => {}
    }
    out
}

/// Hover at `offset` of a parsed manifest.
pub fn hover(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    text: &str,
    root: &Node,
    offset: usize,
    catalog: &ModelCatalog,
) -> Option<Hover> {
    let offset = crate::context::snap(text, offset);
    let located = locate(root, offset)?;
    let spec = spec_of(Some(root));
    let range = located.range;
    let path = &located.path;
    let key = |i: usize| match path.get(i) {
        Some(Segment::Key(k)) => k.as_str(),
        _ => "",
    };
    // Values with facts of their own.
    if !located.on_key {
        let value = located.node.as_str().map(str::trim).unwrap_or_default();
        let markdown = match (path.len(), key(0)) {
            (1, "runner") => runner_markdown(value),
            (2, "model") if key(1) == "id" => Some(model_markdown(catalog, value)),
            (4, "model") if key(3) == "provider" => Some(provider_markdown(catalog, value)),
            (1, "instructions") | (1, "runner_config") => Some(path_markdown(fs, manifest_path, value, false)),
            (2, "skills") => Some(path_markdown(fs, manifest_path, value, true)),
            (4, "mcps") if key(2) == "headers" => {
                env_reference_at(text, root, offset).map(|(name, _)| env_markdown(root, &name, text))
            }
            _ if key(path.len().saturating_sub(1)) == "build" || key(path.len().saturating_sub(1)) == "context" => {
                Some(path_markdown(fs, manifest_path, value, false))
            }
            _ => None,
        };
        if let Some(markdown) = markdown {
            return Some(Hover { markdown, range });
        }
    }
    match fields::lookup(spec, path)? {
        Lookup::Field(field) => Some(Hover { markdown: field_markdown(field), range }),
        Lookup::MapKey { key_doc, .. } => {
            let markdown =
                if key(0) == "env" { env_markdown(root, key(1), text) } else { format!("**{}**\n\n{key_doc}", key(1)) };
            Some(Hover { markdown, range })
        }
    }
}
