//! `textDocument/documentSymbol`: the manifest's outline.

use lsp_types as lsp;
use wb_ide::{Symbol, SymbolKind};

use super::super::snapshot::Snapshot;
use super::File;

#[allow(deprecated)]
fn convert(snapshot: &Snapshot, file: &File, symbol: Symbol) -> lsp::DocumentSymbol {
    let kind = match symbol.kind {
        SymbolKind::Object => lsp::SymbolKind::OBJECT,
        SymbolKind::Array => lsp::SymbolKind::ARRAY,
        SymbolKind::String => lsp::SymbolKind::STRING,
        SymbolKind::Number => lsp::SymbolKind::NUMBER,
        SymbolKind::Boolean => lsp::SymbolKind::BOOLEAN,
        SymbolKind::Null => lsp::SymbolKind::NULL,
        SymbolKind::Key => lsp::SymbolKind::KEY,
    };
    let children: Vec<lsp::DocumentSymbol> = symbol.children.into_iter().map(|c| convert(snapshot, file, c)).collect();
    let range = file.range(snapshot, symbol.range);
    let selection = file.range(snapshot, symbol.selection);
    lsp::DocumentSymbol {
        name: if symbol.name.is_empty() { "\"\"".to_owned() } else { symbol.name },
        detail: symbol.detail,
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range: selection,
        children: if children.is_empty() { None } else { Some(children) },
    }
}

pub fn handle(
    snapshot: &Snapshot,
    params: lsp::DocumentSymbolParams,
) -> anyhow::Result<Option<lsp::DocumentSymbolResponse>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let symbols = wb_ide::symbols(root).into_iter().map(|s| convert(snapshot, &file, s)).collect();
    Ok(Some(lsp::DocumentSymbolResponse::Nested(symbols)))
}
