//! The one place where byte ranges become LSP positions and back, in the negotiated position encoding, and
//! where core values become protocol values.

use std::path::{Path, PathBuf};

use lsp_types::{self as lsp, Url};
use wb_manifest::{Diagnostic, DiagnosticTag, Severity};
use wb_syntax::{LineCol, LineIndex, PositionEncoding, TextRange};

use crate::output::docs_url;

pub fn position(index: &LineIndex, offset: usize, encoding: PositionEncoding) -> lsp::Position {
    let LineCol { line, col } = index.line_col(offset, encoding);
    lsp::Position { line, character: col }
}

pub fn range(index: &LineIndex, range: TextRange, encoding: PositionEncoding) -> lsp::Range {
    lsp::Range { start: position(index, range.start, encoding), end: position(index, range.end, encoding) }
}

pub fn offset(index: &LineIndex, position: lsp::Position, encoding: PositionEncoding) -> usize {
    index.offset(LineCol { line: position.line, col: position.character }, encoding)
}

pub fn text_range(index: &LineIndex, range: lsp::Range, encoding: PositionEncoding) -> TextRange {
    TextRange::new(offset(index, range.start, encoding), offset(index, range.end, encoding))
}

pub fn url_to_path(url: &Url) -> Option<PathBuf> {
    if url.scheme() == "file" { url.to_file_path().ok() } else { None }
}

pub fn path_to_url(path: &Path) -> Option<Url> {
    Url::from_file_path(path).ok()
}

pub fn severity(severity: Severity) -> lsp::DiagnosticSeverity {
    match severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Information => lsp::DiagnosticSeverity::INFORMATION,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    }
}

/// Converts a core diagnostic; `index_of` gives the line index of any file (for related locations).
pub fn diagnostic(
    diagnostic: &Diagnostic,
    index: &LineIndex,
    encoding: PositionEncoding,
    index_of: &dyn Fn(&Path) -> Option<std::sync::Arc<LineIndex>>,
) -> lsp::Diagnostic {
    let related: Vec<lsp::DiagnosticRelatedInformation> = diagnostic
        .related
        .iter()
        .filter_map(|related| {
            let uri = path_to_url(&related.path)?;
            let range = if related.path == diagnostic.path {
                range(index, related.range, encoding)
            } else {
                index_of(&related.path).map_or_else(lsp::Range::default, |i| range(&i, related.range, encoding))
            };
            Some(lsp::DiagnosticRelatedInformation {
                location: lsp::Location { uri, range },
                message: related.message.clone(),
            })
        })
        .collect();
    let tags: Vec<lsp::DiagnosticTag> = diagnostic
        .tags
        .iter()
        .map(|tag| match tag {
            DiagnosticTag::Unnecessary => lsp::DiagnosticTag::UNNECESSARY,
            DiagnosticTag::Deprecated => lsp::DiagnosticTag::DEPRECATED,
        })
        .collect();
    lsp::Diagnostic {
        range: range(index, diagnostic.range, encoding),
        severity: Some(severity(diagnostic.severity)),
        code: Some(lsp::NumberOrString::String(diagnostic.code.as_str().to_owned())),
        code_description: Url::parse(&docs_url(diagnostic.code)).ok().map(|href| lsp::CodeDescription { href }),
        source: Some("wb-lsp".to_owned()),
        message: diagnostic.message.clone(),
        related_information: if related.is_empty() { None } else { Some(related) },
        tags: if tags.is_empty() { None } else { Some(tags) },
        data: None,
    }
}

/// Text the features write as Markdown, as Markdown when the client accepts it, else rendered as plain text.
pub fn markup(markdown: String, markdown_accepted: bool) -> lsp::MarkupContent {
    if markdown_accepted {
        lsp::MarkupContent { kind: lsp::MarkupKind::Markdown, value: markdown }
    } else {
        lsp::MarkupContent { kind: lsp::MarkupKind::PlainText, value: wb_ide::to_plain_text(&markdown) }
    }
}
