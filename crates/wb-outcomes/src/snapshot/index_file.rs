//! Git's index file read directly: the entries `git ls-files -s -v --debug` would list, without starting Git
//! and parsing two megabytes of its text for a 10,000-file workspace.
//!
//! The index is agent-writable, so the reader trusts nothing in it: every length is checked against the bytes
//! there are, and anything it does not know (another version, a split index, an extension Git would have to
//! understand, an entry that does not fit) gives `None`, and Git lists the index instead. What it reads is used
//! as the listing was: an entry is trusted only when its blob has the file's size and its stat data (or the
//! file's raw bytes) prove the file clean.

use super::index::{IndexEntry, IndexStat};

/// The entries of an index file of format `version` 2, 3 or 4 whose object ids are `hash_len` bytes (20 for
/// SHA-1, 32 for SHA-256); `None` when it is anything else.
pub(super) fn parse(bytes: &[u8], hash_len: usize) -> Option<Vec<IndexEntry>> {
    if !matches!(hash_len, 20 | 32) || bytes.len() < 12 + hash_len || bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(bytes, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = usize::try_from(be32(bytes, 8)?).ok()?;
    // The 40 bytes of stat data, the object id, the flags.
    let fixed = 40 + hash_len + 2;
    let body = &bytes[..bytes.len() - hash_len];
    if count > body.len() / fixed {
        return None;
    }
    let mut entries = Vec::with_capacity(count);
    let mut at = 12;
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let stat = |field: usize| be32(body, start + 4 * field);
        let (ctime, mtime) = ((stat(0)?, stat(1)?), (stat(2)?, stat(3)?));
        let (ino, mode, size) = (stat(5)?, stat(6)?, stat(9)?);
        let oid = body.get(start + 40..start + 40 + hash_len)?;
        let flags = be16(body, start + 40 + hash_len)?;
        at = start + fixed;
        let assume_valid = flags & 0x8000 != 0;
        let stage = (flags >> 12) & 0x3;
        let mut skip_worktree = false;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            skip_worktree = be16(body, at)? & 0x4000 != 0;
            at += 2;
        }
        let name = if version == 4 {
            // The name is the previous one less its last `strip` bytes, then what follows up to a NUL.
            let (strip, used) = varint(body.get(at..)?)?;
            at += used;
            let suffix_len = body.get(at..)?.iter().position(|b| *b == 0)?;
            let keep = previous.len().checked_sub(usize::try_from(strip).ok()?)?;
            previous.truncate(keep);
            previous.extend_from_slice(&body[at..at + suffix_len]);
            at += suffix_len + 1;
            previous.clone()
        } else {
            let name_len = body.get(at..)?.iter().position(|b| *b == 0)?;
            let name = body[at..at + name_len].to_vec();
            // Padded with one to eight NULs to a multiple of eight bytes from the entry's start.
            let len = at + name_len - start;
            at = start + (len + 8) / 8 * 8;
            if at > body.len() {
                return None;
            }
            name
        };
        // A path that is not UTF-8 cannot be a snapshot file: skipped, as the listing's reader does.
        let Ok(path) = String::from_utf8(name) else { continue };
        let candidate = stage == 0 && !skip_worktree && !assume_valid && matches!(mode, 0o100644 | 0o100755);
        let stat = Some(IndexStat { ctime, mtime, ino, size });
        entries.push(IndexEntry { path, oid: crate::digest::hex(oid), candidate, stat, size: None });
    }
    // Extensions: a split index (`link`) keeps entries elsewhere, and one Git must understand (lower case) may
    // change what they mean; optional ones (upper case) and sparse directories (`sdir`) do not.
    while at < body.len() {
        let signature = body.get(at..at + 4)?;
        let len = usize::try_from(be32(body, at + 4)?).ok()?;
        if signature[0].is_ascii_lowercase() && signature != b"sdir" {
            return None;
        }
        at = at.checked_add(8 + len)?;
    }
    (at == body.len()).then_some(entries)
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

