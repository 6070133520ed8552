//! Robustness of the full check: arbitrary bytes, mutated real manifests and pathological documents never
//! panic, never take unbounded time, and every diagnostic range lies inside the file it names, on character
//! boundaries.
//!
//! The cargo-fuzz targets in `fuzz/` explore the same invariants for much longer; inputs they found go into
//! `regressions` below.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use wb_manifest::{
    Code, FileSystem, MAX_MANIFEST_BYTES, ModelCatalog, OsFileSystem, PackageReport, Severity, check_manifest_bytes,
};
use wb_syntax::TextRange;
use wb_testsupport::MemFs;

/// Far above what any input here needs even in a debug build; a hang or a quadratic blow-up trips it. These are
/// hang detectors, not speed measurements (the benches measure): they leave room for a loaded 2-core machine.
const PER_INPUT: Duration = Duration::from_secs(10);
/// The bound for the deliberately huge or hostile documents (the quadratic bug the benches once found took
/// minutes on these inputs; a debug build on a busy shared 2-core machine takes a few seconds).
const PATHOLOGICAL: Duration = Duration::from_secs(30);

const MANIFEST: &str = "/repo/.workbenches/pkg/workbench.yml";

// ---------------------------------------------------------------------------------------------------------
// An in-memory package

/// The package every input is checked in.
fn sample() -> MemFs {
    MemFs::with_files([
        ("/repo/README.md", "# repo\n"),
        ("/repo/.workbenches/pkg/instructions.md", "Do the work.\n"),
        ("/repo/.workbenches/pkg/Dockerfile", "FROM node:22\n"),
        ("/repo/.workbenches/pkg/opencode.json", "{\"model\": \"x\"}\n"),
        ("/repo/.workbenches/pkg/.env", "TOKEN=secret\n"),
        ("/repo/.workbenches/pkg/skills/review/SKILL.md", "---\nname: review\ndescription: Review.\n---\n"),
        ("/repo/.workbenches/pkg/skills/broken/SKILL.md", "---\nname: [\n---\nbody ☃\n"),
    ])
}

// ---------------------------------------------------------------------------------------------------------
// Invariants

fn range_problem(text: &str, range: TextRange) -> Option<String> {
    if range.start > range.end {
        Some(format!("reversed range {range:?}"))
    } else if range.end > text.len() {
        Some(format!("range {range:?} past the end ({} bytes)", text.len()))
    } else if !text.is_char_boundary(range.start) || !text.is_char_boundary(range.end) {
        Some(format!("range {range:?} splits a character"))
    } else {
        None
    }
}

/// Every range of a report against the text of the file it points into.
fn report_problems(report: &PackageReport) -> Vec<String> {
    let mut problems = Vec::new();
    let mut check = |path: &Path, range: TextRange, what: &str| {
        let problem = match report.sources.get(path) {
            Some(text) => range_problem(text, range),
            None => (range.start > range.end).then(|| format!("reversed range {range:?}")),
        };
        if let Some(problem) = problem {
            problems.push(format!("{what} in {}: {problem}", path.display()));
        }
    };
    for d in &report.diagnostics {
        let what = format!("{} ({})", d.code.as_str(), d.message);
        check(&d.path, d.range, &what);
        for related in &d.related {
            check(&related.path, related.range, &format!("related of {what}"));
        }
        for fix in &d.fixes {
            for edit in &fix.edits {
                check(&edit.path, edit.range, &format!("fix of {what}"));
            }
        }
    }
    problems
}

/// Checks `bytes` as the manifest at `path`, asserting the invariants; returns the report.
fn check_timed(fs: &dyn FileSystem, path: &Path, bytes: &[u8], limit: Duration) -> PackageReport {
    let started = Instant::now();
    let report = check_manifest_bytes(fs, path, bytes, ModelCatalog::embedded());
    let elapsed = started.elapsed();
    assert!(elapsed < limit, "checking {} bytes took {elapsed:?}", bytes.len());
    let problems = report_problems(&report);
    assert!(
        problems.is_empty(),
        "invalid ranges for input {:?}:\n{}",
        String::from_utf8_lossy(bytes),
        problems.join("\n")
    );
    report
}

