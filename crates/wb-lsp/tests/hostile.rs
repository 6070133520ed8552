//! Hostile packages (issue 13) through the binary: `wb-lsp check`, in every format (human is what the
//! pre-commit hook prints into CI logs), never shows a byte of a file the package links to outside the
//! repository; it reports `path-outside-boundary` at the path in the manifest instead.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::process::Command;

/// A string that appears only outside the repository.
const MARKER: &str = "HOSTILE-MARKER-c4d8";

#[test]
fn check_never_prints_a_linked_skill_manifest_from_outside_the_repository() {
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
    std::fs::write(
        package.join("workbench.yml"),
        "spec: 1\nversion: 1.0.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nskills:\n  - ./skills/review\nruntimes:\n  local: {}\n",
    )
    .unwrap();
    std::fs::write(package.join("instructions.md"), "Do the work.\n").unwrap();
    for format in ["human", "json", "sarif", "github"] {
        let output = Command::new(env!("CARGO_BIN_EXE_wb-lsp"))
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
