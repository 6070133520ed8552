//! `wb-lsp mcp [--root DIR]`: the MCP server over stdio (`crate::mcp`). The root is resolved once; the
//! protocol takes over standard input and output (`crate::stdio`).

use anyhow::Context;
use wb_manifest::ModelCatalog;

use crate::cli::McpArgs;
use crate::exit::Exit;

pub fn run(args: &McpArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let root = args.root.as_deref().map_or_else(|| cwd.clone(), |root| wb_manifest::absolute(root, &cwd));
    let root = root.canonicalize().with_context(|| format!("the root {} cannot be resolved", root.display()))?;
    if !root.is_dir() {
        anyhow::bail!("the root {} is not a directory", root.display());
    }
    let protocol = crate::stdio::take_over().context("cannot take over standard input and output")?;
    eprintln!("wb-lsp mcp: serving {} over stdio", root.display());
    let grants = crate::mcp::Grants { root: &root, remote_sandboxes: args.allow_remote_sandboxes };
    crate::mcp::serve(&grants, catalog, std::io::BufReader::new(protocol.input), protocol.output)?;
    Ok(Exit::Success)
}