/// Checks `bytes` against the in-memory package on another thread, failing once `limit` passes: a hang or a
/// quadratic blow-up fails the test after `limit` instead of stalling the suite (the stuck thread ends with
/// the test process).
fn check_bounded(bytes: Vec<u8>, limit: Duration) -> PackageReport {
    let (sender, receiver) = std::sync::mpsc::channel();
    let len = bytes.len();
    std::thread::spawn(move || {
        let started = Instant::now();
        let report = check_manifest_bytes(&sample(), Path::new(MANIFEST), &bytes, ModelCatalog::embedded());
        let _ = sender.send((report, started.elapsed()));
    });
    let (report, elapsed) = match receiver.recv_timeout(limit) {
        Ok(done) => done,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("checking {len} bytes took longer than {limit:?}"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("checking {len} bytes panicked"),
    };
    assert!(elapsed < limit, "checking {len} bytes took {elapsed:?}");
    let problems = report_problems(&report);
    assert!(problems.is_empty(), "invalid ranges:\n{}", problems.join("\n"));
    report
}

fn codes(report: &PackageReport) -> Vec<&'static str> {
    report.diagnostics.iter().map(|d| d.code.as_str()).collect()
}

// ---------------------------------------------------------------------------------------------------------
// Real manifests and their mutations

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").canonicalize().expect("fixtures dir")
}

fn collect_manifests(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            collect_manifests(&path, out);
        } else if kind.is_file() && entry.file_name() == "workbench.yml" {
            out.push((path.clone(), std::fs::read(&path).expect("read fixture")));
        }
    }
}

/// Every `fixtures/**/workbench.yml` with its real path (so package checks see the fixture's files).
fn manifests() -> &'static [(PathBuf, Vec<u8>)] {
    static MANIFESTS: OnceLock<Vec<(PathBuf, Vec<u8>)>> = OnceLock::new();
    MANIFESTS.get_or_init(|| {
        let mut out = Vec::new();
        collect_manifests(&fixtures_dir(), &mut out);
        assert!(out.len() > 50, "expected the fixture manifests, found {}", out.len());
        out
    })
}

const SNIPPETS: &[&str] = &[
    "*a",
    "&a ",
    "*a\n",
    "<<: *a\n",
    "!!str ",
    "!!map ",
    "!!binary ",
    "!custom ",
    "!<tag:x> ",
    "---\n",
    "...\n",
    "\t",
    "\t\t",
    "${",
    "}",
    "${VAR}",
    ": ",
    "- ",
    "? ",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "#",
    "|\n",
    ">-\n",
    "\u{feff}",
    "é",
    "☃",
    "😀",
    "\u{200b}",
    "\r\n",
    "\r",
    "\n",
    "  ",
    ",",
    "%YAML 1.2\n",
    "~",
    "null",
    "0x1F",
    ".inf",
];

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    IndentLine(usize, u8),
    InsertSnippet(usize, usize),
    InsertChar(usize, char),
    SetByte(usize, u8),
    DeleteBytes(usize, u8),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let n = any::<usize>();
    prop_oneof![
        n.prop_map(Mutation::DeleteLine),
        n.prop_map(Mutation::DuplicateLine),
        (n, n).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (n, 1u8..12).prop_map(|(a, b)| Mutation::IndentLine(a, b)),
        (n, 0..SNIPPETS.len()).prop_map(|(a, b)| Mutation::InsertSnippet(a, b)),
        (n, any::<char>()).prop_map(|(a, c)| Mutation::InsertChar(a, c)),
        (n, any::<u8>()).prop_map(|(a, b)| Mutation::SetByte(a, b)),
        (n, 1u8..16).prop_map(|(a, b)| Mutation::DeleteBytes(a, b)),
        n.prop_map(Mutation::Truncate),
    ]
}

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split_inclusive(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let len = bytes.len();
    let at = |n: usize| if len == 0 { 0 } else { n % (len + 1) };
    match *mutation {
        Mutation::DeleteLine(i)
        | Mutation::DuplicateLine(i)
        | Mutation::SwapLines(i, _)
        | Mutation::IndentLine(i, _) => {
            let mut lines = lines(bytes);
            if lines.is_empty() {
                return;
            }
            let count = lines.len();
            let i = i % count;
            match *mutation {
                Mutation::DeleteLine(_) => {
                    lines.remove(i);
                }
                Mutation::DuplicateLine(_) => {
                    let line = lines[i].clone();
                    lines.insert(i, line);
                }
                Mutation::SwapLines(_, j) => lines.swap(i, j % count),
                Mutation::IndentLine(_, n) => {
                    let indent = vec![b' '; usize::from(n)];
                    lines[i].splice(0..0, indent);
                }
                _ => {}
            }
            *bytes = lines.concat();
        }
        Mutation::InsertSnippet(at_n, s) => {
            let pos = at(at_n);
            bytes.splice(pos..pos, SNIPPETS[s].bytes());
        }
        Mutation::InsertChar(at_n, c) => {
            let pos = at(at_n);
            let mut buffer = [0; 4];
            bytes.splice(pos..pos, c.encode_utf8(&mut buffer).bytes());
        }
        Mutation::SetByte(at_n, b) => {
            if len > 0 {
                bytes[at_n % len] = b;
            }
        }
        Mutation::DeleteBytes(at_n, n) => {
            let pos = at(at_n);
            let end = (pos + usize::from(n)).min(len);
            bytes.drain(pos..end);
        }
        Mutation::Truncate(at_n) => bytes.truncate(at(at_n)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        check_timed(&sample(), Path::new(MANIFEST), &bytes, PER_INPUT);
    }

    #[test]
    fn yaml_like_text_never_panics(text in "[a-z_:{}\\[\\],&*!\\-#'\"|>?<$ \n\t\r.~0-9éß☃😀]{0,400}") {
        check_timed(&sample(), Path::new(MANIFEST), text.as_bytes(), PER_INPUT);
    }

    #[test]
    fn mutated_manifests_never_panic(
        index in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..8),
    ) {
        let all = manifests();
        let (path, original) = &all[index % all.len()];
        let mut bytes = original.clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        check_timed(&OsFileSystem, path, &bytes, PER_INPUT);
    }

    #[test]
    fn mutated_manifests_in_memory_never_panic(
        index in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..8),
    ) {
        // The same mutations against the in-memory package, whose files differ (a broken skill, a credential).
        let all = manifests();
        let mut bytes = all[index % all.len()].1.clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        check_timed(&sample(), Path::new(MANIFEST), &bytes, PER_INPUT);
    }
}

