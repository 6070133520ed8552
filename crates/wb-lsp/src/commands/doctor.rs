//! `wb-lsp doctor`: the machine's runners, Docker engine, provider credentials (names only) and outcome store.

use std::io::Write;

use wb_engine::doctor::{Doctor, doctor};
use wb_manifest::ModelCatalog;

use crate::cli::DoctorArgs;
use crate::exit::Exit;

pub fn run(args: &DoctorArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    // As a run would see it: this process's environment (only names and whether they are set are reported).
    let inherited = wb_engine::bindings::process_environment();
    let report = doctor(&inherited, catalog);
    let text = if args.json { format!("{}\n", serde_json::to_string_pretty(&report)?) } else { render(&report) };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(Exit::Success)
}

/// One line per finding, each naming what it is about.
fn render(report: &Doctor) -> String {
    let mut out = String::new();
    for runner in &report.runners {
        let verified = runner.verified_versions.join(", ");
        let line = match (&runner.path, &runner.version, runner.verified) {
            (Some(path), Some(version), Some(true)) => format!("{path}, version {version} (verified)"),
            (Some(path), Some(version), _) => format!("{path}, version {version} (not verified; verified: {verified})"),
            (Some(path), None, _) => format!("{path}, version unknown (verified: {verified})"),
            (None, _, _) => match &runner.in_cache {
                Some(cached) => format!(
                    "`{}` is not on PATH but in the runner cache: {cached} (put its directory on PATH)",
                    runner.executable
                ),
                None => format!(
                    "`{}` is not on PATH; install {} {verified}: {}",
                    runner.executable, runner.npm_package, runner.install
                ),
            },
        };
        out.push_str(&format!("runner {}: {}\n", runner.runner, crate::render::printable(&line)));
    }
    let docker = match (&report.docker.version, &report.docker.error) {
        (Some(version), _) => format!("reachable, version {version}"),
        (None, error) => format!("not reachable: {}", error.as_deref().unwrap_or_default()),
    };
    out.push_str(&format!("docker: {}\n", crate::render::printable(&docker)));
    for provider in &report.credentials {
        let variables: Vec<String> = provider
            .variables
            .iter()
            .map(|v| format!("{} {}", v.name, if v.set { "set" } else { "not set" }))
            .collect();
        out.push_str(&format!("credentials {}: {}\n", provider.provider, variables.join(", ")));
    }
    let store = &report.outcome_store;
    out.push_str(&format!(
        "outcome store: {}, {} of {}\n",
        crate::render::printable(&store.home),
        wb_outcomes::retention::human_size(store.bytes),
        wb_outcomes::retention::human_size(store.quota)
    ));
    if let Some(warning) = &store.warning {
        out.push_str(&format!("outcome store: warning: {warning}\n"));
    }
    out
}
