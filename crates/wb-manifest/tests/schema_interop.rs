//! Interoperability of the three judges of a manifest: our generated JSON schema, the official schema of the
//! standard (found through `WB_OFFICIAL_SCHEMAS`, see `wb_testsupport::schemas`) and the checker itself.
//!
//! Every `workbench.yml` under `fixtures/` and every document of the table below is converted from YAML to
//! JSON and validated with both schemas of its spec (both specs when `spec` is not 0 or 1). Our schema and the
//! official one must always agree. The checker's manifest-level verdict (its errors of the YAML and manifest
//! codes, with the package's files out of sight) must agree too, except for the known differences between the
//! reference parser and the schema: those of engine facts b.8, YAML that JSON cannot express, and parser rules
//! JSON Schema cannot state. They are listed one document at a time in [`EXCEPTIONS`]; an exception that no
//! longer differs fails the test.
//!
//! A document that is not YAML (a syntax error, tab indentation, too deep, not UTF-8) or holds a value JSON
//! cannot (`.inf`, `.nan`) has no JSON instance, and counts as rejected by every schema.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use wb_manifest::{Code, ModelCatalog, Severity, check_manifest_bytes};
use wb_syntax::{Node, SyntaxErrorKind, Value};
use wb_testsupport::MemFs;

/// Why the checker may judge a document differently from the schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    /// b.8: the parser trims strings. A whitespace-only string fails the parser but passes `minLength: 1`,
    /// and a padded value matches a pattern or enum only after trimming.
    Trimming,
    /// b.8: blank `skills`/`tools` entries are dropped by the parser but rejected by the schema.
    BlankListEntry,
    /// b.8: the parser checks `mcps[].url` with WHATWG URL parsing, the schema with `format: uri` (RFC 3986)
    /// and `^https?://`.
    UrlParsing,
    /// YAML-level problems JSON cannot express (duplicate keys, tags, complex keys, several documents): the
    /// checker reports them; the JSON the YAML converts to does not show them.
    YamlLevel,
    /// b.4: route providers and MCP names must be unique, a parser rule JSON Schema cannot express (it has
    /// `uniqueItems`, not uniqueness of one property).
    UniqueByProperty,
    /// b.4: `requirements.cpu` must be a safe integer (the reference uses JavaScript numbers); the schema's
    /// `type: integer` has no upper bound.
    SafeInteger,
    /// b.4: the parser takes an empty `transport:` or `access:` as its default (`http`, `read-only`); the
    /// schemas require one of the enum's strings.
    EmptyMeansDefault,
    /// wb-lsp's own bounds on what it reads (the node budget, `too-many-nodes`): a document past them is refused,
    /// which no schema states.
    Bounds,
}

/// One document whose checker verdict differs from the schemas'.
struct Exception {
    /// A table case name, or a fixture path relative to the repository.
    document: &'static str,
    /// The documented differences the document exercises.
    reasons: &'static [Reason],
    /// The schemas' verdict; the checker's is the opposite.
    schema_valid: bool,
}

const fn exception(document: &'static str, reasons: &'static [Reason], schema_valid: bool) -> Exception {
    Exception { document, reasons, schema_valid }
}

/// Every document on which the checker and the schemas may disagree, and why.
const EXCEPTIONS: &[Exception] = &[
    exception("fixtures/cases/yaml-too-many-nodes/.workbenches/many/workbench.yml", &[Reason::Bounds], true),
    exception(
        "fixtures/cases/invalid-mcps/.workbenches/null-transport/workbench.yml",
        &[Reason::EmptyMeansDefault],
        false,
    ),
    exception(
        "fixtures/cases/invalid-workspaces/.workbenches/null-access/workbench.yml",
        &[Reason::EmptyMeansDefault],
        false,
    ),
    // Whitespace: the parser trims before it checks.
    exception("name-whitespace-only", &[Reason::Trimming], true),
    exception("version-padded", &[Reason::Trimming], false),
    exception("model-id-padded", &[Reason::Trimming], false),
    exception("route-model-whitespace-only", &[Reason::Trimming], true),
    exception("header-whitespace-only", &[Reason::Trimming], true),
    exception("mcp-url-padded", &[Reason::Trimming], false),
    exception("daytona-class-padded", &[Reason::Trimming], false),
    exception("spec-0-docker-engine-padded-runtime", &[Reason::Trimming], false),
    exception("image-whitespace-only", &[Reason::Trimming], true),
    // Blank list entries: dropped by the parser, `minLength: 1` in the schema.
    exception("skills-empty-entry", &[Reason::BlankListEntry], false),
    exception("tools-empty-entry", &[Reason::BlankListEntry], false),
    // URL parsing: WHATWG in the parser, RFC 3986 plus a case-sensitive prefix in the schema.
    exception("mcp-url-space-in-path", &[Reason::UrlParsing], false),
    exception("mcp-url-uppercase-scheme", &[Reason::UrlParsing], false),
    exception("mcp-url-no-slashes", &[Reason::UrlParsing], false),
    exception("mcp-url-unicode-host", &[Reason::UrlParsing], false),
    exception("mcp-url-backslashes", &[Reason::UrlParsing], false),
    exception("mcp-url-bad-percent-escape", &[Reason::UrlParsing], false),
    exception("mcp-url-empty-host", &[Reason::UrlParsing], true),
    exception("mcp-url-port-out-of-range", &[Reason::UrlParsing], true),
    // YAML that JSON cannot express.
    exception("yaml-duplicate-key", &[Reason::YamlLevel], true),
    exception("yaml-custom-tag", &[Reason::YamlLevel], true),
    exception("yaml-complex-key", &[Reason::YamlLevel], true),
    exception("yaml-two-documents", &[Reason::YamlLevel], true),
    // Uniqueness of one property across list items.
    exception("route-duplicate-provider", &[Reason::UniqueByProperty], true),
    exception("mcp-duplicate-name", &[Reason::UniqueByProperty], true),
    // Fixtures (fixtures/cases/*) made for other tests.
    exception(
        "fixtures/cases/valid-trimmed-and-blank-entries/.workbenches/trimmed/workbench.yml",
        &[Reason::Trimming, Reason::BlankListEntry],
        false,
    ),
    exception("fixtures/cases/yaml-complex-keys/.workbenches/schemas/workbench.yml", &[Reason::YamlLevel], true),
    exception("fixtures/cases/yaml-duplicate-keys/.workbenches/deps/workbench.yml", &[Reason::YamlLevel], true),
    exception(
        "fixtures/cases/yaml-multiple-documents/.workbenches/changelog/workbench.yml",
        &[Reason::YamlLevel],
        true,
    ),
    exception("fixtures/cases/yaml-unsupported-tags/.workbenches/support/workbench.yml", &[Reason::YamlLevel], true),
    // JavaScript numbers.
    exception("cpu-beyond-safe-integer", &[Reason::SafeInteger], true),
];

