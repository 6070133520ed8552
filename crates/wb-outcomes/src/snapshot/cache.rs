//! Baselines (a snapshot whose previous bytes stay recoverable) and their digest cache, which spares reading
//! files unchanged since the last baseline of the same workspace.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Kind, Snapshot, SnapshotFile};
use crate::digest::hex;
use crate::error::{Error, Result};
use crate::store::{ContentStore, OutcomeBudget};

/// The facts' baseline limit: unique bytes a baseline keeps.
const BASELINE_LIMIT: u64 = 512 * 1024 * 1024;

impl Snapshot {
    /// A baseline: a snapshot whose previous bytes stay recoverable (see the module docs). Files that Git
    /// cannot give back are hashed now and kept in `store`. The store's Workbench home is left out when the
    /// workspace contains it.
    pub fn baseline(root: &Path, store: &ContentStore) -> Result<Snapshot> {
        Snapshot::baseline_with(root, store, true)
    }

    /// [`Snapshot::baseline`] without the digest cache, read or written: for a directory that exists for one run
    /// only (a remote runtime's working copy), whose cache would never be read again.
    pub fn baseline_uncached(root: &Path, store: &ContentStore) -> Result<Snapshot> {
        Snapshot::baseline_with(root, store, false)
    }

    fn baseline_with(root: &Path, store: &ContentStore, cached: bool) -> Result<Snapshot> {
        let snapshot = Snapshot::capture_with(root, true, Some(store.home()))?;
        let cache_path = baseline_cache_path(store, root);
        let (cache, cache_text) = if cached { read_baseline_cache(&cache_path) } else { (BTreeMap::new(), None) };
        let mut budget = OutcomeBudget::new();
        for (path, file) in &snapshot.files {
            if file.kind != Kind::File || file.git_blob.is_some() {
                continue;
            }
            let cached = cache.get(path).filter(|c| c.matches(file) && store.contains(&c.digest));
            let digest = match cached {
                Some(cached) => {
                    crate::store::charge(&mut budget, &cached.digest, file.size);
                    cached.digest.clone()
                }
                None => {
                    let full = snapshot.root.join(path);
                    let content = store.put_file_with(&full, "application/octet-stream", &mut budget, false)?;
                    snapshot.note_hashed(path);
                    content.digest
                }
            };
            if budget.bytes() > BASELINE_LIMIT {
                return Err(Error::Snapshot("the workspace baseline exceeds 512 MiB".to_owned()));
            }
            let _ = file.digest.set(digest);
        }
        if cached {
            write_baseline_cache(&cache_path, &snapshot, cache_text.as_deref());
        }
        Ok(snapshot)
    }
}

/// A baseline digest cache entry: a file whose size, mtime, ctime and inode are unchanged since it was
/// hashed is not read again (like Git's index). Entries changed within 2 s of writing the cache are left
/// out, so a write within the timestamp granularity can never be mistaken for an unchanged file.
struct CachedDigest {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    digest: String,
}

impl CachedDigest {
    fn matches(&self, file: &SnapshotFile) -> bool {
        self.size == file.size
            && self.mtime_ns == file.mtime_ns
            && self.ctime_ns == file.ctime_ns
            && self.ino == file.ino
    }
}

/// `$WORKBENCH_HOME/cache/baselines/<sha256 of the workspace path>`.
fn baseline_cache_path(store: &ContentStore, root: &Path) -> PathBuf {
    let key = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let name = hex(&Sha256::digest(key.to_string_lossy().as_bytes()));
    store.home().join("cache").join("baselines").join(name)
}

/// Lines of `path\0size\0mtime_ns\0ctime_ns\0ino\0digest`, and the text they were read from; a damaged cache
/// is ignored.
fn read_baseline_cache(path: &Path) -> (BTreeMap<String, CachedDigest>, Option<String>) {
    let mut cache = BTreeMap::new();
    let Ok(text) = fs::read_to_string(path) else { return (cache, None) };
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\0').collect();
        let [path, size, mtime, ctime, ino, digest] = fields[..] else { continue };
        let (Ok(size), Ok(mtime_ns), Ok(ctime_ns), Ok(ino)) = (size.parse(), mtime.parse(), ctime.parse(), ino.parse())
        else {
            continue;
        };
        if crate::digest::is_digest(digest) {
            cache.insert(path.to_owned(), CachedDigest { size, mtime_ns, ctime_ns, ino, digest: digest.to_owned() });
        }
    }
    (cache, Some(text))
}

/// Writes the cache, unless it would say what it says (a clean Git workspace's is empty every time).
fn write_baseline_cache(path: &Path, snapshot: &Snapshot, previous: Option<&str>) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i128::try_from(d.as_nanos()).unwrap_or(0))
        .unwrap_or(0);
    let settled = now - 2_000_000_000;
    let mut text = String::new();
    for (name, file) in &snapshot.files {
        let Some(digest) = file.digest.get() else { continue };
        if file.mtime_ns >= settled || file.ctime_ns >= settled {
            continue;
        }
        text.push_str(&format!(
            "{name}\0{}\0{}\0{}\0{}\0{digest}\n",
            file.size, file.mtime_ns, file.ctime_ns, file.ino
        ));
    }
    if previous == Some(text.as_str()) {
        return;
    }
    if let Some(parent) = path.parent()
        && crate::files::private_dir(parent).is_ok()
    {
        let _ = crate::files::write_cache(path, text.as_bytes());
    }
}
