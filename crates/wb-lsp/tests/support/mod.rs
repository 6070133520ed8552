//! An in-process LSP client over the real protocol. It answers the server's own requests
//! (`client/registerCapability`, `workspace/configuration`, `workspace/applyEdit`), and on drop it shuts the
//! server down and fails the test if the server sent a message the test did not read.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::{self as lsp, Url, notification::Notification as _, request::Request as _};
use serde_json::{Value, json};

pub struct Client {
    connection: Connection,
    server: Option<JoinHandle<anyhow::Result<wb_lsp::server::SessionEnd>>>,
    next_id: i32,
    /// Notifications received and not yet read by the test.
    unread: VecDeque<Notification>,
    /// Settings answered to `workspace/configuration`.
    pub settings: Value,
    /// Edits the server asked the client to apply.
    pub applied_edits: Vec<lsp::WorkspaceEdit>,
    /// The methods of the requests the server sent, in order.
    pub server_requests: Vec<String>,
    /// The answer to `workspace/applyEdit` (by default the edit is applied).
    pub apply_edit_answer: Value,
    pub initialize_result: Option<lsp::InitializeResult>,
}

pub struct Options {
    pub roots: Vec<std::path::PathBuf>,
    pub utf8: bool,
    pub pull: bool,
    pub settings: Value,
    pub test_hooks: bool,
    /// The client supports `workspace/configuration` (else the settings come in the initialization options).
    pub configuration: bool,
    /// Further initialization options, beside `wbLspTestHooks`.
    pub initialization_options: Value,
    /// Replaces these members of the `textDocument` capabilities (by default the client takes snippets and
    /// Markdown): see `neovim_0_7` and `eglot_1_9`.
    pub text_document: Value,
    /// The client shows `window/workDoneProgress`.
    pub progress: bool,
}

/// The completion and hover capabilities of Neovim 0.7's `vim.lsp.protocol.make_client_capabilities()`.
pub fn neovim_0_7() -> Value {
    json!({
        "completion": {
            "dynamicRegistration": false,
            "completionItem": {
                "snippetSupport": false,
                "commitCharactersSupport": false,
                "preselectSupport": false,
                "deprecatedSupport": false,
                "documentationFormat": ["markdown", "plaintext"],
            },
            "contextSupport": false,
        },
        "hover": {"dynamicRegistration": false, "contentFormat": ["markdown", "plaintext"]},
    })
}

/// The completion and hover capabilities of Eglot 1.9 on Emacs 28 without yasnippet and markdown-mode.
pub fn eglot_1_9() -> Value {
    json!({
        "completion": {
            "dynamicRegistration": false,
            "completionItem": {"snippetSupport": false, "deprecatedSupport": true, "tagSupport": {"valueSet": [1]}},
            "contextSupport": true,
        },
        "hover": {"dynamicRegistration": false, "contentFormat": ["plaintext"]},
    })
}

impl Default for Options {
    fn default() -> Options {
        Options {
            roots: Vec::new(),
            utf8: false,
            pull: false,
            settings: json!({}),
            test_hooks: false,
            configuration: true,
            initialization_options: json!({}),
            text_document: json!({}),
            progress: false,
        }
    }
}

pub fn uri(path: &Path) -> Url {
    Url::from_file_path(path).expect("absolute path")
}

