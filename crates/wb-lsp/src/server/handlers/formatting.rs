//! `textDocument/formatting` and `textDocument/rangeFormatting` for `workbench.yml`: the edits of
//! `wb_ide::format_edits`, converted to the client's positions here. A manifest with syntax errors gets no
//! edits (its diagnostics say why); one the formatter would read differently afterwards gets an error that
//! says so, never a guess.

use lsp_types as lsp;
use wb_ide::{FormatEdit, FormatError, FormatOptions};

use super::super::snapshot::{Snapshot, is_manifest};
use super::File;

pub fn document(
    snapshot: &Snapshot,
    params: lsp::DocumentFormattingParams,
) -> anyhow::Result<Option<Vec<lsp::TextEdit>>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    if !is_manifest(&file.path) {
        return Ok(None);
    }
    answer(snapshot, &file, wb_ide::format_edits(&file.text, options(snapshot)))
}

pub fn range(
    snapshot: &Snapshot,
    params: lsp::DocumentRangeFormattingParams,
) -> anyhow::Result<Option<Vec<lsp::TextEdit>>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    if !is_manifest(&file.path) {
        return Ok(None);
    }
    let range =
        wb_syntax::TextRange::new(file.offset(snapshot, params.range.start), file.offset(snapshot, params.range.end));
    answer(snapshot, &file, wb_ide::format_range_edits(&file.text, range, options(snapshot)))
}

fn options(snapshot: &Snapshot) -> FormatOptions {
    FormatOptions { field_order: snapshot.config.format_field_order }
}

fn answer(
    snapshot: &Snapshot,
    file: &File,
    edits: Result<Vec<FormatEdit>, FormatError>,
) -> anyhow::Result<Option<Vec<lsp::TextEdit>>> {
    match edits {
        Ok(edits) => Ok(Some(
            edits
                .into_iter()
                .map(|edit| lsp::TextEdit { range: file.range(snapshot, edit.range), new_text: edit.new_text })
                .collect(),
        )),
        Err(FormatError::Syntax(_)) => Ok(None),
        Err(error) => Err(anyhow::anyhow!("{}: {error}", file.path.display())),
    }
}