#[test]
fn every_fixture_manifest_satisfies_the_invariants() {
    for (path, bytes) in manifests() {
        check_timed(&OsFileSystem, path, bytes, PER_INPUT);
    }
}

/// Inputs found by fuzzing or by the properties above, kept so they stay fixed.
#[test]
fn regressions() {
    let cases: &[&[u8]] = &[
        b"",
        b"\xef\xbb\xbf",
        b"\xef\xbb",
        b"\xff\xfe",
        b"\t",
        b"---\n---\n",
        b"*a",
        b"&a [*a]",
        b"<<: *a",
        b"? [a]\n: b",
        b"env:\n  \xc3\xa9: 1\n",
        b"mcps:\n- headers: {a: ${\xe2\x98\x83}}\n",
        b"spec: 1\nenv:\n  \xf0\x9f\x98\x80:\n",
        b"spec: 1\nname: \xe2\x98\n",
    ];
    for bytes in cases {
        check_timed(&sample(), Path::new(MANIFEST), bytes, PER_INPUT);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Pathological documents

#[test]
fn a_ten_megabyte_input_is_refused_quickly() {
    let line = b"description: lorem ipsum dolor sit amet\n";
    let bytes: Vec<u8> = line.iter().copied().cycle().take(10 * 1024 * 1024).collect();
    let report = check_bounded(bytes, PATHOLOGICAL);
    assert_eq!(codes(&report), ["file-too-large"]);
    assert!(report.diagnostics[0].message.contains("too large"), "{}", report.diagnostics[0].message);
}

#[test]
fn an_input_just_under_the_size_limit_checks_in_bounded_time() {
    // One long comment line, then a real manifest: the scanner walks every byte once.
    let mut bytes = b"# ".to_vec();
    bytes.resize(MAX_MANIFEST_BYTES - 200, b'x');
    bytes.extend_from_slice(b"\nspec: 1\nname: big\n");
    assert!(bytes.len() <= MAX_MANIFEST_BYTES);
    let report = check_bounded(bytes, PATHOLOGICAL);
    assert!(!codes(&report).contains(&"file-too-large"));
}

#[test]
fn an_alias_bomb_hits_the_expansion_limit() {
    // Ten levels, each a list of ten references to the level below: 10^10 nodes if expanded.
    let mut text = String::from(
        "spec: 1\nname: bomb\nrunner: opencode\nx0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for level in 1..10 {
        let below = level - 1;
        let refs = vec![format!("*x{below}"); 10].join(", ");
        text.push_str(&format!("x{level}: &x{level} [{refs}]\n"));
    }
    text.push_str("tools: *x9\n");
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    let bomb = report.diagnostics.iter().find(|d| d.code == Code::AliasExpansionLimit);
    let bomb = bomb.unwrap_or_else(|| panic!("no alias-expansion-limit diagnostic: {:?}", codes(&report)));
    assert_eq!(bomb.severity, Severity::Error);
}

#[test]
fn an_alias_bomb_of_mappings_hits_the_expansion_limit() {
    let mut text = String::from("a0: &a0 {k0: v, k1: v, k2: v, k3: v, k4: v, k5: v, k6: v, k7: v, k8: v, k9: v}\n");
    for level in 1..10 {
        let below = level - 1;
        let entries: Vec<String> = (0..10).map(|i| format!("k{i}: *a{below}")).collect();
        text.push_str(&format!("a{level}: &a{level} {{{}}}\n", entries.join(", ")));
    }
    text.push_str("env: *a9\nmcps: [*a9, *a9]\n");
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    assert!(codes(&report).contains(&"alias-expansion-limit"), "{:?}", codes(&report));
}

#[test]
fn deep_flow_nesting_is_cut_off() {
    for depth in [129, 1_000, 100_000] {
        let text = format!("spec: 1\ntools: {}x{}\n", "[".repeat(depth), "]".repeat(depth));
        let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
        assert!(codes(&report).contains(&"nesting-too-deep"), "depth {depth}: {:?}", codes(&report));
    }
}

#[test]
fn deep_block_nesting_is_cut_off() {
    for depth in [200, 1_000] {
        let mut text = String::from("spec: 1\n");
        for level in 0..depth {
            text.push_str(&" ".repeat(level));
            text.push_str("k:\n");
        }
        let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
        assert!(codes(&report).contains(&"nesting-too-deep"), "depth {depth}: {:?}", codes(&report));
    }
}

#[test]
fn deep_unclosed_nesting_does_not_overflow() {
    let text = format!("spec: 1\nmcps: {}", "[{a: ".repeat(50_000));
    check_bounded(text.into_bytes(), PATHOLOGICAL);
    let text = "- ".repeat(50_000);
    check_bounded(text.into_bytes(), PATHOLOGICAL);
}

/// A valid manifest with `vars` environment variables and `mcps` HTTP servers whose headers reference them.
fn generated_manifest(vars: usize, mcps: usize) -> String {
    let mut text = String::from(
        "spec: 1\nversion: 1.0.0\nname: generated\ndescription: A generated manifest.\nrunner: opencode\n\
         model:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\n",
    );
    if mcps > 0 {
        text.push_str("mcps:\n");
        for i in 0..mcps {
            let a = (i * 7) % vars;
            let b = (i * 13 + 1) % vars;
            text.push_str(&format!(
                "  - name: server-{i}\n    transport: http\n    url: https://mcp.example.com/{i}\n    headers:\n      \
                 Authorization: Bearer ${{VAR_{a}}}\n      X-Extra: ${{VAR_{b}}}-suffix\n"
            ));
        }
    }
    text.push_str("env:\n");
    for i in 0..vars {
        text.push_str(&format!("  VAR_{i}:\n    required: {}\n", i % 2 == 0));
    }
    text.push_str("runtimes:\n  local: {}\n");
    text
}

#[test]
fn a_five_thousand_entry_env_checks_in_bounded_time() {
    let text = generated_manifest(5_000, 0);
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    assert!(report.is_valid(), "{:?}", report.diagnostics);
    assert_eq!(report.manifest.as_ref().expect("manifest").env.len(), 5_000);
}

#[test]
fn five_thousand_env_entries_and_five_hundred_mcps_check_in_bounded_time() {
    let text = generated_manifest(5_000, 500);
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    assert!(report.is_valid(), "{:?}", report.diagnostics);
}

#[test]
fn many_duplicate_keys_check_in_bounded_time() {
    // Every key is a duplicate of the first: a quadratic duplicate search would show here.
    let text = "env:\n".to_owned() + &"  SAME:\n    required: true\n".repeat(20_000);
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    assert!(codes(&report).contains(&"duplicate-key"));
}

#[test]
fn many_undeclared_references_check_in_bounded_time() {
    let refs: String = (0..20_000).map(|i| format!("${{U{i}}}")).collect();
    let text = format!(
        "spec: 1\nmcps:\n  - name: a\n    transport: http\n    url: https://x.example\n    headers:\n      A: \"{refs}\"\n"
    );
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    assert!(codes(&report).contains(&"undeclared-env-reference"));
}

#[test]
fn a_long_sequence_checks_in_bounded_time() {
    // About 600 KB of ASCII: every parser event costs the same, however far into the text it is.
    let text = "spec: 1\ntools:\n".to_owned() + &"  - some-tool\n".repeat(45_000);
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    assert_eq!(report.manifest.as_ref().expect("manifest").tools.len(), 45_000);
    assert!(!codes(&report).contains(&"too-many-nodes"));
}

#[test]
fn a_sequence_past_the_node_budget_is_read_up_to_it() {
    // About 900 KB: the first 50,000 nodes are read, one error stands at the next, nothing after it is built.
    let text = "spec: 1\ntools:\n".to_owned() + &"  - some-tool\n".repeat(70_000);
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    let budget = report.diagnostics.iter().filter(|d| d.code.as_str() == "too-many-nodes").count();
    assert_eq!(budget, 1, "{:?}", codes(&report));
    let read = report.manifest.as_ref().expect("manifest").tools.len();
    assert!(read < wb_syntax::NODE_BUDGET && read + 10 > wb_syntax::NODE_BUDGET, "{read} tools read");
}

#[test]
fn many_unknown_fields_check_in_bounded_time() {
    let text: String = (0..10_000).map(|i| format!("field_{i}: value\n")).collect();
    let report = check_bounded(text.into_bytes(), PATHOLOGICAL);
    // The first 100 and one that counts the other 9,900 (`MAX_DIAGNOSTICS_PER_CODE`).
    let unknown: Vec<&str> =
        report.diagnostics.iter().filter(|d| d.code == Code::UnknownField).map(|d| d.message.as_str()).collect();
    assert_eq!(unknown.len(), wb_manifest::MAX_DIAGNOSTICS_PER_CODE + 1);
    assert!(unknown.iter().any(|m| m.starts_with("… and 9,900 more unknown-field diagnostics")), "{unknown:?}");
}

/// Instructions the prose checks read, each about 4 MiB (the most a package file may hold) of what makes a
/// Markdown or shell scan slow if any step is quadratic: thousands of unmatched backtick runs of growing
/// lengths, link openers without an end, spans without punctuation after them, unclosed quotes, heredocs and
/// `$(`, an unclosed shell fence, and one HTML block of tag lines and spans (read again as Markdown). Each is
/// checked in bounded time with valid ranges, and the tools the spans name are reported once each.
#[test]
fn pathological_instructions_are_scanned_in_bounded_time() {
    const SIZE: usize = 4 * 1024 * 1024 - 64;
    let fill = |unit: &str| {
        let mut text = unit.repeat(SIZE / unit.len());
        text.truncate(SIZE);
        while !text.is_char_boundary(text.len()) {
            text.pop();
        }
        text
    };
    let mut runs = String::new();
    let mut len = 1;
    while runs.len() < SIZE - 2048 {
        runs.push_str(&"`".repeat(len));
        runs.push_str(" x ");
        len = len % 2000 + 1;
    }
    let inputs = [
        runs,
        fill("](]("),
        fill("run `tool-a` run `tool-b` "),
        fill("run `a \"b 'c $(d <<E ${X} "),
        format!("```sh\n{}", fill("a \"$( <<E `x` ${Y} | && ; ( ) \\\n")),
        fill("`$ é` ☃ "),
        fill("<div>\nrun `tool-c` <b> [x](skills/y\n"),
    ];
    let manifest = "spec: 1\nversion: 0.1.0\nname: pkg\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
                    instructions: ./instructions.md\nruntimes:\n  local: {}\n";
    for (index, instructions) in inputs.iter().enumerate() {
        assert!(instructions.len() <= MAX_MANIFEST_BYTES, "input {index} is over the read limit");
        let fs = MemFs::with_files([(MANIFEST, manifest), ("/repo/.workbenches/pkg/instructions.md", instructions)]);
        let started = Instant::now();
        let report = check_timed(&fs, Path::new(MANIFEST), manifest.as_bytes(), PATHOLOGICAL);
        eprintln!("input {index}: {:?}, {} diagnostics", started.elapsed(), report.diagnostics.len());
        assert!(report.diagnostics.len() < 100, "input {index}: {} diagnostics", report.diagnostics.len());
        if index == 2 {
            let tools: Vec<&str> = report
                .diagnostics
                .iter()
                .filter(|d| d.code == Code::ProseUndeclaredTool)
                .map(|d| d.message.as_str())
                .collect();
            assert_eq!(tools, ["Command not declared in tools: tool-a", "Command not declared in tools: tool-b"]);
        }
    }
}
