//! The Daytona provider: sandboxes from a published image through Daytona's REST API (`api`) and each
//! sandbox's toolbox (`toolbox`), on reqwest + tokio, polling (no WebSocket). Daytona builds nothing: a
//! template is the image reference itself, a Dockerfile is refused, and `setup` is not applied (the image
//! must already provide what setup would add; preflight then names anything missing).
//!
//! Configuration comes from the [`ProviderEnv`] map only (never the process environment):
//! `DAYTONA_API_KEY`, `DAYTONA_API_URL` (default `https://app.daytona.io/api`) and `DAYTONA_TARGET`. A build
//! with the `test-hooks` feature (the tests') also reads `WB_DAYTONA_POLL_MS`, the first poll interval in
//! milliseconds.

mod api;
mod logs;
mod service;
mod toolbox;

pub use service::{DaytonaService, SERVICE};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::error::{EngineError, Result};
use crate::runtime::remote::http;
use crate::runtime::remote::provider::{
    Calls, PreparedTemplate, ProviderEnv, Sandbox, SandboxProvider, SandboxSpec, TemplateRequest, TemplateSource,
};

/// The default control-plane URL.
pub const DEFAULT_API_URL: &str = "https://app.daytona.io/api";

/// The missing-key text.
pub const MISSING_KEY: &str =
    "DAYTONA_API_KEY is required for the Daytona runtime. Set DAYTONA_API_KEY in the environment wb-lsp runs in.";

/// The Dockerfile refusal text.
pub const NO_DOCKERFILE: &str = "The daytona runtime creates sandboxes from a published image and cannot build a local Dockerfile. Set runtimes.daytona.image to a published image reference.";

/// Poll intervals and limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Waiting for `started`: the first interval, doubling up to `poll_max`.
    pub poll_first: Duration,
    pub poll_max: Duration,
    /// How long a sandbox may take to start.
    pub start_limit: Duration,
    /// Following a started command: the first interval (again after new output), doubling while idle.
    pub stream_first: Duration,
    pub stream_max: Duration,
    /// Every HTTP call's timeout (transfers and `process/execute` get more, by size and command timeout).
    pub request_timeout: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            poll_first: Duration::from_millis(300),
            poll_max: Duration::from_secs(1),
            start_limit: Duration::from_secs(600),
            stream_first: Duration::from_millis(300),
            stream_max: Duration::from_secs(2),
            request_timeout: Duration::from_secs(60),
        }
    }
}

impl Timing {
    /// Every poll interval from `first` (doubling to four times it); limits unchanged.
    pub fn polling(self, first: Duration) -> Timing {
        Timing { poll_first: first, poll_max: first * 4, stream_first: first, stream_max: first * 4, ..self }
    }
}

/// What a provider and its sandboxes share.
pub(crate) struct Shared {
    pub api: api::Api,
    pub handle: Handle,
    pub timing: Timing,
}

/// The Daytona runtime's provider.
pub struct Daytona {
    shared: Arc<Shared>,
    key: Option<String>,
    api_url: String,
    target: Option<String>,
    options: http::Options,
}

impl Daytona {
    /// A provider configured from `env`; calls run on `handle`. A missing key is reported by
    /// [`SandboxProvider::check_credentials`] (and by every call that needs it), not here.
    pub fn new(env: &ProviderEnv, handle: Handle) -> Result<Daytona> {
        let value = |name: &str| env.get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let key = value("DAYTONA_API_KEY");
        let api_url = value("DAYTONA_API_URL").unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        if url::Url::parse(&api_url).is_err() {
            return Err(EngineError::message(format!("DAYTONA_API_URL is not a URL: {api_url}")));
        }
        let timing = Timing::default();
        // The tests' build only: a shorter first poll interval.
        #[cfg(feature = "test-hooks")]
        let timing = match value("WB_DAYTONA_POLL_MS").and_then(|v| v.parse::<u64>().ok()) {
            Some(ms) => timing.polling(Duration::from_millis(ms.max(1))),
            None => timing,
        };
        let options = http::Options::for_provider(env);
        let api = build_api(key.clone(), &api_url, timing, options.clone())?;
        let shared = Arc::new(Shared { api, handle, timing });
        Ok(Daytona { shared, key, api_url, target: value("DAYTONA_TARGET"), options })
    }

    /// The same provider on a transport with these limits, clock and cancel flag (its request deadline stays
    /// [`Timing::request_timeout`]).
    pub fn with_options(self, options: http::Options) -> Result<Daytona> {
        Daytona { options, ..self }.rebuilt()
    }

