//! Where a symlink target leads: resolved the way the kernel resolves it, following the symlinks an after-state
//! records (a changeset's own, a workspace's, or a destination's), so a chain of links inside the workspace
//! cannot point out of it. The one judgement capture, validation (so export and apply) and apply's destination
//! check share.

use std::collections::HashMap;
use std::path::Path;

use super::{Changeset, State};

/// At most this many symlinks are followed resolving one target (Linux's limit before `ELOOP`).
const MAX_FOLLOWED: usize = 40;

/// Whether a target can be judged at all: relative, no backslash, 1 to 4096 bytes.
fn is_plain(target: &str) -> bool {
    !target.is_empty() && target.len() <= 4096 && !target.starts_with('/') && !target.contains('\\')
}

/// Whether `target`, the target of a symlink at the workspace-relative `path`, stays inside the workspace: both
/// lexically (a `..` climbs one component back) and resolved through the symlinks `link_at` names (a
/// workspace-relative path → its target), the way the kernel resolves it. Requiring both keeps every target the
/// lexical rule refused refused, and refuses the chains it let through.
pub(crate) fn symlink_stays_inside(path: &str, target: &str, link_at: &dyn Fn(&str) -> Option<String>) -> bool {
    resolves_inside(path, target, &|_| None) && resolves_inside(path, target, link_at)
}

/// Resolves `target` component by component from the link's directory; a component that `link_at` names as a
/// symlink is replaced by its own target, resolved from where that link is, so a later `..` climbs from where the
/// link led, not lexically (`b -> .` makes `b/b/..` the workspace's parent). Absolute, empty or oversized
/// targets, loops and chains of more than 40 links are unsafe. Iterative, and bounded by 40 targets of at most
/// 4096 bytes.
fn resolves_inside(path: &str, target: &str, link_at: &dyn Fn(&str) -> Option<String>) -> bool {
    if !is_plain(target) {
        return false;
    }
    let mut dir: Vec<String> = path.split('/').map(str::to_owned).collect();
    dir.pop();
    // The components still to resolve, the next one last.
    let mut pending: Vec<String> = target.split('/').rev().map(str::to_owned).collect();
    let mut followed = 0;
    while let Some(component) = pending.pop() {
        match component.as_str() {
            "" | "." => {}
            ".." => {
                if dir.pop().is_none() {
                    return false;
                }
            }
            name => {
                dir.push(name.to_owned());
                if let Some(next) = link_at(&dir.join("/")) {
                    followed += 1;
                    if followed > MAX_FOLLOWED || !is_plain(&next) {
                        return false;
                    }
                    dir.pop();
                    pending.extend(next.split('/').rev().map(str::to_owned));
                }
            }
        }
    }
    true
}

/// Whether a symlink target stays inside the workspace, judged lexically (no other link followed).
pub(crate) fn symlink_target_is_safe(path: &str, target: &str) -> bool {
    resolves_inside(path, target, &|_| None)
}

/// The target of the symlink at a workspace-relative path under `root` on disk, if it is one.
pub(crate) fn link_on_disk(root: &Path, path: &str) -> Option<String> {
    let full = root.join(path);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    std::fs::read_link(&full).ok().map(|target| target.to_string_lossy().into_owned())
}

impl Changeset {
    /// The path of the first symlink this changeset makes that would lead out of `root` once applied there:
    /// each target resolved through the changeset's own after-state, and through the links `root` holds at the
    /// paths the changeset leaves alone (a destination need not be the workspace the outcome was captured in).
    /// [`Changeset::validate`] judges through the changeset's links only; apply also asks this of its
    /// destination.
    pub fn escaping_link_in(&self, root: &Path) -> Option<&str> {
        let touched: HashMap<&str, Option<&str>> = self
            .entries
            .iter()
            .map(|entry| {
                let link = match entry.after() {
                    Some(State::Symlink { target, .. }) => Some(target.as_str()),
                    _ => None,
                };
                (entry.path(), link)
            })
            .collect();
        // Below a path the changeset makes a file or removes, nothing exists once it is applied.
        let under_touched = |path: &str| path.match_indices('/').any(|(at, _)| touched.contains_key(&path[..at]));
        let link_at = |path: &str| match touched.get(path) {
            Some(link) => link.map(str::to_owned),
            None if under_touched(path) => None,
            None => link_on_disk(root, path),
        };
        self.entries.iter().find_map(|entry| match entry.after() {
            Some(State::Symlink { target, .. }) if !symlink_stays_inside(entry.path(), target, &link_at) => {
                Some(entry.path())
            }
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |path| pairs.iter().find(|(p, _)| *p == path).map(|(_, t)| (*t).to_owned())
    }

    #[test]
    fn targets_are_resolved_through_the_recorded_links() {
        // `b -> .`: `b/b` is the link's own directory, and `..` climbs from there.
        assert!(symlink_target_is_safe("c", "b/b/../../etc"));
        assert!(!symlink_stays_inside("c", "b/b/../../etc", &links(&[("b", ".")])));
        assert!(!symlink_stays_inside("d/c", "b/b/../../../etc", &links(&[("d/b", ".")])));
        assert!(symlink_stays_inside("c", "b/../x", &links(&[("b", "d/e")])));
        assert!(!symlink_stays_inside("c", "b/x", &links(&[("b", "d/../..")])));
        assert!(!symlink_stays_inside("c", "b/x", &links(&[("b", "/etc")])));
        assert!(!symlink_stays_inside("c", "b/../../x", &links(&[("b", "d/e")])), "lexically outside stays refused");
        assert!(
            !symlink_stays_inside("c", "b", &links(&[("b", "c"), ("c", "b")])),
            "a loop is never followed for ever"
        );
        assert!(symlink_stays_inside("d/e/c", "../../x", &links(&[])));
        assert!(!symlink_stays_inside("d/e/c", "../../../x", &links(&[])));
    }
}
