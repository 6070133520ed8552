//! The E2B runtime's provider: templates, sandboxes, commands and files on E2B, over our own thin client
//! (reqwest + tokio + serde; no SDK). Configuration comes only from the [`ProviderEnv`] it is given:
//! `E2B_API_KEY` (sent only as `X-API-KEY` to the control plane, never to a sandbox, never in a text),
//! `E2B_API_URL` (default `https://api.{E2B_DOMAIN or e2b.app}`), `E2B_DOMAIN`, `E2B_SANDBOX_URL` (envd
//! override). Wire facts: `docs` of the reference (`sandboxes/README.md` §1, §3), checked against the official
//! SDK `e2b@2.51.0` (`wb-sandbox-fakes/tests/official_sdks.rs`).
//!
//! - `api`: the REST control plane (create, info, kill, list; error texts), on the shared transport
//!   (`remote::http`: deadlines, bounded replies, cancellation, no redirects, one retry policy).
//! - `template`: template names, the Dockerfile subset, files hashes, builds.
//! - `connect`: the Connect JSON codec envd speaks.
//! - `envd`: the client of envd, the daemon in the sandbox (process streams, headers); `follow`: a process
//!   stream followed to its end.
//! - `sandbox`: the [`Sandbox`] implementation (commands, files) on it.

pub mod api;
pub mod connect;
pub mod copy;
pub mod envd;
mod follow;
pub mod sandbox;
pub mod template;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::error::{EngineError, Result};
use crate::requirements::RequirementReport;
use crate::runtime::remote::http::{self, Transport};
use crate::runtime::remote::provider::{
    Calls, PreparedTemplate, ProviderEnv, Sandbox, SandboxProvider, SandboxSpec, Service, TemplateRequest,
    TemplateSource,
};
use crate::source::Package;

/// The text when `E2B_API_KEY` is missing.
pub const MISSING_KEY: &str =
    "E2B_API_KEY is required for the E2B runtime. Set E2B_API_KEY in the environment wb-lsp runs in.";
/// The oldest envd this client talks to (the SDK refuses older ones too). Uploads to envd before 0.5.7 use
/// multipart (`envd::OCTET_STREAM_UPLOAD`).
const MIN_ENVD: (u64, u64, u64) = (0, 1, 0);
/// The default domain.
const DEFAULT_DOMAIN: &str = "e2b.app";

/// What the remote runtime asks of E2B as a kind of service: its key, and its policy (Linux sandboxes without
/// a GPU; a template carries its own resources, so nothing is requested at create).
pub struct E2bService;

/// The registry's entry for E2B.
pub static SERVICE: E2bService = E2bService;

impl Service for E2bService {
    fn name(&self) -> &'static str {
        "e2b"
    }

    fn title(&self) -> &'static str {
        "E2B"
    }

    fn credential_keys(&self) -> &'static [&'static str] {
        &["E2B_API_KEY"]
    }

    fn judge_requirements(
        &self,
        package: &Package,
    ) -> std::result::Result<RequirementReport, crate::requirements::Unmet> {
        crate::runtime::remote::requirements::linux_without_gpu(self.name(), &package.manifest.requirements)
    }

    fn keeps_recovery(&self) -> bool {
        true
    }

    fn connect(&self, env: &ProviderEnv, handle: Handle) -> Result<Box<dyn SandboxProvider>> {
        Ok(Box::new(E2b::new(env, handle)?))
    }
}

/// The E2B provider.
pub struct E2b {
    api: api::Api,
    key_present: bool,
    domain: String,
    sandbox_url: Option<String>,
    handle: Handle,
    transport: Transport,
    poll: Duration,
}

impl E2b {
    /// Reads `E2B_API_KEY`, `E2B_API_URL`, `E2B_DOMAIN` and `E2B_SANDBOX_URL` from `env` (a missing key is
    /// reported by [`SandboxProvider::check_credentials`], not here). `handle` drives the HTTP client.
    pub fn new(env: &ProviderEnv, handle: Handle) -> Result<E2b> {
        E2b::with_options(env, handle, http::Options::for_provider(env))
    }

    /// [`E2b::new`] with the transport's limits, clock and cancel flag given (tests shorten and record them).
    pub fn with_options(env: &ProviderEnv, handle: Handle, options: http::Options) -> Result<E2b> {
        let value = |name: &str| env.get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let key = value("E2B_API_KEY");
        let domain = value("E2B_DOMAIN").unwrap_or_else(|| DEFAULT_DOMAIN.to_owned());
        let base = value("E2B_API_URL").unwrap_or_else(|| format!("https://api.{domain}"));
        let transport = Transport::new("E2B", options)?;
        let api = api::Api::new(&transport, &base, key.as_deref().unwrap_or(""));
        Ok(E2b {
            api,
            key_present: key.is_some(),
            domain,
            sandbox_url: value("E2B_SANDBOX_URL"),
            handle,
            transport,
            poll: Duration::from_millis(500),
        })
    }

    /// How often a template build's status is polled (default 500 ms).
    pub fn set_poll_interval(&mut self, poll: Duration) {
        self.poll = poll;
    }

