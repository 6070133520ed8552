//! The formatter on arbitrary text, with and without the standard's field order: never a panic; whatever it
//! formats (it refuses, by itself, a result that reads differently) formats to itself again, and its edits
//! give its text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wb_ide::{FormatOptions, apply, format, format_edits};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for options in [FormatOptions::default(), FormatOptions { field_order: true }] {
        let Ok(formatted) = format(&text, options) else { continue };
        assert_eq!(format(&formatted, options).as_deref(), Ok(formatted.as_str()), "not idempotent: {text:?}");
        let edits = format_edits(&text, options).unwrap_or_default();
        assert_eq!(apply(&text, &edits), formatted, "the edits differ from the text: {text:?}");
    }
});
