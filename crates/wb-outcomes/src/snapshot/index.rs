//! Which clean tracked files of a Git workspace can be given back from their index blobs, decided the way
//! `git ls-files -m` would but without letting Git read (and so convert, through agent-configured filters) a
//! single file: the index's stat data (`git ls-files -s -v --debug -z`) against the snapshot's, and for the
//! files whose stat data cannot settle it, `git hash-object --no-filters` of the raw bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::git::{git, git_with_input};
use super::{Kind, Snapshot, SnapshotFile};

/// The stat data Git keeps for an index entry (32-bit fields, as the index stores them).
#[derive(Debug, PartialEq, Eq)]
struct IndexStat {
    ctime: (u32, u32),
    mtime: (u32, u32),
    ino: u32,
    size: u32,
}

/// One entry of the index listing.
#[derive(Debug)]
pub(super) struct IndexEntry {
    path: String,
    oid: String,
    /// A stage-0 regular file tagged `H` (cached: neither skip-worktree `S`, so possibly absent from the disk and,
    /// in a partial clone, from the object store, nor assume-unchanged `h`, whose edits Git does not look for).
    candidate: bool,
    stat: Option<IndexStat>,
}

/// What a baseline learns from the index, gathered concurrently with the metadata scan.
pub(super) struct GitIndex {
    entries: Vec<IndexEntry>,
    /// Each candidate blob's size (`git cat-file --batch-check`).
    sizes: BTreeMap<String, u64>,
    /// The index file's mtime (s, ns) taken before it was listed: an entry changed at or after it is racily
    /// clean, its stat data proves nothing (Git's racy-git rule).
    written: Option<(i64, i64)>,
}

/// `s:ns` of a `--debug` time line.
fn time_pair(text: &str) -> Option<(u32, u32)> {
    let (sec, nsec) = text.split_once(':')?;
    Some((sec.parse().ok()?, nsec.parse().ok()?))
}

