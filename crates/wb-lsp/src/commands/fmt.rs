//! `wb-lsp fmt`: formats manifests in place with `wb_ide::format` (`--check` and `--diff` write nothing).
//! Exit 0 when every manifest is formatted (or was just formatted), 1 when `--check`/`--diff` found one to
//! change or a manifest could not be formatted (syntax errors, or a link out of its repository), 2 on usage and
//! I/O errors. Each manifest is read and written through directory handles opened from its repository
//! (`crate::writes`): one whose real path is outside it is neither read nor written, and named.

use wb_ide::{FormatError, FormatOptions};

use super::migrate::{display, manifests_under};
use super::printable;
use crate::cli::FmtArgs;
use crate::exit::Exit;
use crate::writes::{Roots, Unreached, cli_root};

pub fn run(args: &FmtArgs) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let manifests = manifests_under(&args.paths, &cwd)?;
    let options = FormatOptions { field_order: args.field_order };
    let write = !args.check && !args.diff;
    let (mut changed, mut failed) = (0usize, 0usize);
    let mut diffs = String::new();
    let mut roots = Roots::default();
    for manifest in &manifests {
        let name = display(manifest, &cwd);
        let found = match roots.manifest(manifest, &cli_root(manifest), "repository") {
            Ok(found) => found,
            Err(Unreached::Refused(reason)) => {
                eprintln!("error: {name}: not formatted: {}", printable(&reason));
                failed += 1;
                continue;
            }
            Err(Unreached::Unreadable(reason)) => anyhow::bail!("cannot read {name}: {}", printable(&reason)),
        };
        let text = &found.text;
        let formatted = match wb_ide::format(text, options) {
            Ok(formatted) => formatted,
            Err(FormatError::Syntax(_)) => {
                eprintln!("error: {name}: not formatted: it has syntax errors (see `wb-lsp check {name}`)");
                failed += 1;
                continue;
            }
            Err(error) => {
                eprintln!("error: {name}: {error}");
                failed += 1;
                continue;
            }
        };
        if formatted == *text {
            continue;
        }
        changed += 1;
        if write {
            found.write(&formatted).map_err(|error| anyhow::anyhow!("cannot write {name}: {error}"))?;
            eprintln!("formatted {name}");
        } else if args.diff {
            let diff = similar::TextDiff::from_lines(text, &formatted);
            diffs.push_str(
                &diff.unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")).to_string(),
            );
        } else {
            println!("would reformat {name}");
        }
    }
    print!("{diffs}");
    let unchanged = manifests.len() - changed - failed;
    let summary = match (write, changed) {
        (true, _) => format!("{changed} formatted, {unchanged} already formatted"),
        (false, 0) => format!("{unchanged} already formatted"),
        (false, _) => format!("{changed} would be reformatted, {unchanged} already formatted"),
    };
    if failed > 0 {
        eprintln!("{summary}, {failed} not formatted");
    } else {
        eprintln!("{summary}");
    }
    Ok(if failed > 0 || (!write && changed > 0) { Exit::Failure } else { Exit::Success })
}
