//! The execution lifecycle through the library: dry run, smoke and run of each runner against the fake runners
//! (`tests/fixtures/runners/`) replaying recorded native streams (`tests/fixtures/streams/`), and every run-time
//! error text of the reference (engine facts b.6) that the engine produces.
//!
//! No real runner, model or network is involved. Runs inherit only the environment a test gives them
//! (`Context::inherited`), so the fake runners and their log directory are found through it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use wb_engine::{DryRun, Ending, EngineError, Options, RunMode, RunResult, Smoke, SmokeStatus};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_testsupport::{self as support, FINAL, OPENCODE, TASK, World, claude_world, minimal, opencode_world, pi_world};

fn catalog() -> &'static ModelCatalog {
    ModelCatalog::embedded()
}

fn base_options(world: &World, source: &str) -> Options {
    common::options(world, source, TASK, world.inherited())
}

fn with_env(mut options: Options, pairs: &[(&str, &str)]) -> Options {
    for (name, value) in pairs {
        options.context.inherited.insert((*name).to_owned(), (*value).to_owned());
    }
    options
}

fn opencode_options(world: &World) -> Options {
    with_env(
        base_options(world, ".workbenches/oc-demo"),
        &[("DATABASE_URL", "postgres://db.internal/ledger"), ("OPENAI_API_KEY", "sk-openai-test-value")],
    )
}

fn claude_options(world: &World) -> Options {
    let mut options = with_env(
        base_options(world, ".workbenches/cc-demo"),
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test-value"),
            ("TRACKER_TOKEN", "tracker-test-value"),
            ("ANTHROPIC_ADMIN_KEY", "admin-test-value"),
        ],
    );
    options.request.settings.workspaces = vec![format!("docs={}", world.root.join("docs").display())];
    options
}

fn pi_options(world: &World) -> Options {
    with_env(base_options(world, ".workbenches/pi-demo"), &[("GEMINI_API_KEY", "gemini-test-value")])
}

fn dry_run(options: &Options) -> Result<DryRun, EngineError> {
    wb_engine::dry_run(&OsFileSystem, options, None, catalog())
}

fn smoke(options: &Options) -> Vec<Smoke> {
    wb_engine::smoke(&OsFileSystem, options, catalog()).unwrap()
}

/// Runs to the end, collecting the events as JSON. `cancel_on` = (text, marker): when an `output.text` has this
/// text, waits for the fake runner to write the marker file (it is hanging then) and cancels.
fn run_collect(options: &Options, cancel_on: Option<(&str, &Path)>) -> (Result<RunResult, EngineError>, Vec<Value>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let mut events = Vec::new();
    let result = wb_engine::run(&OsFileSystem, options, &RunMode::default(), catalog(), cancel, &mut |event| {
        let value = serde_json::to_value(event).unwrap();
        if let Some((text, marker)) = cancel_on
            && value["type"] == "output.text"
            && value["data"]["text"] == text
        {
            support::wait_for(marker);
            flag.store(true, Ordering::SeqCst);
        }
        events.push(value);
    });
    (result, events)
}

fn run_with_stream(options: &Options, runner: &str, stream: &str) -> (RunResult, Vec<Value>) {
    let mut options = options.clone();
    options
        .context
        .inherited
        .insert("FAKE_RUNNER_SCRIPT".to_owned(), support::stream(runner, stream).display().to_string());
    let (result, events) = run_collect(&options, None);
    (result.unwrap(), events)
}

/// The error a dry run of these options ends with.
fn dry_run_error(options: &Options) -> String {
    match dry_run(options) {
        Ok(report) => panic!("the dry run succeeded: {}", serde_json::to_string_pretty(&report).unwrap()),
        Err(error) => error.to_string(),
    }
}

fn string_list(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

fn outbox_of(path: &str, world: &World) -> bool {
    let runs = world.home.join(".workbench/runs");
    let Ok(rest) = Path::new(path).strip_prefix(&runs) else { return false };
    let parts: Vec<String> = rest.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    parts.len() == 2 && parts[1] == "outbox" && parts[0].starts_with("wb_") && parts[0].len() == 27
}

// ---------------------------------------------------------------------------------------------------------------
// Dry run

#[test]
fn opencode_dry_run_translation() {
    let world = opencode_world();
    let infra = world.dir("infra");
    let mut options = with_env(
        opencode_options(&world),
        &[("DATABASE_API_TOKEN", "db-token-test-value"), ("TEAM_ID", "team-test-value"), ("XAI_API_KEY", "xai-test")],
    );
    options.request.settings.workspaces = vec![format!("infra={}", infra.display())];
    let report = dry_run(&options).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let work = world.work.display().to_string();
    assert_eq!(
        report.command,
        ["opencode", "run", "--model", "openai/gpt-5.1", "--dir", work.as_str(), "--format", "json", "--", TASK]
    );
    assert_eq!(report.cwd, work);
    assert_eq!(report.runner, "opencode");
    assert_eq!(report.runtime, "local");
    assert_eq!(
        json["model_route"],
        json!({"canonical": "openai/gpt-5.1", "provider": "openai", "model": "gpt-5.1", "native_provider": "openai", "route": "openai/gpt-5.1"})
    );
    assert_eq!(json["authentication"]["ready"], true);
    assert_eq!(json["authentication"]["method"], "environment");
    assert_eq!(json["authentication"]["variable"], "OPENAI_API_KEY");
    assert_eq!(report.skills, ["sql-migrations"]);
    assert_eq!(
        report.staged_files,
        ["skills/sql-migrations/SKILL.md", "skills/sql-migrations/reference.md", "workbench-instructions.md"]
    );
    assert_eq!(
        json["workspaces"],
        json!([
            {"name": "primary", "path": work, "access": "read-write"},
            {"name": "infra", "path": infra.display().to_string(), "access": "read-only"}
        ])
    );
    // Names only, sorted; provider keys of other routes are not bound for the runner.
    assert_eq!(
        report.env,
        [
            "DATABASE_API_TOKEN",
            "DATABASE_URL",
            "OPENAI_API_KEY",
            "OPENCODE_CONFIG_CONTENT",
            "OPENCODE_CONFIG_DIR",
            "TEAM_ID",
            "WORKBENCH_OUTPUT_DIR",
            "WORKBENCH_WORKSPACE_INFRA"
        ]
    );
    assert!(report.removed_env.contains(&"OPENROUTER_API_KEY".to_owned()));
    assert!(report.removed_env.contains(&"XAI_API_KEY".to_owned()));
    assert!(!report.removed_env.contains(&"OPENAI_API_KEY".to_owned()));
    assert_eq!(json["mcps"], json!({"enabled": ["database"], "disabled": []}));
    // The OpenCode config, as OPENCODE_CONFIG_CONTENT carries it: header references rewritten to {env:VAR}.
    assert_eq!(report.native_key, "opencode_config");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let instructions = report.native["instructions"][0].as_str().unwrap().to_owned();
    assert!(instructions.ends_with("/workbench-instructions.md"), "{instructions}");
    // One-shot OpenCode rejects whatever would ask: the outbox and the named workspaces are allowed external
    // directories, and the read-only one is denied to the editing tools by a pattern relative to the work tree
    // (`/` outside Git).
    let outbox = report.native["permission"]["external_directory"]
        .as_object()
        .and_then(|globs| globs.keys().find(|k| k.ends_with("/outbox/**")).cloned())
        .expect("the outbox is an allowed external directory");
    assert!(outbox.starts_with(&world.home.join(".workbench/runs/wb_").display().to_string()), "{outbox}");
    assert_eq!(
        report.native,
        json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "model": "openai/gpt-5.1",
            "instructions": [instructions],
            "mcp": {"database": {
                "type": "remote",
                "url": "https://db.example.com/mcp",
                "enabled": true,
                "headers": {"Authorization": "Bearer {env:DATABASE_API_TOKEN}", "X-Team": "{env:TEAM_ID}-fixed"}
            }},
            "permission": {
                "external_directory": {outbox: "allow", format!("{}/**", infra.display()): "allow"},
                "edit": {format!("{}/**", infra.strip_prefix("/").unwrap().display()): "deny"}
            }
        })
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    // The staged directory is gone once the dry run returns.
    assert!(!Path::new(&instructions).parent().unwrap().exists(), "the staged directory was removed");
    let text = serde_json::to_string(&json).unwrap();
    for secret in
        ["postgres://db.internal", "sk-openai-test-value", "db-token-test-value", "team-test-value", "xai-test"]
    {
        assert!(!text.contains(secret), "{secret} leaked into the dry run");
    }
}

#[test]
fn opencode_dry_run_disables_an_mcp_whose_variable_is_unset() {
    let world = opencode_world();
    let options = with_env(opencode_options(&world), &[("TEAM_ID", "team-test-value")]);
    let report = dry_run(&options).unwrap();
    assert_eq!(serde_json::to_value(&report.mcps).unwrap(), json!({"enabled": [], "disabled": ["database"]}));
    assert_eq!(report.warnings, ["optional MCP disabled: database"]);
    assert_eq!(report.native["mcp"], json!({}));
    assert!(!report.env.contains(&"DATABASE_API_TOKEN".to_owned()));
}

#[test]
fn opencode_runner_config_file_is_passed_as_opencode_config() {
    let world = World::new();
    world.package("oc-file", &minimal("oc-file", "opencode", "openai/gpt-5.1", "runner_config: ./opencode.json\n"));
    let config = world.file(".workbenches/oc-file/opencode.json", "{\"theme\": \"system\"}\n");
    let options = with_env(base_options(&world, ".workbenches/oc-file"), &[("OPENAI_API_KEY", "sk-openai-test-value")]);
    let report = dry_run(&options).unwrap();
    assert!(report.env.contains(&"OPENCODE_CONFIG".to_owned()));
    let (run, _) = run_with_stream(&options, "opencode", "success");
    assert_eq!(run.ending, Ending::Completed);
    let invocation = world.invocation();
    // A staged copy: OpenCode rewrites the file it is given, never the package's.
    let staged = invocation["values"]["OPENCODE_CONFIG"].as_str().unwrap();
    let stage = invocation["values"]["OPENCODE_CONFIG_DIR"].as_str().unwrap();
    assert_eq!(staged, format!("{stage}/packaged-config.json"));
    let copied = std::fs::read_to_string(world.log.join("staged/OPENCODE_CONFIG")).unwrap();
    assert_eq!(copied, "{\"theme\": \"system\"}\n");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "{\"theme\": \"system\"}\n");
}

