//! The model catalog: providers (with their credential variables), model ids and the providers serving them.
//!
//! An embedded copy ships in the binary; a file in the same format can replace it (`--model-catalog`, or the
//! `WB_LSP_MODEL_CATALOG` environment variable). Any catalog can be stale, so a model missing from it is a
//! warning, never an error.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde::Deserialize;

static EMBEDDED_JSON: &str = include_str!("../catalog/models.json");

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ModelCatalog {
    /// A label of the catalog's revision, recorded in resolved configuration.
    pub version: String,
    pub providers: BTreeMap<String, Provider>,
    pub models: BTreeMap<String, CatalogModel>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Provider {
    pub name: String,
    /// Credential variables, in preference order.
    pub env: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct CatalogModel {
    pub name: String,
    /// Provider name to the provider-native model id.
    pub providers: BTreeMap<String, String>,
    /// What the model costs, when the catalog says: the embedded one prices the models Claude Code runs (whose
    /// stream reports a cost only at its end, so `--max-cost` prices its usage as it streams); a catalog of your
    /// own may price others or correct these. The editor's context hints show the input price.
    #[serde(default)]
    pub cost: Option<ModelCost>,
}

/// A model's price, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
pub struct ModelCost {
    /// Per million input tokens.
    pub input: f64,
    /// Per million output tokens.
    #[serde(default)]
    pub output: Option<f64>,
    /// Per million tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Per million tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl ModelCost {
    /// What these token counts cost, when every kind that was used has a price (`None` otherwise: a
    /// guess would let a spend cap pass what it should stop).
    pub fn estimate(&self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Option<f64> {
        let part = |tokens: u64, price: Option<f64>| match (tokens, price) {
            (0, _) => Some(0.0),
            (tokens, Some(price)) if price.is_finite() && price >= 0.0 =>
            {
                #[allow(clippy::cast_precision_loss)]
                Some(tokens as f64 * price / 1_000_000.0)
            }
            _ => None,
        };
        let total = part(input, Some(self.input))?
            + part(output, self.output)?
            + part(cache_read, self.cache_read)?
            + part(cache_write, self.cache_write)?;
        Some(total)
    }
}

/// A catalog file larger than this is refused unread, as the manifest is (the embedded one is a few dozen
/// kilobytes).
pub const MAX_CATALOG_BYTES: usize = crate::limits::MAX_MANIFEST_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("Model catalog is unreadable: {path}: {cause}")]
    Io { path: String, cause: std::io::Error },
    #[error("Model catalog is too large: {path}: {size} bytes or more (the limit is {} MiB)", MAX_CATALOG_BYTES / (1024 * 1024))]
    TooLarge { path: String, size: u64 },
    #[error("Model catalog is invalid: {path}: {cause}")]
    Json { path: String, cause: serde_json::Error },
}

impl ModelCatalog {
    /// The catalog compiled into the binary.
    pub fn embedded() -> &'static ModelCatalog {
        static CATALOG: OnceLock<ModelCatalog> = OnceLock::new();
        CATALOG.get_or_init(|| match serde_json::from_str(EMBEDDED_JSON) {
            Ok(catalog) => catalog,
            // The embedded file is checked by a unit test; an empty catalog keeps the checker alive regardless.
            Err(_) => ModelCatalog { version: "empty".into(), providers: BTreeMap::new(), models: BTreeMap::new() },
        })
    }

    pub fn from_json(text: &str, label: &str) -> Result<ModelCatalog, CatalogError> {
        serde_json::from_str(text).map_err(|cause| CatalogError::Json { path: label.to_owned(), cause })
    }

    /// Reads a catalog file with the bounded reader the checks use: at most [`MAX_CATALOG_BYTES`] are held
    /// (`/dev/zero` is too large at once), and the file is opened without blocking (a FIFO without data is
    /// unreadable, not a wait).
    pub fn from_file(path: &Path) -> Result<ModelCatalog, CatalogError> {
        let label = path.display().to_string();
        let io = |cause| CatalogError::Io { path: label.clone(), cause };
        let file = crate::fs::open_for_reading(path, false).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let bytes = match crate::fs::read_open_file(file, size, MAX_CATALOG_BYTES) {
            Ok(bytes) => bytes,
            Err(crate::fs::ReadLimitError::TooLarge(size)) => return Err(CatalogError::TooLarge { path: label, size }),
            Err(crate::fs::ReadLimitError::Io(cause)) => return Err(io(cause)),
        };
        serde_json::from_slice(&bytes).map_err(|cause| CatalogError::Json { path: label, cause })
    }

    pub fn model(&self, id: &str) -> Option<&CatalogModel> {
        self.models.get(id)
    }

    pub fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.get(name)
    }

    /// The catalog's model ids nearest to an id it does not hold (at most three, nearest first): typos and
    /// `-` written for `.` in a version.
    pub fn nearest_models(&self, id: &str) -> Vec<&str> {
        let ids: Vec<&str> = self.models.keys().map(String::as_str).collect();
        crate::rules::suggestions::nearest(id, &ids, 3)
    }

    /// The ids to offer for an id the catalog does not hold: the nearest ones, else every model of the same
    /// lab.
    pub fn suggested_models(&self, id: &str) -> Vec<&str> {
        let nearest = self.nearest_models(id);
        if !nearest.is_empty() {
            return nearest;
        }
        let lab = id.split('/').next().unwrap_or_default();
        self.models.keys().map(String::as_str).filter(|known| known.split('/').next() == Some(lab)).collect()
    }

    /// The catalog provider nearest to a name it does not hold, preferring those in `preferred` (the providers
    /// serving the model at hand).
    pub fn nearest_provider(&self, name: &str, preferred: &[&str]) -> Option<&str> {
        let all: Vec<&str> = self.providers.keys().map(String::as_str).collect();
        let serving: Vec<&str> = all.iter().copied().filter(|p| preferred.contains(p)).collect();
        crate::rules::suggestions::closest(name, &serving).or_else(|| crate::rules::suggestions::closest(name, &all))
    }

    /// The providers allowed for a model without `routes`: every catalog provider serving it, the lab's own
    /// provider first, then alphabetically.
    pub fn default_routes(&self, id: &str) -> Vec<(&str, &str)> {
        let Some(model) = self.model(id) else { return Vec::new() };
        let lab = id.split('/').next().unwrap_or_default();
        let mut routes: Vec<(&str, &str)> =
            model.providers.iter().map(|(provider, native)| (provider.as_str(), native.as_str())).collect();
        routes.sort_by_key(|(provider, _)| (*provider != lab, *provider));
        routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_parses_and_is_consistent() {
        let catalog: ModelCatalog = serde_json::from_str(EMBEDDED_JSON).expect("embedded catalog");
        assert!(catalog.model("openai/gpt-5.6-terra").is_some());
        for (id, model) in &catalog.models {
            for provider in model.providers.keys() {
                assert!(catalog.provider(provider).is_some(), "{id} names unknown provider {provider}");
            }
        }
    }

    #[test]
    fn unknown_ids_get_the_nearest_or_their_labs_models() {
        let catalog = ModelCatalog::embedded();
        assert_eq!(catalog.suggested_models("anthropic/claude-sonnet-4-5"), ["anthropic/claude-sonnet-4.5"]);
        let xai = catalog.suggested_models("xai/grok-99-ultra");
        assert!(!xai.is_empty() && xai.iter().all(|id| id.starts_with("xai/")), "{xai:?}");
        assert!(catalog.suggested_models("acme/nope").is_empty());
        assert_eq!(catalog.nearest_provider("opnai", &[]), Some("openai"));
    }

    /// A catalog file is read bounded and without blocking: `/dev/zero` is too large, a FIFO without a
    /// writer is not valid JSON (it is empty), and neither is waited for.
    #[test]
    fn a_catalog_file_is_read_bounded() {
        match ModelCatalog::from_file(Path::new("/dev/zero")) {
            Err(CatalogError::TooLarge { size, .. }) => assert_eq!(size, MAX_CATALOG_BYTES as u64 + 1),
            other => panic!("{other:?}"),
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let fifo = dir.path().join("catalog.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
        assert!(matches!(ModelCatalog::from_file(&fifo), Err(CatalogError::Json { .. })));
        let message = ModelCatalog::from_file(Path::new("/dev/zero")).map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(
            message,
            Err("Model catalog is too large: /dev/zero: 4194305 bytes or more (the limit is 4 MiB)".to_owned())
        );
    }

    #[test]
    fn lab_provider_comes_first() {
        let routes = ModelCatalog::embedded().default_routes("openai/gpt-5.6-terra");
        assert_eq!(routes.first().map(|r| r.0), Some("openai"));
        let rest: Vec<&str> = routes[1..].iter().map(|r| r.0).collect();
        let mut sorted = rest.clone();
        sorted.sort_unstable();
        assert_eq!(rest, sorted);
    }
}
