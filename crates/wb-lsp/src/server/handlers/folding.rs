//! `textDocument/foldingRange`.

use lsp_types as lsp;

use super::super::snapshot::Snapshot;
use super::File;

pub fn handle(snapshot: &Snapshot, params: lsp::FoldingRangeParams) -> anyhow::Result<Option<Vec<lsp::FoldingRange>>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let folds = wb_ide::folding_ranges(&file.text, root)
        .into_iter()
        .filter_map(|fold| {
            let range = file.range(snapshot, fold.range);
            (range.end.line > range.start.line).then_some(lsp::FoldingRange {
                start_line: range.start.line,
                start_character: None,
                end_line: range.end.line,
                end_character: None,
                kind: Some(lsp::FoldingRangeKind::Region),
                collapsed_text: None,
            })
        })
        .collect();
    Ok(Some(folds))
}
