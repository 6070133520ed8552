//! The official Daytona SDK (`@daytonaio/sdk@0.218.0`, installed by `scripts/install-sdks.sh`; its
//! `node_modules` directory comes from `WB_SDK_MODULES`) against the fake Daytona, driven by our
//! `tests/sdk/daytona-drive.mjs`: every call must succeed with the right results, so the fake speaks what the
//! real service is sent. What the fake recorded is our wire fixture `fixtures/wire/daytona-sdk.jsonl`
//! (rewritten with `WB_UPDATE_WIRE=1`, else compared); `wb-engine`'s `daytona_client.rs` checks our client's
//! requests against it.
//!
//! Without `WB_SDK_MODULES` (which `scripts/test.sh` sets) the test fails with the hint.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use wb_sandbox_fakes::daytona::{DaytonaFake, Options, wire_entry};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/wire/daytona-sdk.jsonl")
}

/// The SDK's `node_modules` (`scripts/test.sh` installs them; missing, the test fails with the hint).
fn sdk_modules() -> PathBuf {
    let modules = std::env::var_os("WB_SDK_MODULES").map(PathBuf::from);
    match modules {
        Some(dir) if dir.join("@daytonaio/sdk/package.json").is_file() => dir,
        other => {
            let why = match other {
                Some(dir) => format!("WB_SDK_MODULES={} has no @daytonaio/sdk", dir.display()),
                None => "WB_SDK_MODULES is not set".to_owned(),
            };
            panic!("{why}: scripts/install-sdks.sh installs the official SDKs and prints WB_SDK_MODULES");
        }
    }
}

/// Runs the driver with a deadline; its last stdout line as JSON.
fn drive(modules: &Path, fake: &DaytonaFake) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("daytona-drive.mjs");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/daytona-drive.mjs"), &script).expect("copy");
    // ES modules resolve packages from the script's directory upwards (NODE_PATH does not apply).
    std::os::unix::fs::symlink(modules, dir.path().join("node_modules")).expect("link node_modules");
    let mut driver = Command::new(node(modules));
    driver
        .arg(&script)
        .env("DAYTONA_API_URL", fake.api_url())
        .env("DAYTONA_API_KEY", fake.api_key())
        .env("DAYTONA_USE_DEPRECATED_POLLING", "true");
    let output = wb_testsupport::process::finish_within(&mut driver, Duration::from_secs(90), "the SDK driver's end");
    let (stdout, stderr) = (output.stdout, output.stderr);
    assert!(output.code == 0, "the SDK driver failed (exit {}):\n{stdout}\n{stderr}", output.code);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("driver output is not JSON ({e}):\n{stdout}\n{stderr}"))
}

#[test]
fn the_official_daytona_sdk_works_against_the_fake() {
    let modules = sdk_modules();
    let fake = DaytonaFake::start(Options::default()).expect("fake");
    let out = drive(&modules, &fake);

    assert_eq!(out["create"]["state"], "started", "{out}");
    assert_eq!(
        (&out["create"]["cpu"], &out["create"]["memory"], &out["create"]["disk"]),
        (&Value::from(2), &Value::from(4), &Value::from(10))
    );
    assert_eq!(out["execute"], serde_json::json!({"exitCode": 0, "result": "hello\n"}));
    assert_eq!(
        (&out["session"]["exitCode"], &out["session"]["stdout"], &out["session"]["stderr"]),
        (&Value::from(0), &Value::from("out\n"), &Value::from("err\n"))
    );
    assert_eq!(out["download"], "TARBYTES");
    assert_eq!(out["list"], serde_json::json!([out["create"]["id"]]));
    assert!(fake.sandbox_ids().is_empty(), "deleted");

    // The recording, consecutive repeats (polls) folded into one.
    let key = fake.api_key();
    let mut entries: Vec<Value> = Vec::new();
    for request in fake.requests() {
        let entry = wire_entry(&request, &key);
        if entries.last() != Some(&entry) {
            entries.push(entry);
        }
    }
    let text: String = entries.iter().map(|e| format!("{e}\n")).collect();
    assert!(!text.contains(&key), "the key is replaced in the fixture");
    if std::env::var("WB_UPDATE_WIRE").is_ok_and(|v| v == "1") {
        std::fs::write(fixture(), &text).expect("write the fixture");
        println!("wrote {}", fixture().display());
        return;
    }
    let committed = std::fs::read_to_string(fixture()).expect("the committed fixture (WB_UPDATE_WIRE=1 writes it)");
    let committed: Vec<Value> = committed.lines().map(|l| serde_json::from_str(l).expect("fixture line")).collect();
    for (index, (now, then)) in entries.iter().zip(&committed).enumerate() {
        assert_eq!(now, then, "request {index} differs from the committed fixture");
    }
    assert_eq!(entries.len(), committed.len(), "request count differs from the committed fixture");
}

