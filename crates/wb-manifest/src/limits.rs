//! The size limit of what a check reads: the manifest, and, held to the same limit, every package file it names
//! (`boundary.rs`) and a model catalog (`catalog.rs`). A leaf, so each of them names it without depending on
//! the check.

/// Manifests larger than this are refused before parsing (a real manifest is a few kilobytes).
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;
