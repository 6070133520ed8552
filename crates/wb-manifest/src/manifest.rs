//! The checked manifest: the values the checks accepted, each with the range it was written at.
//!
//! A field the checks rejected is `None` (or left out of its list), so later stages (package checks, the
//! execution engine) work on whatever is valid; [`Manifest::is_complete`] says whether all of it was.

use wb_syntax::TextRange;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub range: TextRange,
}

impl<T> Spanned<T> {
    pub fn new(value: T, range: TextRange) -> Spanned<T> {
        Spanned { value, range }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    /// 0 or 1; for an unsupported `spec` this is the spec the checks assumed.
    pub spec: u8,
    pub version: Option<Spanned<String>>,
    pub name: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub runner: Option<Spanned<String>>,
    pub model: Option<ModelPolicy>,
    pub runner_config: Option<Spanned<String>>,
    pub instructions: Option<Spanned<String>>,
    pub skills: Vec<Spanned<String>>,
    pub tools: Vec<Spanned<String>>,
    pub mcps: Vec<Mcp>,
    pub env: Vec<EnvVar>,
    pub workspaces: Vec<Workspace>,
    pub requirements: Requirements,
    /// In declaration order; the first is the default. Spec 0's `runtime` becomes a one-entry list.
    pub runtimes: Vec<Runtime>,
    /// False when any error was reported for the manifest text.
    pub complete: bool,
}

impl Manifest {
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    pub fn env_var(&self, name: &str) -> Option<&EnvVar> {
        self.env.iter().find(|var| var.name.value == name)
    }

    pub fn runtime(&self, provider: &str) -> Option<&Runtime> {
        self.runtimes.iter().find(|runtime| runtime.provider.value == provider)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelPolicy {
    pub id: Spanned<String>,
    pub routes: Vec<Route>,
    /// True when `routes` was written (even if some routes were invalid).
    pub routes_declared: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub provider: Spanned<String>,
    pub model: Option<Spanned<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mcp {
    pub name: Spanned<String>,
    pub url: Spanned<String>,
    pub headers: Vec<(Spanned<String>, Spanned<String>)>,
    /// The range of the whole list item.
    pub range: TextRange,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvVar {
    pub name: Spanned<String>,
    pub required: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "read-only",
            Access::ReadWrite => "read-write",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    pub name: Spanned<String>,
    pub required: bool,
    pub access: Access,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requirements {
    pub os: Option<Vec<String>>,
    pub arch: Option<Vec<String>>,
    pub cpu: Option<u64>,
    pub memory_gb: Option<f64>,
    pub disk_gb: Option<f64>,
    pub gpu: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Image {
    Published(Spanned<String>),
    Build { build: Spanned<String>, context: Option<Spanned<String>> },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    pub provider: Spanned<String>,
    pub image: Option<Image>,
    /// `docker.engine.mode: host` was declared.
    pub host_engine: bool,
    pub class: Option<Spanned<String>>,
    /// The label checks use for this runtime's image (`runtimes.docker.image` in spec 1, `image` in spec 0).
    pub image_label: String,
}

impl Manifest {
    /// The spec-independent normal form (engine facts b.7): spec 0's `runtime`/`image`/`docker` appear as a
    /// one-entry `runtimes`, defaults are filled in, and positions are dropped. Two manifests that mean the
    /// same thing have equal normal forms.
    pub fn normalized(&self) -> serde_json::Value {
        use serde_json::{Map, Value, json};
        let text = |value: &Option<Spanned<String>>| value.as_ref().map_or(Value::Null, |v| json!(v.value));
        let list = |values: &[Spanned<String>]| Value::Array(values.iter().map(|v| json!(v.value)).collect());
        let model = self.model.as_ref().map_or(Value::Null, |model| {
            let routes: Vec<Value> = model
                .routes
                .iter()
                .map(|route| json!({"provider": route.provider.value, "model": route.model.as_ref().map(|m| &m.value)}))
                .collect();
            json!({"id": model.id.value, "routes": if model.routes_declared { Value::Array(routes) } else { Value::Null }})
        });
        let mcps: Vec<Value> = self
            .mcps
            .iter()
            .map(|mcp| {
                let headers: Map<String, Value> =
                    mcp.headers.iter().map(|(name, value)| (name.value.clone(), json!(value.value))).collect();
                json!({"name": mcp.name.value, "transport": "http", "url": mcp.url.value, "headers": headers})
            })
            .collect();
        let env: Map<String, Value> =
            self.env.iter().map(|var| (var.name.value.clone(), json!({"required": var.required}))).collect();
        let workspaces: Map<String, Value> = self
            .workspaces
            .iter()
            .map(|ws| (ws.name.value.clone(), json!({"required": ws.required, "access": ws.access.as_str()})))
            .collect();
        let requirements = json!({
            "os": self.requirements.os,
            "arch": self.requirements.arch,
            "cpu": self.requirements.cpu,
            "memory_gb": self.requirements.memory_gb,
            "disk_gb": self.requirements.disk_gb,
            "gpu": self.requirements.gpu,
        });
        let runtimes: Vec<Value> = self
            .runtimes
            .iter()
            .map(|runtime| {
                let image = match &runtime.image {
                    None => Value::Null,
                    Some(Image::Published(reference)) => json!(reference.value),
                    Some(Image::Build { build, context }) => {
                        json!({"build": build.value, "context": context.as_ref().map_or(".", |c| c.value.as_str())})
                    }
                };
                json!({
                    "provider": runtime.provider.value,
                    "image": image,
                    "host_engine": runtime.host_engine,
                    "class": runtime.class.as_ref().map(|c| &c.value),
                })
            })
            .collect();
        json!({
            "version": text(&self.version),
            "name": text(&self.name),
            "description": text(&self.description),
            "runner": text(&self.runner),
            "model": model,
            "runner_config": text(&self.runner_config),
            "instructions": text(&self.instructions),
            "skills": list(&self.skills),
            "tools": list(&self.tools),
            "mcps": mcps,
            "env": env,
            "workspaces": workspaces,
            "requirements": requirements,
            "runtimes": runtimes,
        })
    }
}
