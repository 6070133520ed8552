//! The field catalog: every manifest field of spec 0 and spec 1 with its shape, requirement, default,
//! allowed values and one line of documentation.
//!
//! It is the single source for the allowed keys the checks enforce, for the generated JSON schemas, and for
//! hover and completion in the language server.

/// Which specs a field belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Specs {
    Both,
    Only0,
    Only1,
}

impl Specs {
    pub fn includes(self, spec: u8) -> bool {
        match self {
            Specs::Both => true,
            Specs::Only0 => spec == 0,
            Specs::Only1 => spec == 1,
        }
    }
}

/// The shape of a field's value.
#[derive(Debug)]
pub enum Shape {
    /// The integer spec number.
    Spec,
    /// A non-empty string, optionally matching a pattern. `suggestions` are known values (not a closed set).
    Text {
        pattern: Option<&'static str>,
        suggestions: &'static [&'static str],
    },
    /// An `http://` or `https://` URL.
    Url,
    /// One of a closed set of strings.
    Enum(&'static [&'static str]),
    Boolean,
    PositiveInteger,
    PositiveNumber,
    /// A list of strings (entries are trimmed; blank ones dropped).
    TextList,
    /// A non-empty list of distinct values from a closed set.
    EnumList(&'static [&'static str]),
    /// A mapping with the given fields. `nullable` accepts an empty value (`local:`).
    Object {
        fields: &'static [Field],
        nullable: bool,
    },
    /// A list of objects.
    ObjectList {
        fields: &'static [Field],
        min_items: usize,
    },
    /// A mapping from names matching `key_pattern` to objects with `fields`.
    NamedMap {
        key_pattern: &'static str,
        key_doc: &'static str,
        fields: &'static [Field],
    },
    /// A mapping from header names to non-empty strings.
    StringMap,
    /// A published image reference or a build object.
    Image,
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub shape: Shape,
    pub required: bool,
    /// The default, as JSON text.
    pub default: Option<&'static str>,
    pub doc: &'static str,
    pub specs: Specs,
}

const fn field(name: &'static str, shape: Shape, required: bool, doc: &'static str) -> Field {
    Field { name, shape, required, default: None, doc, specs: Specs::Both }
}

const fn with_default(mut field: Field, default: &'static str) -> Field {
    field.default = Some(default);
    field
}

const fn only(mut field: Field, specs: Specs) -> Field {
    field.specs = specs;
    field
}

/// ASCII digits only: the reference's JavaScript `\d` is ASCII, Rust's `\d` is any Unicode digit.
pub const SEMVER_PATTERN: &str = r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$";
pub const MODEL_ID_PATTERN: &str = r"^[a-z0-9][a-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._:/-]*$";
pub const PROVIDER_PATTERN: &str = r"^[a-z0-9][a-z0-9._-]*$";
pub const SLUG_PATTERN: &str = r"^[a-z0-9]+(?:-[a-z0-9]+)*$";
pub const ENV_NAME_PATTERN: &str = r"^[A-Z][A-Z0-9_]*$";

pub const RUNNERS: &[&str] = &["opencode", "claude-code", "pi"];
pub const RUNTIME_PROVIDERS: &[&str] = &["local", "docker", "e2b", "daytona"];
pub const DAYTONA_CLASSES: &[&str] = &["linux", "windows", "gpu", "macos"];
pub const OS_VALUES: &[&str] = &["linux", "macos", "windows"];
pub const ARCH_VALUES: &[&str] = &["x64", "arm64"];
pub const ACCESS_VALUES: &[&str] = &["read-only", "read-write"];

pub static ROUTE_FIELDS: &[Field] = &[
    field(
        "provider",
        Shape::Text { pattern: Some(PROVIDER_PATTERN), suggestions: &[] },
        true,
        "A provider identifier such as `openai` or `openrouter` that may serve the model.",
    ),
    field(
        "model",
        Shape::Text { pattern: None, suggestions: &[] },
        false,
        "The provider-native model identifier, when it differs from the catalog or the model is absent from it.",
    ),
];

