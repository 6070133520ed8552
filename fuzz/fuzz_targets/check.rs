//! Arbitrary bytes as a manifest: the full check (YAML, rules, package files) must never panic and every
//! diagnostic must point inside the file it names.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use wb_fuzz::{MANIFEST, MemFs, assert_report};
use wb_manifest::{ModelCatalog, check_manifest_bytes};

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::sample();
    let report = check_manifest_bytes(&fs, Path::new(MANIFEST), data, ModelCatalog::embedded());
    assert_report(&report);
});