/// The package's own permission rules survive the engine's: a string rule becomes the `*` entry of the merged
/// object (OpenCode merges configurations, and an object would replace the string). A read-only workspace that
/// is the Git top level is denied as `**`; one that contains the writable primary cannot be denied and says so.
#[test]
fn opencode_permissions_merge_with_the_packages_own() {
    let world = World::new();
    world.install_runners(&["opencode"]);
    let manifest = minimal(
        "oc-perm",
        "opencode",
        "openai/gpt-5.1",
        "runner_config: ./opencode.json\nworkspaces:\n  docs:\n    required: true\n    access: read-only\n",
    );
    world.package("oc-perm", &manifest);
    world.file(
        ".workbenches/oc-perm/opencode.json",
        r#"{"permission": {"edit": "deny", "bash": "allow", "external_directory": {"/srv/shared/**": "allow"}}}"#,
    );
    let docs = world.dir("docs");
    let options = |docs: &Path| {
        let mut options =
            with_env(base_options(&world, ".workbenches/oc-perm"), &[("OPENAI_API_KEY", "sk-openai-test-value")]);
        options.request.settings.workspaces = vec![format!("docs={}", docs.display())];
        options
    };
    let report = dry_run(&options(&docs)).unwrap();
    let permission = &report.native["permission"];
    assert_eq!(permission["bash"], "allow");
    let relative = docs.strip_prefix("/").unwrap().display().to_string();
    assert_eq!(permission["edit"], json!({"*": "deny", format!("{relative}/**"): "deny"}));
    let external: Vec<&String> = permission["external_directory"].as_object().unwrap().keys().collect();
    assert_eq!(external[0], "/srv/shared/**", "the package's entries come first: {external:?}");
    assert!(external.contains(&&format!("{}/**", docs.display())));
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);

    // docs is a Git top level: `**` relative to that work tree... when the primary is inside it, nothing can be
    // denied without denying the primary.
    let work_in_docs = docs.join("app");
    std::fs::create_dir_all(&work_in_docs).unwrap();
    let mut nested = options(&docs);
    nested.request.settings.primary = Some(work_in_docs);
    let report = dry_run(&nested).unwrap();
    assert_eq!(
        report.warnings,
        ["OpenCode cannot keep workspace docs read-only: it contains the writable workspace primary"]
    );
    assert_eq!(report.native["permission"]["edit"], "deny", "only the package's own rule");

    // A read-only workspace that is the work tree itself.
    let repo = world.dir("repo-ro");
    let status = std::process::Command::new("git").args(["init", "-q"]).arg(&repo).status().unwrap();
    assert!(status.success());
    let sibling = repo.join("sub");
    std::fs::create_dir_all(&sibling).unwrap();
    let mut inside = options(&repo);
    inside.request.settings.primary = Some(world.work.clone());
    let report = dry_run(&inside).unwrap();
    let relative = repo.strip_prefix("/").unwrap().display().to_string();
    assert_eq!(report.native["permission"]["edit"][format!("{relative}/**")], "deny");
}

/// A read-only workspace inside the writable primary is denied to Claude Code's editing tools: not allowing it
/// is not enough, the primary's rule covers it.
#[test]
fn claude_code_denies_a_read_only_workspace_inside_the_primary() {
    let world = World::new();
    world.install_runners(&["claude"]);
    world.package(
        "cc-nested",
        &minimal(
            "cc-nested",
            "claude-code",
            "anthropic/claude-sonnet-4.5",
            "workspaces:\n  docs:\n    required: true\n    access: read-only\n",
        ),
    );
    let docs = world.work.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let mut options =
        with_env(base_options(&world, ".workbenches/cc-nested"), &[("ANTHROPIC_API_KEY", "sk-ant-test-value")]);
    options.request.settings.workspaces = vec![format!("docs={}", docs.display())];
    let report = dry_run(&options).unwrap();
    let settings = &report.native["settings.json"]["permissions"];
    assert!(
        settings["deny"].as_array().unwrap().contains(&json!(format!("Edit(/{}/**)", docs.display()))),
        "{settings}"
    );
}

/// The route's own provider key is not the only one a package may need: a declared variable is never removed
/// from the runner's environment. A provider the packaged configuration does not define is not ready.
#[test]
fn declared_keys_stay_and_undefined_custom_providers_are_not_ready() {
    let world = World::new();
    world.install_runners(&["opencode"]);
    let manifest = |provider: &str| {
        minimal(
            "gw",
            "opencode",
            "private-lab/review-model",
            "runner_config: ./opencode.json\nenv:\n  OPENAI_API_KEY:\n    required: true\n",
        )
        .replace(
            "  id: private-lab/review-model\n",
            &format!(
                "  id: private-lab/review-model\n  routes:\n    - provider: {provider}\n      model: deployment-42\n"
            ),
        )
    };
    world.package("gw", &manifest("gateway"));
    world.file(
        ".workbenches/gw/opencode.json",
        r#"{"provider": {"gateway": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "https://gw.internal/v1", "apiKey": "{env:OPENAI_API_KEY}"}, "models": {"deployment-42": {}}}}}"#,
    );
    let options = with_env(base_options(&world, ".workbenches/gw"), &[("OPENAI_API_KEY", "sk-openai-test-value")]);
    let report = dry_run(&options).unwrap();
    assert_eq!(report.authentication.method.as_deref(), Some("runner_config"));
    assert!(report.env.iter().any(|n| n == "OPENAI_API_KEY"), "{:?}", report.env);
    assert!(!report.removed_env.iter().any(|n| n == "OPENAI_API_KEY"), "{:?}", report.removed_env);
    // A typo in the route: nothing defines `gatewy`.
    world.package("gw", &manifest("gatewy"));
    let report = dry_run(&options).unwrap();
    assert!(!report.authentication.ready);
    assert_eq!(
        report.authentication.instruction.as_deref(),
        Some("The packaged runner_config defines no provider gatewy")
    );
}

/// Pi runs in RPC mode locally: the task is a prompt command on its stdin, never an argument an option or a
/// file to include could be read from (a print run's task gets a leading space instead: pi.rs's unit tests).
#[test]
fn pi_never_reads_the_task_as_an_option() {
    let world = pi_world();
    for task in ["--version", "@notes.md summarise", "plain"] {
        let mut options =
            with_env(base_options(&world, ".workbenches/pi-demo"), &[("GEMINI_API_KEY", "gemini-test-value")]);
        options.request.task = Some(task.to_owned());
        let report = dry_run(&options).unwrap();
        assert!(!report.command.iter().any(|argument| argument.contains(task)), "{:?}", report.command);
        let prompt: Value = serde_json::from_str(report.stdin.as_deref().unwrap()).unwrap();
        assert_eq!(prompt, json!({"id": "wb_task", "type": "prompt", "message": task}));
    }
}

#[test]
fn claude_code_dry_run_translation() {
    let world = claude_world();
    let docs = world.root.join("docs").display().to_string();
    let report = dry_run(&claude_options(&world)).unwrap();
    let work = world.work.display().to_string();
    assert_eq!(report.runner, "claude-code");
    assert_eq!(report.native_key, "claude_config");
    let dir = report.native["directory"].as_str().unwrap().to_owned();
    let outbox = report.command[report.command.len() - 8].clone();
    assert!(outbox_of(&outbox, &world), "outbox {outbox}");
    assert_eq!(
        report.command,
        [
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "claude-sonnet-4-5",
            "--append-system-prompt-file",
            &format!("{dir}/workbench-instructions.md"),
            "--strict-mcp-config",
            "--mcp-config",
            &format!("{dir}/mcp.json"),
            "--settings",
            &format!("{dir}/settings.json"),
            "--setting-sources",
            "user",
            "--add-dir",
            &docs,
            "--add-dir",
            &outbox,
            "--max-turns",
            "7",
            // Local: the task, and the answers to what Claude Code asks, come on its stdin.
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
            "--replay-user-messages",
        ]
    );
    let stdin: Value = serde_json::from_str(report.stdin.as_deref().unwrap()).unwrap();
    assert_eq!((stdin["type"].as_str(), stdin["message"]["content"].as_str()), (Some("user"), Some(TASK)));
    assert_eq!(report.cwd, work);
    assert_eq!(report.model_route.provider, "anthropic");
    assert_eq!(report.model_route.model, "claude-sonnet-4-5");
    // settings.json: runner_config rules, the usable MCP, every workspace (Edit only where writable), the outbox.
    assert_eq!(
        report.native["settings.json"],
        json!({"permissions": {
            "allow": [
                "Bash(git diff:*)",
                "mcp__tracker",
                format!("Read(/{work}/**)"),
                format!("Edit(/{work}/**)"),
                format!("Read(/{docs}/**)"),
                format!("Edit(/{docs}/**)"),
                format!("Read(/{outbox}/**)"),
                format!("Edit(/{outbox}/**)")
            ],
            "deny": ["WebFetch"]
        }})
    );
    // mcp.json keeps ${VAR}: Claude Code expands it itself.
    assert_eq!(
        report.native["mcp.json"],
        json!({"mcpServers": {"tracker": {
            "type": "http",
            "url": "https://tracker.example.com/mcp",
            "headers": {"Authorization": "Bearer ${TRACKER_TOKEN}"}
        }}})
    );
    assert!(report.warnings.contains(
        &"MCP console is disabled because Claude Code does not expand Claude or Anthropic environment references in MCP headers"
            .to_owned()
    ));
    assert_eq!(serde_json::to_value(&report.mcps).unwrap(), json!({"enabled": ["tracker"], "disabled": ["console"]}));
    assert_eq!(report.skills, ["code-review"]);
    assert_eq!(
        report.staged_files,
        [
            "mcp.json",
            "settings.json",
            "skills/code-review/SKILL.md",
            "skills/code-review/reference.md",
            "workbench-instructions.md"
        ]
    );
    assert_eq!(
        report.env,
        [
            "ANTHROPIC_ADMIN_KEY",
            "ANTHROPIC_API_KEY",
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB",
            "CLAUDE_CONFIG_DIR",
            "DISABLE_AUTOUPDATER",
            "TRACKER_TOKEN",
            "WORKBENCH_OUTPUT_DIR",
            "WORKBENCH_WORKSPACE_DOCS"
        ]
    );
    assert!(!Path::new(&dir).exists(), "the staged directory was removed");
    let text = serde_json::to_string(&report).unwrap();
    for secret in ["sk-ant-test-value", "tracker-test-value", "admin-test-value"] {
        assert!(!text.contains(secret), "{secret} leaked into the dry run");
    }
}

#[test]
fn claude_code_openrouter_route_uses_anthropic_variables() {
    let world = World::new();
    world.package(
        "cc-router",
        &minimal("cc-router", "claude-code", "anthropic/claude-sonnet-4.5", "").replace(
            "  id: anthropic/claude-sonnet-4.5\n",
            "  id: anthropic/claude-sonnet-4.5\n  routes:\n    - provider: openrouter\n    - provider: anthropic\n",
        ),
    );
    let options = with_env(
        base_options(&world, ".workbenches/cc-router"),
        &[("OPENROUTER_API_KEY", "sk-or-test-value"), ("ANTHROPIC_API_KEY", "sk-ant-unselected")],
    );
    let report = dry_run(&options).unwrap();
    assert_eq!(report.model_route.provider, "openrouter");
    assert_eq!(report.model_route.model, "anthropic/claude-sonnet-4.5");
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "OPENROUTER_API_KEY"] {
        assert!(report.env.contains(&name.to_owned()), "{name} in {:?}", report.env);
    }
    let (run, _) = run_with_stream(&options, "claude-code", "success");
    assert_eq!(run.ending, Ending::Completed);
    let env = world.runner_environment();
    assert_eq!(env["ANTHROPIC_AUTH_TOKEN"], "sk-or-test-value");
    assert_eq!(env["ANTHROPIC_BASE_URL"], "https://openrouter.ai/api");
    assert_eq!(env["ANTHROPIC_API_KEY"], "", "the unselected Anthropic key is blanked");
}

