//! The rules ARCHITECTURE.md states about the source, checked: every module opens with a `//!` line, no
//! production file runs past about 600 lines, its `#[cfg(test)]` modules aside (the few listed below say why), production
//! code never calls `unwrap` or `expect` (clippy finds every call; this holds its lints on for every shipping
//! crate and lets only unit tests off), `rust-version` in `Cargo.toml` is at least what every locked
//! dependency declares it needs, CONTRIBUTING.md lists every environment variable the code reads, no crate
//! has an import circle between its modules (the rule is in `tidy/circles.rs`), the shipped editor code keeps
//! the length rule too, `docs/lsp-extensions.md` documents exactly the extensions the server registers, and no
//! capability text names fewer runtimes than support it, README's exit-status table is `wb_lsp::exit::Exit`'s, and
//! no production code has a bare `String` for its error (`Result<_, String>`).

use std::path::{Path, PathBuf};

#[path = "tidy/circles.rs"]
mod circles;

/// The longest a production source file may be.
const MAX_LINES: usize = 600;

/// Production files allowed past [`MAX_LINES`], each with its reason. Keep this list short.
const LONG_FILES: &[(&str, &str)] = &[];

/// The crates that ship (the test doubles and helpers do not).
const PRODUCTION: &[&str] = &["wb-syntax", "wb-manifest", "wb-ide", "wb-outcomes", "wb-engine", "wb-lsp"];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<(String, PathBuf)> {
    let root = repository();
    let mut out = Vec::new();
    let Ok(crates) = std::fs::read_dir(root.join("crates")) else { panic!("no crates/ beside {}", root.display()) };
    for krate in crates.flatten() {
        let name = krate.file_name().to_string_lossy().into_owned();
        let mut files = Vec::new();
        rust_files(&krate.path().join("src"), &mut files);
        out.extend(files.into_iter().map(|f| (name.clone(), f)));
    }
    assert!(out.len() > 100, "found only {} source files", out.len());
    out
}

fn relative(path: &Path) -> String {
    let root = repository().canonicalize().unwrap_or_else(|_| repository());
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root).unwrap_or(&path).to_string_lossy().into_owned()
}

#[test]
fn every_module_opens_with_its_doc_line() {
    let missing: Vec<String> = sources()
        .into_iter()
        .filter(|(_, path)| !std::fs::read_to_string(path).unwrap_or_default().starts_with("//!"))
        .map(|(_, path)| relative(&path))
        .collect();
    assert!(missing.is_empty(), "modules without a `//!` first line: {missing:#?}");
}

/// The lines of a source file that ship: every line but those of its `#[cfg(test)]` (or `cfg(all(test, …))`)
/// modules, from the attribute to the module's closing brace. Nothing else is let off: code behind
/// `#[cfg(feature = "test-hooks")]` is compiled into the tests' build of the product and counts.
fn production_lines(text: &str) -> usize {
    shipped(text).len()
}

/// The lines [`production_lines`] counts, with their indices.
fn shipped(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let is_test_cfg = |line: &str| line.starts_with("#[cfg(test)]") || line.starts_with("#[cfg(all(test");
    let (mut kept, mut index) = (Vec::new(), 0);
    while index < lines.len() {
        if is_test_cfg(lines[index]) {
            let mut item = index + 1;
            while item < lines.len() && lines[item].starts_with("#[") {
                item += 1;
            }
            let module = lines.get(item).map(|line| line.trim_start_matches("pub ").trim_start_matches("pub(crate) "));
            if module.is_some_and(|line| line.starts_with("mod ") && line.ends_with('{')) {
                // A top-level module's body ends at the first `}` in column 0 (rustfmt's layout).
                let end = (item + 1..lines.len()).find(|&line| lines[line] == "}").unwrap_or(lines.len());
                index = end + 1;
                continue;
            }
        }
        kept.push((index, lines[index]));
        index += 1;
    }
    kept
}

