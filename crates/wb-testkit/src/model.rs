//! The scripted model server: OpenAI chat completions (`POST …/chat/completions`) and Anthropic Messages
//! (`POST …/v1/messages`), streaming or not, with tool calls and usage. Each request is answered from the
//! script and recorded (model, tools offered, system prompt, headers, body).
//!
//! Which scripted turn answers a request: the next one, in arrival order. (Counting the assistant messages in
//! the conversation is not enough: Claude Code leaves its ToolSearch exchanges out of the history it sends.)
//! Requests that offer no tools (titles, summaries, quota probes) are auxiliary: they get a short fixed text
//! and consume nothing, so a runner's side requests never shift the script.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::http::{Request, Responder, Server};

/// One scripted tool call.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
}

/// One scripted answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Turn {
    /// Text streamed first (in a few pieces).
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// After the text, keep the stream open without finishing it (a turn that never ends, for cancellation).
    #[serde(default)]
    pub hang: bool,
}

impl Turn {
    pub fn text(text: &str) -> Turn {
        Turn { text: Some(text.to_owned()), ..Turn::default() }
    }

    pub fn tools(text: Option<&str>, calls: Vec<ToolCall>) -> Turn {
        Turn { text: text.map(str::to_owned), tool_calls: calls, hang: false }
    }
}

/// Which API a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    OpenAiChat,
    AnthropicMessages,
    Other,
}

/// What the server saw.
#[derive(Clone, Debug, Serialize)]
pub struct Recorded {
    pub api: Api,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub model: Option<String>,
    /// Names of the tools offered.
    pub tools: Vec<String>,
    /// The system prompt (every system part joined with newlines).
    pub system: String,
    /// The scripted turn that answered, or `None` for auxiliary and unknown requests.
    pub turn: Option<usize>,
    /// When the request arrived.
    #[serde(skip)]
    pub at: std::time::Instant,
    /// The same moment on the wall clock (to compare with other processes' timestamps).
    #[serde(skip)]
    pub wall: std::time::SystemTime,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// What a script sees when choosing an answer.
pub struct Exchange<'a> {
    pub api: Api,
    /// The scripted turn index (scripted requests answered before this one).
    pub turn: usize,
    pub tools: &'a [String],
    pub body: &'a Value,
}

type Script = dyn Fn(&Exchange<'_>) -> Turn + Send + Sync;

/// A running scripted model server.
pub struct ModelServer {
    server: Server,
    log: Arc<Mutex<Vec<Recorded>>>,
}

/// The text answered to auxiliary requests.
pub const AUXILIARY_TEXT: &str = "Scripted title";

impl ModelServer {
    /// Serves a fixed list of turns; past the end it answers `done`.
    pub fn start(turns: Vec<Turn>) -> std::io::Result<ModelServer> {
        ModelServer::start_with(move |exchange| turns.get(exchange.turn).cloned().unwrap_or_else(|| Turn::text("done")))
    }

    /// Serves answers chosen by `script` (it can look at the tools offered to name them right).
    pub fn start_with(script: impl Fn(&Exchange<'_>) -> Turn + Send + Sync + 'static) -> std::io::Result<ModelServer> {
        ModelServer::start_on(std::net::IpAddr::from([127, 0, 0, 1]), script)
    }

    /// [`ModelServer::start_with`] on another local address (a container bridge's gateway).
    pub fn start_on(
        ip: std::net::IpAddr,
        script: impl Fn(&Exchange<'_>) -> Turn + Send + Sync + 'static,
    ) -> std::io::Result<ModelServer> {
        let log: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let sink = log.clone();
        let server = Server::start_on(
            ip,
            0,
            Arc::new(move |request: &Request, responder: &mut Responder<'_>| {
                handle(request, responder, &*script, &sink)
            }),
        )?;
        Ok(ModelServer { server, log })
    }

    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    /// The requests that a scripted turn answered.
    pub fn turns(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.turn.is_some()).collect()
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn classify(request: &Request) -> Api {
    if request.method != "POST" {
        return Api::Other;
    }
    let path = request.path.split('?').next().unwrap_or_default();
    if path.ends_with("/chat/completions") {
        Api::OpenAiChat
    } else if path.ends_with("/v1/messages") || path == "/messages" {
        Api::AnthropicMessages
    } else {
        Api::Other
    }
}

fn handle(
    request: &Request,
    responder: &mut Responder<'_>,
    script: &Script,
    log: &Mutex<Vec<Recorded>>,
) -> std::io::Result<()> {
    let api = classify(request);
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let tools: Vec<String> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.pointer("/function/name").or_else(|| t.get("name")).and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let system = match api {
        Api::OpenAiChat => messages
            .iter()
            .filter(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")))
            .map(|m| text_of(m.get("content").unwrap_or(&Value::Null)))
            .collect::<Vec<_>>()
            .join("\n"),
        Api::AnthropicMessages => text_of(body.get("system").unwrap_or(&Value::Null)),
        Api::Other => String::new(),
    };
    let scripted = api != Api::Other && !tools.is_empty();
    let mut log = match log.lock() {
        Ok(log) => log,
        Err(poisoned) => poisoned.into_inner(),
    };
    let turn = log.iter().filter(|r| r.turn.is_some()).count();
    let record = Recorded {
        api,
        method: request.method.clone(),
        path: request.path.clone(),
        headers: request.headers.clone(),
        body: body.clone(),
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
        tools: tools.clone(),
        system,
        turn: scripted.then_some(turn),
        at: std::time::Instant::now(),
        wall: std::time::SystemTime::now(),
    };
    log.push(record);
    drop(log);
    let input_tokens = 100 + 10 * turn as u64;
    let turn =
        if scripted { script(&Exchange { api, turn, tools: &tools, body: &body }) } else { Turn::text(AUXILIARY_TEXT) };
    let model = body.get("model").and_then(Value::as_str).unwrap_or("scripted-model").to_owned();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    match api {
        Api::OpenAiChat if stream => openai_stream(responder, &model, &turn, input_tokens),
        Api::OpenAiChat => responder.json(200, &openai_message(&model, &turn, input_tokens)),
        Api::AnthropicMessages if stream => anthropic_stream(responder, &model, &turn, input_tokens),
        Api::AnthropicMessages => responder.json(200, &anthropic_message(&model, &turn, input_tokens)),
        Api::Other => {
            let path = request.path.split('?').next().unwrap_or_default();
            if request.method == "GET" && path.ends_with("/models") {
                responder.json(200, &json!({"object": "list", "data": [{"id": model, "object": "model"}]}))
            } else {
                responder.json(404, &json!({"error": {"type": "not_found", "message": "not scripted"}}))
            }
        }
    }
}

/// A fresh id for every message and tool call: runners merge messages that share an id (Claude Code joins
/// the content blocks of one streamed message that way) and match tool results by id.
fn fresh_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{prefix}_scripted_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Splits `text` near its middle, on a character boundary.
fn halves(text: &str) -> (&str, &str) {
    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle -= 1;
    }
    text.split_at(middle)
}

/// Output token count of a turn (a fixed function of what is sent, so tests can predict it).
fn output_tokens(turn: &Turn) -> u64 {
    20 + 5 * turn.tool_calls.len() as u64
}

fn pieces(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let size = words.len().div_ceil(3).max(1);
    words.chunks(size).map(|chunk| chunk.concat()).collect()
}

fn openai_chunk(model: &str, delta: Value, finish: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
    .to_string()
}

fn openai_stream(responder: &mut Responder<'_>, model: &str, turn: &Turn, input_tokens: u64) -> std::io::Result<()> {
    responder.start_events()?;
    responder.event(None, &openai_chunk(model, json!({"role": "assistant", "content": ""}), None))?;
    if let Some(text) = &turn.text {
        for piece in pieces(text) {
            responder.event(None, &openai_chunk(model, json!({"content": piece}), None))?;
        }
    }
    if turn.hang {
        responder.hang(Duration::from_secs(120));
        return Ok(());
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        let arguments = call.arguments.to_string();
        let (head, tail) = halves(&arguments);
        let id = fresh_id("call");
        responder.event(
            None,
            &openai_chunk(
                model,
                json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": call.name, "arguments": head}}]}),
                None,
            ),
        )?;
        responder.event(
            None,
            &openai_chunk(model, json!({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}), None),
        )?;
    }
    let finish = if turn.tool_calls.is_empty() { "stop" } else { "tool_calls" };
    responder.event(None, &openai_chunk(model, json!({}), Some(finish)))?;
    let output = output_tokens(turn);
    responder.event(
        None,
        &json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output, "total_tokens": input_tokens + output},
        })
        .to_string(),
    )?;
    responder.event(None, "[DONE]")
}

