//! Reviewing an outcome file by file (what the editors' changes lists and diff views show): each changed path
//! with its kind and line counts, and either side of it as text, a link target or "binary". The before side
//! comes from the content store, or, when the baseline kept no copy (a clean file Git could give back), from
//! the workspace while it still holds exactly those bytes; otherwise it is said not to be kept.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use crate::digest::content_digest;
use crate::error::{Error, Result};
use crate::manifest::{Changeset, Entry, Fingerprint, Outcome, State, WorkspaceBindings, WorkspaceRef};
use crate::snapshot::is_binary_text;
use crate::store::ContentStore;

/// Larger sides are not shown as text.
const TEXT_LIMIT: u64 = 8 * 1024 * 1024;

/// What a change does to its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// Only the permission bits changed.
    ModeChanged,
    /// A symlink on either side.
    Link,
}

/// One changed path of an outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// How `--apply --only` and `--diff` name it: `path`, or `name:path` in a named workspace.
    pub label: String,
    pub changeset: String,
    /// The named workspace, `None` for the primary one.
    pub workspace: Option<String>,
    pub path: String,
    pub kind: ChangeKind,
    /// Lines added and removed (from the review diff; 0 for a binary file).
    pub additions: u64,
    pub deletions: u64,
    /// True when either side is not text (or too large for the review diff).
    pub binary: bool,
    /// Taken on its own (`--apply --only`).
    pub taken: bool,
}

/// A path's label (`path`, or `name:path`).
pub fn label(changeset: &Changeset, path: &str) -> String {
    match &changeset.workspace {
        WorkspaceRef::Primary => path.to_owned(),
        WorkspaceRef::Named { name } => format!("{name}:{path}"),
    }
}

/// Every changed path of `outcome`, in changeset order; `taken` marks those taken on their own.
pub fn file_changes(store: &ContentStore, outcome: &Outcome, taken: &BTreeSet<String>) -> Result<Vec<FileChange>> {
    let mut changes = Vec::new();
    for changeset in &outcome.changesets {
        let review = match &changeset.review {
            Some(review) => String::from_utf8_lossy(&store.read(&review.digest)?).into_owned(),
            None => String::new(),
        };
        let sections = sections(&review);
        for entry in &changeset.entries {
            let section = sections.iter().find(|s| s.path == entry.path());
            let text = section.map_or("", |s| s.text);
            let binary = text.lines().any(|l| l.starts_with("Binary files "));
            let hunk_lines = text.lines().skip_while(|l| !l.starts_with("@@"));
            let (mut additions, mut deletions) = (0, 0);
            for line in hunk_lines {
                if line.starts_with('+') {
                    additions += 1;
                } else if line.starts_with('-') {
                    deletions += 1;
                }
            }
            let label = label(changeset, entry.path());
            changes.push(FileChange {
                taken: taken.contains(&label),
                label,
                changeset: changeset.id.clone(),
                workspace: match &changeset.workspace {
                    WorkspaceRef::Primary => None,
                    WorkspaceRef::Named { name } => Some(name.clone()),
                },
                path: entry.path().to_owned(),
                kind: kind(entry),
                additions,
                deletions,
                binary,
            });
        }
    }
    Ok(changes)
}

fn kind(entry: &Entry) -> ChangeKind {
    let link_before = matches!(entry.before(), Some(Fingerprint::Symlink { .. }));
    let link_after = matches!(entry.after(), Some(State::Symlink { .. }));
    match entry {
        _ if link_before || link_after => ChangeKind::Link,
        Entry::Add { .. } => ChangeKind::Added,
        Entry::Delete { .. } => ChangeKind::Deleted,
        Entry::Modify { before: Fingerprint::File { digest, .. }, after: State::File { content, .. }, .. }
            if *digest == content.digest =>
        {
            ChangeKind::ModeChanged
        }
        Entry::Modify { .. } => ChangeKind::Modified,
    }
}

/// Which side of a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Before,
    After,
}