/// The minimal valid spec 1 manifest, one top-level entry per item.
const BASE_1: &[(&str, &str)] = &[
    ("spec", "spec: 1"),
    ("version", "version: 0.1.0"),
    ("name", "name: demo"),
    ("runner", "runner: opencode"),
    ("model", "model:\n  id: openai/gpt-5"),
    ("instructions", "instructions: ./instructions.md"),
    ("runtimes", "runtimes:\n  local: {}"),
];

/// The minimal valid spec 0 manifest.
const BASE_0: &[(&str, &str)] = &[
    ("spec", "spec: 0"),
    ("version", "version: 0.1.0"),
    ("name", "name: demo"),
    ("runner", "runner: opencode"),
    ("model", "model:\n  id: openai/gpt-5"),
    ("instructions", "instructions: ./instructions.md"),
    ("runtime", "runtime: local"),
];

/// A base manifest with top-level entries replaced (an empty text removes the entry) or appended.
fn edit(base: &[(&str, &str)], edits: &[(&str, &str)]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for (key, text) in base {
        match edits.iter().find(|(k, _)| k == key) {
            Some((_, "")) => {}
            Some((_, replacement)) => lines.push((*replacement).to_owned()),
            None => lines.push((*text).to_owned()),
        }
    }
    for (key, text) in edits {
        if !base.iter().any(|(k, _)| k == key) && !text.is_empty() {
            lines.push((*text).to_owned());
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn v1(edits: &[(&str, &str)]) -> String {
    edit(BASE_1, edits)
}

fn v0(edits: &[(&str, &str)]) -> String {
    edit(BASE_0, edits)
}

/// One document of the table: its name, the official schema's verdict, and the YAML.
struct Case {
    name: &'static str,
    valid: bool,
    yaml: Vec<u8>,
}

fn case(name: &'static str, valid: bool, yaml: impl Into<Vec<u8>>) -> Case {
    Case { name, valid, yaml: yaml.into() }
}

/// An MCP list with one server whose fields are given as flow-mapping text.
fn mcp(fields: &str) -> String {
    format!("mcps:\n  - {{{fields}}}")
}

const EXAMPLE: &str = "spec: 1
version: 0.1.0
name: migrations
description: Design, review, and safely apply project migrations.
runner: opencode
model:
  id: openai/gpt-5.6-terra
  routes:
    - provider: openai
    - provider: openrouter
instructions: ./instructions.md
skills:
  - ./skills/migrations
tools:
  - cargo
  - dbctl
mcps:
  - name: database
    transport: http
    url: https://api.example.com/mcp
    headers:
      Authorization: Bearer ${DATABASE_API_TOKEN}
env:
  DATABASE_API_TOKEN:
    required: false
workspaces:
  api:
    required: true
    access: read-write
requirements:
  os: [linux, macos]
  cpu: 4
  memory_gb: 8
runtimes:
  local: {}
  docker:
    image: ghcr.io/example/migrations:0.1.0
";

#[allow(clippy::too_many_lines)]
fn table() -> Vec<Case> {
    let url = |value: &str| mcp(&format!("name: db, url: {value}"));
    vec![
        // The document and `spec`.
        case("spec-1-minimal", true, v1(&[])),
        case("spec-0-minimal", true, v0(&[])),
        case("spec-1-complete-example", true, EXAMPLE),
        case("spec-missing", false, v1(&[("spec", "")])),
        case("spec-string", false, v1(&[("spec", "spec: \"1\"")])),
        case("spec-2", false, v1(&[("spec", "spec: 2")])),
        case("spec-negative", false, v1(&[("spec", "spec: -1")])),
        case("spec-null", false, v1(&[("spec", "spec:")])),
        case("spec-float-one", true, v1(&[("spec", "spec: 1.0")])),
        case("document-empty", false, ""),
        case("document-sequence", false, "- spec: 1\n"),
        case("document-scalar", false, "spec 1\n"),
        case("document-empty-mapping", false, "{}\n"),
        case("unknown-top-level-field", false, v1(&[("author", "author: me")])),
        case("spec-1-with-runtime", false, v1(&[("runtime", "runtime: local")])),
        case("spec-1-with-image", false, v1(&[("image", "image: ghcr.io/x/y:1")])),
        case("spec-1-with-docker", false, v1(&[("docker", "docker:\n  engine:\n    mode: host")])),
        case("spec-0-with-requirements", false, v0(&[("requirements", "requirements:\n  cpu: 2")])),
        case("spec-0-with-runtimes", false, v0(&[("runtimes", "runtimes:\n  local: {}")])),
        // Required fields.
        case("version-missing", false, v1(&[("version", "")])),
        case("name-missing", false, v1(&[("name", "")])),
        case("runner-missing", false, v1(&[("runner", "")])),
        case("model-missing", false, v1(&[("model", "")])),
        case("instructions-missing", false, v1(&[("instructions", "")])),
        case("runtimes-missing", false, v1(&[("runtimes", "")])),
        case("spec-0-runtime-missing", false, v0(&[("runtime", "")])),
        // version
        case("version-prerelease-build", true, v1(&[("version", "version: 1.2.0-rc.1+build.5")])),
        case("version-two-parts", false, v1(&[("version", "version: \"1.0\"")])),
        case("version-leading-zero", false, v1(&[("version", "version: 01.0.0")])),
        case("version-number", false, v1(&[("version", "version: 1.0")])),
        case("version-empty", false, v1(&[("version", "version: \"\"")])),
        case("version-padded", false, v1(&[("version", "version: \" 1.0.0 \"")])),
        case("version-unicode-digit", false, v1(&[("version", "version: \"1\u{0660}.0.0\"")])),
        // name, description, runner, instructions, runner_config
        case("name-free-text", true, v1(&[("name", "name: Any Name, really!")])),
        case("name-empty", false, v1(&[("name", "name: \"\"")])),
        case("name-whitespace-only", true, v1(&[("name", "name: \"   \"")])),
        case("name-number", false, v1(&[("name", "name: 123")])),
        case("name-quoted-number", true, v1(&[("name", "name: \"123\"")])),
        case("description-text", true, v1(&[("description", "description: One line.")])),
        case("description-null", false, v1(&[("description", "description:")])),
        case("description-empty", false, v1(&[("description", "description: ''")])),
        case("runner-unknown", true, v1(&[("runner", "runner: my-harness")])),
        case("runner-empty", false, v1(&[("runner", "runner: ''")])),
        case("runner-list", false, v1(&[("runner", "runner: [opencode]")])),
        case("instructions-number", false, v1(&[("instructions", "instructions: 5")])),
        case("instructions-empty", false, v1(&[("instructions", "instructions: ''")])),
        case("runner-config-path", true, v1(&[("runner_config", "runner_config: ./runner")])),
        case("runner-config-empty", false, v1(&[("runner_config", "runner_config: ''")])),
        case("runner-config-bool", false, v1(&[("runner_config", "runner_config: true")])),
        // model
        case("model-string", false, v1(&[("model", "model: openai/gpt-5")])),
        case("model-unknown-field", false, v1(&[("model", "model:\n  id: openai/gpt-5\n  temperature: 1")])),
        case("model-id-missing", false, v1(&[("model", "model:\n  routes:\n    - provider: openai")])),
        case("model-id-uppercase-lab", false, v1(&[("model", "model:\n  id: OpenAI/gpt-5")])),
        case("model-id-no-lab", false, v1(&[("model", "model:\n  id: gpt-5")])),
        case("model-id-nested", true, v1(&[("model", "model:\n  id: meta/llama:3.1/instruct")])),
        case("model-id-number", false, v1(&[("model", "model:\n  id: 5")])),
        case("model-id-padded", false, v1(&[("model", "model:\n  id: \" openai/gpt-5 \"")])),
        case("routes-empty", false, v1(&[("model", "model:\n  id: openai/gpt-5\n  routes: []")])),
        case("routes-not-list", false, v1(&[("model", "model:\n  id: openai/gpt-5\n  routes: openai")])),
        case("route-not-object", false, v1(&[("model", "model:\n  id: openai/gpt-5\n  routes: [openai]")])),
        case(
            "route-unknown-field",
            false,
            v1(&[("model", "model:\n  id: openai/gpt-5\n  routes:\n    - {provider: openai, weight: 1}")]),
        ),
        case(
            "route-provider-missing",
            false,
            v1(&[("model", "model:\n  id: openai/gpt-5\n  routes:\n    - {model: x}")]),
        ),
        case(
            "route-provider-pattern",
            false,
            v1(&[("model", "model:\n  id: openai/gpt-5\n  routes:\n    - provider: Open_AI")]),
        ),
        case(
            "route-with-model",
            true,
            v1(&[(
                "model",
                "model:\n  id: lab/m\n  routes:\n    - {provider: internal-gateway, model: deployment-42}",
            )]),
        ),
        case(
            "route-model-empty",
            false,
            v1(&[("model", "model:\n  id: openai/gpt-5\n  routes:\n    - {provider: openai, model: ''}")]),
        ),
        case(
            "route-model-whitespace-only",
            true,
            v1(&[("model", "model:\n  id: openai/gpt-5\n  routes:\n    - {provider: openai, model: '  '}")]),
        ),
        case(
            "route-duplicate-provider",
            true,
            v1(&[("model", "model:\n  id: openai/gpt-5\n  routes:\n    - provider: openai\n    - provider: openai")]),
        ),
        // skills and tools
        case("skills-list", true, v1(&[("skills", "skills: [./skills/a, ./skills/b]")])),
        case("skills-empty-list", true, v1(&[("skills", "skills: []")])),
        case("skills-string", false, v1(&[("skills", "skills: ./skills/a")])),
        case("skills-number-entry", false, v1(&[("skills", "skills: [1]")])),
        case("skills-null-entry", false, v1(&[("skills", "skills:\n  -")])),
        case("skills-empty-entry", false, v1(&[("skills", "skills: ['']")])),
        case("skills-blank-entry", true, v1(&[("skills", "skills: ['  ']")])),
        case("tools-list", true, v1(&[("tools", "tools: [cargo, dbctl]")])),
        case("tools-null", false, v1(&[("tools", "tools:")])),
        case("tools-empty-entry", false, v1(&[("tools", "tools: [cargo, '']")])),
        // mcps
        case("mcps-empty", true, v1(&[("mcps", "mcps: []")])),
        case("mcps-object", false, v1(&[("mcps", "mcps: {name: db}")])),
        case("mcp-not-object", false, v1(&[("mcps", "mcps: [db]")])),
        case("mcp-minimal", true, v1(&[("mcps", &url("https://example.com/mcp"))])),
        case("mcp-unknown-field", false, v1(&[("mcps", &mcp("name: db, url: https://x.dev, timeout: 5"))])),
        case("mcp-name-missing", false, v1(&[("mcps", &mcp("url: https://x.dev"))])),
        case("mcp-url-missing", false, v1(&[("mcps", &mcp("name: db"))])),
        case("mcp-name-pattern", false, v1(&[("mcps", &mcp("name: My_Server, url: https://x.dev"))])),
        case(
            "mcp-duplicate-name",
            true,
            v1(&[("mcps", "mcps:\n  - {name: db, url: https://a.dev}\n  - {name: db, url: https://b.dev}")]),
        ),
        case("mcp-transport-http", true, v1(&[("mcps", &mcp("name: db, transport: http, url: https://x.dev"))])),
        case("mcp-transport-sse", false, v1(&[("mcps", &mcp("name: db, transport: sse, url: https://x.dev"))])),
        case("mcp-url-http-ipv6-port", true, v1(&[("mcps", &url("'http://[::1]:8080/mcp'"))])),
        case("mcp-url-ftp", false, v1(&[("mcps", &url("ftp://example.com"))])),
        case("mcp-url-relative", false, v1(&[("mcps", &url("example.com/mcp"))])),
        case("mcp-url-number", false, v1(&[("mcps", &url("5"))])),
        case("mcp-url-padded", false, v1(&[("mcps", &url("' https://example.com '"))])),
        case("mcp-url-space-in-path", false, v1(&[("mcps", &url("'https://example.com/a b'"))])),
        case("mcp-url-uppercase-scheme", false, v1(&[("mcps", &url("HTTPS://example.com/mcp"))])),
        case("mcp-url-no-slashes", false, v1(&[("mcps", &url("'https:example.com'"))])),
        case("mcp-url-unicode-host", false, v1(&[("mcps", &url("https://bücher.example/mcp"))])),
        case("mcp-url-backslashes", false, v1(&[("mcps", &url("'https:\\\\example.com\\mcp'"))])),
        case("mcp-url-bad-percent-escape", false, v1(&[("mcps", &url("'https://example.com/%zz'"))])),
        case("mcp-url-empty-host", true, v1(&[("mcps", &url("'https://'"))])),
        case("mcp-url-port-out-of-range", true, v1(&[("mcps", &url("'https://example.com:99999/'"))])),
        case(
            "mcp-headers",
            true,
            v1(&[
                ("mcps", &mcp("name: db, url: https://x.dev, headers: {Authorization: 'Bearer ${TOKEN}'}")),
                ("env", "env:\n  TOKEN: {}"),
            ]),
        ),
        case("mcp-headers-list", false, v1(&[("mcps", &mcp("name: db, url: https://x.dev, headers: [a]"))])),
        case("header-empty", false, v1(&[("mcps", &mcp("name: db, url: https://x.dev, headers: {X-A: ''}"))])),
        case("header-number", false, v1(&[("mcps", &mcp("name: db, url: https://x.dev, headers: {X-A: 5}"))])),
        case(
            "header-whitespace-only",
            true,
            v1(&[("mcps", &mcp("name: db, url: https://x.dev, headers: {X-A: '  '}"))]),
        ),
        // env
        case("env-empty", true, v1(&[("env", "env: {}")])),
        case("env-declared", true, v1(&[("env", "env:\n  API_TOKEN:\n    required: false\n  OTHER: {}")])),
        case("env-list", false, v1(&[("env", "env: [API_TOKEN]")])),
        case("env-lowercase-name", false, v1(&[("env", "env:\n  api_token: {}")])),
        case("env-leading-digit", false, v1(&[("env", "env:\n  1TOKEN: {}")])),
        case("env-null-declaration", false, v1(&[("env", "env:\n  API_TOKEN:")])),
        case("env-unknown-field", false, v1(&[("env", "env:\n  API_TOKEN: {default: x}")])),
        case("env-required-string", false, v1(&[("env", "env:\n  API_TOKEN: {required: 'yes'}")])),
        // workspaces
        case(
            "workspaces-declared",
            true,
            v1(&[("workspaces", "workspaces:\n  api: {required: true, access: read-write}\n  schemas: {}")]),
        ),
        case("workspaces-primary", false, v1(&[("workspaces", "workspaces:\n  primary: {}")])),
        case("workspaces-uppercase", false, v1(&[("workspaces", "workspaces:\n  Api: {}")])),
        case("workspaces-underscore", false, v1(&[("workspaces", "workspaces:\n  my_api: {}")])),
        case("workspaces-null-declaration", false, v1(&[("workspaces", "workspaces:\n  api:")])),
        case("workspaces-unknown-field", false, v1(&[("workspaces", "workspaces:\n  api: {path: /src}")])),
        case("workspaces-access-write", false, v1(&[("workspaces", "workspaces:\n  api: {access: write}")])),
        case("workspaces-required-string", false, v1(&[("workspaces", "workspaces:\n  api: {required: 'no'}")])),
        // runtimes
        case("runtimes-list", false, v1(&[("runtimes", "runtimes: [local]")])),
        case("runtimes-empty", false, v1(&[("runtimes", "runtimes: {}")])),
        case("runtimes-null", false, v1(&[("runtimes", "runtimes:")])),
        case("runtimes-unknown-provider", false, v1(&[("runtimes", "runtimes:\n  kubernetes: {}")])),
        case("runtimes-local-null", true, v1(&[("runtimes", "runtimes:\n  local:")])),
        case("runtimes-local-image", false, v1(&[("runtimes", "runtimes:\n  local: {image: x}")])),
        case("runtimes-local-list", false, v1(&[("runtimes", "runtimes:\n  local: []")])),
        case("runtimes-local-string", false, v1(&[("runtimes", "runtimes:\n  local: host")])),
        case(
            "runtimes-several",
            true,
            v1(&[("runtimes", "runtimes:\n  docker: {image: 'ghcr.io/x/y:1'}\n  local: {}\n  e2b: {image: x}")]),
        ),
        case("docker-image", true, v1(&[("runtimes", "runtimes:\n  docker:\n    image: ghcr.io/x/y:1")])),
        case("docker-image-missing", false, v1(&[("runtimes", "runtimes:\n  docker: {}")])),
        case("docker-null", false, v1(&[("runtimes", "runtimes:\n  docker:")])),
        case("docker-unknown-field", false, v1(&[("runtimes", "runtimes:\n  docker: {image: x, class: linux}")])),
        case("image-empty", false, v1(&[("runtimes", "runtimes:\n  docker: {image: ''}")])),
        case("image-whitespace-only", true, v1(&[("runtimes", "runtimes:\n  docker: {image: '  '}")])),
        case("image-null", false, v1(&[("runtimes", "runtimes:\n  docker: {image: null}")])),
        case("image-number", false, v1(&[("runtimes", "runtimes:\n  docker: {image: 5}")])),
        case(
            "image-build",
            true,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: {build: ./Dockerfile, context: .}")]),
        ),
        case("image-build-only", true, v1(&[("runtimes", "runtimes:\n  e2b:\n    image: {build: ./Dockerfile}")])),
        case("image-build-missing", false, v1(&[("runtimes", "runtimes:\n  docker:\n    image: {context: .}")])),
        case("image-build-empty", false, v1(&[("runtimes", "runtimes:\n  docker:\n    image: {build: ''}")])),
        case(
            "image-build-unknown-field",
            false,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: {build: ./D, tag: x}")]),
        ),
        case(
            "image-context-empty",
            false,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: {build: ./D, context: ''}")]),
        ),
        case(
            "docker-engine-host",
            true,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: x\n    docker:\n      engine:\n        mode: host")]),
        ),
        case("docker-engine-absent", true, v1(&[("runtimes", "runtimes:\n  docker:\n    image: x\n    docker: {}")])),
        case(
            "docker-engine-mode-other",
            false,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: x\n    docker: {engine: {mode: rootless}}")]),
        ),
        case(
            "docker-engine-mode-missing",
            false,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: x\n    docker: {engine: {}}")]),
        ),
        case(
            "docker-engine-null",
            false,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: x\n    docker: {engine: null}")]),
        ),
        case(
            "docker-docker-unknown-field",
            false,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: x\n    docker: {socket: /var/run}")]),
        ),
        case(
            "docker-engine-unknown-field",
            false,
            v1(&[("runtimes", "runtimes:\n  docker:\n    image: x\n    docker: {engine: {mode: host, tls: true}}")]),
        ),
        case("e2b-image", true, v1(&[("runtimes", "runtimes:\n  e2b: {image: x}")])),
        case("e2b-image-missing", false, v1(&[("runtimes", "runtimes:\n  e2b: {}")])),
        case("e2b-docker-field", false, v1(&[("runtimes", "runtimes:\n  e2b: {image: x, docker: {}}")])),
        case("daytona-linux", true, v1(&[("runtimes", "runtimes:\n  daytona: {class: linux, image: x}")])),
        case("daytona-windows-no-image", true, v1(&[("runtimes", "runtimes:\n  daytona: {class: windows}")])),
        case("daytona-class-missing", false, v1(&[("runtimes", "runtimes:\n  daytona: {image: x}")])),
        case("daytona-class-unknown", false, v1(&[("runtimes", "runtimes:\n  daytona: {class: freebsd}")])),
        case("daytona-class-padded", false, v1(&[("runtimes", "runtimes:\n  daytona: {class: ' linux '}")])),
        case("daytona-null", false, v1(&[("runtimes", "runtimes:\n  daytona:")])),
        // requirements
        case(
            "requirements-complete",
            true,
            v1(&[(
                "requirements",
                "requirements:\n  os: [linux, macos]\n  arch: [arm64, x64]\n  cpu: 4\n  memory_gb: 8\n  disk_gb: 20.5\n  gpu: false",
            )]),
        ),
        case("requirements-empty", true, v1(&[("requirements", "requirements: {}")])),
        case("requirements-null", false, v1(&[("requirements", "requirements:")])),
        case("requirements-unknown-field", false, v1(&[("requirements", "requirements:\n  ram: 8")])),
        case("os-empty", false, v1(&[("requirements", "requirements:\n  os: []")])),
        case("os-string", false, v1(&[("requirements", "requirements:\n  os: linux")])),
        case("os-unknown", false, v1(&[("requirements", "requirements:\n  os: [Linux]")])),
        case("os-repeated", false, v1(&[("requirements", "requirements:\n  os: [linux, linux]")])),
        case("arch-unknown", false, v1(&[("requirements", "requirements:\n  arch: [amd64]")])),
        case("arch-repeated", false, v1(&[("requirements", "requirements:\n  arch: [x64, arm64, x64]")])),
        case("cpu-zero", false, v1(&[("requirements", "requirements:\n  cpu: 0")])),
        case("cpu-fraction", false, v1(&[("requirements", "requirements:\n  cpu: 1.5")])),
        case("cpu-string", false, v1(&[("requirements", "requirements:\n  cpu: '4'")])),
        case("cpu-integral-float", true, v1(&[("requirements", "requirements:\n  cpu: 2.0")])),
        case("cpu-hex", true, v1(&[("requirements", "requirements:\n  cpu: 0x10")])),
        case("cpu-beyond-safe-integer", true, v1(&[("requirements", "requirements:\n  cpu: 1e100")])),
        case("cpu-infinite", false, v1(&[("requirements", "requirements:\n  cpu: .inf")])),
        case("memory-zero", false, v1(&[("requirements", "requirements:\n  memory_gb: 0")])),
        case("memory-negative", false, v1(&[("requirements", "requirements:\n  memory_gb: -1")])),
        case("memory-fraction", true, v1(&[("requirements", "requirements:\n  memory_gb: 0.5")])),
        case("memory-nan", false, v1(&[("requirements", "requirements:\n  memory_gb: .nan")])),
        case("disk-string", false, v1(&[("requirements", "requirements:\n  disk_gb: lots")])),
        case("gpu-true", true, v1(&[("requirements", "requirements:\n  gpu: true")])),
        case("gpu-string", false, v1(&[("requirements", "requirements:\n  gpu: 'yes'")])),
        case("gpu-yaml-1-1-yes", false, v1(&[("requirements", "requirements:\n  gpu: yes")])),
        // spec 0 runtime fields
        case("spec-0-runtime-unknown", true, v0(&[("runtime", "runtime: kubernetes")])),
        case("spec-0-runtime-empty", false, v0(&[("runtime", "runtime: ''")])),
        case("spec-0-runtime-object", false, v0(&[("runtime", "runtime: {docker: {}}")])),
        case("spec-0-image", true, v0(&[("runtime", "runtime: docker"), ("image", "image: ghcr.io/x/y:1")])),
        case("spec-0-image-build", true, v0(&[("runtime", "runtime: e2b"), ("image", "image: {build: ./Dockerfile}")])),
        case("spec-0-image-empty", false, v0(&[("runtime", "runtime: docker"), ("image", "image: ''")])),
        case(
            "spec-0-image-build-unknown",
            false,
            v0(&[("runtime", "runtime: docker"), ("image", "image: {build: ./D, x: 1}")]),
        ),
        case("spec-0-local-image", true, v0(&[("image", "image: ghcr.io/x/y:1")])),
        case(
            "spec-0-docker-engine",
            true,
            v0(&[
                ("runtime", "runtime: docker"),
                ("image", "image: x"),
                ("docker", "docker:\n  engine:\n    mode: host"),
            ]),
        ),
        case("spec-0-docker-engine-local", false, v0(&[("docker", "docker:\n  engine:\n    mode: host")])),
        case(
            "spec-0-docker-engine-padded-runtime",
            false,
            v0(&[
                ("runtime", "runtime: ' docker '"),
                ("image", "image: x"),
                ("docker", "docker:\n  engine:\n    mode: host"),
            ]),
        ),
        case("spec-0-docker-empty-local", true, v0(&[("docker", "docker: {}")])),
        case(
            "spec-0-docker-unknown-field",
            false,
            v0(&[("runtime", "runtime: docker"), ("docker", "docker: {host: true}")]),
        ),
        case(
            "spec-0-docker-mode-other",
            false,
            v0(&[("runtime", "runtime: docker"), ("docker", "docker: {engine: {mode: remote}}")]),
        ),
        case(
            "spec-0-workspaces-and-runner-config",
            true,
            v0(&[("workspaces", "workspaces:\n  api: {}"), ("runner_config", "runner_config: ./runner")]),
        ),
        case("spec-0-model-string", false, v0(&[("model", "model: openrouter/openai/gpt-5")])),
        // YAML features
        case("yaml-anchor-alias", true, v1(&[("tools", "tools: &list [cargo]"), ("skills", "skills: *list")])),
        case("yaml-merge-key", true, v1(&[("model", "model:\n  <<: {id: openai/gpt-5}")])),
        case("yaml-byte-order-mark", true, format!("\u{feff}{}", v1(&[]))),
        case(
            "yaml-flow-document",
            true,
            "{spec: 1, version: 0.1.0, name: demo, runner: pi, model: {id: a/b}, instructions: i.md, runtimes: {local: }}\n",
        ),
        case("yaml-quoted-keys", true, v1(&[("name", "\"name\": demo")])),
        case("yaml-core-tags", true, v1(&[("version", "version: !!str 0.1.0"), ("spec", "spec: !!int 1")])),
        case("yaml-duplicate-key", true, v1(&[("description", "description: first\ndescription: second")])),
        case("yaml-custom-tag", true, v1(&[("name", "name: !custom demo")])),
        case("yaml-complex-key", true, v1(&[("complex", "? [a, b]\n: c")])),
        case("yaml-two-documents", true, v1(&[]) + "---\nspec: 2\n"),
        case("yaml-syntax-error", false, v1(&[("tools", "tools: [cargo")])),
        case("yaml-invalid-utf8", false, [v1(&[]).as_bytes(), b"description: caf\xe9\n"].concat()),
        case(
            "yaml-too-deep",
            false,
            v1(&[("description", &format!("description: {}{}", "[".repeat(200), "]".repeat(200)))]),
        ),
        case("yaml-tab-indentation", false, v1(&[("model", "model:\n\tid: openai/gpt-5")])),
    ]
}

/// Is a diagnostic code about the manifest's own shape (YAML and manifest rules), as opposed to the package's
/// files or problems the reference finds only when a run starts?
fn manifest_level(code: Code) -> bool {
    match code {
        Code::YamlSyntax
        | Code::TabIndentation
        | Code::DuplicateKey
        | Code::MultipleDocuments
        | Code::UnsupportedTag
        | Code::ComplexKey
        | Code::ByteOrderMark
        | Code::InvalidUtf8
        | Code::AliasExpansionLimit
        | Code::NestingTooDeep
        | Code::TooManyNodes
        | Code::FileTooLarge
        | Code::ManifestNotObject
        | Code::UnsupportedSpec
        | Code::LegacyFieldInSpec1
        | Code::Spec0Manifest
        | Code::UnknownField
        | Code::MissingField
        | Code::InvalidType
        | Code::EmptyValue
        | Code::InvalidVersion
        | Code::InvalidModelId
        | Code::InvalidName
        | Code::InvalidUrl
        | Code::InvalidValue
        | Code::DuplicateName
        | Code::UnknownRuntimeProvider
        | Code::MissingImage
        | Code::DockerEngineRequiresDocker => true,
        Code::PathNotFound
        | Code::NoWorkbenches
        | Code::OutsideWorkbenchesDirectory
        | Code::PathNotRelative
        | Code::PathOutsideRepository
        | Code::PathOutsideBoundary
        | Code::MissingInstructions
        | Code::MissingSkillManifest
        | Code::InvalidSkill
        | Code::SkillNameMismatch
        | Code::MissingRunnerConfig
        | Code::RunnerConfigSymlink
        | Code::RunnerConfigCredentialFile
        | Code::RunnerConfigInvalidJson
        | Code::RunnerConfigLiteralCredential
        | Code::RunnerConfigShape
        | Code::RunnerConfigContent
        | Code::MissingBuildFile
        | Code::DockerfileCopiesCredential
        | Code::IoError
        | Code::ProseUndeclaredTool
        | Code::ProseUnlistedSkill
        | Code::ProseUndeclaredEnv
        | Code::UnsupportedRunner
        | Code::UndeclaredEnvReference
        | Code::PiMcpUnsupported
        | Code::ClaudeMcpDisabled
        | Code::DaytonaClassUnsupported
        | Code::DaytonaImageRequired
        | Code::UnknownModel
        | Code::UnknownModelProvider
        | Code::ProviderDoesNotServeModel
        | Code::LocalRuntimeImage
        | Code::UnsupportedRuntime => false,
    }
}

/// A YAML number as JSON: integral values become JSON integers. Infinity and NaN have no JSON form.
fn json_number(number: f64) -> Result<Json, String> {
    if !number.is_finite() {
        return Err(format!("the number {number} has no JSON form"));
    }
    if number.fract() == 0.0 && number.abs() < 9.0e18 {
        #[allow(clippy::cast_possible_truncation)]
        return Ok(Json::from(number as i64));
    }
    serde_json::Number::from_f64(number)
        .map(Json::Number)
        .ok_or_else(|| format!("the number {number} has no JSON form"))
}

fn to_json(node: &Node) -> Result<Json, String> {
    Ok(match &node.value {
        Value::Null => Json::Null,
        Value::Bool(value) => Json::Bool(*value),
        Value::Number(number) => json_number(*number)?,
        Value::String(text) => Json::String(text.to_string()),
        Value::Sequence(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Mapping(mapping) => Json::Object(
            mapping
                .entries
                .iter()
                .map(|entry| Ok((entry.key.to_string(), to_json(&entry.value)?)))
                .collect::<Result<serde_json::Map<String, Json>, String>>()?,
        ),
    })
}

/// The JSON instance a YAML document stands for, or why there is none (text that is not YAML, or values JSON
/// cannot hold). A document without an instance is rejected by every schema.
fn instance(bytes: &[u8]) -> Result<Json, String> {
    let parse = wb_syntax::parse(bytes);
    let fatal = [SyntaxErrorKind::Syntax, SyntaxErrorKind::Tab, SyntaxErrorKind::TooDeep, SyntaxErrorKind::InvalidUtf8];
    if let Some(error) = parse.errors.iter().find(|error| fatal.contains(&error.kind)) {
        return Err(format!("not YAML: {}", error.message));
    }
    parse.root.as_ref().map_or(Ok(Json::Null), to_json)
}

struct Validators {
    /// (spec, ours, official)
    specs: Vec<(u8, jsonschema::Validator, jsonschema::Validator)>,
}

impl Validators {
    /// `None` when the official schemas are absent (and not required): the comparison is then skipped.
    fn new() -> Option<Validators> {
        let mut specs = Vec::new();
        for spec in [0u8, 1] {
            let official = wb_testsupport::schemas::official_schema(&format!("v{spec}/workbench.schema.json"))?;
            specs.push((spec, compile(&wb_manifest::schema::schema(spec)), compile(&official)));
        }
        Some(Validators { specs })
    }
}

fn compile(schema: &Json) -> jsonschema::Validator {
    jsonschema::draft202012::options().should_validate_formats(true).build(schema).expect("the schema compiles")
}

/// The verdicts on one document.
struct Verdicts {
    /// The verdict of both schemas when they agree.
    schema_valid: Option<bool>,
    checker_valid: bool,
    /// Disagreements between our schema and the official one, and other failures.
    problems: Vec<String>,
    /// The checker's manifest-level errors, for messages.
    checker_errors: Vec<String>,
}

fn judge(validators: &Validators, bytes: &[u8]) -> Verdicts {
    let mut problems = Vec::new();
    let schema_valid = match instance(bytes) {
        Err(_) => Some(false),
        Ok(json) => {
            let specs: Vec<u8> = match json.get("spec").and_then(Json::as_i64) {
                Some(0) => vec![0],
                Some(1) => vec![1],
                _ => vec![0, 1],
            };
            let mut verdict = false;
            for (spec, ours, official) in &validators.specs {
                if !specs.contains(spec) {
                    continue;
                }
                let (ours_valid, official_valid) = (ours.is_valid(&json), official.is_valid(&json));
                if ours_valid != official_valid {
                    let errors: Vec<String> = official.iter_errors(&json).map(|e| e.to_string()).collect();
                    let ours_errors: Vec<String> = ours.iter_errors(&json).map(|e| e.to_string()).collect();
                    problems.push(format!(
                        "spec {spec}: our schema says {ours_valid}, the official one {official_valid} \
                         (official errors: {errors:?}; ours: {ours_errors:?}) for {json}"
                    ));
                }
                verdict |= official_valid;
            }
            if specs.len() > 1 && verdict {
                problems.push(format!("a document whose spec is not 0 or 1 passed a schema: {json}"));
            }
            problems.is_empty().then_some(verdict)
        }
    };
    let report = check_manifest_bytes(&nothing_exists(), Path::new(MANIFEST), bytes, ModelCatalog::embedded());
    let checker_errors: Vec<String> = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error && manifest_level(d.code))
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    Verdicts { schema_valid, checker_valid: checker_errors.is_empty(), problems, checker_errors }
}

/// A file system where nothing exists: the checker's verdict is then about the manifest alone, never about the
/// files it names (skill frontmatter, for instance, shares codes such as `invalid-name` with manifest rules).
fn nothing_exists() -> MemFs {
    MemFs::new()
}

/// Where the checker is told each document lives (beneath `.workbenches`, so the location is fine).
const MANIFEST: &str = "/repository/.workbenches/demo/workbench.yml";

/// Every `workbench.yml` under `fixtures/`, as (path relative to the repository, absolute path).
fn fixtures(root: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut stack = vec![root.join("fixtures")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && path.file_name().is_some_and(|n| n == "workbench.yml") {
                let relative = path.strip_prefix(root).unwrap_or(&path);
                let name = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                found.push((name, path));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn schemas_and_checker_agree() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(validators) = Validators::new() else {
        return;
    };
    let mut failures: Vec<String> = Vec::new();
    let mut used = vec![false; EXCEPTIONS.len()];
    // (name, bytes, the official schema's verdict expected by the table)
    let mut documents: Vec<(String, Vec<u8>, Option<bool>)> = Vec::new();
    let mut names = std::collections::HashSet::new();
    for case in table() {
        assert!(names.insert(case.name), "two table cases are named {}", case.name);
        documents.push((case.name.to_owned(), case.yaml, Some(case.valid)));
    }
    for (name, path) in fixtures(&root) {
        let bytes = std::fs::read(&path).expect("read fixture");
        documents.push((name, bytes, None));
    }
    for (name, bytes, expected) in &documents {
        let verdicts = judge(&validators, bytes);
        for problem in &verdicts.problems {
            failures.push(format!("{name}: {problem}"));
        }
        let listed = EXCEPTIONS.iter().position(|e| e.document == name);
        if let Some(index) = listed {
            used[index] = true;
        }
        let Some(schema_valid) = verdicts.schema_valid else { continue };
        if let Some(expected) = expected
            && *expected != schema_valid
        {
            failures.push(format!("{name}: the table expects the schemas to say {expected}, they say {schema_valid}"));
        }
        match (listed, schema_valid == verdicts.checker_valid) {
            (None, true) => {}
            (None, false) => failures.push(format!(
                "{name}: the schemas say {schema_valid}, the checker {} (errors: {:?}); if this is a documented \
                 parser/schema difference (engine facts b.8), list it in EXCEPTIONS",
                verdicts.checker_valid, verdicts.checker_errors
            )),
            (Some(index), agree) => {
                let exception = &EXCEPTIONS[index];
                if agree {
                    failures.push(format!(
                        "{name}: stale exception ({:?}): the schemas and the checker now agree ({schema_valid})",
                        exception.reasons
                    ));
                } else if exception.schema_valid != schema_valid {
                    failures.push(format!(
                        "{name}: the exception ({:?}) expects the schemas to say {}, they say {schema_valid}",
                        exception.reasons, exception.schema_valid
                    ));
                }
            }
        }
    }
    for (exception, used) in EXCEPTIONS.iter().zip(&used) {
        if !used {
            failures
                .push(format!("stale exception: no document named {} ({:?})", exception.document, exception.reasons));
        }
    }
    assert!(failures.is_empty(), "{} problems:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn fixtures_are_found() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert!(!fixtures(&root).is_empty(), "no workbench.yml under fixtures/");
}

#[test]
fn conversion_keeps_integers_and_refuses_non_finite_numbers() {
    assert_eq!(
        instance(b"a: 1.0\nb: 0.5\nc: 0x10\nd: [true, ~]\n").ok(),
        Some(serde_json::json!({"a": 1, "b": 0.5, "c": 16, "d": [true, null]}))
    );
    assert!(instance(b"a: .inf\n").is_err());
    assert!(instance(b"a: [b\n").is_err());
}
