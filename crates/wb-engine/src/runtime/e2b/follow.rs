//! Following an envd process stream to its end (a started command, or one connected to again): its output
//! forwarded, how it ended, a silent stream taken for dead, a killed one given up after a grace period.

use std::time::Duration;

use bytes::Bytes;

use super::connect::ServerStream;
use super::envd::{Envd, Event, KILL_GRACE, event};
use crate::runtime::remote::provider::CommandOptions;

/// How long a reattached runner's output file may go on after the runner ended before it is taken as complete.
const WRITER_GRACE: Duration = Duration::from_secs(2);

/// A runner followed again: its output read back from its file by the follower command `output` until the
/// file is marked done, and its end from the `Connect` stream (`None`: the runner was already gone). Should
/// the file never be marked (its writer killed with the runner), `marker` marks it once the runner has ended
/// and a grace period passed, and the follower reads what the file holds, then ends.
pub(super) async fn reattached(
    (envd, marker): (&Envd, &str),
    output: ServerStream,
    connected: Option<ServerStream>,
    channels: (&tokio::sync::mpsc::Sender<Bytes>, &tokio::sync::mpsc::Sender<Bytes>),
    killed_rx: tokio::sync::watch::Receiver<bool>,
    limits: (Duration, String),
) -> crate::runtime::Exit {
    let output = follow(output, Some(channels), killed_rx.clone(), limits.clone());
    tokio::pin!(output);
    let end = async {
        match connected {
            Some(stream) => follow(stream, None, killed_rx.clone(), limits.clone()).await,
            None => crate::runtime::Exit::unknown("the runner ended while no supervisor followed it"),
        }
    };
    tokio::pin!(end);
    tokio::select! {
        _ = &mut output => end.await,
        code = &mut end => {
            if tokio::time::timeout(WRITER_GRACE, &mut output).await.is_err() {
                if let Ok((_, stream)) = envd.start(marker, &CommandOptions::default()).await {
                    follow(stream, None, killed_rx.clone(), limits.clone()).await;
                }
                output.await;
            }
            code
        }
    }
}

/// Follows a process stream to its end: its output into `output` (stdout, stderr; `None`: dropped), and how it
/// ended. `killed` set: given up after a grace period. `(silence, why)`: a stream silent that long is dead.
pub(super) async fn follow(
    mut stream: ServerStream,
    output: Option<(&tokio::sync::mpsc::Sender<Bytes>, &tokio::sync::mpsc::Sender<Bytes>)>,
    mut killed_rx: tokio::sync::watch::Receiver<bool>,
    (silence, silent): (Duration, String),
) -> crate::runtime::Exit {
    let killed = async {
        while !*killed_rx.borrow_and_update() {
            if killed_rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        tokio::time::sleep(KILL_GRACE).await;
    };
    tokio::pin!(killed);
    loop {
        let message = tokio::select! {
            message = tokio::time::timeout(silence, stream.next()) => message,
            () = &mut killed => return crate::runtime::Exit::code(None),
        };
        // A half-open connection delivers nothing, not even the keepalives asked for: it is dead.
        let Ok(message) = message else { return crate::runtime::Exit::unknown(silent) };
        match message {
            Ok(Some(message)) => match (event(&message), output) {
                (Event::Stdout(bytes), Some((stdout, _))) => {
                    let _ = stdout.send(Bytes::from(bytes)).await;
                }
                (Event::Stderr(bytes), Some((_, stderr))) => {
                    let _ = stderr.send(Bytes::from(bytes)).await;
                }
                (Event::End(code), _) => return crate::runtime::Exit::code(code),
                _ => {}
            },
            Ok(None) => {
                return crate::runtime::Exit::unknown("the sandbox's process stream ended without an exit status");
            }
            Err(error) => {
                return crate::runtime::Exit::unknown(format!("the sandbox's process stream broke: {error}"));
            }
        }
    }
}