    /// The same provider with other intervals and limits (tests use short ones).
    pub fn with_timing(self, timing: Timing) -> Result<Daytona> {
        let handle = self.shared.handle.clone();
        let api = build_api(self.key.clone(), &self.api_url, timing, self.options.clone())?;
        Ok(Daytona { shared: Arc::new(Shared { api, handle, timing }), ..self })
    }

    fn rebuilt(self) -> Result<Daytona> {
        let timing = self.shared.timing;
        self.with_timing(timing)
    }

    pub fn timing(&self) -> Timing {
        self.shared.timing
    }

    /// The create body for `spec`: the image as a one-line Dockerfile, the labels, the resources that are
    /// set (GiB), no auto-stop, the lease in minutes, the target when configured.
    pub fn create_body(&self, spec: &SandboxSpec) -> serde_json::Value {
        let mut body = serde_json::json!({
            "buildInfo": { "dockerfileContent": format!("FROM {}\n", spec.template) },
            "labels": spec.labels,
        });
        if let Some(cpu) = spec.resources.cpu {
            body["cpu"] = serde_json::Value::from(cpu);
        }
        if let Some(memory) = spec.resources.memory_gb {
            body["memory"] = number(memory);
        }
        if let Some(disk) = spec.resources.disk_gb {
            body["disk"] = number(disk);
        }
        body["autoStopInterval"] = serde_json::Value::from(0);
        body["ttlMinutes"] = serde_json::Value::from(spec.lease.as_secs().div_ceil(60).max(1));
        if let Some(target) = &self.target {
            body["target"] = serde_json::Value::from(target.as_str());
        }
        body
    }

    fn require_key(&self) -> Result<()> {
        if self.shared.api.transport.has_key() { Ok(()) } else { Err(EngineError::message(MISSING_KEY)) }
    }

    async fn reclaim_async(&self, labels: &BTreeMap<String, String>) -> Result<usize> {
        // Without labels every sandbox of the account would match: never.
        if labels.is_empty() {
            return Ok(0);
        }
        let api = &self.shared.api;
        let found = api.list(labels).await?;
        let mut destroyed = 0;
        let mut first_error = None;
        for dto in found {
            match api.delete(&dto.id).await {
                Ok(()) => destroyed += 1,
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error.into()),
            None => Ok(destroyed),
        }
    }

    async fn create_async(&self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>> {
        let api = &self.shared.api;
        let timing = self.shared.timing;
        let dto = match api.create(&self.create_body(spec)).await {
            Ok(dto) => dto,
            Err(error) => {
                // A create that timed out or failed on the service's side may still have made a sandbox.
                if error.uncertain() {
                    let reclaimed = self.reclaim_async(&spec.labels).await;
                    let note = match reclaimed {
                        Ok(0) | Err(_) => String::new(),
                        Ok(n) => format!(" (destroyed {n} sandbox(es) carrying this run's labels)"),
                    };
                    return Err(
                        http::HttpError { text: format!("{}{note}", error.text), failure: error.failure }.into()
                    );
                }
                return Err(error.into());
            }
        };
        let id = dto.id.clone();
        let started = match api.wait_started(dto, timing.poll_first, timing.poll_max, timing.start_limit).await {
            Ok(dto) => dto,
            Err(error) => {
                let _ = api.delete(&id).await;
                return Err(error);
            }
        };
        let toolbox = match started.toolbox_proxy_url.clone().filter(|u| !u.trim().is_empty()) {
            Some(url) => url,
            None => match api.toolbox_url(&id).await {
                Ok(url) => url,
                Err(error) => {
                    let _ = api.delete(&id).await;
                    return Err(error.into());
                }
            },
        };
        Ok(Box::new(toolbox::DaytonaSandbox::new(self.shared.clone(), &started, &toolbox)))
    }

    async fn reconnect_async(&self, id: &str) -> Result<Box<dyn Sandbox>> {
        let api = &self.shared.api;
        let dto = api.get(id).await?;
        if dto.id != id {
            return Err(EngineError::reply(format!("Daytona answered for sandbox {id} with sandbox {}", dto.id)));
        }
        if dto.state.as_deref() != Some("started") {
            return Err(EngineError::reply(format!(
                "Daytona sandbox {id} is {}, not started",
                dto.state.as_deref().unwrap_or("in an unknown state")
            )));
        }
        let toolbox = match dto.toolbox_proxy_url.clone().filter(|u| !u.trim().is_empty()) {
            Some(url) => url,
            None => api.toolbox_url(id).await?,
        };
        Ok(Box::new(toolbox::DaytonaSandbox::new(self.shared.clone(), &dto, &toolbox)))
    }
}

impl SandboxProvider for Daytona {
    fn watch_cancel(&mut self, flag: Option<Arc<std::sync::atomic::AtomicBool>>) {
        self.shared.api.transport.http().cancel().watch(flag);
    }

