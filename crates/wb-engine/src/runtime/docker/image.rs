//! Images of the docker runtime: a published reference (used when present, else pulled) or a build from the
//! package's Dockerfile, tagged by the content hash of its context so an unchanged package never rebuilds.

use bollard::query_parameters::{BuildImageOptionsBuilder, CreateImageOptionsBuilder};
use futures_util::StreamExt;
use serde::Serialize;

use super::context::context_archive;
use super::{Docker, LABEL, engine_error};
use crate::error::{EngineError, Result};
use crate::source::Package;

/// The image a runtime prepared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ImageInfo {
    /// The published reference, or the tag of a built image.
    pub reference: String,
    /// The engine's immutable image id (`sha256:...`).
    pub id: String,
    /// Built from the package's Dockerfile (else published).
    pub built: bool,
    /// Already present: nothing was pulled or built.
    pub cached: bool,
}

impl Docker {
    pub(super) fn resolve_published(&mut self, reference: &str) -> Result<ImageInfo> {
        if let Ok(inspect) = self.tokio.block_on(self.client.inspect_image(reference)) {
            return Ok(ImageInfo {
                reference: reference.to_owned(),
                id: inspect.id.unwrap_or_default(),
                built: false,
                cached: true,
            });
        }
        self.report(&format!("Pulling image {reference}"));
        let (image, tag) = split_reference(reference);
        let options = CreateImageOptionsBuilder::default().from_image(&image).tag(&tag).build();
        let client = self.client.clone();
        let pulled: std::result::Result<(), bollard::errors::Error> = self.tokio.block_on(async move {
            let mut stream = client.create_image(Some(options), None, None);
            while let Some(item) = stream.next().await {
                item?;
            }
            Ok(())
        });
        if let Err(error) = pulled {
            return Err(EngineError::Engine(format!(
                "Cannot pull Docker image {reference}: it is not present locally and the pull failed ({error})"
            )));
        }
        let inspect = self
            .tokio
            .block_on(self.client.inspect_image(reference))
            .map_err(|e| engine_error(&format!("Cannot inspect Docker image {reference}"), &e))?;
        Ok(ImageInfo {
            reference: reference.to_owned(),
            id: inspect.id.unwrap_or_default(),
            built: false,
            cached: false,
        })
    }

    pub(super) fn build(&mut self, package: &Package, dockerfile: &str, context: Option<&str>) -> Result<ImageInfo> {
        let dockerfile = wb_manifest::normalize(&package.package_dir.join(dockerfile));
        let context_dir = wb_manifest::normalize(&package.package_dir.join(context.unwrap_or(".")));
        let archive = context_archive(&package.root, &context_dir, &dockerfile)?;
        let tag = format!("wb-lsp/{}:{}", image_name(&package.name), &archive.hash[..24]);
        if let Ok(inspect) = self.tokio.block_on(self.client.inspect_image(&tag)) {
            self.report(&format!("Using cached image {tag}"));
            return Ok(ImageInfo { reference: tag, id: inspect.id.unwrap_or_default(), built: true, cached: true });
        }
        self.report(&format!("Building image {tag}"));
        let progress = self.progress.clone();
        let options = BuildImageOptionsBuilder::default()
            .dockerfile(&archive.dockerfile)
            .t(&tag)
            .rm(true)
            .forcerm(true)
            .labels(&self.labels().into_iter().filter(|(k, _)| k == LABEL).collect())
            .build();
        let client = self.client.clone();
        let body = bollard::body_full(archive.tar.into());
        let failed = |detail: String| {
            EngineError::Engine(format!("Cannot build the Docker image of {}: {detail}", package.name))
        };
        let built: Result<()> = self.tokio.block_on(async move {
            let mut stream = client.build_image(options, None, Some(body));
            let mut tail = String::new();
            while let Some(item) = stream.next().await {
                match item {
                    Ok(info) => {
                        if let Some(detail) = info.error_detail.and_then(|d| d.message) {
                            return Err(failed(detail));
                        }
                        if let Some(line) = info.stream.filter(|l| !l.trim().is_empty()) {
                            tail = line.trim().to_owned();
                            // Build steps (`Step 2/4 : COPY ...`) are the useful progress; other output is noise.
                            if let Some(progress) = progress.as_ref().filter(|_| tail.starts_with("Step ")) {
                                progress(&tail);
                            }
                        }
                    }
                    Err(error) => {
                        return Err(failed(if tail.is_empty() {
                            error.to_string()
                        } else {
                            format!("{error} ({tail})")
                        }));
                    }
                }
            }
            Ok(())
        });
        built?;
        let inspect = self
            .tokio
            .block_on(self.client.inspect_image(&tag))
            .map_err(|e| engine_error(&format!("Cannot inspect Docker image {tag}"), &e))?;
        Ok(ImageInfo { reference: tag, id: inspect.id.unwrap_or_default(), built: true, cached: false })
    }
}

/// `name[:tag]` or `name@digest` → (image, tag or digest); a missing tag is `latest` (an empty tag would pull
/// every tag).
fn split_reference(reference: &str) -> (String, String) {
    if let Some((image, digest)) = reference.split_once('@') {
        return (image.to_owned(), digest.to_owned());
    }
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[last_slash..].rfind(':') {
        Some(colon) => {
            let at = last_slash + colon;
            (reference[..at].to_owned(), reference[at + 1..].to_owned())
        }
        None => (reference.to_owned(), "latest".to_owned()),
    }
}

/// A package name as an image repository component (lower case, `[a-z0-9._-]`).
fn image_name(name: &str) -> String {
    let cleaned: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect();
    let cleaned = cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned();
    if cleaned.is_empty() { "workbench".to_owned() } else { cleaned }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        assert_eq!(split_reference("busybox"), ("busybox".into(), "latest".into()));
        assert_eq!(split_reference("ghcr.io/x/y:1"), ("ghcr.io/x/y".into(), "1".into()));
        assert_eq!(split_reference("localhost:5000/x"), ("localhost:5000/x".into(), "latest".into()));
        assert_eq!(split_reference("x/y@sha256:abc"), ("x/y".into(), "sha256:abc".into()));
        assert_eq!(image_name("My_Pkg!"), "my_pkg");
    }
}
