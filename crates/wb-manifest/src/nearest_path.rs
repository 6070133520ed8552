//! "Did you mean" for paths a manifest names: the nearest existing sibling of a missing file or directory.

use std::path::Path;

use crate::fs::{FileKind, FileSystem};
use crate::rules::suggestions::closest;

/// The value with its last component replaced by the nearest existing entry of `kind` beside the missing
/// `path` (`./instrutions.md` → `./instructions.md`), or `None` when nothing near exists.
pub(crate) fn nearest_sibling(fs: &dyn FileSystem, path: &Path, value: &str, kind: FileKind) -> Option<String> {
    let missing = path.file_name()?.to_str()?;
    let entries = fs.read_dir(path.parent()?).ok()?;
    let names: Vec<&str> = entries
        .iter()
        .filter(|entry| matches!(fs.kind_followed(entry), Ok(found) if found == kind))
        .filter_map(|entry| entry.file_name()?.to_str())
        .filter(|name| *name != missing)
        .collect();
    let near = closest(missing, &names)?;
    let trimmed = value.trim_end_matches(['/', '\\']);
    let last = trimmed.rfind(['/', '\\']).map_or(0, |at| at + 1);
    let (prefix, written) = trimmed.split_at(last);
    (written == missing).then(|| format!("{prefix}{near}{}", &value[trimmed.len()..]))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::fs::{FileKind, OsFileSystem};

    #[test]
    fn a_misspelt_file_gets_the_existing_one() {
        let dir = std::env::temp_dir().join(format!("wb-nearest-{}", std::process::id()));
        let _ = std::fs::create_dir_all(dir.join("skills/review"));
        let _ = std::fs::write(dir.join("instructions.md"), "x");
        let near = |value: &str, kind| super::nearest_sibling(&OsFileSystem, &dir.join(value), value, kind);
        assert_eq!(near("./instrutions.md", FileKind::File).as_deref(), Some("./instructions.md"));
        assert_eq!(near("skills/reveiw/", FileKind::Directory).as_deref(), Some("skills/review/"));
        assert_eq!(near("./other.md", FileKind::File), None);
        assert_eq!(super::nearest_sibling(&OsFileSystem, Path::new("/"), "/", FileKind::File), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
