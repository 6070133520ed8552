//! Hostile sandbox services (issue 26, round 2): a control plane, envd or Daytona toolbox that redirects to
//! another origin, answers without end, stalls, asks for a retry by date, or leaves a stream silent. Each
//! service here is a raw HTTP/1.1 server on a thread that answers as the test scripts it, records what it
//! saw and counts what it wrote; no sandbox runs, so no bubblewrap is needed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use wb_engine::runtime::daytona::{Daytona, Timing};
use wb_engine::runtime::e2b::E2b;
use wb_engine::runtime::e2b::connect;
use wb_engine::runtime::remote::http::{Limits, Options, RecordingClock};
use wb_engine::runtime::remote::provider::{CommandOptions, ResourceRequest, SandboxProvider, SandboxSpec};

/// What an endless body may write at most (so old code that reads without a bound still ends).
const ENDLESS_CAP: u64 = 256 * 1024 * 1024;
/// The limit these tests give replies and command output.
const LIMIT: u64 = 1024 * 1024;
/// What may lie in socket buffers beyond what the client read (loopback buffers are a few MiB at most).
const BUFFERED: u64 = 16 * 1024 * 1024;

/// A request as the hostile server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// How the server answers one request.
enum Answer {
    Json(u16, String),
    /// A status and headers, then bytes from the generator until the client goes away (or the cap).
    Endless(&'static str, Box<dyn Fn(u64) -> Vec<u8> + Send>),
    /// 307 to another origin.
    Redirect(String),
    /// 429 with this `Retry-After`.
    RetryAfter(String),
    /// Reads the head and then nothing more, never answering.
    Stall,
    /// A body written, then the connection held open without another byte.
    Silent(&'static str, Vec<u8>),
}

struct Hostile {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    written: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl Hostile {
    fn start(answer: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let written = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(answer);
        let (seen2, written2, stop2) = (seen.clone(), written.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (seen, written, stop, answer) = (seen2.clone(), written2.clone(), stop2.clone(), answer.clone());
                std::thread::spawn(move || serve(stream, &seen, &written, &stop, answer.as_ref()));
            }
        });
        Hostile { url, seen, written, stop }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }
}

fn serve(
    stream: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    written: &AtomicU64,
    stop: &AtomicBool,
    answer: &(dyn Fn(&Seen, usize) -> Answer + Send + Sync),
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        let request = Seen { method, path, headers };
        let index = {
            let mut seen = seen.lock().unwrap();
            seen.push(request.clone());
            seen.len() - 1
        };
        let answer = answer(&request, index);
        if let Answer::Stall = answer {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            return;
        }
        let length = request.header("content-length").and_then(|l| l.parse::<u64>().ok()).unwrap_or(0);
        if std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink()).is_err() {
            return;
        }
        let head = |status: u16, extra: &str| format!("HTTP/1.1 {status} X\r\n{extra}\r\n");
        match answer {
            Answer::Json(status, body) => {
                let text =
                    head(status, &format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()))
                        + &body;
                if out.write_all(text.as_bytes()).is_err() {
                    return;
                }
            }
            Answer::Redirect(location) => {
                let text = head(307, &format!("Location: {location}\r\nContent-Length: 0\r\n"));
                if out.write_all(text.as_bytes()).is_err() {
                    return;
                }
            }
            Answer::RetryAfter(value) => {
                let text = head(429, &format!("Retry-After: {value}\r\nContent-Length: 2\r\n")) + "{}";
                if out.write_all(text.as_bytes()).is_err() {
                    return;
                }
            }
            Answer::Endless(content_type, chunk) => {
                let text = head(200, &format!("Content-Type: {content_type}\r\nConnection: close\r\n"));
                let _ = out.write_all(text.as_bytes());
                let mut total = 0u64;
                while total < ENDLESS_CAP && !stop.load(Ordering::SeqCst) {
                    let bytes = chunk(total);
                    if out.write_all(&bytes).is_err() {
                        break;
                    }
                    total += bytes.len() as u64;
                    written.fetch_add(bytes.len() as u64, Ordering::SeqCst);
                }
                return;
            }
            Answer::Silent(content_type, body) => {
                let text = head(200, &format!("Content-Type: {content_type}\r\nConnection: close\r\n"));
                let _ = out.write_all(text.as_bytes());
                let _ = out.write_all(&body);
                let _ = out.flush();
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            Answer::Stall => return,
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn limits() -> Limits {
    Limits { reply: LIMIT, output: LIMIT, logs: LIMIT, ..Limits::default() }
}

fn options(limits: Limits) -> Options {
    Options { limits, ..Options::default() }
}

const E2B_KEY: &str = "e2b_hostile_key_0123456789";
const ENVD_TOKEN: &str = "envd-token-0123456789";
const DAYTONA_KEY: &str = "dtn_hostile_key_0123456789";

fn e2b(api: &Hostile, envd: &Hostile, runtime: &tokio::runtime::Runtime, options: Options) -> E2b {
    let env = BTreeMap::from([
        ("E2B_API_KEY".to_owned(), E2B_KEY.to_owned()),
        ("E2B_API_URL".to_owned(), api.url.clone()),
        ("E2B_SANDBOX_URL".to_owned(), envd.url.clone()),
    ]);
    E2b::with_options(&env, runtime.handle().clone(), options).unwrap()
}

fn daytona(api: &Hostile, runtime: &tokio::runtime::Runtime, options: Options) -> Daytona {
    let env = BTreeMap::from([
        ("DAYTONA_API_KEY".to_owned(), DAYTONA_KEY.to_owned()),
        ("DAYTONA_API_URL".to_owned(), format!("{}/api", api.url)),
    ]);
    let timing = Timing { poll_first: Duration::from_millis(5), ..Timing::default() };
    Daytona::new(&env, runtime.handle().clone()).unwrap().with_timing(timing).unwrap().with_options(options).unwrap()
}

fn spec() -> SandboxSpec {
    SandboxSpec {
        template: "base".to_owned(),
        labels: BTreeMap::from([("dev.wb-lsp.run".to_owned(), "r1".to_owned())]),
        lease: Duration::from_secs(600),
        resources: ResourceRequest::default(),
    }
}

/// A control plane that creates sandboxes (E2B: with envd 0.5.7 and a token; Daytona: started, its toolbox
/// on `toolbox`), else `otherwise`.
fn control_plane(toolbox: String, otherwise: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Hostile {
    Hostile::start(move |seen, _| match (seen.method.as_str(), seen.path.as_str()) {
        ("POST", "/v2/sandboxes") => Answer::Json(
            201,
            format!(r#"{{"sandboxID":"sbx1","envdVersion":"0.5.7","envdAccessToken":"{ENVD_TOKEN}"}}"#),
        ),
        ("POST", "/api/sandbox") => {
            Answer::Json(200, format!(r#"{{"id":"sbx1","state":"started","toolboxProxyUrl":"{toolbox}"}}"#))
        }
        _ => otherwise(seen),
    })
}

fn endless_json() -> Answer {
    Answer::Endless("application/json", Box::new(|_| b"[1,".repeat(16 * 1024)))
}

fn credentials(seen: &[Seen]) -> Vec<String> {
    seen.iter()
        .flat_map(|s| s.headers.iter())
        .filter(|(name, _)| {
            ["x-api-key", "x-access-token", "authorization"].contains(&name.to_ascii_lowercase().as_str())
        })
        .map(|(name, _)| name.clone())
        .collect()
}

#[test]
fn no_credential_follows_a_redirect_to_another_origin() {
    let runtime = runtime();
    let other = Hostile::start(|_, _| Answer::Json(200, "{}".to_owned()));
    let to = other.url.clone();
    // The E2B control plane redirects create.
    let api = Hostile::start(move |seen, _| Answer::Redirect(format!("{to}{}", seen.path)));
    let mut provider = e2b(&api, &api, &runtime, Options::default());
    let error = provider.create(&spec()).err().expect("a redirect is refused").to_string();
    assert!(error.contains("E2B API POST /v2/sandboxes failed") && error.contains("307"), "{error}");
    // envd redirects an upload.
    let to = other.url.clone();
    let envd = Hostile::start(move |seen, _| Answer::Redirect(format!("{to}{}", seen.path)));
    let api = control_plane(String::new(), |_| Answer::Json(404, "{}".to_owned()));
    let mut provider = e2b(&api, &envd, &runtime, Options::default());
    let sandbox = provider.create(&spec()).unwrap();
    let error = sandbox.upload("/tmp/x", b"hello").expect_err("a redirect is refused").to_string();
    assert!(error.contains("envd POST /files failed") && error.contains("307"), "{error}");
    // Daytona's control plane redirects create.
    let to = other.url.clone();
    let api = Hostile::start(move |seen, _| Answer::Redirect(format!("{to}{}", seen.path)));
    let error = daytona(&api, &runtime, Options::default()).create(&spec()).err().expect("refused").to_string();
    assert!(error.contains("Daytona API POST /sandbox failed") && error.contains("307"), "{error}");
    assert_eq!(credentials(&other.seen()), Vec::<String>::new(), "{:?}", other.seen());
    assert!(!credentials(&envd.seen()).is_empty(), "envd itself got its token");
}

#[test]
fn endless_replies_of_every_service_end_at_their_limit() {
    let runtime = runtime();
    let bounded = |hostile: &Hostile, error: &str, service: &str| {
        assert!(error.contains(service) && error.contains("exceeds the 1 MiB limit"), "{error}");
        assert!(!error.contains(E2B_KEY) && !error.contains(DAYTONA_KEY) && !error.contains(ENVD_TOKEN), "{error}");
        assert!(hostile.written() < LIMIT + BUFFERED, "{} bytes were taken", hostile.written());
    };
    // E2B control plane.
    let api = Hostile::start(|_, _| endless_json());
    let error = e2b(&api, &api, &runtime, options(limits())).create(&spec()).err().expect("bounded").to_string();
    bounded(&api, &error, "E2B API POST /v2/sandboxes");
    // Daytona control plane.
    let api = Hostile::start(|_, _| endless_json());
    let error = daytona(&api, &runtime, options(limits())).create(&spec()).err().expect("bounded").to_string();
    bounded(&api, &error, "Daytona API POST /sandbox");
    // envd: a unary reply (the kill of a started process).
    let envd = Hostile::start(|seen, _| match seen.path.as_str() {
        "/process.Process/Start" => {
            Answer::Silent("application/connect+json", connect::encode(0, br#"{"event":{"start":{"pid":7}}}"#))
        }
        _ => endless_json(),
    });
    let api = control_plane(String::new(), |_| Answer::Json(404, "{}".to_owned()));
    let sandbox = e2b(&api, &envd, &runtime, options(limits())).create(&spec()).unwrap();
    let mut process = sandbox.start("sleep 1000", &CommandOptions::default()).unwrap();
    process.killer.kill();
    assert!(envd.seen().iter().any(|s| s.path == "/process.Process/SendSignal"));
    assert!(envd.written() < LIMIT + BUFFERED, "{} bytes were taken", envd.written());
    // The Daytona toolbox: the logs of a started command.
    let toolbox = Hostile::start(|seen, _| match seen.path.as_str() {
        p if p.ends_with("/exec") => Answer::Json(200, r#"{"cmdId":"c1"}"#.to_owned()),
        p if p.ends_with("/logs") => Answer::Endless("text/plain", Box::new(|_| vec![b'x'; 64 * 1024])),
        p if p.ends_with("/command/c1") => Answer::Json(200, r#"{"id":"c1","command":"x"}"#.to_owned()),
        _ => Answer::Json(200, "{}".to_owned()),
    });
    let api = control_plane(format!("{}/toolbox", toolbox.url), |_| Answer::Json(200, "{}".to_owned()));
    let sandbox = daytona(&api, &runtime, options(limits())).create(&spec()).unwrap();
    let process = sandbox.start("runner", &CommandOptions::default()).unwrap();
    let exit = process.exit.recv_timeout(Duration::from_secs(60)).expect("the process ends");
    assert_eq!(exit.code, None);
    bounded(&toolbox, exit.cause.as_deref().unwrap_or(""), "Daytona toolbox GET process/session/");
}

#[test]
fn the_output_of_an_engine_command_is_bounded() {
    let runtime = runtime();
    // E2B: envd streams stdout forever.
    let envd = Hostile::start(|seen, _| match seen.path.as_str() {
        "/process.Process/Start" => Answer::Endless(
            "application/connect+json",
            Box::new(|total| {
                if total == 0 {
                    return connect::encode(0, br#"{"event":{"start":{"pid":7}}}"#);
                }
                let data = format!(r#"{{"event":{{"data":{{"stdout":"{}"}}}}}}"#, "eHh4".repeat(16 * 1024));
                connect::encode(0, data.as_bytes())
            }),
        ),
        _ => Answer::Json(200, "{}".to_owned()),
    });
    let api = control_plane(String::new(), |_| Answer::Json(404, "{}".to_owned()));
    let sandbox = e2b(&api, &envd, &runtime, options(limits())).create(&spec()).unwrap();
    let error = sandbox.run("yes", &CommandOptions::default()).expect_err("bounded").to_string();
    assert!(error.contains("E2B sandbox sbx1: envd: the command's output exceeds the 1 MiB limit"), "{error}");
    assert!(envd.written() < LIMIT + BUFFERED, "{} bytes were taken", envd.written());
    assert!(envd.seen().iter().any(|s| s.path == "/process.Process/SendSignal"), "the command was killed");
    // Daytona: process/execute answers one endless result.
    let toolbox = Hostile::start(|_, _| {
        Answer::Endless(
            "application/json",
            Box::new(|total| if total == 0 { br#"{"exitCode":0,"result":""#.to_vec() } else { vec![b'y'; 64 * 1024] }),
        )
    });
    let api = control_plane(format!("{}/toolbox", toolbox.url), |_| Answer::Json(200, "{}".to_owned()));
    let sandbox = daytona(&api, &runtime, options(limits())).create(&spec()).unwrap();
    let error = sandbox.run("yes", &CommandOptions::default()).expect_err("bounded").to_string();
    assert!(
        error.contains("Daytona toolbox POST process/execute: the command's output exceeds the 1 MiB limit"),
        "{error}"
    );
    assert!(toolbox.written() < LIMIT + BUFFERED, "{} bytes were taken", toolbox.written());
}

#[test]
fn a_stalled_upload_hits_its_deadline_and_stops_when_cancelled() {
    let runtime = runtime();
    let envd = Hostile::start(|_, _| Answer::Stall);
    let api = control_plane(String::new(), |_| Answer::Json(404, "{}".to_owned()));
    let short = Limits { request: Duration::from_millis(300), ..Limits::default() };
    let sandbox = e2b(&api, &envd, &runtime, options(short)).create(&spec()).unwrap();
    let error = sandbox.upload("/tmp/archive.tar", &[7u8; 4096]).expect_err("deadline").to_string();
    assert!(error.contains("envd POST /files failed: no answer within 0.3 seconds"), "{error}");

    // With the default deadline (a minute and more), the run's cancel flag ends it.
    let cancel = Arc::new(AtomicBool::new(false));
    let mut provider = e2b(&api, &envd, &runtime, Options::default());
    provider.watch_cancel(Some(cancel.clone()));
    let sandbox = provider.create(&spec()).unwrap();
    let before = envd.seen().len();
    let flag = cancel.clone();
    let seen = envd.seen.clone();
    let canceller = std::thread::spawn(move || {
        // Ctrl-C once the upload is stuck at the service.
        while seen.lock().unwrap().len() == before {
            std::thread::sleep(Duration::from_millis(10));
        }
        flag.store(true, Ordering::SeqCst);
    });
    let error = sandbox.upload("/tmp/archive.tar", &[7u8; 4096]).expect_err("cancelled").to_string();
    canceller.join().unwrap();
    assert!(error.contains("envd POST /files was cancelled"), "{error}");
    // Cleanup still runs while the flag is set; once no longer watched, calls go out again.
    let error = sandbox.resources().expect_err("cancelled").to_string();
    assert!(error.contains("E2B API GET /sandboxes/sbx1 was cancelled"), "{error}");
    sandbox.destroy().expect("destroy is never cancelled");
    assert!(api.seen().iter().any(|s| s.method == "DELETE" && s.path == "/sandboxes/sbx1"));
    provider.watch_cancel(None);
    let error = sandbox.resources().expect_err("the hostile API has no such sandbox").to_string();
    assert!(error.contains("E2B API GET /sandboxes/sbx1 failed with 404"), "{error}");

    // A create stuck at Daytona's control plane during provisioning stops as well (the reclaim by label that
    // follows a create that may have happened is cleanup, and still runs).
    let api = Hostile::start(|seen, _| match seen.method.as_str() {
        "POST" => Answer::Stall,
        _ => Answer::Json(200, r#"{"items":[]}"#.to_owned()),
    });
    let cancel = Arc::new(AtomicBool::new(true));
    let mut provider = daytona(&api, &runtime, Options::default());
    provider.watch_cancel(Some(cancel));
    let error = provider.create(&spec()).err().expect("cancelled").to_string();
    assert!(error.contains("Daytona API POST /sandbox was cancelled"), "{error}");
    assert!(api.seen().iter().any(|s| s.method == "GET" && s.path.starts_with("/api/sandbox?labels=")), "reclaimed");
}

#[test]
fn retry_after_as_an_http_date_is_waited_on_the_injected_clock() {
    let runtime = runtime();
    // Wed, 21 Oct 2026 07:28:00 GMT
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_792_567_680);
    let api = Hostile::start(|seen, index| match index {
        0 | 1 => Answer::RetryAfter("Wed, 21 Oct 2026 07:28:07 GMT".to_owned()),
        _ => match seen.path.as_str() {
            "/v2/sandboxes" => Answer::Json(
                201,
                format!(r#"{{"sandboxID":"sbx1","envdVersion":"0.5.7","envdAccessToken":"{ENVD_TOKEN}"}}"#),
            ),
            _ => Answer::Json(404, "{}".to_owned()),
        },
    });
    let clock = Arc::new(RecordingClock::at(now));
    let options = Options { clock: clock.clone(), ..Options::default() };
    let sandbox = e2b(&api, &api, &runtime, options).create(&spec()).expect("created after two 429s");
    assert_eq!(sandbox.id(), "sbx1");
    assert_eq!(clock.waits(), vec![Duration::from_secs(7), Duration::from_secs(7)]);
    assert_eq!(api.seen().iter().filter(|s| s.path == "/v2/sandboxes").count(), 3);
}

#[test]
fn a_stream_silent_past_its_keepalive_ends_with_an_unknown_exit() {
    let runtime = runtime();
    let envd = Hostile::start(|seen, _| match seen.path.as_str() {
        "/process.Process/Start" => {
            Answer::Silent("application/connect+json", connect::encode(0, br#"{"event":{"start":{"pid":7}}}"#))
        }
        _ => Answer::Json(200, "{}".to_owned()),
    });
    let api = control_plane(String::new(), |_| Answer::Json(404, "{}".to_owned()));
    let silence =
        Limits { keepalive: Duration::from_secs(1), silence: Duration::from_millis(300), ..Limits::default() };
    let sandbox = e2b(&api, &envd, &runtime, options(silence)).create(&spec()).unwrap();
    let process = sandbox.start("runner", &CommandOptions::default()).unwrap();
    let start = envd.seen().into_iter().find(|s| s.path == "/process.Process/Start").unwrap();
    assert_eq!(start.header("keepalive-ping-interval"), Some("1"));
    let exit = process.exit.recv_timeout(Duration::from_secs(60)).expect("the process ends");
    assert_eq!(exit.code, None);
    let cause = exit.cause.unwrap_or_default();
    assert!(cause.contains("silent for 0.3 seconds") && cause.contains("keepalive every 1 second"), "{cause}");
}
