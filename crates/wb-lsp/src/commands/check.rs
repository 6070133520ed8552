//! `wb-lsp check` (and `check --fix`).

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use wb_manifest::selector::check_source_keeping;
use wb_manifest::{Detail, DiskCache, ModelCatalog, OsFileSystem, PackageReport, absolute, check_path_keeping};

use crate::cli::{CheckArgs, ColorChoice, Format};
use crate::exit::Exit;
use crate::output;
use crate::writes::{Roots, Unreached, cli_root};

pub fn run(args: &CheckArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let paths: Vec<PathBuf> = if args.paths.is_empty() { vec![cwd.clone()] } else { args.paths.clone() };
    let check = || -> Vec<PackageReport> {
        // One pass: where each path leads is asked of the disk once (a fix round starts a new pass). Each
        // report keeps only what the output shows.
        let disk = DiskCache::new();
        paths
            .iter()
            .flat_map(|path| match path.to_str() {
                // `SOURCE#selector` picks packages as `run` does.
                Some(source) => check_source_keeping(&disk, source, &cwd, catalog, Detail::Output),
                None => check_path_keeping(&disk, &absolute(path, &cwd), catalog, Detail::Output),
            })
            .collect()
    };
    let mut reports = check();
    if args.fix && fix(&reports, &cwd, catalog)? {
        reports = check();
    }
    let checked = output::Checked::new(&reports, &cwd);
    let text = match args.format {
        Format::Human => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
            output::human::render(&checked, color)
        }
        Format::Json => output::json::render(&checked),
        Format::Sarif => output::sarif::render(&checked),
        Format::Github => output::github::render(&checked),
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    let failed = checked.errors > 0 || (args.deny_warnings && checked.warnings > 0);
    Ok(if failed { Exit::Failure } else { Exit::Success })
}

/// Applies the safe fixes of every checked manifest, writing each changed file atomically through directory
/// handles opened from its repository (`crate::writes`: a manifest whose real path has left the repository
/// is not written, and named) and saying on stderr (stdout stays the report) what changed. Returns whether
/// any file changed.
fn fix(reports: &[PackageReport], cwd: &Path, catalog: &ModelCatalog) -> anyhow::Result<bool> {
    let mut changed = false;
    let mut roots = Roots::default();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for report in reports {
        let manifest = report.manifest_path.as_path();
        if !report.diagnostics.iter().any(|d| d.fixes.iter().any(|f| f.safe)) {
            continue;
        }
        let shown = output::relative(manifest, cwd);
        let found = match roots.manifest(manifest, &cli_root(manifest), "repository") {
            Ok(found) => found,
            Err(Unreached::Refused(reason)) => {
                eprintln!("not fixed {}: {}", super::printable(&shown), super::printable(&reason));
                continue;
            }
            // One that is not text is left alone.
            Err(Unreached::Unreadable(_)) => continue,
        };
        // One file reached by two paths is fixed once.
        if !seen.insert(found.real_path()) {
            continue;
        }
        let Some(fixed) = wb_manifest::safe_fixes::fix_manifest(&OsFileSystem, manifest, &found.text, catalog) else {
            continue;
        };
        found.write(&fixed.text).with_context(|| format!("cannot write {}", found.real_path().display()))?;
        changed = true;
        for title in &fixed.applied {
            eprintln!("fixed {}: {}", super::printable(&shown), super::printable(title));
        }
    }
    Ok(changed)
}
