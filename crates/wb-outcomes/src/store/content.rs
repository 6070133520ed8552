//! The content store: `$WORKBENCH_HOME/blobs/sha256/<hex[0:2]>/<hex[2:]>`, 0700 directories and 0600
//! files, written atomically (temp + rename), verified on write and on read, with the facts' limits.

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;

use crate::digest::{content_digest, hex, is_digest};
use crate::error::{Error, Result, io};
use crate::files::{open_regular, private_dir};
use crate::manifest::Content;

const MIB: u64 = 1024 * 1024;

/// Storage limits (the facts' defaults; tests may lower them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest single blob.
    pub per_blob: u64,
    /// Largest amount of unique content referenced by one outcome.
    pub per_outcome: u64,
    /// Largest total size of the blob store.
    pub total: u64,
    /// Largest manifest.
    pub per_manifest: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { per_blob: 256 * MIB, per_outcome: 512 * MIB, total: 5 * 1024 * MIB, per_manifest: 16 * MIB }
    }
}

/// The unique content one outcome references so far (for the per-outcome limit).
#[derive(Debug, Default)]
pub struct OutcomeBudget {
    digests: HashSet<String>,
    bytes: u64,
}

impl OutcomeBudget {
    pub fn new() -> OutcomeBudget {
        OutcomeBudget::default()
    }

    /// Unique bytes counted so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Content-addressed blob storage.
#[derive(Debug)]
pub struct ContentStore {
    home: PathBuf,
    limits: Limits,
    /// Total bytes stored (measured at open, then maintained).
    total: Mutex<u64>,
}

impl ContentStore {
    /// Opens (creating if needed) the store of a Workbench home with the default limits.
    pub fn open(home: &Path) -> Result<ContentStore> {
        ContentStore::with_limits(home, Limits::default())
    }

    pub fn with_limits(home: &Path, limits: Limits) -> Result<ContentStore> {
        let root = home.join("blobs").join("sha256");
        private_dir(&root)?;
        let total = usage(&root);
        Ok(ContentStore { home: home.to_path_buf(), limits, total: Mutex::new(total) })
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Total bytes in the store.
    pub fn total_bytes(&self) -> u64 {
        self.total.lock().map(|t| *t).unwrap_or(0)
    }

    /// Where a digest's blob lives (whether or not it exists).
    pub fn path_of(&self, digest: &str) -> Result<PathBuf> {
        if !is_digest(digest) {
            return Err(Error::InvalidDigest(digest.to_owned()));
        }
        let hex = &digest["sha256:".len()..];
        Ok(self.home.join("blobs").join("sha256").join(&hex[..2]).join(&hex[2..]))
    }

    pub fn contains(&self, digest: &str) -> bool {
        self.path_of(digest).is_ok_and(|p| p.is_file())
    }

    /// Stores bytes, charged to `budget`.
    pub fn put_bytes(&self, bytes: &[u8], media_type: &str, budget: &mut OutcomeBudget) -> Result<Content> {
        self.put_bytes_with(bytes, media_type, budget, true)
    }

    /// `durable`: fsync and re-read the written blob before renaming it into place. Baselines (transient,
    /// taken before a run) skip both; outcome content never does.
    fn put_bytes_with(
        &self,
        bytes: &[u8],
        media_type: &str,
        budget: &mut OutcomeBudget,
        durable: bool,
    ) -> Result<Content> {
        let digest = content_digest(bytes);
        let size = bytes.len() as u64;
        self.admit(&digest, size, budget)?;
        if !self.contains(&digest) {
            let target = self.path_of(&digest)?;
            let parent = target.parent().unwrap_or(Path::new("/"));
            private_dir(parent)?;
            let written = blob_temp(parent).and_then(|mut temp| {
                temp.write_all(bytes)?;
                if durable {
                    temp.as_file().sync_all()?;
                }
                Ok(temp)
            });
            self.finish(written, &target, &digest, size, durable)?;
        }
        charge(budget, &digest, size);
        Ok(Content { digest, media_type: media_type.to_owned(), size_bytes: size })
    }

    /// Stores a file (small files in one read, larger ones streamed while hashing), charged to `budget`.
    pub fn put_file(&self, path: &Path, media_type: &str, budget: &mut OutcomeBudget) -> Result<Content> {
        self.put_file_with(path, media_type, budget, true)
    }

    pub(crate) fn put_file_with(
        &self,
        path: &Path,
        media_type: &str,
        budget: &mut OutcomeBudget,
        durable: bool,
    ) -> Result<Content> {
        let context = format!("Cannot read {}", path.display());
        // Workspace and outbox files: never through a symlink swapped in, never blocking on a FIFO.
        let mut source = open_regular(path).map_err(io(context.clone()))?;
        let declared = source.metadata().map_err(io(context.clone()))?.len();
        if declared > self.limits.per_blob {
            return Err(Error::Quota(self.limits.per_blob));
        }
        if declared <= MIB {
            let mut bytes = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
            source.read_to_end(&mut bytes).map_err(io(context))?;
            return self.put_bytes_with(&bytes, media_type, budget, durable);
        }
        let parent = self.home.join("blobs").join("sha256");
        let mut temp = blob_temp(&parent).map_err(io(context.clone()))?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let copy = (|| -> std::io::Result<()> {
            let mut buffer = vec![0u8; 256 * 1024];
            loop {
                let n = source.read(&mut buffer)?;
                if n == 0 {
                    break;
                }
                size += n as u64;
                if size > self.limits.per_blob {
                    return Err(std::io::Error::other("blob limit"));
                }
                hasher.update(&buffer[..n]);
                temp.write_all(&buffer[..n])?;
            }
            if durable { temp.as_file().sync_all() } else { Ok(()) }
        })();
        // A temp file that is not persisted is removed when dropped.
        if let Err(error) = copy {
            if size > self.limits.per_blob {
                return Err(Error::Quota(self.limits.per_blob));
            }
            return Err(Error::Io { context, cause: error });
        }
        let digest = format!("sha256:{}", hex(&hasher.finalize()));
        self.admit(&digest, size, budget)?;
        if !self.contains(&digest) {
            let target = self.path_of(&digest)?;
            private_dir(target.parent().unwrap_or(Path::new("/")))?;
            self.finish(Ok(temp), &target, &digest, size, durable)?;
        }
        charge(budget, &digest, size);
        Ok(Content { digest, media_type: media_type.to_owned(), size_bytes: size })
    }

    /// Reads a blob, verifying its digest.
    pub fn read(&self, digest: &str) -> Result<Vec<u8>> {
        let path = self.path_of(digest)?;
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::MissingContent(digest.to_owned())),
            Err(e) => return Err(Error::Io { context: format!("Cannot read {}", path.display()), cause: e }),
        };
        if content_digest(&bytes) != digest {
            return Err(Error::DigestMismatch(digest.to_owned()));
        }
        Ok(bytes)
    }