/// Git's offset varint (each continuation adds one before shifting): the value and the bytes it took.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = u64::from(*bytes.first()? & 0x7f);
    let mut used = 1;
    while bytes[used - 1] & 0x80 != 0 {
        let byte = *bytes.get(used)?;
        value = value.checked_add(1)?.checked_mul(128)? | u64::from(byte & 0x7f);
        used += 1;
    }
    Some((value, used))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use wb_testsupport::{git, write};

    use super::*;

    /// What Git lists of the index, as the listing's reader reads it.
    fn listed(root: &Path) -> String {
        let out = std::process::Command::new("git")
            .args(["-C"])
            .arg(root)
            .args(["ls-files", "-s", "-v", "--debug", "-z"])
            .output()
            .unwrap();
        format!("{:?}", super::super::index::parse_listing(&out.stdout).unwrap())
    }

    fn read(root: &Path, hash_len: usize) -> Option<String> {
        let bytes = std::fs::read(root.join(".git/index")).unwrap();
        parse(&bytes, hash_len).map(|entries| format!("{entries:?}"))
    }

    /// A repository with what an index can hold: executable and plain files, a link, a deep path, a long
    /// name, an unmerged path (three stages), an assume-unchanged and a skip-worktree entry, an intent-to-add.
    fn repository(object_format: &str) -> tempfile::TempDir {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        git(root, &["init", "-q", &format!("--object-format={object_format}"), "-b", "main"]);
        write(root, "a.txt", "a\n");
        write(root, "run.sh", "#!/bin/sh\n");
        std::fs::set_permissions(root.join("run.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
        write(root, "deep/er/still/file.md", "deep\n");
        write(root, &format!("{}.txt", "n".repeat(200)), "long\n");
        write(root, "conflict.txt", "base\n");
        write(root, "kept.txt", "kept\n");
        write(root, "sparse.txt", "sparse\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "base"]);
        git(root, &["checkout", "-q", "-b", "other"]);
        write(root, "conflict.txt", "other\n");
        git(root, &["commit", "-q", "-am", "other"]);
        git(root, &["checkout", "-q", "main"]);
        write(root, "conflict.txt", "main\n");
        git(root, &["commit", "-q", "-am", "main"]);
        let _ = std::process::Command::new("git").arg("-C").arg(root).args(["merge", "-q", "other"]).output();
        git(root, &["update-index", "--assume-unchanged", "kept.txt"]);
        git(root, &["update-index", "--skip-worktree", "sparse.txt"]);
        write(root, "later.txt", "later\n");
        git(root, &["add", "-N", "later.txt"]);
        temp
    }

    /// The index read directly is what Git lists, entry for entry, in every version and both object formats.
    #[test]
    fn the_index_reads_as_git_lists_it() {
        for (format, hash_len) in [("sha1", 20), ("sha256", 32)] {
            let repo = repository(format);
            let root = repo.path();
            for version in ["4", "3", "2"] {
                if version == "2" {
                    // Version 2 cannot hold the extended flags of skip-worktree and intent-to-add.
                    git(root, &["update-index", "--no-skip-worktree", "sparse.txt"]);
                    let _ = std::process::Command::new("git")
                        .arg("-C")
                        .arg(root)
                        .args(["rm", "-q", "--cached", "later.txt"])
                        .output();
                } else {
                    git(root, &["update-index", "--skip-worktree", "sparse.txt"]);
                }
                git(root, &["update-index", "--index-version", version]);
                let expected = listed(root);
                assert!(expected.contains("conflict.txt"), "{expected}");
                assert_eq!(read(root, hash_len).as_deref(), Some(expected.as_str()), "{format} version {version}");
                assert_eq!(read(root, 52 - hash_len), None, "{format} read with the other format's ids");
            }
        }
    }

    /// A split index keeps its entries in another file: left to Git.
    #[test]
    fn a_split_index_is_left_to_git() {
        let repo = repository("sha1");
        git(repo.path(), &["update-index", "--split-index"]);
        assert_eq!(read(repo.path(), 20), None);
    }

    /// Whatever an agent leaves as the index: every cut and every byte changed gives entries or `None`, and
    /// never a panic.
    #[test]
    fn any_damage_gives_entries_or_nothing() {
        let repo = repository("sha1");
        let bytes = std::fs::read(repo.path().join(".git/index")).unwrap();
        for end in 0..bytes.len() {
            let _ = parse(&bytes[..end], 20);
        }
        for at in 0..bytes.len() {
            for value in [0x00, 0xff, 0x80, b'/'] {
                let mut damaged = bytes.clone();
                damaged[at] = value;
                let _ = parse(&damaged, 20);
            }
        }
        assert!(parse(&bytes, 20).is_some());
    }
}