pub static MODEL_FIELDS: &[Field] = &[
    field(
        "id",
        Shape::Text { pattern: Some(MODEL_ID_PATTERN), suggestions: &[] },
        true,
        "The provider-neutral `lab/model` identifier, where `lab` is the organization that defines the model.",
    ),
    field(
        "routes",
        Shape::ObjectList { fields: ROUTE_FIELDS, min_items: 1 },
        false,
        "Restricts or orders the providers that may serve the model. Routes serve the same model; they are not fallbacks.",
    ),
];

pub static MCP_FIELDS: &[Field] = &[
    field(
        "name",
        Shape::Text { pattern: Some(SLUG_PATTERN), suggestions: &[] },
        true,
        "The server's name: lowercase and hyphenated, unique within the manifest.",
    ),
    with_default(
        field("transport", Shape::Enum(&["http"]), false, "The transport. Streamable HTTP (`http`) is the only one."),
        "\"http\"",
    ),
    field("url", Shape::Url, true, "The server's `http://` or `https://` URL."),
    field(
        "headers",
        Shape::StringMap,
        false,
        "Request headers. Values may reference declared environment variables as `${NAME}`; the secret never enters generated configuration.",
    ),
];

pub static ENV_FIELDS: &[Field] = &[with_default(
    field(
        "required",
        Shape::Boolean,
        false,
        "Whether a run is rejected when the variable is unset. An unset optional variable disables the MCP servers that reference it.",
    ),
    "true",
)];

pub static WORKSPACE_FIELDS: &[Field] = &[
    with_default(
        field("required", Shape::Boolean, false, "Whether every run must bind a directory to this workspace."),
        "true",
    ),
    with_default(
        field(
            "access",
            Shape::Enum(ACCESS_VALUES),
            false,
            "`read-only` or `read-write`. The local runtime checks it but cannot enforce it.",
        ),
        "\"read-only\"",
    ),
];

pub static IMAGE_BUILD_FIELDS: &[Field] = &[
    field(
        "build",
        Shape::Text { pattern: None, suggestions: &[] },
        true,
        "A package-relative Dockerfile, inside the repository.",
    ),
    with_default(
        field(
            "context",
            Shape::Text { pattern: None, suggestions: &[] },
            false,
            "The package-relative build context, inside the repository.",
        ),
        "\".\"",
    ),
];

pub static DOCKER_ENGINE_FIELDS: &[Field] = &[field(
    "mode",
    Shape::Enum(&["host"]),
    true,
    "`host` binds the host's Docker engine. Each run must also pass `--allow-host-docker`; the image needs the Docker CLI.",
)];

pub static DOCKER_FIELDS: &[Field] = &[field(
    "engine",
    Shape::Object { fields: DOCKER_ENGINE_FIELDS, nullable: false },
    false,
    "Requests access to a Docker engine from inside the container.",
)];

const IMAGE_DOC: &str =
    "A published image reference, or `{build, context}` to build one from a package-relative Dockerfile.";

pub static DOCKER_RUNTIME_FIELDS: &[Field] = &[
    field("image", Shape::Image, true, IMAGE_DOC),
    field(
        "docker",
        Shape::Object { fields: DOCKER_FIELDS, nullable: false },
        false,
        "Host Docker engine binding (`engine: {mode: host}`), granted per run with `--allow-host-docker`.",
    ),
];

pub static E2B_RUNTIME_FIELDS: &[Field] = &[field("image", Shape::Image, true, IMAGE_DOC)];

pub static DAYTONA_RUNTIME_FIELDS: &[Field] = &[
    field(
        "class",
        Shape::Enum(DAYTONA_CLASSES),
        true,
        "The sandbox class: `linux`, `windows`, `gpu` or `macos`. The reference engine runs only `linux`.",
    ),
    field(
        "image",
        Shape::Image,
        false,
        "A published image for the sandbox. Optional in the schema, required to run; a build object cannot run.",
    ),
];

