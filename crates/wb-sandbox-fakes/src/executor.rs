//! A fake sandbox's file system and processes: a private temporary directory entered as `/` with
//! bubblewrap. The host's `/usr` and `/etc` are bound read-only (so `bash`, `git`, `tar` and Node exist);
//! every other path (`/workspace`, `/outbox`, `/tmp`, `/home/user`, …) belongs to the sandbox, so commands
//! see exactly the absolute paths a real sandbox has and can write nowhere on the host outside the root.
//!
//! Files move through the sandbox too (`cat` inside it): a symlink a command planted resolves inside the
//! sandbox, never on the host.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// The sandbox's default user's home (as on E2B).
pub const HOME: &str = "/home/user";
/// The fake image's `PATH`: `/opt/wb/bin` first, where tests bind the runners an image would have installed.
/// Commands run with `bash -c`, not a login shell: Debian's `/etc/profile` (the host's, bound read-only) would
/// reset `PATH` to its own.
pub const PATH: &str = "/opt/wb/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One fake sandbox: its private root and the processes running in it.
#[derive(Clone)]
pub struct SandboxRoot {
    inner: Arc<Inner>,
}

struct Inner {
    root: tempfile::TempDir,
    read_only: Vec<(PathBuf, String)>,
    pids: Mutex<Vec<u32>>,
    dead: Mutex<bool>,
}

/// A process started in a sandbox.
pub struct Spawned {
    pub child: Child,
}

impl SandboxRoot {
    /// A fresh root. `read_only` adds host directories bound read-only at the given sandbox paths (a runner's
    /// installation, say).
    pub fn new(read_only: Vec<(PathBuf, String)>) -> io::Result<SandboxRoot> {
        let root = tempfile::Builder::new().prefix("wb-fake-sandbox-").tempdir()?;
        for dir in ["usr", "etc", "proc", "dev", "tmp", "home/user", "root"] {
            std::fs::create_dir_all(root.path().join(dir))?;
        }
        for (link, target) in [("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"), ("sbin", "usr/sbin")] {
            std::os::unix::fs::symlink(target, root.path().join(link))?;
        }
        for (_, target) in &read_only {
            std::fs::create_dir_all(root.path().join(target.trim_start_matches('/')))?;
        }
        Ok(SandboxRoot {
            inner: Arc::new(Inner { root, read_only, pids: Mutex::new(Vec::new()), dead: Mutex::new(false) }),
        })
    }

    /// The host directory that is the sandbox's `/` (tests inspect it; never write through it).
    pub fn path(&self) -> &Path {
        self.inner.root.path()
    }

    /// True once [`SandboxRoot::kill_all`] ended the sandbox: nothing more starts.
    pub fn is_dead(&self) -> bool {
        self.inner.dead.lock().map(|d| *d).unwrap_or(true)
    }

