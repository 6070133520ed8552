//! The wire-format proof: the OFFICIAL E2B SDK (`e2b@2.51.0`, installed by `scripts/install-sdks.sh`; its
//! `node_modules` directory comes from `WB_SDK_MODULES`) runs our driver `tests/sdk/e2b-drive.mjs` against the
//! Rust fake. The driver asserts every call's result (so the fake answers as E2B does); this test then compares
//! what the fake recorded with the committed fixture `fixtures/wire/e2b-sdk.jsonl` (rewritten when
//! `WB_UPDATE_WIRE=1`). The Rust client is checked against the same fixture in `wb-engine/tests/e2b_client.rs`.
//!
//! Without `WB_SDK_MODULES` (which `scripts/test.sh` sets) the test fails with the hint.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use wb_sandbox_fakes::e2b::{E2bFake, FakeOptions, wire};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/wire/e2b-sdk.jsonl")
}

#[test]
fn the_official_e2b_sdk_works_against_the_fake_and_matches_the_fixture() -> anyhow::Result<()> {
    let Some(modules) = std::env::var_os("WB_SDK_MODULES").map(PathBuf::from) else {
        anyhow::bail!("WB_SDK_MODULES is not set: scripts/install-sdks.sh installs the official SDKs and prints it");
    };
    anyhow::ensure!(modules.join("e2b/package.json").is_file(), "no e2b package under {}", modules.display());
    let fake = E2bFake::start(FakeOptions::default())?;
    let context = tempfile::tempdir()?;
    let driver_script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/e2b-drive.mjs");
    let mut driver = Command::new(node(&modules));
    driver
        .arg(&driver_script)
        .env("E2B_FAKE_URL", fake.url())
        .env("E2B_FAKE_KEY", fake.api_key())
        .env("WB_SDK_CTX", context.path())
        .env("WB_SDK_MODULES", &modules)
        .env_remove("E2B_API_KEY");
    let output = wb_testsupport::process::finish_within(&mut driver, Duration::from_secs(300), "the SDK driver's end");
    let (stdout, stderr) = (&output.stdout, &output.stderr);
    anyhow::ensure!(
        output.code == 0 && stdout.contains("DONE"),
        "the SDK driver failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let recorded: Vec<serde_json::Value> = fake.requests().iter().map(|r| wire::entry(r, fake.api_key())).collect();
    let text: String = recorded.iter().map(|v| format!("{v}\n")).collect();
    assert!(!text.contains(fake.api_key()), "the key's value never reaches a fixture");
    if std::env::var("WB_UPDATE_WIRE").as_deref() == Ok("1") {
        std::fs::write(fixture(), &text)?;
        eprintln!("wrote {} ({} requests)", fixture().display(), recorded.len());
        return Ok(());
    }
    let expected = wire::read(&fixture())?;
    for (index, (got, want)) in recorded.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "request {index} differs from the fixture");
    }
    assert_eq!(recorded.len(), expected.len(), "as many requests as the fixture");
    Ok(())
}

/// The Node that runs the SDKs: the one scripts/install-sdks.sh bundled beside them when the system's is too old,
/// else `node` from PATH.
fn node(modules: &Path) -> PathBuf {
    let bundled = modules.join(".bin/node");
    if bundled.is_file() { bundled } else { PathBuf::from("node") }
}
