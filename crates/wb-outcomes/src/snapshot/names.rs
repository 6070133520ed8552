//! Names a changeset cannot carry (not UTF-8, control characters, backslashes...): how they are told apart,
//! escaped for a person, and reported as `unrepresentable_path` warnings instead of being dropped silently.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::{Kind, Snapshot, SnapshotFile, metadata_entry};

/// The metadata of an entry a changeset cannot name: enough to tell that it was created, changed or deleted.
#[derive(Debug)]
pub(super) struct RawStat {
    /// The entry as a snapshot holds it, without the target (which need not be UTF-8).
    stat: SnapshotFile,
    target: Option<Vec<u8>>,
}

impl PartialEq for RawStat {
    fn eq(&self, other: &RawStat) -> bool {
        self.stat.same_metadata(&other.stat) && self.target == other.target
    }
}

impl Eq for RawStat {}

impl RawStat {
    /// The metadata of a file or symlink at `full` (`meta` is its `symlink_metadata`).
    pub(super) fn of(meta: &fs::Metadata, full: &Path) -> RawStat {
        let symlink = meta.file_type().is_symlink();
        let mut stat = metadata_entry(meta, None);
        if symlink {
            stat.kind = Kind::Symlink;
        }
        RawStat {
            stat,
            target: symlink
                .then(|| fs::read_link(full).map(|t| t.into_os_string().into_encoded_bytes()).ok())
                .flatten(),
        }
    }
}

/// At most this many `unrepresentable_path` warnings per workspace; one more says how many were left out.
const MAX_UNREPRESENTABLE_WARNINGS: usize = 100;
/// Escaped names in warnings are cut to this many characters (the schema allows 4096 per message).
const MAX_WARNING_NAME_CHARS: usize = 1024;

/// Why a changeset cannot carry a workspace-relative name (raw bytes), as the end of a sentence, or `None`
/// when it can. The same rules as [`wb_manifest::outbox_declaration::unsafe_path_reason`], which every changeset path must
/// pass, plus UTF-8.
pub(super) fn name_problem(raw: &[u8]) -> Option<String> {
    match std::str::from_utf8(raw) {
        Err(_) => Some("a changeset path must be UTF-8".to_owned()),
        Ok(path) => wb_manifest::outbox_declaration::unsafe_path_reason(path)
            .map(|reason| format!("a changeset path {}", reason.replace("the outbox", "the workspace"))),
    }
}

/// A name as printable text, like `escape_debug`: control and other non-printable characters become `\n`,
/// `\u{1b}`..., bytes that are not UTF-8 `\xNN`, a backslash `\\`; quotes stay as they are. Cut to
/// `max_chars` characters (never inside an escape), ending with `…` when cut.
fn escape_name(raw: &[u8], max_chars: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    let mut push = |unit: &str| -> bool {
        let n = unit.chars().count();
        if chars + n > max_chars {
            out.push('…');
            return false;
        }
        out.push_str(unit);
        chars += n;
        true
    };
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            let unit = if matches!(c, '"' | '\'') { c.to_string() } else { c.escape_debug().to_string() };
            if !push(&unit) {
                return out;
            }
        }
        for byte in chunk.invalid() {
            if !push(&format!("\\x{byte:02x}")) {
                return out;
            }
        }
    }
    out
}

impl Snapshot {
    /// The files and symlinks left out because a changeset cannot name them (see
    /// [`Snapshot::unrepresentable_warnings`]), escaped like the warnings show them, in byte order.
    pub fn unrepresentable(&self) -> Vec<String> {
        self.unrepresentable.keys().map(|raw| escape_name(raw, MAX_WARNING_NAME_CHARS)).collect()
    }

    /// The `unrepresentable_path` warning messages for a changeset between `before` and `after`: one for every
    /// file or symlink whose name no changeset can carry (not UTF-8, control characters, backslashes, a drive
    /// prefix, over 4096 bytes...) that was created, changed (its metadata differs) or deleted in between, so it
    /// is never dropped silently. A rename to such a name shows as the deletion in the changeset and a warning
    /// here. Names are escaped (no raw control characters) and cut so each message stays far below the
    /// schema's 4096 characters; `workspace` (a named workspace) prefixes them as `<name>:`. At most 100
    /// messages, then one that counts the rest.
    pub fn unrepresentable_warnings(before: &Snapshot, after: &Snapshot, workspace: Option<&str>) -> Vec<String> {
        let label = workspace.map(|name| format!("{}:", escape_name(name.as_bytes(), 128))).unwrap_or_default();
        let mut names: BTreeSet<&Vec<u8>> = before.unrepresentable.keys().collect();
        names.extend(after.unrepresentable.keys());
        let mut messages = Vec::new();
        let mut left_out = 0usize;
        for raw in names {
            let what = match (before.unrepresentable.get(raw), after.unrepresentable.get(raw)) {
                (None, Some(_)) => "created",
                (Some(_), None) => "deleted",
                (Some(Some(old)), Some(Some(new))) if old != new => "changed",
                _ => continue,
            };
            if messages.len() == MAX_UNREPRESENTABLE_WARNINGS {
                left_out += 1;
                continue;
            }
            let reason = name_problem(raw).unwrap_or_default();
            messages.push(format!(
                "{label}{} is not in the outcome: it was {what} during the run, but its name cannot be carried by a \
                 changeset ({reason})",
                escape_name(raw, MAX_WARNING_NAME_CHARS)
            ));
        }
        if left_out > 0 {
            messages.push(format!(
                "{label}{left_out} more created, changed or deleted files are not in the outcome: their names cannot \
                 be carried by a changeset"
            ));
        }
        messages
    }
}
