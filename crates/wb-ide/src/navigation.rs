//! Navigation: the files a manifest names (definition, document links) and environment variables
//! (definition of `${VAR}`, references, rename).

use std::path::{Path, PathBuf};

use wb_manifest::env_refs::{is_env_name, scalar_refs};
use wb_manifest::fields::Segment;
use wb_manifest::{FileKind, FileSystem};
use wb_syntax::{Node, TextRange, Value};

use crate::context::locate;

/// A jump from a range of the manifest to a file (and optionally a range in it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub origin: TextRange,
    pub target: PathBuf,
    pub target_range: Option<TextRange>,
}

/// At most this many document links (each is a look at the disk): the first skills of a longer list.
pub const MAX_LINKS: usize = 500;

/// Every path value in the manifest with the file it names (files that exist only), at most [`MAX_LINKS`].
pub fn document_links(fs: &dyn FileSystem, manifest_path: &Path, root: &Node) -> Vec<Link> {
    let package = manifest_path.parent().unwrap_or(Path::new("/"));
    let mut links = Vec::new();
    let Some(top) = root.as_mapping() else { return links };
    let mut push = |node: &Node, skill: bool| {
        let Some(value) = node.as_str().map(str::trim).filter(|v| !v.is_empty()) else { return };
        if let Some(target) = path_target(fs, package, value, skill) {
            links.push(Link { origin: node.range, target, target_range: None });
        }
    };
    for key in ["instructions", "runner_config"] {
        if let Some(node) = top.get(key) {
            push(node, false);
        }
    }
    if let Some(skills) = top.get("skills").and_then(Node::as_sequence) {
        for skill in skills.iter().take(MAX_LINKS) {
            push(skill, true);
        }
    }
    let mut images: Vec<&Node> = top.get("image").into_iter().collect();
    if let Some(runtimes) = top.get("runtimes").and_then(Node::as_mapping) {
        images.extend(runtimes.entries.iter().filter_map(|e| e.value.as_mapping()?.get("image")));
    }
    for image in images.into_iter().take(MAX_LINKS) {
        if let Some(build) = image.as_mapping().and_then(|m| m.get("build")) {
            push(build, false);
        }
    }
    links.truncate(MAX_LINKS);
    links
}

/// The file a path value leads to: the file itself, or a skill directory's `SKILL.md`.
pub(crate) fn path_target(fs: &dyn FileSystem, package: &Path, value: &str, skill: bool) -> Option<PathBuf> {
    let path = wb_manifest::normalize(&package.join(value));
    match fs.kind_followed(&path).ok()? {
        FileKind::File => Some(path),
        FileKind::Directory => {
            let skill_file = path.join("SKILL.md");
            if skill || matches!(fs.kind_followed(&skill_file), Ok(FileKind::File)) {
                return matches!(fs.kind_followed(&skill_file), Ok(FileKind::File)).then_some(skill_file);
            }
            // A runner_config directory: its first file, so the editor has something to open.
            let entries = fs.read_dir(&path).ok()?;
            entries.into_iter().find(|entry| matches!(fs.kind_followed(entry), Ok(FileKind::File)))
        }
        _ => None,
    }
}

/// Go to definition: a path value's file, or a `${VAR}`'s `env` declaration.
pub fn definition(fs: &dyn FileSystem, manifest_path: &Path, text: &str, root: &Node, offset: usize) -> Vec<Link> {
    let offset = crate::context::snap(text, offset);
    if let Some((name, origin)) = env_reference_at(text, root, offset) {
        if let Some(declaration) = env_declaration(root, &name) {
            return vec![Link { origin, target: manifest_path.to_owned(), target_range: Some(declaration) }];
        }
        return Vec::new();
    }
    document_links(fs, manifest_path, root).into_iter().filter(|link| link.origin.contains_inclusive(offset)).collect()
}

fn env_declaration(root: &Node, name: &str) -> Option<TextRange> {
    root.as_mapping()?.get("env")?.as_mapping()?.entry(name).map(|entry| entry.key_range)
}

/// A `${NAME}` inside an MCP header value.
pub(crate) struct HeaderReference<'r> {
    /// The MCP item whose header holds the reference.
    pub mcp: &'r Node,
    pub name: &'r str,
    /// The range of `NAME` (what a rename replaces).
    pub range: TextRange,
}

