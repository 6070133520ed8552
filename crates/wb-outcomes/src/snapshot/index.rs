//! Which clean tracked files of a Git workspace can be given back from their index blobs, decided the way
//! `git ls-files -m` would but without letting Git read (and so convert, through agent-configured filters) a
//! single file: the index's stat data (the index file read by `gix-index`) against the snapshot's, and for the
//! files whose stat data cannot settle it, `git hash-object --no-filters` of the raw bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::git::git_with_input;
use super::{Kind, Snapshot, SnapshotFile};

/// The stat data Git keeps for an index entry (32-bit fields, as the index stores them).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct IndexStat {
    pub(super) ctime: (u32, u32),
    pub(super) mtime: (u32, u32),
    pub(super) ino: u32,
    pub(super) size: u32,
}

/// One entry of the index.
#[derive(Debug)]
pub(super) struct IndexEntry {
    pub(super) path: String,
    pub(super) oid: String,
    /// A stage-0 regular file that is cached: neither skip-worktree (possibly absent from the disk and, in a
    /// partial clone, from the object store), nor assume-unchanged (whose edits Git does not look for), nor
    /// intent-to-add.
    pub(super) candidate: bool,
    pub(super) stat: Option<IndexStat>,
    /// The blob's size, when known (candidates only).
    pub(super) size: Option<u64>,
}

/// What a baseline learns from the index, gathered concurrently with the metadata scan.
pub(super) struct GitIndex {
    entries: Vec<IndexEntry>,
    /// The index file's mtime (s, ns) taken before it was read: an entry changed at or after it is racily
    /// clean, its stat data proves nothing (Git's racy-git rule).
    written: Option<(i64, i64)>,
}

/// The most bytes an index file may have (a million entries take about 100 MB); a larger one is not read, and
/// no blob is trusted.
const MAX_INDEX_BYTES: u64 = 512 * 1024 * 1024;

