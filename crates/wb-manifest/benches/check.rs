//! Parse and check throughput: a typical manifest (the example repository's `migrations` package) and a
//! generated large one (5,000 `env` entries, 500 MCP servers referencing them), each parsed alone and fully
//! checked (YAML, rules, package files on disk).
//!
//! Run with `cargo bench -p wb-manifest --bench check`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use wb_manifest::{ModelCatalog, OsFileSystem, check_manifest_bytes};

fn example_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/example-repo/.workbenches/migrations/workbench.yml")
        .canonicalize()
        .expect("example manifest")
}

/// A valid manifest with `vars` environment variables and `mcps` HTTP servers whose headers reference them.
/// Its relative paths resolve in the `migrations` package it is checked as.
fn generated_manifest(vars: usize, mcps: usize) -> String {
    let mut text = String::from(
        "spec: 1\nversion: 1.0.0\nname: generated\ndescription: A generated manifest.\nrunner: opencode\n\
         model:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nskills:\n  - ./skills/sql-migrations\n",
    );
    if mcps > 0 {
        text.push_str("mcps:\n");
        for i in 0..mcps {
            let a = (i * 7) % vars;
            let b = (i * 13 + 1) % vars;
            text.push_str(&format!(
                "  - name: server-{i}\n    transport: http\n    url: https://mcp.example.com/{i}\n    headers:\n      \
                 Authorization: Bearer ${{VAR_{a}}}\n      X-Extra: ${{VAR_{b}}}-suffix\n"
            ));
        }
    }
    text.push_str("env:\n");
    for i in 0..vars {
        text.push_str(&format!("  VAR_{i}:\n    required: {}\n", i % 2 == 0));
    }
    text.push_str("runtimes:\n  local: {}\n");
    text
}

fn bench(c: &mut Criterion) {
    let path = example_manifest();
    let catalog = ModelCatalog::embedded();
    let typical = std::fs::read(&path).expect("read example manifest");
    let large = generated_manifest(5_000, 500).into_bytes();
    let env_only = generated_manifest(5_000, 0).into_bytes();
    for (name, bytes) in [("typical", &typical), ("env5000_mcp500", &large), ("env5000", &env_only)] {
        let report = check_manifest_bytes(&OsFileSystem, &path, bytes, catalog);
        assert!(report.is_valid(), "{name} must be valid: {:?}", report.diagnostics);
    }

    let mut group = c.benchmark_group("typical");
    group.throughput(Throughput::Bytes(typical.len() as u64));
    group.bench_function("parse", |b| b.iter(|| wb_syntax::parse(black_box(&typical))));
    group.bench_function("parse+check", |b| {
        b.iter(|| check_manifest_bytes(&OsFileSystem, &path, black_box(&typical), catalog))
    });
    group.finish();

    let mut group = c.benchmark_group("large");
    group.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(1));
    for (name, bytes) in [("env5000_mcp500", &large), ("env5000", &env_only)] {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("{name}/parse"), |b| b.iter(|| wb_syntax::parse(black_box(bytes))));
        group.bench_function(format!("{name}/parse+check"), |b| {
            b.iter(|| check_manifest_bytes(&OsFileSystem, &path, black_box(bytes), catalog))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
