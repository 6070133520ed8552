//! Model routing and authentication readiness (engine facts e): the allowed routes, in order, and the first
//! one with credentials the runner can use. No model request is made.

use serde::Serialize;
use wb_manifest::{Manifest, ModelCatalog};

use crate::bindings::Environment;
use crate::error::{EngineError, Result};

/// A resolved route: the canonical model and the provider serving it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModelRoute {
    /// The provider-neutral `lab/model`.
    pub canonical: String,
    pub provider: String,
    /// The provider's native model id.
    pub model: String,
    /// The runner-native provider name (Pi renames some).
    pub native_provider: String,
    /// `provider/model` as the runner receives it.
    pub route: String,
}

/// How the selected route authenticates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Authentication {
    pub ready: bool,
    pub model: String,
    pub provider: Option<String>,
    pub route: Option<String>,
    /// `environment` (a credential variable) or `runner` (the runner's own sign-in store).
    pub method: Option<String>,
    /// The credential variable that is set (its name only).
    pub variable: Option<String>,
    pub authenticated_providers: Vec<String>,
    pub instruction: Option<String>,
}

/// The providers each runner can use.
pub fn runner_supports(runner: &str, provider: &str) -> bool {
    match runner {
        "claude-code" => matches!(provider, "anthropic" | "openrouter" | "vercel"),
        _ => true,
    }
}

/// Pi's names for some catalog providers.
pub fn native_provider(runner: &str, provider: &str) -> String {
    if runner != "pi" {
        return provider.to_owned();
    }
    match provider {
        "vercel" => "vercel-ai-gateway",
        "togetherai" => "together",
        "fireworks-ai" => "fireworks",
        "kimi-for-coding" => "kimi-coding",
        other => other,
    }
    .to_owned()
}

/// The allowed routes in order: the manifest's, or every catalog provider serving the model.
pub fn allowed_routes(manifest: &Manifest, catalog: &ModelCatalog, runner: &str) -> Result<Vec<ModelRoute>> {
    let model = manifest.model.as_ref().ok_or_else(|| EngineError::message("model must be an object"))?;
    let id = model.id.value.as_str();
    let entry = catalog.model(id);
    let mut routes = Vec::new();
    if model.routes.is_empty() {
        if entry.is_none() {
            return Err(unknown_model(id));
        }
        for (provider, native) in catalog.default_routes(id) {
            routes.push((provider.to_owned(), native.to_owned()));
        }
    } else {
        let explicit = model.routes.iter().all(|r| r.model.is_some());
        if entry.is_none() && (!explicit || manifest.runner_config.is_none()) {
            return Err(unknown_model(id));
        }
        for route in &model.routes {
            let provider = route.provider.value.clone();
            let native =
                match (&route.model, entry) {
                    (Some(native), _) => native.value.clone(),
                    (None, Some(entry)) => {
                        if catalog.provider(&provider).is_none() {
                            return Err(EngineError::message(format!("Unknown model provider: {provider}")));
                        }
                        entry.providers.get(&provider).cloned().ok_or_else(|| {
                            EngineError::message(format!("Provider {provider} does not serve model {id}"))
                        })?
                    }
                    (None, None) => return Err(unknown_model(id)),
                };
            routes.push((provider, native));
        }
    }
    let routes: Vec<ModelRoute> = routes
        .into_iter()
        .filter(|(provider, _)| runner_supports(runner, provider))
        .map(|(provider, model)| {
            let native = native_provider(runner, &provider);
            ModelRoute {
                canonical: id.to_owned(),
                route: format!("{native}/{model}"),
                native_provider: native,
                provider,
                model,
            }
        })
        .collect();
    if routes.is_empty() {
        return Err(EngineError::message(format!("No provider route is available for model {id}")));
    }
    Ok(routes)
}

fn unknown_model(id: &str) -> EngineError {
    EngineError::message(format!(
        "Unknown model {id}. Unknown models require explicit route model IDs and packaged runner_config."
    ))
}

/// The runner's own sign-in store, if the user has one (its path is never printed with its contents).
fn runner_store(runner: &str, home: Option<&str>) -> Option<std::path::PathBuf> {
    let home = std::path::PathBuf::from(home?);
    let candidates = match runner {
        "opencode" => vec![home.join(".local/share/opencode/auth.json")],
        "claude-code" => vec![home.join(".claude/.credentials.json")],
        "pi" => vec![home.join(".pi/agent/auth.json")],
        _ => Vec::new(),
    };
    candidates.into_iter().find(|p| p.is_file())
}

