//! The containers a dead process left: every container of this runtime carries [`super::LABEL`] and the identity
//! of the process that created it ([`super::OWNER_LABEL`]); one whose creator has ended is left over (its
//! supervisor was killed before it could remove it), and is removed here.

use std::collections::HashMap;

use bollard::models::ContainerSummaryStateEnum;
use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptionsBuilder};

use super::{LABEL, OWNER_LABEL};
use crate::error::{EngineError, Result};
use crate::leftovers::identity::Identity;

/// Removes (unless `dry`) the managed containers of `owner`, or without one, those whose creator has ended (and
/// the stopped ones that name no creator, made before containers did). Returns their names. Nothing is asked
/// of an engine that is not there: a Unix socket (`DOCKER_HOST`'s, else the default) that does not exist.
pub fn remove_leftovers(owner: Option<Identity>, dry: bool) -> Result<Vec<String>> {
    let host = std::env::var("DOCKER_HOST").ok().filter(|host| !host.is_empty());
    let socket = match &host {
        None => Some(super::SOCKET),
        Some(host) => host.strip_prefix("unix://"),
    };
    if socket.is_some_and(|socket| !std::path::Path::new(socket).exists()) {
        return Ok(Vec::new());
    }
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| EngineError::Engine(format!("cannot start the Docker client: {error}")))?;
    tokio.block_on(async {
        let client = bollard::Docker::connect_with_local_defaults()
            .map_err(|error| EngineError::Engine(format!("cannot reach the Docker engine: {error}")))?;
        let mut labels = vec![format!("{LABEL}=1")];
        if let Some(owner) = owner {
            labels.push(format!("{OWNER_LABEL}={}", owner.label()));
        }
        let filters = HashMap::from([("label".to_owned(), labels)]);
        let options = ListContainersOptionsBuilder::default().all(true).filters(&filters).build();
        let listed = client
            .list_containers(Some(options))
            .await
            .map_err(|error| EngineError::Engine(format!("cannot list the Docker engine's containers: {error}")))?;
        let mut removed = Vec::new();
        for container in listed {
            let Some(id) = container.id.clone() else { continue };
            let creator = container.labels.as_ref().and_then(|labels| labels.get(OWNER_LABEL));
            let left = owner.is_some()
                || match creator.and_then(|label| Identity::from_label(label)) {
                    // Without a start time the creator cannot be told from a process that took its pid.
                    Some(creator) => !creator.alive(),
                    None => creator.is_none() && container.state != Some(ContainerSummaryStateEnum::RUNNING),
                };
            if !left {
                continue;
            }
            let name = container
                .names
                .as_ref()
                .and_then(|names| names.first())
                .map_or_else(|| id.clone(), |name| name.trim_start_matches('/').to_owned());
            if !dry {
                let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
                match client.remove_container(&id, Some(options)).await {
                    Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {}
                    Err(error) => {
                        return Err(EngineError::Engine(format!("cannot remove Docker container {name}: {error}")));
                    }
                }
            }
            removed.push(name);
        }
        Ok(removed)
    })
}
