//! The E2B client (`wb_engine::runtime::e2b`) against the Rust fake (`wb_sandbox_fakes::e2b`): templates,
//! sandboxes, commands, transfers, faults, secrets, and its requests against the official SDK's fixture
//! (`fixtures/wire/e2b-sdk.jsonl`, recorded by `wb-sandbox-fakes/tests/official_sdks.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use wb_engine::runtime::Exit;
use wb_engine::runtime::e2b::{E2b, MISSING_KEY};
use wb_engine::runtime::remote::http::{self, RecordingClock};
use wb_engine::runtime::remote::provider::{
    CommandOptions, ResourceRequest, SandboxProvider, SandboxSpec, TemplateRequest, TemplateSource, User,
};
use wb_sandbox_fakes::e2b::{E2bFake, FakeOptions, Faults, wire};
use wb_testsupport::{Deadline, deadline_taken};

/// How long a test waits for a sandbox command's output before it fails naming what was missing.
const READ: Duration = Duration::from_secs(60);

/// A started command's stream, read by [`READ`]: a hung fake fails the test instead of hanging it.
fn within(stream: &mut Box<dyn Read + Send>, what: &str) -> Deadline {
    deadline_taken(stream, READ, what)
}

/// The files hash the official SDK computed for `COPY hello.txt /opt/app/hello.txt` over a `hello.txt` of
/// `hi\n`, mode 0644 (from `fixtures/wire/e2b-sdk.jsonl`).
const SDK_FILES_HASH: &str = "8ac6943d8094bdaf22f344f3aae64672f10cc6ae47037dcb0dc2183f1cff30b9";
const DOCKERFILE: &str = "FROM debian:bookworm\nCOPY hello.txt /opt/app/hello.txt\nENV FOO=bar\n";

struct Setup {
    e2b: E2b,
    fake: E2bFake,
    runtime: tokio::runtime::Runtime,
    /// Every retry waits on it (and returns at once).
    clock: Arc<RecordingClock>,
}

fn setup_with(options: FakeOptions) -> Setup {
    setup_limited(options, http::Limits::default())
}

fn setup_limited(options: FakeOptions, limits: http::Limits) -> Setup {
    let fake = E2bFake::start(options).expect("fake");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let clock = Arc::new(RecordingClock::at(SystemTime::now()));
    let transport = http::Options { clock: clock.clone(), limits, ..http::Options::default() };
    let mut e2b = E2b::with_options(&fake.env(), runtime.handle().clone(), transport).expect("client");
    e2b.set_poll_interval(Duration::from_millis(20));
    Setup { e2b, fake, runtime, clock }
}

fn setup() -> Setup {
    setup_with(FakeOptions::default())
}

fn labels(run: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("dev.workbenches.managed".to_owned(), "true".to_owned()),
        ("dev.workbenches.run".to_owned(), run.to_owned()),
        ("dev.workbenches.scope".to_owned(), "oracle".to_owned()),
    ])
}

fn spec(template: &str, run: &str) -> SandboxSpec {
    SandboxSpec {
        template: template.to_owned(),
        labels: labels(run),
        lease: Duration::from_secs(3600),
        resources: ResourceRequest::default(),
    }
}

fn image_request(setup: Option<&str>) -> TemplateRequest {
    TemplateRequest {
        workbench: "Demo Bench".to_owned(),
        version: "1.0.0".to_owned(),
        source: TemplateSource::Image("debian:bookworm".to_owned()),
        setup: setup.map(str::to_owned),
    }
}

fn dockerfile_context() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hello.txt"), "hi\n").expect("write");
    std::fs::set_permissions(dir.path().join("hello.txt"), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(dir.path().join("Dockerfile"), DOCKERFILE).expect("write");
    dir
}

fn dockerfile_request(context: &Path) -> TemplateRequest {
    TemplateRequest {
        workbench: "demo".to_owned(),
        version: "1.0.0".to_owned(),
        source: TemplateSource::Dockerfile { dockerfile: context.join("Dockerfile"), context: context.to_path_buf() },
        setup: None,
    }
}

fn quiet(_: &str) {}

