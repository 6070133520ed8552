//! One E2B sandbox: commands and files through envd (its client in `envd.rs`, a stream followed to its end in
//! `follow.rs`), and destruction through the control plane.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::runtime::Handle;

use super::api::Api;
use super::connect::StreamError;
use super::envd::{Envd, Event, OCTET_STREAM_UPLOAD, START, event};
use super::follow::follow;
use crate::error::{EngineError, Limit, Result, Space};
use crate::runtime::channel::ChannelReader;
use crate::runtime::remote::http::{self, Call, Failure, HttpError};
use crate::runtime::remote::provider::{
    CommandOptions, CommandOutput, Killer, RemoteProcess, Resources, Sandbox, User,
};
use crate::runtime::remote::shell::quote;

/// Chunks buffered per output stream of a started command.
const CHANNEL_CHUNKS: usize = 256;

/// A sandbox of E2B.
pub struct E2bSandbox {
    pub(crate) envd: Arc<Envd>,
    pub(crate) api: Api,
    pub(crate) handle: Handle,
    pub(crate) destroyed: AtomicBool,
}

impl E2bSandbox {
    /// The process `pid` as the runtime follows it: its output and end from the channels a following task fills,
    /// killed by SIGKILL (which sets `killed` for that task).
    fn process(
        &self,
        pid: u64,
        (stdout, stderr, exit): (
            tokio::sync::mpsc::Receiver<Bytes>,
            tokio::sync::mpsc::Receiver<Bytes>,
            std::sync::mpsc::Receiver<crate::runtime::Exit>,
        ),
        killed: tokio::sync::watch::Sender<bool>,
        handle: Value,
    ) -> RemoteProcess {
        RemoteProcess {
            stdout: Box::new(ChannelReader::new(stdout)),
            stderr: Box::new(ChannelReader::new(stderr)),
            exit,
            killer: Box::new(E2bKiller {
                envd: self.envd.clone(),
                handle: self.handle.clone(),
                pid,
                killed,
                done: false,
            }),
            handle,
        }
    }

    /// Runs a command to completion; its output together is bounded by the output limit (the command is killed
    /// and the run is an error past it), a silent stream is dead.
    async fn run_async(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        let (pid, mut stream) = self.envd.start(command, options).await?;
        let limits = self.envd.transport.limits();
        // The stream fell silent (a deadline) or broke (the connection).
        let fail = |detail: String, failure: Failure| {
            let text = format!("{} {START} failed: {detail} (pid {pid})", self.envd.service());
            EngineError::from(HttpError { text, failure })
        };
        let broke = |error: StreamError| fail(error.to_string(), Failure::Connection);
        let mut output = CommandOutput::default();
        loop {
            let message = tokio::time::timeout(limits.silence, stream.next())
                .await
                .map_err(|_| fail(self.envd.silent(), Failure::Deadline))?
                .map_err(broke)?;
            let Some(message) = message else {
                return Err(fail("the stream ended without the process end".to_owned(), Failure::Connection));
            };
            match event(&message) {
                Event::Stdout(bytes) => output.stdout.extend(bytes),
                Event::Stderr(bytes) => output.stderr.extend(bytes),
                Event::End(code) => {
                    output.exit_code = code.unwrap_or(-1);
                    // Read to the end-of-stream, which may carry an error.
                    tokio::time::timeout(limits.silence, stream.next())
                        .await
                        .map_err(|_| fail(self.envd.silent(), Failure::Deadline))?
                        .map_err(broke)?;
                    return Ok(output);
                }
                _ => {}
            }
            if (output.stdout.len() + output.stderr.len()) as u64 > limits.output {
                drop(stream);
                let _ = self.envd.kill_pid(pid).await;
                return Err(EngineError::limit(
                    Limit::Output,
                    format!(
                        "{}: the command's output exceeds the {} limit (it was killed)",
                        self.envd.service(),
                        http::size(limits.output)
                    ),
                ));
            }
        }
    }

