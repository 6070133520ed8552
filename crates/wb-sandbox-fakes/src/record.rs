//! What a fake received: every request, in order, for tests to assert on (and the official-SDK test to save
//! as wire fixtures).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One request as the fake received it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// The raw query string, without `?` (empty when none).
    pub query: String,
    /// Header names lower-cased; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The body (lossy text for JSON; tests decode as they need).
    pub body: Vec<u8>,
}

impl Recorded {
    /// The body as JSON, when it is.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
}

/// A shared, append-only list of requests.
#[derive(Clone, Default)]
pub struct Recorder {
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Recorder {
    pub fn push(&self, request: Recorded) {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request);
        }
    }

    /// Every request so far, in arrival order.
    pub fn all(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Requests whose method and path match.
    pub fn matching(&self, method: &str, path: &str) -> Vec<Recorded> {
        self.all().into_iter().filter(|r| r.method == method && r.path == path).collect()
    }

    pub fn clear(&self) {
        if let Ok(mut requests) = self.requests.lock() {
            requests.clear();
        }
    }
}

/// Header map to [`Recorded::headers`].
pub fn headers(map: &axum::http::HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in map {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        out.entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    out
}