#[test]
fn pi_dry_run_translation() {
    let world = pi_world();
    let report = dry_run(&pi_options(&world)).unwrap();
    assert_eq!(report.native_key, "pi_config");
    let dir = report.native["directory"].as_str().unwrap().to_owned();
    assert_eq!(report.native, json!({"directory": dir, "append_system": "APPEND_SYSTEM.md"}));
    assert_eq!(
        report.command,
        [
            "pi",
            "--mode",
            "rpc",
            "--no-session",
            "--no-context-files",
            "--provider",
            "google",
            "--model",
            "gemini-2.5-flash",
            "--skill",
            &format!("{dir}/skills/api-docs"),
        ]
    );
    assert_eq!(
        report.staged_files,
        ["APPEND_SYSTEM.md", "settings.json", "skills/api-docs/SKILL.md", "skills/api-docs/reference.md"]
    );
    assert_eq!(report.env, ["GEMINI_API_KEY", "PI_CODING_AGENT_DIR", "PI_OFFLINE", "WORKBENCH_OUTPUT_DIR"]);
    assert!(report.removed_env.contains(&"OPENAI_API_KEY".to_owned()));
    for name in ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"] {
        assert!(!report.removed_env.contains(&name.to_owned()), "{name} belongs to the selected provider");
    }
    assert!(!Path::new(&dir).exists(), "the staged directory was removed");
}

#[test]
fn pi_uses_its_native_provider_names() {
    let world = World::new();
    let manifest = minimal("pi-vercel", "pi", "openai/gpt-5.1", "")
        .replace("  id: openai/gpt-5.1\n", "  id: openai/gpt-5.1\n  routes:\n    - provider: vercel\n");
    world.package("pi-vercel", &manifest);
    let options =
        with_env(base_options(&world, ".workbenches/pi-vercel"), &[("AI_GATEWAY_API_KEY", "gateway-test-value")]);
    let report = dry_run(&options).unwrap();
    let at = report.command.iter().position(|a| a == "--provider").unwrap();
    assert_eq!(report.command[at + 1..at + 4], ["vercel-ai-gateway", "--model", "openai/gpt-5.1"]);
    assert_eq!(report.model_route.native_provider, "vercel-ai-gateway");
    assert_eq!(report.model_route.route, "vercel-ai-gateway/openai/gpt-5.1");
}

#[test]
fn unknown_model_with_explicit_routes_and_runner_config_runs() {
    let world = World::new();
    let manifest = minimal("custom", "opencode", "acme/coder-9", "runner_config: ./opencode.json\n").replace(
        "  id: acme/coder-9\n",
        "  id: acme/coder-9\n  routes:\n    - provider: openrouter\n      model: acme/coder-9-preview\n",
    );
    world.package("custom", &manifest);
    world.file(".workbenches/custom/opencode.json", "{}\n");
    let options = with_env(base_options(&world, ".workbenches/custom"), &[("OPENROUTER_API_KEY", "sk-or-test-value")]);
    let report = dry_run(&options).unwrap();
    assert_eq!(report.model_route.route, "openrouter/acme/coder-9-preview");
    assert_eq!(report.command[3], "openrouter/acme/coder-9-preview");
}

// ---------------------------------------------------------------------------------------------------------------
// Smoke

#[test]
fn smoke_reports_ready_with_what_it_checked() {
    let world = opencode_world();
    let manifest = OPENCODE.replace("runtimes:\n", "requirements:\n  cpu: 1\n  disk_gb: 1\nruntimes:\n");
    world.package("oc-demo", &manifest);
    let reports = smoke(&opencode_options(&world));
    assert_eq!(reports.len(), 1);
    let report = serde_json::to_value(&reports[0]).unwrap();
    assert_eq!(report["status"], "ready");
    assert_eq!(report["workbench"], "oc-demo");
    assert_eq!(report["version"], "1.0.0");
    assert_eq!(report["runtime"], "local");
    assert_eq!(
        report["runner"],
        json!({"name": "opencode", "path": world.bin.join("opencode").display().to_string(), "version": null, "verified": null})
    );
    assert_eq!(report["tools"][0]["name"], "sh");
    assert!(report["tools"][0]["path"].as_str().unwrap().ends_with("/sh"));
    assert_eq!(report["authentication"]["ready"], true);
    assert_eq!(report["authentication"]["provider"], "openai");
    assert_eq!(report["authentication"]["route"], "openai/gpt-5.1");
    assert_eq!(report["authentication"]["authenticated_providers"], json!(["openai"]));
    assert!(string_list(&report["requirements"]["checked"])[0].starts_with("cpu "));
    assert_eq!(report["requirements"]["unchecked"], json!(["disk_gb is not checked on the local runtime"]));
    assert_eq!(
        report["warnings"],
        json!([
            "optional MCP disabled: database",
            "requirement not checked: disk_gb is not checked on the local runtime"
        ])
    );
    assert!(report.get("error").is_none());
    assert!(!world.log.exists(), "smoke never starts the runner");
}

/// A store holding 80% of its 5 GiB quota (a sparse blob: no disk is used) makes smoke warn.
#[test]
fn smoke_warns_when_the_outcome_store_is_near_its_quota() {
    let world = opencode_world();
    let options = opencode_options(&world);
    let blobs = world.home.join(".workbench/blobs/sha256/ab");
    std::fs::create_dir_all(&blobs).unwrap();
    let blob = std::fs::File::create(blobs.join("c".repeat(62))).unwrap();
    blob.set_len(4 * 1024 * 1024 * 1024).unwrap();
    let report = serde_json::to_value(&smoke(&options)[0]).unwrap();
    assert_eq!(report["status"], "ready");
    assert!(
        string_list(&report["warnings"]).contains(
            &"The outcome store holds 4.0 GiB of its 5.0 GiB quota: once it is full, every run fails. \
              Review wb-lsp clean (--apply removes what is older than 30 days)"
                .to_owned()
        ),
        "{}",
        report["warnings"]
    );
}

#[test]
fn smoke_reports_needs_auth_without_credentials() {
    // The run's HOME is the world's (no sign-in there), never the developer's.
    let world = opencode_world();
    let options = with_env(base_options(&world, ".workbenches/oc-demo"), &[("DATABASE_URL", "postgres://x")]);
    let reports = smoke(&options);
    let report = serde_json::to_value(&reports[0]).unwrap();
    assert_eq!(report["status"], "needs-auth");
    assert_eq!(report["authentication"]["ready"], false);
    let instruction = "Set OPENAI_API_KEY or OPENROUTER_API_KEY (or sign in with the runner's own login command)";
    assert_eq!(report["authentication"]["instruction"], instruction);
    assert!(string_list(&report["warnings"]).contains(&instruction.to_owned()));
    // A run refuses to start, with the reference's text.
    let (result, events) = run_collect(&options, None);
    match result {
        Err(EngineError::NeedsAuthentication(message)) => {
            assert_eq!(message, format!("No authenticated route is available for openai/gpt-5.1. {instruction}"));
        }
        other => panic!("expected needs-authentication, got {:?}", other.map(|r| r.ending)),
    }
    assert!(events.is_empty());
    // A dry run still translates (its authentication says not ready).
    let report = dry_run(&options).unwrap();
    assert!(!report.authentication.ready);
}