    fn files_call<'a>(
        &'a self,
        method: reqwest::Method,
        url: &'a str,
        service: &'a str,
        deadline: Duration,
    ) -> Call<'a> {
        Call { service, method, url, shown: "/files", deadline }
    }

    async fn download_async(&self, path: &str, limit: u64) -> Result<Vec<u8>> {
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("path", path).finish();
        let url = format!("{}/files?{query}", self.envd.base);
        let service = self.envd.service();
        let transport = &self.envd.transport;
        let call = self.files_call(reqwest::Method::GET, &url, &service, transport.limits().transfer(limit));
        let response = transport.send_ok(&call, &|request| self.envd.headers(request, User::Default)).await?;
        transport.read(&call, response, limit).await.map_err(|error| match error.failure {
            Failure::TooLarge => limit_error(limit),
            _ => error.into(),
        })
    }

    async fn upload_async(&self, path: &str, bytes: Bytes) -> Result<()> {
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("path", path).finish();
        let url = format!("{}/files?{query}", self.envd.base);
        let service = self.envd.service();
        let transport = &self.envd.transport;
        let call =
            self.files_call(reqwest::Method::POST, &url, &service, transport.limits().transfer(bytes.len() as u64));
        let octet_stream = super::api::version_at_least(&self.envd.version, OCTET_STREAM_UPLOAD);
        let build = |request| {
            let request = self.envd.headers(request, User::Default);
            if octet_stream {
                return request.header(reqwest::header::CONTENT_TYPE, "application/octet-stream").body(bytes.clone());
            }
            let part = reqwest::multipart::Part::stream(bytes.clone()).file_name(path.to_owned());
            request.multipart(reqwest::multipart::Form::new().part("file", part))
        };
        match transport.send_ok(&call, &build).await {
            Ok(_) => Ok(()),
            Err(HttpError { text, failure: Failure::Status(507) }) => Err(EngineError::NoSpace {
                on: Space::Sandbox,
                text: format!("{text} (the sandbox is out of disk space)"),
            }),
            Err(error) => Err(error.into()),
        }
    }

    /// `future` stopped by the run's cancellation, naming the sandbox.
    async fn cancellable<T>(&self, what: &str, future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        tokio::select! {
            result = future => result,
            () = self.envd.transport.cancel().cancelled() => {
                Err(EngineError::cancelled(format!("{}: {what} was cancelled", self.envd.service())))
            }
        }
    }
}

/// `command` with its stdout also appended to the file `output` by `tee` when the image has it, the file marked
/// `<output>.done` once `tee` has written everything.
///
/// The shell stays the process envd follows, and ends only once `tee` has ended: envd ends a process's stream
/// when the process exits (a sandbox may end what it left running too), so a `tee` left behind by a runner that
/// replaced the shell lost the runner's last output, in the stream and in the file, whenever it was slower than
/// the runner's exit. The runner is the shell's child: a SIGKILL of the shell (a cancellation) still ends it,
/// through a watchdog reading a pipe only the shell holds; the shell's own messages go nowhere (the runner's
/// stderr is its own); its exit status is the runner's (a signal raised again); and a process the runner left
/// holding its stdout is waited for two seconds at most.
fn keeping_output(command: &str, output: &str) -> String {
    let o = quote(output);
    format!(
        "wb_runner() {{ {command}\n}}\n\
         if command -v tee >/dev/null 2>&1; then\n\
         exec > >(tee -a {o}; : > {o}.done); t=$!\n\
         exec 4>&2 2>/dev/null\n\
         (wb_runner) 2>&4 4>&- & r=$!\n\
         exec 4>&- 3> >(exec >/dev/null; read -r x; [ \"$x\" = ended ] || kill -KILL \"$r\")\n\
         wait \"$r\"; s=$?\n\
         echo ended >&3; exec 3>&- >&-\n\
         (sleep 2; kill \"$t\") & k=$!\n\
         wait \"$t\"; kill \"$k\"\n\
         [ \"$s\" -gt 128 ] && kill -$((s - 128)) $$\n\
         exit \"$s\"\n\
         fi\n\
         wb_runner"
    )
}

/// `E2B output exceeds the <N> transfer safety limit`.
pub fn limit_error(limit: u64) -> EngineError {
    const MIB: u64 = 1024 * 1024;
    let size = if limit >= MIB && limit.is_multiple_of(MIB) {
        format!("{} MiB", limit / MIB)
    } else {
        format!("{limit} byte")
    };
    EngineError::limit(Limit::Transfer, format!("E2B output exceeds the {size} transfer safety limit"))
}

impl Sandbox for E2bSandbox {
    fn id(&self) -> &str {
        &self.envd.id
    }

    fn extend_lease(&self, lease: Duration) -> Result<()> {
        self.handle.block_on(self.api.set_timeout(&self.envd.id, lease))
    }

