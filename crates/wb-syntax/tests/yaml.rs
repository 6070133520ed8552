//! Behaviour of the spanned YAML tree: ranges, resolution, and every kind of syntax problem.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use wb_syntax::{SyntaxErrorKind, TextRange, Value, parse, parse_str};

fn slice(text: &str, range: TextRange) -> &str {
    &text[range.as_range()]
}

#[test]
fn keys_and_values_keep_their_ranges() {
    let text = "spec: 1 # c\nname: \"héllo\"\nlocal:\nlist:\n  - a\n  - b\nflow: {x: 1, y: [1,2]}\n";
    let parsed = parse_str(text);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let root = parsed.root.as_ref().and_then(|n| n.as_mapping()).expect("mapping");
    let keys: Vec<&str> = root.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["spec", "name", "local", "list", "flow"]);
    let name = root.entry("name").expect("name");
    assert_eq!(slice(text, name.key_range), "name");
    assert_eq!(slice(text, name.value.range), "\"héllo\"");
    assert_eq!(name.value.as_str(), Some("héllo"));
    assert_eq!(root.get("spec").map(|n| &n.value), Some(&Value::Number(1.0)));
    let local = root.get("local").expect("local");
    assert!(local.is_null());
    assert!(local.range.is_empty());
    assert_eq!(slice(text, root.get("list").expect("list").range), "- a\n  - b");
    assert_eq!(slice(text, root.get("flow").expect("flow").range), "{x: 1, y: [1,2]}");
}

#[test]
fn core_schema_resolution() {
    let parsed = parse_str("a: true\nb: ~\nc: 0x10\nd: 1.5e1\ne: '1'\nf: 0o17\ng: yes\nh: .inf\ni: !!str 5\n");
    let root = parsed.root.as_ref().and_then(|n| n.as_mapping()).expect("mapping");
    let value = |k: &str| root.get(k).map(|n| n.value.clone());
    assert_eq!(value("a"), Some(Value::Bool(true)));
    assert_eq!(value("b"), Some(Value::Null));
    assert_eq!(value("c"), Some(Value::Number(16.0)));
    assert_eq!(value("d"), Some(Value::Number(15.0)));
    assert_eq!(value("e"), Some(Value::String("1".into())));
    assert_eq!(value("f"), Some(Value::Number(15.0)));
    assert_eq!(value("g"), Some(Value::String("yes".into())));
    assert_eq!(value("h"), Some(Value::Number(f64::INFINITY)));
    assert_eq!(value("i"), Some(Value::String("5".into())));
    assert!(parsed.errors.is_empty());
}

#[test]
fn duplicate_keys_point_at_both_places() {
    let text = "a: 1\nb: 2\na: 3\n";
    let parsed = parse_str(text);
    assert_eq!(parsed.errors.len(), 1);
    let error = &parsed.errors[0];
    assert_eq!(error.kind, SyntaxErrorKind::DuplicateKey);
    assert_eq!(error.range, TextRange::new(10, 11));
    assert_eq!(error.related.as_ref().map(|r| r.0), Some(TextRange::new(0, 1)));
    assert_eq!(error.message, "Duplicate key: a");
}

#[test]
fn anchors_aliases_and_merge_keys() {
    let parsed = parse_str("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\nlist: &l [1]\ncopy: *l\n");
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let root = parsed.root.as_ref().and_then(|n| n.as_mapping()).expect("mapping");
    let other = root.get("other").and_then(|n| n.as_mapping()).expect("other");
    assert_eq!(other.get("x").map(|n| &n.value), Some(&Value::Number(1.0)));
    assert_eq!(other.get("y").map(|n| &n.value), Some(&Value::Number(3.0)));
    assert_eq!(root.get("copy").and_then(|n| n.as_sequence()).map(<[_]>::len), Some(1));
}

#[test]
fn alias_bomb_is_rejected_quickly() {
    let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    let mut previous = 'a';
    for name in ['b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'] {
        let refs = vec![format!("*{previous}"); 10].join(", ");
        text.push_str(&format!("{name}: &{name} [{refs}]\n"));
        previous = name;
    }
    let started = std::time::Instant::now();
    let parsed = parse_str(&text);
    assert!(started.elapsed().as_secs() < 5);
    assert!(parsed.errors.iter().any(|e| e.kind == SyntaxErrorKind::AliasBudget), "{:?}", parsed.errors);
}

