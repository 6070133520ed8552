//! The local runtime: the host itself. Access declarations are checked but cannot be enforced here.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Handle, Launched, Mount, Placement, Preflight, PreflightRequest, Preparation, Runtime, Setup};
use crate::adapters::Translation;
use crate::bindings::is_credential_name;
use crate::error::{EngineError, Result};
use crate::requirements::{HostFacts, RequirementReport, check_local};
use crate::source::Package;

#[derive(Default)]
pub struct Local {
    /// The engine's inherited environment, when it was given: the base of the runner's environment.
    inherited: Option<BTreeMap<String, String>>,
}

/// Finds an executable on a `PATH` value.
pub fn find_executable(name: &str, path_variable: Option<&str>) -> Option<PathBuf> {
    if name.contains('/') {
        let path = PathBuf::from(name);
        return is_executable(&path).then_some(path);
    }
    let path_variable = path_variable.map(str::to_owned).or_else(|| std::env::var("PATH").ok())?;
    std::env::split_paths(&path_variable).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

impl Local {
    /// The host runtime: the runner's environment is based on `setup.inherited` (this process's environment
    /// when that is empty).
    pub fn new(setup: Setup) -> Local {
        Local { inherited: (!setup.inherited.is_empty()).then_some(setup.inherited) }
    }

    /// What the runner inherits: the engine's inherited environment (this process's, when none was given)
    /// without the variables the translation removes, and without credentials the host happens to hold
    /// (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, ...): the runner gets those the translation sets, which are
    /// the ones the package declares and the selected route needs.
    fn base_environment(&self, translation: &Translation) -> Vec<(OsString, OsString)> {
        let inherited: Vec<(OsString, OsString)> = match &self.inherited {
            Some(env) => env.iter().map(|(name, value)| (name.into(), value.into())).collect(),
            None => std::env::vars_os().collect(),
        };
        inherited
            .into_iter()
            .filter(|(name, _)| {
                let name = name.to_string_lossy();
                let removed = translation.remove_env.iter().any(|removed| *removed == name);
                let undeclared_credential = is_credential_name(&name) && !translation.env.contains_key(name.as_ref());
                !removed && !undeclared_credential
            })
            .collect()
    }
}

impl Runtime for Local {
    fn name(&self) -> &'static str {
        "local"
    }

    fn placement(&self) -> Placement {
        Placement::Host
    }

    fn check_requirements(&self, package: &Package, allow_unchecked_gpu: bool) -> Result<RequirementReport> {
        check_local(&package.name, &package.manifest.requirements, &HostFacts::local(), allow_unchecked_gpu)
    }

    fn prepare(&mut self, package: &Package, _mounts: Vec<Mount>) -> Result<Preparation> {
        // Spec 0 lets `runtime: local` carry an image (spec 1 rejects it when parsing); the host cannot use one.
        if package.manifest.runtime("local").is_some_and(|runtime| runtime.image.is_some()) {
            return Err(EngineError::unsupported("image is not supported with the local runtime"));
        }
        Ok(Preparation::default())
    }

    fn preflight(&self, request: &PreflightRequest<'_>) -> Result<Preflight> {
        let path_variable = request.path_variable;
        let runner_path = find_executable(request.executable, path_variable)
            .ok_or_else(|| EngineError::missing(crate::adapters::runner_unavailable(request.runner, "PATH")))?;
        let mut found = Vec::new();
        for tool in request.tools {
            let path = find_executable(tool, path_variable)
                .ok_or_else(|| EngineError::missing(format!("Required CLI tool is unavailable: {tool}")))?;
            found.push((tool.clone(), path));
        }
        let runner_version = crate::adapters::installed_version(&runner_path);
        Ok(Preflight { runner: Some(runner_path), tools: found, runner_version })
    }

    fn launch(&mut self, translation: &Translation) -> Result<Launched> {
        let Some((program, args)) = translation.command.split_first() else {
            return Err(EngineError::message("The runner command is empty"));
        };
        // The executable preflight found (on the inherited PATH), not whatever this process's PATH finds.
        let path_variable = self.inherited.as_ref().and_then(|env| env.get("PATH")).map(String::as_str);
        let executable = find_executable(program, path_variable).unwrap_or_else(|| PathBuf::from(program));
        let mut command = Command::new(&executable);
        command
            .env_clear()
            .envs(self.base_environment(translation))
            .envs(&translation.env)
            .args(args)
            .current_dir(&translation.cwd)
            .stdin(if translation.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, so cancelling stops everything the runner started.
            command.process_group(0);
        }
        let child = command.spawn().map_err(|error| match error.kind() {
            io::ErrorKind::NotFound => EngineError::message(crate::adapters::executable_unavailable(
                program,
                &format!("{} cannot be started", executable.display()),
            )),
            _ => EngineError::io(format!("cannot start {program}"), error),
        })?;
        let mut launched = Launched::child(child);
        launched.server = translation.server.map(|port| std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        Ok(launched)
    }

    fn cancel(&mut self, launched: &mut Launched) {
        let Handle::Child(child) = &mut launched.handle else { return };
        #[cfg(unix)]
        {
            use nix::sys::signal::{Signal, killpg};
            use nix::unistd::Pid;
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGTERM);
                for _ in 0..20 {
                    if matches!(child.try_wait(), Ok(Some(_))) {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    fn cleanup(&mut self) -> Result<()> {
        Ok(())
    }
}
