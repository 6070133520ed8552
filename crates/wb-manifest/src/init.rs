//! `init`: the deterministic scaffold of a new package (engine facts, section i), plus the schema comment the
//! reference leaves out.

use crate::catalog::ModelCatalog;
use crate::fields::{RUNNERS, RUNTIME_PROVIDERS};
use crate::rules::{matches, slug};

/// The model `init` uses when none is given.
pub const DEFAULT_MODEL: &str = "openai/gpt-5.6-terra";

/// Where editors using yaml-language-server find the spec 1 schema.
pub const SCHEMA_URL_V1: &str = "https://workbenches.dev/schemas/v1/workbench.schema.json";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitOptions {
    pub name: String,
    pub runner: String,
    pub model: Option<String>,
    pub runtimes: Vec<String>,
    pub image: Option<String>,
}

/// The two files of a new package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scaffold {
    pub manifest: String,
    pub instructions: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InitError {
    #[error("Invalid Workbench name: {0}")]
    InvalidName(String),
    #[error("Unsupported runner: {0}")]
    UnsupportedRunner(String),
    #[error(
        "Model is not available in the model catalog: {0}. Configure unknown models directly with explicit routes and runner_config."
    )]
    UnknownModel(String),
    #[error("Unknown runtime: {0}. Known runtimes: local, docker, e2b, daytona")]
    UnknownRuntime(String),
    #[error("--runtimes must not repeat a runtime")]
    RepeatedRuntime,
    #[error("--image is required for the docker and e2b runtime")]
    ImageRequired,
    #[error("--image applies only to the docker and e2b runtimes")]
    ImageNotApplicable,
}

pub fn scaffold(options: &InitOptions, catalog: &ModelCatalog) -> Result<Scaffold, InitError> {
    let name = options.name.trim();
    if !matches(slug(), name) {
        return Err(InitError::InvalidName(options.name.clone()));
    }
    if !RUNNERS.contains(&options.runner.as_str()) {
        return Err(InitError::UnsupportedRunner(options.runner.clone()));
    }
    let model = options.model.as_deref().unwrap_or(DEFAULT_MODEL);
    if catalog.model(model).is_none() {
        return Err(InitError::UnknownModel(model.to_owned()));
    }
    let runtimes: Vec<&str> = if options.runtimes.is_empty() {
        vec!["local"]
    } else {
        options.runtimes.iter().map(|r| r.trim()).filter(|r| !r.is_empty()).collect()
    };
    for (index, runtime) in runtimes.iter().enumerate() {
        if !RUNTIME_PROVIDERS.contains(runtime) {
            return Err(InitError::UnknownRuntime((*runtime).to_owned()));
        }
        if runtimes[..index].contains(runtime) {
            return Err(InitError::RepeatedRuntime);
        }
    }
    let needs_image = runtimes.iter().any(|r| matches!(*r, "docker" | "e2b"));
    let image = options.image.as_deref().map(str::trim).filter(|i| !i.is_empty());
    match (needs_image, image) {
        (true, None) => return Err(InitError::ImageRequired),
        (false, Some(_)) => return Err(InitError::ImageNotApplicable),
        _ => {}
    }
    let mut manifest = format!(
        "# yaml-language-server: $schema={SCHEMA_URL_V1}\nspec: 1\nversion: 0.1.0\nname: {name}\ndescription: Repository-maintained expertise for {name} tasks.\nrunner: {runner}\nmodel:\n  id: {model}\ninstructions: ./instructions.md\nskills: []\ntools: []\nmcps: []\nenv: {{}}\nruntimes:\n",
        runner = options.runner,
    );
    for runtime in runtimes {
        match runtime {
            "docker" | "e2b" => {
                let image = image.unwrap_or_default();
                manifest.push_str(&format!("  {runtime}:\n    image: {}\n", yaml_string(image)));
            }
            "daytona" => manifest.push_str("  daytona:\n    class: linux\n"),
            _ => manifest.push_str("  local: {}\n"),
        }
    }
    let instructions = format!(
        "# {name}\n\nYou are working on {name} tasks in this repository. Follow its conventions and explain what you changed.\n"
    );
    Ok(Scaffold { manifest, instructions })
}

/// A YAML scalar for a string: plain when that reads back as the same string, else double-quoted.
fn yaml_string(value: &str) -> String {
    let plain_safe = !value.is_empty()
        && value.chars().all(|ch| ch.is_ascii_alphanumeric() || "./_-:@+".contains(ch))
        && !value.starts_with(['-', ':', '@'])
        && matches!(wb_syntax::parse_str(&format!("v: {value}")).root.as_ref().and_then(|r| r.as_mapping()).and_then(|m| m.get("v")).map(|n| &n.value), Some(wb_syntax::Value::String(s)) if s == value);
    if plain_safe { value.to_owned() } else { serde_json::Value::String(value.to_owned()).to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(name: &str, runtimes: &[&str], image: Option<&str>) -> InitOptions {
        InitOptions {
            name: name.to_owned(),
            runner: "opencode".to_owned(),
            model: None,
            runtimes: runtimes.iter().map(|r| (*r).to_owned()).collect(),
            image: image.map(str::to_owned),
        }
    }

    #[test]
    fn rules_and_texts() {
        let catalog = ModelCatalog::embedded();
        assert_eq!(scaffold(&options("Bad Name", &[], None), catalog), Err(InitError::InvalidName("Bad Name".into())));
        assert_eq!(scaffold(&options("x", &["docker"], None), catalog), Err(InitError::ImageRequired));
        assert_eq!(scaffold(&options("x", &["local"], Some("img")), catalog), Err(InitError::ImageNotApplicable));
        assert_eq!(scaffold(&options("x", &["local", "local"], None), catalog), Err(InitError::RepeatedRuntime));
        assert_eq!(
            scaffold(&options("x", &["k8s"], None), catalog).map_err(|e| e.to_string()),
            Err("Unknown runtime: k8s. Known runtimes: local, docker, e2b, daytona".into())
        );
        let mut unknown = options("x", &[], None);
        unknown.model = Some("acme/nope".into());
        assert!(matches!(scaffold(&unknown, catalog), Err(InitError::UnknownModel(_))));
    }

    #[test]
    fn writes_every_runtime_in_order() {
        let scaffold = scaffold(
            &options("demo", &["docker", "local", "daytona"], Some("ghcr.io/acme/demo:1")),
            ModelCatalog::embedded(),
        )
        .expect("scaffold");
        assert!(scaffold.manifest.contains(
            "runtimes:\n  docker:\n    image: ghcr.io/acme/demo:1\n  local: {}\n  daytona:\n    class: linux\n"
        ));
    }
}
