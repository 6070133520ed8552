//! Times `check` over a generated repository of many packages and prints packages per second.
//!
//! ```text
//! cargo run --release -p wb-manifest --example repo_check -- [PACKAGES] [--binary target/release/wb-lsp]
//! ```
//!
//! Each package is the perf bench's normal package (`wb_testsupport::corpus`): a valid spec 1 manifest with
//! instructions, two skills, a Dockerfile, an MCP server and `env` declarations, so every package check reads
//! files. The library's `check_path` is timed over the whole repository (5 runs, first one cold); with
//! `--binary`, `wb-lsp check --format json` is timed as a process too.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use wb_manifest::{ModelCatalog, OsFileSystem, check_path};
use wb_testsupport::{corpus, write_file};

fn generate(root: &Path, packages: usize) {
    write_file(&root.join("README.md"), "# generated\n");
    for i in 0..packages {
        corpus::normal_package(root, i);
    }
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("repo_check: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut packages = 1_000;
    let mut binary: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--binary" => binary = args.next().map(PathBuf::from),
            "--bench" => {}
            other => {
                packages = other.parse().map_err(|_| format!("PACKAGES must be a number, not {other:?}"))?;
            }
        }
    }
    let temp = tempfile::tempdir().map_err(|error| format!("cannot create a temporary directory: {error}"))?;
    let root = temp.path().join("repo");
    let started = Instant::now();
    generate(&root, packages);
    println!("generated {packages} packages in {:?}", started.elapsed());

    let catalog = ModelCatalog::embedded();
    let mut times = Vec::new();
    for run in 0..5 {
        let started = Instant::now();
        let reports = check_path(&OsFileSystem, &root, catalog);
        let elapsed = started.elapsed();
        assert_eq!(reports.len(), packages);
        let invalid: Vec<_> = reports.iter().filter(|r| !r.diagnostics.is_empty()).collect();
        assert!(invalid.is_empty(), "generated packages must be clean: {:?}", invalid[0].diagnostics);
        println!("library check_path run {run}: {elapsed:?}");
        times.push(elapsed);
    }
    let best = times.iter().min().copied().unwrap_or_default();
    let med = median(&mut times);
    let rate = |d: Duration| packages as f64 / d.as_secs_f64();
    println!(
        "library check_path: median {med:?} ({:.0} packages/s), best {best:?} ({:.0} packages/s)",
        rate(med),
        rate(best)
    );

    if let Some(binary) = binary {
        let mut times = Vec::new();
        for run in 0..5 {
            let started = Instant::now();
            let output = std::process::Command::new(&binary)
                .args(["check", "--format", "json"])
                .arg(&root)
                .output()
                .map_err(|error| format!("cannot run {}: {error}", binary.display()))?;
            let elapsed = started.elapsed();
            if !output.status.success() {
                return Err(format!("wb-lsp check failed: {}", String::from_utf8_lossy(&output.stderr)));
            }
            println!("{} check run {run}: {elapsed:?} ({} bytes of JSON)", binary.display(), output.stdout.len());
            times.push(elapsed);
        }
        let med = median(&mut times);
        println!("binary `wb-lsp check --format json`: median {med:?} ({:.0} packages/s)", rate(med));
    }
    Ok(())
}