/// The files of test modules declared with `#[cfg(test)] mod name;`: they are all tests.
fn test_module_files(sources: &[(String, PathBuf)]) -> Vec<PathBuf> {
    let declared = circles::regex(r"(?m)^#\[cfg\((?:test|all\(test[^\]]*\))\)\]\s*\n(?:pub(?:\(crate\))? )?mod (\w+);");
    let mut out = Vec::new();
    for (_, path) in sources {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let dir = match path.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => path.parent().map(Path::to_path_buf),
            _ => Some(path.with_extension("")),
        };
        for found in declared.captures_iter(&text) {
            if let Some(dir) = &dir {
                out.push(dir.join(format!("{}.rs", &found[1])));
                out.push(dir.join(&found[1]).join("mod.rs"));
            }
        }
    }
    out
}

#[test]
fn test_modules_alone_are_let_off_the_length() {
    let text = "//! m\nfn a() {}\n#[cfg(feature = \"test-hooks\")]\nfn hook() {\n}\n#[cfg(test)]\nmod tests {\n    fn t() {\n    }\n}\nfn b() {}\n";
    // Everything but the five lines of the test module counts, the test hook's included.
    assert_eq!(production_lines(text), 6);
}

/// The files of the crates that ship, but the files of test modules, with their text.
fn production_sources() -> Vec<(PathBuf, String)> {
    let sources = sources();
    let tests = test_module_files(&sources);
    sources
        .into_iter()
        .filter(|(krate, path)| PRODUCTION.contains(&krate.as_str()) && !tests.contains(path))
        .map(|(_, path)| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            (path, text)
        })
        .collect()
}

