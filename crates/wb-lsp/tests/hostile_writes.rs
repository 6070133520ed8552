//! Hostile trees against the commands that rewrite manifests (issue 40), through the binary: `fix` of the MCP
//! server and `check --fix` with the package directory swapped for a link out of the root, or the manifest
//! swapped for a link, between the check and the rename (made deterministic by the tests' hook
//! `WB_LSP_BEFORE_WRITE`, which runs a command just before each rename), and `fmt` and `migrate --write` on a
//! repository whose manifests link out of it (a token file, a package elsewhere) and to each other. Nothing
//! outside the root is written or copied in, no link becomes a file, and every link out is named.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use wb_testsupport::{isolate, write_file};

/// A manifest with safe fixes (a misspelt runner): what `fix` rewrites.
const FIXABLE: &str = "spec: 1
version: 0.1.0
name: fixable
description: Fixes for check --fix.
runner: opencod
model:
  id: openai/gpt-5.1
instructions: ./instructions.md
runtimes:
  local: {}
";

/// What stands for `~/.bashrc`: the file a write through the swapped link would replace.
const VICTIM: &str = "# the user's shell start-up file\nexport PATH=/usr/bin\n";

/// A scratch directory (its real path) with `root/.workbenches/fixable` and an outside `home` holding
/// `workbench.yml` and `.bashrc`, both [`VICTIM`].
fn fix_world() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let root = base.join("root");
    write_file(&root.join(".workbenches/fixable/workbench.yml"), FIXABLE);
    write_file(&root.join(".workbenches/fixable/instructions.md"), "# Fixable\n");
    let home = base.join("home");
    write_file(&home.join("workbench.yml"), VICTIM);
    write_file(&home.join(".bashrc"), VICTIM);
    (temp, root, home)
}

/// The hook command that moves the package directory aside and puts a link to `home` in its place.
fn swap_directory(root: &Path, home: &Path) -> String {
    let package = root.join(".workbenches/fixable");
    format!(
        "[ -L '{p}' ] || {{ mv '{p}' '{moved}' && ln -s '{home}' '{p}'; }}",
        p = package.display(),
        moved = root.join("moved").display(),
        home = home.display()
    )
}

/// The hook command that replaces the manifest with a link to `home/.bashrc`.
fn swap_manifest(root: &Path, home: &Path) -> String {
    let manifest = root.join(".workbenches/fixable/workbench.yml");
    format!(
        "[ -L '{m}' ] || {{ rm '{m}' && ln -s '{home}/.bashrc' '{m}'; }}",
        m = manifest.display(),
        home = home.display()
    )
}

/// `home` holds exactly what it held: both files [`VICTIM`], nothing added.
fn assert_home_untouched(home: &Path, context: &str) {
    let mut names: Vec<String> =
        std::fs::read_dir(home).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, [".bashrc", "workbench.yml"], "{context}: a file appeared outside the root");
    for name in &names {
        assert_eq!(std::fs::read_to_string(home.join(name)).unwrap(), VICTIM, "{context}: {name} was written");
    }
}

/// One `fix` call to `wb-lsp mcp --root ROOT` with the hook set: the tool's structured result and its
/// `isError`.
fn mcp_fix(root: &Path, hook: &str) -> (Value, bool) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
    isolate(&mut command)
        .args(["mcp", "--root"])
        .arg(root)
        .current_dir("/")
        .env("WB_LSP_BEFORE_WRITE", hook)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26",
            "capabilities": {}, "clientInfo": {"name": "hostile-writes", "version": "1.0.0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "fix", "arguments": {"path": ".workbenches/fixable"}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let answer = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|message| message["id"] == 2)
        .expect("the fix call is answered");
    let result = &answer["result"];
    (result["structuredContent"].clone(), result["isError"].as_bool().unwrap())
}