    /// The bubblewrap command that runs `bash -c script` inside the sandbox with exactly `env` (plus `PATH`
    /// and `HOME` when not given), in `cwd` (default `/home/user`).
    pub fn command(&self, script: &str, cwd: Option<&str>, env: &BTreeMap<String, String>) -> Command {
        let mut command = Command::new("bwrap");
        command.arg("--bind").arg(self.path()).arg("/");
        command.args(["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]);
        for (host, target) in &self.inner.read_only {
            command.arg("--ro-bind").arg(host).arg(target);
        }
        command.args(["--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--die-with-parent", "--clearenv"]);
        let path = env.get("PATH").cloned().unwrap_or_else(|| PATH.to_owned());
        command.args(["--setenv", "PATH", &path]);
        if !env.contains_key("HOME") {
            command.args(["--setenv", "HOME", HOME]);
        }
        for (name, value) in env.iter().filter(|(name, _)| name.as_str() != "PATH") {
            command.arg("--setenv").arg(name).arg(value);
        }
        command.args(["--chdir", cwd.unwrap_or(HOME), "/bin/bash", "-c", script]);
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        command
    }

    /// Starts `script` (stdin piped when `stdin`), tracked so [`SandboxRoot::kill_all`] can end it.
    pub fn spawn(
        &self,
        script: &str,
        cwd: Option<&str>,
        env: &BTreeMap<String, String>,
        stdin: bool,
    ) -> io::Result<Spawned> {
        if self.is_dead() {
            return Err(io::Error::other("the sandbox is gone"));
        }
        let mut command = self.command(script, cwd, env);
        if stdin {
            command.stdin(Stdio::piped());
        }
        let child = command.spawn()?;
        if let (Some(pid), Ok(mut pids)) = (child.id(), self.inner.pids.lock()) {
            pids.push(pid);
        }
        Ok(Spawned { child })
    }

    /// Runs `script` to completion: (exit code, stdout, stderr). A signal gives exit code -1.
    pub async fn run(
        &self,
        script: &str,
        cwd: Option<&str>,
        env: &BTreeMap<String, String>,
    ) -> io::Result<(i32, Vec<u8>, Vec<u8>)> {
        let spawned = self.spawn(script, cwd, env, false)?;
        let output = spawned.child.wait_with_output().await?;
        Ok((output.status.code().unwrap_or(-1), output.stdout, output.stderr))
    }

    /// The bytes of the sandbox file at `path`; `None` when it does not exist or is not a regular file.
    pub async fn read_file(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
        let script = format!("test -f {0} && exec cat -- {0}", quote(path));
        let (code, stdout, _) = self.run(&script, Some("/"), &BTreeMap::new()).await?;
        Ok((code == 0).then_some(stdout))
    }

    /// Writes `bytes` to the sandbox path `path`, creating its parent directories (as envd does).
    pub async fn write_file(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let parent = Path::new(path).parent().map_or_else(|| "/".to_owned(), |p| p.display().to_string());
        let script = format!("mkdir -p -- {} && exec cat > {}", quote(&parent), quote(path));
        let mut spawned = self.spawn(&script, Some("/"), &BTreeMap::new(), true)?;
        if let Some(mut stdin) = spawned.child.stdin.take() {
            stdin.write_all(bytes).await?;
            stdin.shutdown().await?;
        }
        let output = spawned.child.wait_with_output().await?;
        if output.status.success() {
            Ok(())
        } else {
            Err(io::Error::other(String::from_utf8_lossy(&output.stderr).trim().to_owned()))
        }
    }

    /// The size of the regular file at `path`, or `None`.
    pub async fn file_size(&self, path: &str) -> io::Result<Option<u64>> {
        let script = format!("test -f {0} && stat -c %s -- {0}", quote(path));
        let (code, stdout, _) = self.run(&script, Some("/"), &BTreeMap::new()).await?;
        Ok(if code == 0 { String::from_utf8_lossy(&stdout).trim().parse().ok() } else { None })
    }

    /// Ends every process of the sandbox (SIGKILL to each bubblewrap; its PID namespace takes the rest) and
    /// refuses new ones: the sandbox is gone.
    pub fn kill_all(&self) {
        if let Ok(mut dead) = self.inner.dead.lock() {
            *dead = true;
        }
        let pids = self.inner.pids.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
        for pid in pids {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
        }
    }

    /// Kills one process started by [`SandboxRoot::spawn`] (its bubblewrap pid).
    pub fn kill(&self, pid: u32) {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// `'…'` shell quoting.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commands_see_the_sandbox_root_and_files_move_through_it() -> io::Result<()> {
        let sandbox = SandboxRoot::new(Vec::new())?;
        sandbox.write_file("/workspace/a b/file.txt", b"hello").await?;
        let (code, stdout, _) =
            sandbox.run("cat 'a b/file.txt'; echo; pwd; echo $HOME", Some("/workspace"), &BTreeMap::new()).await?;
        assert_eq!(code, 0);
        assert_eq!(String::from_utf8_lossy(&stdout), "hello\n/workspace\n/home/user\n");
        assert!(sandbox.path().join("workspace/a b/file.txt").is_file());
        // A link planted inside resolves inside: the host's /etc/hostname is not what it reads.
        sandbox.run("ln -s /nonexistent/secret /tmp/link", None, &BTreeMap::new()).await?;
        assert_eq!(sandbox.read_file("/tmp/link").await?, None);
        assert_eq!(sandbox.file_size("/workspace/a b/file.txt").await?, Some(5));
        let (code, _, _) = sandbox.run("touch /usr/x", None, &BTreeMap::new()).await?;
        assert_ne!(code, 0, "the host's /usr is read-only inside");
        Ok(())
    }
}
