//! Docker preflight: the runner and every declared tool looked up with `command -v` in a throwaway container
//! without network (and, in host engine mode, the engine reached through the mounted socket).

use std::collections::BTreeMap;
use std::path::PathBuf;

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{LogsOptionsBuilder, RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder};
use futures_util::StreamExt;

use super::super::Preflight;
use super::{Docker, SOCKET, engine_error};
use crate::error::{EngineError, Result};

/// Preflight's container handling on a shared `&Docker`.
pub(super) struct Scratch<'a> {
    pub(super) docker: &'a Docker,
    pub(super) created: Vec<String>,
}

const PREFLIGHT_SCRIPT: &str = r#"for name in "$@"; do
  if found=$(command -v "$name" 2>/dev/null); then printf 'found\t%s\t%s\n' "$name" "$found"; else printf 'missing\t%s\n' "$name"; fi
done
# The runner's version: the "version" of the package.json of the npm package its executable belongs to.
if runner=$(readlink -f "$(command -v "$1" 2>/dev/null)" 2>/dev/null) && [ -n "$runner" ]; then
  dir=${runner%/*}
  for _ in 1 2 3 4 5; do
    if [ -f "$dir/package.json" ]; then
      version=$(sed -n 's/^  "version": *"\([0-9A-Za-z.+-]*\)".*/\1/p' "$dir/package.json" | head -n 1)
      [ -n "$version" ] && printf 'version\t%s\n' "$version"
      break
    fi
    dir=${dir%/*}
  done
fi
if [ -n "$WB_LSP_CHECK_ENGINE" ]; then
  if docker version >/dev/null 2>&1; then echo 'engine	ok'; else echo 'engine	failed'; fi
fi"#;

impl Scratch<'_> {
    pub(super) fn preflight(&mut self, runner: &str, executable: &str, tools: &[String]) -> Result<Preflight> {
        let output = self.run_script(executable, tools)?;
        findings(self.docker, &output, runner, executable, tools)
    }

    /// Runs the lookup script in a throwaway container without network (in host engine mode, with the
    /// engine's socket) and returns its output: one `found`/`missing` line per name, and the engine's state.
    fn run_script(&mut self, executable: &str, tools: &[String]) -> Result<String> {
        let docker = self.docker;
        let image = docker.image_id()?;
        let mut names = vec![executable.to_owned()];
        names.extend(tools.iter().cloned());
        let mut env = Vec::new();
        let mut mounts = Vec::new();
        if docker.host_engine {
            if !names.iter().any(|n| n == "docker") {
                names.push("docker".to_owned());
            }
            env.push("WB_LSP_CHECK_ENGINE=1".to_owned());
            env.push(format!("DOCKER_HOST=unix://{SOCKET}"));
            mounts = docker.mounts_model()?.into_iter().filter(|m| m.target.as_deref() == Some(SOCKET)).collect();
        }
        let mut cmd = vec!["wb-lsp-preflight".to_owned()];
        cmd.extend(names);
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            entrypoint: Some(vec!["/bin/sh".to_owned(), "-c".to_owned(), PREFLIGHT_SCRIPT.to_owned()]),
            cmd: Some(cmd),
            env: Some(env),
            user: Some(Docker::user()),
            labels: Some(docker.labels()),
            network_disabled: Some(true),
            host_config: Some(docker.host_config(mounts, false)),
            ..Default::default()
        };
        let created = docker
            .tokio
            .block_on(docker.client.create_container(None, body))
            .map_err(|e| engine_error("Cannot create the Docker preflight container", &e))?;
        self.created.push(created.id.clone());
        let client = docker.client.clone();
        let container = created.id.clone();
        let outcome: std::result::Result<(i64, String), bollard::errors::Error> = docker.tokio.block_on(async move {
            client.start_container(&container, None).await?;
            let mut wait = client.wait_container(&container, Some(WaitContainerOptionsBuilder::default().build()));
            let code = match wait.next().await {
                Some(Ok(response)) => response.status_code,
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
                Some(Err(error)) => return Err(error),
                None => -1,
            };
            let mut logs =
                client.logs(&container, Some(LogsOptionsBuilder::default().stdout(true).stderr(false).build()));
            let mut out = Vec::new();
            while let Some(item) = logs.next().await {
                out.extend_from_slice(&item?.into_bytes());
            }
            Ok((code, String::from_utf8_lossy(&out).into_owned()))
        });
        let reference = docker.image.as_ref().map_or(image, |i| i.reference.clone());
        let (code, output) = outcome.map_err(|e| {
            let text = format!("Cannot run the preflight in Docker image {reference} (it needs /bin/sh): {e}");
            // The engine names the missing shell when the image has none (`exec: "/bin/sh": stat /bin/sh: no
            // such file or directory`): something the image lacks. Any other failure is the engine's.
            if e.to_string().contains("/bin/sh") { EngineError::missing(text) } else { EngineError::Engine(text) }
        })?;
        if code != 0 {
            return Err(EngineError::missing(format!(
                "Cannot run the preflight in Docker image {reference} (it needs /bin/sh): exit status {code}"
            )));
        }
        Ok(output)
    }
}

/// What the lookup script found: the runner's and every tool's path, or the first thing missing.
fn findings(docker: &Docker, output: &str, runner: &str, executable: &str, tools: &[String]) -> Result<Preflight> {
    let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut engine_ok = None;
    let mut runner_version = None;
    for line in output.lines() {
        let mut fields = line.split('\t');
        match (fields.next(), fields.next(), fields.next()) {
            (Some("found"), Some(name), Some(path)) => {
                found.insert(name.to_owned(), PathBuf::from(path));
            }
            (Some("engine"), Some(state), None) => engine_ok = Some(state == "ok"),
            (Some("version"), Some(version), None) if version.len() <= 64 => runner_version = Some(version.to_owned()),
            _ => {}
        }
    }
    let runner_path = found
        .get(executable)
        .cloned()
        .ok_or_else(|| EngineError::missing(crate::adapters::runner_unavailable(runner, "the image's PATH")))?;
    let mut located = Vec::new();
    for tool in tools {
        let path = found
            .get(tool)
            .cloned()
            .ok_or_else(|| EngineError::missing(format!("Required CLI tool is unavailable: {tool}")))?;
        located.push((tool.clone(), path));
    }
    if docker.host_engine {
        if !found.contains_key("docker") {
            return Err(EngineError::missing("Required CLI tool is unavailable: docker"));
        }
        if engine_ok != Some(true) {
            return Err(EngineError::missing(
                "The host Docker engine is not reachable from the container through /var/run/docker.sock",
            ));
        }
    }
    Ok(Preflight { runner: Some(runner_path), tools: located, runner_version })
}

impl Scratch<'_> {
    pub(super) fn remove_all(&mut self) {
        for id in std::mem::take(&mut self.created) {
            let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
            let _ = self.docker.tokio.block_on(self.docker.client.remove_container(&id, Some(options)));
        }
    }
}
