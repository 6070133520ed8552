//! The generated inputs of the performance benches and examples: normal packages, packages with problems, a
//! 10,000-line manifest, and repositories of them.

use std::path::{Path, PathBuf};

use crate::write_file;

/// Lines of the large manifest: 5,000 `env` entries of two lines each, plus the header.
pub const LARGE_VARS: usize = 5_000;

/// A package like the example's `migrations`: instructions, two skills, a Dockerfile build, an MCP server
/// whose header references an env variable, two runtimes. Returns its manifest.
pub fn normal_package(root: &Path, i: usize) -> PathBuf {
    let dir = root.join(".workbenches").join(format!("pkg-{i:04}"));
    write_file(&dir.join("instructions.md"), format!("Package {i}: do the work.\n"));
    write_file(&dir.join("Dockerfile"), "FROM node:22\n");
    for skill in ["review", "release"] {
        write_file(
            &dir.join("skills").join(skill).join("SKILL.md"),
            format!("---\nname: {skill}\ndescription: The {skill} skill of package {i}.\n---\n"),
        );
    }
    let manifest = format!(
        "{}spec: 1\nversion: 1.{i}.0\nname: pkg-{i:04}\ndescription: Generated package {i}.\nrunner: opencode\n\
         model:\n  id: openai/gpt-5.6-terra\n  routes:\n    - provider: openai\ninstructions: ./instructions.md\n\
         skills:\n  - ./skills/review\n  - ./skills/release\ntools: [node, npm]\nmcps:\n  - name: db\n    \
         transport: http\n    url: https://db.example.com/mcp/{i}\n    headers:\n      Authorization: Bearer \
         ${{DB_TOKEN}}\nenv:\n  DB_TOKEN:\n    required: true\n  DATABASE_URL:\n    required: false\n\
         runtimes:\n  docker:\n    image:\n      build: ./Dockerfile\n      context: ../..\n  local: {{}}\n",
        modeline()
    );
    let path = dir.join("workbench.yml");
    write_file(&path, &manifest);
    path
}

/// A package that carries problems: an unknown runner and model (each with its "did you mean" fix), a missing
/// build file, a duplicate key. Returns its manifest.
pub fn problem_package(root: &Path, i: usize) -> PathBuf {
    let dir = root.join(".workbenches").join(format!("bad-{i:04}"));
    write_file(&dir.join("instructions.md"), format!("Package {i}: do the work.\n"));
    write_file(
        &dir.join("skills").join("review").join("SKILL.md"),
        format!("---\nname: review\ndescription: The review skill of package {i}.\n---\n"),
    );
    let manifest = format!(
        "{}spec: 1\nversion: 1.{i}.0\nname: bad-{i:04}\ndescription: Generated package {i}.\n\
         description: Said twice.\nrunner: opencod\nmodel:\n  id: openai/gpt-5.6-terrra\n  routes:\n    - \
         provider: openai\ninstructions: ./instructions.md\nskills:\n  - ./skills/review\n\
         tools: [node, npm]\nenv:\n  DB_TOKEN:\n    required: true\n\
         runtimes:\n  docker:\n    image:\n      build: ./Dockerfile.missing\n      context: ../..\n  local: {{}}\n",
        modeline()
    );
    let path = dir.join("workbench.yml");
    write_file(&path, &manifest);
    path
}

/// The text of the large manifest: 10,000+ lines, 5,000 `env` entries.
pub fn large_manifest_text(name: &str) -> String {
    let mut text = format!(
        "{}spec: 1\nversion: 1.0.0\nname: {name}\ndescription: Generated large manifest.\nrunner: opencode\n\
         model:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nenv:\n",
        modeline()
    );
    for i in 0..LARGE_VARS {
        text.push_str(&format!("  VAR_{i}:\n    required: {}\n", i % 2 == 0));
    }
    text.push_str("runtimes:\n  local: {}\n");
    text
}

/// Line (0-based) of `VAR_{i}:` in the large manifest.
pub fn large_var_line(i: usize) -> u32 {
    (10 + 2 * i) as u32
}

/// Line (0-based) of `description:` in every generated manifest.
pub const DESCRIPTION_LINE: u32 = 4;

/// The first line of every generated manifest: the modeline `wb-lsp init` writes, naming our spec 1 schema by
/// its path here, so yaml-language-server validates with it (it ignored the same schema associated through
/// `yaml.schemas` in this setup). wb-lsp reads it as a comment.
fn modeline() -> String {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/v1/workbench.schema.json");
    let schema = schema.canonicalize().expect("schema");
    format!("# yaml-language-server: $schema={}\n", schema.display())
}

/// A package with the large manifest. Returns its manifest.
pub fn large_package(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(".workbenches").join(name);
    write_file(&dir.join("instructions.md"), "Large.\n");
    let path = dir.join("workbench.yml");
    write_file(&path, large_manifest_text(name));
    path
}

/// A repository (a `.git` directory marks it) with `normal` generated packages and the named large ones.
pub struct Repository {
    pub normal: Vec<PathBuf>,
    pub large: Vec<PathBuf>,
}

/// A repository (a `.git` directory marks it) of `count` packages that carry problems.
pub fn problem_repository(root: &Path, count: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(root.join(".git")).expect("repository");
    (0..count).map(|i| problem_package(root, i)).collect()
}

pub fn repository(root: &Path, normal: usize, large: &[&str]) -> Repository {
    std::fs::create_dir_all(root.join(".git")).expect("repository");
    Repository {
        normal: (0..normal).map(|i| normal_package(root, i)).collect(),
        large: large.iter().map(|name| large_package(root, name)).collect(),
    }
}