/// Selects the first route with credentials, or reports that authentication is needed. `home` is the
/// inherited `HOME`, where the runner's own sign-in store lives. A provider absent from the catalog can only
/// be defined by the package's native runner configuration (`packaged` says whether it does, or may): such a
/// route is served with whatever credentials that configuration names (method `runner_config`).
pub fn select_route(
    routes: &[ModelRoute],
    catalog: &ModelCatalog,
    runner: &str,
    env: &Environment,
    home: Option<&str>,
    packaged: &dyn Fn(&str) -> bool,
) -> (Option<ModelRoute>, Authentication) {
    let canonical = routes.first().map(|r| r.canonical.clone()).unwrap_or_default();
    let credential = |provider: &str| -> Option<String> {
        catalog.provider(provider).and_then(|p| p.env.iter().find(|name| env.is_set(name)).cloned())
    };
    let authenticated: Vec<String> =
        routes.iter().filter(|r| credential(&r.provider).is_some()).map(|r| r.provider.clone()).collect();
    let ready = |route: &ModelRoute, method: &str, variable: Option<String>| Authentication {
        ready: true,
        model: canonical.clone(),
        provider: Some(route.provider.clone()),
        route: Some(format!("{}/{}", route.provider, route.model)),
        method: Some(method.to_owned()),
        variable,
        authenticated_providers: authenticated.clone(),
        instruction: None,
    };
    for route in routes {
        if catalog.provider(&route.provider).is_none() && packaged(&route.provider) {
            return (Some(route.clone()), ready(route, "runner_config", None));
        }
        if let Some(variable) = credential(&route.provider) {
            return (Some(route.clone()), ready(route, "environment", Some(variable)));
        }
    }
    if let (Some(route), Some(_)) = (routes.first(), runner_store(runner, home)) {
        return (Some(route.clone()), ready(route, "runner", None));
    }
    let variables: Vec<String> =
        routes.iter().filter_map(|r| catalog.provider(&r.provider)).flat_map(|p| p.env.iter().cloned()).collect();
    let undefined: Vec<&str> =
        routes.iter().filter(|r| catalog.provider(&r.provider).is_none()).map(|r| r.provider.as_str()).collect();
    let instruction = if variables.is_empty() && !undefined.is_empty() {
        format!("The packaged runner_config defines no provider {}", undefined.join(" or "))
    } else if variables.is_empty() {
        "Sign in with the runner's own login command".to_owned()
    } else {
        format!("Set {} (or sign in with the runner's own login command)", variables.join(" or "))
    };
    let auth = Authentication {
        ready: false,
        model: canonical.clone(),
        provider: None,
        route: None,
        method: None,
        variable: None,
        authenticated_providers: authenticated,
        instruction: Some(instruction),
    };
    (routes.first().cloned(), auth)
}

/// What a run started here would do for its model, in a few words: `→ openai/gpt-5.6-terra via
/// OPENAI_API_KEY`, `→ … (the runner's own login)`, or which variables would make a route ready. Credential
/// names only, never a value. `None` without a model or a runner, or when the manifest allows no route.
pub fn route_summary(
    manifest: &Manifest,
    catalog: &ModelCatalog,
    inherited: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    manifest.model.as_ref()?;
    let runner = manifest.runner.as_ref()?.value.as_str();
    let routes = allowed_routes(manifest, catalog, runner).ok()?;
    let name = manifest.name.as_ref().map(|n| n.value.as_str()).unwrap_or_default();
    let env = crate::bindings::bind_environment(manifest, name, catalog, &[], &[], inherited).ok()?;
    let home = inherited.get("HOME").map(String::as_str);
    let (_, authentication) = select_route(&routes, catalog, runner, &env, home, &|_| false);
    Some(match (authentication.ready, authentication.route, authentication.method.as_deref()) {
        (true, Some(route), Some("environment")) => {
            format!("→ {route} via {}", authentication.variable.unwrap_or_default())
        }
        (true, Some(route), Some("runner")) => format!("→ {route} (the runner's own login)"),
        (true, Some(route), _) => format!("→ {route}"),
        _ => {
            let mut names: Vec<String> = routes
                .iter()
                .filter_map(|route| catalog.provider(&route.provider))
                .flat_map(|provider| provider.env.iter().cloned())
                .collect();
            names.dedup();
            if names.is_empty() { "no route".to_owned() } else { format!("no credentials: set {}", names.join(" or ")) }
        }
    })
}