    /// The template name a request gets (reads the Dockerfile and its copied files).
    pub fn template_name(request: &TemplateRequest) -> Result<String> {
        let plan = template::plan(request)?;
        Ok(template::template_name(request, &plan))
    }

    fn sandbox(&self, created: &api::Created) -> sandbox::E2bSandbox {
        let domain = created.domain.clone().unwrap_or_else(|| self.domain.clone());
        let base = envd::envd_url(self.sandbox_url.as_deref(), &domain, &created.sandbox_id);
        sandbox::E2bSandbox {
            envd: Arc::new(envd::Envd::new(
                &created.sandbox_id,
                base,
                created.envd_access_token.clone(),
                &created.envd_version,
                &self.transport,
            )),
            api: self.api.clone(),
            handle: self.handle.clone(),
            destroyed: AtomicBool::new(false),
        }
    }
}

impl SandboxProvider for E2b {
    fn watch_cancel(&mut self, flag: Option<Arc<AtomicBool>>) {
        self.transport.cancel().watch(flag);
    }

    fn check_credentials(&self) -> Result<()> {
        if self.key_present { Ok(()) } else { Err(EngineError::message(MISSING_KEY)) }
    }

    fn calls(&self, request: &TemplateRequest) -> Calls {
        let name = match E2b::template_name(request) {
            Ok(name) => name,
            Err(error) => {
                return Calls { template: vec![format!("E2B template cannot be named: {error}")], ..Calls::default() };
            }
        };
        let copies = match &request.source {
            TemplateSource::Image(_) => 0,
            TemplateSource::Dockerfile { .. } => {
                template::plan(request).map(|p| p.steps.iter().filter(|s| s.kind == "COPY").count()).unwrap_or(0)
            }
        };
        let mut template = vec![
            format!("GET /templates/aliases/{name}"),
            format!("POST /v3/templates {{\"name\":\"{name}\"}} (when the template does not exist)"),
        ];
        for _ in 0..copies {
            template.push("GET /templates/{templateID}/files/{filesHash}, then PUT the files when absent".to_owned());
        }
        template.push("POST /v2/templates/{templateID}/builds/{buildID}, then GET …/status until ready".to_owned());
        Calls {
            template,
            create: vec![format!("POST /v2/sandboxes (template {name})"), "GET /sandboxes/{sandboxID}".to_owned()],
            run: "POST /process.Process/Start".to_owned(),
            upload: "POST /files".to_owned(),
            start: vec!["POST /process.Process/Start (streamed)".to_owned()],
            download: "GET /files".to_owned(),
            destroy: "DELETE /sandboxes/{sandboxID}".to_owned(),
        }
    }

    fn prepare_template(&mut self, request: &TemplateRequest, progress: &dyn Fn(&str)) -> Result<PreparedTemplate> {
        self.check_credentials()?;
        self.handle.block_on(template::prepare(&self.api, request, self.poll, progress))
    }

    fn create(&mut self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>> {
        self.check_credentials()?;
        let created = self.handle.block_on(self.api.create(&spec.template, &spec.labels, spec.lease))?;
        if !api::version_at_least(&created.envd_version, MIN_ENVD) {
            let _ = self.handle.block_on(self.api.kill(&created.sandbox_id));
            return Err(EngineError::message(format!(
                "E2B sandbox {} runs envd {:?}, older than 0.1.0; rebuild the template with a current E2B",
                created.sandbox_id, created.envd_version
            )));
        }
        Ok(Box::new(self.sandbox(&created)))
    }

    fn find(&mut self, labels: &BTreeMap<String, String>) -> Result<Vec<String>> {
        self.check_credentials()?;
        if labels.is_empty() {
            return Ok(Vec::new());
        }
        self.handle.block_on(self.api.list(labels))
    }

    fn reclaim(&mut self, labels: &BTreeMap<String, String>) -> Result<usize> {
        self.check_credentials()?;
        if labels.is_empty() {
            return Err(EngineError::message("Refusing to reclaim E2B sandboxes without labels".to_owned()));
        }
        self.handle.block_on(async {
            let ids = self.api.list(labels).await?;
            let mut killed = 0;
            for id in ids {
                if self.api.kill(&id).await? {
                    killed += 1;
                }
            }
            Ok(killed)
        })
    }

    fn pause(&mut self, id: &str) -> Result<bool> {
        self.check_credentials()?;
        self.handle.block_on(self.api.pause(id))
    }

    fn reconnect(&mut self, id: &str, lease: Duration) -> Result<Box<dyn Sandbox>> {
        self.check_credentials()?;
        let created = self.handle.block_on(self.api.connect(id, lease))?;
        if created.sandbox_id != id {
            return Err(EngineError::reply(format!(
                "E2B answered a reconnect to sandbox {id} with sandbox {}",
                created.sandbox_id
            )));
        }
        Ok(Box::new(self.sandbox(&created)))
    }

    fn destroy(&mut self, id: &str) -> Result<()> {
        self.check_credentials()?;
        self.handle.block_on(self.api.kill(id)).map(|_| ())
    }
}
