//! The E2B control plane: REST + JSON at `https://api.{E2B_DOMAIN or e2b.app}` (or `E2B_API_URL`), the key in
//! `X-API-KEY` and nowhere else. Create `POST /v2/sandboxes`, info `GET /sandboxes/{id}`, kill
//! `DELETE /sandboxes/{id}` (404 = already gone), list `GET /v2/sandboxes?metadata=<urlencoded "k=v&k2=v2">`
//! (paged by `X-Next-Token`), and the template calls `template.rs` makes. Every call goes through the shared
//! transport (`remote::http`: deadline, bounded reply, cancellation, no redirect, one retry policy), and
//! errors read `E2B API <METHOD> <path> failed with <status>: <body, at most 500 characters>` (credentials
//! redacted should a service ever echo them).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::error::{EngineError, Result};
use crate::runtime::remote::http::failure::{Failure, HttpError};
use crate::runtime::remote::http::{Call, ERROR_BODY_LIMIT, Transport};

/// How errors name the control plane.
pub const SERVICE: &str = "E2B API";

/// A control-plane client.
#[derive(Clone)]
pub struct Api {
    transport: Transport,
    /// The same, not stopped by cancellation: kill and reclaim still run after Ctrl-C.
    cleanup: Transport,
    base: String,
    key: String,
}

/// A reply: status and body bytes (at most the transport's reply limit).
pub struct Reply {
    pub status: StatusCode,
    pub body: Vec<u8>,
    pub next_token: Option<String>,
}

