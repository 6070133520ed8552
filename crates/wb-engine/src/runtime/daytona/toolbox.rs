//! One Daytona sandbox through its toolbox (`{toolboxProxyUrl}/{sandboxId}`, the same Bearer header):
//! commands to completion with `process/execute` (one merged output field, so the command is wrapped as
//! `{ … } 2>&1`), streamed commands in a session of their own (`wb-<random>`, exec with `runAsync`, then a
//! task polls the command's status and logs and forwards only the new bytes of stdout and stderr), files
//! through `files/bulk-upload` and `files/download`.
//!
//! Environment values never appear in command text (the service records session commands and echoes them
//! back): they go into a file uploaded into a fresh `0700` directory, which the command sources with
//! `set -a` and removes before anything else runs; a trap and the client remove it on every other path.
//! `User::Root` runs through `sudo -n` only when the toolbox user is not already root.

use crate::runtime::channel::ChannelReader;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use tokio::sync::Notify;

use super::Shared;
use super::api::{CallError, SandboxDto};
use super::logs::{LogsReply, parse_logs};
use crate::error::{EngineError, Limit, Result};
use crate::runtime::remote::http;
use crate::runtime::remote::provider::{
    CommandOptions, CommandOutput, Killer, RemoteProcess, Resources, Sandbox, TRANSFER_LIMIT, User,
};

const PLANE: &str = "Daytona toolbox";
/// The `process/execute` timeout when the caller gives none (the reference's value).
const DEFAULT_EXECUTE_TIMEOUT: Duration = Duration::from_secs(3600);
/// Consecutive failed polls of a started command before its end is declared unknowable.
const TOLERATED_POLL_FAILURES: u32 = 5;
/// Chunks buffered per stream before the poller waits for the reader.
const STREAM_CAPACITY: usize = 256;

