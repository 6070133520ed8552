//! The changeset between a baseline and a later snapshot of the same workspace: only files whose metadata
//! differs are hashed; after contents and the review diff go to the content store.

use itertools::{EitherOrBoth, Itertools};

use super::review::{Side, file_diff, is_binary, media_type};
use super::{Kind, Snapshot};
use crate::error::{Error, Result};
use crate::manifest::{
    Base, Changeset, Entry, Fingerprint, State, Stats, WorkspaceRef, link_on_disk, symlink_stays_inside,
};
use crate::store::{ContentStore, OutcomeBudget};

impl Changeset {
    /// The changeset between a baseline and a later snapshot of the same workspace: ordered entries
    /// (by path), stats, after contents stored in `store` (charged to `budget`), and a unified review diff
    /// stored as `text/x-diff` content. Only files whose metadata differs are hashed.
    pub fn between(
        id: &str,
        workspace: WorkspaceRef,
        before: &Snapshot,
        after: &Snapshot,
        store: &ContentStore,
        budget: &mut OutcomeBudget,
    ) -> Result<Changeset> {
        // The store never enters a changeset, whichever way the snapshots were taken.
        let home = super::walk::home_within(&after.root, store.home());
        // Both snapshots are ordered by path: one pass over the two side by side finds every path added, removed
        // or changed, in order (a set of the union and two lookups per path took 3 to 4 ms for 10,000 files).
        let changed: Vec<&String> = before
            .files
            .iter()
            .merge_join_by(&after.files, |(old, _), (new, _)| old.cmp(new))
            .filter_map(|pair| match pair {
                EitherOrBoth::Both((path, old), (_, new)) => (!old.same_metadata(new)).then_some(path),
                EitherOrBoth::Left((path, _)) | EitherOrBoth::Right((path, _)) => Some(path),
            })
            .filter(|path| !home.as_deref().is_some_and(|home| super::walk::is_in_home(home, path)))
            .collect();
        let mut blobs = before.read_blobs(changed.iter().map(|path| path.as_str()), store);
        let mut entries = Vec::new();
        let mut stats = Stats::default();
        let mut diff = String::new();
        for path in changed {
            let old = before.files.get(path);
            let new = after.files.get(path);
            let (before_fp, before_side) = match old {
                None => (None, Side::Absent),
                Some(file) if file.kind == Kind::Symlink => {
                    let target = file.target.clone().unwrap_or_default();
                    (Some(Fingerprint::Symlink { mode: file.mode, target: target.clone() }), Side::Link(target))
                }
                Some(file) => {
                    let (bytes, digest) = before.previous_bytes(path, file, store, &mut blobs)?;
                    let fp = Fingerprint::File { digest, mode: file.mode, size_bytes: bytes.len() as u64 };
                    (Some(fp), Side::Bytes(bytes))
                }
            };
            let (after_state, after_side) = match new {
                None => (None, Side::Absent),
                Some(file) if file.kind == Kind::Symlink => {
                    let target = file.target.clone().unwrap_or_default();
                    if !symlink_stays_inside(path, &target, &|link| after.link_at(link)) {
                        return Err(Error::EscapingSymlink(path.clone()));
                    }
                    (Some(State::Symlink { mode: file.mode, target: target.clone() }), Side::Link(target))
                }
                Some(file) => {
                    let bytes = after.read_current(path)?;
                    after.note_hashed(path);
                    let content = store.put_bytes(&bytes, &media_type(path, &bytes), budget)?;
                    let _ = file.digest.set(content.digest.clone());
                    (Some(State::File { content, mode: file.mode }), Side::Bytes(bytes))
                }
            };
            let unchanged = match (&before_fp, &after_state) {
                (Some(Fingerprint::File { digest, mode, .. }), Some(State::File { content, mode: m })) => {
                    *digest == content.digest && mode == m
                }
                (Some(Fingerprint::Symlink { mode, target }), Some(State::Symlink { mode: m, target: t })) => {
                    mode == m && target == t
                }
                (None, None) => true,
                _ => false,
            };
            if unchanged {
                continue;
            }
            if matches!(&before_side, Side::Bytes(b) if is_binary(b))
                || matches!(&after_side, Side::Bytes(b) if is_binary(b))
            {
                stats.binary_files += 1;
            }
            diff.push_str(&file_diff(path, &before_fp, &after_state, &before_side, &after_side));
            let entry = match (before_fp, after_state) {
                (None, Some(after)) => {
                    stats.additions += 1;
                    Entry::Add { path: path.clone(), after }
                }
                (Some(before), Some(after)) => {
                    stats.modifications += 1;
                    Entry::Modify { path: path.clone(), before, after }
                }
                (Some(before), None) => {
                    stats.deletions += 1;
                    Entry::Delete { path: path.clone(), before }
                }
                (None, None) => continue,
            };
            entries.push(entry);
        }
        let review =
            if entries.is_empty() { None } else { Some(store.put_bytes(diff.as_bytes(), "text/x-diff", budget)?) };
        let changeset = Changeset {
            id: id.to_owned(),
            workspace,
            base: Base { snapshot_digest: before.digest()?, git_revision: before.git_revision.clone() },
            entries,
            review,
            stats,
        };
        changeset.validate()?;
        Ok(changeset)
    }
}

impl Snapshot {
    /// The target of the symlink at a workspace-relative path of this snapshot's workspace, as it is now: the
    /// snapshot's own record, else the disk (a link the snapshot leaves out, under `node_modules` say, is still
    /// followed when judging where another link leads).
    fn link_at(&self, path: &str) -> Option<String> {
        match self.files.get(path) {
            Some(file) => file.target.clone(),
            None => link_on_disk(&self.root, path),
        }
    }
}