/// Every `${NAME}` inside MCP header values that can be located in the text.
pub(crate) fn header_references<'r>(text: &str, root: &'r Node) -> Vec<HeaderReference<'r>> {
    let mut found = Vec::new();
    let Some(mcps) = root.as_mapping().and_then(|m| m.get("mcps")).and_then(Node::as_sequence) else { return found };
    for mcp in mcps {
        let Some(headers) = mcp.as_mapping().and_then(|m| m.get("headers")).and_then(Node::as_mapping) else {
            continue;
        };
        for header in &headers.entries {
            let Some(value) = header.value.as_str() else { continue };
            for reference in scalar_refs(text, value, header.value.range) {
                if let Some(range) = reference.name_range() {
                    found.push(HeaderReference { mcp, name: reference.name, range });
                }
            }
        }
    }
    found
}

/// The reference under the cursor (on its name or its braces' inner edges): its name and the range of the name.
pub(crate) fn env_reference_at(text: &str, root: &Node, offset: usize) -> Option<(String, TextRange)> {
    header_references(text, root)
        .into_iter()
        .find(|reference| reference.range.contains_inclusive(offset))
        .map(|reference| (reference.name.to_owned(), reference.range))
}

/// The env name under the cursor: on its declaration key or on a `${NAME}` reference.
fn env_name_at(text: &str, root: &Node, offset: usize) -> Option<String> {
    if let Some((name, _)) = env_reference_at(text, root, offset) {
        return Some(name);
    }
    let located = locate(root, offset)?;
    match (located.on_key, located.path.as_slice()) {
        (true, [Segment::Key(env), Segment::Key(name)]) if env == "env" => Some(name.clone()),
        _ => None,
    }
}

/// The env variable under the cursor's declaration (if declared) and its `${NAME}` references; `None` when the
/// cursor is on no env variable.
pub(crate) fn env_occurrences(text: &str, root: &Node, offset: usize) -> Option<(Option<TextRange>, Vec<TextRange>)> {
    let name = env_name_at(text, root, offset)?;
    let references = header_references(text, root).into_iter().filter(|r| r.name == name).map(|r| r.range).collect();
    Some((env_declaration(root, &name), references))
}

/// Every occurrence of the env variable under the cursor: its declaration first, then each `${NAME}`.
pub fn env_references(text: &str, root: &Node, offset: usize, include_declaration: bool) -> Vec<TextRange> {
    let offset = crate::context::snap(text, offset);
    let Some(name) = env_name_at(text, root, offset) else { return Vec::new() };
    let mut ranges = Vec::new();
    if include_declaration {
        ranges.extend(env_declaration(root, &name));
    }
    ranges.extend(header_references(text, root).into_iter().filter(|r| r.name == name).map(|r| r.range));
    ranges
}

/// Why an env variable cannot be renamed (the text the editor shows).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenameError {
    #[error("Invalid environment variable name: {0}")]
    InvalidName(String),
    /// The cursor is on no env variable.
    #[error("Rename works on environment variables declared in env or referenced as ${{NAME}}")]
    NotAVariable,
    #[error("{0} is already declared in env")]
    AlreadyDeclared(String),
}

/// Renames the env variable under the cursor in its declaration and every reference.
pub fn rename_env(
    text: &str,
    root: &Node,
    offset: usize,
    new_name: &str,
) -> Result<Vec<(TextRange, String)>, RenameError> {
    if !is_env_name(new_name) {
        return Err(RenameError::InvalidName(new_name.to_owned()));
    }
    let ranges = env_references(text, root, offset, true);
    if ranges.is_empty() {
        return Err(RenameError::NotAVariable);
    }
    if let Value::Mapping(top) = &root.value
        && top.get("env").and_then(Node::as_mapping).is_some_and(|env| env.get(new_name).is_some())
    {
        return Err(RenameError::AlreadyDeclared(new_name.to_owned()));
    }
    Ok(ranges.into_iter().map(|range| (range, new_name.to_owned())).collect())
}

/// The prepare-rename range: the name under the cursor, if it can be renamed.
pub fn env_range_at(text: &str, root: &Node, offset: usize) -> Option<TextRange> {
    let offset = crate::context::snap(text, offset);
    if let Some((_, range)) = env_reference_at(text, root, offset) {
        return Some(range);
    }
    let located = locate(root, offset)?;
    match (located.on_key, located.path.as_slice()) {
        (true, [Segment::Key(env), Segment::Key(_)]) if env == "env" => Some(located.range),
        _ => None,
    }
}
