//! What the editor shows inline about a manifest: after `instructions:` and each skill, the file's size in
//! tokens (an estimate: a token is about four bytes of English or code) and, when the model catalog gives the
//! model's input price, what that context costs per run; after `model.id`, the route a run would take (the
//! engine's summary, given); after each `env` entry, whether a run from here gets a value (never the value).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use wb_manifest::{FileSystem, Manifest, ModelCatalog};
use wb_syntax::{Node, TextRange};

use crate::navigation::path_target;

/// At most this many inlay hints of one kind for one document (the first by position). A package names a few
/// skills and a few dozen variables.
pub const MAX_HINTS: usize = 500;

/// One file the package injects, and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextSize {
    /// Where the hint goes: the end of the value that names the file.
    pub after: usize,
    pub file: PathBuf,
    pub bytes: u64,
}

impl ContextSize {
    /// The estimated tokens: a quarter of the bytes, rounded up.
    pub fn tokens(&self) -> u64 {
        self.bytes.div_ceil(4)
    }
}

/// The instructions file and each skill's `SKILL.md` the manifest names within `range` (those that exist),
/// with their sizes.
pub fn context_sizes(fs: &dyn FileSystem, manifest_path: &Path, root: &Node, range: TextRange) -> Vec<ContextSize> {
    let package = manifest_path.parent().unwrap_or(Path::new("/"));
    let Some(top) = root.as_mapping() else { return Vec::new() };
    let mut named: Vec<(&Node, bool)> = top.get("instructions").map(|node| (node, false)).into_iter().collect();
    if let Some(skills) = top.get("skills").and_then(Node::as_sequence) {
        named.extend(skills.iter().map(|skill| (skill, true)));
    }
    named
        .into_iter()
        .filter(|(node, _)| within(range, node.range.end))
        .take(MAX_HINTS)
        .filter_map(|(node, skill)| {
            let value = node.as_str().map(str::trim).filter(|v| !v.is_empty())?;
            let file = path_target(fs, package, value, skill)?;
            // Its size, never its content: a thousand skills naming one large file cost a thousand `stat`s.
            let bytes = fs.size(&file).ok()?;
            Some(ContextSize { after: node.range.end, file, bytes })
        })
        .collect()
}

fn within(range: TextRange, offset: usize) -> bool {
    range.start <= offset && offset <= range.end
}

/// The kinds of hints the person wants (`workbench.inlayHints.context`, `.route`, `.env`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HintKinds {
    pub context: bool,
    pub route: bool,
    pub env: bool,
}

/// What a manifest's hints are made of besides its text: the caller gathers what lies outside the document.
pub struct HintInputs<'a> {
    /// The editor's view of the files (unsaved buffers included).
    pub fs: &'a dyn FileSystem,
    pub manifest_path: &'a Path,
    pub root: &'a Node,
    /// The buffer's model ([`wb_manifest::manifest_model`]).
    pub manifest: &'a Manifest,
    pub catalog: &'a ModelCatalog,
    /// What a run from here would do for its model (`wb_engine::routing::route_summary`).
    pub route: Option<String>,
    /// The variables set (not empty) in the environment a run from here inherits.
    pub bound: &'a dyn Fn(&str) -> bool,
    /// The names the repository's `.env` assigns.
    pub dotenv: &'a HashSet<String>,
}

/// One hint: its label goes at byte `offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlayHint {
    pub offset: usize,
    pub label: String,
    pub tooltip: &'static str,
}

const CONTEXT_TOOLTIP: &str = "Injected into every run. Tokens are estimated as a quarter of the bytes; the cost uses the model catalog's \
     input price.";
const ROUTE_TOOLTIP: &str = "The route a run started from this editor would take (credential names only).";
const ENV_TOOLTIP: &str = "Whether a run from here gets a value (never shown).";

