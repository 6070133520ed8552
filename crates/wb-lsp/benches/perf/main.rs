//! The performance figures of docs/performance.md, measured beside the peers in one run.
//!
//! ```text
//! eval "$(scripts/install-peers.sh)"              # yaml-language-server and check-jsonschema, pinned
//! cargo bench -p wb-lsp --bench perf               # every scenario
//! cargo bench -p wb-lsp --bench perf -- large      # some: memory, large, check, workspace, session
//! WB_BENCH_SAMPLES=100 cargo bench -p wb-lsp --bench perf
//! WB_BENCH_WB_LSP=/path/to/wb-lsp cargo bench -p wb-lsp --bench perf   # another build of wb-lsp
//! ```
//!
//! Every server is a real process over stdio (the release `wb-lsp`, and `yaml-language-server --stdio` with
//! our spec 1 schema for `workbench.yml`), so memory is the server's own (`VmHWM` in `/proc/PID/status`) and
//! latency includes the framing and the JSON. `check` runs are whole processes, timed from spawn to exit,
//! their peak RSS from `getrusage` of a child that waits for nothing else. Peers whose variable is unset are
//! reported as skipped. Nothing here asserts a time: the figures are printed, and the assertions are about
//! correctness (clean packages have no diagnostics, every expected answer arrives).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod floor;
mod scenarios;
mod stats;

use std::path::PathBuf;

fn main() {
    if let Some(code) = stats::rusage_child().or_else(floor::serve) {
        std::process::exit(code);
    }
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let runs = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    let samples: usize = std::env::var("WB_BENCH_SAMPLES").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let peers = scenarios::Peers::from_env();
    println!(
        "wb-lsp perf bench: {} CPUs, {samples} samples per latency figure; wb-lsp: {}; yaml-language-server: {}; \
         check-jsonschema: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        scenarios::wb_lsp().display(),
        peers.yaml_ls.as_ref().map_or("skipped (WB_PEER_YAML_LS unset)".to_owned(), |p| p.display().to_string()),
        peers
            .check_jsonschema
            .as_ref()
            .map_or("skipped (WB_PEER_CHECK_JSONSCHEMA unset)".to_owned(), |p| p.display().to_string()),
    );
    let temp = tempfile::tempdir().expect("temp dir");
    let scratch: PathBuf = temp.path().to_owned();
    if runs("memory") {
        scenarios::memory(&scratch, &peers);
    }
    if runs("large") {
        scenarios::large(&scratch, &peers, samples);
    }
    if runs("check") {
        scenarios::check(&scratch, &peers);
    }
    if runs("workspace") {
        scenarios::workspace(&scratch);
    }
    if runs("session") {
        scenarios::session(&scratch, samples);
    }
}
