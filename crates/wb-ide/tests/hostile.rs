//! Hostile packages (issue 13) in the editor: hovering a path the package names never shows a byte of a file
//! behind a link out of the repository.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;

use wb_manifest::{ModelCatalog, OsFileSystem};

const MARKER: &str = "HOSTILE-MARKER-e51b";

#[test]
fn hovering_a_skill_linked_out_of_the_repository_shows_none_of_it() {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let package = base.join("repo/.workbenches/demo");
    let outside = base.join("home/review");
    std::fs::create_dir_all(package.join("skills")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("SKILL.md"), format!("---\nname: review\ndescription: {MARKER}\n---\n")).unwrap();
    symlink(&outside, package.join("skills/review")).unwrap();
    let text = "spec: 1\nskills:\n  - ./skills/review\n";
    let parse = wb_syntax::parse_str(text);
    let root = parse.root.as_ref().unwrap();
    let offset = text.find("./skills/review").unwrap() + 3;
    let manifest = package.join("workbench.yml");
    let hover = wb_ide::hover(&OsFileSystem, &manifest, text, root, offset, ModelCatalog::embedded()).unwrap();
    assert!(!hover.markdown.contains(MARKER), "{}", hover.markdown);
    assert!(hover.markdown.contains("leads outside the repository"), "{}", hover.markdown);

    // The same skill copied inside the repository is described.
    std::fs::remove_file(package.join("skills/review")).unwrap();
    std::fs::create_dir_all(package.join("skills/review")).unwrap();
    std::fs::copy(outside.join("SKILL.md"), package.join("skills/review/SKILL.md")).unwrap();
    let hover = wb_ide::hover(&OsFileSystem, &manifest, text, root, offset, ModelCatalog::embedded()).unwrap();
    assert!(hover.markdown.contains(MARKER), "{}", hover.markdown);
}