pub static RUNTIMES_FIELDS: &[Field] = &[
    field(
        "local",
        Shape::Object { fields: &[], nullable: true },
        false,
        "Runs on the host. Takes no configuration: `local: {}` or `local:`. Not an isolation boundary.",
    ),
    field(
        "docker",
        Shape::Object { fields: DOCKER_RUNTIME_FIELDS, nullable: false },
        false,
        "Runs in a Docker container built from or pulled as `image`.",
    ),
    field(
        "e2b",
        Shape::Object { fields: E2B_RUNTIME_FIELDS, nullable: false },
        false,
        "Runs in an E2B sandbox created from `image`.",
    ),
    field(
        "daytona",
        Shape::Object { fields: DAYTONA_RUNTIME_FIELDS, nullable: false },
        false,
        "Runs in a Daytona sandbox of the given `class`.",
    ),
];

pub static REQUIREMENTS_FIELDS: &[Field] = &[
    field("os", Shape::EnumList(OS_VALUES), false, "The operating systems the environment may run; any one suffices."),
    field(
        "arch",
        Shape::EnumList(ARCH_VALUES),
        false,
        "The CPU architectures the environment may use; any one suffices.",
    ),
    field("cpu", Shape::PositiveInteger, false, "The minimum number of vCPUs."),
    field("memory_gb", Shape::PositiveNumber, false, "The minimum memory in GiB."),
    field("disk_gb", Shape::PositiveNumber, false, "The minimum disk in GiB."),
    with_default(field("gpu", Shape::Boolean, false, "`true` when the Workbench needs a GPU."), "false"),
];

pub static TOP_LEVEL_FIELDS: &[Field] = &[
    field("spec", Shape::Spec, true, "The manifest schema version: `1` (stable) or `0` (frozen legacy)."),
    field(
        "version",
        Shape::Text { pattern: Some(SEMVER_PATTERN), suggestions: &[] },
        true,
        "The author's semantic release version, such as `0.1.0` or `1.2.0-rc.1`.",
    ),
    field(
        "name",
        Shape::Text { pattern: None, suggestions: &[] },
        true,
        "The package name: the default alias and registry name.",
    ),
    field(
        "description",
        Shape::Text { pattern: None, suggestions: &[] },
        false,
        "One line on what the Workbench is for.",
    ),
    field(
        "runner",
        Shape::Text { pattern: None, suggestions: RUNNERS },
        true,
        "The harness that executes the work: `opencode`, `claude-code` or `pi`.",
    ),
    field(
        "model",
        Shape::Object { fields: MODEL_FIELDS, nullable: false },
        true,
        "The model policy: a provider-neutral `id` and optional provider `routes`.",
    ),
    field(
        "runner_config",
        Shape::Text { pattern: None, suggestions: &[] },
        false,
        "A package-relative file or directory of runner-native configuration, without symlinks or credentials.",
    ),
    field(
        "instructions",
        Shape::Text { pattern: None, suggestions: &[] },
        true,
        "A package-relative Markdown file given to the runner as system instructions.",
    ),
    with_default(
        field("skills", Shape::TextList, false, "Package-relative skill directories, each containing a `SKILL.md`."),
        "[]",
    ),
    with_default(
        field("tools", Shape::TextList, false, "CLI executables that must exist in the runtime before a run starts."),
        "[]",
    ),
    with_default(
        field(
            "mcps",
            Shape::ObjectList { fields: MCP_FIELDS, min_items: 0 },
            false,
            "Remote MCP servers over Streamable HTTP.",
        ),
        "[]",
    ),
    with_default(
        field(
            "env",
            Shape::NamedMap {
                key_pattern: ENV_NAME_PATTERN,
                key_doc: "An environment variable the Workbench reads. Values are supplied when a run starts, never in the manifest.",
                fields: ENV_FIELDS,
            },
            false,
            "Environment variable names the Workbench reads, each with an optional `required` flag.",
        ),
        "{}",
    ),
    with_default(
        field(
            "workspaces",
            Shape::NamedMap {
                key_pattern: "^(?!primary$)[a-z0-9]+(?:-[a-z0-9]+)*$",
                key_doc: "A named workspace beyond the primary one, bound to a directory per run with `--workspace NAME=PATH`.",
                fields: WORKSPACE_FIELDS,
            },
            false,
            "Named workspaces beyond the primary one, with `required` and `access`.",
        ),
        "{}",
    ),
    only(
        field(
            "requirements",
            Shape::Object { fields: REQUIREMENTS_FIELDS, nullable: false },
            false,
            "What the environment must satisfy: os, arch, cpu, memory_gb, disk_gb, gpu.",
        ),
        Specs::Only1,
    ),
    only(
        field(
            "runtimes",
            Shape::Object { fields: RUNTIMES_FIELDS, nullable: false },
            true,
            "The runtimes the author supports, in order; the first is the default.",
        ),
        Specs::Only1,
    ),
    only(
        field(
            "runtime",
            Shape::Text { pattern: None, suggestions: RUNTIME_PROVIDERS },
            true,
            "Spec 0: the single runtime provider. Spec 1 declares `runtimes` instead.",
        ),
        Specs::Only0,
    ),
    only(
        field("image", Shape::Image, false, "Spec 0: the runtime's image. Spec 1 puts it under `runtimes.<provider>`."),
        Specs::Only0,
    ),
    only(
        field(
            "docker",
            Shape::Object { fields: DOCKER_FIELDS, nullable: false },
            false,
            "Spec 0: host Docker engine binding. Spec 1 puts it under `runtimes.docker`.",
        ),
        Specs::Only0,
    ),
];