impl Reply {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// What create returned.
#[derive(Clone, Debug)]
pub struct Created {
    pub sandbox_id: String,
    pub envd_version: String,
    pub envd_access_token: Option<String>,
    pub domain: Option<String>,
}

impl Api {
    pub fn new(transport: &Transport, base: &str, key: &str) -> Api {
        let transport = transport.with_secret(key);
        let cleanup = transport.without_cancel();
        Api { transport, cleanup, base: base.trim_end_matches('/').to_owned(), key: key.to_owned() }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Removes every credential from a text (a reply body) before it becomes part of an error.
    pub fn redact(&self, text: &str) -> String {
        self.transport.redact(text)
    }

    /// One call under the transport's retry policy; any status is returned (callers decide which are errors).
    pub async fn send(&self, method: Method, path_and_query: &str, body: Option<&Value>) -> Result<Reply> {
        self.send_on(&self.transport, method, path_and_query, body).await
    }

    async fn send_on(
        &self,
        transport: &Transport,
        method: Method,
        path_and_query: &str,
        body: Option<&Value>,
    ) -> Result<Reply> {
        let shown = path_and_query.split('?').next().unwrap_or(path_and_query);
        let url = format!("{}{}", self.base, path_and_query);
        let call =
            Call { service: SERVICE, method: method.clone(), url: &url, shown, deadline: transport.limits().request };
        let build = |request: reqwest::RequestBuilder| {
            let request = request.header("X-API-KEY", &self.key);
            match body {
                Some(body) => request.json(body),
                None => request,
            }
        };
        let response = transport.send(&call, &build).await?;
        let status = response.status();
        let next_token = response
            .headers()
            .get("x-next-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .filter(|t| !t.is_empty());
        let body = if status.is_success() {
            transport.read(&call, response, transport.limits().reply).await?
        } else {
            // Only the start of an error reply is read (and quoted).
            transport.read_at_most(&call, response, ERROR_BODY_LIMIT).await
        };
        Ok(Reply { status, body, next_token })
    }

    /// The error for an unexpected status: by its kind (rate limited, out of storage, or the status).
    pub fn failure(&self, method: &Method, path: &str, reply: &Reply) -> EngineError {
        let text = String::from_utf8_lossy(&reply.body);
        let text: String = self.redact(text.trim()).chars().take(500).collect();
        let status = reply.status.as_u16();
        EngineError::from(HttpError {
            text: format!("{SERVICE} {method} {path} failed with {status}: {text}"),
            failure: Failure::Status(status),
        })
    }

    /// A call whose success is a 2xx JSON reply (or an empty one, as `null`).
    pub async fn call(&self, method: Method, path_and_query: &str, body: Option<&Value>) -> Result<Value> {
        let path = path_and_query.split('?').next().unwrap_or(path_and_query).to_owned();
        let reply = self.send(method.clone(), path_and_query, body).await?;
        if !reply.status.is_success() {
            return Err(self.failure(&method, &path, &reply));
        }
        if reply.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        reply
            .json()
            .ok_or_else(|| EngineError::reply(format!("E2B API {method} {path} returned a reply that is not JSON")))
    }

    /// `POST /v2/sandboxes` with the reference engine's options.
    pub async fn create(
        &self,
        template: &str,
        metadata: &BTreeMap<String, String>,
        lease: Duration,
    ) -> Result<Created> {
        let body = create_body(template, metadata, lease);
        let reply = self.call(Method::POST, "/v2/sandboxes", Some(&body)).await?;
        let text = |key: &str| reply.get(key).and_then(Value::as_str).map(str::to_owned);
        let sandbox_id = text("sandboxID")
            .ok_or_else(|| EngineError::reply("E2B API POST /v2/sandboxes returned no sandboxID".to_owned()))?;
        Ok(Created {
            envd_version: text("envdVersion").unwrap_or_default(),
            envd_access_token: text("envdAccessToken"),
            domain: text("domain").filter(|d| !d.is_empty()),
            sandbox_id,
        })
    }

    /// `POST /sandboxes/{id}/timeout`: the sandbox now ends `lease` from now (the SDK's `setTimeout`).
    pub async fn set_timeout(&self, id: &str, lease: Duration) -> Result<()> {
        let body = json!({"timeout": lease.as_secs().max(1)});
        self.call(Method::POST, &format!("/sandboxes/{}/timeout", segment(id)), Some(&body)).await.map(|_| ())
    }

    /// `POST /sandboxes/{id}/pause` (the SDK's `pause`): true when the sandbox is paused now, false when it
    /// already was (409).
    pub async fn pause(&self, id: &str) -> Result<bool> {
        let path = format!("/sandboxes/{}/pause", segment(id));
        let reply = self.send(Method::POST, &path, Some(&json!({}))).await?;
        match reply.status {
            status if status.is_success() => Ok(true),
            StatusCode::CONFLICT => Ok(false),
            _ => Err(self.failure(&Method::POST, &path, &reply)),
        }
    }

    /// `POST /v2/sandboxes/{id}/connect` (the SDK's `Sandbox.connect`): resumes a paused sandbox, or extends a
    /// running one's lease to at least `lease` from now; its envd details, as a create returns them.
    pub async fn connect(&self, id: &str, lease: Duration) -> Result<Created> {
        let path = format!("/v2/sandboxes/{}/connect", segment(id));
        let body = json!({"timeout": lease.as_secs().max(1)});
        let reply = self.call(Method::POST, &path, Some(&body)).await?;
        let text = |key: &str| reply.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(Created {
            envd_version: text("envdVersion").unwrap_or_default(),
            envd_access_token: text("envdAccessToken"),
            domain: text("domain").filter(|d| !d.is_empty()),
            sandbox_id: text("sandboxID").unwrap_or_else(|| id.to_owned()),
        })
    }

    /// `GET /sandboxes/{id}`.
    pub async fn info(&self, id: &str) -> Result<Value> {
        self.call(Method::GET, &format!("/sandboxes/{}", segment(id)), None).await
    }

    /// `DELETE /sandboxes/{id}`: true when it was killed, false when it was already gone.
    pub async fn kill(&self, id: &str) -> Result<bool> {
        let path = format!("/sandboxes/{}", segment(id));
        let reply = self.send_on(&self.cleanup, Method::DELETE, &path, None).await?;
        match reply.status {
            status if status.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.failure(&Method::DELETE, &path, &reply)),
        }
    }

    /// Every sandbox id carrying all of `metadata` (`GET /v2/sandboxes`, following `X-Next-Token`).
    pub async fn list(&self, metadata: &BTreeMap<String, String>) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..1000 {
            let path = format!("/v2/sandboxes?{}", list_query(metadata, token.as_deref()));
            let reply = self.send_on(&self.cleanup, Method::GET, &path, None).await?;
            if !reply.status.is_success() {
                return Err(self.failure(&Method::GET, "/v2/sandboxes", &reply));
            }
            let items = reply.json().unwrap_or(Value::Null);
            let Some(items) = items.as_array() else {
                return Err(EngineError::reply("E2B API GET /v2/sandboxes returned no list".to_owned()));
            };
            ids.extend(items.iter().filter_map(|item| item.get("sandboxID")?.as_str().map(str::to_owned)));
            match reply.next_token {
                Some(next) if !items.is_empty() => token = Some(next),
                _ => break,
            }
        }
        Ok(ids)
    }
}

/// The create body, as the SDK sends it for `lifecycle: {onTimeout: 'kill'}` (recorded): a sandbox the engine
/// never destroyed is killed at the end of its lease, not paused with a snapshot of the workspace (this engine
/// keeps no recovery checkpoint, so a paused sandbox would only keep the copy and the staged configuration).
pub fn create_body(template: &str, metadata: &BTreeMap<String, String>, lease: Duration) -> Value {
    json!({
        "templateID": template,
        "metadata": metadata,
        "timeout": lease.as_secs().max(1),
        "allow_internet_access": true,
        "autoPause": false,
    })
}

/// `metadata=<urlencoded "k=v&k2=v2">[&nextToken=…]`, as the SDK encodes it.
pub fn list_query(metadata: &BTreeMap<String, String>, token: Option<&str>) -> String {
    let mut inner = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in metadata {
        inner.append_pair(key, value);
    }
    let mut outer = url::form_urlencoded::Serializer::new(String::new());
    outer.append_pair("metadata", &inner.finish());
    if let Some(token) = token {
        outer.append_pair("nextToken", token);
    }
    outer.finish()
}

/// A path segment, percent-encoded.
pub fn segment(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>().replace('+', "%20")
}

/// Whether a service's `version` is at least `minimum` (`major.minor.patch`), by semantic-versioning precedence
/// (the `semver` crate: a pre-release such as `0.5.7-beta` comes before `0.5.7`). Looser spellings are read
/// as what they mean: a leading `v`, surrounding spaces, and a missing minor or patch (`0.5` is `0.5.0`). A
/// version that still does not parse is not at least anything above `0.0.0`.
pub fn version_at_least(version: &str, minimum: (u64, u64, u64)) -> bool {
    let minimum = semver::Version::new(minimum.0, minimum.1, minimum.2);
    lenient_version(version).map_or(minimum == semver::Version::new(0, 0, 0), |found| found >= minimum)
}

/// `version` as semver, completing a missing minor or patch (`1`, `1.2`, `v1.2-beta`).
fn lenient_version(version: &str) -> Option<semver::Version> {
    let text = version.trim();
    let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
    if let Ok(parsed) = semver::Version::parse(text) {
        return Some(parsed);
    }
    let (core, rest) = text.split_at(text.find(['-', '+']).unwrap_or(text.len()));
    let parts = core.split('.').count();
    if core.is_empty() || parts >= 3 {
        return None;
    }
    semver::Version::parse(&format!("{core}{}{rest}", ".0".repeat(3 - parts))).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_query_encodes_metadata_as_the_sdk_does() {
        let metadata = BTreeMap::from([
            ("dev.workbenches.managed".to_owned(), "true".to_owned()),
            ("dev.workbenches.scope".to_owned(), "abc".to_owned()),
        ]);
        assert_eq!(
            list_query(&metadata, None),
            "metadata=dev.workbenches.managed%3Dtrue%26dev.workbenches.scope%3Dabc"
        );
    }

    #[test]
    fn versions_compare_numerically() {
        assert!(version_at_least("0.5.7", (0, 1, 0)));
        assert!(version_at_least("0.10.0", (0, 2, 0)));
        assert!(!version_at_least("0.0.9", (0, 1, 0)));
        assert!(version_at_least("0.5.7", (0, 5, 7)));
        assert!(!version_at_least("0.5.6", (0, 5, 7)));
        assert!(version_at_least("1.0.0+build.5", (1, 0, 0)), "build metadata does not count");
    }

    #[test]
    fn loose_versions_read_as_what_they_mean() {
        assert!(version_at_least("v0.5.7", (0, 5, 7)));
        assert!(version_at_least(" V1.2.3 ", (1, 2, 3)));
        assert!(version_at_least("0.6", (0, 5, 7)), "0.6 is 0.6.0");
        assert!(!version_at_least("0.5", (0, 5, 7)), "0.5 is 0.5.0");
        assert!(version_at_least("1", (0, 5, 7)), "1 is 1.0.0");
        assert!(version_at_least("v1.2-rc.1", (1, 1, 0)), "1.2-rc.1 is 1.2.0-rc.1");
    }

    #[test]
    fn pre_releases_come_before_their_release_and_garbage_is_not_at_least_anything() {
        assert!(!version_at_least("0.5.7-beta.1", (0, 5, 7)));
        assert!(version_at_least("0.5.8-beta.1", (0, 5, 7)));
        for garbage in ["", "latest", "0.5.7.1", "x.y.z", "-1.0.0"] {
            assert!(!version_at_least(garbage, (0, 1, 0)), "{garbage:?}");
            assert!(version_at_least(garbage, (0, 0, 0)), "{garbage:?}: anything is at least 0.0.0");
        }
    }
}