    /// Checks the limits for a blob; a failure never deletes anything.
    fn admit(&self, digest: &str, size: u64, budget: &OutcomeBudget) -> Result<()> {
        if size > self.limits.per_blob {
            return Err(Error::Quota(self.limits.per_blob));
        }
        if !budget.digests.contains(digest) && budget.bytes + size > self.limits.per_outcome {
            return Err(Error::Quota(self.limits.per_outcome));
        }
        if !self.contains(digest) && self.total_bytes() + size > self.limits.total {
            return Err(Error::Quota(self.limits.total));
        }
        Ok(())
    }

    /// Verifies the written temp file (when `verify`), then renames it into place.
    fn finish(
        &self,
        written: std::io::Result<NamedTempFile>,
        target: &Path,
        digest: &str,
        size: u64,
        verify: bool,
    ) -> Result<()> {
        let cannot_write = io(format!("Cannot write {}", target.display()));
        let temp = match written {
            Ok(temp) => temp,
            Err(error) => return Err(cannot_write(error)),
        };
        if verify {
            match fs::read(temp.path()) {
                Ok(bytes) if content_digest(&bytes) == digest => {}
                Ok(_) => return Err(Error::DigestMismatch(digest.to_owned())),
                Err(error) => return Err(cannot_write(error)),
            }
        }
        temp.persist(target).map_err(|e| cannot_write(e.error))?;
        if let Ok(mut total) = self.total.lock() {
            *total += size;
        }
        Ok(())
    }
}

/// A new private (0600) temp file for a blob in `dir`, named `.<random>.tmp` (not counted as a blob), removed
/// when dropped unless persisted.
fn blob_temp(dir: &Path) -> std::io::Result<NamedTempFile> {
    tempfile::Builder::new().prefix(".").suffix(".tmp").permissions(fs::Permissions::from_mode(0o600)).tempfile_in(dir)
}

pub(crate) fn charge(budget: &mut OutcomeBudget, digest: &str, size: u64) {
    if budget.digests.insert(digest.to_owned()) {
        budget.bytes += size;
    }
}

fn usage(root: &Path) -> u64 {
    let mut total = 0;
    let Ok(prefixes) = fs::read_dir(root) else { return 0 };
    for prefix in prefixes.flatten() {
        let Ok(files) = fs::read_dir(prefix.path()) else { continue };
        for file in files.flatten() {
            if let Ok(meta) = file.metadata()
                && meta.is_file()
                && !file.file_name().to_string_lossy().starts_with('.')
            {
                total += meta.len();
            }
        }
    }
    total
}
