//! The Workbench manifest model and every validation rule.
//!
//! Data flow: bytes → [`wb_syntax::parse`] (tree + syntax errors) → manifest rules (`rules`) → package checks
//! on the file system (`package`) → a [`PackageReport`] of [`Diagnostic`]s with byte ranges. Nothing here
//! knows LSP or terminals; the CLI and the language server render the same reports.

pub mod boundary;
mod catalog;
mod check;
mod credentials;
mod diagnostic;
mod disk_cache;
pub mod env_refs;
pub mod fields;
mod fs;
pub mod init;
mod json_fields;
mod limits;
mod manifest;
pub mod migrate;
mod nearest_path;
pub mod outbox_declaration;
mod package;
mod recording;
mod rules;
pub mod safe_fixes;
pub mod schema;
pub mod selector;
pub mod skill;
pub mod trial_task;

pub use catalog::{CatalogError, CatalogModel, MAX_CATALOG_BYTES, ModelCatalog, ModelCost, Provider};
pub use check::{
    Detail, PackageReport, Target, absolute, check_manifest_bytes, check_manifests, check_manifests_keeping,
    check_package, check_path, check_path_keeping, discover, manifest_model,
};
pub use credentials::is_credential_path;
pub use diagnostic::{
    Code, Diagnostic, DiagnosticTag, Fix, MAX_DIAGNOSTICS_PER_CODE, Omitted, Related, Severity, TextEdit,
    cap_diagnostics, sort_diagnostics,
};
pub use disk_cache::DiskCache;
pub use fs::{FileKind, FileSystem, OsFileSystem, ReadLimitError, is_inside, normalize};
pub use limits::MAX_MANIFEST_BYTES;
pub use manifest::{
    Access, EnvVar, Image, Manifest, Mcp, ModelPolicy, Requirements, Route, Runtime, Spanned, Workspace,
};
pub use package::{claude_config_problem, repository_root};
pub use recording::{Dependencies, Recording};
pub use rules::prepare;
#[doc(hidden)]
pub use rules::suggestions::{PASS_BUDGET as SUGGESTION_BUDGET, suggestion_steps};