/// The five `--debug` lines after an entry: `ctime: s:ns`, `mtime: s:ns`, `dev: d\tino: i`, `uid: u\tgid: g`,
/// `size: s\tflags: f` (each indented by two spaces).
fn parse_stat(lines: &[&str]) -> Option<IndexStat> {
    let field = |line: &str, name: &str| -> Option<String> {
        line.split('\t').find_map(|part| part.trim().strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    let [ctime, mtime, dev_ino, _, size_flags] = lines else { return None };
    Some(IndexStat {
        ctime: time_pair(&field(ctime, "ctime:")?)?,
        mtime: time_pair(&field(mtime, "mtime:")?)?,
        ino: field(dev_ino, "ino:")?.parse().ok()?,
        size: field(size_flags, "size:")?.parse().ok()?,
    })
}

/// Parses `git ls-files -s -v --debug -z`: each entry is `<tag> <mode> <oid> <stage>\t<path>\0` followed by
/// five newline-terminated `--debug` lines. `None` when the listing does not have that shape (then no blob is
/// trusted).
fn parse_listing(bytes: &[u8]) -> Option<Vec<IndexEntry>> {
    let mut entries = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let nul = rest.iter().position(|b| *b == 0)?;
        let header = std::str::from_utf8(&rest[..nul]).ok();
        rest = &rest[nul + 1..];
        let mut lines = Vec::with_capacity(5);
        for _ in 0..5 {
            let newline = rest.iter().position(|b| *b == b'\n')?;
            lines.push(std::str::from_utf8(&rest[..newline]).unwrap_or(""));
            rest = &rest[newline + 1..];
        }
        // A path that is not UTF-8 cannot be a snapshot file: skipped, the listing goes on.
        let Some((info, path)) = header.and_then(|h| h.split_once('\t')) else { continue };
        let [tag, mode, oid, stage] = info.split(' ').collect::<Vec<_>>()[..] else { return None };
        let candidate = tag == "H" && stage == "0" && (mode == "100644" || mode == "100755");
        entries.push(IndexEntry { path: path.to_owned(), oid: oid.to_owned(), candidate, stat: parse_stat(&lines) });
    }
    Some(entries)
}

/// The index file's mtime as (seconds, nanoseconds); `index_file` is what `git rev-parse --git-path index` printed
/// (relative to the workspace, or absolute).
fn index_written(root: &Path, index_file: &Path) -> Option<(i64, i64)> {
    let meta = std::fs::metadata(root.join(index_file)).ok()?;
    Some((meta.mtime(), meta.mtime_nsec()))
}

/// The index and the size of each blob that may be a clean file's, run right away so it overlaps the metadata
/// scan.
///
/// A clean file's index blob holds the *cleaned* bytes: with line-ending conversion (`eol=crlf`,
/// `core.autocrlf`), `ident` or a filter (Git LFS) they differ from the bytes in the workspace, and the previous
/// content must not be taken from the blob. Such a conversion changes the size, so only a blob with the file's
/// size is trusted; the other files are hashed and kept like dirty ones. Without sizes, no blob is trusted.
///
/// The sizes come from a second Git listing the index at the same time (`ls-files --format=%(objectsize)`);
/// when it cannot (a Git that does not know that placeholder, a blob missing from a partial clone), the
/// candidates' sizes are asked of `git cat-file --batch-check` after the listing. Sizes are keyed by object id,
/// so the two listings need not agree: an entry whose blob has no size is never trusted.
pub(super) fn read_index(root: &Path, index_file: Option<&Path>) -> Option<GitIndex> {
    let listed_sizes = {
        let root = root.to_path_buf();
        std::thread::spawn(move || {
            let out = git(&root, &["ls-files", "-z", "--format=%(objectname) %(objectsize)"])?;
            let mut sizes = BTreeMap::new();
            for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
                // `<oid> <size>`; a gitlink's size is `-`.
                let text = std::str::from_utf8(record).ok()?;
                let (oid, size) = text.split_once(' ')?;
                if let Ok(size) = size.parse() {
                    sizes.insert(oid.to_owned(), size);
                }
            }
            Some(sizes)
        })
    };
    let written = index_file.and_then(|file| index_written(root, file));
    let listing = git(root, &["ls-files", "-s", "-v", "--debug", "-z"]);
    let listed_sizes = listed_sizes.join().ok().flatten();
    let entries = parse_listing(&listing?)?;
    let sizes = match listed_sizes {
        Some(sizes) => sizes,
        None => batch_sizes(root, &entries),
    };
    Some(GitIndex { entries, sizes, written })
}

/// Each candidate blob's size, from `git cat-file --batch-check`.
fn batch_sizes(root: &Path, entries: &[IndexEntry]) -> BTreeMap<String, u64> {
    let oids: BTreeSet<&str> = entries.iter().filter(|e| e.candidate).map(|e| e.oid.as_str()).collect();
    let mut sizes = BTreeMap::new();
    if !oids.is_empty() {
        let input: String = oids.iter().map(|oid| format!("{oid}\n")).collect();
        let output = git_with_input(root, &["cat-file", "--batch-check"], input.into_bytes()).unwrap_or_default();
        for line in String::from_utf8_lossy(&output).lines() {
            // `<oid> blob <size>` (or `<oid> missing`).
            if let [oid, "blob", size] = line.split(' ').collect::<Vec<_>>()[..] {
                if let Ok(size) = size.parse() {
                    sizes.insert(oid.to_owned(), size);
                }
            }
        }
    }
    sizes
}

