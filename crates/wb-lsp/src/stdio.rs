//! Standard input and output taken over by a protocol (the language server's, the MCP server's).
//!
//! The protocol gets close-on-exec copies of descriptors 0 and 1; descriptor 0 then reads `/dev/null` and
//! descriptor 1 writes to stderr (`/dev/null` when the client started the server without one). So no child
//! process that inherits them, and no stray print, can read or write the protocol. The copies are plain files: a
//! frame written with one `write_all` leaves in one `write` (the standard library's `Stdout` buffers by line,
//! and would send a frame's header and body apart).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;

use nix::fcntl::{FcntlArg, FdFlag, fcntl};

/// The protocol's ends.
pub struct Protocol {
    pub input: File,
    pub output: File,
}

/// Moves the protocol off descriptors 0 and 1 (see the module docs).
pub fn take_over() -> io::Result<Protocol> {
    // Descriptors 0 to 2 are open: the standard library's start-up opens `/dev/null` on any the client left
    // closed, so neither copy below can land on one of them.
    let input = private_copy(io::stdin())?;
    let output = private_copy(io::stdout())?;
    let null = File::open("/dev/null")?;
    nix::unistd::dup2_stdin(&null)?;
    nix::unistd::dup2_stdout(io::stderr())?;
    Ok(Protocol { input, output })
}

/// A close-on-exec duplicate of `fd`, as a file.
fn private_copy(fd: impl AsFd) -> io::Result<File> {
    let copy = nix::unistd::dup(fd)?;
    fcntl(&copy, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok(File::from(copy))
}