/// The shared recording the reference's SDK run made (`WB_SHARED_WIRE` = its `wire/` directory): every
/// request the SDK made there, except the WebSocket follow and the preview URL we do not use, has the same
/// method and path shape in our fixture, and its JSON body's keys (bar `envs`, which we do not send) are
/// among ours (ours also sends `suppressInputEcho`).
#[test]
fn the_fixture_agrees_with_the_shared_recording() {
    let Some(dir) = std::env::var_os("WB_SHARED_WIRE").map(PathBuf::from) else {
        assert!(
            std::env::var("WB_REQUIRE_SHARED_WIRE").as_deref() != Ok("1"),
            "WB_REQUIRE_SHARED_WIRE=1 but WB_SHARED_WIRE is not set"
        );
        eprintln!("SKIPPED: WB_SHARED_WIRE is not set; the fixture is not compared with the shared Daytona recording");
        return;
    };
    let shared = std::fs::read_to_string(dir.join("daytona-wire.jsonl")).expect("daytona-wire.jsonl");
    let ours = std::fs::read_to_string(fixture()).expect("fixture");
    let ours: Vec<Value> = ours.lines().map(|l| serde_json::from_str(l).expect("fixture line")).collect();
    let shape = |path: &str| -> String {
        path.split('/')
            .map(|part| {
                if part.starts_with("sbx-") || part.starts_with("<sandbox") {
                    "<sandbox>"
                } else if part.starts_with("wb-session") || part.starts_with("<session") {
                    "<session>"
                } else if part.starts_with("cmd-") || part.starts_with("<command") {
                    "<command>"
                } else {
                    part
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    let keys = |body: &Value| -> Vec<String> {
        let mut keys: Vec<String> = body.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        keys.retain(|k| k != "envs");
        keys.sort();
        keys
    };
    let mut checked = 0;
    for line in shared.lines() {
        let entry: Value = serde_json::from_str(line).expect("shared line");
        let method = entry["method"].as_str().unwrap_or_default();
        let path = entry["url"].as_str().unwrap_or_default().split('?').next().unwrap_or_default().to_owned();
        if method == "WS-UPGRADE" || path.contains("/ports/") {
            continue;
        }
        let path = shape(&path);
        let found =
            ours.iter().find(|o| o["method"] == method && shape(o["path"].as_str().unwrap_or_default()) == path);
        let Some(found) = found else { panic!("our fixture lacks {method} {path}") };
        if entry["body"].is_object() {
            let (theirs, mine) = (keys(&entry["body"]), keys(&found["body"]));
            assert!(theirs.iter().all(|k| mine.contains(k)), "{method} {path}: {theirs:?} not within {mine:?}");
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked}");
}

/// The Node that runs the SDKs: the one scripts/install-sdks.sh bundled beside them when the system's is too old,
/// else `node` from PATH.
fn node(modules: &Path) -> PathBuf {
    let bundled = modules.join(".bin/node");
    if bundled.is_file() { bundled } else { PathBuf::from("node") }
}
