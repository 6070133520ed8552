//! Arbitrary text and offset: every editor feature must never panic and must return ranges inside the text.
//! The first two bytes of the input are the offset (any value, so past the end and inside multibyte
//! characters too); the rest, decoded lossily, is the document.
//!
//! `WB_FUZZ_SKIP=completions,hover` (comma-separated feature names) leaves features out, to explore the others
//! while a known crash in one of them is not fixed yet.

#![no_main]

use std::path::Path;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use wb_fuzz::{MANIFEST, MemFs, assert_range};
use wb_manifest::ModelCatalog;

fn check_symbols(text: &str, symbols: &[wb_ide::Symbol]) {
    for symbol in symbols {
        assert_range(text, symbol.range, "symbol range");
        assert_range(text, symbol.selection, "symbol selection");
        check_symbols(text, &symbol.children);
    }
}

fn skipped(feature: &str) -> bool {
    static SKIP: OnceLock<Vec<String>> = OnceLock::new();
    SKIP.get_or_init(|| {
        std::env::var("WB_FUZZ_SKIP").unwrap_or_default().split(',').map(|s| s.trim().to_owned()).collect()
    })
    .iter()
    .any(|s| s == feature)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let raw_offset = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let text = String::from_utf8_lossy(&data[2..]).into_owned();
    // Mostly inside the text, sometimes past its end.
    let offset = if raw_offset & 0x8000 != 0 { raw_offset & 0x7fff } else { raw_offset % (text.len() + 1) };
    let fs = MemFs::sample();
    let path = Path::new(MANIFEST);
    let catalog = ModelCatalog::embedded();

    if !skipped("completions") {
        for snippets in [true, false] {
            let options = wb_ide::CompletionOptions { snippets };
            for item in wb_ide::completions(&fs, path, &text, offset, catalog, options) {
                assert_range(&text, item.replace, "completion replace range");
            }
        }
    }
    let parsed = wb_syntax::parse_str(&text);
    let Some(root) = parsed.root.as_ref() else { return };
    if !skipped("hover")
        && let Some(hover) = wb_ide::hover(&fs, path, &text, root, offset, catalog)
    {
        assert_range(&text, hover.range, "hover range");
    }
    check_symbols(&text, &wb_ide::symbols(root));
    for fold in wb_ide::folding_ranges(&text, root) {
        assert_range(&text, fold.range, "fold");
    }
    for link in wb_ide::definition(&fs, path, &text, root, offset) {
        assert_range(&text, link.origin, "definition origin");
    }
    for link in wb_ide::document_links(&fs, path, root) {
        assert_range(&text, link.origin, "document link origin");
    }
    for range in wb_ide::env_references(&text, root, offset, true) {
        assert_range(&text, range, "env reference");
    }
    if let Some(range) = wb_ide::env_range_at(&text, root, offset) {
        assert_range(&text, range, "env range");
    }
    if let Ok(edits) = wb_ide::rename_env(&text, root, offset, "RENAMED_VAR") {
        for (range, _) in edits {
            assert_range(&text, range, "rename edit");
        }
    }
});