/// A started Daytona sandbox.
pub(crate) struct DaytonaSandbox {
    shared: Arc<Shared>,
    id: String,
    /// `{toolboxProxyUrl}/{id}`, without a trailing slash.
    toolbox: String,
    resources: Resources,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecuteReply {
    exit_code: Option<serde_json::Value>,
    #[serde(default)]
    result: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecReply {
    cmd_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommandReply {
    #[serde(default)]
    exit_code: Option<i64>,
}

/// Where a command's environment file lives: a fresh `0700` directory and the file in it.
struct EnvFile {
    dir: String,
    file: String,
}

impl DaytonaSandbox {
    pub(crate) fn new(shared: Arc<Shared>, dto: &SandboxDto, toolbox_base: &str) -> DaytonaSandbox {
        let toolbox = format!("{}/{}", toolbox_base.trim_end_matches('/'), super::api::segment(&dto.id));
        let gib_to_mib =
            |gib: Option<f64>| gib.filter(|g| g.is_finite() && *g >= 0.0).map(|g| (g * 1024.0).round() as u64);
        let resources = Resources {
            cpu: dto.cpu.filter(|c| c.is_finite() && *c >= 0.0).map(|c| c.round() as u64),
            memory_mib: gib_to_mib(dto.memory),
            disk_mib: gib_to_mib(dto.disk),
        };
        DaytonaSandbox { shared, id: dto.id.clone(), toolbox, resources }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.toolbox)
    }

    fn timeout(&self) -> Duration {
        self.shared.api.transport.request_timeout
    }

    /// `POST process/execute`: (exit code, merged output).
    async fn execute(&self, command: &str, cwd: Option<&str>, timeout: Duration) -> Result<(i64, String)> {
        let shown = "process/execute";
        let seconds = timeout.as_secs().max(1);
        let mut body = serde_json::json!({ "command": command, "timeout": seconds });
        if let Some(cwd) = cwd {
            body["cwd"] = serde_json::Value::from(cwd);
        }
        let transport = &self.shared.api.transport;
        // The HTTP call outlives the command's own limit a little, so the service's answer arrives first.
        let http_timeout = Duration::from_secs(seconds) + self.timeout();
        let response =
            transport.send_ok(PLANE, Method::POST, &self.url(shown), shown, http_timeout, &|r| r.json(&body)).await?;
        // The merged output comes back in one JSON reply: bounded by the output limit (and some room for JSON).
        let limit = transport.http().limits().output + 64 * 1024;
        let bytes = transport.bytes(PLANE, &Method::POST, shown, response, limit).await.map_err(|error| match error
            .failure
        {
            http::Failure::TooLarge => EngineError::limit(
                Limit::Output,
                format!(
                    "{PLANE} POST {shown}: the command's output exceeds the {} limit",
                    http::size(transport.http().limits().output)
                ),
            ),
            _ => error.into(),
        })?;
        let reply: ExecuteReply = serde_json::from_slice(&bytes).map_err(|_| unexpected_text())?;
        let code = reply.exit_code.as_ref().and_then(exit_code_of).ok_or_else(unexpected_text)?;
        Ok((code, reply.result.unwrap_or_default()))
    }

    /// `POST files/bulk-upload` with one file.
    async fn put_file(&self, path: &str, bytes: &[u8]) -> Result<()> {
        if bytes.len() as u64 > TRANSFER_LIMIT {
            return Err(EngineError::limit(
                Limit::Transfer,
                format!("Daytona input exceeds the {} transfer safety limit", limit_text(TRANSFER_LIMIT)),
            ));
        }
        let shown = "files/bulk-upload";
        let name = path.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("file").to_owned();
        let bytes = bytes::Bytes::copy_from_slice(bytes);
        let build = |request: reqwest::RequestBuilder| {
            let part = reqwest::multipart::Part::stream(bytes.clone())
                .file_name(name.clone())
                .mime_str("application/octet-stream");
            let form = reqwest::multipart::Form::new().text("files[0].path", path.to_owned());
            let form = match part {
                Ok(part) => form.part("files[0].file", part),
                Err(_) => form,
            };
            request.multipart(form)
        };
        let transport = &self.shared.api.transport;
        let timeout = self.timeout() + transfer_allowance(bytes.len() as u64);
        transport.send_ok(PLANE, Method::POST, &self.url(shown), shown, timeout, &build).await?;
        Ok(())
    }

    /// `GET files/download?path=`, streamed, failing as soon as more than `limit` bytes arrive.
    async fn get_file(&self, path: &str, limit: u64) -> Result<Vec<u8>> {
        let shown = "files/download";
        let transport = &self.shared.api.transport;
        let too_big = || {
            EngineError::limit(
                Limit::Transfer,
                format!("Daytona output exceeds the {} transfer safety limit", limit_text(limit)),
            )
        };
        let timeout = self.timeout() + transfer_allowance(limit.min(TRANSFER_LIMIT));
        let url = super::api::with_query(&self.url(shown), &[("path", path)]);
        let response = transport.send_ok(PLANE, Method::GET, &url, shown, timeout, &|r| r).await?;
        let call = http::Call { service: PLANE, method: Method::GET, url: &url, shown, deadline: timeout };
        transport.http().read(&call, response, limit).await.map_err(|error| match error.failure {
            http::Failure::TooLarge => too_big(),
            _ => error.into(),
        })
    }

    /// Creates the environment file for `env` (nothing when empty): `mkdir -m 700` a fresh directory, then
    /// upload the `export` lines into it. The directory is removed again when the upload fails.
    async fn env_file(&self, env: &BTreeMap<String, String>) -> Result<Option<EnvFile>> {
        if env.is_empty() {
            return Ok(None);
        }
        let mut text = String::new();
        for (name, value) in env {
            if !is_shell_name(name) {
                return Err(EngineError::message(format!(
                    "Cannot pass the environment variable {name:?} into a Daytona sandbox: it is not a shell variable name"
                )));
            }
            text.push_str(&format!("export {name}={}\n", quote(value)));
        }
        let dir = format!("/tmp/wb-env-{}", random_hex());
        let file = format!("{dir}/env");
        let (code, output) = self.execute(&format!("mkdir -m 700 {}", quote(&dir)), None, self.timeout()).await?;
        if code != 0 {
            return Err(EngineError::message(format!(
                "Cannot create the environment directory in Daytona sandbox {}: {}",
                self.id,
                output.trim()
            )));
        }
        if let Err(error) = self.put_file(&file, text.as_bytes()).await {
            self.remove_env(&dir).await;
            return Err(error);
        }
        Ok(Some(EnvFile { dir, file }))
    }

    /// Best effort: removes an environment directory (its command may never have started).
    async fn remove_env(&self, dir: &str) {
        let _ = self.execute(&format!("rm -rf {}", quote(dir)), None, self.timeout()).await;
    }

    async fn run_async(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        let env = self.env_file(&options.env).await?;
        let script = format!("{{\n{}\n}} 2>&1", script(command, None, env.as_ref(), options.user));
        let timeout = options.timeout.unwrap_or(DEFAULT_EXECUTE_TIMEOUT);
        let result = self.execute(&script, options.cwd.as_deref(), timeout).await;
        // A command that failed may never have started (a missing cwd): its file may still be there.
        let clean = !matches!(result, Ok((0, _)));
        if let (true, Some(env)) = (clean, &env) {
            self.remove_env(&env.dir).await;
        }
        let (exit_code, output) = result?;
        Ok(CommandOutput { exit_code, stdout: output.into_bytes(), stderr: Vec::new() })
    }

    async fn start_async(&self, command: &str, options: &CommandOptions) -> Result<RemoteProcess> {
        let env = self.env_file(&options.env).await?;
        let session = format!("wb-{}", random_hex());
        let started = self.open_session(&session, command, options, env.as_ref()).await;
        let cmd_id = match started {
            Ok(cmd_id) => cmd_id,
            Err(error) => {
                self.delete_session(&session).await;
                if let Some(env) = &env {
                    self.remove_env(&env.dir).await;
                }
                return Err(error);
            }
        };
        Ok(self.follow(session, cmd_id, env.map(|e| e.dir)))
    }

    /// Follows command `cmd_id` of `session` from its first byte of output to its end (a started command, or
    /// one started by a process that died: [`Sandbox::reattach`]).
    fn follow(&self, session: String, cmd_id: String, env_dir: Option<String>) -> RemoteProcess {
        let control = Arc::new(Control { killed: AtomicBool::new(false), wake: Notify::new() });
        let (out_tx, out_rx) = tokio::sync::mpsc::channel(STREAM_CAPACITY);
        let (err_tx, err_rx) = tokio::sync::mpsc::channel(STREAM_CAPACITY);
        let (exit_tx, exit_rx) = mpsc::channel();
        let handle = serde_json::json!({"session": session, "command": cmd_id, "env_dir": env_dir});
        let poller = Poller {
            sandbox: self.clone_handle(),
            session: session.clone(),
            cmd_id,
            control: control.clone(),
            env_dir,
        };
        self.shared.handle.spawn(poller.run(out_tx, err_tx, exit_tx));
        RemoteProcess {
            stdout: Box::new(ChannelReader::new(out_rx)),
            stderr: Box::new(ChannelReader::new(err_rx)),
            exit: exit_rx,
            killer: Box::new(SessionKiller { sandbox: self.clone_handle(), session, control, done: false }),
            handle,
        }
    }

    /// `POST process/session` then `POST process/session/{sid}/exec`: the command's id.
    async fn open_session(
        &self,
        session: &str,
        command: &str,
        options: &CommandOptions,
        env: Option<&EnvFile>,
    ) -> Result<String> {
        let transport = &self.shared.api.transport;
        let shown = "process/session";
        let body = serde_json::json!({ "sessionId": session });
        transport.send_ok(PLANE, Method::POST, &self.url(shown), shown, self.timeout(), &|r| r.json(&body)).await?;
        let shown = format!("process/session/{session}/exec");
        let script = format!("(\n{}\n)", script(command, options.cwd.as_deref(), env, options.user));
        let body = serde_json::json!({ "command": script, "runAsync": true, "suppressInputEcho": true });
        let response = transport
            .send_ok(PLANE, Method::POST, &self.url(&shown), &shown, self.timeout(), &|r| r.json(&body))
            .await?;
        let reply: ExecReply = transport.json(PLANE, &Method::POST, &shown, response).await?;
        Ok(reply.cmd_id)
    }

    /// Best effort: `DELETE process/session/{sid}` (ends its commands).
    async fn delete_session(&self, session: &str) {
        let shown = format!("process/session/{session}");
        let transport = self.shared.api.transport.for_cleanup();
        let url = self.url(&shown);
        let call =
            http::Call { service: PLANE, method: Method::DELETE, url: &url, shown: &shown, deadline: self.timeout() };
        let _ = transport.send(&call, &|r| r).await;
    }

    async fn command_status(&self, session: &str, cmd_id: &str) -> std::result::Result<Option<i64>, CallError> {
        let transport = &self.shared.api.transport;
        let shown = format!("process/session/{session}/command/{cmd_id}");
        let response = transport.send_ok(PLANE, Method::GET, &self.url(&shown), &shown, self.timeout(), &|r| r).await?;
        let reply: CommandReply = transport.json(PLANE, &Method::GET, &shown, response).await?;
        Ok(reply.exit_code)
    }

    async fn command_logs(&self, session: &str, cmd_id: &str) -> std::result::Result<LogsReply, CallError> {
        let transport = &self.shared.api.transport;
        let shown = format!("process/session/{session}/command/{cmd_id}/logs");
        let response = transport.send_ok(PLANE, Method::GET, &self.url(&shown), &shown, self.timeout(), &|r| r).await?;
        let content_type =
            response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let limit = transport.http().limits().logs;
        let body = transport.bytes(PLANE, &Method::GET, &shown, response, limit).await?;
        parse_logs(content_type.as_deref(), &body).ok_or_else(|| {
            let call =
                http::Call { service: PLANE, method: Method::GET, url: "", shown: &shown, deadline: self.timeout() };
            transport.http().error(
                &call,
                "the logs reply is JSON without the expected fields",
                http::Failure::Connection,
            )
        })
    }

    fn clone_handle(&self) -> DaytonaSandbox {
        DaytonaSandbox {
            shared: self.shared.clone(),
            id: self.id.clone(),
            toolbox: self.toolbox.clone(),
            resources: self.resources,
        }
    }
}

impl Sandbox for DaytonaSandbox {
    fn id(&self) -> &str {
        &self.id
    }

    fn resources(&self) -> Result<Resources> {
        Ok(self.resources)
    }

    fn run(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        self.shared.handle.block_on(self.run_async(command, options))
    }

    fn start(&self, command: &str, options: &CommandOptions) -> Result<RemoteProcess> {
        self.shared.handle.block_on(self.start_async(command, options))
    }

    fn reattach(&self, handle: &serde_json::Value) -> Result<RemoteProcess> {
        let text = |key: &str| handle.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
        let (Some(session), Some(command)) = (text("session"), text("command")) else {
            return Err(EngineError::message(format!("Not a Daytona session command: {handle}")));
        };
        Ok(self.follow(session, command, text("env_dir")))
    }

    fn upload(&self, path: &str, bytes: &[u8]) -> Result<()> {
        self.shared.handle.block_on(self.put_file(path, bytes))
    }

    fn download(&self, path: &str, limit: u64) -> Result<Vec<u8>> {
        self.shared.handle.block_on(self.get_file(path, limit))
    }

    fn destroy(&self) -> Result<()> {
        Ok(self.shared.handle.block_on(self.shared.api.delete(&self.id))?)
    }

    fn extend_lease(&self, lease: std::time::Duration) -> Result<()> {
        let minutes = lease.as_secs().div_ceil(60).max(1);
        Ok(self.shared.handle.block_on(self.shared.api.set_ttl(&self.id, minutes))?)
    }
}

/// What the poller and the killer share.
struct Control {
    killed: AtomicBool,
    wake: Notify,
}

/// Follows one started command until it ends, is killed, or cannot be followed.
struct Poller {
    sandbox: DaytonaSandbox,
    session: String,
    cmd_id: String,
    control: Arc<Control>,
    env_dir: Option<String>,
}

type Chunks = tokio::sync::mpsc::Sender<Vec<u8>>;

impl Poller {
    async fn run(self, stdout: Chunks, stderr: Chunks, exit: mpsc::Sender<crate::runtime::Exit>) {
        let timing = &self.sandbox.shared.timing;
        let (mut sent_out, mut sent_err) = (0usize, 0usize);
        let mut interval = timing.stream_first;
        let mut failures = 0u32;
        let code = loop {
            if self.killed() {
                break Ok(143);
            }
            let status = self.sandbox.command_status(&self.session, &self.cmd_id).await;
            if self.killed() {
                break Ok(143);
            }
            let logs = self.sandbox.command_logs(&self.session, &self.cmd_id).await;
            if self.killed() {
                break Ok(143);
            }
            let (status, logs) = match (status, logs) {
                (Ok(status), Ok(logs)) => (status, logs),
                (_, Err(error)) if error.failure == http::Failure::TooLarge => break Err(error.text),
                _ => {
                    failures += 1;
                    if failures >= TOLERATED_POLL_FAILURES {
                        break Err(format!(
                            "the Daytona toolbox did not answer about the runner {TOLERATED_POLL_FAILURES} times in a row"
                        ));
                    }
                    self.pause(interval).await;
                    interval = (interval * 2).min(timing.stream_max);
                    continue;
                }
            };
            failures = 0;
            let fresh_out = forward(&stdout, &logs.stdout, &mut sent_out).await;
            let fresh_err = forward(&stderr, &logs.stderr, &mut sent_err).await;
            if let Some(code) = status {
                break Ok(code);
            }
            interval = if fresh_out || fresh_err { timing.stream_first } else { (interval * 2).min(timing.stream_max) };
            self.pause(interval).await;
        };
        drop(stdout);
        drop(stderr);
        self.sandbox.delete_session(&self.session).await;
        if let (true, Some(dir)) = (code != Ok(0), &self.env_dir) {
            self.sandbox.remove_env(dir).await;
        }
        let _ = exit.send(match code {
            Ok(code) => crate::runtime::Exit::code(Some(code)),
            Err(cause) => crate::runtime::Exit::unknown(cause),
        });
    }

    fn killed(&self) -> bool {
        self.control.killed.load(Ordering::SeqCst)
    }

    async fn pause(&self, interval: Duration) {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = self.control.wake.notified() => {}
        }
    }
}

/// Sends the part of `text` beyond `sent` bytes; true when there was any.
async fn forward(channel: &Chunks, bytes: &[u8], sent: &mut usize) -> bool {
    if bytes.len() < *sent {
        // The service restarted its log (should not happen): follow it from here.
        *sent = bytes.len();
        return false;
    }
    if bytes.len() == *sent {
        return false;
    }
    let fresh = bytes[*sent..].to_vec();
    *sent = bytes.len();
    // A reader that went away only stops the forwarding, not the following of the exit.
    let _ = channel.send(fresh).await;
    true
}

/// Ends a started command by deleting its session; the exit then reads 143.
struct SessionKiller {
    sandbox: DaytonaSandbox,
    session: String,
    control: Arc<Control>,
    done: bool,
}

impl Killer for SessionKiller {
    fn kill(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        self.control.killed.store(true, Ordering::SeqCst);
        self.control.wake.notify_one();
        let sandbox = self.sandbox.clone_handle();
        let session = self.session.clone();
        let wait = sandbox.timeout() + Duration::from_secs(1);
        let (done_tx, done_rx) = mpsc::channel();
        self.sandbox.shared.handle.spawn(async move {
            sandbox.delete_session(&session).await;
            let _ = done_tx.send(());
        });
        // Works from any thread: the deletion runs on the runtime, this thread only waits for it.
        let _ = done_rx.recv_timeout(wait);
    }
}

/// The shell text around a command: the environment sourced (and its file removed) first, then `cd`, then
/// the command, as root through `sudo -n` unless the toolbox user already is root. The outer shell's trap
/// removes the environment directory on every other path (sudo refused, the command never started).
fn script(command: &str, cd: Option<&str>, env: Option<&EnvFile>, user: User) -> String {
    let mut inner = String::new();
    if let Some(env) = env {
        inner.push_str(&format!("set -a; . {}; rm -rf {}; set +a\n", quote(&env.file), quote(&env.dir)));
    }
    if let Some(cd) = cd {
        inner.push_str(&format!("cd {} || exit 1\n", quote(cd)));
    }
    inner.push_str(command);
    let body = match user {
        User::Default => inner,
        User::Root => {
            let inner = quote(&inner);
            format!("if [ \"$(id -u)\" = 0 ]; then sh -c {inner}; else sudo -n sh -c {inner}; fi")
        }
    };
    match env {
        Some(env) => format!("trap {} EXIT\n{body}", quote(&format!("rm -rf {}", quote(&env.dir)))),
        None => body,
    }
}

fn exit_code_of(value: &serde_json::Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && f.is_finite()).map(|f| f as i64))
}

