//! One module per LSP request (`notifications/` holds one per notification, `commands` routes the
//! `workbench.*` commands). Each request handler reads a [`Snapshot`] and converts between protocol positions
//! and the core's byte offsets through `convert` only.

pub mod answering;
pub mod code_action;
pub mod commands;
pub mod completion;
pub mod definition;
pub mod diagnostics;
pub mod execute;
pub mod folding;
pub mod formatting;
pub mod hover;
pub mod inlay;
pub mod lenses;
pub mod links;
pub mod notifications;
pub mod references;
pub mod rename;
pub mod sessions;
pub mod structure;
pub mod symbols;
pub mod trials;

use std::path::PathBuf;
use std::sync::Arc;

use lsp_types::Url;
use wb_syntax::{LineIndex, Parse};

use super::convert;
use super::snapshot::Snapshot;

/// A file as the handlers see it: its path, text (the open buffer wins), line index and parse, shared with
/// the snapshot (an open document's parse is the one its diagnostics used).
pub struct File {
    pub path: PathBuf,
    pub text: Arc<str>,
    pub index: Arc<LineIndex>,
    pub parse: Arc<Parse>,
}

impl File {
    pub fn open(snapshot: &Snapshot, uri: &Url) -> Option<File> {
        let path = convert::url_to_path(uri)?;
        let (text, index, parse) = snapshot.file(&path)?;
        Some(File { path, text, index, parse })
    }

    pub fn offset(&self, snapshot: &Snapshot, position: lsp_types::Position) -> usize {
        convert::offset(&self.index, position, snapshot.encoding)
    }

    pub fn range(&self, snapshot: &Snapshot, range: wb_syntax::TextRange) -> lsp_types::Range {
        convert::range(&self.index, range, snapshot.encoding)
    }
}
