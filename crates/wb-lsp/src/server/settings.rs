//! The server's settings: asked of the client (`workspace/configuration`) or taken from the initialization
//! options and `didChangeConfiguration`, their problems shown once, and the model catalog they name, read off
//! the loop with the bounded reader.

use std::path::PathBuf;
use std::sync::Arc;

use lsp_types as lsp;
use wb_manifest::ModelCatalog;

use super::global_state::{CatalogUnread, GlobalState, Outgoing, Task};
use super::snapshot::Config;

impl GlobalState {
    pub fn request_configuration(&mut self) -> anyhow::Result<()> {
        let params = lsp::ConfigurationParams {
            items: vec![lsp::ConfigurationItem { scope_uri: None, section: Some("workbench".into()) }],
        };
        self.request_client::<lsp::request::WorkspaceConfiguration>(params, Outgoing::Configuration)
    }

    /// The client's answer to `workspace/configuration`.
    pub fn configuration_received(&mut self, result: serde_json::Value) {
        let value = result.as_array().and_then(|items| items.first().cloned()).unwrap_or(result);
        // A client with nothing under `workbench` (Eglot answers null, Neovim `[]` or null) keeps the settings
        // sent as initialization options instead of resetting them to the defaults.
        let empty = match &value {
            serde_json::Value::Null => true,
            serde_json::Value::Object(map) => map.is_empty(),
            serde_json::Value::Array(items) => items.is_empty(),
            _ => false,
        };
        let value = match (&self.initialization_options, empty) {
            (Some(options), true) => options.clone(),
            _ => value,
        };
        // The same settings change no diagnostics: the workspace scan that started at `initialized` stands.
        if self.apply_settings(&value) {
            self.mark_all_dirty();
        }
    }

    /// Takes new settings; their problems are shown unless they are the ones shown last. A model catalog they
    /// name is read anew off the loop ([`Self::catalog_read`] takes it). Returns whether the settings may change
    /// diagnostics.
    pub fn apply_settings(&mut self, value: &serde_json::Value) -> bool {
        let (config, problems) = Config::from_json(value);
        let changed = config != *self.config;
        let problems: Vec<(lsp::MessageType, String)> =
            problems.into_iter().map(|problem| (lsp::MessageType::WARNING, problem)).collect();
        if problems != self.shown_problems {
            for (typ, message) in &problems {
                let params = lsp::ShowMessageParams { typ: *typ, message: message.clone() };
                let _ = self.notify::<lsp::notification::ShowMessage>(params);
            }
            self.shown_problems = problems;
        }
        self.catalog_generation += 1;
        match &config.model_catalog {
            Some(path) => self.read_catalog(path.clone()),
            None => {
                self.catalog = Arc::new(ModelCatalog::embedded().clone());
                self.shown_catalog_error = None;
            }
        }
        self.config = Arc::new(config);
        changed
    }

    /// Reads the catalog file on a thread of its own, bounded like every file the checks read; until it
    /// arrives the checks use the catalog they had.
    fn read_catalog(&mut self, path: PathBuf) {
        let generation = self.catalog_generation;
        let tasks = self.task_sender.clone();
        let read = move || {
            let catalog = ModelCatalog::from_file(&path).map_err(CatalogUnread::File);
            let _ = tasks.send(Task::Catalog { generation, catalog });
        };
        if let Err(error) = std::thread::Builder::new().name("wb-lsp-catalog".into()).spawn(read) {
            self.catalog_read(generation, Err(CatalogUnread::Thread(error)));
        }
    }

    /// A catalog read finished: the latest one asked for replaces the catalog (the embedded one when it failed,
    /// with the error shown), and every package is checked again with it.
    pub fn catalog_read(&mut self, generation: u64, catalog: Result<ModelCatalog, CatalogUnread>) {
        if generation != self.catalog_generation {
            return;
        }
        let catalog = match catalog {
            Ok(catalog) => {
                self.shown_catalog_error = None;
                catalog
            }
            Err(error) => {
                let message = error.to_string();
                if self.shown_catalog_error.as_ref() != Some(&message) {
                    let params = lsp::ShowMessageParams { typ: lsp::MessageType::ERROR, message: message.clone() };
                    let _ = self.notify::<lsp::notification::ShowMessage>(params);
                    eprintln!("wb-lsp: {message}");
                    self.shown_catalog_error = Some(message);
                }
                ModelCatalog::embedded().clone()
            }
        };
        self.catalog = Arc::new(catalog);
        self.mark_all_dirty();
    }
}
