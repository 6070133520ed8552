//! Texts the parser's tests run over: every manifest under `fixtures/`, texts that exercise YAML beyond the
//! manifests' usual subset, and what edits insert.

use std::path::{Path, PathBuf};

/// Every manifest under `fixtures/`, and texts that exercise what the splice must refuse or handle.
pub fn corpus() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            // Links are not followed: the fixtures hold links that lead out of their package, and loops.
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                walk(&path, out);
            } else if kind.is_file()
                && (path.extension().is_some_and(|ext| ext == "yml" || ext == "yaml")
                    || path.file_name().is_some_and(|name| name == "SKILL.md"))
            {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"), &mut paths);
    paths.sort();
    let mut texts: Vec<String> = paths
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            if path.extension().is_some_and(|ext| ext == "md") {
                // A skill's frontmatter, as the skill check parses it.
                let body = text.strip_prefix("---\n")?;
                return body.find("\n---").map(|end| body[..=end].to_owned());
            }
            Some(text)
        })
        .collect();
    assert!(texts.len() >= 20, "the fixtures hold the manifests the test edits ({} found)", texts.len());
    texts.extend(
        [
            "# modeline\nspec: 1\nname: a\ndescription: >\n  folded\n  text\n\nskills:\n- ./a\n- ./b\nenv:\n  A:\n    required: true\n",
            "spec: 1\r\nname: crlf\r\ndescription: |+\r\n  kept\r\n\r\nruntimes:\r\n  local: {}\r\n",
            "base: &b {x: 1}\nname: anchors\nother: *b\nmerged:\n  <<: *b\n  y: 2\n",
            "name: \"quoted\nacross\"\nlist: [a,\n  b]\n'single': 'x'\n# trailing comment\n",
            "---\nname: marker\nversion: 1.0.0\n...\n",
            "%YAML 1.2\n---\nname: directive\ntags: !!str 1\n",
            "name: ünïcödé\ndescription: \"日本語\"\nkey: é\n",
            "a: 1\nb: 2\nc:\n  - x: 1\n    y: 2\n  - z\nd: null\n",
            "name: no newline at end",
        ]
        .map(str::to_owned),
    );
    texts.push(large());
    texts
}

pub fn large() -> String {
    let mut text = String::from("spec: 1\nname: large\ndescription: A large manifest.\nenv:\n");
    for i in 0..300 {
        text.push_str(&format!("  VAR_{i}:\n    required: {}\n", i % 2 == 0));
    }
    text.push_str("runtimes:\n  local: {}\n");
    text
}

/// What an edit inserts: YAML's indicators, line breaks, indentation and plain words.
pub const SNIPPETS: &[&str] = &[
    "",
    "\n",
    "\r\n",
    " ",
    "  ",
    ":",
    ": ",
    "- ",
    "#",
    "# c\n",
    "x",
    "key: value\n",
    "name: dup\n",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&a ",
    "*a",
    "<<: ",
    "|\n",
    ">-\n",
    "---\n",
    "...\n",
    "%TAG ! x\n",
    "\t",
    "?",
    "!",
    "!!str ",
    "é",
    "日",
    "\u{feff}",
    "  nested: 1\n",
    "\nnew: key\n",
    "true",
    "1.0",
    "~",
];

/// `old` with `remove` bytes at `at` replaced by `insert`, moved to character boundaries.
pub fn edit(old: &str, at: usize, remove: usize, insert: &str) -> String {
    let mut start = at.min(old.len());
    while !old.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + remove).min(old.len());
    while !old.is_char_boundary(end) {
        end += 1;
    }
    format!("{}{insert}{}", &old[..start], &old[end..])
}

pub fn corpus_cached() -> &'static [String] {
    static CORPUS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(corpus)
}

/// A random edit of a corpus text (`old`, `new`): at a random place, a few bytes removed and a snippet with a word
/// matching `word` (a regex) inserted.
pub fn random_edit(word: &'static str) -> impl proptest::strategy::Strategy<Value = (String, String)> {
    use proptest::prelude::*;
    let remove = prop_oneof![Just(0usize), 0usize..4, 0usize..40];
    (0usize..1000, 0.0f64..1.0, remove, 0..SNIPPETS.len(), word).prop_map(|(text, at, remove, snippet, word)| {
        let corpus = corpus_cached();
        let old = corpus[text % corpus.len()].clone();
        let new = edit(&old, (at * old.len() as f64) as usize, remove, &format!("{}{word}", SNIPPETS[snippet]));
        (old, new)
    })
}