    fn check_credentials(&self) -> Result<()> {
        self.require_key()
    }

    fn calls(&self, request: &TemplateRequest) -> Calls {
        let template = match &request.source {
            TemplateSource::Image(image) if request.setup.is_some() => vec![
                format!("none: sandboxes are created from image {image}"),
                "setup is not applied: Daytona uses the published image as it is".to_owned(),
            ],
            TemplateSource::Image(image) => vec![format!("none: sandboxes are created from image {image}")],
            TemplateSource::Dockerfile { .. } => vec![format!("refused: {NO_DOCKERFILE}")],
        };
        let image = match &request.source {
            TemplateSource::Image(image) => image.as_str(),
            TemplateSource::Dockerfile { .. } => "<refused>",
        };
        Calls {
            template,
            create: vec![format!("POST /sandbox (image {image})"), "GET /sandbox/<id> until started".to_owned()],
            run: "POST <toolbox>/<id>/process/execute".to_owned(),
            upload: "POST <toolbox>/<id>/files/bulk-upload".to_owned(),
            start: vec![
                "POST <toolbox>/<id>/process/session, then POST …/process/session/<session>/exec".to_owned(),
                "GET <toolbox>/<id>/process/session/<session>/command/<cmd> and …/logs until it exits".to_owned(),
            ],
            download: "GET <toolbox>/<id>/files/download".to_owned(),
            destroy: "DELETE /sandbox/<id>".to_owned(),
        }
    }

    /// Daytona makes nothing: an image reference is the template (`cached`); a Dockerfile is refused; a
    /// `setup` is not applied (one progress line says so; preflight names any tool the image lacks).
    fn prepare_template(&mut self, request: &TemplateRequest, progress: &dyn Fn(&str)) -> Result<PreparedTemplate> {
        match &request.source {
            TemplateSource::Image(image) => {
                if request.setup.is_some() {
                    progress("Daytona uses the published image as it is; setup is not applied");
                }
                progress(&format!("Daytona will create sandboxes from image {image}"));
                Ok(PreparedTemplate { reference: image.clone(), image: image.clone(), cached: true })
            }
            TemplateSource::Dockerfile { .. } => Err(EngineError::unsupported(NO_DOCKERFILE)),
        }
    }

    fn create(&mut self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>> {
        self.require_key()?;
        self.shared.handle.block_on(self.create_async(spec))
    }

    fn find(&mut self, labels: &BTreeMap<String, String>) -> Result<Vec<String>> {
        self.require_key()?;
        if labels.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.shared.handle.block_on(self.shared.api.list(labels))?;
        Ok(found.into_iter().map(|dto| dto.id).collect())
    }

    fn reclaim(&mut self, labels: &BTreeMap<String, String>) -> Result<usize> {
        self.require_key()?;
        self.shared.handle.block_on(self.reclaim_async(labels))
    }

    fn reconnect(&mut self, id: &str, lease: Duration) -> Result<Box<dyn Sandbox>> {
        self.require_key()?;
        let sandbox = self.shared.handle.block_on(self.reconnect_async(id))?;
        sandbox.extend_lease(lease)?;
        Ok(sandbox)
    }

    fn destroy(&mut self, id: &str) -> Result<()> {
        self.require_key()?;
        self.shared.handle.block_on(self.shared.api.delete(id)).map_err(Into::into)
    }
}

fn build_api(key: Option<String>, url: &str, timing: Timing, mut options: http::Options) -> Result<api::Api> {
    options.limits.request = timing.request_timeout;
    Ok(api::Api::new(api::Transport::new(key, timing.request_timeout, options)?, url))
}

/// A GiB amount as JSON: an integer when it is one (`4`, as the SDK sends), else a decimal.
fn number(value: f64) -> serde_json::Value {
    if value.fract() == 0.0 && (0.0..1e15).contains(&value) {
        serde_json::Value::from(value as u64)
    } else {
        serde_json::Value::from(value)
    }
}
