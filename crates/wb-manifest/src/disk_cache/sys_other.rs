//! The system calls a pass makes elsewhere than Linux: anchors are never opened, so every path is asked as
//! it is.

use std::io;
use std::path::{Path, PathBuf};

use super::{Kinds, Stat};
use crate::fs::FileKind;

pub(super) enum Dir {}

#[derive(Clone, Copy)]
pub(super) enum At<'a> {
    #[allow(dead_code)]
    Dir(&'a Dir),
    Cwd,
}

pub(super) fn open_anchor(_: &Path) -> io::Result<Dir> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

pub(super) fn lstat(_: At<'_>, path: &Path) -> io::Result<Stat> {
    let meta = std::fs::symlink_metadata(path)?;
    let kind = crate::fs::kind_of(meta.file_type());
    Ok(Stat { kind, len: (kind == FileKind::File).then_some(meta.len()) })
}

pub(super) fn open_file(_: At<'_>, path: &Path, no_follow: bool) -> io::Result<std::fs::File> {
    crate::fs::open_for_reading(path, no_follow)
}

pub(super) fn list_into(
    _: (At<'_>, &Path),
    path: &Path,
    no_follow: bool,
    entries: &mut Vec<PathBuf>,
    kinds: &mut Kinds,
) -> io::Result<()> {
    // Never asked to: `expect_directory` lists ahead on Linux only.
    let _ = no_follow;
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let full = entry.path();
        if let Ok(file_type) = entry.file_type() {
            let kind = crate::fs::kind_of(file_type);
            kinds.push((full.as_os_str().to_owned(), Ok(Stat { kind, len: None })));
        }
        entries.push(full);
    }
    Ok(())
}
