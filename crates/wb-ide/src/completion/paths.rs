//! Package-relative path completion for instructions, skills, Dockerfiles, build contexts and `runner_config`.

use std::path::Path;

use wb_manifest::{FileKind, FileSystem};
use wb_syntax::TextRange;

use super::{CompletionItem, CompletionKind, value_item};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum PathWant {
    Markdown,
    Skill,
    Dockerfile,
    Directory,
    Any,
}

/// Package-relative paths under the directory the typed prefix names.
pub(super) fn path_items(
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