/// Whether the index's stat data proves the file unchanged since the index recorded it: every field Git
/// compares by default matches, and the file did not change at or after the index was written.
fn stat_proves_clean(stat: &IndexStat, file: &SnapshotFile, written: Option<(i64, i64)>) -> bool {
    let split = |ns: i128| ((ns.div_euclid(1_000_000_000)) as i64, (ns.rem_euclid(1_000_000_000)) as i64);
    let (mtime, ctime) = (split(file.mtime_ns), split(file.ctime_ns));
    // Git built without nanosecond support records 0 and compares seconds only.
    let same_time = |(sec, nsec): (u32, u32), (s, ns): (i64, i64)| s as u32 == sec && (nsec == 0 || ns as u32 == nsec);
    let racy = written.is_none_or(|written| mtime >= written);
    !racy
        && same_time(stat.mtime, mtime)
        && same_time(stat.ctime, ctime)
        && stat.ino == file.ino as u32
        && u64::from(stat.size) == file.size & 0xffff_ffff
}

impl Snapshot {
    /// Records the index blob of every clean tracked regular file whose blob has the file's size (see
    /// [`read_index`]): clean when the stat data proves it, else when the raw bytes hash to the blob
    /// (`git hash-object --no-filters`, which runs no filter; it reads only files of the blob's size, as
    /// `git ls-files -m` would).
    pub(super) fn attach_git_blobs(&mut self, index: &GitIndex) {
        let mut blobs: BTreeMap<&str, Option<&IndexEntry>> = BTreeMap::new();
        for entry in &index.entries {
            // Unmerged paths appear several times: never trust them.
            blobs.entry(&entry.path).and_modify(|v| *v = None).or_insert(entry.candidate.then_some(entry));
        }
        let mut proven = BTreeMap::new();
        let mut to_hash = Vec::new();
        for (path, file) in &self.files {
            let Some(Some(entry)) = blobs.get(path.as_str()) else { continue };
            if file.kind != Kind::File || index.sizes.get(&entry.oid) != Some(&file.size) {
                continue;
            }
            // `--stdin-paths` reads lines, and unquotes one that starts with a quote: such names stay unproven.
            if entry.stat.as_ref().is_some_and(|stat| stat_proves_clean(stat, file, index.written)) {
                proven.insert(path.clone(), entry.oid.clone());
            } else if !path.contains('\n') && !path.starts_with('"') {
                to_hash.push((path.clone(), entry.oid.clone()));
            }
        }
        if !to_hash.is_empty() {
            let input: String = to_hash.iter().map(|(path, _)| format!("{path}\n")).collect();
            let hashed = git_with_input(&self.root, &["hash-object", "--no-filters", "--stdin-paths"], input.into())
                .map(|out| split_lines(&out))
                .unwrap_or_default();
            if hashed.len() == to_hash.len() {
                for ((path, oid), actual) in to_hash.into_iter().zip(hashed) {
                    if actual == oid {
                        proven.insert(path, oid);
                    }
                }
            }
        }
        for (path, oid) in proven {
            if let Some(file) = self.files.get_mut(&path) {
                file.git_blob = Some(oid);
            }
        }
    }
}

fn split_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes).lines().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debug_listing_gives_each_entry_its_stat_data() {
        let listing = b"H 100644 45b983be36b73c0788dc9cbcb76cbb80fc7bb057 0\ta\nb\0  ctime: 17:12\n  mtime: 18:13\n  \
dev: 65024\tino: 100\n  uid: 0\tgid: 0\n  size: 3\tflags: 0\n\
S 100755 587be6b4c3f93f93c489c0111bba5596147a26cb 0\td/b\0  ctime: 1:2\n  mtime: 3:4\n  dev: 1\tino: 5\n  \
uid: 0\tgid: 0\n  size: 2\tflags: 40000000\n";
        let entries = parse_listing(listing).unwrap_or_default();
        assert_eq!(entries.len(), 2);
        assert_eq!((entries[0].path.as_str(), entries[0].candidate), ("a\nb", true));
        assert_eq!(entries[0].stat, Some(IndexStat { ctime: (17, 12), mtime: (18, 13), ino: 100, size: 3 }));
        assert_eq!((entries[1].path.as_str(), entries[1].candidate), ("d/b", false));
        assert!(parse_listing(b"H 100644 x 0\ta\0  ctime: 1:2\n").is_none());
    }
}
