//! Opt-in smokes against the REAL E2B and Daytona services. They are ignored (reported as such, never as a
//! pass) because they need keys and bill a sandbox for a few seconds each; run them with
//! `E2B_API_KEY=… cargo test -p wb-lsp --test remote_live -- --ignored e2b` (or `DAYTONA_API_KEY=… … daytona`).
//! `WB_LIVE_IMAGE` names the image to create the sandbox from (default `ghcr.io/anomalyco/opencode:latest`;
//! for E2B the template is built from it on first use).
//!
//! Each runs `wb-lsp smoke --runtime <service> --json` on a package with that image and asserts that the
//! sandbox was created, the preflight ran inside it (ready, or a preflight text naming the image), and the
//! sandbox was destroyed. See docs/runtimes.md.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use wb_testsupport::{World, finish};

fn live(runtime: &str, key: &str) {
    let secret = std::env::var(key).unwrap_or_else(|_| panic!("this live smoke needs {key}"));
    let image = std::env::var("WB_LIVE_IMAGE").unwrap_or_else(|_| "ghcr.io/anomalyco/opencode:latest".to_owned());
    let world = World::new();
    let class = if runtime == "daytona" { "    class: linux\n" } else { "" };
    world.package(
        "live",
        &format!(
            "spec: 1\nversion: 1.0.0\nname: live\ndescription: A live smoke.\nrunner: opencode\nmodel:\n  id: openai/gpt-5.1\ninstructions: ./instructions.md\nruntimes:\n  {runtime}:\n{class}    image: {image}\n"
        ),
    );
    let mut command = world.command(env!("CARGO_BIN_EXE_wb-lsp"));
    command.args(["smoke", ".workbenches/live", "--runtime", runtime, "--json"]).env(key, &secret);
    for name in ["E2B_API_URL", "E2B_DOMAIN", "E2B_SANDBOX_URL", "DAYTONA_API_URL", "DAYTONA_TARGET"] {
        if let Ok(value) = std::env::var(name) {
            command.env(name, value);
        }
    }
    let output = finish(&mut command);
    eprintln!("{}\n{}", output.stdout, output.stderr);
    assert!(!output.stdout.contains(&secret) && !output.stderr.contains(&secret), "the key was printed");
    let report: Value = serde_json::from_str(output.stdout.lines().next().unwrap_or("{}")).unwrap();
    match report["status"].as_str() {
        Some("ready" | "needs-auth") => assert_eq!(report["sandbox"]["destroyed"], true, "{report}"),
        _ => {
            let message = report["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(" image "), "the smoke failed before preflight ran in a sandbox: {report}");
        }
    }
}

#[test]
#[ignore = "needs E2B_API_KEY and bills a sandbox: run with --ignored"]
fn e2b_live_smoke() {
    live("e2b", "E2B_API_KEY");
}

#[test]
#[ignore = "needs DAYTONA_API_KEY and bills a sandbox: run with --ignored"]
fn daytona_live_smoke() {
    live("daytona", "DAYTONA_API_KEY");
}
