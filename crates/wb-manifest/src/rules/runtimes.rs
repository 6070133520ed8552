//! `runtimes` (spec 1) and `runtime`/`image`/`docker` (spec 0): providers, images, the host Docker engine.

use wb_syntax::{Entry, Mapping, TextRange, Value};

use super::{Label, Rules, Slot, closest};
use crate::diagnostic::Code;
use crate::fields;
use crate::manifest::{Image, Runtime, Spanned};

impl Rules<'_> {
    pub(super) fn runtimes(&mut self, entry: Option<&Entry>, anchor: TextRange) {
        let Some(entry) = entry else {
            // With spec 0 runtime fields present, `legacy-field-in-spec-1` already says where they must go.
            if !self.legacy_fields_present {
                self.report(Code::MissingField, anchor, "runtimes is required in spec 1");
            }
            return;
        };
        let Value::Mapping(runtimes) = &entry.value.value else {
            let range = Slot::of_entry(entry).range();
            self.report(Code::InvalidType, range, "runtimes must be an object");
            return;
        };
        if runtimes.entries.is_empty() {
            let range = Slot::of_entry(entry).range();
            self.report(Code::EmptyValue, range, "runtimes must declare at least one runtime");
            return;
        }
        for runtime in &runtimes.entries {
            let key = runtime.key.as_str();
            let Some(field) = fields::find(fields::RUNTIMES_FIELDS, key, 1) else {
                let absent: Vec<&str> =
                    fields::RUNTIME_PROVIDERS.iter().copied().filter(|p| runtimes.entry(p).is_none()).collect();
                let fix = closest(key, &absent).map(|name| self.rename_fix(runtime.key_range, name));
                let diagnostic = self.report(
                    Code::UnknownRuntimeProvider,
                    runtime.key_range,
                    format!("Unknown runtime provider: {key}. Known providers: local, docker, e2b, daytona"),
                );
                if let Some(fix) = fix {
                    diagnostic.fixes.push(fix);
                }
                continue;
            };
            let empty = Mapping::default();
            let config = match &runtime.value.value {
                Value::Mapping(mapping) => mapping,
                Value::Null => &empty,
                _ => {
                    let range = Slot::of_entry(runtime).range();
                    self.report(
                        Code::InvalidType,
                        range,
                        format!("runtimes.{key} must be an object or an empty value"),
                    );
                    continue;
                }
            };
            let fields::Shape::Object { fields: allowed, .. } = &field.shape else { continue };
            self.check_keys(config, allowed, Label::Key("runtimes", key));
            let image_label = format!("runtimes.{key}.image");
            let mut result = Runtime {
                provider: Spanned::new(key.to_owned(), runtime.key_range),
                image: None,
                host_engine: false,
                class: None,
                image_label: image_label.clone(),
            };
            let mut ok = true;
            if matches!(key, "docker" | "e2b" | "daytona") {
                match config.entry("image") {
                    Some(image) => {
                        result.image = self.image(image, "image");
                        ok &= result.image.is_some();
                    }
                    None if key != "daytona" => {
                        self.report(Code::MissingImage, runtime.key_range, format!("{image_label} is required"));
                        ok = false;
                    }
                    None => {}
                }
            }
            if key == "docker"
                && let Some(docker) = config.entry("docker")
            {
                match self.docker(docker, "docker") {
                    Some(host) => result.host_engine = host,
                    None => ok = false,
                }
            }
            if key == "daytona" {
                result.class = self.daytona_class(config, runtime.key_range);
                ok &= result.class.is_some();
            }
            if ok {
                self.manifest.runtimes.push(result);
            }
        }
    }

    pub(super) fn daytona_class(&mut self, config: &Mapping, anchor: TextRange) -> Option<Spanned<String>> {
        let class = self.text_in(config, "class", "runtimes.daytona.class", anchor)?;
        if fields::DAYTONA_CLASSES.contains(&class.value.as_str()) {
            return Some(class);
        }
        let fix = closest(&class.value, fields::DAYTONA_CLASSES).map(|value| self.rename_fix(class.range, value));
        let diagnostic = self.report(
            Code::InvalidValue,
            class.range,
            "runtimes.daytona.class must be one of linux, windows, gpu, macos",
        );
        if let Some(fix) = fix {
            diagnostic.fixes.push(fix);
        }
        None
    }

    /// An image: a published reference or a build object. `label` is `image` in both specs (the reference
    /// uses un-prefixed labels for value checks).
    pub(super) fn image(&mut self, entry: &Entry, label: impl std::fmt::Display + Copy) -> Option<Image> {
        match &entry.value.value {
            Value::Mapping(build) => {
                self.check_keys(build, fields::IMAGE_BUILD_FIELDS, label);
                let dockerfile = self.text_in(build, "build", format_args!("{label}.build"), entry.key_range);
                let context = match build.entry("context") {
                    Some(context) => match self.text(Slot::of_entry(context), format_args!("{label}.context")) {
                        Some(context) => Some(context),
                        None => return None,
                    },
                    None => None,
                };
                Some(Image::Build { build: dockerfile?, context })
            }
            Value::String(_) => self.text(Slot::of_entry(entry), label).map(Image::Published),
            _ => {
                // Anything that is not a string goes through the build-object check, as in the reference.
                let range = Slot::of_entry(entry).range();
                self.report(Code::InvalidType, range, format!("{label} must be an object"));
                None
            }
        }
    }

    /// `docker: {engine: {mode: host}}`. Returns whether host mode is declared, or `None` when invalid.
    pub(super) fn docker(&mut self, entry: &Entry, label: impl std::fmt::Display + Copy) -> Option<bool> {
        let docker = self.record(Slot::of_entry(entry), label)?;
        self.check_keys(docker, fields::DOCKER_FIELDS, label);
        let Some(engine) = docker.entry("engine") else { return Some(false) };
        let engine_label = format!("{label}.engine");
        let engine_map = self.record(Slot::of_entry(engine), &engine_label)?;
        self.check_keys(engine_map, fields::DOCKER_ENGINE_FIELDS, &engine_label);
        match engine_map.entry("mode") {
            Some(mode) if mode.value.as_str() == Some("host") => Some(true),
            Some(mode) => {
                let range = Slot::of_entry(mode).range();
                self.report(Code::InvalidValue, range, format!("{engine_label}.mode must be host"));
                None
            }
            None => {
                self.report(Code::MissingField, engine.key_range, format!("{engine_label}.mode must be host"));
                None
            }
        }
    }

    pub(super) fn spec0_runtime(&mut self, top: &Mapping, anchor: TextRange) {
        let runtime = self.text_field(top, "runtime", anchor);
        let mut result = runtime.map(|provider| Runtime {
            provider,
            image: None,
            host_engine: false,
            class: None,
            image_label: "image".to_owned(),
        });
        let mut ok = true;
        if let Some(docker) = top.entry("docker") {
            match self.docker(docker, "docker") {
                Some(host) => {
                    if let Some(result) = result.as_mut() {
                        if host && result.provider.value != "docker" {
                            let range = docker.key_range;
                            self.report(
                                Code::DockerEngineRequiresDocker,
                                range,
                                "docker.engine requires runtime: docker",
                            );
                            ok = false;
                        }
                        result.host_engine = host;
                    }
                }
                None => ok = false,
            }
        }
        if let Some(image) = top.entry("image") {
            let image = self.image(image, "image");
            ok &= image.is_some();
            if let Some(result) = result.as_mut() {
                result.image = image;
            }
        }
        if let (Some(result), true) = (result, ok) {
            self.manifest.runtimes.push(result);
        }
    }
}