/// One side of a change as an editor shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SideContent {
    /// The path does not exist on this side.
    Absent,
    Text {
        text: String,
        mode: u32,
    },
    Binary {
        size_bytes: u64,
        mode: u32,
    },
    Link {
        target: String,
    },
    /// The before bytes were not kept and the workspace no longer holds them.
    NotKept {
        size_bytes: u64,
    },
}

/// Side `side` of the change at `label` (`path`, or `name:path`). `bindings` say where the workspaces are (the
/// before side of a file the baseline did not copy is read there, when it still holds exactly those bytes).
pub fn side_content(
    store: &ContentStore,
    outcome: &Outcome,
    bindings: &WorkspaceBindings,
    label_wanted: &str,
    side: Side,
) -> Result<SideContent> {
    let found = outcome.changesets.iter().find_map(|changeset| {
        let entry = changeset.entries.iter().find(|e| label(changeset, e.path()) == label_wanted)?;
        Some((changeset, entry))
    });
    let Some((changeset, entry)) = found else { return Err(Error::NotInOutcome(label_wanted.to_owned())) };
    match side {
        Side::After => match entry.after() {
            None => Ok(SideContent::Absent),
            Some(State::Symlink { target, .. }) => Ok(SideContent::Link { target: target.clone() }),
            Some(State::File { content, mode }) => Ok(shown(store.read(&content.digest)?, *mode)),
        },
        Side::Before => match entry.before() {
            None => Ok(SideContent::Absent),
            Some(Fingerprint::Symlink { target, .. }) => Ok(SideContent::Link { target: target.clone() }),
            Some(Fingerprint::File { digest, mode, size_bytes }) => match store.read(digest) {
                Ok(bytes) => Ok(shown(bytes, *mode)),
                Err(Error::MissingContent(_)) => {
                    let root = match &changeset.workspace {
                        WorkspaceRef::Primary => bindings.primary.clone(),
                        WorkspaceRef::Named { name } => bindings.named.get(name).cloned(),
                    };
                    Ok(root
                        .and_then(|root| held(&root, entry.path(), digest, *size_bytes))
                        .map_or(SideContent::NotKept { size_bytes: *size_bytes }, |bytes| shown(bytes, *mode)))
                }
                Err(error) => Err(error),
            },
        },
    }
}

/// The bytes of `root/path` when they are exactly `digest`: read through directory handles that never follow
/// a link, bounded by the size the fingerprint names.
fn held(root: &Path, path: &str, digest: &str, size: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    if size > TEXT_LIMIT || wb_manifest::outbox_declaration::unsafe_path_reason(path).is_some() {
        return None;
    }
    let parts: Vec<&str> = path.split('/').collect();
    let (name, parents) = parts.split_last()?;
    let mut dir = crate::beneath::Dir::open(root).ok()?;
    for parent in parents {
        dir = dir.child(parent).ok()??;
    }
    let mut bytes = Vec::new();
    dir.open_file(name).ok()?.take(size + 1).read_to_end(&mut bytes).ok()?;
    (content_digest(&bytes) == digest).then_some(bytes)
}

fn shown(bytes: Vec<u8>, mode: u32) -> SideContent {
    let size_bytes = bytes.len() as u64;
    if size_bytes > TEXT_LIMIT || is_binary_text(&bytes) {
        return SideContent::Binary { size_bytes, mode };
    }
    match String::from_utf8(bytes) {
        Ok(text) => SideContent::Text { text, mode },
        Err(_) => SideContent::Binary { size_bytes, mode },
    }
}

/// One file's part of a review diff.
pub struct Section<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

/// A review diff cut at each `diff --git a/P b/P` line (hunk lines always begin with ` `, `+`, `-` or `\`).
pub fn sections(review: &str) -> Vec<Section<'_>> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in review.split_inclusive('\n') {
        if line.starts_with("diff --git a/") {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts.push(review.len());
    starts
        .windows(2)
        .filter_map(|pair| {
            let text = review.get(pair[0]..pair[1])?;
            let header = text.lines().next()?.strip_prefix("diff --git ")?;
            // `a/P b/P`: both halves are the same path, so its length is known even when it holds spaces.
            let length = header.len().checked_sub(5)? / 2;
            let path = header.get(2..2 + length)?;
            Some(Section { path, text })
        })
        .collect()
}