#[test]
fn production_files_stay_short() {
    let mut long = Vec::new();
    for (path, text) in production_sources() {
        let lines = production_lines(&text);
        let name = relative(&path);
        if lines > MAX_LINES && !LONG_FILES.iter().any(|(file, _)| *file == name) {
            long.push(format!("{name}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "production files over {MAX_LINES} lines (split them, or list one with its reason): {long:#?}"
    );
    for (file, _) in LONG_FILES {
        assert!(repository().join(file).is_file(), "{file} is listed as long but is gone: take it off the list");
    }
}

/// The editor code that ships, by directory and the ending of its files: the Neovim plugin's Lua, the Emacs
/// package's Lisp, the VS Code extension's TypeScript (its sources, not its tests or what npm installs).
const EDITOR_CODE: &[(&str, &str)] = &[("editors/nvim", "lua"), ("editors/emacs", "el"), ("editors/vscode/src", "ts")];

/// The shipped editor code is held to the length rule of the Rust: no file past [`MAX_LINES`] (split one by
/// concern; the Emacs package's parts `require` each other).
#[test]
fn shipped_editor_code_stays_short() {
    let root = repository();
    let mut long = Vec::new();
    for (dir, ending) in EDITOR_CODE {
        let mut files = Vec::new();
        files_below(&root.join(dir), &[ending], &[], &mut files);
        assert!(!files.is_empty(), "no .{ending} files below {dir}");
        for file in files {
            let lines = std::fs::read_to_string(&file).unwrap_or_default().lines().count();
            if lines > MAX_LINES {
                long.push(format!("{}: {lines} lines", relative(&file)));
            }
        }
    }
    assert!(long.is_empty(), "editor files over {MAX_LINES} lines (split them by concern): {long:#?}");
}

/// The lints that find every `unwrap` and `expect` call.
const UNWRAP_LINTS: [&str; 2] = ["unwrap_used", "expect_used"];

#[test]
fn production_code_never_unwraps() {
    let root = repository();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let lints = workspace.split("[workspace.lints.clippy]").nth(1).unwrap_or_default();
    let lints = lints.split("\n[").next().unwrap_or_default();
    for lint in UNWRAP_LINTS {
        // `warn` fails CI, which runs clippy with `-D warnings`.
        assert!(
            lints.lines().any(|line| line.replace(' ', "") == format!("{lint}=\"warn\"")
                || line.replace(' ', "") == format!("{lint}=\"deny\"")),
            "[workspace.lints.clippy] must set {lint} (warn or deny): {lints}"
        );
    }
    // Unit tests may unwrap (clippy.toml's allow-unwrap-in-tests); nothing else may be let off.
    let config = std::fs::read_to_string(root.join("clippy.toml")).unwrap_or_default();
    for key in ["allow-unwrap-in-tests", "allow-expect-in-tests"] {
        assert!(config.lines().all(|line| !line.starts_with(key) || line.ends_with("true")), "{key} in clippy.toml");
    }
    for krate in PRODUCTION {
        let manifest = std::fs::read_to_string(root.join("crates").join(krate).join("Cargo.toml")).unwrap_or_default();
        assert!(
            manifest.contains("[lints]\nworkspace = true"),
            "crates/{krate}/Cargo.toml must take the workspace lints ([lints] workspace = true)"
        );
    }
    let mut allowed = Vec::new();
    for (krate, path) in sources() {
        if !PRODUCTION.contains(&krate.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (index, line) in lines.iter().enumerate() {
            let lets_off = line.contains("allow(") || line.contains("expect(clippy");
            if !(lets_off && UNWRAP_LINTS.iter().any(|lint| line.contains(&format!("clippy::{lint}")))) {
                continue;
            }
            // Allowed only as the first line of a unit-test module: `#[cfg(test)]` (or `all(test, …)`),
            // `mod tests {`, then the inner `#![allow(…)]`.
            let in_tests = index >= 2
                && lines[index - 1].starts_with("mod ")
                && lines[index - 1].ends_with('{')
                && lines[index - 2].starts_with("#[cfg(")
                && lines[index - 2].contains("test")
                && line.starts_with("#![");
            if !in_tests {
                allowed.push(format!("{}:{}: {line}", relative(&path), index + 1));
            }
        }
    }
    assert!(allowed.is_empty(), "production code lets unwrap/expect off outside its unit tests: {allowed:#?}");
}

/// The one file allowed `unsafe` code (the workspace lint denies it everywhere else): `malloc_trim`, which
/// takes no pointer. Every crate's sources, tests and benches included, are read.
const UNSAFE_FILE: &str = "crates/wb-lsp/src/server/memory.rs";

#[test]
fn unsafe_code_lives_in_one_file() {
    let mut files = Vec::new();
    files_below(&repository().join("crates"), &["rs"], &[], &mut files);
    assert!(files.len() > 100, "found only {} Rust files", files.len());
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let uses = text.lines().filter(|line| {
            let code = line.split("//").next().unwrap_or_default();
            code.contains("unsafe {")
                || code.contains("unsafe extern")
                || code.contains("unsafe fn")
                || code.contains("unsafe impl")
                || code.contains("allow(unsafe_code)")
        });
        let count = uses.count();
        // This test names the words it looks for.
        let name = relative(&path);
        if count > 0 && name != UNSAFE_FILE && !name.starts_with("crates/wb-lsp/tests/tidy") {
            found.push(format!("{name}: {count} lines"));
        }
    }
    assert!(found.is_empty(), "unsafe code outside {UNSAFE_FILE}: {found:#?}");
    let manifest = std::fs::read_to_string(repository().join("Cargo.toml")).unwrap_or_default();
    assert!(manifest.contains("unsafe_code = \"deny\""), "the workspace lint denies unsafe code");
}

fn version(text: &str) -> Option<(u64, u64)> {
    let mut parts = text.trim().split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
}

/// The `rust-version` of a manifest's `[package]` (or `[workspace.package]`) table, if it names one.
fn declared_rust_version(manifest: &str) -> Option<(u64, u64)> {
    manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("rust-version")?.trim().strip_prefix('=').map(str::to_owned))
        .and_then(|value| version(value.trim().trim_matches('"')))
}

#[test]
fn rust_version_covers_every_locked_dependency() {
    let root = repository();
    let ours = declared_rust_version(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default())
        .expect("Cargo.toml declares rust-version");
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let registries: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let (mut locked, mut found, mut needs) = (0, 0, Vec::new());
    for package in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            package
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().strip_prefix('=').map(|v| v.trim().trim_matches('"')))
        };
        let (Some(name), Some(release), Some(source)) = (field("name "), field("version "), field("source ")) else {
            continue;
        };
        if !source.starts_with("registry+") {
            continue;
        }
        locked += 1;
        let Some(manifest) =
            registries.iter().map(|r| r.join(format!("{name}-{release}/Cargo.toml"))).find(|m| m.is_file())
        else {
            continue;
        };
        found += 1;
        if let Some(required) = declared_rust_version(&std::fs::read_to_string(manifest).unwrap_or_default())
            && required > ours
        {
            needs.push(format!("{name} {release} needs {}.{}", required.0, required.1));
        }
    }
    // The build that runs this test fetched the sources of every locked dependency for this platform (the
    // lockfile also lists other platforms' packages, never downloaded here).
    assert!(
        found * 4 >= locked * 3,
        "only {found} of {locked} locked packages' sources are in {}",
        cargo_home.display()
    );
    assert!(needs.is_empty(), "rust-version {}.{} is less than the lockfile needs: {needs:#?}", ours.0, ours.1);
}

