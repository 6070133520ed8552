//! The review diff a changeset carries (`text/x-diff`, Git's unified format with modes) and the media type
//! guessed for stored content.

use crate::manifest::{Fingerprint, State};

/// Larger files are not shown in the review diff.
const DIFF_LIMIT: usize = 1024 * 1024;

pub(super) fn media_type(path: &str, bytes: &[u8]) -> String {
    let lower = path.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let known = match ext {
        "html" | "htm" => "text/html",
        "md" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "csv" => "text/csv",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "yaml" | "yml" => "application/yaml",
        _ => "",
    };
    if !known.is_empty() {
        known.to_owned()
    } else if is_binary(bytes) {
        "application/octet-stream".to_owned()
    } else {
        "text/plain".to_owned()
    }
}

pub(crate) fn guess_media_type(path: &str, bytes: &[u8]) -> String {
    media_type(path, bytes)
}

pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// One side of a change, for the review diff.
pub(super) enum Side {
    Absent,
    Bytes(Vec<u8>),
    Link(String),
}

fn git_mode(fp_mode: Option<u32>, symlink: bool) -> String {
    if symlink {
        "120000".to_owned()
    } else if fp_mode.is_some_and(|m| m & 0o111 != 0) {
        "100755".to_owned()
    } else {
        "100644".to_owned()
    }
}

pub(super) fn file_diff(
    path: &str,
    before: &Option<Fingerprint>,
    after: &Option<State>,
    old: &Side,
    new: &Side,
) -> String {
    let mut out = format!("diff --git a/{path} b/{path}\n");
    let old_mode = before.as_ref().map(|f| match f {
        Fingerprint::File { mode, .. } => git_mode(Some(*mode), false),
        Fingerprint::Symlink { .. } => git_mode(None, true),
    });
    let new_mode = after.as_ref().map(|s| match s {
        State::File { mode, .. } => git_mode(Some(*mode), false),
        State::Symlink { .. } => git_mode(None, true),
    });
    match (&old_mode, &new_mode) {
        (None, Some(m)) => out.push_str(&format!("new file mode {m}\n")),
        (Some(m), None) => out.push_str(&format!("deleted file mode {m}\n")),
        (Some(a), Some(b)) if a != b => out.push_str(&format!("old mode {a}\nnew mode {b}\n")),
        _ => {}
    }
    let text = |side: &Side| -> Option<String> {
        match side {
            Side::Absent => Some(String::new()),
            Side::Link(target) => Some(target.clone()),
            Side::Bytes(bytes) if bytes.len() <= DIFF_LIMIT && !is_binary(bytes) => {
                String::from_utf8(bytes.clone()).ok()
            }
            Side::Bytes(_) => None,
        }
    };
    let a = if matches!(old, Side::Absent) { "/dev/null".to_owned() } else { format!("a/{path}") };
    let b = if matches!(new, Side::Absent) { "/dev/null".to_owned() } else { format!("b/{path}") };
    match (text(old), text(new)) {
        (Some(old_text), Some(new_text)) => {
            if old_text != new_text {
                let diff = similar::TextDiff::from_lines(&old_text, &new_text);
                out.push_str(&diff.unified_diff().context_radius(3).header(&a, &b).to_string());
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        _ => out.push_str(&format!("Binary files {a} and {b} differ\n")),
    }
    out
}
