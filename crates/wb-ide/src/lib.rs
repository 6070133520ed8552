//! Editor features for Workbench manifests, as plain data: byte offsets in, byte ranges and strings out.
//!
//! The language server converts positions and protocol types; nothing here knows LSP. Every feature works on
//! the current text (an editor buffer), reads other files through [`wb_manifest::FileSystem`] so unsaved
//! buffers win, and tolerates documents that do not parse yet.

mod completion;
mod context;
mod format;
mod hover;
mod inlay;
mod markdown;
mod navigation;
mod structure;
mod symbols;
mod trial_task;

pub use completion::{CompletionItem, CompletionKind, CompletionOptions, completions, completions_parsed};
pub use context::{Located, YamlPath, locate};
pub use format::{FormatEdit, FormatError, FormatOptions, apply, format, format_edits, format_range_edits};
pub use hover::{Hover, hover};
pub use inlay::{
    ContextSize, HintInputs, HintKinds, InlayHint, MAX_HINTS, context_label, context_sizes, inlay_hints, input_price,
};
pub use markdown::to_plain_text;
pub use navigation::{
    Link, MAX_LINKS, RenameError, definition, document_links, env_range_at, env_references, rename_env,
};
pub use structure::{
    HighlightKind, MAX_TOKENS, Token, TokenType, document_highlights, selection_ranges, semantic_tokens,
};
pub use symbols::{
    Fold, MAX_FOLDS, MAX_OUTLINE_CHILDREN, MAX_OUTLINE_SYMBOLS, Symbol, SymbolKind, folding_ranges, symbols,
};
pub use trial_task::{task_completions, task_hover};
