//! `build`: prepare each package's runtime (pull or build its image) without preflight or a runner.

use serde::Serialize;
use wb_manifest::{FileSystem, ModelCatalog};

use super::Options;
use super::prepare::{open_runtime, select_runtime};
use crate::error::Result;
use crate::source;

/// What `build` prepared for one package (`wb build`): the image, or why it could not.
#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    pub workbench: String,
    pub version: String,
    pub runtime: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::runtime::ImageInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Prepares each package's runtime (pull or build its image) without preflight or a runner.
pub fn build(fs: &dyn FileSystem, options: &Options, catalog: &ModelCatalog) -> Result<Vec<BuildReport>> {
    let packages =
        source::resolve(fs, &options.request.settings.source, &options.request.settings.cwd, catalog, false)?;
    let mut reports = Vec::new();
    for package in packages {
        let report = match package {
            Ok(package) => {
                let prepared = select_runtime(&package, options.request.settings.runtime.as_deref()).and_then(|name| {
                    let mut runtime = open_runtime(&name, options, false, false)?;
                    let image = runtime.prepare(&package, Vec::new())?.image;
                    runtime.cleanup()?;
                    Ok((name, image))
                });
                match prepared {
                    Ok((runtime, image)) => BuildReport {
                        workbench: package.name.clone(),
                        version: package.version.clone(),
                        runtime,
                        image,
                        error: None,
                    },
                    Err(error) => BuildReport {
                        workbench: package.name.clone(),
                        version: package.version.clone(),
                        runtime: options.request.settings.runtime.clone().unwrap_or_default(),
                        image: None,
                        error: Some(error.to_string()),
                    },
                }
            }
            Err(error) => BuildReport {
                workbench: String::new(),
                version: String::new(),
                runtime: options.request.settings.runtime.clone().unwrap_or_default(),
                image: None,
                error: Some(error.to_string()),
            },
        };
        reports.push(report);
    }
    Ok(reports)
}