fn options() -> CommandOptions {
    CommandOptions::default()
}

#[test]
fn a_missing_key_is_reported_and_a_plan_makes_no_calls() {
    let fake = E2bFake::start(FakeOptions::default()).expect("fake");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut env = fake.env();
    env.remove("E2B_API_KEY");
    let mut e2b = E2b::new(&env, runtime.handle().clone()).expect("client");
    assert_eq!(e2b.check_credentials().map_err(|e| e.to_string()), Err(MISSING_KEY.to_owned()));
    assert!(e2b.create(&spec("base", "x")).is_err());
    let with_key = E2b::new(&fake.env(), runtime.handle().clone()).expect("client");
    assert!(with_key.check_credentials().is_ok());
    let calls = with_key.calls(&image_request(None));
    let name = E2b::template_name(&image_request(None)).expect("name");
    assert_eq!(calls.template[0], format!("GET /templates/aliases/{name}"));
    assert_eq!(calls.create[0], format!("POST /v2/sandboxes (template {name})"), "{calls:?}");
    assert!(fake.requests().is_empty(), "a plan calls nothing: {:?}", fake.requests());
}

#[test]
fn image_templates_are_built_once_then_reused() {
    let mut s = setup();
    let request = image_request(Some("echo built > /tmp/built-marker"));
    let name = E2b::template_name(&request).expect("name");
    assert!(name.starts_with("workbench-demo-bench-") && name.len() == "workbench-demo-bench-".len() + 20, "{name}");
    assert_ne!(name, E2b::template_name(&image_request(None)).expect("name"), "setup is part of the name");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let built =
        s.e2b.prepare_template(&request, &move |l: &str| sink.lock().expect("lock").push(l.to_owned())).expect("build");
    assert!(!built.cached);
    assert!(built.reference.starts_with("tpl_"), "{built:?}");
    assert_eq!(built.image, "debian:bookworm");
    let lines = lines.lock().expect("lock").clone();
    assert!(lines.iter().any(|l| l.contains("step 1: RUN")), "build logs are forwarded: {lines:?}");
    let template = s.fake.templates().into_iter().find(|t| t.id == built.reference).expect("template");
    assert_eq!(
        template.build,
        Some(
            serde_json::json!({"steps":[{"type":"RUN","args":["echo built > /tmp/built-marker","root"],"force":false}],"force":false,"fromImage":"debian:bookworm"})
        )
    );
    let again = s.e2b.prepare_template(&request, &quiet).expect("cached");
    assert!(again.cached);
    assert_eq!(again.reference, name);
    assert_eq!(s.fake.requests().iter().filter(|r| r.path == "/v3/templates").count(), 1);
    // The template's RUN step ran once in a sandbox created from it.
    let sandbox = s.e2b.create(&spec(&again.reference, "r")).expect("create");
    assert_eq!(sandbox.run("cat /tmp/built-marker", &options()).expect("run").text(), "built");
    // A failing build reports its reason.
    s.fake.set_faults(Faults { build_error: Some("apt-get exited with 100".to_owned()), ..Faults::default() });
    let failed = s.e2b.prepare_template(&image_request(Some("false")), &quiet).expect_err("fails");
    assert!(failed.to_string().contains("apt-get exited with 100"), "{failed}");
}