/// Every file below `dir` whose name ends in one of `extensions` (or is named in `names`), skipping installed
/// and built trees.
fn files_below(dir: &Path, extensions: &[&str], names: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "node_modules" | "target" | "out" | "dist" | ".git") {
                files_below(&path, extensions, names, out);
            }
        } else if names.contains(&name.as_str()) || path.extension().is_some_and(|e| extensions.iter().any(|x| e == *x))
        {
            out.push(path);
        }
    }
}

/// CONTRIBUTING.md's tables name every `WB_*` variable the code reads from its environment: Rust's `var` and
/// `var_os`, a shell's `$WB_…`, Node's `process.env`, Lua's `getenv` and the editor test helpers' `env`, Emacs
/// Lisp's `getenv`.
#[test]
fn every_environment_knob_is_in_contributing() {
    let root = repository();
    let reads = regex::Regex::new(
        r#"(?:\bvar(?:_os)?|getenv|\benv)\(\s*"(WB_[A-Z0-9_]+)"|\(getenv "(WB_[A-Z0-9_]+)"|\$\{?(WB_[A-Z0-9_]+)|process\.env(?:\.|\[["'])(WB_[A-Z0-9_]+)"#,
    )
    .unwrap();
    let mut files = Vec::new();
    for dir in ["crates", "scripts", "editors", "tests", ".ci"] {
        files_below(&root.join(dir), &["rs", "sh", "mjs", "js", "ts", "lua", "el", "py"], &["run"], &mut files);
    }
    let mut knobs = std::collections::BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for found in reads.captures_iter(&text) {
            if let Some(name) = found.iter().skip(1).flatten().next() {
                knobs.entry(name.as_str().to_owned()).or_insert_with(|| relative(file));
            }
        }
    }
    assert!(knobs.len() > 30, "found only {} knobs: {knobs:?}", knobs.len());
    let contributing = std::fs::read_to_string(root.join("CONTRIBUTING.md")).unwrap();
    let listed = regex::Regex::new(r"\bWB_[A-Z0-9_]+").unwrap();
    let named: std::collections::BTreeSet<&str> = listed.find_iter(&contributing).map(|m| m.as_str()).collect();
    let missing: Vec<String> =
        knobs.iter().filter(|(name, _)| !named.contains(name.as_str())).map(|(n, f)| format!("{n} ({f})")).collect();
    assert!(missing.is_empty(), "read but not in CONTRIBUTING.md's tables: {missing:?}");
}

/// No crate's modules import each other in a circle: `tidy/circles.rs` says how the graph is read (a module and
/// its ancestors make no edge; every `use` path and every `crate::`/`super::`/`self::` path in code does). Open a
/// new circle where it is cheapest: move the shared item to a leaf both sides use.
#[test]
fn no_import_circles_inside_a_crate() {
    let root = repository();
    let Ok(crates) = std::fs::read_dir(root.join("crates")) else { panic!("no crates/ beside {}", root.display()) };
    let mut report = Vec::new();
    let mut modules = 0;
    for krate in crates.flatten() {
        let name = krate.file_name().to_string_lossy().into_owned();
        let graph = circles::Graph::read(&krate.path().join("src"));
        modules += graph.edges.len();
        for circle in graph.circles() {
            let mut lines =
                vec![format!("{}:", circle.iter().map(|m| circles::name(&name, m)).collect::<Vec<_>>().join(" <-> "))];
            for from in &circle {
                for (to, path) in &graph.edges[from] {
                    if circle.contains(to) {
                        lines.push(format!(
                            "    {} -> {} ({path})",
                            circles::name(&name, from),
                            circles::name(&name, to)
                        ));
                    }
                }
            }
            report.push(lines.join("\n"));
        }
    }
    assert!(modules > 250, "read only {modules} modules");
    assert!(report.is_empty(), "{} import circles inside crates:\n{}", report.len(), report.join("\n"));
}