#[test]
fn smoke_of_a_repository_checks_every_package() {
    let world = opencode_world();
    world.package("broken", &minimal("broken", "opencode", "openai/gpt-5.1", "tools:\n  - wb-no-such-tool-3141\n"));
    let reports =
        smoke(&with_env(base_options(&world, "."), &[("DATABASE_URL", "x1234"), ("OPENAI_API_KEY", "sk-1234")]));
    let statuses: Vec<(String, SmokeStatus)> = reports.iter().map(|r| (r.workbench.clone(), r.status)).collect();
    assert_eq!(statuses, [("broken".to_owned(), SmokeStatus::Failed), ("oc-demo".to_owned(), SmokeStatus::Ready)]);
    assert_eq!(
        serde_json::to_value(&reports[0].error).unwrap(),
        json!({"code": "smoke_failed", "message": "Required CLI tool is unavailable: wb-no-such-tool-3141"})
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Run

fn native_types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "runner.event")
        .map(|e| {
            assert_eq!(e["data"].as_object().unwrap().len(), 1, "runner.event carries the native type only: {e}");
            e["data"]["native_type"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// What every successful run shares: the event stream, the edits, and the runner's view.
fn check_success(world: &World, runner: &str, run: &RunResult, events: &[Value]) {
    assert_eq!(run.ending, Ending::Completed);
    assert_eq!(run.final_text, FINAL);
    support::check_events(events, runner);
    assert_eq!(support::types(events), support::success_types(runner));
    assert_eq!(native_types(events), support::success_native_types(runner));
    assert_eq!(events[0]["run_id"], json!(run.run_id));
    world.assert_edited();
    let changed: Vec<&Value> = of_type(events, "file.changed").into_iter().map(|e| &e["data"]["path"]).collect();
    assert_eq!(changed, [&json!("notes/hello.txt"), &json!("README.md")]);
    let completed = of_type(events, "tool.completed");
    let statuses: Vec<&str> = completed.iter().map(|e| e["data"]["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["completed", "completed", "completed", "failed"]);
    assert_eq!(of_type(events, "tool.started")[0]["data"]["target"], "notes/hello.txt");
    let started = &events[0]["data"];
    assert_eq!(started["runtime"], "local");
    let invocation = world.invocation();
    assert_eq!(invocation["cwd"], world.work.display().to_string());
    // Claude Code and Pi take their task on stdin (a user message, an RPC prompt), OpenCode on the command line.
    let argv = invocation["argv"].as_array().unwrap();
    assert_eq!(argv.last().unwrap() == TASK, runner == "opencode", "{argv:?}");
    let outbox = invocation["values"]["WORKBENCH_OUTPUT_DIR"].as_str().unwrap();
    assert!(outbox_of(outbox, world), "{outbox}");
    assert!(outbox.contains(&run.run_id));
    assert!(Path::new(outbox).is_dir(), "the outbox exists for the runner");
    // The runner started from the executable preflight found.
    assert_eq!(invocation["argv0"], world.bin.join(invocation["runner"].as_str().unwrap()).display().to_string());
    for (_, staged) in invocation["staged"].as_object().unwrap() {
        let path = staged["path"].as_str().unwrap();
        assert!(!Path::new(path).exists(), "the staged directory {path} was removed");
    }
}

#[test]
fn opencode_run_translates_the_native_stream() {
    let world = opencode_world();
    let options = with_env(opencode_options(&world), &[("OPENROUTER_API_KEY", "sk-or-unselected")]);
    let dry = dry_run(&options).unwrap();
    let (run, events) = run_with_stream(&options, "opencode", "success");
    check_success(&world, "opencode", &run, &events);
    assert_eq!(
        of_type(&events, "output.text")[0]["data"],
        json!({"text": "I will add the notes file, retitle the readme and remove the obsolete file.", "id": "prt_02"})
    );
    assert_eq!(
        of_type(&events, "usage.updated")[0]["data"],
        json!({"kind": "delta", "input_tokens": 1200, "output_tokens": 80, "reasoning_tokens": 16, "cache_read_tokens": 1024, "cache_write_tokens": 0, "cost_usd": 0.0012})
    );
    let failed = of_type(&events, "tool.completed")[3];
    assert_eq!(
        failed["data"],
        json!({"id": "call_read_1", "name": "read", "target": "missing.txt", "status": "failed", "message": "File not found: missing.txt"})
    );
    assert_eq!(of_type(&events, "tool.started")[2]["data"]["title"], "Remove the obsolete file");
    // The runner got exactly the dry run's command line and config (the staged directory differs per run).
    let invocation = world.invocation();
    let argv: Vec<String> = string_list(&invocation["argv"]);
    assert_eq!(argv, dry.command[1..]);
    let config: Value =
        serde_json::from_str(invocation["values"]["OPENCODE_CONFIG_CONTENT"].as_str().unwrap()).unwrap();
    let staged_dir = invocation["values"]["OPENCODE_CONFIG_DIR"].as_str().unwrap();
    assert_eq!(config["instructions"], json!([format!("{staged_dir}/workbench-instructions.md")]));
    let mut expected = dry.native.clone();
    expected["instructions"] = config["instructions"].clone();
    // The outbox is the run's own.
    let outbox = invocation["values"]["WORKBENCH_OUTPUT_DIR"].as_str().unwrap();
    assert_eq!(config["permission"], json!({"external_directory": {format!("{outbox}/**"): "allow"}}));
    expected["permission"] = config["permission"].clone();
    assert_eq!(config, expected);
    // The combined instructions: context block, package instructions, runtime block.
    let instructions = world.staged("OPENCODE_CONFIG_DIR", "workbench-instructions.md");
    check_instructions(&instructions, "oc-demo@1.0.0", None, &world);
    assert!(world.staged("OPENCODE_CONFIG_DIR", "skills/sql-migrations/SKILL.md").contains("name: sql-migrations"));
    // Only the selected route's key reaches the runner.
    let names = string_list(&invocation["env_names"]);
    assert!(names.contains(&"OPENAI_API_KEY".to_owned()));
    assert!(!names.contains(&"OPENROUTER_API_KEY".to_owned()));
    assert_eq!(world.runner_environment()["OPENAI_API_KEY"], "sk-openai-test-value");
}

/// Checks the engine's instruction text around the package's instructions.
fn check_instructions(text: &str, package: &str, shipped: Option<&str>, world: &World) {
    let context = text.find("<workbench_context>").expect("context block");
    assert!(text[context..].contains(&format!("You are running inside the Workbench {package}")));
    let end_context = text.find("</workbench_context>").unwrap();
    let name = package.split('@').next().unwrap();
    let instructions = text.find(&format!("Package instructions of {name}: keep changes small.")).unwrap();
    let runtime = text.find("<workbench_runtime>").expect("runtime block");
    assert!(context < end_context && end_context < instructions && instructions < runtime, "{text}");
    if let Some(shipped) = shipped {
        let at = text.find(shipped).expect("the shipped text");
        assert!(end_context < at && at < instructions, "{text}");
    }
    let block = &text[runtime..];
    assert!(
        block.contains(&format!("Primary workspace (your working directory): {} (read-write)", world.work.display())),
        "{block}"
    );
    assert!(block.contains("($WORKBENCH_OUTPUT_DIR)"));
    assert!(block.trim_end().ends_with("</workbench_runtime>"));
}

#[test]
fn claude_code_run_translates_the_native_stream() {
    let world = claude_world();
    let infra = world.dir("infra");
    let mut options = claude_options(&world);
    options.request.settings.workspaces.push(format!("infra={}", infra.display()));
    let (run, events) = run_with_stream(&options, "claude-code", "success");
    check_success(&world, "claude-code", &run, &events);
    // Each message's usage as it streams, priced from the catalog; the deltas add up to the result's totals and
    // its own cost (the estimates stay below it here, so the result adds the rest).
    let usage = of_type(&events, "usage.updated");
    assert!(usage.iter().all(|u| u["data"]["kind"] == "delta"), "{usage:?}");
    assert!(usage[0]["data"]["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "priced as it streams: {usage:?}");
    let sum = |key: &str| usage.iter().map(|u| u["data"][key].as_f64().unwrap_or(0.0)).sum::<f64>();
    for (key, total) in [
        ("input_tokens", 1500.0),
        ("output_tokens", 120.0),
        ("cache_read_tokens", 1024.0),
        ("cache_write_tokens", 200.0),
    ] {
        assert!((sum(key) - total).abs() < 1e-9, "{key}: {usage:?}");
    }
    assert!((sum("cost_usd") - 0.0123).abs() < 1e-9, "{usage:?}");
    let invocation = world.invocation();
    let values = &invocation["values"];
    assert_eq!(values["CLAUDE_CODE_DISABLE_AUTO_MEMORY"], "1");
    // The usable MCP's header references are only expanded without subprocess scrubbing (claude 2.1.332).
    assert_eq!(values["CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"], "0");
    assert_eq!(values["WORKBENCH_WORKSPACE_DOCS"], world.root.join("docs").display().to_string());
    assert_eq!(values["WORKBENCH_WORKSPACE_INFRA"], infra.display().to_string());
    let dir = values["CLAUDE_CONFIG_DIR"].as_str().unwrap();
    let argv = string_list(&invocation["argv"]);
    assert_eq!(argv[argv.iter().position(|a| a == "--settings").unwrap() + 1], format!("{dir}/settings.json"));
    let settings: Value = serde_json::from_str(&world.staged("CLAUDE_CONFIG_DIR", "settings.json")).unwrap();
    let allow = string_list(&settings["permissions"]["allow"]);
    assert!(allow.contains(&format!("Read(/{}/**)", infra.display())));
    assert!(!allow.contains(&format!("Edit(/{}/**)", infra.display())), "read-only workspaces are not editable");
    let mcp: Value = serde_json::from_str(&world.staged("CLAUDE_CONFIG_DIR", "mcp.json")).unwrap();
    assert_eq!(mcp["mcpServers"]["tracker"]["headers"]["Authorization"], "Bearer ${TRACKER_TOKEN}");
    assert!(mcp["mcpServers"].get("console").is_none());
    check_instructions(&world.staged("CLAUDE_CONFIG_DIR", "workbench-instructions.md"), "cc-demo@2.0.0", None, &world);
    let block = world.staged("CLAUDE_CONFIG_DIR", "workbench-instructions.md");
    assert!(block.contains(&format!(
        "Workspace docs: {} (read-write; $WORKBENCH_WORKSPACE_DOCS)",
        world.root.join("docs").display()
    )));
    assert!(block.contains(&format!("Workspace infra: {} (read-only; $WORKBENCH_WORKSPACE_INFRA)", infra.display())));
    let files = &invocation["staged"]["CLAUDE_CONFIG_DIR"]["files"];
    for file in ["settings.json", "mcp.json", "workbench-instructions.md"] {
        assert_eq!(files[file]["mode"], 0o444, "{file} is read-only for the runner");
    }
    assert_eq!(files["skills/code-review"]["kind"], "dir");
    assert!(world.staged("CLAUDE_CONFIG_DIR", "skills/code-review/SKILL.md").contains("name: code-review"));
}

#[test]
fn pi_run_translates_the_native_stream() {
    let world = pi_world();
    let (run, events) = run_with_stream(&pi_options(&world), "pi", "success");
    check_success(&world, "pi", &run, &events);
    let texts: Vec<&Value> = of_type(&events, "output.text").into_iter().map(|e| &e["data"]["text"]).collect();
    assert_eq!(
        texts,
        [
            "I will add the notes file, ",
            "retitle the readme and remove the obsolete file.",
            "Done: added notes/hello.txt, ",
            "retitled README.md and removed obsolete.txt."
        ]
    );
    assert_eq!(
        of_type(&events, "usage.updated")[1]["data"],
        json!({"kind": "delta", "input_tokens": 1400, "output_tokens": 30, "cache_read_tokens": 1200, "cache_write_tokens": 64, "cost_usd": 0.0004})
    );
    let invocation = world.invocation();
    let dir = invocation["values"]["PI_CODING_AGENT_DIR"].as_str().unwrap();
    let argv = string_list(&invocation["argv"]);
    assert_eq!(argv[argv.iter().position(|a| a == "--skill").unwrap() + 1], format!("{dir}/skills/api-docs"));
    // APPEND_SYSTEM.md: context block, the shipped APPEND_SYSTEM.md, package instructions, runtime block.
    let system = world.staged("PI_CODING_AGENT_DIR", "APPEND_SYSTEM.md");
    check_instructions(&system, "pi-demo@0.3.0", Some("Shipped Pi system text."), &world);
    assert_eq!(world.staged("PI_CODING_AGENT_DIR", "settings.json"), "{\"defaultThinkingLevel\": \"low\"}\n");
    assert!(world.staged("PI_CODING_AGENT_DIR", "skills/api-docs/SKILL.md").contains("name: api-docs"));
    assert_eq!(invocation["staged"]["PI_CODING_AGENT_DIR"]["files"]["APPEND_SYSTEM.md"]["mode"], 0o444);
}

#[test]
fn runner_failures_end_with_run_failed() {
    let cases = [
        ("opencode", "Rate limit exceeded for openai/gpt-5.1"),
        ("claude-code", "API Error: 401 invalid x-api-key"),
        ("pi", "401 Incorrect API key provided"),
    ];
    for (runner, message) in cases {
        let (world, options) = match runner {
            "opencode" => {
                let world = opencode_world();
                let options = opencode_options(&world);
                (world, options)
            }
            "claude-code" => {
                let world = claude_world();
                let options = claude_options(&world);
                (world, options)
            }
            _ => {
                let world = pi_world();
                let options = pi_options(&world);
                (world, options)
            }
        };
        let (run, events) = run_with_stream(&options, runner, "failure");
        assert_eq!(run.ending, Ending::Failed(message.to_owned()), "{runner}");
        support::check_events(&events, runner);
        let last = events.last().unwrap();
        assert_eq!(last["type"], "run.failed");
        assert_eq!(last["data"]["message"], message);
        assert!(last["data"]["duration_ms"].is_u64());
        assert!(of_type(&events, "run.completed").is_empty());
        // The runner crashing without a native error: its exit status and the last stderr line.
        let (run, events) = run_with_stream(&options, runner, "crash");
        let expected = "The runner exited with status 3: fatal: the fake runner crashed";
        assert_eq!(run.ending, Ending::Failed(expected.to_owned()), "{runner}");
        support::check_events(&events, runner);
        assert_eq!(events.last().unwrap()["data"]["message"], expected);
        for (_, staged) in world.invocation()["staged"].as_object().unwrap() {
            assert!(!Path::new(staged["path"].as_str().unwrap()).exists(), "{runner}: staged directory removed");
        }
    }
}

#[test]
fn cancelling_stops_the_runner() {
    for runner in ["opencode", "claude-code", "pi"] {
        let world = World::new();
        let manifest = minimal("slow", runner, "openai/gpt-5.1", "")
            .replace("  id: openai/gpt-5.1\n", "  id: openai/gpt-5.1\n  routes:\n    - provider: openrouter\n");
        world.package("slow", &manifest);
        let mut options = with_env(options_for(&world, "slow"), &[("OPENROUTER_API_KEY", "sk-or-test-value")]);
        options
            .context
            .inherited
            .insert("FAKE_RUNNER_SCRIPT".into(), support::stream(runner, "hang").display().to_string());
        let started = std::time::Instant::now();
        let hanging = world.log.join("hanging");
        let (result, events) = run_collect(&options, Some(("Waiting for a slow tool.", &hanging)));
        let run = result.unwrap();
        assert_eq!(run.ending, Ending::Cancelled, "{runner}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{runner}: cancelled promptly");
        support::check_events(&events, runner);
        assert_eq!(events.last().unwrap()["type"], "run.cancelled");
        let pid = world.invocation()["pid"].as_i64().unwrap();
        assert!(support::process_is_gone(pid), "{runner}: the runner process {pid} is gone");
        for (_, staged) in world.invocation()["staged"].as_object().unwrap() {
            assert!(!Path::new(staged["path"].as_str().unwrap()).exists(), "{runner}: staged directory removed");
        }
    }
}

#[test]
fn a_runner_that_cannot_start_fails_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let world = opencode_world();
    // Found by preflight (an executable file), but its interpreter does not exist.
    let runner = world.bin.join("opencode");
    std::fs::write(&runner, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (result, events) = run_collect(&opencode_options(&world), None);
    let run = result.unwrap();
    let Ending::Failed(message) = &run.ending else { panic!("{:?}", run.ending) };
    assert_eq!(
        message,
        &format!(
            "Runner CLI is unavailable: opencode ({} cannot be started). Install opencode-ai 1.18.33, the version \
             wb-lsp is verified with: npm install -g opencode-ai@1.18.33 (or scripts/install-runners.sh, then put \
             ~/.cache/wb-lsp/runners/node_modules/.bin on PATH)",
            runner.display()
        )
    );
    support::check_events(&events, "opencode");
    assert_eq!(support::types(&events), ["run.started", "run.failed"]);
}

#[test]
fn text_and_errors_are_redacted() {
    let world = opencode_world();
    world.package("oc-demo", &OPENCODE.replace("  TEAM_ID:\n", "  EXTRA_SECRET:\n    required: false\n  TEAM_ID:\n"));
    let options = with_env(
        opencode_options(&world),
        &[
            ("DATABASE_API_TOKEN", "db-token-canary-1"),
            ("EXTRA_SECRET", "extra-canary-2"),
            ("TEAM_ID", "team-canary-3"),
        ],
    );
    let (run, events) = run_with_stream(&options, "opencode", "secret-echo");
    support::check_events(&events, "opencode");
    let text = serde_json::to_string(&events).unwrap();
    for secret in ["sk-openai-test-value", "db-token-canary-1", "extra-canary-2", "postgres://db.internal/ledger"] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    assert_eq!(
        of_type(&events, "output.text")[0]["data"]["text"],
        "The key is [redacted] and the token is [redacted]."
    );
    assert_eq!(run.ending, Ending::Failed("rejected key [redacted]".to_owned()));
    assert!(text.contains("psql [redacted]"));
}

// ---------------------------------------------------------------------------------------------------------------
// Environment binding

#[test]
fn environment_precedence_and_dotenv() {
    let world = World::new();
    world.package(
        "envs",
        &minimal(
            "envs",
            "opencode",
            "openai/gpt-5.1",
            "env:\n  A_VAR:\n    required: false\n  B_VAR:\n    required: false\n  C_VAR:\n    required: false\n",
        ),
    );
    let file = world.file(
        "vars.env",
        "# comment\nexport A_VAR=from-file\nB_VAR=\"quoted from-file\"\nNOT_DECLARED=ignored-value\nOPENAI_API_KEY='sk-file-value'\n",
    );
    let mut options =
        with_env(base_options(&world, ".workbenches/envs"), &[("A_VAR", "inherited-a"), ("C_VAR", "inherited-c")]);
    options.request.settings.env_files = vec![file];
    options.request.env = vec!["A_VAR=from-flag".to_owned()];
    let (run, _) = run_with_stream(&options, "opencode", "success");
    assert_eq!(run.ending, Ending::Completed);
    let env = world.runner_environment();
    assert_eq!(env["A_VAR"], "from-flag", "--env beats --env-file");
    assert_eq!(env["B_VAR"], "quoted from-file", "--env-file beats inherited");
    assert_eq!(env["C_VAR"], "inherited-c");
    assert_eq!(env["OPENAI_API_KEY"], "sk-file-value", "provider keys bind from env files");
    assert!(!env.contains_key("NOT_DECLARED"), "undeclared dotenv entries are ignored");
    // Later files beat earlier ones; --env with an empty value unsets for requirements.
    let later = world.file("later.env", "B_VAR=later-file\n");
    options.request.settings.env_files.push(later);
    let (_, _) = run_with_stream(&options, "opencode", "success");
    assert_eq!(world.runner_environment()["B_VAR"], "later-file");
}

/// Escapes are read once, left to right, and a comment may follow a quoted value (`docs/env-files.md`).
#[test]
fn dotenv_escapes_and_comments_reach_the_runner_exactly() {
    let world = World::new();
    world.package(
        "envs",
        &minimal(
            "envs",
            "opencode",
            "openai/gpt-5.1",
            "env:\n  A_VAR:\n    required: false\n  B_VAR:\n    required: false\n  C_VAR:\n    required: false\n",
        ),
    );
    let file = world.file(
        "vars.env",
        "A_VAR=\"C:\\\\new\" # a Windows path\nB_VAR='single # kept' # note\nexport C_VAR=plain#kept # note\n",
    );
    let mut options = with_env(base_options(&world, ".workbenches/envs"), &[("OPENAI_API_KEY", "sk-1234")]);
    options.request.settings.env_files = vec![file];
    let (run, _) = run_with_stream(&options, "opencode", "success");
    assert_eq!(run.ending, Ending::Completed);
    let env = world.runner_environment();
    assert_eq!(env["A_VAR"], "C:\\new");
    assert_eq!(env["B_VAR"], "single # kept");
    assert_eq!(env["C_VAR"], "plain#kept");
}

// ---------------------------------------------------------------------------------------------------------------
// Error texts (engine facts b.6)

fn workspaces_world() -> World {
    let world = World::new();
    world.package(
        "ws",
        &minimal(
            "ws",
            "opencode",
            "openai/gpt-5.1",
            "workspaces:\n  docs:\n    required: true\n    access: read-write\n  infra:\n    required: false\n    access: read-only\n",
        ),
    );
    world.dir("docs");
    world.dir("infra");
    world
}

fn ws_options(world: &World, bindings: &[String]) -> Options {
    let mut options = with_env(base_options(world, ".workbenches/ws"), &[("OPENAI_API_KEY", "sk-1234")]);
    options.request.settings.workspaces = bindings.to_vec();
    options
}

#[test]
fn workspace_binding_errors() {
    let world = workspaces_world();
    let docs = world.root.join("docs").display().to_string();
    let infra = world.root.join("infra").display().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec!["docs".into()], "--workspace requires NAME=PATH".into()),
        (vec![format!("Docs={docs}")], "--workspace requires a lowercase NAME=PATH assignment".into()),
        (vec!["docs_dir=x".into()], "--workspace requires a lowercase NAME=PATH assignment".into()),
        (vec!["docs=".into()], "Workspace path must not be empty: docs".into()),
        (vec!["docs=  ".into()], "Workspace path must not be empty: docs".into()),
        (vec![format!("docs={docs}"), format!("docs={infra}")], "Duplicate workspace binding: docs".into()),
        (
            vec![format!("docs={docs}"), format!("other={infra}")],
            "Workspace binding is not declared by ws: other".into(),
        ),
        (vec![format!("infra={infra}")], "Missing required workspace binding: docs".into()),
        (vec![format!("docs={}/missing", world.root.display())], "Workspace directory is unavailable: docs".into()),
        (
            vec![format!("docs={}", world.work.display())],
            "Workspace bindings must resolve to distinct directories: primary, docs".into(),
        ),
        (
            vec![format!("docs={docs}"), format!("infra={docs}/.")],
            "Workspace bindings must resolve to distinct directories: docs, infra".into(),
        ),
    ];
    for (bindings, expected) in cases {
        assert_eq!(dry_run_error(&ws_options(&world, &bindings)), expected, "{bindings:?}");
    }
    // A file is not a directory.
    let file = world.file("a-file", "x");
    assert_eq!(
        dry_run_error(&ws_options(&world, &[format!("docs={}", file.display())])),
        "Workspace directory is unavailable: docs"
    );
    // A symlink to the same directory is the same directory.
    let link = world.root.join("docs-link");
    std::os::unix::fs::symlink(&docs, &link).unwrap();
    assert_eq!(
        dry_run_error(&ws_options(&world, &[format!("docs={docs}"), format!("infra={}", link.display())])),
        "Workspace bindings must resolve to distinct directories: docs, infra"
    );
    // Relative paths resolve against the working directory.
    let mut options = ws_options(&world, &["docs=../docs".to_owned()]);
    options.request.settings.cwd = world.work.clone();
    options.request.settings.source = world.repo.join(".workbenches/ws").display().to_string();
    let report = dry_run(&options).unwrap();
    assert_eq!(report.workspaces[1].path, world.root.join("docs").display().to_string());
    // The primary workspace must exist too.
    let mut options = ws_options(&world, &[format!("docs={docs}")]);
    options.request.settings.primary = Some(world.root.join("no-such-dir"));
    assert_eq!(dry_run_error(&options), "Workspace directory is unavailable: primary");
}

#[test]
fn workspace_permission_errors() {
    use std::os::unix::fs::PermissionsExt;
    let world = workspaces_world();
    let docs = world.root.join("docs");
    let infra = world.root.join("infra");
    let bindings = [format!("docs={}", docs.display()), format!("infra={}", infra.display())];
    let set_mode =
        |path: &Path, mode: u32| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    // No write permission at all: refused even for root, who could write anyway.
    set_mode(&docs, 0o555);
    let error = dry_run_error(&ws_options(&world, &bindings));
    set_mode(&docs, 0o755);
    assert_eq!(error, "Workspace directory is not writable: docs");
    // A read-only workspace need not be writable.
    set_mode(&infra, 0o555);
    let result = dry_run(&ws_options(&world, &bindings));
    set_mode(&infra, 0o755);
    assert!(result.is_ok());
    if support::permissions_are_bypassed(&world.root) {
        eprintln!(
            "note: skipped the not-readable assertion: this process (root) reads directories whatever their mode"
        );
        return;
    }
    set_mode(&infra, 0o000);
    let error = dry_run_error(&ws_options(&world, &bindings));
    set_mode(&infra, 0o755);
    assert_eq!(error, "Workspace directory is not readable: infra");
    // Write permission the process does not have (another owner's mode bits) is found by trying.
    set_mode(&docs, 0o577);
    let error = dry_run_error(&ws_options(&world, &bindings));
    set_mode(&docs, 0o755);
    assert_eq!(error, "Workspace directory is not writable: docs");
}

#[test]
fn environment_errors() {
    let world = World::new();
    world.package(
        "envs",
        &minimal(
            "envs",
            "opencode",
            "openai/gpt-5.1",
            "env:\n  DATABASE_URL:\n    required: true\n  OPTIONAL_VAR:\n    required: false\n",
        ),
    );
    let base = || {
        with_env(
            base_options(&world, ".workbenches/envs"),
            &[("DATABASE_URL", "postgres://x"), ("OPENAI_API_KEY", "sk-1234")],
        )
    };
    let flag = |assignment: &str| {
        let mut options = base();
        options.request.env = vec![assignment.to_owned()];
        dry_run_error(&options)
    };
    assert_eq!(flag("DATABASE_URL"), "--env requires NAME=value");
    assert_eq!(flag("database_url=x"), "--env requires an uppercase NAME=value assignment");
    assert_eq!(flag("1VAR=x"), "--env requires an uppercase NAME=value assignment");
    assert_eq!(flag("UNDECLARED=x"), "Environment override is not supported by envs: UNDECLARED");
    // `_NAME` passes the --env name rule (it is stricter for the manifest) but is not declared.
    assert_eq!(flag("_PRIVATE=x"), "Environment override is not supported by envs: _PRIVATE");
    let file = |path: std::path::PathBuf| {
        let mut options = base();
        options.request.settings.env_files = vec![path];
        dry_run_error(&options)
    };
    let missing = world.root.join("missing.env");
    assert_eq!(file(missing.clone()), format!("Environment file is unavailable: {}", missing.display()));
    let directory = world.dir("a-directory.env");
    assert_eq!(file(directory.clone()), format!("Environment file is unavailable: {}", directory.display()));
    let large = world.file("large.env", &format!("OPTIONAL_VAR={}\n", "x".repeat(1024 * 1024)));
    assert_eq!(file(large.clone()), format!("Environment file exceeds 1 MiB: {}", large.display()));
    let exact = world.file("exact.env", &format!("OPTIONAL_VAR={}\n", "x".repeat(1024 * 1024 - 14)));
    assert_eq!(std::fs::metadata(&exact).unwrap().len(), 1024 * 1024);
    let mut options = base();
    options.request.settings.env_files = vec![exact];
    assert!(dry_run(&options).is_ok(), "a file of exactly 1 MiB is read");
    for (name, text) in [("bad1.env", "not an assignment\n"), ("bad2.env", "lower=1\n"), ("bad3.env", "A=\"open\n")] {
        let path = world.file(name, text);
        assert_eq!(file(path.clone()), format!("Environment file is malformed: {}", path.display()), "{text}");
    }
    let binary = world.root.join("binary.env");
    std::fs::write(&binary, [0x41, 0x3d, 0xff, 0xfe, 0x0a]).unwrap();
    assert_eq!(file(binary.clone()), format!("Environment file is malformed: {}", binary.display()));
    if !support::permissions_are_bypassed(&world.root) {
        use std::os::unix::fs::PermissionsExt;
        let unreadable = world.file("unreadable.env", "OPTIONAL_VAR=x\n");
        std::fs::set_permissions(&unreadable, std::fs::Permissions::from_mode(0o000)).unwrap();
        assert_eq!(file(unreadable.clone()), format!("Environment file is unreadable: {}", unreadable.display()));
    } else {
        eprintln!("note: skipped the unreadable env file assertion: this process ignores file permissions");
    }
    // Required variables: unset, and set to the empty string.
    let options = with_env(base_options(&world, ".workbenches/envs"), &[("OPENAI_API_KEY", "sk-1234")]);
    assert_eq!(dry_run_error(&options), "Missing required environment variable: DATABASE_URL");
    let mut options = with_env(options, &[("DATABASE_URL", "postgres://x")]);
    options.request.env = vec!["DATABASE_URL=".to_owned()];
    assert_eq!(dry_run_error(&options), "Missing required environment variable: DATABASE_URL");
}

#[test]
fn runtime_selection_errors() {
    let world = World::new();
    let key = [("OPENAI_API_KEY", "sk-1234")];
    world.package("one", &minimal("one", "opencode", "openai/gpt-5.1", ""));
    let mut options = with_env(base_options(&world, ".workbenches/one"), &key);
    options.request.settings.runtime = Some("docker".into());
    assert_eq!(dry_run_error(&options), "Workbench one does not declare runtime: docker. Declared runtimes: local");
    world.package(
        "two",
        &minimal(
            "two",
            "opencode",
            "openai/gpt-5.1",
            "runtimes:\n  e2b:\n    image: ghcr.io/example/image:1\n  local: {}\n",
        ),
    );
    let mut options = with_env(base_options(&world, ".workbenches/two"), &key);
    options.request.settings.runtime = Some("daytona".into());
    assert_eq!(
        dry_run_error(&options),
        "Workbench two does not declare runtime: daytona. Declared runtimes: e2b, local"
    );
    // The first declared runtime is the default: e2b needs its key, and is never replaced by the host.
    options.request.settings.runtime = None;
    assert_eq!(
        dry_run_error(&options),
        "E2B_API_KEY is required for the E2B runtime. Set E2B_API_KEY in the environment wb-lsp runs in."
    );
    options.request.settings.runtime = Some("local".into());
    assert_eq!(dry_run(&options).unwrap().runtime, "local");
    {
        let (runtime, config) = ("daytona", "    class: linux\n");
        let name = format!("only-{runtime}");
        world.package(
            &name,
            &minimal(&name, "opencode", "openai/gpt-5.1", &format!("runtimes:\n  {runtime}:\n{config}")),
        );
        let options = with_env(options_for(&world, &name), &key);
        let missing = "DAYTONA_API_KEY is required for the Daytona runtime. Set DAYTONA_API_KEY in the environment wb-lsp runs in.";
        assert_eq!(dry_run_error(&options), missing);
        let reports = smoke(&options);
        assert_eq!(reports[0].status, SmokeStatus::Failed);
        assert_eq!(reports[0].error.as_ref().unwrap().message, missing, "{runtime}");
    }
    // Docker is supported (tests/docker.rs): an image that is neither present nor pullable is named (or, without
    // an engine, the engine is), never replaced by the host.
    world.package(
        "only-docker",
        &minimal(
            "only-docker",
            "opencode",
            "openai/gpt-5.1",
            "runtimes:\n  docker:\n    image: ghcr.io/example/image:1\n",
        ),
    );
    let error = dry_run_error(&with_env(options_for(&world, "only-docker"), &key));
    assert!(
        error.starts_with("Cannot pull Docker image ghcr.io/example/image:1")
            || error.starts_with("Cannot reach the Docker engine"),
        "{error}"
    );
    // Spec 0: an unknown runtime name passes the parser and fails when the runtime is resolved.
    world.package(
        "moon",
        "spec: 0\nversion: 1.0.0\nname: moon\nrunner: opencode\nmodel:\n  id: openai/gpt-5.1\ninstructions: ./instructions.md\nruntime: moon\n",
    );
    assert_eq!(dry_run_error(&with_env(options_for(&world, "moon"), &key)), "Unsupported runtime: moon");
    // Spec 0: an image on the local runtime parses but cannot run.
    world.package(
        "local-image",
        "spec: 0\nversion: 1.0.0\nname: local-image\nrunner: opencode\nmodel:\n  id: openai/gpt-5.1\ninstructions: ./instructions.md\nruntime: local\nimage: ghcr.io/example/image:1\n",
    );
    let options = with_env(options_for(&world, "local-image"), &key);
    assert_eq!(dry_run_error(&options), "image is not supported with the local runtime");
    assert_eq!(smoke(&options)[0].error.as_ref().unwrap().message, "image is not supported with the local runtime");
}

fn options_for(world: &World, package: &str) -> Options {
    base_options(world, &format!(".workbenches/{package}"))
}

#[test]
fn host_docker_errors() {
    let world = World::new();
    let key = [("OPENAI_API_KEY", "sk-1234")];
    world.package("local-only", &minimal("local-only", "opencode", "openai/gpt-5.1", ""));
    let mut options = with_env(options_for(&world, "local-only"), &key);
    options.request.settings.allow_host_docker = true;
    assert_eq!(dry_run_error(&options), "--allow-host-docker requires a Workbench that declares docker.engine");
    let reports = smoke(&options);
    assert_eq!(
        serde_json::to_value(&reports[0].error).unwrap(),
        json!({"code": "smoke_failed", "message": "--allow-host-docker requires a Workbench that declares docker.engine"})
    );
    world.package(
        "engine",
        &minimal(
            "engine",
            "opencode",
            "openai/gpt-5.1",
            "runtimes:\n  docker:\n    image: ghcr.io/example/image:1\n    docker:\n      engine:\n        mode: host\n  local: {}\n",
        ),
    );
    let mut options = with_env(options_for(&world, "engine"), &key);
    assert_eq!(
        dry_run_error(&options),
        "Host Docker engine access requires explicit --allow-host-docker authorization"
    );
    options.request.settings.allow_host_docker = true;
    let error = dry_run_error(&options);
    assert!(
        error.starts_with("Cannot pull Docker image ghcr.io/example/image:1")
            || error.starts_with("Cannot reach the Docker engine"),
        "{error}"
    );
    options.request.settings.allow_host_docker = false;
    options.request.settings.runtime = Some("local".into());
    assert!(dry_run(&options).is_ok(), "the local runtime of the same package needs no authorization");
}

#[test]
fn a_runner_config_content_error_comes_before_the_runner_executable_check() {
    // The reference stages the runner's configuration, then preflights the runtime: a package whose Claude Code
    // runner_config breaks the content rules fails with that problem even where `claude` is not installed.
    let world = World::new();
    let key = [("ANTHROPIC_API_KEY", "sk-ant-1234")];
    world.package(
        "cc-content",
        &minimal("cc-content", "claude-code", "anthropic/claude-haiku-4.5", "runner_config: ./claude.json\n"),
    );
    world.file(".workbenches/cc-content/claude.json", "{\"permissions\": {\"allow\": [\"Read\"]}, \"theme\": 1}\n");
    let expected = "Claude Code runner_config has unknown field: theme";
    for path in [world.dir("empty-bin").display().to_string(), world.inherited()["PATH"].clone()] {
        let mut options = with_env(options_for(&world, "cc-content"), &key);
        options.context.inherited.insert("PATH".into(), path);
        assert_eq!(dry_run_error(&options), expected);
        let reports = smoke(&options);
        assert_eq!(reports[0].status, SmokeStatus::Failed);
        assert_eq!(reports[0].error.as_ref().map(|e| e.message.as_str()), Some(expected));
        let (result, events) = run_collect(&options, None);
        assert_eq!(result.err().map(|e| e.to_string()).as_deref(), Some(expected));
        assert!(events.is_empty(), "nothing starts when staging fails");
    }
}

#[test]
fn runner_and_tool_errors() {
    let world = World::new();
    let key = [("OPENAI_API_KEY", "sk-1234"), ("ANTHROPIC_API_KEY", "sk-ant-1234")];
    world.package("strange", &minimal("strange", "x", "openai/gpt-5.1", ""));
    assert_eq!(dry_run_error(&with_env(options_for(&world, "strange"), &key)), "Unsupported runner: x");
    world.package(
        "tools",
        &minimal("tools", "opencode", "openai/gpt-5.1", "tools:\n  - sh\n  - wb-no-such-tool-3141\n"),
    );
    // A dry run launches nothing: it shows the translation and lists what preflight found missing.
    let tools = dry_run(&with_env(options_for(&world, "tools"), &key)).unwrap();
    assert_eq!(tools.problems, ["Required CLI tool is unavailable: wb-no-such-tool-3141"]);
    let (result, _) = run_collect(&with_env(options_for(&world, "tools"), &key), None);
    assert_eq!(
        result.err().map(|e| e.to_string()).as_deref(),
        Some("Required CLI tool is unavailable: wb-no-such-tool-3141")
    );
    for (runner, model, executable, package, version) in [
        ("opencode", "openai/gpt-5.1", "opencode", "opencode-ai", "1.18.33"),
        ("claude-code", "anthropic/claude-haiku-4.5", "claude", "@anthropic-ai/claude-code", "2.1.332"),
        ("pi", "openai/gpt-5.1", "pi", "@mariozechner/pi-coding-agent", "0.73.1"),
    ] {
        let name = format!("no-{executable}");
        world.package(&name, &minimal(&name, runner, model, ""));
        let mut options = with_env(options_for(&world, &name), &key);
        options.context.inherited.insert("PATH".into(), world.dir("empty-bin").display().to_string());
        // The reference's text first, then the executable, the package and version, and how to install it.
        let expected = format!(
            "Runner CLI is unavailable: {runner} (no `{executable}` executable on PATH). Install {package} {version}, \
             the version wb-lsp is verified with: npm install -g {package}@{version} (or scripts/install-runners.sh, \
             then put ~/.cache/wb-lsp/runners/node_modules/.bin on PATH)"
        );
        let report = dry_run(&options).unwrap();
        assert_eq!(report.problems, std::slice::from_ref(&expected));
        assert_eq!(report.command[0], executable, "the translation is complete");
        assert_eq!(report.runner, runner);
        let (result, events) = run_collect(&options, None);
        assert_eq!(result.err().map(|e| e.to_string()), Some(expected));
        assert!(events.is_empty(), "nothing starts when preflight fails");
    }
    // Pi has no MCP transport.
    world.package(
        "pi-mcp",
        &minimal("pi-mcp", "pi", "openai/gpt-5.1", "mcps:\n  - name: db\n    url: https://example.com/mcp\n"),
    );
    assert_eq!(
        dry_run_error(&with_env(options_for(&world, "pi-mcp"), &key)),
        "Pi does not provide a native MCP transport. This Workbench requires an explicit Pi extension before it can run."
    );
    // An MCP referencing an undeclared variable (the checks report it first, with the same text).
    world.package(
        "undeclared",
        &minimal(
            "undeclared",
            "opencode",
            "openai/gpt-5.1",
            "mcps:\n  - name: db\n    url: https://example.com/mcp\n    headers:\n      Authorization: Bearer ${NOPE_TOKEN}\n",
        ),
    );
    assert_eq!(
        dry_run_error(&with_env(options_for(&world, "undeclared"), &key)),
        "MCP db references undeclared environment variable: NOPE_TOKEN"
    );
}

#[test]
fn requirement_errors() {
    let world = World::new();
    let key = [("OPENAI_API_KEY", "sk-1234")];
    let host = wb_engine::requirements::HostFacts::local();
    let check = |name: &str, requirements: &str| {
        world.package(name, &minimal(name, "opencode", "openai/gpt-5.1", &format!("requirements:\n{requirements}")));
        dry_run_error(&with_env(options_for(&world, name), &key))
    };
    let prefix = |name: &str| format!("Workbench {name} cannot run on the local runtime: ");
    let other_os = if host.os == "windows" { "macos" } else { "windows" };
    assert_eq!(
        check("os", &format!("  os: [{other_os}]\n")),
        format!("{}requires os {other_os} but this host is {}", prefix("os"), host.os)
    );
    let other_arch = if host.arch == "arm64" { "x64" } else { "arm64" };
    assert_eq!(
        check("arch", &format!("  arch: [{other_arch}]\n")),
        format!("{}requires arch {other_arch} but this host is {}", prefix("arch"), host.arch)
    );
    assert_eq!(
        check("cpu", "  cpu: 4096\n"),
        format!("{}requires 4096 CPUs but this host has {}", prefix("cpu"), host.cpus)
    );
    let memory = check("memory", "  memory_gb: 100000\n");
    assert!(
        memory.starts_with(&format!("{}requires 100000 GiB of memory but this host has ", prefix("memory"))),
        "{memory}"
    );
    assert!(memory.ends_with(" GiB"), "{memory}");
    assert_eq!(
        check("gpu", "  gpu: true\n"),
        format!(
            "{}GPU requirements are not checked on the local runtime. Pass --allow-unchecked-gpu to run anyway.",
            prefix("gpu")
        )
    );
    // With --allow-unchecked-gpu it runs, and says what it did not check; satisfied ones are listed as checked.
    world.package(
        "fine",
        &minimal(
            "fine",
            "opencode",
            "openai/gpt-5.1",
            &format!(
                "requirements:\n  os: [{}]\n  arch: [{}]\n  cpu: 1\n  memory_gb: 0.5\n  disk_gb: 1\n  gpu: true\n",
                host.os, host.arch
            ),
        ),
    );
    let mut options = with_env(options_for(&world, "fine"), &key);
    options.request.settings.allow_unchecked_gpu = true;
    let report = dry_run(&options).unwrap();
    assert_eq!(
        report.requirements.checked[..3],
        [format!("os {}", host.os), format!("arch {}", host.arch), format!("cpu {}", host.cpus)]
    );
    assert!(report.requirements.checked[3].starts_with("memory "));
    assert_eq!(
        report.requirements.unchecked,
        ["disk_gb is not checked on the local runtime", "gpu is not checked on the local runtime"]
    );
    assert!(report.warnings.contains(&"requirement not checked: gpu is not checked on the local runtime".to_owned()));
    let reports = smoke(&options);
    assert_eq!(reports[0].status, SmokeStatus::Ready);
}

#[test]
fn model_route_errors() {
    let world = World::new();
    let key = [("OPENAI_API_KEY", "sk-1234"), ("XAI_API_KEY", "xai-1234")];
    let check = |name: &str, runner: &str, model: &str| {
        world.package(
            name,
            &minimal(name, runner, "openai/placeholder", "").replace("  id: openai/placeholder\n", model),
        );
        dry_run_error(&with_env(options_for(&world, name), &key))
    };
    assert_eq!(
        check("unknown", "opencode", "  id: acme/unknown-1\n"),
        "Unknown model acme/unknown-1. Unknown models require explicit route model IDs and packaged runner_config."
    );
    assert_eq!(
        check(
            "unknown-routed",
            "opencode",
            "  id: acme/unknown-1\n  routes:\n    - provider: openrouter\n      model: acme/x\n"
        ),
        "Unknown model acme/unknown-1. Unknown models require explicit route model IDs and packaged runner_config.",
        "explicit route models without runner_config"
    );
    assert_eq!(
        check("no-provider", "opencode", "  id: openai/gpt-5.1\n  routes:\n    - provider: nosuch\n"),
        "Unknown model provider: nosuch"
    );
    assert_eq!(
        check("not-served", "opencode", "  id: openai/gpt-5.1\n  routes:\n    - provider: xai\n"),
        "Provider xai does not serve model openai/gpt-5.1"
    );
    assert_eq!(
        check("no-route", "claude-code", "  id: openai/gpt-5.1\n  routes:\n    - provider: openai\n"),
        "No provider route is available for model openai/gpt-5.1"
    );
}

#[test]
fn source_and_task_errors() {
    let world = World::new();
    let key = [("OPENAI_API_KEY", "sk-1234")];
    world.package("alpha", &minimal("alpha", "opencode", "openai/gpt-5.1", ""));
    world.package("beta", &minimal("beta", "opencode", "openai/gpt-5.1", ""));
    assert_eq!(
        dry_run_error(&with_env(base_options(&world, "."), &key)),
        "Workbench selector required. Available: alpha, beta"
    );
    assert_eq!(dry_run_error(&with_env(base_options(&world, ".#gamma"), &key)), "Workbench not found: gamma");
    // Smoke, like validate, checks every package the source picks: picking none is the reference's other text.
    let none = wb_engine::smoke(&OsFileSystem, &with_env(base_options(&world, ".#gamma"), &key), catalog());
    assert_eq!(none.err().map(|e| e.to_string()).as_deref(), Some("No matching Workbenches found"));
    assert_eq!(dry_run(&with_env(base_options(&world, ".#beta"), &key)).unwrap().workbench, "beta");
    let (result, _) = run_collect(&with_env(base_options(&world, "."), &key), None);
    assert_eq!(
        result.err().map(|e| e.to_string()).as_deref(),
        Some("Workbench selector required. Available: alpha, beta")
    );
    let missing = world.root.join("nowhere");
    assert_eq!(
        dry_run_error(&with_env(base_options(&world, &missing.display().to_string()), &key)),
        format!("Workbench path does not exist: {}", missing.display())
    );
    let empty = world.dir("empty");
    assert_eq!(
        dry_run_error(&with_env(base_options(&world, &empty.display().to_string()), &key)),
        format!("No Workbenches found in {}", empty.display())
    );
    for task in [None, Some(""), Some("   \n")] {
        let mut options = with_env(base_options(&world, ".#alpha"), &key);
        options.request.task = task.map(str::to_owned);
        assert_eq!(dry_run_error(&options), "This run mode requires a non-empty task");
        let (result, events) = run_collect(&options, None);
        assert_eq!(result.err().map(|e| e.to_string()).as_deref(), Some("This run mode requires a non-empty task"));
        assert!(events.is_empty());
    }
    // Smoke needs no task.
    let mut options = with_env(base_options(&world, "."), &key);
    options.request.task = None;
    assert!(smoke(&options).iter().all(|r| r.status == SmokeStatus::Ready));
}

#[test]
fn unselected_provider_variables_never_reach_the_runner() {
    let world = opencode_world();
    let catalog = catalog();
    let mut options = opencode_options(&world);
    for name in wb_engine::bindings::provider_variables(catalog) {
        options.context.inherited.entry(name.clone()).or_insert_with(|| format!("value-of-{name}"));
    }
    let (run, _) = run_with_stream(&options, "opencode", "success");
    assert_eq!(run.ending, Ending::Completed);
    let env: BTreeMap<String, String> = world.runner_environment();
    for name in wb_engine::bindings::provider_variables(catalog) {
        if name == "OPENAI_API_KEY" {
            assert_eq!(env[&name], "sk-openai-test-value");
        } else {
            assert!(!env.contains_key(&name), "{name} reached the runner");
        }
    }
}

/// A provider the catalog does not know, defined by the packaged runner configuration, serves the route with
/// the credentials that configuration names: ready without a catalog variable, and every catalog provider's
/// key stays away from the runner.
#[test]
fn a_custom_provider_from_the_packaged_runner_config_is_ready() {
    let world = World::new();
    world.install_runners(&["opencode"]);
    let manifest = minimal(
        "gateway",
        "opencode",
        "private-lab/review-model",
        "runner_config: ./opencode.json\nenv:\n  GATEWAY_KEY:\n    required: true\n",
    )
    .replace(
        "  id: private-lab/review-model\n",
        "  id: private-lab/review-model\n  routes:\n    - provider: internal-gateway\n      model: deployment-42\n    - provider: openai\n      model: gpt-5\n",
    );
    world.package("gateway", &manifest);
    world.file(
        ".workbenches/gateway/opencode.json",
        r#"{"provider": {"internal-gateway": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "https://gateway.internal/v1", "apiKey": "{env:GATEWAY_KEY}"}, "models": {"deployment-42": {}}}}}"#,
    );
    let options = with_env(
        base_options(&world, ".workbenches/gateway"),
        &[("GATEWAY_KEY", "gw-secret-value"), ("OPENAI_API_KEY", "sk-openai-test-value")],
    );
    let report = dry_run(&options).unwrap();
    assert!(report.authentication.ready, "{:?}", report.authentication);
    assert_eq!(report.authentication.method.as_deref(), Some("runner_config"));
    assert_eq!(report.authentication.provider.as_deref(), Some("internal-gateway"));
    assert_eq!(report.authentication.variable, None);
    assert_eq!(report.model_route.route, "internal-gateway/deployment-42");
    assert!(report.removed_env.iter().any(|n| n == "OPENAI_API_KEY"), "{:?}", report.removed_env);
    assert!(report.env.iter().any(|n| n == "GATEWAY_KEY"), "the declared key is bound: {:?}", report.env);
    // Without the packaged configuration nothing could define the provider: the reference's error.
    let bare = minimal("bare", "opencode", "private-lab/review-model", "").replace(
        "  id: private-lab/review-model\n",
        "  id: private-lab/review-model\n  routes:\n    - provider: internal-gateway\n      model: deployment-42\n",
    );
    world.package("bare", &bare);
    let error = dry_run(&base_options(&world, ".workbenches/bare")).unwrap_err().to_string();
    assert_eq!(
        error,
        "Unknown model private-lab/review-model. Unknown models require explicit route model IDs and packaged runner_config."
    );
}

/// Claude Code scrubs its tools' environment only where that works (verified against claude 2.1.332): bubblewrap
/// must work and socat be on PATH, and no MCP header may need `${VAR}` expansion (Claude Code leaves them empty while
/// scrubbing). Otherwise scrubbing is off and a warning says why.
#[test]
fn claude_code_scrubs_subprocess_environments_only_where_it_works() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new();
    world.install_runners(&["claude"]);
    world.package("plain", &minimal("plain", "claude-code", "anthropic/claude-sonnet-4.5", ""));
    let tools = world.dir("sandbox-bin");
    let options = |with_bwrap: bool| {
        let mut options = with_env(base_options(&world, ".workbenches/plain"), &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
        if with_bwrap {
            let path = options.context.inherited["PATH"].clone();
            options.context.inherited.insert("PATH".to_owned(), format!("{}:{path}", tools.display()));
        } else {
            // Only the fake runners: no system directory that could hold a real bwrap.
            let runners = world.path_variable().split(':').next().unwrap_or_default().to_owned();
            options.context.inherited.insert("PATH".to_owned(), runners);
        }
        options
    };
    let bwrap = tools.join("bwrap");
    std::fs::write(&bwrap, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Claude Code's sandbox needs socat too.
    let socat = tools.join("socat");
    std::fs::write(&socat, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&socat, std::fs::Permissions::from_mode(0o755)).unwrap();

    let report = dry_run(&options(true)).unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    // bwrap alone, no socat anywhere on PATH: as good as none.
    let alone = world.dir("bwrap-alone");
    std::fs::copy(&bwrap, alone.join("bwrap")).unwrap();
    let mut without_socat = options(false);
    let runners = without_socat.context.inherited["PATH"].clone();
    without_socat.context.inherited.insert("PATH".to_owned(), format!("{}:{runners}", alone.display()));
    let report = dry_run(&without_socat).unwrap();
    assert!(report.warnings.iter().any(|w| w.contains("install socat")), "{:?}", report.warnings);
    // A bwrap that cannot sandbox here (no user namespaces) is as good as none.
    std::fs::write(&bwrap, "#!/bin/sh\nexit 1\n").unwrap();
    let report = dry_run(&options(true)).unwrap();
    assert_eq!(
        report.warnings,
        [format!("Claude Code's tools see the run's environment: {} cannot create a sandbox here", bwrap.display())]
    );
    std::fs::write(&bwrap, "#!/bin/sh\nexit 0\n").unwrap();
    let report = dry_run(&options(false)).unwrap();
    assert!(report.warnings.iter().any(|w| w.contains("install bubblewrap (bwrap)")), "{:?}", report.warnings);
    // The value itself reaches the runner: run once each way and read what the fake runner received.
    for (with_bwrap, expected) in [(true, "1"), (false, "0")] {
        let mut run_options = options(with_bwrap);
        if !with_bwrap {
            // The fake runner is a Python script: keep the interpreter reachable, still without bwrap.
            let python = support::python();
            let dir = world.dir("python-only");
            let link = dir.join("python3");
            if !link.exists() {
                std::os::unix::fs::symlink(&python, &link).unwrap();
            }
            let path = run_options.context.inherited["PATH"].clone();
            run_options.context.inherited.insert("PATH".to_owned(), format!("{path}:{}", dir.display()));
        }
        let (result, events) = run_collect(&run_options, None);
        assert_eq!(result.unwrap().ending, Ending::Completed, "{events:#?}");
        assert_eq!(world.invocation()["values"]["CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"], expected);
    }
}

/// Smoke reads the installed runner's version from its npm package and warns when the adapter is not verified
/// against it; the dry run shows the adapter's verified versions and capability map.
#[test]
fn smoke_reports_the_runner_version_and_whether_it_is_verified() {
    use std::os::unix::fs::PermissionsExt;
    let world = opencode_world();
    for (version, verified) in [("1.18.33", true), ("0.9.0", false)] {
        let package = world.dir(&format!("npm-{version}/node_modules/opencode-ai"));
        std::fs::write(package.join("package.json"), format!(r#"{{"name": "opencode-ai", "version": "{version}"}}"#))
            .unwrap();
        let bin = package.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("opencode"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(bin.join("opencode"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut options = opencode_options(&world);
        let path = options.context.inherited["PATH"].clone();
        options.context.inherited.insert("PATH".to_owned(), format!("{}:{path}", bin.display()));
        let report = &smoke(&options)[0];
        let runner = serde_json::to_value(report.runner.as_ref().unwrap()).unwrap();
        assert_eq!(runner["version"], version);
        assert_eq!(runner["verified"], verified);
        let warned = report.warnings.iter().any(|w| {
            w == &format!("opencode {version} is not a version wb-lsp is verified against (1.18.33): its configuration or events may differ")
        });
        assert_eq!(warned, !verified, "{:?}", report.warnings);
    }
    // A runner outside an npm package (the fake runner): no version, no claim, no warning.
    let report = &smoke(&opencode_options(&world))[0];
    assert_eq!(serde_json::to_value(report.runner.as_ref().unwrap()).unwrap()["version"], Value::Null);
    assert!(!report.warnings.iter().any(|w| w.contains("verified against")), "{:?}", report.warnings);
    let dry = dry_run(&opencode_options(&world)).unwrap();
    assert_eq!(dry.adapter["verified_versions"], json!(["1.18.33"]));
    assert_eq!(dry.adapter["capabilities"]["streamed_text"]["status"], "degraded");
    // Every capability the standard lists, each with its status.
    let listed: Vec<&String> = dry.adapter["capabilities"].as_object().unwrap().keys().collect();
    for capability in ["streamed_text", "tool_events", "file_changes", "usage", "permissions", "questions"]
        .into_iter()
        .chain(["multi_turn", "steering", "image_input", "image_generation", "session_resume", "cancellation"])
        .chain(["failures", "unknown_native_events"])
    {
        assert!(listed.iter().any(|name| *name == capability), "{capability} in {listed:?}");
    }
    assert_eq!(listed.len(), 14);
}

/// Pi's tools never ask: on the local runtime nothing keeps a read-only workspace read-only, and the run says so.
#[test]
fn pi_warns_that_it_cannot_keep_a_workspace_read_only_locally() {
    let world = World::new();
    world.install_runners(&["pi"]);
    world.package(
        "pi-ro",
        &minimal(
            "pi-ro",
            "pi",
            "google/gemini-2.5-flash",
            "workspaces:\n  docs:\n    required: true\n    access: read-only\n",
        ),
    );
    let docs = world.dir("docs");
    let mut options = with_env(base_options(&world, ".workbenches/pi-ro"), &[("GEMINI_API_KEY", "gemini-test-value")]);
    options.request.settings.workspaces = vec![format!("docs={}", docs.display())];
    let report = dry_run(&options).unwrap();
    assert_eq!(
        report.warnings,
        [
            "Pi cannot keep workspace docs read-only on the local runtime: its tools run without asking (the docker runtime mounts it read-only)"
        ]
    );
}
