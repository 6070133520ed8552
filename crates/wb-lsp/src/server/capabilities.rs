//! The `initialize` handshake: what the client offers and what the server answers with (its capabilities and
//! the negotiated position encoding). What the client can show and insert is `client_features.rs`.

use lsp_server::{Connection, ErrorCode, ExtractError, Message, Response};
use lsp_types::{self as lsp, request::Request as _};
use wb_syntax::PositionEncoding;

use super::SessionEnd;
use super::ext;

/// What `initialize` settled: the client's parameters and the choices made from them.
pub struct Negotiated {
    pub params: lsp::InitializeParams,
    pub encoding: PositionEncoding,
    /// The client pulls diagnostics (`textDocument/diagnostic`) instead of receiving them.
    pub pull_diagnostics: bool,
    /// The client re-pulls every document's diagnostics when the server asks (`workspace/diagnostic/refresh`).
    pub diagnostics_refresh: bool,
}

/// Answers requests with `ServerNotInitialized` until `initialize`, then answers it. `Err` with how the session
/// ended when the client exits (without `shutdown`, necessarily) or disconnects first, or sends parameters
/// that cannot be read (answered with `InvalidParams`).
pub fn initialize(connection: &Connection) -> anyhow::Result<Result<Negotiated, SessionEnd>> {
    let (id, params, raw) = loop {
        let request = match connection.receiver.recv() {
            Ok(Message::Request(request)) => request,
            Ok(Message::Notification(notification)) if notification.method == "exit" => {
                return Ok(Err(SessionEnd::ExitWithoutShutdown));
            }
            Ok(_) => continue,
            Err(_) => return Ok(Err(SessionEnd::Clean)),
        };
        // `extract` keeps the request's id only on success; the answers to the others need it.
        let id = request.id.clone();
        let raw = request.params.clone();
        match request.extract::<lsp::InitializeParams>(lsp::request::Initialize::METHOD) {
            Ok((_, params)) => break (id, params, raw),
            Err(ExtractError::MethodMismatch(_)) => {
                let response =
                    Response::new_err(id, ErrorCode::ServerNotInitialized as i32, "server not initialized".into());
                connection.sender.send(response.into())?;
            }
            Err(ExtractError::JsonError { error, .. }) => {
                let message = format!("invalid initialize params: {error}");
                connection.sender.send(Response::new_err(id, ErrorCode::InvalidParams as i32, message).into())?;
                return Ok(Err(SessionEnd::Clean));
            }
        }
    };
    let encoding = negotiate_encoding(&params);
    let pull_diagnostics = params.capabilities.text_document.as_ref().and_then(|t| t.diagnostic.as_ref()).is_some();
    // The specification (and VS Code) spell it `workspace.diagnostics`; lsp-types reads `workspace.diagnostic`
    // only, so the raw parameters are asked too.
    let diagnostics_refresh = raw
        .pointer("/capabilities/workspace/diagnostics/refreshSupport")
        .and_then(serde_json::Value::as_bool)
        .or_else(|| {
            params.capabilities.workspace.as_ref().and_then(|w| w.diagnostic.as_ref()).and_then(|d| d.refresh_support)
        })
        .unwrap_or(false);
    let semantic_tokens = offers_semantic_tokens(&params.capabilities);
    let inlay_hints = params.capabilities.text_document.as_ref().and_then(|t| t.inlay_hint.as_ref()).is_some();
    let mut capabilities = server_capabilities(encoding, pull_diagnostics, semantic_tokens);
    // Inlay hints only for a client that shows them (Neovim 0.7 and Eglot 1.9 do not).
    capabilities.inlay_hint_provider = inlay_hints.then_some(lsp::OneOf::Left(true));
    let result = lsp::InitializeResult {
        capabilities,
        server_info: Some(lsp::ServerInfo { name: "wb-lsp".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
    };
    connection.sender.send(Response::new_ok(id, result).into())?;
    Ok(Ok(Negotiated { params, encoding, pull_diagnostics, diagnostics_refresh }))
}

fn negotiate_encoding(params: &lsp::InitializeParams) -> PositionEncoding {
    let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(list) if list.contains(&lsp::PositionEncodingKind::UTF8) => PositionEncoding::Utf8,
        _ => PositionEncoding::Utf16,
    }
}

/// Semantic tokens only for a client that asks for them in full, in the relative format (every client that
/// has them); the others get no provider rather than tokens they would ignore.
fn offers_semantic_tokens(capabilities: &lsp::ClientCapabilities) -> bool {
    let Some(tokens) = capabilities.text_document.as_ref().and_then(|t| t.semantic_tokens.as_ref()) else {
        return false;
    };
    let full = match &tokens.requests.full {
        Some(lsp::SemanticTokensFullOptions::Bool(full)) => *full,
        Some(lsp::SemanticTokensFullOptions::Delta { .. }) => true,
        None => false,
    };
    full && tokens.formats.contains(&lsp::TokenFormat::RELATIVE)
}

fn server_capabilities(
    encoding: PositionEncoding,
    pull_diagnostics: bool,
    semantic_tokens: bool,
) -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(match encoding {
            PositionEncoding::Utf8 => lsp::PositionEncodingKind::UTF8,
            _ => lsp::PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(lsp::TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
            save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
            ..lsp::TextDocumentSyncOptions::default()
        })),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![":".into(), " ".into(), "/".into(), "{".into(), "-".into()]),
            ..lsp::CompletionOptions::default()
        }),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        rename_provider: Some(lsp::OneOf::Right(lsp::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
        })),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        code_lens_provider: Some(lsp::CodeLensOptions { resolve_provider: Some(false) }),
        folding_range_provider: Some(lsp::FoldingRangeProviderCapability::Simple(true)),
        selection_range_provider: Some(lsp::SelectionRangeProviderCapability::Simple(true)),
        document_highlight_provider: Some(lsp::OneOf::Left(true)),
        document_formatting_provider: Some(lsp::OneOf::Left(true)),
        document_range_formatting_provider: Some(lsp::OneOf::Left(true)),
        semantic_tokens_provider: semantic_tokens.then(|| {
            lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(lsp::SemanticTokensOptions {
                legend: super::handlers::structure::legend(),
                full: Some(lsp::SemanticTokensFullOptions::Bool(true)),
                range: None,
                work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
            })
        }),
        document_link_provider: Some(lsp::DocumentLinkOptions {
            resolve_provider: Some(false),
            work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
        }),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Options(lsp::CodeActionOptions {
            code_action_kinds: Some(vec![
                lsp::CodeActionKind::QUICKFIX,
                lsp::CodeActionKind::new(super::handlers::code_action::SOURCE_MIGRATE),
            ]),
            ..lsp::CodeActionOptions::default()
        })),
        execute_command_provider: Some(lsp::ExecuteCommandOptions {
            commands: ext::COMMANDS.iter().map(|command| (*command).to_owned()).collect(),
            work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
        }),
        diagnostic_provider: pull_diagnostics.then(|| {
            lsp::DiagnosticServerCapabilities::Options(lsp::DiagnosticOptions {
                identifier: Some("wb-lsp".into()),
                inter_file_dependencies: true,
                workspace_diagnostics: true,
                work_done_progress_options: lsp::WorkDoneProgressOptions::default(),
            })
        }),
        workspace: Some(lsp::WorkspaceServerCapabilities {
            workspace_folders: Some(lsp::WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(lsp::OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..lsp::ServerCapabilities::default()
    }
}
