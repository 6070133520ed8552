//! The engine's scratch [`World`]: a repository, a primary workspace, a home and the fake runners
//! (`crates/wb-engine/tests/fixtures/runners/`, see `fake_runner.py` there), used by the engine's tests and the
//! CLI's execution and outcome tests.
//!
//! The fake runners are Python 3 scripts. They are copied into the world's `bin/` with their `#!` line pointing
//! at the Python found here, so they start fast and do not depend on a version manager's shims.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::engine_fixtures;

/// The Python 3 interpreter the fake runners run with.
pub fn python() -> PathBuf {
    let system = PathBuf::from("/usr/bin/python3");
    if system.is_file() {
        return system;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|candidate| candidate.is_file())
        .expect("the fake runners need python3")
}

/// Whether this process can write into a directory whose permissions forbid it (root can).
pub fn permissions_are_bypassed(scratch: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = scratch.join("permission-probe");
    std::fs::create_dir_all(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let bypassed = std::fs::write(probe.join("x"), b"").is_ok();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = std::fs::remove_dir_all(&probe);
    bypassed
}

/// A scratch directory holding a repository (`repo/.workbenches/...`), the primary workspace (`work/`), a home
/// (`home/`, with `home/.workbench` as WORKBENCH_HOME), the fake runners (`bin/`), the fake runners' log
/// (`log/`) and a private temporary directory (`tmp/`, where the CLI stages).
pub struct World {
    _temp: tempfile::TempDir,
    pub root: PathBuf,
    pub repo: PathBuf,
    pub work: PathBuf,
    pub home: PathBuf,
    pub bin: PathBuf,
    pub log: PathBuf,
    pub tmp: PathBuf,
}

impl World {
    /// A fresh world on disk (no `Default`: making one creates directories and installs the fake runners).
    #[allow(clippy::new_without_default)]
    pub fn new() -> World {
        let temp = tempfile::Builder::new().prefix("wb-engine-test-").tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        let world = World {
            repo: root.join("repo"),
            work: root.join("work"),
            home: root.join("home"),
            bin: root.join("bin"),
            log: root.join("log"),
            tmp: root.join("tmp"),
            root,
            _temp: temp,
        };
        for dir in [&world.repo, &world.work, &world.home, &world.bin, &world.tmp] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::create_dir_all(world.repo.join(".workbenches")).unwrap();
        world.install_runners(&["opencode", "claude", "pi"]);
        world.reset_work();
        world
    }

    /// Puts the primary workspace back to what the `success.jsonl` streams expect.
    pub fn reset_work(&self) {
        let _ = std::fs::remove_dir_all(self.work.join("notes"));
        std::fs::write(self.work.join("README.md"), "# Old title\n\nThe ledger service.\n").unwrap();
        std::fs::write(self.work.join("obsolete.txt"), "remove me\n").unwrap();
    }

    /// Copies fake runners into `bin/` (executable, with the `#!` line pointing at Python).
    pub fn install_runners(&self, names: &[&str]) {
        use std::os::unix::fs::PermissionsExt;
        let source = engine_fixtures().join("runners");
        let shebang = format!("#!{}", python().display());
        let common = std::fs::read_to_string(source.join("fake_runner.py")).unwrap();
        std::fs::write(self.bin.join("fake_runner.py"), common).unwrap();
        for name in names {
            let text = std::fs::read_to_string(source.join(name)).unwrap();
            let (_, rest) = text.split_once('\n').unwrap();
            let target = self.bin.join(name);
            std::fs::write(&target, format!("{shebang}\n{rest}")).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// Replaces the fake runners in `bin/` with `shell_runner` (installed as `opencode`, `claude` and `pi`): the
    /// same replay and recording, but a shell tool call runs its command with `/bin/sh` in the working directory.
    pub fn install_shell_runners(&self) {
        use std::os::unix::fs::PermissionsExt;
        let source = engine_fixtures().join("runners");
        std::fs::copy(source.join("fake_shell.py"), self.bin.join("fake_shell.py")).unwrap();
        let text = std::fs::read_to_string(source.join("shell_runner")).unwrap();
        let (_, rest) = text.split_once('\n').unwrap();
        for name in ["opencode", "claude", "pi"] {
            let target = self.bin.join(name);
            std::fs::write(&target, format!("#!{}\n{rest}", python().display())).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// Writes `repo/.workbenches/<name>/workbench.yml` and its `instructions.md`.
    pub fn package(&self, name: &str, manifest: &str) -> PathBuf {
        let dir = self.repo.join(".workbenches").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("workbench.yml"), manifest).unwrap();
        std::fs::write(dir.join("instructions.md"), format!("Package instructions of {name}: keep changes small.\n"))
            .unwrap();
        dir
    }

    /// Writes a skill `repo/.workbenches/<package>/skills/<skill>/SKILL.md`.
    pub fn skill(&self, package: &str, skill: &str) {
        let dir = self.repo.join(".workbenches").join(package).join("skills").join(skill);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {skill}\ndescription: The {skill} skill.\n---\n\n# {skill}\n\nSteps.\n"),
        )
        .unwrap();
        std::fs::write(dir.join("reference.md"), "More detail.\n").unwrap();
    }

    /// Writes a file below the repository.
    pub fn file(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.repo.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A directory below the scratch root.
    pub fn dir(&self, relative: &str) -> PathBuf {
        let path = self.root.join(relative);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// `PATH` with the fake runners first.
    pub fn path_variable(&self) -> String {
        let system = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
        format!("{}:{system}", self.bin.display())
    }

    /// `program` started in the repository with the world's environment only: PATH (fake runners first), HOME,
    /// TMPDIR and WORKBENCH_HOME inside the world, and FAKE_RUNNER_LOG; no credential or runner sign-in of the
    /// machine takes part.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        let mut command = std::process::Command::new(program);
        command
            .current_dir(&self.repo)
            .env_clear()
            .env("PATH", self.path_variable())
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmp)
            .env("WORKBENCH_HOME", self.home.join(".workbench"))
            .env("FAKE_RUNNER_LOG", &self.log);
        command
    }

    /// The environment a run inherits: PATH, HOME and FAKE_RUNNER_LOG.
    pub fn inherited(&self) -> BTreeMap<String, String> {
        [
            ("PATH".to_owned(), self.path_variable()),
            ("HOME".to_owned(), self.home.display().to_string()),
            ("FAKE_RUNNER_LOG".to_owned(), self.log.display().to_string()),
        ]
        .into_iter()
        .collect()
    }

    /// What the fake runner recorded about its last start.
    pub fn invocation(&self) -> Value {
        let text = std::fs::read_to_string(self.log.join("invocation.json")).expect("the fake runner ran");
        serde_json::from_str(&text).unwrap()
    }

    /// The complete environment the fake runner received (values included).
    pub fn runner_environment(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(self.log.join("environment.json")).expect("the fake runner ran");
        serde_json::from_str(&text).unwrap()
    }

    /// A file of the staged configuration the fake runner copied (`log/staged/<VARIABLE>/<relative>`).
    pub fn staged(&self, variable: &str, relative: &str) -> String {
        let path = self.log.join("staged").join(variable).join(relative);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Checks the workspace edits every `success.jsonl` makes.
    pub fn assert_edited(&self) {
        assert_eq!(std::fs::read_to_string(self.work.join("notes/hello.txt")).unwrap(), "hello from the fake runner\n");
        assert_eq!(
            std::fs::read_to_string(self.work.join("README.md")).unwrap(),
            "# New title\n\nThe ledger service.\n"
        );
        assert!(!self.work.join("obsolete.txt").exists(), "obsolete.txt was removed");
    }

    /// Staging directories left in `tmp/` (the CLI stages there).
    pub fn leftover_stages(&self) -> Vec<String> {
        std::fs::read_dir(&self.tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("wb-lsp-stage-"))
            .collect()
    }
}
