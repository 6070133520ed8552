//! `textDocument/completion`, in the forms the client declared: snippets or plain text, Markdown or plain
//! documentation. Items are complete as sent: the server offers no `completionItem/resolve` and sends no
//! `labelDetails`.

use lsp_types as lsp;
use wb_ide::{CompletionKind, CompletionOptions};

use super::super::convert::markup;
use super::super::snapshot::{Snapshot, is_manifest, is_trial_task};
use super::File;

pub fn handle(snapshot: &Snapshot, params: lsp::CompletionParams) -> anyhow::Result<Option<lsp::CompletionResponse>> {
    let position = params.text_document_position;
    let Some(file) = File::open(snapshot, &position.text_document.uri) else { return Ok(None) };
    let offset = file.offset(snapshot, position.position);
    let features = snapshot.features;
    let options = CompletionOptions { snippets: features.snippets };
    let items = if is_manifest(&file.path) {
        wb_ide::completions_parsed(
            &snapshot.overlay,
            &file.path,
            &file.text,
            &file.parse,
            offset,
            &snapshot.catalog,
            options,
        )
    } else if is_trial_task(&file.path) {
        wb_ide::task_completions(&file.text, &file.parse, offset, options)
    } else {
        return Ok(None);
    };
    let items = items
        .into_iter()
        .map(|item| {
            let kind = match item.kind {
                CompletionKind::Field => lsp::CompletionItemKind::PROPERTY,
                CompletionKind::Value => lsp::CompletionItemKind::VALUE,
                CompletionKind::Enum => lsp::CompletionItemKind::ENUM_MEMBER,
                CompletionKind::File => lsp::CompletionItemKind::FILE,
                CompletionKind::Folder => lsp::CompletionItemKind::FOLDER,
                CompletionKind::Variable => lsp::CompletionItemKind::VARIABLE,
                CompletionKind::Model => lsp::CompletionItemKind::CONSTANT,
            };
            lsp::CompletionItem {
                label: item.label,
                kind: Some(kind),
                detail: item.detail,
                documentation: item
                    .documentation
                    .map(|markdown| lsp::Documentation::MarkupContent(markup(markdown, features.completion_markdown))),
                sort_text: Some(item.sort_text),
                filter_text: None,
                insert_text_format: Some(if item.snippet {
                    lsp::InsertTextFormat::SNIPPET
                } else {
                    lsp::InsertTextFormat::PLAIN_TEXT
                }),
                // Plain text already holds the indentation of every line it inserts.
                insert_text_mode: Some(if features.snippets {
                    lsp::InsertTextMode::ADJUST_INDENTATION
                } else {
                    lsp::InsertTextMode::AS_IS
                }),
                text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
                    range: file.range(snapshot, item.replace),
                    new_text: item.insert_text,
                })),
                deprecated: None,
                tags: item.deprecated.then(|| vec![lsp::CompletionItemTag::DEPRECATED]),
                ..lsp::CompletionItem::default()
            }
        })
        .collect();
    Ok(Some(lsp::CompletionResponse::List(lsp::CompletionList { is_incomplete: false, items })))
}
