//! The runner's container: bind mounts with their declared access, the locked-down host configuration, creation
//! and removal, the launch with attached output, and a `Read` over the demultiplexed output.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;

use bollard::models::{ContainerCreateBody, HostConfig, MountType, PortBinding};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, RemoveContainerOptionsBuilder, StopContainerOptionsBuilder,
    WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::super::channel::{ChannelReader, ChannelWriter};
use super::super::{Handle, Launched, paths};
use super::{Docker, SOCKET, engine_error};
use crate::adapters::Translation;
use crate::error::{EngineError, Result};

impl Docker {
    pub(super) fn mounts_model(&self) -> Result<Vec<bollard::models::Mount>> {
        let git = match &self.git_guard {
            Ok(guard) => guard.mounts(),
            Err(error) => return Err(EngineError::message(error.to_string())),
        };
        // The engine mounts parents before children, so each read-only `.git` lands over its writable workspace.
        let mut mounts: Vec<bollard::models::Mount> = self
            .mounts
            .iter()
            .chain(git.iter())
            .map(|mount| bollard::models::Mount {
                target: Some(mount.target.display().to_string()),
                source: Some(mount.host.display().to_string()),
                typ: Some(MountType::BIND),
                read_only: Some(mount.read_only),
                ..Default::default()
            })
            .collect();
        if self.host_engine {
            mounts.push(bollard::models::Mount {
                target: Some(SOCKET.to_owned()),
                source: Some(self.host_socket()?.display().to_string()),
                typ: Some(MountType::BIND),
                read_only: Some(false),
                ..Default::default()
            });
        }
        Ok(mounts)
    }

    pub(super) fn host_config(&self, mounts: Vec<bollard::models::Mount>, network: bool) -> HostConfig {
        HostConfig {
            mounts: Some(mounts),
            tmpfs: Some(HashMap::from([
                ("/tmp".to_owned(), "rw,nosuid,nodev,mode=1777".to_owned()),
                (paths::STATE.to_owned(), "rw,nosuid,nodev,mode=1777".to_owned()),
            ])),
            readonly_rootfs: Some(true),
            network_mode: (!network).then(|| "none".to_owned()),
            nano_cpus: self.limits.nano_cpus,
            memory: self.limits.memory,
            init: Some(true),
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            // The runner runs as the user's uid:gid, without the user's supplementary groups: in host engine mode
            // it gets the socket's group, so a user who reaches the engine through the `docker` group can here too.
            group_add: self.socket_group().map(|gid| vec![gid.to_string()]),
            ..Default::default()
        }
    }

    /// The group of the host engine's socket, in host engine mode, when it is one of the user's own groups
    /// other than the primary one (root reaches every socket): never a group the user is not in.
    fn socket_group(&self) -> Option<u32> {
        use std::os::unix::fs::MetadataExt;
        if !self.host_engine {
            return None;
        }
        let gid = std::fs::metadata(self.host_socket().ok()?).ok()?.gid();
        let member = nix::unistd::getuid().is_root()
            || nix::unistd::getgroups().is_ok_and(|groups| groups.iter().any(|group| group.as_raw() == gid));
        (gid != nix::unistd::getgid().as_raw() && member).then_some(gid)
    }

    pub(super) fn image_id(&self) -> Result<String> {
        self.image
            .as_ref()
            .map(|image| image.id.clone())
            .ok_or_else(|| EngineError::message("The Docker image is not prepared"))
    }

    pub(super) fn create(&mut self, body: ContainerCreateBody) -> Result<String> {
        let created = self
            .tokio
            .block_on(self.client.create_container(None, body))
            .map_err(|e| engine_error("Cannot create the Docker container", &e))?;
        self.containers.push(created.id.clone());
        Ok(created.id)
    }

    pub(super) fn remove(&mut self, id: &str) -> Result<()> {
        let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
        let result = self.tokio.block_on(self.client.remove_container(id, Some(options)));
        match result {
            Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {
                self.containers.retain(|c| c != id);
                Ok(())
            }
            Err(error) => Err(engine_error(&format!("Cannot remove Docker container {id}"), &error)),
        }
    }

