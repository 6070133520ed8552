//! `wb-lsp mcp [--root DIR]`: the MCP server over stdio (`crate::mcp`). The root is resolved once; the
//! protocol's input and output are moved off file descriptors 0 and 1 (kept close-on-exec), which then point at
//! `/dev/null` and stderr, so no child process the engine starts and no stray print can read or write the
//! protocol.

use std::process::ExitCode;

use anyhow::Context;
use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use wb_manifest::ModelCatalog;

use crate::cli::McpArgs;

pub fn run(args: &McpArgs, catalog: &ModelCatalog) -> anyhow::Result<ExitCode> {
    let cwd = super::current_dir()?;
    let root = args.root.as_deref().map_or_else(|| cwd.clone(), |root| wb_manifest::absolute(root, &cwd));
    let root = root.canonicalize().with_context(|| format!("the root {} cannot be resolved", root.display()))?;
    if !root.is_dir() {
        anyhow::bail!("the root {} is not a directory", root.display());
    }
    let input = private_copy(std::io::stdin()).context("cannot take over standard input")?;
    let output = private_copy(std::io::stdout()).context("cannot take over standard output")?;
    let null = std::fs::File::open("/dev/null").context("cannot open /dev/null")?;
    nix::unistd::dup2_stdin(&null).context("cannot redirect standard input")?;
    nix::unistd::dup2_stdout(std::io::stderr()).context("cannot redirect standard output")?;
    eprintln!("wb-lsp mcp: serving {} over stdio", root.display());
    crate::mcp::serve(&root, catalog, std::io::BufReader::new(input), output)?;
    Ok(ExitCode::SUCCESS)
}

/// A close-on-exec duplicate of `fd`, as a file.
fn private_copy(fd: impl std::os::fd::AsFd) -> anyhow::Result<std::fs::File> {
    let copy = nix::unistd::dup(fd)?;
    fcntl(&copy, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok(std::fs::File::from(copy))
}
