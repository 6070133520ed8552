//! OpenCode: on the local runtime its server (`opencode serve`, driven through `opencode_server`), elsewhere
//! `opencode run --format json`; configuration through `OPENCODE_CONFIG_CONTENT`.
//!
//! Verified against opencode-ai 1.18.33 (crates/wb-lsp/tests/real_runners.rs). Offline, it tries to fetch its
//! models catalog (`models.opencode.ai`, fast failure, `OPENCODE_DISABLE_MODELS_FETCH=1` stops it), installs
//! `@opencode-ai/plugin` from the npm registry into `$XDG_CONFIG_HOME/opencode` when missing, and downloads
//! ripgrep from GitHub for its skill/grep/glob tools when `rg` is not on PATH (docs/runners.md).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use wb_manifest::Access;

use super::{Adapter, StageContext, Support, TranslateState, Translation, base_environment, combined_instructions};
use crate::error::{EngineError, Result};
use crate::events::Translated;

/// Where a session in a container keeps OpenCode's data, in the staged directory.
const DATA_DIR: &str = "opencode-data";

pub struct OpenCode;

/// `${VAR}` → OpenCode's `{env:VAR}`; text that is no reference (`${lower}`) stays as written.
pub fn rewrite_references(value: &str) -> String {
    wb_manifest::env_refs::replace_env_refs(value, |name| format!("{{env:{name}}}"))
}

