//! Arbitrary bytes as the tar a sandbox sends back (gzipped here, as the engine receives it): the unpacker
//! must never panic, never write outside its destination (a sibling file and the destination's parent stay as
//! they were), never leave anything behind a refused path that names Git's directory in any spelling, and
//! never write more than its data limit.

#![no_main]

use std::io::Write;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use wb_engine::runtime::remote::archive::{UNPACKED_LIMIT, is_git_alias, unpack};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, tar)) = data.split_first() else { return };
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    if encoder.write_all(tar).is_err() {
        return;
    }
    let Ok(gzip) = encoder.finish() else { return };
    let Ok(scratch) = tempfile::tempdir() else { return };
    let dest = scratch.path().join("dest");
    let sibling = scratch.path().join("sibling");
    if std::fs::create_dir(&dest).is_err() || std::fs::write(&sibling, b"keep").is_err() {
        return;
    }
    let result = unpack(&gzip, &dest, flags & 1 == 1);
    let mut names: Vec<_> = std::fs::read_dir(scratch.path())
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    names.sort();
    assert_eq!(names, ["dest", "sibling"], "nothing appears beside the destination");
    assert_eq!(std::fs::read(&sibling).ok().as_deref(), Some(&b"keep"[..]));
    let mut written = 0u64;
    walk(&dest, &mut written);
    assert!(written <= UNPACKED_LIMIT, "{written} bytes written");
    if let Ok(unpacked) = result {
        for file in unpacked.files {
            assert!(!Path::new(&file).components().any(|c| is_git_alias(c.as_os_str().as_encoded_bytes())), "{file}");
        }
    }
});

/// Counts the bytes of regular files below `dir` and checks no Git directory name was created, without
/// following links.
fn walk(dir: &Path, written: &mut u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        assert!(!is_git_alias(entry.file_name().as_encoded_bytes()), "{:?}", entry.path());
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            walk(&entry.path(), written);
        } else if kind.is_file() {
            *written += entry.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
}