/// The top-level fields of one spec.
pub fn top_level(spec: u8) -> impl Iterator<Item = &'static Field> {
    TOP_LEVEL_FIELDS.iter().filter(move |field| field.specs.includes(spec))
}

/// Finds a field among `fields` by name, for one spec.
pub fn find(fields: &'static [Field], name: &str, spec: u8) -> Option<&'static Field> {
    fields.iter().find(|field| field.name == name && field.specs.includes(spec))
}

/// The names allowed among `fields` for one spec.
pub fn names(fields: &'static [Field], spec: u8) -> Vec<&'static str> {
    fields.iter().filter(|field| field.specs.includes(spec)).map(|field| field.name).collect()
}

/// One step of a path into the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// What a path leads to: a field, or the key of a named map's entry.
#[derive(Debug, Clone, Copy)]
pub enum Lookup {
    Field(&'static Field),
    /// A user-chosen key of `env` or `workspaces`.
    MapKey {
        map: &'static Field,
        key_doc: &'static str,
    },
}

/// Resolves a path such as `model.routes[0].provider` to its catalog entry.
pub fn lookup(spec: u8, path: &[Segment]) -> Option<Lookup> {
    let mut fields: &'static [Field] = TOP_LEVEL_FIELDS;
    let mut current: Option<Lookup> = None;
    let mut index = 0;
    while index < path.len() {
        let segment = &path[index];
        match (current, segment) {
            (None, Segment::Key(name)) => {
                let found = find(fields, name, spec)?;
                current = Some(Lookup::Field(found));
            }
            (Some(Lookup::Field(parent)), segment) => match (&parent.shape, segment) {
                (Shape::Object { fields: children, .. }, Segment::Key(name)) => {
                    fields = children;
                    current = Some(Lookup::Field(find(fields, name, spec)?));
                }
                (Shape::ObjectList { fields: children, .. }, Segment::Index(_)) => {
                    fields = children;
                    let Some(Segment::Key(name)) = path.get(index + 1) else {
                        return Some(Lookup::Field(parent));
                    };
                    index += 1;
                    current = Some(Lookup::Field(find(fields, name, spec)?));
                }
                (Shape::NamedMap { key_doc, .. }, Segment::Key(_)) => {
                    current = Some(Lookup::MapKey { map: parent, key_doc });
                }
                (Shape::Image, Segment::Key(name)) => {
                    current = Some(Lookup::Field(find(IMAGE_BUILD_FIELDS, name, spec)?));
                }
                (Shape::StringMap | Shape::TextList | Shape::EnumList(_), _) => return Some(Lookup::Field(parent)),
                _ => return None,
            },
            (Some(Lookup::MapKey { map, .. }), Segment::Key(name)) => {
                let Shape::NamedMap { fields: children, .. } = &map.shape else { return None };
                fields = children;
                current = Some(Lookup::Field(find(fields, name, spec)?));
            }
            _ => return None,
        }
        index += 1;
    }
    current
}
