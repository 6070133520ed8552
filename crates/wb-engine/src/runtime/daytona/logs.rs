//! A started command's logs as Daytona's daemon answers them: JSON with stdout and stderr apart, or plain text.

use serde::Deserialize;

/// A command's log so far.
#[derive(Default, Debug, PartialEq)]
pub(crate) struct LogsReply {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

#[derive(Deserialize)]
struct LogsJson {
    #[serde(default)]
    stdout: Option<String>,
    #[serde(default)]
    stderr: Option<String>,
}

/// What the daemon writes before each chunk of its log file (`libs/common-go/pkg/log/read_multiplex_log.go`).
const STDOUT_PREFIX: &[u8] = &[1, 1, 1];
const STDERR_PREFIX: &[u8] = &[2, 2, 2];

/// A logs reply in either format the daemon answers (`apps/daemon/pkg/toolbox/process/session/log.go`,
/// v0.190.0): JSON `{output, stdout, stderr}` (`application/json`) to a client whose SDK version is 0.167.0
/// or later, and otherwise the log as plain text (`text/plain`), stdout and stderr combined with their
/// prefixes removed (or, to a client asking `X-Daytona-Split-Output` without a version, kept: split here).
pub(crate) fn parse_logs(content_type: Option<&str>, body: &[u8]) -> Option<LogsReply> {
    let media = content_type.and_then(|c| c.split(';').next()).map(|m| m.trim().to_ascii_lowercase());
    if media.as_deref() == Some("application/json") {
        let json: LogsJson = serde_json::from_slice(body).ok()?;
        return Some(LogsReply {
            stdout: json.stdout.unwrap_or_default().into_bytes(),
            stderr: json.stderr.unwrap_or_default().into_bytes(),
        });
    }
    Some(demux(body))
}

/// Splits a log by its stream prefixes; text before any prefix is stdout.
fn demux(body: &[u8]) -> LogsReply {
    let mut reply = LogsReply::default();
    let mut to_stderr = false;
    let mut rest = body;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(STDOUT_PREFIX) {
            (to_stderr, rest) = (false, after);
            continue;
        }
        if let Some(after) = rest.strip_prefix(STDERR_PREFIX) {
            (to_stderr, rest) = (true, after);
            continue;
        }
        let next = (1..rest.len())
            .find(|&i| rest[i..].starts_with(STDOUT_PREFIX) || rest[i..].starts_with(STDERR_PREFIX))
            .unwrap_or(rest.len());
        let target = if to_stderr { &mut reply.stderr } else { &mut reply.stdout };
        target.extend_from_slice(&rest[..next]);
        rest = &rest[next..];
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_read_in_both_formats_the_daemon_answers() {
        let json = br#"{"output":"x","stdout":"out\n","stderr":"err\n"}"#;
        let parsed = parse_logs(Some("application/json; charset=utf-8"), json);
        assert_eq!(parsed, Some(LogsReply { stdout: b"out\n".to_vec(), stderr: b"err\n".to_vec() }));
        let plain = parse_logs(Some("text/plain; charset=utf-8"), b"{\"stdout\":1}\nerr\n");
        assert_eq!(plain, Some(LogsReply { stdout: b"{\"stdout\":1}\nerr\n".to_vec(), stderr: Vec::new() }));
        let raw = parse_logs(None, b"\x01\x01\x01out1\x02\x02\x02err1\x01\x01\x01out2");
        assert_eq!(raw, Some(LogsReply { stdout: b"out1out2".to_vec(), stderr: b"err1".to_vec() }));
        assert_eq!(parse_logs(Some("application/json"), b"not json"), None);
    }
}