impl Client {
    pub fn start(options: Options) -> Client {
        let (client, server) = Connection::memory();
        let handle = std::thread::spawn(move || wb_lsp::server::run(server));
        let mut client = Client {
            connection: client,
            server: Some(handle),
            next_id: 0,
            unread: VecDeque::new(),
            settings: options.settings,
            applied_edits: Vec::new(),
            server_requests: Vec::new(),
            apply_edit_answer: json!({"applied": true}),
            initialize_result: None,
        };
        let folders: Vec<Value> = options
            .roots
            .iter()
            .map(|root| json!({"uri": uri(root), "name": root.file_name().map(|n| n.to_string_lossy().into_owned())}))
            .collect();
        let mut capabilities = json!({
            "workspace": {
                "configuration": options.configuration,
                "didChangeWatchedFiles": {"dynamicRegistration": true},
                "workspaceEdit": {"documentChanges": true, "resourceOperations": ["create"]},
                "workspaceFolders": true,
            },
            "textDocument": {
                "publishDiagnostics": {"relatedInformation": true, "versionSupport": true},
                "completion": {"completionItem": {"snippetSupport": true, "documentationFormat": ["markdown", "plaintext"]}},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
            },
            "general": {"positionEncodings": if options.utf8 { json!(["utf-8", "utf-16"]) } else { json!(["utf-16"]) }},
        });
        if let Some(members) = options.text_document.as_object() {
            for (key, value) in members {
                capabilities["textDocument"][key] = value.clone();
            }
        }
        if options.progress {
            capabilities["window"] = json!({"workDoneProgress": true});
        }
        if options.pull {
            capabilities["textDocument"]["diagnostic"] = json!({"dynamicRegistration": false});
            // As the specification and VS Code spell it (`diagnostics`, plural).
            capabilities["workspace"]["diagnostics"] = json!({"refreshSupport": true});
        }
        let mut initialization_options = json!({"wbLspTestHooks": options.test_hooks});
        if let Some(extra) = options.initialization_options.as_object() {
            for (key, value) in extra {
                initialization_options[key] = value.clone();
            }
        }
        let result: lsp::InitializeResult = serde_json::from_value(client.request_raw(
            "initialize",
            json!({
                "processId": null,
                "rootUri": null,
                "capabilities": capabilities,
                "workspaceFolders": folders,
                "initializationOptions": initialization_options,
            }),
        ))
        .expect("initialize result");
        client.initialize_result = Some(result);
        client.notify::<lsp::notification::Initialized>(lsp::InitializedParams {});
        // The server asks for its configuration right after `initialized`; answer before the test starts so
        // the settings apply to everything the test does.
        let deadline = Instant::now() + Duration::from_secs(20);
        if options.configuration {
            loop {
                match client.next_message(deadline) {
                    Message::Request(request) => {
                        let configuration = request.method == lsp::request::WorkspaceConfiguration::METHOD;
                        client.answer_server_request(&request);
                        if configuration {
                            break;
                        }
                    }
                    Message::Notification(notification) => client.unread.push_back(notification),
                    Message::Response(response) => panic!("unexpected response {response:?}"),
                }
            }
        }
        client
    }

    fn next_message(&mut self, deadline: Instant) -> Message {
        let timeout = deadline.saturating_duration_since(Instant::now());
        match self.connection.receiver.recv_timeout(timeout) {
            Ok(message) => message,
            Err(_) => panic!("timed out waiting for the server; unread: {:?}", self.unread),
        }
    }

    /// Handles a server-to-client request; returns true when it was one.
    fn answer_server_request(&mut self, request: &Request) {
        self.server_requests.push(request.method.clone());
        let result = match request.method.as_str() {
            "workspace/configuration" => json!([self.settings.clone()]),
            "workspace/applyEdit" => {
                if let Some(edit) = request.params.get("edit") {
                    self.applied_edits.push(serde_json::from_value(edit.clone()).expect("workspace edit"));
                }
                self.apply_edit_answer.clone()
            }
            _ => Value::Null,
        };
        let response = Response::new_ok(request.id.clone(), result);
        self.connection.sender.send(response.into()).expect("send");
    }

    pub fn request_raw(&mut self, method: &str, params: Value) -> Value {
        match self.request_result(method, params) {
            Ok(value) => value,
            Err(error) => panic!("{method} failed: {error:?}"),
        }
    }

    pub fn send_request(&mut self, method: &str, params: Value) -> RequestId {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.connection.sender.send(Request::new(id.clone(), method.to_owned(), params).into()).expect("send");
        id
    }

