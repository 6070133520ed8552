//! The fixture package on disk, the `$0` cursor marker, and the small model catalog the tests use.

use std::path::{Path, PathBuf};

use wb_manifest::ModelCatalog;
use wb_syntax::TextRange;

/// A repository with one package `pkg`: instructions, a skill with a `SKILL.md`, a directory without one, a
/// Dockerfile and a runner configuration.
pub struct Package {
    _dir: tempfile::TempDir,
    pub dir: PathBuf,
    pub manifest: PathBuf,
}

pub fn package() -> Package {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().canonicalize().unwrap().join(".workbenches/pkg");
    for (path, text) in [
        ("instructions.md", "Do the work.\n"),
        ("notes.txt", "not markdown\n"),
        ("Dockerfile", "FROM node:22\n"),
        ("opencode.json", "{}\n"),
        ("skills/review/SKILL.md", "---\nname: review\ndescription: Reviews pull requests.\n---\n"),
        ("skills/drafts/README.md", "no SKILL.md here\n"),
    ] {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let manifest = dir.join("workbench.yml");
    Package { _dir: temp, dir, manifest }
}

impl Package {
    /// A path shown relative to the package.
    pub fn show(&self, path: &Path) -> String {
        path.strip_prefix(&self.dir).map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
    }
}

/// The text without its `$0` marker, and the marker's offset.
pub fn cursor(fixture: &str) -> (String, usize) {
    let offset = fixture.find("$0").expect("the fixture has a $0 cursor");
    (fixture.replacen("$0", "", 1), offset)
}

/// The text with each range wrapped in `[` `]` (ranges must not overlap).
pub fn mark(text: &str, ranges: &[TextRange]) -> String {
    let mut sorted = ranges.to_vec();
    sorted.sort_by_key(|range| range.start);
    let mut out = String::new();
    let mut copied = 0;
    for range in sorted {
        out.push_str(&text[copied..range.start]);
        out.push('[');
        out.push_str(&text[range.as_range()]);
        out.push(']');
        copied = range.end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Two labs, three providers: small enough to read in an expectation.
pub fn catalog() -> ModelCatalog {
    let json = r#"{
      "version": "test-catalog",
      "providers": {
        "openai": {"name": "OpenAI", "env": ["OPENAI_API_KEY"]},
        "openrouter": {"name": "OpenRouter", "env": ["OPENROUTER_API_KEY"]},
        "anthropic": {"name": "Anthropic", "env": ["ANTHROPIC_API_KEY"]}
      },
      "models": {
        "openai/gpt-5.6-terra": {"name": "GPT-5.6 Terra", "providers": {"openai": "gpt-5.6-terra", "openrouter": "openai/gpt-5.6-terra"}},
        "anthropic/claude-sonnet-5": {"name": "Claude Sonnet 5", "providers": {"anthropic": "claude-sonnet-5"}}
      }
    }"#;
    ModelCatalog::from_json(json, "test").unwrap()
}
