//! `wb-lsp migrate`: each manifest is read and written (`--write`) through directory handles opened from its
//! repository (`crate::writes`): one whose real path is outside it is neither read nor written, and named.

use std::path::{Path, PathBuf};

use wb_manifest::migrate::{MigrateError, checked_migration};
use wb_manifest::{ModelCatalog, OsFileSystem, Target, absolute, discover};

use super::printable;
use crate::cli::MigrateArgs;
use crate::exit::Exit;
use crate::writes::{Roots, Unreached, cli_root};

pub fn run(args: &MigrateArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let manifests = manifests_under(&args.paths, &cwd)?;
    let mut changed = 0;
    let mut failed = false;
    let mut diffs = String::new();
    let mut roots = Roots::default();
    for manifest in &manifests {
        let found = match roots.manifest(manifest, &cli_root(manifest), "repository") {
            Ok(found) => found,
            Err(Unreached::Refused(reason)) => {
                eprintln!("error: {}: not migrated: {}", display(manifest, &cwd), printable(&reason));
                failed = true;
                continue;
            }
            Err(Unreached::Unreadable(reason)) => {
                anyhow::bail!("cannot read {}: {}", manifest.display(), printable(&reason))
            }
        };
        let text = &found.text;
        let migrated = match checked_migration(&OsFileSystem, manifest, text, catalog) {
            Ok(Some(migration)) => migration.text,
            Ok(None) => continue,
            Err(error @ MigrateError::AddsErrors) => {
                eprintln!("error: {}: {error}", display(manifest, &cwd));
                failed = true;
                continue;
            }
            Err(error) => {
                eprintln!("error: {}: cannot migrate: {error}", display(manifest, &cwd));
                failed = true;
                continue;
            }
        };
        changed += 1;
        if args.write {
            found
                .write(&migrated)
                .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", display(manifest, &cwd)))?;
            eprintln!("migrated {}", display(manifest, &cwd));
        } else {
            let name = display(manifest, &cwd);
            let diff = similar::TextDiff::from_lines(text, &migrated);
            diffs.push_str(
                &diff.unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")).to_string(),
            );
        }
    }
    if !args.write && !args.check {
        print!("{diffs}");
    }
    if args.check && changed > 0 {
        eprintln!("{changed} manifest(s) would be migrated");
    }
    Ok(if failed || (args.check && changed > 0) { Exit::Failure } else { Exit::Success })
}

/// The manifests under the paths a command was given (the current directory when none), in order.
pub(super) fn manifests_under(paths: &[PathBuf], cwd: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let paths = if paths.is_empty() { vec![cwd.to_owned()] } else { paths.to_vec() };
    let mut manifests: Vec<PathBuf> = Vec::new();
    for path in &paths {
        match discover(&OsFileSystem, &absolute(path, cwd)) {
            Target::Manifest(manifest) => manifests.push(manifest),
            Target::Packages(found) => manifests.extend(found.into_iter().filter(|m| m.is_file())),
            Target::Missing(path) => anyhow::bail!("Workbench path does not exist: {}", path.display()),
            Target::Empty(path) => anyhow::bail!("No Workbenches found in {}", path.display()),
        }
    }
    Ok(manifests)
}

pub(super) fn display(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}