    pub fn response(&mut self, id: &RequestId) -> Response {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.next_message(deadline) {
                Message::Response(response) if response.id == *id => return response,
                Message::Response(other) => panic!("unexpected response {other:?}"),
                Message::Notification(notification) => self.unread.push_back(notification),
                Message::Request(request) => self.answer_server_request(&request),
            }
        }
    }

    pub fn request_result(&mut self, method: &str, params: Value) -> Result<Value, lsp_server::ResponseError> {
        let id = self.send_request(method, params);
        let response = self.response(&id);
        match (response.result, response.error) {
            (_, Some(error)) => Err(error),
            (Some(result), None) => Ok(result),
            (None, None) => Ok(Value::Null),
        }
    }

    pub fn request<R: lsp::request::Request>(&mut self, params: R::Params) -> R::Result {
        let value = self.request_raw(R::METHOD, serde_json::to_value(params).expect("params"));
        serde_json::from_value(value).expect("result")
    }

    pub fn notify<N: lsp::notification::Notification>(&mut self, params: N::Params) {
        let notification = Notification::new(N::METHOD.to_owned(), params);
        self.connection.sender.send(notification.into()).expect("send");
    }

    pub fn open(&mut self, path: &Path, text: &str) {
        self.notify::<lsp::notification::DidOpenTextDocument>(lsp::DidOpenTextDocumentParams {
            text_document: lsp::TextDocumentItem {
                uri: uri(path),
                language_id: "yaml".into(),
                version: 1,
                text: text.into(),
            },
        });
    }

    /// Reads notifications until one matches and returns it; the others stay unread.
    pub fn wait_for<T>(&mut self, what: &str, mut matches: impl FnMut(&Notification) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(20);
        for index in 0..self.unread.len() {
            if let Some(found) = matches(&self.unread[index]) {
                self.unread.remove(index);
                return found;
            }
        }
        loop {
            match self.next_message(deadline) {
                Message::Notification(notification) => {
                    if let Some(found) = matches(&notification) {
                        return found;
                    }
                    self.unread.push_back(notification);
                }
                Message::Request(request) => self.answer_server_request(&request),
                Message::Response(response) => panic!("unexpected response while waiting for {what}: {response:?}"),
            }
        }
    }

    /// Waits for diagnostics of `path` that satisfy `accept`. The publishes of `path` that came before the
    /// accepted one count as read: each publish replaces the previous one, and how many intermediate versions a
    /// server publishes during a burst of edits depends on timing.
    pub fn diagnostics(
        &mut self,
        path: &Path,
        mut accept: impl FnMut(&lsp::PublishDiagnosticsParams) -> bool,
    ) -> lsp::PublishDiagnosticsParams {
        let uri = uri(path);
        let published = self.wait_for("diagnostics", |notification| {
            let params = publish_params(notification)?;
            (params.uri == uri && accept(&params)).then_some(params)
        });
        self.unread.retain(|notification| publish_params(notification).is_none_or(|params| params.uri != uri));
        published
    }

    /// Every notification that arrives within `quiet` of the last one (server requests answered), plus the
    /// unread ones.
    pub fn collect(&mut self, quiet: Duration) -> Vec<Notification> {
        let mut collected: Vec<Notification> = self.unread.drain(..).collect();
        while let Ok(message) = self.connection.receiver.recv_timeout(quiet) {
            match message {
                Message::Request(request) => self.answer_server_request(&request),
                Message::Notification(notification) => collected.push(notification),
                Message::Response(response) => panic!("unexpected response {response:?}"),
            }
        }
        collected
    }

    /// Marks every notification received so far as read (for tests that do not care about them).
    pub fn drain(&mut self) {
        std::thread::sleep(Duration::from_millis(200));
        while let Ok(message) = self.connection.receiver.try_recv() {
            match message {
                Message::Request(request) => self.answer_server_request(&request),
                Message::Notification(_) => {}
                Message::Response(response) => panic!("unexpected response {response:?}"),
            }
        }
        self.unread.clear();
    }

    pub fn shutdown(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        let Some(server) = self.server.take() else { return };
        let id = self.send_request("shutdown", Value::Null);
        let response = self.response(&id);
        assert!(response.error.is_none(), "shutdown failed: {response:?}");
        self.notify::<lsp::notification::Exit>(());
        let result = server.join().expect("server thread");
        assert!(
            matches!(result, Ok(wb_lsp::server::SessionEnd::Clean)),
            "the server failed, or did not see the shutdown: {result:?}"
        );
        let leftover: Vec<Message> = self.connection.receiver.try_iter().collect();
        let unread: Vec<&Notification> = self.unread.iter().collect();
        assert!(
            unread.is_empty() && leftover.is_empty(),
            "the server sent messages the test did not read: {unread:?} {leftover:?}"
        );
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.finish();
        }
    }
}

fn publish_params(notification: &Notification) -> Option<lsp::PublishDiagnosticsParams> {
    if notification.method != lsp::notification::PublishDiagnostics::METHOD {
        return None;
    }
    serde_json::from_value(notification.params.clone()).ok()
}

pub fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").canonicalize().expect("fixtures dir")
}
