//! `textDocument/selectionRange`, `textDocument/documentHighlight` and `textDocument/semanticTokens/full`: the
//! manifest's structure from `wb_ide`, converted to the client's positions here.

use lsp_types as lsp;

use super::super::snapshot::Snapshot;
use super::File;

/// The token types of the legend, in the order `wb_ide::TokenType::index` numbers them.
pub const TOKEN_TYPES: [lsp::SemanticTokenType; 5] = [
    lsp::SemanticTokenType::PROPERTY,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::KEYWORD,
    lsp::SemanticTokenType::VARIABLE,
];

/// The modifiers of the legend: bit 0 is `declaration`.
pub const TOKEN_MODIFIERS: [lsp::SemanticTokenModifier; 1] = [lsp::SemanticTokenModifier::DECLARATION];

pub fn legend() -> lsp::SemanticTokensLegend {
    lsp::SemanticTokensLegend { token_types: TOKEN_TYPES.to_vec(), token_modifiers: TOKEN_MODIFIERS.to_vec() }
}

pub fn selection_ranges(
    snapshot: &Snapshot,
    params: lsp::SelectionRangeParams,
) -> anyhow::Result<Option<Vec<lsp::SelectionRange>>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let answer = params
        .positions
        .iter()
        .map(|position| {
            let offset = file.offset(snapshot, *position);
            let ranges = wb_ide::selection_ranges(&file.text, root, offset);
            // Outermost first, each the parent of the next.
            let mut nested: Option<lsp::SelectionRange> = None;
            for range in ranges.iter().rev() {
                nested =
                    Some(lsp::SelectionRange { range: file.range(snapshot, *range), parent: nested.map(Box::new) });
            }
            nested
                .unwrap_or(lsp::SelectionRange { range: lsp::Range { start: *position, end: *position }, parent: None })
        })
        .collect();
    Ok(Some(answer))
}

pub fn document_highlights(
    snapshot: &Snapshot,
    params: lsp::DocumentHighlightParams,
) -> anyhow::Result<Option<Vec<lsp::DocumentHighlight>>> {
    let position = params.text_document_position_params;
    let Some(file) = File::open(snapshot, &position.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let offset = file.offset(snapshot, position.position);
    let highlights = wb_ide::document_highlights(&file.text, root, offset)
        .into_iter()
        .map(|(range, kind)| lsp::DocumentHighlight {
            range: file.range(snapshot, range),
            kind: Some(match kind {
                wb_ide::HighlightKind::Write => lsp::DocumentHighlightKind::WRITE,
                wb_ide::HighlightKind::Read => lsp::DocumentHighlightKind::READ,
            }),
        })
        .collect::<Vec<_>>();
    Ok((!highlights.is_empty()).then_some(highlights))
}

pub fn semantic_tokens(
    snapshot: &Snapshot,
    params: lsp::SemanticTokensParams,
) -> anyhow::Result<Option<lsp::SemanticTokensResult>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let mut data = Vec::new();
    let (mut previous_line, mut previous_start) = (0u32, 0u32);
    'tokens: for token in wb_ide::semantic_tokens(&file.text, root) {
        // One token per line: a token may not span lines unless the client says so, and every client reads these.
        for piece in lines_of(&file.text, token.range) {
            // A block scalar of many lines is many pieces: the answer keeps to the tokens' budget all the same.
            if data.len() == wb_ide::MAX_TOKENS {
                break 'tokens;
            }
            let range = file.range(snapshot, piece);
            if range.end.line != range.start.line || range.end.character <= range.start.character {
                continue;
            }
            let delta_line = range.start.line - previous_line;
            let delta_start =
                if delta_line == 0 { range.start.character - previous_start } else { range.start.character };
            data.push(lsp::SemanticToken {
                delta_line,
                delta_start,
                length: range.end.character - range.start.character,
                token_type: token.kind.index(),
                token_modifiers_bitset: u32::from(token.declaration),
            });
            (previous_line, previous_start) = (range.start.line, range.start.character);
        }
    }
    Ok(Some(lsp::SemanticTokensResult::Tokens(lsp::SemanticTokens { result_id: None, data })))
}

/// The parts of `range` on each line, without the line breaks, and without the indentation that starts the
/// lines after the first (a block scalar's, which is not its text).
fn lines_of(text: &str, range: wb_syntax::TextRange) -> Vec<wb_syntax::TextRange> {
    let Some(slice) = text.get(range.as_range()) else { return Vec::new() };
    let mut pieces = Vec::new();
    let mut start = range.start;
    for (index, line) in slice.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches(['\n', '\r']);
        let indent = if index == 0 { 0 } else { content.len() - content.trim_start_matches([' ', '\t']).len() };
        pieces.push(wb_syntax::TextRange::new(start + indent, start + content.len()));
        start += line.len();
    }
    pieces
}
