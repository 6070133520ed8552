//! What the client declared it can show and insert (snippets, Markdown), read once from its `initialize`
//! capabilities and carried by every snapshot: a leaf the features' handlers and the snapshot name.

use lsp_types as lsp;

/// What the client declared it can show and insert; the features answer accordingly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientFeatures {
    /// Completion may insert snippets (`textDocument.completion.completionItem.snippetSupport`); without,
    /// plain text with the indentation of every line.
    pub snippets: bool,
    /// Completion documentation may be Markdown (`completionItem.documentationFormat`); else plain text.
    pub completion_markdown: bool,
    /// Hover may be Markdown (`textDocument.hover.contentFormat`); else plain text.
    pub hover_markdown: bool,
    /// The client shows a document the server names (`window.showDocument.support`): a trial's report.
    pub show_document: bool,
}

impl ClientFeatures {
    /// Markdown only where the client lists it (a client that lists no format gets plain text).
    pub fn of(capabilities: &lsp::ClientCapabilities) -> ClientFeatures {
        let text_document = capabilities.text_document.as_ref();
        let item = text_document.and_then(|t| t.completion.as_ref()).and_then(|c| c.completion_item.as_ref());
        let markdown =
            |formats: Option<&Vec<lsp::MarkupKind>>| formats.is_some_and(|f| f.contains(&lsp::MarkupKind::Markdown));
        ClientFeatures {
            snippets: item.and_then(|i| i.snippet_support).unwrap_or(false),
            completion_markdown: markdown(item.and_then(|i| i.documentation_format.as_ref())),
            hover_markdown: markdown(
                text_document.and_then(|t| t.hover.as_ref()).and_then(|h| h.content_format.as_ref()),
            ),
            show_document: capabilities
                .window
                .as_ref()
                .and_then(|w| w.show_document.as_ref())
                .is_some_and(|s| s.support),
        }
    }
}