/// The entries of the index file at `path` (never read through a link, never a FIFO, at most
/// [`MAX_INDEX_BYTES`]), decoded by `gix-index` with object ids of `object_hash`. `None` when it cannot be read
/// or decoded, or is a split index (its entries are partly in another file): then no blob is trusted.
fn read_entries(path: &Path, object_hash: gix_index::hash::Kind) -> Option<Vec<IndexEntry>> {
    use gix_index::entry::{Flags, Mode, Stage};
    use std::io::Read;
    let file = crate::files::open_regular(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_INDEX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_INDEX_BYTES {
        return None;
    }
    let options = gix_index::decode::Options { thread_limit: Some(1), ..Default::default() };
    let (state, _) = gix_index::State::from_bytes(&bytes, filetime::FileTime::now(), object_hash, options).ok()?;
    if state.link().is_some() {
        return None;
    }
    let entries = state.entries().iter().filter_map(|entry| {
        // A path that is not UTF-8 cannot be a snapshot file.
        let path = std::str::from_utf8(entry.path(&state)).ok()?.to_owned();
        // A cached stage-0 regular file: neither skip-worktree (possibly absent from the disk and, in a partial
        // clone, from the object store), nor assume-unchanged (whose edits Git does not look for), nor only
        // intended to be added.
        let flags = Flags::ASSUME_VALID | Flags::SKIP_WORKTREE | Flags::INTENT_TO_ADD;
        let candidate = entry.stage() == Stage::Unconflicted
            && matches!(entry.mode, Mode::FILE | Mode::FILE_EXECUTABLE)
            && !entry.flags.intersects(flags);
        let stat = &entry.stat;
        let stat = IndexStat {
            ctime: (stat.ctime.secs, stat.ctime.nsecs),
            mtime: (stat.mtime.secs, stat.mtime.nsecs),
            ino: stat.ino,
            size: stat.size,
        };
        Some(IndexEntry { path, oid: entry.id.to_string(), candidate, stat: Some(stat), size: None })
    });
    Some(entries.collect())
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
/// A blob's size is asked of Git once per Workbench home (`git cat-file --batch-check`, which for loose objects
/// opens and inflates every one: 80 ms for 10,000 files) and remembered in `sizes_cache`: an object id names
/// its content, so the size it was once seen with is its size for ever. A wrong entry (the home damaged) cannot
/// make a baseline give back wrong bytes: a blob is read back only when it has the size the file had
/// ([`Snapshot::previous_bytes`](super::Snapshot)), else the previous content is reported lost. An entry whose
/// blob has no size is never trusted.
pub(super) fn read_index(
    root: &Path,
    index_file: Option<&Path>,
    object_hash: Option<gix_index::hash::Kind>,
    sizes_cache: Option<&Path>,
) -> Option<GitIndex> {
    let (index_file, object_hash) = (index_file?, object_hash?);
    let written = index_written(root, index_file);
    let (entries, cache_text) = std::thread::scope(|scope| {
        let cache_text = scope.spawn(|| sizes_cache.and_then(|path| crate::files::read_regular(path).ok()));
        let entries = read_entries(&root.join(index_file), object_hash);
        (entries, cache_text.join().ok().flatten())
    });
    let mut entries = entries?;
    let cache_text = cache_text.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let known = size_cache_entries(&cache_text);
    let mut missing = BTreeSet::new();
    for entry in entries.iter_mut().filter(|entry| entry.candidate) {
        entry.size = known.get(entry.oid.as_str()).copied();
        if entry.size.is_none() {
            missing.insert(entry.oid.clone());
        }
    }
    if !missing.is_empty() {
        let learned = batch_sizes(root, &missing);
        for entry in entries.iter_mut().filter(|entry| entry.candidate && entry.size.is_none()) {
            entry.size = learned.get(entry.oid.as_str()).copied();
        }
        if let Some(cache) = sizes_cache.filter(|_| !learned.is_empty()) {
            write_size_cache(cache, &known, &learned, &entries);
        }
    }
    Some(GitIndex { entries, written })
}

/// The most blob sizes the cache keeps (about 50 bytes each); past it, only the current index's are kept.
const MAX_CACHED_SIZES: usize = 500_000;

/// The cache's `<oid> <size>` lines; anything else (a damaged cache) is skipped.
fn size_cache_entries(text: &str) -> HashMap<&str, u64> {
    let mut sizes = HashMap::with_capacity(text.len() / 48);
    for line in text.lines() {
        let Some((oid, size)) = line.split_once(' ') else { continue };
        if is_object_id(oid)
            && let Ok(size) = size.parse()
        {
            sizes.insert(oid, size);
        }
    }
    sizes
}

fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Rewrites the cache with what it held and what was learned (or, past [`MAX_CACHED_SIZES`], with this index's
/// sizes only). A cache that cannot be written is not kept: the next baseline asks Git again.
fn write_size_cache(path: &Path, known: &HashMap<&str, u64>, learned: &BTreeMap<String, u64>, current: &[IndexEntry]) {
    use std::fmt::Write;
    let mut text = String::new();
    let mut line = |oid: &str, size: u64| {
        let _ = writeln!(text, "{oid} {size}");
    };
    if known.len() + learned.len() <= MAX_CACHED_SIZES {
        known.iter().for_each(|(oid, size)| line(oid, *size));
    } else {
        current.iter().filter_map(|e| Some((e.oid.as_str(), e.size?))).for_each(|(oid, size)| line(oid, size));
    }
    learned.iter().for_each(|(oid, size)| line(oid, *size));
    if let Some(parent) = path.parent()
        && crate::files::private_dir(parent).is_ok()
    {
        let _ = crate::files::write_cache(path, text.as_bytes());
    }
}

/// The sizes of blobs, from `git cat-file --batch-check`.
fn batch_sizes(root: &Path, oids: &BTreeSet<String>) -> BTreeMap<String, u64> {
    let mut sizes = BTreeMap::new();
    if !oids.is_empty() {
        let input: String = oids.iter().map(|oid| format!("{oid}\n")).collect();
        let output = git_with_input(root, &["cat-file", "--batch-check"], input.into_bytes()).unwrap_or_default();
        for line in String::from_utf8_lossy(&output).lines() {
            // `<oid> blob <size>` (or `<oid> missing`).
            if let [oid, "blob", size] = line.split(' ').collect::<Vec<_>>()[..]
                && let Ok(size) = size.parse()
            {
                sizes.insert(oid.to_owned(), size);
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
        // The entries in path order (the index keeps them so; sorting a sorted list is one pass), each path once:
        // unmerged paths appear several times and are never trusted.
        let mut blobs: Vec<(&str, Option<&IndexEntry>)> =
            index.entries.iter().map(|entry| (entry.path.as_str(), entry.candidate.then_some(entry))).collect();
        blobs.sort_by(|a, b| a.0.cmp(b.0));
        blobs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = None;
            }
            same
        });
        let mut proven = BTreeMap::new();
        let mut to_hash = Vec::new();
        // Both in path order: one walk over the two.
        let mut blobs = blobs.into_iter().peekable();
        for (path, file) in &mut self.files {
            while blobs.next_if(|(blob, _)| *blob < path.as_str()).is_some() {}
            let Some((_, Some(entry))) = blobs.next_if(|(blob, _)| *blob == path.as_str()) else { continue };
            if file.kind != Kind::File || entry.size != Some(file.size) {
                continue;
            }
            // `--stdin-paths` reads lines, and unquotes one that starts with a quote: such names stay unproven.
            if entry.stat.as_ref().is_some_and(|stat| stat_proves_clean(stat, file, index.written)) {
                file.git_blob = Some(entry.oid.clone());
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
    #![allow(clippy::unwrap_used)]

    use super::*;
    use wb_testsupport::git;

    /// Every entry as `git ls-files -s -v` lists it: path, object id, and whether its tag, stage and mode make
    /// it a candidate (tag `H`, stage 0, a regular file), for plain and executable files, a symlink, a
    /// skip-worktree and an assume-unchanged file, an intent-to-add file, index versions 2 to 4, and SHA-256.
    #[test]
    fn the_entries_are_the_ones_git_lists() {
        for (version, format) in [("2", "sha1"), ("3", "sha1"), ("4", "sha1"), ("4", "sha256")] {
            let temp = tempfile::tempdir().unwrap();
            let root = temp.path();
            git(root, &["init", "-q", &format!("--object-format={format}")]);
            for (path, text) in [("a.txt", "a\n"), ("dir/b.txt", "bb\n"), ("dir/deep/c.sh", "#!/bin/sh\n"), ("s", "s")]
            {
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
            }
            std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
            git(root, &["add", "."]);
            git(root, &["update-index", "--chmod=+x", "dir/deep/c.sh"]);
            git(root, &["update-index", "--skip-worktree", "dir/b.txt"]);
            git(root, &["update-index", "--assume-unchanged", "s"]);
            std::fs::write(root.join("later.txt"), "later\n").unwrap();
            git(root, &["add", "-N", "later.txt"]);
            git(root, &["update-index", &format!("--index-version={version}")]);
            let kind = if format == "sha1" { gix_index::hash::Kind::Sha1 } else { gix_index::hash::Kind::Sha256 };
            let read = read_entries(&root.join(".git/index"), kind).unwrap();
            let got: Vec<(String, String, bool)> =
                read.iter().map(|entry| (entry.path.clone(), entry.oid.clone(), entry.candidate)).collect();
            let listing = git(root, &["ls-files", "-s", "-v"]);
            let want: Vec<(String, String, bool)> = listing
                .lines()
                .map(|line| {
                    let (info, path) = line.split_once('\t').unwrap();
                    let fields: Vec<&str> = info.split(' ').collect();
                    let candidate = fields[0] == "H" && fields[3] == "0" && ["100644", "100755"].contains(&fields[1]);
                    // An intent-to-add entry is listed as cached, with the empty blob: never given back.
                    let candidate = candidate && path != "later.txt";
                    (path.to_owned(), fields[2].to_owned(), candidate)
                })
                .collect();
            assert_eq!(got, want, "index version {version}, {format}");
            let clean = read.iter().find(|entry| entry.path == "a.txt").and_then(|entry| entry.stat.as_ref()).unwrap();
            assert_eq!(u64::from(clean.size), std::fs::metadata(root.join("a.txt")).unwrap().len());
            assert!(read_entries(&root.join(".git/index"), other(kind)).is_none(), "the other object format");
        }
    }

    fn other(kind: gix_index::hash::Kind) -> gix_index::hash::Kind {
        match kind {
            gix_index::hash::Kind::Sha1 => gix_index::hash::Kind::Sha256,
            _ => gix_index::hash::Kind::Sha1,
        }
    }

    /// A file that is not a regular file, or is too damaged to decode, gives no entries (then no blob is trusted).
    #[test]
    fn an_index_that_is_not_one_gives_nothing() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("index");
        std::fs::write(&path, b"DIRC\0\0\0\x02\0\0\0\x05short").unwrap();
        assert!(read_entries(&path, gix_index::hash::Kind::Sha1).is_none());
        std::os::unix::fs::symlink(&path, temp.path().join("link")).unwrap();
        assert!(read_entries(&temp.path().join("link"), gix_index::hash::Kind::Sha1).is_none());
        assert!(read_entries(temp.path(), gix_index::hash::Kind::Sha1).is_none());
    }
}