/// `to` relative to `from` (both absolute, normalized), with `..` where needed.
fn relative_path(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_owned(), from.len() - common).collect();
    parts.extend(to[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}

/// The directory OpenCode matches `edit` permission patterns against: the Git work tree holding the primary
/// workspace, or `/` outside Git (verified against 1.18.33). The workspace is agent-writable (a previous run may
/// have written its `.git/config`): Git is asked the hardened way, so nothing it configures runs.
fn opencode_worktree(primary: &Path) -> PathBuf {
    wb_outcomes::workspace_git_output(primary, &["rev-parse", "--show-toplevel"])
        .map(|stdout| PathBuf::from(String::from_utf8_lossy(&stdout).trim()))
        .filter(|top| top.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The packaged native configuration, when it is JSON OpenCode would read (a `runner_config` file, or the
/// directory's `opencode.json`): its `permission` entries are merged with the engine's.
fn packaged_config(context: &StageContext<'_>) -> Option<Value> {
    let package = context.package;
    let path = super::runner_config_path(package)?;
    let file =
        if super::package_files::is_dir(&package.package_dir, &path) { path.join("opencode.json") } else { path };
    serde_json::from_str(&super::runner_config_text(package, &file).ok()?).ok()
}

/// The engine's entries added after the package's own: a string rule of the package becomes its `*` entry,
/// so the engine's patterns never replace it (OpenCode merges objects, and an object replaces a string).
fn merged_rules(packaged: Option<&Value>, ours: Map<String, Value>) -> Value {
    let mut rules = match packaged {
        Some(Value::String(rule)) => Map::from_iter([("*".to_owned(), json!(rule))]),
        Some(Value::Object(rules)) => rules.clone(),
        _ => Map::new(),
    };
    for (pattern, rule) in ours {
        rules.remove(&pattern);
        rules.insert(pattern, rule);
    }
    Value::Object(rules)
}

/// OpenCode's `permission` entries for a one-shot run, where anything that would ask is rejected: the outbox
/// and every named workspace are external directories it may use, and a read-only named workspace is denied to
/// the editing tools with a pattern relative to OpenCode's work tree (a container's read-only mount enforces
/// that by itself; there the patterns are left out). A read-only workspace that contains a writable one cannot
/// be denied without denying the writable one: that is a warning.
fn permissions(context: &StageContext<'_>, primary: &Path, warnings: &mut Vec<String>) -> Value {
    let packaged = packaged_config(context);
    let packaged_rule = |key: &str| packaged.as_ref().and_then(|c| c.pointer(&format!("/permission/{key}")));
    let mut external = Map::new();
    external.insert(format!("{}/**", context.outbox.display()), json!("allow"));
    let mut edit = Map::new();
    let local = context.runner_stage_dir == context.stage_dir;
    let mut worktree = None;
    for workspace in context.workspaces.iter().filter(|w| w.name.is_some()) {
        external.insert(format!("{}/**", workspace.path.display()), json!("allow"));
        if !local || workspace.access != Access::ReadOnly {
            continue;
        }
        let name = workspace.name.as_deref().unwrap_or_default();
        if let Some(inner) =
            context.workspaces.iter().find(|w| w.access == Access::ReadWrite && w.path.starts_with(&workspace.path))
        {
            warnings.push(format!(
                "OpenCode cannot keep workspace {name} read-only: it contains the writable workspace {}",
                inner.name.as_deref().unwrap_or("primary")
            ));
            continue;
        }
        let root = worktree.get_or_insert_with(|| opencode_worktree(primary));
        let relative = relative_path(root, &workspace.path);
        let pattern = if relative.is_empty() { "**".to_owned() } else { format!("{relative}/**") };
        edit.insert(pattern, json!("deny"));
    }
    let mut permission = match packaged.as_ref().and_then(|c| c.get("permission")) {
        Some(Value::Object(rules)) => rules.clone(),
        _ => Map::new(),
    };
    permission.insert("external_directory".to_owned(), merged_rules(packaged_rule("external_directory"), external));
    if !edit.is_empty() {
        permission.insert("edit".to_owned(), merged_rules(packaged_rule("edit"), edit));
    }
    Value::Object(permission)
}

/// The first OpenCode release whose server protocol the engine drives (`opencode_server`): its routes, replies,
/// events and question tool were verified with 1.18.33.
const SERVER_SINCE: semver::Version = semver::Version::new(1, 18, 0);

/// Whether `command` starts OpenCode's server.
fn serves(command: &[String]) -> bool {
    command.get(1).is_some_and(|sub| sub == "serve")
}

/// The port OpenCode's server listens on in a container (published on a port of this host's loopback the engine
/// is given).
const CONTAINER_PORT: u16 = 4096;

/// `opencode serve`: on the host, on a loopback port free now (OpenCode's own default is a fixed port, which two
/// runs would share); in a container, on its own network interface and [`CONTAINER_PORT`].
fn serve_command(container: bool) -> Result<Vec<String>> {
    let (host, port) = if container {
        ("0.0.0.0", CONTAINER_PORT)
    } else {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| EngineError::io("cannot find a free loopback port for OpenCode's server", e))?
            .port();
        ("127.0.0.1", port)
    };
    Ok(["opencode", "serve", "--hostname", host, "--port"]
        .into_iter()
        .map(str::to_owned)
        .chain([port.to_string()])
        .collect())
}

/// The port of the server `command` starts.
fn server_port(command: &[String]) -> Option<u16> {
    let at = command.iter().position(|argument| argument == "--port")?;
    serves(command).then(|| command.get(at + 1)?.parse().ok()).flatten()
}

impl Adapter for OpenCode {
    fn identity(&self) -> &'static super::Identity {
        &super::Identity {
            name: "opencode",
            executable: "opencode",
            npm_package: "opencode-ai",
            verified_versions: &["1.18.33"],
        }
    }

    fn capabilities(&self) -> Vec<(&'static str, Support)> {
        super::capability_map(&[
            ("streamed_text", Support::Degraded("each text part once it is complete, not token deltas")),
            ("usage", Support::Supported),
            ("failures", Support::Supported),
            (
                "permissions",
                Support::Degraded(
                    "asked of the person on the local and docker runtimes (OpenCode's server on a port of this \
                     host's loopback); on e2b and daytona `opencode run` rejects every ask",
                ),
            ),
            (
                "questions",
                Support::Degraded(
                    "its question tool is asked on the local and docker runtimes; on e2b and daytona it is not offered",
                ),
            ),
            (
                "steering",
                Support::Degraded(
                    "send --steer posts a user message to the running session, taken at its next step, on the local \
                     and docker runtimes, not on e2b and daytona",
                ),
            ),
        ])
    }

    fn translate(&self, context: &StageContext<'_>) -> Result<Translation> {
        let package = context.package;
        let skills = super::stage_skills(context)?;
        let mut env = base_environment(context);
        if let Some(path) = super::runner_config_path(package) {
            if super::package_files::is_dir(&package.package_dir, &path) {
                super::stage_runner_config_dir(package, &path, context.stage_dir)?;
            } else {
                // A staged copy: OpenCode rewrites the file it is given (it adds `$schema`, verified against
                // 1.18.33), which must not touch the package.
                let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("json");
                let name = format!("packaged-config.{extension}");
                let text = super::runner_config_text(package, &path)?;
                super::write_file(&context.stage_dir.join(&name), &text, 0o644)?;
                env.insert("OPENCODE_CONFIG".to_owned(), context.runner_stage_dir.join(&name).display().to_string());
            }
        }
        super::write_file(
            &context.stage_dir.join("workbench-instructions.md"),
            &combined_instructions(context, None)?,
            0o444,
        )?;
        let instructions = context.runner_stage_dir.join("workbench-instructions.md");
        let mut mcp = Map::new();
        for server in context.mcps {
            let headers: Map<String, Value> = server
                .headers
                .iter()
                .map(|(name, value)| (name.value.clone(), Value::String(rewrite_references(&value.value))))
                .collect();
            mcp.insert(
                server.name.value.clone(),
                json!({"type": "remote", "url": server.url.value, "enabled": true, "headers": headers}),
            );
        }
        let primary = context.workspaces.first().map(|w| w.path.clone()).unwrap_or_default();
        let mut warnings = Vec::new();
        let permission = permissions(context, &primary, &mut warnings);
        let config = json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false,
            "share": "disabled",
            "model": context.route.route,
            "instructions": [instructions.display().to_string()],
            "mcp": mcp,
            "permission": permission,
        });
        env.insert("OPENCODE_CONFIG_CONTENT".to_owned(), config.to_string());
        env.insert("OPENCODE_CONFIG_DIR".to_owned(), context.runner_stage_dir.display().to_string());
        // In a container `HOME` is a temporary file system: a session keeps OpenCode's data (its conversations)
        // in the staged directory, which the next turn's container mounts and `resume` carries.
        if context.session && context.runner_stage_dir != context.stage_dir {
            env.insert("XDG_DATA_HOME".to_owned(), context.runner_stage_dir.join(DATA_DIR).display().to_string());
        }
        // One `run`; where the runner can be asked (`settle`), OpenCode's server takes its place.
        let command = vec![
            "opencode".to_owned(),
            "run".to_owned(),
            "--model".to_owned(),
            context.route.route.clone(),
            "--dir".to_owned(),
            primary.display().to_string(),
            "--format".to_owned(),
            "json".to_owned(),
            // A task that starts with `-` is not an option.
            "--".to_owned(),
            context.task.to_owned(),
        ];
        Ok(Translation {
            command,
            cwd: primary,
            env,
            remove_env: context.unselected_variables.to_vec(),
            native_key: "opencode_config",
            native: config,
            staged_files: super::list_staged(context.stage_dir),
            skills,
            warnings,
            disabled_mcps: Vec::new(),
            stdin: None,
            server: None,
        })
    }

    fn next_turn(&self, first: &[String], task: &str, conversation: Option<&str>) -> Result<Vec<String>> {
        let Some(session) = conversation else {
            return Err(EngineError::message("OpenCode did not say which session the first turn ran in"));
        };
        if serves(first) {
            // A new server (on the host, on a port free now); the session and task come with the opening input.
            let container = first.iter().any(|argument| argument == "0.0.0.0");
            return serve_command(container);
        }
        // `--session <id>` before the `--` that ends the options.
        let mut next = super::with_task(first, task.to_owned());
        let at = next.iter().rposition(|argument| argument == "--").unwrap_or(next.len());
        next.splice(at..at, ["--session".to_owned(), session.to_owned()]);
        Ok(next)
    }

    fn conversation_store(&self) -> Option<&'static str> {
        // Only in a container; on the host OpenCode keeps its data (sign-ins too) in the user's directory.
        Some(DATA_DIR)
    }

    fn settle(&self, translation: &mut Translation, version: Option<&str>, container: bool) -> Result<()> {
        let known = version.and_then(|v| semver::Version::parse(v).ok()).is_some_and(|v| v >= SERVER_SINCE);
        if !known || serves(&translation.command) {
            return Ok(());
        }
        let Some(task) = translation.command.last().cloned() else { return Ok(()) };
        translation.command = serve_command(container)?;
        translation.stdin = Some(super::opencode_events::prompt(&task, None));
        translation.env.insert(super::opencode_server::PASSWORD_VARIABLE.to_owned(), wb_outcomes::random_hex(24));
        translation.server = server_port(&translation.command);
        Ok(())
    }

    fn server_port(&self, command: &[String]) -> Option<u16> {
        server_port(command)
    }

    fn opening_input(&self, command: &[String], task: &str, conversation: Option<&str>) -> Option<String> {
        serves(command).then(|| super::opencode_events::prompt(task, conversation))
    }

    fn steer_input(&self, id: &str, text: &str, state: &mut TranslateState) -> Option<String> {
        super::opencode_events::steer(id, text, state)
    }

    fn answer_input(
        &self,
        request: &crate::input::Request,
        answer: &crate::input::Answer,
        state: &mut TranslateState,
    ) -> Option<String> {
        super::opencode_events::reply(request, answer, state)
    }

    fn bridge(
        &self,
        translation: &Translation,
        server: Option<std::net::SocketAddr>,
        stdout: &mut Option<Box<dyn std::io::Read + Send>>,
        stdin: &mut Option<Box<dyn std::io::Write + Send>>,
    ) -> Option<std::io::Result<super::Bridged>> {
        serves(&translation.command)
            .then(|| super::opencode_server::bridge(server, &translation.env, stdout.take(), stdin.take()))
    }

    fn translate_event(&self, event: &Value, state: &mut TranslateState) -> Vec<Translated> {
        match event.get("properties") {
            Some(_) => super::opencode_events::translate(event, state),
            None if event.get("type").and_then(Value::as_str).is_some_and(|t| t.starts_with("wb.")) => {
                super::opencode_events::translate(event, state)
            }
            None => super::opencode_events::translate_run_event(event, state),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn relative_paths_climb_out_of_the_work_tree() {
        use std::path::Path;
        assert_eq!(super::relative_path(Path::new("/"), Path::new("/tmp/oc/ro")), "tmp/oc/ro");
        assert_eq!(super::relative_path(Path::new("/repo/app"), Path::new("/repo/docs")), "../docs");
        assert_eq!(super::relative_path(Path::new("/repo"), Path::new("/repo/docs/api")), "docs/api");
        assert_eq!(super::relative_path(Path::new("/a/b/c"), Path::new("/x")), "../../../x");
    }

    #[test]
    fn rewrites_references() {
        assert_eq!(super::rewrite_references("Bearer ${TOKEN} and ${B}"), "Bearer {env:TOKEN} and {env:B}");
        assert_eq!(super::rewrite_references("plain"), "plain");
        assert_eq!(super::rewrite_references("broken ${X"), "broken ${X");
        assert_eq!(super::rewrite_references("${lower} ${A}"), "${lower} {env:A}");
    }
}
