//! "Did you mean" for paths a manifest names: the nearest existing sibling of a missing file or directory.

use std::path::Path;

use crate::fs::{FileKind, FileSystem};
use crate::rules::suggestions::Candidates;

/// Entries of a directory looked at for "did you mean", at most (a package's directory holds a handful).
const MAX_SIBLINGS: usize = 4096;

/// The names of the entries of `kind` in `dir` (links followed), at most [`MAX_SIBLINGS`] of them: the
/// candidates for every missing path in it, listed once per check.
pub(crate) fn entry_names(fs: &dyn FileSystem, dir: &Path, kind: FileKind) -> Candidates {
    let Ok(entries) = fs.read_dir(dir) else { return Candidates::new(Vec::new()) };
    let names = entries
        .iter()
        .take(MAX_SIBLINGS)
        .filter(|entry| matches!(fs.kind_followed(entry), Ok(found) if found == kind))
        .filter_map(|entry| entry.file_name()?.to_str().map(str::to_owned))
        .collect();
    Candidates::new(names)
}

/// The value with its last component replaced by the nearest of `names` (the entries beside the missing
/// `path`, from [`entry_names`]): `./instrutions.md` → `./instructions.md`, or `None` when nothing near exists.
pub(crate) fn nearest_sibling(names: &Candidates, path: &Path, value: &str) -> Option<String> {
    let missing = path.file_name()?.to_str()?;
    let near = names.closest_except(missing, missing)?;
    let trimmed = value.trim_end_matches(['/', '\\']);
    let last = trimmed.rfind(['/', '\\']).map_or(0, |at| at + 1);
    let (prefix, written) = trimmed.split_at(last);
    (written == missing).then(|| format!("{prefix}{near}{}", &value[trimmed.len()..]))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::fs::{FileKind, OsFileSystem};
    use crate::rules::suggestions::Candidates;

    #[test]
    fn a_misspelt_file_gets_the_existing_one() {
        let dir = std::env::temp_dir().join(format!("wb-nearest-{}", std::process::id()));
        let _ = std::fs::create_dir_all(dir.join("skills/review"));
        let _ = std::fs::write(dir.join("instructions.md"), "x");
        let near = |value: &str, kind| {
            let path = dir.join(value);
            let names = super::entry_names(&OsFileSystem, path.parent().unwrap(), kind);
            super::nearest_sibling(&names, &path, value)
        };
        assert_eq!(near("./instrutions.md", FileKind::File).as_deref(), Some("./instructions.md"));
        assert_eq!(near("skills/reveiw/", FileKind::Directory).as_deref(), Some("skills/review/"));
        assert_eq!(near("./other.md", FileKind::File), None);
        assert_eq!(super::nearest_sibling(&Candidates::new(vec!["a".to_owned()]), Path::new("/"), "/"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