    fn resources(&self) -> Result<Resources> {
        let info = self.handle.block_on(self.api.info(&self.envd.id))?;
        let number = |key: &str| info.get(key).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
        Ok(Resources { cpu: number("cpuCount"), memory_mib: number("memoryMB"), disk_mib: number("diskSizeMB") })
    }

    fn run(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        self.handle.block_on(self.cancellable("the command", async {
            match options.timeout {
                None => self.run_async(command, options).await,
                // The service enforces the deadline (Connect-Timeout-Ms); this one is a backstop.
                Some(timeout) => {
                    tokio::time::timeout(timeout + Duration::from_secs(5), self.run_async(command, options))
                        .await
                        .map_err(|_| {
                            EngineError::limit(
                                Limit::Time,
                                format!(
                                    "E2B sandbox {}: the command did not finish within {} s",
                                    self.envd.id,
                                    timeout.as_secs()
                                ),
                            )
                        })?
                }
            }
        }))
    }

    fn start(&self, command: &str, options: &CommandOptions) -> Result<RemoteProcess> {
        // envd keeps no output of a process nobody follows: the runner's stdout is also appended to a file, so a
        // supervisor that takes the run over ([`Sandbox::reattach`]) reads it from the first byte.
        let output = format!("/tmp/workbench-output-{}", wb_outcomes::random_hex(16));
        let command = if options.reattachable { keeping_output(command, &output) } else { command.to_owned() };
        let (pid, stream) = self.handle.block_on(self.envd.start(&command, options))?;
        let (stdout_tx, stdout_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (stderr_tx, stderr_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (exit_tx, exit_rx) = std::sync::mpsc::channel::<crate::runtime::Exit>();
        let (killed_tx, killed_rx) = tokio::sync::watch::channel(false);
        let limits = (self.envd.transport.limits().silence, self.envd.silent());
        self.handle.spawn(async move {
            let code = follow(stream, Some((&stdout_tx, &stderr_tx)), killed_rx, limits).await;
            drop(stdout_tx);
            drop(stderr_tx);
            let _ = exit_tx.send(code);
        });
        let handle = if options.reattachable { json!({"pid": pid, "output": output}) } else { Value::Null };
        Ok(self.process(pid, (stdout_rx, stderr_rx, exit_rx), killed_tx, handle))
    }

    fn reattach(&self, handle: &Value) -> Result<RemoteProcess> {
        let pid = handle.get("pid").and_then(Value::as_u64);
        let output = handle.get("output").and_then(Value::as_str).filter(|o| o.starts_with("/tmp/workbench-output-"));
        let (Some(pid), Some(output)) = (pid, output) else {
            return Err(EngineError::message(format!("Not an E2B runner process: {handle}")));
        };
        let o = quote(output);
        let present = self.run(&format!("test -f {o}"), &CommandOptions::default())?;
        if !present.success() {
            return Err(EngineError::message(format!(
                "The runner's output was not kept in sandbox {} (the image has no tee)",
                self.envd.id
            )));
        }
        // The runner's end from envd when it still runs; once it has ended nobody can know its exit status.
        let connected = self.handle.block_on(self.envd.connect(pid)).ok();
        // Its output from the file, from the first byte, until the writer (tee) has ended and all is read: by
        // size, so no byte is read twice or missed whatever the timing.
        let tail = format!(
            "sent=0; while :; do finished=0; [ -e {o}.done ] && finished=1; size=$(stat -c %s {o}); \
             if [ \"$size\" -gt \"$sent\" ]; then tail -c +$((sent + 1)) {o} | head -c $((size - sent)); sent=$size; \
             elif [ \"$finished\" = 1 ]; then exit 0; fi; sleep 0.2; done"
        );
        let (_, output_stream) = self.handle.block_on(self.envd.start(&tail, &CommandOptions::default()))?;
        let (stdout_tx, stdout_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (stderr_tx, stderr_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (exit_tx, exit_rx) = std::sync::mpsc::channel::<crate::runtime::Exit>();
        let (killed_tx, killed_rx) = tokio::sync::watch::channel(false);
        let limits = (self.envd.transport.limits().silence, self.envd.silent());
        let envd = self.envd.clone();
        let marker = format!(": > {o}.done");
        self.handle.spawn(async move {
            let code = super::follow::reattached(
                (&envd, &marker),
                output_stream,
                connected,
                (&stdout_tx, &stderr_tx),
                killed_rx,
                limits,
            )
            .await;
            drop(stdout_tx);
            drop(stderr_tx);
            let _ = exit_tx.send(code);
        });
        Ok(self.process(pid, (stdout_rx, stderr_rx, exit_rx), killed_tx, handle.clone()))
    }

    fn upload(&self, path: &str, bytes: &[u8]) -> Result<()> {
        self.handle.block_on(self.upload_async(path, Bytes::copy_from_slice(bytes)))
    }

    fn download(&self, path: &str, limit: u64) -> Result<Vec<u8>> {
        self.handle.block_on(self.download_async(path, limit))
    }

    fn destroy(&self) -> Result<()> {
        if self.destroyed.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.handle.block_on(self.api.kill(&self.envd.id))?;
        self.destroyed.store(true, Ordering::SeqCst);
        Ok(())
    }
}

/// Sends SIGKILL to a started process; its stream is abandoned if it does not end soon after.
struct E2bKiller {
    envd: Arc<Envd>,
    handle: Handle,
    pid: u64,
    killed: tokio::sync::watch::Sender<bool>,
    done: bool,
}

impl Killer for E2bKiller {
    fn kill(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let _ = self.killed.send(true);
        let envd = self.envd.clone();
        let pid = self.pid;
        let _ = self
            .handle
            .block_on(async move { tokio::time::timeout(Duration::from_secs(10), envd.kill_pid(pid)).await });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::{BufRead, Read};
    use std::os::unix::process::ExitStatusExt;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Stdio};
    use std::time::Instant;

    #[test]
    fn the_limit_error_names_the_limit() {
        assert_eq!(limit_error(512 * 1024 * 1024).to_string(), "E2B output exceeds the 512 MiB transfer safety limit");
    }

    /// `runner` started by bash as envd starts it, its output kept in `dir`, with a `tee` still writing well after
    /// the runner has exited (it starts 300 ms late).
    fn kept(dir: &Path, runner: &str) -> (Child, PathBuf) {
        let output = dir.join("workbench-output");
        let script = format!(
            "tee() {{ sleep 0.3; command tee \"$@\"; }}\n{}",
            keeping_output(runner, &output.display().to_string())
        );
        let child = std::process::Command::new("bash")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        (child, output)
    }

    fn text(stream: Option<impl Read>) -> String {
        let mut text = String::new();
        stream.unwrap().read_to_string(&mut text).unwrap();
        text
    }

    /// envd ends a process's stream when the process exits: by then the runner's last output is passed on and
    /// kept whole (before, the runner was the process, and its `tee` could still be writing, or be killed).
    #[test]
    fn the_process_ends_once_the_runner_s_output_is_passed_on_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (mut child, output) = kept(dir.path(), "printf 'one\\ntwo\\n'; echo err >&2; exit 3");
        assert_eq!(child.wait().unwrap().code(), Some(3), "the runner's exit status");
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "one\ntwo\n");
        assert!(dir.path().join("workbench-output.done").exists(), "the file is marked complete");
        assert_eq!(text(child.stdout.take()), "one\ntwo\n");
        assert_eq!(text(child.stderr.take()), "err\n", "the runner's stderr, and nothing of the shell's");

        // A runner ended by a signal ends the process by that signal.
        let (mut child, _) = kept(dir.path(), "kill -KILL $BASHPID");
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        assert_eq!(text(child.stderr.take()), "", "no job notice of the shell's");
    }

    /// Killing the process (a cancellation) still ends the runner; a process the runner left holding its stdout
    /// delays the end two seconds at most.
    #[test]
    fn killing_the_process_ends_the_runner_and_a_leftover_writer_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let (mut child, _) = kept(dir.path(), "echo $BASHPID; exec sleep 30");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let runner = line.trim().to_owned();
        child.kill().unwrap();
        let _ = child.wait();
        // Gone, or a zombie nobody has reaped yet.
        let ended = || {
            std::fs::read_to_string(format!("/proc/{runner}/stat"))
                .map_or(true, |stat| stat.rsplit(") ").next().is_some_and(|rest| rest.starts_with('Z')))
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ended() {
            assert!(Instant::now() < deadline, "the runner {runner} outlived the killed process");
            std::thread::sleep(Duration::from_millis(20));
        }

        let dir = tempfile::tempdir().unwrap();
        let begun = Instant::now();
        let (mut child, output) = kept(dir.path(), "(sleep 30 &); echo left");
        assert_eq!(child.wait().unwrap().code(), Some(0));
        assert!(begun.elapsed() < Duration::from_secs(10), "{:?}", begun.elapsed());
        assert_eq!(std::fs::read_to_string(output).unwrap(), "left\n");
    }
}