#[test]
fn dockerfile_templates_hash_and_upload_their_files_as_the_sdk_does() {
    let mut s = setup();
    let context = dockerfile_context();
    let request = dockerfile_request(context.path());
    let built = s.e2b.prepare_template(&request, &quiet).expect("build");
    let template = s.fake.templates().into_iter().find(|t| t.id == built.reference).expect("template");
    let body = template.build.expect("build body");
    let copy = body["steps"].as_array().expect("steps").iter().find(|s| s["type"] == "COPY").expect("copy").clone();
    assert_eq!(copy["filesHash"], SDK_FILES_HASH, "the SDK's calculateFilesHash");
    assert_eq!(copy["args"], serde_json::json!(["hello.txt", "/opt/app/hello.txt", "", ""]));
    assert!(s.fake.uploaded(SDK_FILES_HASH).is_some(), "the archive was uploaded");
    let sandbox = s.e2b.create(&spec(&built.reference, "d")).expect("create");
    assert_eq!(sandbox.run("cat /opt/app/hello.txt", &options()).expect("run").text(), "hi");
    // Editing a copied file renames (rebuilds) the template.
    let before = E2b::template_name(&request).expect("name");
    std::fs::write(context.path().join("hello.txt"), "changed\n").expect("write");
    assert_ne!(before, E2b::template_name(&request).expect("name"));
    // Multi-stage, escaping sources and links out of the context are refused.
    std::fs::write(context.path().join("Dockerfile"), "FROM a AS b\nFROM c\n").expect("write");
    let error = s.e2b.prepare_template(&request, &quiet).expect_err("multi-stage");
    assert!(error.to_string().contains("single-stage"), "{error}");
    std::fs::write(context.path().join("Dockerfile"), "FROM a\nCOPY ../x /x\n").expect("write");
    assert!(s.e2b.prepare_template(&request, &quiet).expect_err("escape").to_string().contains("escapes"));
    std::os::unix::fs::symlink("/etc", context.path().join("link")).expect("symlink");
    std::fs::write(context.path().join("Dockerfile"), "FROM a\nCOPY link /x\n").expect("write");
    assert!(
        s.e2b.prepare_template(&request, &quiet).expect_err("link").to_string().contains("outside the build context")
    );
}

#[test]
fn a_template_name_owned_by_another_team_is_a_clear_error() {
    let request = image_request(None);
    let name = E2b::template_name(&request).expect("name");
    let mut s = setup_with(FakeOptions { foreign_templates: vec![name.clone()], ..FakeOptions::default() });
    let error = s.e2b.prepare_template(&request, &quiet).expect_err("403").to_string();
    assert!(error.contains("belongs to another team") && error.contains(&name), "{error}");
}

#[test]
fn commands_run_with_exit_codes_stderr_env_cwd_and_root() {
    let mut s = setup();
    let sandbox = s.e2b.create(&spec("base", "c")).expect("create");
    let echo = sandbox.run("echo hello", &options()).expect("echo");
    assert_eq!((echo.exit_code, echo.stdout.as_slice(), echo.stderr.as_slice()), (0, &b"hello\n"[..], &b""[..]));
    assert_eq!(sandbox.run("exit 3", &options()).expect("exit").exit_code, 3);
    assert_eq!(sandbox.run("echo bad >&2; exit 1", &options()).expect("stderr").stderr, b"bad\n");
    let mut with = options();
    with.env.insert("GREETING".to_owned(), "hi there".to_owned());
    with.cwd = Some("/tmp".to_owned());
    with.user = User::Root;
    assert_eq!(sandbox.run("echo \"$GREETING\"; pwd", &with).expect("env").text(), "hi there\n/tmp");
    let starts = s.fake.requests().into_iter().filter(|r| r.path == "/process.Process/Start").collect::<Vec<_>>();
    assert_eq!(starts.last().and_then(|r| r.header("authorization")), Some("Basic cm9vdDo="));
    assert_eq!(starts[0].header("authorization"), None, "the default user sends no Authorization");
    assert!(starts.iter().all(|r| r.header("connect-timeout-ms").is_none()), "no timeout, no header");
    let mut timed = options();
    timed.timeout = Some(Duration::from_secs(30));
    sandbox.run("true", &timed).expect("timed");
    let last = s.fake.requests().into_iter().rfind(|r| r.path == "/process.Process/Start").expect("start");
    assert_eq!(last.header("connect-timeout-ms"), Some("30000"));
    let resources = sandbox.resources().expect("resources");
    assert_eq!((resources.cpu, resources.memory_mib, resources.disk_mib), (Some(2), Some(512), Some(1024)));
    assert!(s.fake.sandbox(sandbox.id()).is_some());
}

