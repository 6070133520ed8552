//! `model`: the model id, its routes, and what the model catalog says about them.

use wb_syntax::{Entry, Node, TextRange, Value};

use super::{Label, Rules, Slot, matches, model_id, provider_name};
use crate::diagnostic::Code;
use crate::fields;
use crate::manifest::{ModelPolicy, Route};

impl Rules<'_> {
    pub(super) fn model(&mut self, entry: Option<&Entry>, anchor: TextRange) {
        let Some(entry) = entry else {
            self.report(Code::MissingField, anchor, "model must be an object");
            return;
        };
        let Some(model) = self.record(Slot::of_entry(entry), "model") else { return };
        self.check_keys(model, fields::MODEL_FIELDS, "model");
        let id = self.text_in(model, "id", "model.id", entry.key_range).and_then(|id| {
            if matches(model_id(), &id.value) {
                Some(id)
            } else {
                self.report(Code::InvalidModelId, id.range, "model.id must be a provider-neutral lab/model identifier");
                None
            }
        });
        let mut routes = Vec::new();
        let routes_entry = model.entry("routes");
        if let Some(routes_entry) = routes_entry {
            let slot = Slot::of_entry(routes_entry);
            match &routes_entry.value.value {
                Value::Sequence(items) if !items.is_empty() => {
                    for (index, item) in items.iter().enumerate() {
                        if let Some(route) = self.route(item, index, &routes) {
                            routes.push(route);
                        }
                    }
                }
                Value::Sequence(_) => {
                    self.report(Code::EmptyValue, slot.range(), "model.routes must be a non-empty array");
                }
                _ => {
                    self.report(Code::InvalidType, slot.range(), "model.routes must be a non-empty array");
                }
            }
        }
        if let Some(id) = id {
            self.manifest.model = Some(ModelPolicy { id, routes, routes_declared: routes_entry.is_some() });
        }
    }

    pub(super) fn route(&mut self, item: &Node, index: usize, previous: &[Route]) -> Option<Route> {
        let label = Label::Index("model.routes", index);
        let route = self.record(Slot::of_item(item), label)?;
        self.check_keys(route, fields::ROUTE_FIELDS, label);
        let anchor = route.entries.first().map_or(item.range, |e| e.key_range);
        let provider = self.text_in(route, "provider", format_args!("{label}.provider"), anchor);
        let model = match route.entry("model") {
            Some(entry) => self.text(Slot::of_entry(entry), format_args!("{label}.model")),
            None => None,
        };
        let provider = provider?;
        if !matches(provider_name(), &provider.value) {
            self.report(Code::InvalidName, provider.range, format!("Invalid {label}.provider"));
            return None;
        }
        if let Some(first) = previous.iter().find(|r| r.provider.value == provider.value) {
            let (path, first_range) = (self.path.clone(), first.provider.range);
            let message = format!("Duplicate model route provider: {}", provider.value);
            self.report(Code::DuplicateName, provider.range, message).related.push(crate::Related {
                path,
                range: first_range,
                message: "first route for this provider".to_owned(),
            });
            return None;
        }
        Some(Route { provider, model })
    }

    pub(super) fn model_routes(&mut self) {
        // Taken out while reporting needs `self`, and put back below.
        let Some(model) = self.manifest.model.take() else { return };
        let catalog = self.catalog;
        for route in &model.routes {
            // A route that names its own native model needs no catalog entry for its provider.
            if route.model.is_none() && catalog.provider(&route.provider.value).is_none() {
                let serving: Vec<&str> = catalog
                    .model(&model.id.value)
                    .map(|m| m.providers.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                let fix = catalog
                    .nearest_provider(&route.provider.value, &serving)
                    .map(|near| self.rename_fix(route.provider.range, near));
                self.report(
                    Code::UnknownModelProvider,
                    route.provider.range,
                    format!("Unknown model provider: {}", route.provider.value),
                )
                .fixes
                .extend(fix);
            }
        }
        match catalog.model(&model.id.value) {
            Some(entry) => {
                for route in &model.routes {
                    let known = catalog.provider(&route.provider.value).is_some();
                    if known && route.model.is_none() && !entry.providers.contains_key(&route.provider.value) {
                        self.report(
                            Code::ProviderDoesNotServeModel,
                            route.provider.range,
                            format!("Provider {} does not serve model {}", route.provider.value, model.id.value),
                        );
                    }
                }
            }
            None => {
                let explicit =
                    model.routes_declared && !model.routes.is_empty() && model.routes.iter().all(|r| r.model.is_some());
                if !explicit || self.manifest.runner_config.is_none() {
                    let fixes: Vec<_> = catalog
                        .nearest_models(&model.id.value)
                        .into_iter()
                        .map(|near| self.rename_fix(model.id.range, near))
                        .collect();
                    self.report(
                        Code::UnknownModel,
                        model.id.range,
                        format!(
                            "Unknown model {}. Unknown models require explicit route model IDs and packaged runner_config.",
                            model.id.value
                        ),
                    )
                    .fixes
                    .extend(fixes);
                }
            }
        }
        self.manifest.model = Some(model);
    }
}