/// `docs/lsp-extensions.md` and the server agree on the extensions: the commands `executeCommandProvider`
/// lists (`ext::COMMANDS`) are the ones the doc's capability table lists, in order, and each has a section of
/// its own; the methods the server adds (`workbench/runEvent`, the test hook `wbLsp/debug/panic`) are the only
/// `workbench/…` and `wbLsp/…` methods the doc names.
#[test]
fn the_extensions_doc_lists_what_the_server_registers() {
    use lsp_types::request::Request as _;
    use wb_lsp::server::ext;
    let doc = std::fs::read_to_string(repository().join("docs/lsp-extensions.md")).unwrap_or_default();
    let command = regex::Regex::new(r"`(workbench\.[a-z][A-Za-z]*)`").unwrap();
    let row = doc.lines().find(|line| line.starts_with("| `executeCommandProvider.commands`")).unwrap_or_default();
    let listed: Vec<&str> = command.captures_iter(row).map(|c| c.get(1).map_or("", |m| m.as_str())).collect();
    assert_eq!(listed, ext::COMMANDS, "the capability table's executeCommandProvider.commands against ext::COMMANDS");
    let headed: std::collections::BTreeSet<&str> = doc
        .lines()
        .filter(|line| line.starts_with("### "))
        .flat_map(|line| command.captures_iter(line).filter_map(|c| c.get(1).map(|m| m.as_str())))
        .collect();
    let server: std::collections::BTreeSet<&str> = ext::COMMANDS.into_iter().collect();
    assert_eq!(headed, server, "the commands with a section (### …) against ext::COMMANDS");
    let method = regex::Regex::new(r"\b((?:workbench|wbLsp)/[A-Za-z/]+)").unwrap();
    let named: std::collections::BTreeSet<&str> = method.find_iter(&doc).map(|m| m.as_str()).collect();
    let methods: std::collections::BTreeSet<&str> =
        [ext::RUN_EVENT, ext::INPUT_REQUESTED, ext::INPUT_RESOLVED, ext::DebugPanic::METHOD].into_iter().collect();
    assert_eq!(named, methods, "the methods the doc names against the server's");
}

