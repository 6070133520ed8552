//! The fast YAML scanner against saphyr on the same bytes: whenever the scanner takes a text, its tree (every
//! node, key, value, style and range the builder reads) and its errors must be saphyr's. Declining is always
//! allowed.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wb_syntax::fuzzing;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Some(fast) = fuzzing::fast(text) else { return };
    let full = fuzzing::saphyr(text);
    // Debug output compares NaN with NaN.
    assert_eq!(format!("{:?}", fast.root), format!("{:?}", full.root), "tree of {text:?}");
    assert_eq!(fast.errors, full.errors, "errors of {text:?}");
});
