//! The committed schemas under `schemas/` are exactly what the field catalog generates.
//! Regenerate with `UPDATE_SCHEMAS=1 cargo test -p wb-manifest --test schemas`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

#[test]
fn committed_schemas_match_the_field_catalog() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
    for spec in [0u8, 1] {
        let path = root.join(format!("v{spec}/workbench.schema.json"));
        let generated = wb_manifest::schema::schema_text(spec);
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            std::fs::write(&path, &generated).expect("write schema");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(committed == generated, "{} is stale; run with UPDATE_SCHEMAS=1", path.display());
    }
}

#[test]
fn generated_schemas_are_valid_draft_2020_12() {
    for spec in [0u8, 1] {
        let schema = wb_manifest::schema::schema(spec);
        assert!(jsonschema::draft202012::meta::is_valid(&schema), "spec {spec}");
        assert!(jsonschema::draft202012::new(&schema).is_ok(), "spec {spec}");
    }
}
