//! Hostile packages (issue 13) through the binary: `wb-lsp check`, in every format (human is what the
//! pre-commit hook prints into CI logs), never shows a byte of a file the package links to outside the
//! repository; it reports `path-outside-boundary` at the path in the manifest instead. The language server
//! judges the same links on disk even while the file behind one is open in the editor.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Client, Options};

/// A string that appears only outside the repository.
const MARKER: &str = "HOSTILE-MARKER-c4d8";

const MANIFEST: &str = "spec: 1\nversion: 1.0.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nskills:\n  - ./skills/review\nruntimes:\n  local: {}\n";

/// A repository whose skill `review` has a `SKILL.md` linked to a file in a stand-in `$HOME`; returns the
/// temporary directory, the repository and the package directory.
fn repository_with_outside_skill() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let repo = base.join("repo");
    let package = repo.join(".workbenches/demo");
    let home = base.join("home");
    std::fs::create_dir_all(package.join("skills/review")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    // Broken frontmatter: a checker that reads it points into it and shows its lines.
    std::fs::write(home.join("notes.md"), format!("---\nname: [{MARKER}\n---\n{MARKER}\n")).unwrap();
    symlink(home.join("notes.md"), package.join("skills/review/SKILL.md")).unwrap();
    std::fs::write(package.join("workbench.yml"), MANIFEST).unwrap();
    std::fs::write(package.join("instructions.md"), "Do the work.\n").unwrap();
    (temp, repo, package)
}

#[test]
fn check_never_prints_a_linked_skill_manifest_from_outside_the_repository() {
    let (_temp, repo, _) = repository_with_outside_skill();
    for format in ["human", "json", "sarif", "github"] {
        let output = wb_testsupport::isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
            .args(["check", "--format", format, "."])
            .current_dir(&repo)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{format}: {stdout}{stderr}");
        assert!(!stdout.contains(MARKER) && !stderr.contains(MARKER), "{format} shows the outside file: {stdout}");
        assert!(stdout.contains("path-outside-boundary"), "{format}: {stdout}");
    }
}

#[test]
fn the_server_sees_the_link_even_while_the_file_behind_it_is_open() {
    let (_temp, repo, package) = repository_with_outside_skill();
    let _ = repo;
    // No workspace roots: the only check is the one of the open manifest, against the open skill buffer.
    let mut client = Client::start(Options::default());
    // The editor opened the linked SKILL.md (its path is inside the package) with an unsaved text that would
    // be reported into: the manifest check must still refuse the link, and say nothing of the text.
    let skill = package.join("skills/review/SKILL.md");
    client.open(&skill, &format!("---\nname: Bad_{MARKER}\ndescription: d\n---\n"));
    let manifest = package.join("workbench.yml");
    client.open(&manifest, MANIFEST);
    let published = client.diagnostics(&manifest, |p| !p.diagnostics.is_empty());
    let rendered = serde_json::to_string(&published).unwrap();
    assert!(rendered.contains("path-outside-boundary"), "{rendered}");
    assert!(!rendered.contains(MARKER), "{rendered}");
    assert!(!rendered.contains(&*Path::new("notes.md").to_string_lossy()), "{rendered}");
    client.drain();
}
