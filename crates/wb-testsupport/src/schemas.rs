//! The official schemas of the standard, compiled with format validation: the event envelope, the outcomes
//! documents and the manifest schemas.
//!
//! They are test data that does not ship with this repository. Tests find them through one variable,
//! `WB_OFFICIAL_SCHEMAS` (a directory laid out like the standard's `schemas/`). When it is unset the
//! comparisons are skipped with one loud line on stderr, unless `WB_REQUIRE_OFFICIAL_SCHEMAS=1` (CI sets
//! both), which turns the absence into a failure so they can never silently skip there.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Once;

use serde_json::Value;

/// The variable naming the directory of the official schemas.
pub const SCHEMAS_VARIABLE: &str = "WB_OFFICIAL_SCHEMAS";
/// The variable that makes absent official schemas a failure instead of a skip.
pub const REQUIRE_VARIABLE: &str = "WB_REQUIRE_OFFICIAL_SCHEMAS";
/// What a test process prints (once) when it skips the comparisons.
pub const SKIP_LINE: &str = "SKIPPED: the official Workbench schemas are not available";

/// The directory of the official schemas, or `None` (after one loud line) when they are absent and not
/// required.
pub fn official_schemas() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(SCHEMAS_VARIABLE).filter(|value| !value.is_empty()) {
        let dir = PathBuf::from(dir);
        assert!(dir.is_dir(), "{SCHEMAS_VARIABLE}={} is not a directory", dir.display());
        return Some(dir);
    }
    let required = std::env::var(REQUIRE_VARIABLE).is_ok_and(|value| value == "1");
    assert!(
        !required,
        "{REQUIRE_VARIABLE}=1 but the official schemas are absent: set {SCHEMAS_VARIABLE} to the standard's schemas/ directory"
    );
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        // Straight to the process's stderr, past the test harness's capture, so a skip is always seen.
        let _ = writeln!(
            std::io::stderr(),
            "{SKIP_LINE} (set {SCHEMAS_VARIABLE} to the standard's schemas/ directory): comparisons with them are skipped"
        );
    });
    None
}

/// Reads and parses an official schema: `relative` is its path under the schemas directory (e.g.
/// `v1/workbench.schema.json`). `None` when the schemas are absent (see [`official_schemas`]).
pub fn official_schema(relative: &str) -> Option<Value> {
    let path = official_schemas()?.join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("the official schema {} is unreadable: {error}", path.display()));
    Some(
        serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("the official schema {} is not JSON: {error}", path.display())),
    )
}

/// Compiles a schema (draft 2020-12) with format validation.
pub fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|error| panic!("the schema does not compile: {error}"))
}

/// The validator of an official schema; when the schemas are absent and not required, one that accepts
/// every document (the loud line says so), so tests that also check other things still run.
fn validator(relative: &str) -> jsonschema::Validator {
    compile(&official_schema(relative).unwrap_or(Value::Bool(true)))
}

/// The official event schema (`events/v0/workbench-event.schema.json`).
pub fn event_validator() -> jsonschema::Validator {
    validator("events/v0/workbench-event.schema.json")
}

/// An official outcomes schema (`outcome.schema.json`, `application.schema.json`, `outbox.schema.json`).
pub fn outcomes_validator(name: &str) -> jsonschema::Validator {
    validator(&format!("outcomes/v1/{name}"))
}

/// Asserts that a JSON document validates against an official outcomes schema.
pub fn assert_outcomes_schema(name: &str, document: &Value) {
    let validator = outcomes_validator(name);
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{name}: {document:#} does not validate: {errors:?}");
}