fn wb_lsp(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    isolate(&mut Command::new(env!("CARGO_BIN_EXE_wb-lsp")))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn mcp_fix_writes_through_the_directory_it_checked_even_when_it_becomes_a_link() {
    let (_temp, root, home) = fix_world();
    let (result, is_error) = mcp_fix(&root, &swap_directory(&root, &home));
    assert!(!is_error, "{result:#}");
    assert_home_untouched(&home, "mcp fix, directory swapped");
    // The fix landed in the directory that was checked, now moved aside; the link is still a link.
    let fixed = std::fs::read_to_string(root.join("moved/workbench.yml")).unwrap();
    assert!(fixed.contains("runner: opencode\n"), "{fixed}");
    assert!(std::fs::symlink_metadata(root.join(".workbenches/fixable")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_dir(root.join("moved")).unwrap().count(), 2, "a temporary file was left");
}

#[test]
fn mcp_fix_never_replaces_a_manifest_swapped_for_a_link() {
    let (_temp, root, home) = fix_world();
    let (result, is_error) = mcp_fix(&root, &swap_manifest(&root, &home));
    assert!(is_error, "{result:#}");
    assert!(result["error"].as_str().unwrap().contains("replaced"), "{result:#}");
    assert_home_untouched(&home, "mcp fix, manifest swapped");
    let manifest = root.join(".workbenches/fixable/workbench.yml");
    assert_eq!(std::fs::read_link(&manifest).unwrap(), home.join(".bashrc"), "the link became a file");
}

#[test]
fn check_fix_writes_nothing_outside_the_repository_when_a_directory_or_the_manifest_is_swapped() {
    let (_temp, root, home) = fix_world();
    let hook = swap_directory(&root, &home);
    let output = wb_lsp(&root, &["check", "--fix", "."], &[("WB_LSP_BEFORE_WRITE", &hook)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fixed .workbenches/fixable/workbench.yml: Change to `opencode`"), "{stderr}");
    assert_home_untouched(&home, "check --fix, directory swapped");
    assert!(std::fs::read_to_string(root.join("moved/workbench.yml")).unwrap().contains("runner: opencode\n"));

    let (_temp, root, home) = fix_world();
    let hook = swap_manifest(&root, &home);
    let output = wb_lsp(&root, &["check", "--fix", "."], &[("WB_LSP_BEFORE_WRITE", &hook)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("replaced"), "{stderr}");
    assert_home_untouched(&home, "check --fix, manifest swapped");
    let manifest = root.join(".workbenches/fixable/workbench.yml");
    assert_eq!(std::fs::read_link(&manifest).unwrap(), home.join(".bashrc"), "the link became a file");
}

/// A spec 0 manifest, badly spaced: `fmt` and `migrate` both change it.
fn legacy(name: &str) -> String {
    format!(
        "spec: 0\nversion: 0.1.0\nname: {name}\ndescription: Old.\nrunner:    opencode\nmodel:\n  id: openai/gpt-5.1\n\
         instructions: ./instructions.md\nruntime: local\n"
    )
}

const TOKEN: &str = "token:      SECRET-TOKEN-5e1f\n";

/// A repository with `.workbenches/linked/workbench.yml` linked to a token file outside, `.workbenches/outside`
/// linked to a package outside, `.workbenches/alias/workbench.yml` linked to `../real/workbench.yml` inside,
/// and `.workbenches/real`; returns (temp, repo, outside).
fn linked_repository() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let (repo, outside) = (base.join("repo"), base.join("outside"));
    let packages = repo.join(".workbenches");
    write_file(&outside.join("token.yml"), TOKEN);
    write_file(&outside.join("pkg/workbench.yml"), legacy("elsewhere"));
    write_file(&outside.join("pkg/instructions.md"), "# Elsewhere\n");
    std::fs::create_dir_all(packages.join("linked")).unwrap();
    write_file(&packages.join("linked/instructions.md"), "# Linked\n");
    symlink(outside.join("token.yml"), packages.join("linked/workbench.yml")).unwrap();
    symlink(outside.join("pkg"), packages.join("outside")).unwrap();
    write_file(&packages.join("real/workbench.yml"), legacy("real"));
    write_file(&packages.join("real/instructions.md"), "# Real\n");
    std::fs::create_dir_all(packages.join("alias")).unwrap();
    write_file(&packages.join("alias/instructions.md"), "# Alias\n");
    symlink("../real/workbench.yml", packages.join("alias/workbench.yml")).unwrap();
    (temp, repo, outside)
}

fn assert_links_kept(repo: &Path, outside: &Path, context: &str) {
    let packages = repo.join(".workbenches");
    assert_eq!(std::fs::read_to_string(outside.join("token.yml")).unwrap(), TOKEN, "{context}");
    assert_eq!(std::fs::read_to_string(outside.join("pkg/workbench.yml")).unwrap(), legacy("elsewhere"), "{context}");
    assert_eq!(std::fs::read_dir(outside.join("pkg")).unwrap().count(), 2, "{context}: a file appeared outside");
    assert_eq!(
        std::fs::read_link(packages.join("linked/workbench.yml")).unwrap(),
        outside.join("token.yml"),
        "{context}"
    );
    assert_eq!(std::fs::read_link(packages.join("outside")).unwrap(), outside.join("pkg"), "{context}");
    assert_eq!(std::fs::read_link(packages.join("alias/workbench.yml")).unwrap(), Path::new("../real/workbench.yml"));
    let copied = Command::new("grep").args(["-rl", "SECRET-TOKEN"]).arg(repo).output().unwrap();
    assert!(
        copied.stdout.is_empty(),
        "{context}: the token was copied in: {}",
        String::from_utf8_lossy(&copied.stdout)
    );
}

#[test]
fn fmt_and_migrate_neither_follow_nor_replace_links_out_of_the_repository() {
    let (_temp, repo, outside) = linked_repository();
    let output = wb_lsp(&repo, &["fmt"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for name in ["linked", "outside"] {
        let line = format!("error: .workbenches/{name}/workbench.yml: not formatted: its real path ");
        assert!(stderr.contains(&line), "{line:?} missing: {stderr}");
    }
    assert!(stderr.contains("is outside the repository"), "{stderr}");
    assert_links_kept(&repo, &outside, "fmt");
    // The manifest linked inside the repository is formatted where it really is.
    assert!(
        std::fs::read_to_string(repo.join(".workbenches/real/workbench.yml")).unwrap().contains("runner: opencode\n")
    );

    let (_temp, repo, outside) = linked_repository();
    for args in [&["fmt", "--check"][..], &["fmt", "--diff"][..], &["migrate"][..]] {
        let output = wb_lsp(&repo, args, &[]);
        let all = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert_eq!(output.status.code(), Some(1), "{args:?}: {all}");
        assert!(!all.contains("SECRET-TOKEN") && !all.contains("elsewhere"), "{args:?} read outside: {all}");
    }
    let output = wb_lsp(&repo, &["migrate", "--write"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for name in ["linked", "outside"] {
        let line = format!("error: .workbenches/{name}/workbench.yml: not migrated: its real path ");
        assert!(stderr.contains(&line), "{line:?} missing: {stderr}");
    }
    assert_links_kept(&repo, &outside, "migrate --write");
    assert!(std::fs::read_to_string(repo.join(".workbenches/real/workbench.yml")).unwrap().starts_with("spec: 1\n"));
}