    /// Creates and starts the runner's container with its output attached.
    pub(super) fn launch_runner(&mut self, translation: &Translation) -> Result<Launched> {
        let Some((program, args)) = translation.command.split_first() else {
            return Err(EngineError::message("The runner command is empty"));
        };
        let interactive = translation.stdin.is_some();
        for mount in &self.mounts {
            if !mount.host.exists() {
                std::fs::create_dir_all(&mount.host)
                    .map_err(|e| EngineError::io(format!("cannot create {}", mount.host.display()), e))?;
            }
        }
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("HOME".to_owned(), paths::STATE.to_owned());
        env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
        if self.host_engine {
            env.insert("DOCKER_HOST".to_owned(), format!("unix://{SOCKET}"));
        }
        env.extend(translation.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut host_config = self.host_config(self.mounts_model()?, true);
        // A runner that is a server (OpenCode's) is published on a port of this host's loopback only, chosen by the
        // engine when the container starts; nothing else on this machine's network reaches it.
        let published = translation.server.map(|port| format!("{port}/tcp"));
        if let Some(port) = &published {
            let binding = PortBinding { host_ip: Some("127.0.0.1".to_owned()), host_port: Some(String::new()) };
            host_config.port_bindings = Some(HashMap::from([(port.clone(), Some(vec![binding]))]));
        }
        let body = ContainerCreateBody {
            image: Some(self.image_id()?),
            exposed_ports: published.clone().map(|port| vec![port]),
            entrypoint: Some(vec![program.clone()]),
            cmd: Some(args.to_vec()),
            env: Some(env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            working_dir: Some(translation.cwd.display().to_string()),
            user: Some(Self::user()),
            labels: Some(self.labels()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            // An interactive runner reads its stdin; closing the engine's end ends it (`stdin_once`).
            attach_stdin: Some(interactive),
            open_stdin: Some(interactive),
            stdin_once: Some(interactive),
            tty: Some(false),
            host_config: Some(host_config),
            ..Default::default()
        };
        let id = self.create(body)?;
        let client = self.client.clone();
        let container = id.clone();
        let attached = self.tokio.block_on(async move {
            let options = AttachContainerOptionsBuilder::default()
                .stdin(interactive)
                .stdout(true)
                .stderr(true)
                .stream(true)
                .logs(false)
                .build();
            let attached = client.attach_container(&container, Some(options)).await?;
            client.start_container(&container, None).await?;
            // Where the engine publishes the server, read once it started.
            let server = match &published {
                Some(port) => {
                    let inspected = client.inspect_container(&container, None).await?;
                    published_address(inspected.network_settings.and_then(|n| n.ports).as_ref(), port)
                }
                None => None,
            };
            Ok::<_, bollard::errors::Error>((attached, server))
        });
        let (attached, server) = match attached {
            Ok(attached) => attached,
            Err(error) => {
                let _ = self.remove(&id);
                let text = error.to_string();
                if text.contains("executable file not found") || text.contains("no such file or directory") {
                    return Err(EngineError::message(crate::adapters::executable_unavailable(
                        program,
                        &format!("no `{program}` executable on the image's PATH"),
                    )));
                }
                return Err(EngineError::Engine(format!("Cannot start the runner container: {text}")));
            }
        };
        // Bounded: a runner that writes faster than the engine reads waits, instead of filling the engine's memory.
        let (out_tx, out_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(OUTPUT_CHUNKS_AHEAD);
        let (err_tx, err_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(OUTPUT_CHUNKS_AHEAD);
        let (exit_tx, exit_rx) = mpsc::channel::<super::super::Exit>();
        let client = self.client.clone();
        let container = id.clone();
        let mut input = attached.input;
        let stdin = interactive.then(|| {
            let (in_tx, mut in_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(OUTPUT_CHUNKS_AHEAD);
            self.tokio.spawn(async move {
                use tokio::io::AsyncWriteExt;
                while let Some(chunk) = in_rx.recv().await {
                    if input.write_all(&chunk).await.is_err() || input.flush().await.is_err() {
                        break;
                    }
                }
                let _ = input.shutdown().await;
            });
            Box::new(ChannelWriter::new(in_tx)) as Box<dyn std::io::Write + Send>
        });
        self.tokio.spawn(async move {
            let mut output = attached.output;
            while let Some(item) = output.next().await {
                match item {
                    // A reader that is gone takes nothing more; the stream is still followed to its end.
                    Ok(bollard::container::LogOutput::StdOut { message }) => {
                        let _ = out_tx.send(message.to_vec()).await;
                    }
                    Ok(bollard::container::LogOutput::StdErr { message }) => {
                        let _ = err_tx.send(message.to_vec()).await;
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            drop(out_tx);
            drop(err_tx);
            let mut wait = client.wait_container(&container, Some(WaitContainerOptionsBuilder::default().build()));
            let exit = match wait.next().await {
                Some(Ok(response)) => super::super::Exit::code(Some(response.status_code)),
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => {
                    super::super::Exit::code(Some(code))
                }
                Some(Err(error)) => {
                    super::super::Exit::unknown(format!("the Docker engine stopped answering: {error}"))
                }
                None => super::super::Exit::unknown("the Docker engine ended the wait without an exit status"),
            };
            let _ = exit_tx.send(exit);
        });
        Ok(Launched {
            stdin,
            stdout: Some(Box::new(ChannelReader::new(out_rx))),
            stderr: Some(Box::new(ChannelReader::new(err_rx))),
            server,
            handle: Handle::Container { id, exit: exit_rx },
        })
    }

    /// Stops the runner's container (two seconds' grace) and removes it.
    pub(super) fn stop_runner(&mut self, launched: &mut Launched) {
        let Handle::Container { id, .. } = &launched.handle else { return };
        let id = id.clone();
        let options = StopContainerOptionsBuilder::default().t(2).build();
        let _ = self.tokio.block_on(self.client.stop_container(&id, Some(options)));
        let _ = self.remove(&id);
    }
}

/// Chunks of the container's output read ahead of the engine, per stream.
const OUTPUT_CHUNKS_AHEAD: usize = 64;

/// The loopback address of this host that `port` (`4096/tcp`) of a container is published on.
fn published_address(ports: Option<&bollard::models::PortMap>, port: &str) -> Option<std::net::SocketAddr> {
    let bindings = ports?.get(port)?.as_ref()?;
    bindings.iter().find_map(|binding| {
        let ip: std::net::IpAddr = binding.host_ip.as_deref()?.parse().ok()?;
        let host_port: u16 = binding.host_port.as_deref()?.parse().ok()?;
        ip.is_loopback().then(|| std::net::SocketAddr::new(ip, host_port))
    })
}