#[test]
fn each_problem_has_a_clear_error() {
    let cases: &[(&[u8], SyntaxErrorKind)] = &[
        (b"a: 1\n---\nb: 2\n", SyntaxErrorKind::MultipleDocuments),
        (b"a: !custom 1\n", SyntaxErrorKind::Tag),
        (b"\xef\xbb\xbfa: 1\n", SyntaxErrorKind::ByteOrderMark),
        (b"a:\n\tb: 1\n", SyntaxErrorKind::Tab),
        (b"a: \xff\xfe\n", SyntaxErrorKind::InvalidUtf8),
        (b"a: [1, 2\n", SyntaxErrorKind::Syntax),
        (b"? [a]\n: 1\n", SyntaxErrorKind::ComplexKey),
    ];
    for (input, kind) in cases {
        let parsed = parse(input);
        assert!(
            parsed.errors.iter().any(|e| e.kind == *kind),
            "{:?}: {:?}",
            String::from_utf8_lossy(input),
            parsed.errors
        );
    }
}

#[test]
fn byte_order_mark_offsets_are_bytes() {
    let text = "\u{feff}name: x\n";
    let parsed = parse_str(text);
    let root = parsed.root.as_ref().and_then(|n| n.as_mapping()).expect("mapping");
    assert_eq!(slice(text, root.entries[0].key_range), "name");
}

#[test]
fn partial_tree_survives_a_syntax_error() {
    let parsed = parse_str("spec: 1\nname: x\nmodel: [\n");
    assert!(!parsed.errors.is_empty());
    let root = parsed.root.as_ref().and_then(|n| n.as_mapping()).expect("partial mapping");
    assert!(root.get("name").is_some());
}

#[test]
fn deep_nesting_is_truncated_not_overflowed() {
    // The scanner's own limit or ours: either way a clear error, never a stack overflow.
    let text = "[".repeat(100_000);
    let parsed = parse_str(&text);
    assert!(!parsed.errors.is_empty());
    let text = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let parsed = parse_str(&text);
    assert!(parsed.errors.iter().any(|e| e.kind == SyntaxErrorKind::TooDeep), "{:?}", parsed.errors);
}

#[test]
fn crlf_ranges() {
    let text = "a: x\r\nb: y\r\n";
    let parsed = parse_str(text);
    let root = parsed.root.as_ref().and_then(|n| n.as_mapping()).expect("mapping");
    assert_eq!(slice(text, root.get("b").expect("b").range), "y");
}

mod properties {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let parsed = wb_syntax::parse(&bytes);
            for error in &parsed.errors {
                prop_assert!(error.range.end <= parsed.text.len());
            }
        }

        #[test]
        fn yaml_like_text_never_panics(text in "[a-z:{}\\[\\],&*!\\-#'\"| \n\t?<>é]{0,200}") {
            let parsed = wb_syntax::parse_str(&text);
            if let Some(root) = &parsed.root {
                prop_assert!(root.range.end <= text.len());
            }
        }
    }
}

/// A flow collection written with spaces inside its brackets is still flow, and its range ends at the
/// closing bracket (the parser's start span runs on over the spaces after `{`).
#[test]
fn flow_collections_with_inner_spaces_keep_their_style_and_range() {
    let text = "env: { A: 1 }\nlist: [ a, b ]\nempty: { }\nanchored: &a [ 1 ]\n";
    let parsed = parse_str(text);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let root = parsed.root.as_ref().and_then(|n| n.as_mapping()).expect("mapping");
    for (key, expected) in [("env", "{ A: 1 }"), ("list", "[ a, b ]"), ("empty", "{ }"), ("anchored", "&a [ 1 ]")] {
        let value = root.get(key).expect(key);
        assert_eq!(value.style, wb_syntax::Style::Flow, "{key}");
        assert_eq!(slice(text, value.range), expected, "{key}");
    }
}