/// The hints of the kinds asked for whose place lies within `range`, in document order; at most
/// [`MAX_HINTS`] of each kind.
pub fn inlay_hints(inputs: &HintInputs<'_>, kinds: HintKinds, range: TextRange) -> Vec<InlayHint> {
    let mut hints = Vec::new();
    if kinds.context {
        let price = inputs.manifest.model.as_ref().and_then(|m| input_price(inputs.catalog, &m.id.value));
        for size in context_sizes(inputs.fs, inputs.manifest_path, inputs.root, range) {
            hints.push(InlayHint { offset: size.after, label: context_label(&size, price), tooltip: CONTEXT_TOOLTIP });
        }
    }
    if kinds.route
        && let (Some(model), Some(route)) = (inputs.manifest.model.as_ref(), inputs.route.as_ref())
        && within(range, model.id.range.end)
    {
        hints.push(InlayHint { offset: model.id.range.end, label: route.clone(), tooltip: ROUTE_TOOLTIP });
    }
    if kinds.env {
        let shown = inputs.manifest.env.iter().filter(|var| within(range, var.name.range.end)).take(MAX_HINTS);
        for var in shown {
            let name = var.name.value.as_str();
            let label = if (inputs.bound)(name) {
                "bound"
            } else if inputs.dotenv.contains(name) {
                "in .env (pass --env-file .env)"
            } else if var.required {
                "not bound (required)"
            } else {
                "not bound"
            };
            hints.push(InlayHint { offset: var.name.range.end, label: label.to_owned(), tooltip: ENV_TOOLTIP });
        }
    }
    hints.sort_by_key(|hint| hint.offset);
    hints
}

/// The input price of `model` (its catalog id) in US dollars per million tokens, when the catalog gives one.
pub fn input_price(catalog: &ModelCatalog, model: &str) -> Option<f64> {
    catalog.models.get(model).and_then(|m| m.cost).map(|cost| cost.input).filter(|price| price.is_finite())
}

/// `~850 tokens (estimate)`, `~12.3k tokens, ~$0.0370 a run (estimate)`.
pub fn context_label(size: &ContextSize, price: Option<f64>) -> String {
    let tokens = size.tokens();
    let count =
        if tokens >= 1000 { format!("~{:.1}k tokens", tokens as f64 / 1000.0) } else { format!("~{tokens} tokens") };
    match price {
        Some(price) => {
            let cost = tokens as f64 * price / 1_000_000.0;
            if cost < 0.0001 {
                format!("{count}, <$0.0001 a run (estimate)")
            } else {
                format!("{count}, ~${cost:.4} a run (estimate)")
            }
        }
        None => format!("{count} (estimate)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_a_quarter_of_the_bytes_and_the_price_is_per_million() {
        let size = ContextSize { after: 0, file: PathBuf::from("/x"), bytes: 3401 };
        assert_eq!(size.tokens(), 851);
        assert_eq!(context_label(&size, None), "~851 tokens (estimate)");
        let big = ContextSize { after: 0, file: PathBuf::from("/x"), bytes: 49_200 };
        assert_eq!(context_label(&big, Some(3.0)), "~12.3k tokens, ~$0.0369 a run (estimate)");
        assert_eq!(context_label(&size, Some(0.01)), "~851 tokens, <$0.0001 a run (estimate)");
    }

    #[test]
    fn the_instructions_and_each_skill_are_measured() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let package = dir.path().join(".workbenches/demo");
        std::fs::create_dir_all(package.join("skills/review"))?;
        std::fs::write(package.join("instructions.md"), "a".repeat(400))?;
        std::fs::write(package.join("skills/review/SKILL.md"), "b".repeat(80))?;
        let text = "instructions: ./instructions.md\nskills:\n  - ./skills/review\n  - ./skills/missing\n";
        let root = wb_syntax::parse_str(text).root.unwrap_or_else(|| panic!("no root"));
        let everywhere = TextRange::new(0, text.len());
        let sizes = context_sizes(&wb_manifest::OsFileSystem, &package.join("workbench.yml"), &root, everywhere);
        let shown: Vec<(usize, u64)> = sizes.iter().map(|s| (s.after, s.bytes)).collect();
        assert_eq!(
            shown,
            [(text.find("\nskills").unwrap_or(0), 400), (text.find("\n  - ./skills/missing").unwrap_or(0), 80)]
        );
        Ok(())
    }
}