/// No capability text of a runner's adapter names fewer runtimes than the capability holds on: every runtime
/// this build runs (`wb_engine::runtime::runtimes()`). A text that says "the local and docker runtimes only"
/// while sessions run on E2B and Daytona too shows in every dry run's report; it fails here.
#[test]
fn capability_texts_name_every_runtime_they_hold_on() {
    let runtimes = wb_engine::runtime::runtimes();
    assert!(runtimes.len() >= 4, "runtimes: {runtimes:?}");
    let mut wrong = Vec::new();
    for runner in wb_engine::adapters::RUNNERS {
        let Ok(adapter) = wb_engine::adapters::adapter(runner) else { panic!("no adapter for {runner}") };
        for (capability, support) in adapter.capabilities() {
            let text = match support {
                wb_engine::adapters::Support::Supported => continue,
                wb_engine::adapters::Support::Degraded(text) | wb_engine::adapters::Support::Unsupported(text) => text,
            };
            let words: Vec<String> =
                text.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase).collect();
            let named: Vec<&str> = runtimes.iter().copied().filter(|r| words.iter().any(|w| w == r)).collect();
            if !named.is_empty() && named.len() < runtimes.len() {
                wrong.push(format!("{runner} {capability}: {text:?} names {named:?} of {runtimes:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "capability texts naming some runtimes only: {wrong:#?}");
}

/// One exit table: README's "Exit status" table lists exactly `Exit::ALL`'s statuses and meanings, in order,
/// each variant of `Exit` is documented with its meaning (after a one-word label and a colon), and nothing in
/// the binary crate makes an `ExitCode` or ends the process with a number but `exit.rs`.
#[test]
fn the_exit_statuses_are_one_table() {
    use wb_lsp::exit::Exit;
    let root = repository();
    let expected: Vec<(u8, String)> =
        Exit::ALL.iter().map(|(exit, meaning)| (exit.code(), meaning.to_string())).collect();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    let section = readme.split("\n## Exit status\n").nth(1).unwrap_or_default();
    let section = section.split("\n## ").next().unwrap_or_default();
    let row = regex::Regex::new(r"^\| `(\d+)` \| (.+) \|$").unwrap();
    let listed: Vec<(u8, String)> = section
        .lines()
        .filter_map(|line| row.captures(line))
        .filter_map(|c| Some((c[1].parse().ok()?, c[2].to_string())))
        .collect();
    assert_eq!(listed, expected, "README.md's Exit status table against wb_lsp::exit::Exit::ALL");
    let source = std::fs::read_to_string(root.join("crates/wb-lsp/src/exit.rs")).unwrap_or_default();
    let variant = regex::Regex::new(r"^\s*[A-Z][A-Za-z]* = (\d+),$").unwrap();
    let (mut documented, mut doc) = (Vec::new(), Vec::new());
    for line in source.lines() {
        if let Some(text) = line.trim().strip_prefix("/// ") {
            doc.push(text.to_owned());
        } else if let Some(found) = variant.captures(line) {
            let text = doc.join(" ");
            let meaning = text.split_once(": ").map_or(text.as_str(), |(_, meaning)| meaning);
            documented.push((found[1].parse().unwrap_or(u8::MAX), meaning.trim_end_matches('.').to_owned()));
            doc.clear();
        } else {
            doc.clear();
        }
    }
    assert_eq!(documented, expected, "the doc of each variant of Exit (exit.rs) against Exit::ALL");
    let mut found = Vec::new();
    for (krate, path) in sources() {
        let name = relative(&path);
        if krate != "wb-lsp" || name == "crates/wb-lsp/src/exit.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (index, line) in text.lines().enumerate() {
            if line.contains("ExitCode::from(") || line.contains("ExitCode::SUCCESS") || line.contains("process::exit(")
            {
                found.push(format!("{name}:{}: {}", index + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "exit statuses made outside exit.rs (use wb_lsp::exit::Exit): {found:#?}");
}

/// The `Result` types in `code` whose error is a bare `String` (`Result<T, String>`, however `T` nests), by the
/// byte offset of each.
fn string_errors(code: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for (start, _) in code.match_indices("Result<") {
        let open = start + "Result".len();
        let (mut depth, mut arguments, mut from, mut previous) = (0usize, Vec::new(), open + 1, ' ');
        for (offset, c) in code[open..].char_indices() {
            match c {
                '<' => depth += 1,
                '>' if previous == '-' => {}
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        arguments.push(code[from..open + offset].trim());
                        // A trailing comma leaves an empty last argument.
                        let error = arguments.iter().rev().find(|argument| !argument.is_empty());
                        if arguments.len() > 1 && error.is_some_and(|error| *error == "String") {
                            found.push(start);
                        }
                        break;
                    }
                }
                ',' if depth == 1 => {
                    arguments.push(code[from..open + offset].trim());
                    from = open + offset + 1;
                }
                ';' | '{' => break,
                _ => {}
            }
            previous = c;
        }
    }
    found
}

#[test]
fn string_errors_are_found_however_they_nest() {
    let code = "fn a() -> Result<(Vec<u8>, Option<u8>), String> {}\nfn b() -> io::Result<()> {}\n\
                fn c() -> std::result::Result<\n    Box<dyn Fn() -> u8>,\n    String,\n> {}\nfn d() -> Result<String, E> {}\n\
                type R = MyResult<u8, String>;";
    assert_eq!(string_errors(code).len(), 3, "{code}");
}

/// No production code returns a bare `String` as its error (`Result<_, String>`): a failure is a typed error
/// (`thiserror`) or its crate's error type, so callers branch on the kind and not on the text. Unit-test
/// modules are let off, as from the length rule.
#[test]
fn production_errors_are_typed() {
    let mut found = Vec::new();
    for (path, text) in production_sources() {
        let lines = shipped(&text);
        let code: String =
            lines.iter().map(|(_, line)| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n");
        for offset in string_errors(&code) {
            let line = code[..offset].matches('\n').count();
            let number = lines.get(line).map_or(0, |(index, _)| index + 1);
            found.push(format!("{}:{number}: {}", relative(&path), lines.get(line).map_or("", |(_, l)| l.trim())));
        }
    }
    assert!(found.is_empty(), "production code with `Result<_, String>` (give it a typed error): {found:#?}");
}