fn openai_message(model: &str, turn: &Turn, input_tokens: u64) -> Value {
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .map(|call| {
            json!({"id": fresh_id("call"), "type": "function",
                   "function": {"name": call.name, "arguments": call.arguments.to_string()}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": turn.text.clone().unwrap_or_default()});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let output = output_tokens(turn);
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": if turn.tool_calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": {"prompt_tokens": input_tokens, "completion_tokens": output, "total_tokens": input_tokens + output},
    })
}

fn anthropic_stream(responder: &mut Responder<'_>, model: &str, turn: &Turn, input_tokens: u64) -> std::io::Result<()> {
    responder.start_events()?;
    let start = json!({"type": "message_start", "message": {
        "id": fresh_id("msg"), "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}});
    responder.event(Some("message_start"), &start.to_string())?;
    let mut index = 0;
    if let Some(text) = &turn.text {
        responder.event(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
                .to_string(),
        )?;
        for piece in pieces(text) {
            responder.event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})
                    .to_string(),
            )?;
        }
        if turn.hang {
            responder.hang(Duration::from_secs(120));
            return Ok(());
        }
        responder
            .event(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}).to_string())?;
        index += 1;
    }
    if turn.hang {
        responder.hang(Duration::from_secs(120));
        return Ok(());
    }
    for call in &turn.tool_calls {
        let id = fresh_id("toolu");
        responder.event(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": call.name, "input": {}}})
            .to_string(),
        )?;
        let arguments = call.arguments.to_string();
        let (head, tail) = halves(&arguments);
        for part in [head, tail] {
            responder.event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part}})
                .to_string(),
            )?;
        }
        responder
            .event(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}).to_string())?;
        index += 1;
    }
    let stop = if turn.tool_calls.is_empty() { "end_turn" } else { "tool_use" };
    responder.event(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens(turn)}})
        .to_string(),
    )?;
    responder.event(Some("message_stop"), &json!({"type": "message_stop"}).to_string())
}

fn anthropic_message(model: &str, turn: &Turn, input_tokens: u64) -> Value {
    let mut content = Vec::new();
    if let Some(text) = &turn.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in &turn.tool_calls {
        content.push(json!({"type": "tool_use", "id": fresh_id("toolu"), "name": call.name, "input": call.arguments}));
    }
    json!({
        "id": fresh_id("msg"), "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": if turn.tool_calls.is_empty() { "end_turn" } else { "tool_use" }, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens(turn)},
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn arguments_split_on_a_character_boundary() {
        for text in ["", "a", "ab", "{\"c\":\"ééé\"}", "日本語のテキスト", "😀😀😀"] {
            let (head, tail) = super::halves(text);
            assert_eq!(format!("{head}{tail}"), text);
        }
    }
}
