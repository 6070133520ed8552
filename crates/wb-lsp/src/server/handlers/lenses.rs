//! `textDocument/codeLens` on a manifest: dry run, smoke and run, and the trial lenses ([`super::trials`]).

use lsp_types as lsp;

use super::super::convert;
use super::super::ext::{self, RunArguments};
use super::super::snapshot::{Snapshot, is_manifest};

/// Code lenses above a manifest: Dry run, Smoke, Run (and the trial lenses). Clients that can ask for a task (the VS Code
/// extension) fill it in; others get an error asking for one.
pub fn code_lens(snapshot: &Snapshot, params: lsp::CodeLensParams) -> anyhow::Result<Option<Vec<lsp::CodeLens>>> {
    let uri = params.text_document.uri;
    let Some(path) = convert::url_to_path(&uri) else { return Ok(None) };
    if !is_manifest(&path) || wb_manifest::repository_root(&path).is_none() {
        return Ok(None);
    }
    let Some(index) = snapshot.index(&path) else { return Ok(None) };
    let range = convert::range(&index, wb_syntax::TextRange::empty(0), snapshot.encoding);
    let lens = |title: &str, command: &str| lsp::CodeLens {
        range,
        command: Some(lsp::Command {
            title: title.to_owned(),
            command: command.to_owned(),
            arguments: serde_json::to_value(RunArguments { uri: Some(uri.clone()), ..RunArguments::default() })
                .ok()
                .map(|argument| vec![argument]),
        }),
        data: None,
    };
    let mut lenses = vec![lens("▶ Dry run", ext::DRY_RUN), lens("✓ Smoke", ext::SMOKE), lens("▶ Run", ext::RUN)];
    lenses.extend(super::trials::lenses(&path, range, &uri));
    Ok(Some(lenses))
}
