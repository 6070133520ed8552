//! The official schemas of the standard (beside the repository, in `../shared/reference/schemas`), compiled
//! with format validation: the event envelope and the outcomes documents.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn reference_schemas() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/schemas")
}

fn validator(path: &Path) -> jsonschema::Validator {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("the official schema {} is unreadable: {error}", path.display()));
    let schema: Value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("the official schema {} is not JSON: {error}", path.display()));
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|error| panic!("the official schema {} does not compile: {error}", path.display()))
}

/// The official event schema (`events/v0/workbench-event.schema.json`).
pub fn event_validator() -> jsonschema::Validator {
    validator(&reference_schemas().join("events/v0/workbench-event.schema.json"))
}

/// An official outcomes schema (`outcome.schema.json`, `application.schema.json`, `outbox.schema.json`).
pub fn outcomes_validator(name: &str) -> jsonschema::Validator {
    validator(&reference_schemas().join("outcomes/v1").join(name))
}

/// Asserts that a JSON document validates against an official outcomes schema.
pub fn assert_outcomes_schema(name: &str, document: &Value) {
    let validator = outcomes_validator(name);
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{name}: {document:#} does not validate: {errors:?}");
}
