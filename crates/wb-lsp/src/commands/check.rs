//! `wb-lsp check`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use wb_manifest::selector::check_source;
use wb_manifest::{ModelCatalog, OsFileSystem, PackageReport, absolute, check_path};

use crate::cli::{CheckArgs, ColorChoice, Format};
use crate::output;

pub fn run(args: &CheckArgs, catalog: &ModelCatalog) -> anyhow::Result<ExitCode> {
    let cwd = super::current_dir()?;
    let paths = if args.paths.is_empty() { vec![cwd.clone()] } else { args.paths.clone() };
    let reports: Vec<PackageReport> = paths
        .iter()
        .flat_map(|path| match path.to_str() {
            // `SOURCE#selector` picks packages as `run` does.
            Some(source) => check_source(&OsFileSystem, source, &cwd, catalog),
            None => check_path(&OsFileSystem, &absolute(path, &cwd), catalog),
        })
        .collect();
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
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