#[test]
fn started_commands_stream_output_and_are_killed() {
    let mut s = setup();
    let sandbox = s.e2b.create(&spec("base", "s")).expect("create");
    let mut process = sandbox.start("echo one; sleep 0.3; echo two; echo err >&2", &options()).expect("start");
    let stdout = within(&mut process.stdout, "the command's stdout up to its end").text_to_end();
    let stderr = within(&mut process.stderr, "the command's stderr up to its end").text_to_end();
    assert_eq!((stdout.as_str(), stderr.as_str()), ("one\ntwo\n", "err\n"));
    assert_eq!(process.exit.recv_timeout(Duration::from_secs(5)).map(|e| e.code), Ok(Some(0)));

    let mut process = sandbox.start("echo started; sleep 30", &options()).expect("start");
    let mut reader = std::io::BufReader::new(within(&mut process.stdout, "the command's first line"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("line");
    assert_eq!(line, "started\n");
    let begun = Instant::now();
    process.killer.kill();
    process.killer.kill();
    assert_eq!(process.exit.recv_timeout(Duration::from_secs(10)), Ok(Exit::code(None)), "a signal has no exit code");
    assert!(begun.elapsed() < Duration::from_secs(5));
    let signals = s.fake.requests().into_iter().filter(|r| r.path == "/process.Process/SendSignal").count();
    assert_eq!(signals, 1, "kill is idempotent");
}

#[test]
fn files_round_trip_and_the_limit_holds() {
    let mut s = setup();
    let sandbox = s.e2b.create(&spec("base", "f")).expect("create");
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    sandbox.upload("/tmp/deep/dir/data.bin", &bytes).expect("upload");
    assert_eq!(sandbox.download("/tmp/deep/dir/data.bin", 1 << 20).expect("download"), bytes);
    let root = s.fake.sandbox(sandbox.id()).expect("sandbox").root;
    assert_eq!(std::fs::read(root.path().join("tmp/deep/dir/data.bin")).expect("on disk"), bytes);
    let limited = sandbox.download("/tmp/deep/dir/data.bin", 1000).expect_err("limit").to_string();
    assert_eq!(limited, "E2B output exceeds the 1000 byte transfer safety limit");
    let missing = sandbox.download("/tmp/missing", 1000).expect_err("missing").to_string();
    assert!(missing.contains("404") && missing.contains("does not exist"), "{missing}");
}

#[test]
fn destroy_is_idempotent_and_reclaim_finds_sandboxes_by_labels() {
    let mut s = setup();
    let a1 = s.e2b.create(&spec("base", "run-a")).expect("a1");
    let _a2 = s.e2b.create(&spec("base", "run-a")).expect("a2");
    let b = s.e2b.create(&spec("base", "run-b")).expect("b");
    a1.destroy().expect("destroy");
    a1.destroy().expect("again");
    assert!(s.fake.sandbox(a1.id()).is_none());
    let reclaimed =
        s.e2b.reclaim(&BTreeMap::from([("dev.workbenches.run".to_owned(), "run-a".to_owned())])).expect("reclaim");
    assert_eq!(reclaimed, 1);
    let left: Vec<String> = s.fake.sandboxes().into_iter().map(|x| x.id).collect();
    assert_eq!(left, vec![b.id().to_owned()]);
    // A sandbox the service already forgot is not an error either.
    s.fake.kill_sandbox(b.id());
    b.destroy().expect("gone is fine");
}

#[test]
fn a_failed_create_names_provider_operation_and_status() {
    let mut s = setup();
    s.fake.set_faults(Faults { create_status: Some(503), ..Faults::default() });
    let error = s.e2b.create(&spec("base", "x")).err().expect("fails").to_string();
    assert!(error.starts_with("E2B API POST /v2/sandboxes failed with 503: "), "{error}");
    assert!(!error.contains(s.fake.api_key()));
    let mut env = s.fake.env();
    env.insert("E2B_API_KEY".to_owned(), "e2b_wrong_key".to_owned());
    let mut wrong = E2b::new(&env, s.runtime.handle().clone()).expect("client");
    let error = wrong.create(&spec("base", "x")).err().expect("401").to_string();
    assert!(error.contains("failed with 401") && !error.contains("e2b_wrong_key"), "{error}");
}

#[test]
fn rate_limits_are_retried_after_retry_after() {
    let mut s = setup();
    s.fake.set_faults(Faults { rate_limited: 2, retry_after: 1, ..Faults::default() });
    let sandbox = s.e2b.create(&spec("base", "x")).expect("create after 429s");
    assert_eq!(s.clock.waits(), vec![Duration::from_secs(1); 2], "Retry-After is honoured");
    assert_eq!(s.fake.requests().iter().filter(|r| r.path == "/v2/sandboxes").count(), 3);
    sandbox.destroy().expect("destroy");
    s.fake.set_faults(Faults { rate_limited: 4, retry_after: 0, ..Faults::default() });
    let error = s.e2b.create(&spec("base", "x")).err().expect("gives up").to_string();
    assert!(error.contains("failed with 429"), "{error}");
    assert_eq!(s.clock.waits().len(), 2 + 3, "three retries, then the 429 is the error");
}

#[test]
fn uploads_use_octet_stream_from_envd_0_5_7_and_multipart_before() {
    for (version, media) in
        [("0.5.7", "application/octet-stream"), ("0.5.6", "multipart/form-data"), ("0.1.0", "multipart/form-data")]
    {
        let mut s = setup_with(FakeOptions { envd_version: version.to_owned(), ..FakeOptions::default() });
        let sandbox = s.e2b.create(&spec("base", "u")).expect("create");
        let bytes: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
        sandbox.upload("/tmp/up/data.bin", &bytes).unwrap_or_else(|e| panic!("envd {version}: {e}"));
        assert_eq!(sandbox.download("/tmp/up/data.bin", 1 << 20).expect("download"), bytes, "envd {version}");
        let upload = s.fake.requests().into_iter().find(|r| r.method == "POST" && r.path == "/files").expect("upload");
        let content_type = upload.headers.get("content-type").cloned().unwrap_or_default();
        assert!(content_type.starts_with(media), "envd {version}: {content_type}");
    }
}

#[test]
fn a_sandbox_that_dies_mid_run_ends_without_an_exit_code() {
    let mut s = setup();
    let sandbox = s.e2b.create(&spec("base", "x")).expect("create");
    let mut process = sandbox.start("echo started; sleep 30", &options()).expect("start");
    let mut reader = std::io::BufReader::new(within(&mut process.stdout, "the command's first line, then its end"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("line");
    s.fake.kill_sandbox(sandbox.id());
    let end = process.exit.recv_timeout(Duration::from_secs(10)).expect("an end");
    assert_eq!(end.code, None);
    assert!(end.cause.is_some_and(|cause| cause.contains("process stream")), "the end says what happened");
    let mut rest = String::new();
    reader.read_to_string(&mut rest).expect("EOF after the break");
    assert!(sandbox.run("true", &options()).is_err(), "a gone sandbox runs nothing");
}

#[test]
fn a_failed_upload_is_an_error() {
    let mut s = setup();
    let sandbox = s.e2b.create(&spec("base", "x")).expect("create");
    s.fake.set_faults(Faults { upload_status: Some(507), ..Faults::default() });
    let error = sandbox.upload("/tmp/x", b"data").expect_err("fails").to_string();
    assert!(error.contains("507") && error.contains("out of disk space"), "{error}");
}

#[test]
fn a_hung_stream_is_stopped_by_kill() {
    let mut s = setup();
    let sandbox = s.e2b.create(&spec("base", "x")).expect("create");
    s.fake.set_faults(Faults { hang_start: true, ..Faults::default() });
    let mut process = sandbox.start("echo started; sleep 30", &options()).expect("start");
    let mut reader = std::io::BufReader::new(within(&mut process.stdout, "the hung stream's first line"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("line");
    let begun = Instant::now();
    process.killer.kill();
    assert_eq!(process.exit.recv_timeout(Duration::from_secs(10)).map(|e| e.code), Ok(None));
    assert!(begun.elapsed() < Duration::from_secs(8), "{:?}", begun.elapsed());
}

/// envd sends keepalives at the interval the client asks (`Keepalive-Ping-Interval`); a stream that sends
/// nothing at all past the silence limit is a dead connection, and the runner's end is unknown, saying why.
#[test]
fn a_stream_silent_past_its_keepalive_ends_the_process_with_an_unknown_exit() {
    let limits = http::Limits {
        keepalive: Duration::from_secs(1),
        silence: Duration::from_millis(400),
        ..http::Limits::default()
    };
    let mut s = setup_limited(FakeOptions::default(), limits);
    let sandbox = s.e2b.create(&spec("base", "silent")).expect("create");
    s.fake.set_faults(Faults { silent_stream: true, ..Faults::default() });
    let process = sandbox.start("echo never-seen", &options()).expect("start");
    let exit = process.exit.recv_timeout(Duration::from_secs(30)).expect("an end");
    assert_eq!(exit.code, None);
    let cause = exit.cause.unwrap_or_default();
    assert!(cause.contains("silent for 0.4 seconds") && cause.contains("keepalive every 1 second"), "{cause}");
    let start = s.fake.requests().into_iter().find(|r| r.path == "/process.Process/Start").expect("start");
    assert_eq!(start.headers.get("keepalive-ping-interval").map(String::as_str), Some("1"));
}

/// The same operations as the SDK driver, by our client: its requests must appear, in order and equal on
/// method, path, query, key headers and JSON body, in the SDK's fixture. No request to envd carries the key.
#[test]
fn requests_match_the_official_sdk_fixture_and_never_carry_the_key_to_envd() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/wire/e2b-sdk.jsonl");
    let expected = wire::read(&fixture).expect("fixture");
    let mut s = setup();
    let image = image_request(Some("echo built > /tmp/built-marker"));
    let context = dockerfile_context();
    let dockerfile = dockerfile_request(context.path());
    let names = [
        (E2b::template_name(&image).expect("name"), "workbench-oracle-image"),
        (E2b::template_name(&dockerfile).expect("name"), "workbench-oracle-dockerfile"),
    ];
    let built = s.e2b.prepare_template(&image, &quiet).expect("image");
    s.e2b.prepare_template(&dockerfile, &quiet).expect("dockerfile");
    let sandbox = s.e2b.create(&spec(&built.reference, "wb_oracle")).expect("create");
    sandbox.run("echo hello", &options()).expect("run");
    let mut rooted = options();
    rooted.user = User::Root;
    rooted.cwd = Some("/tmp".to_owned());
    rooted.env.insert("A".to_owned(), "1".to_owned());
    let out = sandbox.run("echo \"$A\"; pwd; cat /tmp/built-marker; echo oops >&2", &rooted).expect("root");
    assert_eq!((out.text(), out.stderr.as_slice()), ("1\n/tmp\nbuilt".to_owned(), &b"oops\n"[..]));
    assert_eq!(sandbox.run("exit 3", &options()).expect("exit").exit_code, 3);
    let mut process = sandbox.start("echo started; sleep 30", &options()).expect("start");
    let mut line = String::new();
    std::io::BufReader::new(within(&mut process.stdout, "the command's first line"))
        .read_line(&mut line)
        .expect("line");
    process.killer.kill();
    let _ = process.exit.recv_timeout(Duration::from_secs(10));
    sandbox.upload("/tmp/transfer/data.bin", b"payload bytes").expect("upload");
    assert_eq!(sandbox.download("/tmp/transfer/data.bin", 1 << 20).expect("download"), b"payload bytes");
    // Paused, then reconnected (a recovery's calls): the files are kept, and only that sandbox is reached.
    assert!(s.e2b.pause(sandbox.id()).expect("pause"));
    assert!(!s.e2b.pause(sandbox.id()).expect("pause again"), "already paused");
    let again = s.e2b.reconnect(sandbox.id(), Duration::from_secs(600)).expect("reconnect");
    assert_eq!(again.id(), sandbox.id());
    assert_eq!(again.download("/tmp/transfer/data.bin", 1 << 20).expect("download"), b"payload bytes");
    s.e2b.reconnect(sandbox.id(), Duration::from_secs(600)).expect("reconnect a running sandbox");
    sandbox.resources().expect("info");
    let reclaimed = s.e2b.reclaim(&BTreeMap::from([("dev.workbenches.run".to_owned(), "wb_oracle".to_owned())]));
    assert_eq!(reclaimed.expect("reclaim"), 1);

    let requests = s.fake.requests();
    for request in requests.iter().filter(|r| r.header("e2b-sandbox-id").is_some()) {
        assert!(request.header("x-api-key").is_none(), "no API key header to envd: {request:?}");
        let all = format!("{:?}{}", request.headers, String::from_utf8_lossy(&request.body));
        assert!(!all.contains(s.fake.api_key()), "the key's value never reaches envd");
    }
    let mut position = 0;
    let mut matched = 0;
    for request in &requests {
        let mut text = wire::entry(request, s.fake.api_key()).to_string();
        for (ours, theirs) in &names {
            text = text.replace(ours.as_str(), theirs);
        }
        let ours: serde_json::Value = serde_json::from_str(&text).expect("json");
        match expected[position..].iter().position(|want| want == &ours) {
            Some(offset) => {
                position += offset + 1;
                matched += 1;
            }
            None => panic!("our request is not in the SDK's fixture (in order) after entry {position}:\n{ours:#}"),
        }
    }
    assert_eq!(matched, requests.len());
    assert!(matched >= 24, "the client covered the SDK's operations ({matched} requests)");
}

/// Optional: the shared recordings (`WB_SHARED_WIRE` = the reference's `wire` folder).
#[test]
fn bodies_match_the_shared_recordings_when_given() {
    let Some(dir) = std::env::var_os("WB_SHARED_WIRE").map(PathBuf::from) else {
        assert!(
            std::env::var("WB_REQUIRE_SHARED_WIRE").as_deref() != Ok("1"),
            "WB_REQUIRE_SHARED_WIRE=1 but WB_SHARED_WIRE is not set"
        );
        eprintln!("SKIPPED: shared E2B recordings: WB_SHARED_WIRE is not set");
        return;
    };
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("e2b-wire.jsonl"))
        .expect("e2b-wire.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let find = |method: &str, url: &str| {
        lines
            .iter()
            .find(|l| l["method"] == method && l["url"].as_str().is_some_and(|u| u.starts_with(url)))
            .cloned()
            .expect("recorded")
    };
    let mut s = setup();
    s.fake.add_template("tpl_abc");
    let mut labels = BTreeMap::new();
    for (k, v) in find("POST", "/v2/sandboxes")["body"]["metadata"].as_object().expect("metadata") {
        labels.insert(k.clone(), v.as_str().expect("text").to_owned());
    }
    let sandbox = s
        .e2b
        .create(&SandboxSpec {
            template: "tpl_abc".into(),
            labels,
            lease: Duration::from_secs(3600),
            resources: ResourceRequest::default(),
        })
        .expect("create");
    let mut with = options();
    with.user = User::Root;
    with.cwd = Some("/workspace".into());
    with.env.insert("A".into(), "1".into());
    sandbox.run("mkdir -p /workspace; false", &with).expect("run");
    let requests = s.fake.requests();
    let create = requests.iter().find(|r| r.path == "/v2/sandboxes").and_then(|r| r.json()).expect("create");
    let mut recorded = find("POST", "/v2/sandboxes")["body"].clone();
    let object = recorded.as_object_mut().expect("object");
    object.remove("envVars");
    // The reference pauses a sandbox at the end of its lease (for its recovery checkpoint); we kill it, as the
    // SDK sends for `onTimeout: 'kill'` (our own fixture records that).
    assert_eq!(object.remove("autoPause"), Some(serde_json::json!(true)));
    object.remove("autoPauseMemory");
    object.remove("autoResume");
    object.insert("autoPause".into(), serde_json::json!(false));
    assert_eq!(create, recorded);
    let start = requests.iter().rfind(|r| r.path == "/process.Process/Start").expect("start");
    assert_eq!(start.header("authorization"), Some("Basic cm9vdDo="));
    let envelope = wire::entry(start, "")["body"]["envelope"].clone();
    let mut want = find("POST", "/process.Process/Start")["body"]["envelopes"][0]["payload"].clone();
    want = lines
        .iter()
        .filter(|l| l["url"] == "/process.Process/Start")
        .nth(1)
        .map_or(want, |l| l["body"]["envelopes"][0]["payload"].clone());
    want["process"]["args"][2] = serde_json::json!("mkdir -p /workspace; false");
    assert_eq!(envelope, want);
}

/// A paused sandbox answers no command until it is reconnected; a reconnect reaches only the sandbox named, and one
/// that does not exist is an error (nothing is created in its place).
#[test]
fn a_paused_sandbox_is_reconnected_by_its_id_only() {
    let mut s = setup();
    let built = s.e2b.prepare_template(&image_request(None), &quiet).expect("image");
    let sandbox = s.e2b.create(&spec(&built.reference, "wb_paused")).expect("create");
    sandbox.run("echo kept > /tmp/kept", &options()).expect("run");
    assert!(s.e2b.pause(sandbox.id()).expect("pause"));
    assert!(sandbox.run("true", &options()).is_err(), "a paused sandbox runs nothing");
    let again = s.e2b.reconnect(sandbox.id(), Duration::from_secs(600)).expect("reconnect");
    assert_eq!(again.run("cat /tmp/kept", &options()).expect("run").text(), "kept");
    let created = s.fake.requests().iter().filter(|r| r.method == "POST" && r.path == "/v2/sandboxes").count();
    assert!(s.e2b.reconnect("sbx_nonexistent", Duration::from_secs(600)).is_err());
    assert!(s.e2b.pause("sbx_nonexistent").is_err());
    let after = s.fake.requests().iter().filter(|r| r.method == "POST" && r.path == "/v2/sandboxes").count();
    assert_eq!(created, after, "no sandbox is created by a reconnect");
    assert_eq!(s.fake.sandboxes().len(), 1);
}

/// A runner started to be followed again ([`CommandOptions::reattachable`]) is followed by another client from
/// its first byte (its stdout kept in a file, read back by size) to its end (envd's `Connect`, whose request is
/// the official SDK's `commands.connect`); an ordinary start leaves nothing to reattach to.
#[test]
fn a_runner_is_followed_again_from_its_first_byte() {
    let mut s = setup();
    let built = s.e2b.prepare_template(&image_request(None), &quiet).expect("image");
    let sandbox = s.e2b.create(&spec(&built.reference, "wb_reattach")).expect("create");
    let plain = sandbox.start("echo plain", &options()).expect("start");
    assert_eq!(plain.handle, serde_json::Value::Null);
    let _ = plain.exit.recv_timeout(Duration::from_secs(10));

    let reattachable = CommandOptions { reattachable: true, ..options() };
    let mut first = sandbox.start("echo one; sleep 1; echo two", &reattachable).expect("start");
    let mut line = String::new();
    std::io::BufReader::new(within(&mut first.stdout, "the first line")).read_line(&mut line).expect("line");
    assert_eq!(line, "one\n");
    let handle = first.handle.clone();
    drop(first);
    s.fake.clear_requests();
    let mut again = sandbox.reattach(&handle).expect("reattach");
    let all = within(&mut again.stdout, "the reattached output up to its end").text_to_end();
    assert_eq!(all, "one\ntwo\n", "the whole output, once");
    assert_eq!(again.exit.recv_timeout(Duration::from_secs(10)).expect("exit"), Exit::code(Some(0)));

    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/wire/e2b-sdk.jsonl");
    let sdk = wire::read(&fixture).expect("fixture");
    let theirs = sdk.iter().find(|e| e["path"] == "/process.Process/Connect").expect("the SDK's connect");
    let requests = s.fake.requests();
    let ours = requests.iter().find(|r| r.path == "/process.Process/Connect").expect("our connect");
    assert_eq!(&wire::entry(ours, s.fake.api_key()), theirs);
    // An unknown handle is refused, never guessed at.
    assert!(sandbox.reattach(&serde_json::json!({"pid": 1, "output": "/etc/passwd"})).is_err());
}