fn unexpected_text() -> EngineError {
    EngineError::reply(
        "Daytona toolbox process/execute returned an unexpected response: expected JSON with a numeric exitCode",
    )
}

/// How long a transfer of `bytes` may take beyond the request timeout (at least 1 MiB/s).
fn transfer_allowance(bytes: u64) -> Duration {
    Duration::from_secs(bytes / (1024 * 1024))
}

/// `512 MiB`, `4 KiB`, `1000 bytes`.
pub(crate) fn limit_text(limit: u64) -> String {
    http::size(limit)
}

fn is_shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

pub(crate) use crate::runtime::remote::shell::quote;

/// 32 random hex digits.
pub(crate) fn random_hex() -> String {
    wb_outcomes::random_hex(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_source_the_environment_first_and_escalate_only_when_needed() {
        let env = EnvFile { dir: "/tmp/wb-env-x".into(), file: "/tmp/wb-env-x/env".into() };
        let text = script("echo hi", Some("/work space"), Some(&env), User::Root);
        let trap = format!("trap {} EXIT\n", quote(&format!("rm -rf {}", quote("/tmp/wb-env-x"))));
        assert!(text.starts_with(&trap), "{text}");
        assert!(text.contains("if [ \"$(id -u)\" = 0 ]; then sh -c "), "{text}");
        assert!(text.contains("else sudo -n sh -c "), "{text}");
        assert_eq!(script("echo hi", None, None, User::Default), "echo hi");
        assert_eq!(limit_text(TRANSFER_LIMIT), "512 MiB");
        assert_eq!(limit_text(1000), "1000 bytes");
        assert!(is_shell_name("A_1") && !is_shell_name("1A") && !is_shell_name("A-B"));
        assert_ne!(random_hex(), random_hex());
    }
}
