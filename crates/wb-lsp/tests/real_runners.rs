//! End to end with the real runner binaries (OpenCode, Claude Code, Pi from npm, installed by
//! `scripts/install-runners.sh`), driven by the scripted model server of `wb-testkit` on loopback: smoke,
//! dry run, a full run whose scripted model loads a skill, reads, writes, edits and deletes files and
//! returns an artifact, and cancellation mid-turn — through `wb-lsp` exactly as a user runs it; and an
//! authoring agent (OpenCode) calling `wb-lsp mcp`'s tools on a draft package.
//!
//! The runners are found in `$WB_RUNNERS_DIR/node_modules/.bin` (default `~/.cache/wb-lsp/runners`).
//! `scripts/test.sh` installs them; without them the tests fail with that hint, unless
//! `WB_LSP_SKIP_REAL_RUNNERS=1` asks to skip them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use wb_testkit::{Exchange, McpServer, ModelServer, ToolCall, Turn};
use wb_testsupport::process::FINISH_WITHIN;
use wb_testsupport::{deadline, event_validator, outcomes_validator, read_message, temp_dir, write_file};

const OPENAI_KEY: &str = "sk-openai-canary-5a1e";
const OPENROUTER_KEY: &str = "sk-or-canary-77c3";
const ANTHROPIC_KEY: &str = "sk-ant-canary-19d4";
const SCRIPTED_KEY: &str = "sk-scripted-canary-b2f0";
const MCP_TOKEN: &str = "mcp-token-canary-6e02";
const INSTRUCTIONS_MARKER: &str = "Always write release notes in the imperative mood (marker 4f1c).";
const SKILL_MARKER: &str = "Group the changes under Added, Changed and Removed (skill marker 8d2a).";

fn runners_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("WB_RUNNERS_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/wb-lsp/runners")))?;
    let bin = dir.join("node_modules/.bin");
    let present = ["opencode", "claude", "pi"].iter().all(|exe| bin.join(exe).exists());
    if present {
        return Some(bin);
    }
    if std::env::var("WB_LSP_SKIP_REAL_RUNNERS").as_deref() == Ok("1") {
        eprintln!("SKIPPED: the real runners (WB_LSP_SKIP_REAL_RUNNERS=1)");
        return None;
    }
    panic!(
        "the real runners are missing from {} (run scripts/install-runners.sh; WB_LSP_SKIP_REAL_RUNNERS=1 skips them)",
        bin.display()
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runner {
    OpenCode,
    ClaudeCode,
    Pi,
}

const RUNNERS: [Runner; 3] = [Runner::OpenCode, Runner::ClaudeCode, Runner::Pi];

impl Runner {
    fn name(self) -> &'static str {
        match self {
            Runner::OpenCode => "opencode",
            Runner::ClaudeCode => "claude-code",
            Runner::Pi => "pi",
        }
    }

    /// The executable's name in the runners' `bin` directory.
    fn executable(self) -> &'static str {
        match self {
            Runner::OpenCode => "opencode",
            Runner::ClaudeCode => "claude",
            Runner::Pi => "pi",
        }
    }

    fn supports_mcp(self) -> bool {
        self != Runner::Pi
    }

    /// The credential variable of the route the engine must select.
    fn selected_key(self) -> (&'static str, &'static str) {
        match self {
            Runner::ClaudeCode => ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
            _ => ("SCRIPTED_API_KEY", SCRIPTED_KEY),
        }
    }
}

/// What the scripted model does on one turn, independent of the runner's tool names.
#[derive(Clone, Debug)]
enum Action {
    LoadSkill,
    /// Claude Code defers MCP tools behind its ToolSearch tool: the model selects them first.
    DiscoverLookup,
    Lookup,
    Read(&'static str),
    Write(&'static str, &'static str),
    Edit(&'static str, &'static str, &'static str),
    Bash(String),
    Answer(&'static str),
    Hang(&'static str),
    /// A question for the person, with the labels it offers.
    Ask(&'static str, &'static [&'static str]),
}

const REPORT: &str = "# Release report\n\nAll checks passed.\n";
const FINAL_ANSWER: &str = "Release notes are written, notes.txt is final and obsolete.txt is gone.";

fn environment_report() -> String {
    let names = ["OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "SCRIPTED_API_KEY"];
    let checks: Vec<String> = names
        .iter()
        .map(|name| format!("if [ -n \"$(printenv {name})\" ]; then echo {name}=set; else echo {name}=unset; fi"))
        .collect();
    checks.join("; ")
}

fn work_script(runner: Runner) -> Vec<Action> {
    let mut actions = vec![Action::LoadSkill];
    if runner == Runner::ClaudeCode {
        actions.push(Action::DiscoverLookup);
    }
    if runner.supports_mcp() {
        actions.push(Action::Lookup);
    }
    actions.extend([
        Action::Read("notes.txt"),
        Action::Write("CHANGELOG.md", "# Changelog\n\n## Added\n\n- Scripted release notes.\n"),
        Action::Edit("notes.txt", "status: draft", "status: final"),
        Action::Bash(format!("rm obsolete.txt && {}", environment_report())),
        // The artifact, written with the runner's own write tool where the runtime block says the outbox is.
        Action::Write("outbox:report.md", REPORT),
    ]);
    actions.push(Action::Answer(FINAL_ANSWER));
    actions
}

/// A script error ends the run with a text the test's assertions show (a panic here would only drop the
/// connection, and runners retry).
fn script_error(message: String) -> Turn {
    Turn::text(&format!("SCRIPT ERROR: {message}"))
}

fn find_tool(exchange: &Exchange<'_>, name: &str) -> Result<String, Turn> {
    exchange
        .tools
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name) || (name.starts_with('*') && t.ends_with(&name[1..])))
        .cloned()
        .ok_or_else(|| script_error(format!("the runner offered no {name} tool: {:?}", exchange.tools)))
}

/// The path of a skill's SKILL.md as the system prompt lists it (Pi names skill files there).
fn skill_path_in(system: &str, skill: &str) -> Option<String> {
    let suffix = format!("{skill}/SKILL.md");
    system
        .split(|c: char| c.is_whitespace() || c == '<' || c == '>' || c == '"' || c == '(' || c == ')')
        .find(|word| word.starts_with('/') && word.ends_with(&suffix))
        .map(str::to_owned)
}

fn system_of(exchange: &Exchange<'_>) -> String {
    let body = exchange.body;
    if let Some(system) = body.get("system") {
        return match system {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
            _ => String::new(),
        };
    }
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
        .map(|m| m["content"].as_str().map(str::to_owned).unwrap_or_else(|| m["content"].to_string()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The native tool call for an action.
/// The path the runtime block of the system prompt gives after `label` (`Outbox: `, `Workspace docs: `).
fn runtime_path(system: &str, label: &str) -> Option<String> {
    let start = system.find(label)? + label.len();
    system[start..].split(" (").next().map(str::to_owned)
}

/// `outbox:NAME` and `docs:NAME` are placed where the system prompt says; anything else is in the workspace.
fn tool_call(runner: Runner, exchange: &Exchange<'_>, workspace: &Path, action: &Action) -> Turn {
    let system = system_of(exchange);
    let path = |file: &str| {
        let placed = |label: &str, name: &str| match runtime_path(&system, label) {
            Some(dir) => format!("{dir}/{name}"),
            None => format!("/no-{label}-in-the-system-prompt/{name}"),
        };
        if let Some(name) = file.strip_prefix("outbox:") {
            placed("Outbox: ", name)
        } else if let Some(name) = file.strip_prefix("docs:") {
            placed("Workspace docs: ", name)
        } else {
            workspace.join(file).display().to_string()
        }
    };
    let call = |tool: &str, arguments: Value| Turn::tools(None, vec![ToolCall { name: tool.to_owned(), arguments }]);
    let offered = |name: &str, arguments: Value| match find_tool(exchange, name) {
        Ok(tool) => call(&tool, arguments),
        Err(turn) => turn,
    };
    match (action, runner) {
        (Action::LoadSkill, Runner::OpenCode) => offered("skill", json!({"name": "release-notes"})),
        (Action::LoadSkill, Runner::ClaudeCode) => offered("Skill", json!({"skill": "release-notes"})),
        (Action::LoadSkill, Runner::Pi) => {
            let system = system_of(exchange);
            match skill_path_in(&system, "release-notes") {
                Some(skill) => offered("read", json!({"path": skill})),
                None => script_error(format!("Pi's system prompt lists no release-notes skill:\n{system}")),
            }
        }
        (Action::DiscoverLookup, _) => offered("ToolSearch", json!({"query": "select:mcp__scripted__lookup"})),
        (Action::Lookup, _) => offered("*lookup", json!({"term": "release"})),
        (Action::Read(file), Runner::OpenCode) => call("read", json!({"filePath": path(file)})),
        (Action::Read(file), Runner::ClaudeCode) => call("Read", json!({"file_path": path(file)})),
        (Action::Read(file), Runner::Pi) => call("read", json!({"path": path(file)})),
        (Action::Write(file, text), Runner::OpenCode) => {
            call("write", json!({"filePath": path(file), "content": text}))
        }
        (Action::Write(file, text), Runner::ClaudeCode) => {
            call("Write", json!({"file_path": path(file), "content": text}))
        }
        (Action::Write(file, text), Runner::Pi) => call("write", json!({"path": path(file), "content": text})),
        (Action::Edit(file, old, new), Runner::OpenCode) => {
            call("edit", json!({"filePath": path(file), "oldString": old, "newString": new}))
        }
        (Action::Edit(file, old, new), Runner::ClaudeCode) => {
            call("Edit", json!({"file_path": path(file), "old_string": old, "new_string": new}))
        }
        (Action::Edit(file, old, new), Runner::Pi) => {
            call("edit", json!({"path": path(file), "edits": [{"oldText": old, "newText": new}]}))
        }
        (Action::Bash(command), Runner::OpenCode) => {
            call("bash", json!({"command": command, "description": "Remove the obsolete file and report"}))
        }
        (Action::Bash(command), Runner::ClaudeCode) => {
            call("Bash", json!({"command": command, "description": "Remove the obsolete file and report"}))
        }
        (Action::Bash(command), Runner::Pi) => call("bash", json!({"command": command})),
        (Action::Answer(text), _) => Turn::text(text),
        (Action::Hang(text), _) => Turn { text: Some((*text).to_owned()), tool_calls: Vec::new(), hang: true },
        (Action::Ask(question, labels), Runner::ClaudeCode) => {
            let options: Vec<Value> =
                labels.iter().map(|label| json!({"label": label, "description": label})).collect();
            let questions =
                json!([{"question": question, "header": "Choice", "options": options, "multiSelect": false}]);
            offered("AskUserQuestion", json!({"questions": questions}))
        }
        (Action::Ask(question, labels), Runner::OpenCode) => {
            let options: Vec<Value> =
                labels.iter().map(|label| json!({"label": label, "description": label})).collect();
            let questions = json!([{"question": question, "header": "Choice", "options": options, "multiple": false}]);
            offered("question", json!({"questions": questions}))
        }
        (Action::Ask(..), _) => script_error(format!("{runner:?} is not asked questions in these tests")),
    }
}

fn start_model(runner: Runner, workspace: &Path, actions: Vec<Action>) -> ModelServer {
    let workspace = workspace.to_path_buf();
    ModelServer::start_with(move |exchange| match actions.get(exchange.turn) {
        Some(action) => tool_call(runner, exchange, &workspace, action),
        None => Turn::text("Nothing left to do."),
    })
    .unwrap()
}

/// Where a run happens: on the host, in a Docker image built around the real binary, or in a fake E2B or
/// Daytona sandbox (`wb-sandbox-fakes`: a bubblewrap root with the real binary bound at `/opt/wb/bin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Local,
    Docker,
    E2b,
    Daytona,
}

/// A fake sandbox service running the real binary.
enum FakeService {
    E2b(wb_sandbox_fakes::e2b::E2bFake),
    Daytona(wb_sandbox_fakes::daytona::DaytonaFake),
}

impl FakeService {
    fn start(place: Place, image_bin: PathBuf) -> FakeService {
        let read_only = vec![(image_bin, "/opt/wb/bin".to_owned())];
        if place == Place::Daytona {
            let options = wb_sandbox_fakes::daytona::Options { read_only, ..Default::default() };
            FakeService::Daytona(wb_sandbox_fakes::daytona::DaytonaFake::start(options).unwrap())
        } else {
            let options = wb_sandbox_fakes::e2b::FakeOptions { read_only, ..Default::default() };
            FakeService::E2b(wb_sandbox_fakes::e2b::E2bFake::start(options).unwrap())
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        match self {
            FakeService::E2b(fake) => fake.env().into_iter().collect(),
            FakeService::Daytona(fake) => vec![
                ("DAYTONA_API_KEY".to_owned(), fake.api_key()),
                ("DAYTONA_API_URL".to_owned(), fake.api_url()),
                ("WB_DAYTONA_POLL_MS".to_owned(), "20".to_owned()),
            ],
        }
    }

    fn live(&self) -> usize {
        match self {
            FakeService::E2b(fake) => fake.sandboxes().len(),
            FakeService::Daytona(fake) => fake.sandbox_ids().len(),
        }
    }

    fn requests(&self) -> Vec<wb_sandbox_fakes::Recorded> {
        match self {
            FakeService::E2b(fake) => fake.requests(),
            FakeService::Daytona(fake) => fake.requests(),
        }
    }
}

/// A repository with one package for `runner`, pointed at the scripted model (and MCP server).
struct Fixture {
    _temp: tempfile::TempDir,
    root: PathBuf,
    workspace: PathBuf,
    /// What `wb-lsp` is given as SOURCE: the repository (local), or the package kept outside the workspace
    /// (docker: its image context holds the runner binary, which the workspace's baseline need not hash).
    source: String,
    home: PathBuf,
    workbench_home: PathBuf,
    tmp: PathBuf,
}

fn fixture(runner: Runner, model_url: &str, mcp_url: Option<&str>) -> Fixture {
    fixture_in(runner, model_url, mcp_url, None, Place::Local)
}

/// `docker`: the runner binaries' directory to build the image from (the package then runs on `docker`);
/// `place` E2B: the package runs on `e2b` from a published (fake) image.
fn fixture_in(runner: Runner, model_url: &str, mcp_url: Option<&str>, docker: Option<&Path>, place: Place) -> Fixture {
    let (temp, root) = temp_dir();
    let workspace = root.join("repo");
    let package = match docker {
        Some(_) => root.join("packages/.workbenches/release-notes"),
        None => workspace.join(".workbenches/release-notes"),
    };
    write_file(&workspace.join("notes.txt"), "Release 1.4\nstatus: draft\n");
    write_file(&workspace.join("obsolete.txt"), "remove me\n");
    write_file(&workspace.join("README.md"), "# Demo\n");
    write_file(&package.join("instructions.md"), format!("# Release notes\n\n{INSTRUCTIONS_MARKER}\n"));
    write_file(
        &package.join("skills/release-notes/SKILL.md"),
        format!(
            "---\nname: release-notes\ndescription: Write release notes for a version from the change list.\n---\n\n# Release notes\n\n{SKILL_MARKER}\n"
        ),
    );
    let (model, runner_config) = match runner {
        Runner::OpenCode => {
            // No `$schema`: OpenCode adds one to the file it is given, which must be a staged copy, never the
            // package's file (the outcome would show the change).
            let config = json!({
                "provider": {"scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted model server",
                    "options": {"baseURL": format!("{model_url}/v1"), "apiKey": "{env:SCRIPTED_API_KEY}"},
                    // Prices (USD per million tokens), so OpenCode reports what each step cost.
                    "models": {"model-1": {"name": "Scripted model 1", "tool_call": true,
                        "cost": {"input": 3.0, "output": 15.0}}},
                }},
            });
            write_file(&package.join("opencode.json"), serde_json::to_string_pretty(&config).unwrap());
            (
                "  id: scripted-lab/model-1\n  routes:\n    - provider: scripted\n      model: model-1\n    - provider: openai\n      model: gpt-5\n",
                "./opencode.json",
            )
        }
        Runner::ClaudeCode => {
            write_file(&package.join("claude.json"), r#"{"permissions": {"allow": ["Bash"]}, "max_turns": 20}"#);
            (
                "  id: anthropic/claude-sonnet-4.5\n  routes:\n    - provider: anthropic\n    - provider: openrouter\n",
                "./claude.json",
            )
        }
        Runner::Pi => {
            let models = json!({"providers": {"scripted": {
                "baseUrl": format!("{model_url}/v1"),
                "api": "openai-completions",
                "apiKey": "SCRIPTED_API_KEY",
                "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                // Prices (USD per million tokens), so Pi reports what each message cost.
                "models": [{"id": "model-1", "name": "Scripted model 1",
                    "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}}],
            }}});
            write_file(&package.join("pi/models.json"), serde_json::to_string_pretty(&models).unwrap());
            write_file(&package.join("pi/settings.json"), r#"{"quietStartup": true}"#);
            (
                "  id: scripted-lab/model-1\n  routes:\n    - provider: scripted\n      model: model-1\n    - provider: openai\n      model: gpt-5\n",
                "./pi",
            )
        }
    };
    let mut manifest = format!(
        "spec: 1\nversion: 1.0.0\nname: release-notes\ndescription: Write the release notes.\nrunner: {}\nmodel:\n{model}runner_config: {runner_config}\ninstructions: ./instructions.md\nskills:\n  - ./skills/release-notes\ntools:\n  - sh\n",
        runner.name()
    );
    if let Some(url) = mcp_url {
        manifest.push_str(&format!(
            "mcps:\n  - name: scripted\n    transport: http\n    url: {url}\n    headers:\n      Authorization: Bearer ${{MCP_TOKEN}}\n"
        ));
    }
    // The scripted provider's key is the package's own variable: declared, so the engine binds it (a
    // container gets only what the engine passes).
    manifest.push_str("env:\n");
    if runner != Runner::ClaudeCode {
        manifest.push_str("  SCRIPTED_API_KEY:\n    required: true\n");
    }
    manifest.push_str(&format!("  MCP_TOKEN:\n    required: {}\n", mcp_url.is_some()));
    manifest.push_str("workspaces:\n  docs:\n    required: false\n    access: read-only\n");
    write_file(&root.join("docs/guide.md"), "# Guide\n");
    match docker {
        Some(bin) => {
            image_context(&package.join("image"), bin);
            manifest.push_str(
                "runtimes:\n  docker:\n    image:\n      build: ./image/Dockerfile\n      context: ./image\n",
            );
        }
        None if place == Place::E2b => manifest.push_str("runtimes:\n  e2b:\n    image: fake/opencode:1\n"),
        None if place == Place::Daytona => {
            manifest.push_str("runtimes:\n  daytona:\n    class: linux\n    image: fake/opencode:1\n");
        }
        None => manifest.push_str("runtimes:\n  local: {}\n"),
    }
    write_file(&package.join("workbench.yml"), &manifest);
    let source = match docker {
        Some(_) => package.display().to_string(),
        None => ".".to_owned(),
    };
    let home = root.join("home");
    let workbench_home = root.join("workbench-home");
    let tmp = root.join("tmp");
    for dir in [&home, &workbench_home, &tmp] {
        std::fs::create_dir_all(dir).unwrap();
    }
    offline_opencode(&home);
    Fixture { _temp: temp, root, workspace, source, home, workbench_home, tmp }
}

/// OpenCode installs its plugin package from the npm registry into its configuration directory on every
/// start where it is missing (docs/runners.md); a user's own directory has it after the first run. Here it is
/// present from the start, so the runs stay offline.
fn offline_opencode(home: &Path) {
    let opencode_config = home.join(".config/opencode");
    write_file(&opencode_config.join("package.json"), r#"{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}"#);
    write_file(
        &opencode_config.join("package-lock.json"),
        r#"{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}"#,
    );
    std::fs::create_dir_all(opencode_config.join("node_modules")).unwrap();
}

/// Copies an executable and the shared libraries `ldd` lists into `rootfs` at their own paths.
fn copy_with_libraries(executable: &Path, at: &str, rootfs: &Path) {
    let target = rootfs.join(at.trim_start_matches('/'));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::copy(executable, &target).unwrap();
    let output = Command::new("ldd").arg(executable).output().unwrap();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        let Some(path) = path.filter(|p| p.starts_with('/')) else { continue };
        let destination = rootfs.join(path.trim_start_matches('/'));
        if !destination.exists() {
            std::fs::create_dir_all(destination.parent().unwrap()).unwrap();
            std::fs::copy(path, &destination).unwrap();
        }
    }
}

/// An image context around the real OpenCode binary: busybox for the shell tools, bash and ripgrep (which
/// OpenCode's tools use), each with its shared libraries, on `FROM scratch` (no registry is reachable).
fn image_context(context: &Path, bin: &Path) {
    let rootfs = context.join("rootfs");
    let busybox = Path::new("/bin/busybox");
    assert!(busybox.is_file(), "the docker runs need Debian's busybox-static (scripts/test.sh installs it)");
    copy_with_libraries(busybox, "/bin/busybox", &rootfs);
    for applet in [
        "sh", "rm", "printf", "printenv", "cat", "ls", "env", "mkdir", "echo", "test", "[", "sleep", "id", "head",
        "tail", "grep", "sed", "mv", "cp", "chmod", "ln", "pwd", "uname", "which", "dirname", "basename", "wc",
        "readlink",
    ] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet)).unwrap();
    }
    copy_with_libraries(Path::new("/bin/bash"), "/usr/bin/bash", &rootfs);
    copy_with_libraries(Path::new("/usr/bin/rg"), "/usr/bin/rg", &rootfs);
    // OpenCode as an npm install lays it out: its package (whose version preflight reads) and the command linked
    // to it (not under a `node_modules`, which a build context leaves out).
    let executable = bin.join("opencode").canonicalize().unwrap();
    let installed = "/opt/opencode-ai";
    copy_with_libraries(&executable, &format!("{installed}/bin/opencode.exe"), &rootfs);
    let package = executable.parent().and_then(Path::parent).unwrap().join("package.json");
    std::fs::copy(package, rootfs.join(installed.trim_start_matches('/')).join("package.json")).unwrap();
    std::fs::create_dir_all(rootfs.join("usr/local/bin")).unwrap();
    std::os::unix::fs::symlink(format!("{installed}/bin/opencode.exe"), rootfs.join("usr/local/bin/opencode")).unwrap();
    std::fs::create_dir_all(rootfs.join("etc")).unwrap();
    std::fs::write(rootfs.join("etc/passwd"), "root:x:0:0:root:/workbench/state:/bin/sh\n").unwrap();
    std::fs::write(rootfs.join("etc/group"), "root:x:0:\n").unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin:/usr/bin:/bin SHELL=/usr/bin/bash\n",
    )
    .unwrap();
}

impl Fixture {
    /// `wb-lsp <args>` in the workspace, with every provider key set (the engine must pass only one on).
    fn command(&self, bin: &Path, runner: Runner, model_url: &str, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
        command
            .args(args)
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()))
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("TMPDIR", &self.tmp)
            .env("WORKBENCH_HOME", &self.workbench_home)
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .env("OPENROUTER_API_KEY", OPENROUTER_KEY)
            .env("SCRIPTED_API_KEY", SCRIPTED_KEY)
            .env("MCP_TOKEN", MCP_TOKEN);
        if runner == Runner::ClaudeCode {
            command.env("ANTHROPIC_API_KEY", ANTHROPIC_KEY).env("ANTHROPIC_BASE_URL", model_url);
        }
        command
    }

    /// `wb-lsp <args>`, which must succeed: its stdout as JSON, checked for secrets.
    fn json(&self, bin: &Path, runner: Runner, model_url: &str, args: &[&str]) -> Value {
        let output = self.command(bin, runner, model_url, args).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{runner:?} {args:?}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_no_secret(&stdout, &format!("{args:?}"));
        serde_json::from_str(stdout.trim()).unwrap()
    }

    /// The smoke report of the package, which must be ready.
    fn smoke(&self, bin: &Path, runner: Runner, model_url: &str) -> Value {
        let reports = self.json(bin, runner, model_url, &["smoke", "--json", &self.source]);
        let report = reports.as_array().map(|a| a[0].clone()).unwrap_or(reports);
        assert_eq!(report["status"], "ready", "{report}");
        report
    }

    /// A dry run that keeps its stage in `stage`.
    fn kept_dry_run(&self, bin: &Path, runner: Runner, model_url: &str, stage: &Path) -> Value {
        let args = [
            "dry-run",
            "--json",
            "--task",
            "Check the configuration.",
            "--stage-dir",
            stage.to_str().unwrap(),
            &self.source,
        ];
        self.json(bin, runner, model_url, &args)
    }

    fn leftover_stages(&self) -> Vec<String> {
        std::fs::read_dir(&self.tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("wb-lsp-stage-"))
            .collect()
    }
}

fn assert_no_secret(text: &str, what: &str) {
    for secret in [OPENAI_KEY, OPENROUTER_KEY, ANTHROPIC_KEY, SCRIPTED_KEY, MCP_TOKEN] {
        assert!(!text.contains(secret), "{what} shows a secret value ({secret}):\n{text}");
    }
}

fn check_events(events: &[Value]) {
    let validator = event_validator();
    for (index, event) in events.iter().enumerate() {
        // `outcome.available` / `outcome.failed` are newer-engine events the official enum does not list yet:
        // their envelope is validated as a data-free type (the engine crate's tests check their data).
        let mut checked = event.clone();
        if matches!(event["type"].as_str(), Some("outcome.available" | "outcome.failed" | "plan.updated")) {
            checked["type"] = Value::from("run.ready");
            checked["data"] = json!({});
        }
        let errors: Vec<String> = validator.iter_errors(&checked).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{event} does not validate: {errors:?}");
        assert_eq!(event["sequence"], Value::from(index as u64 + 1), "sequence of {event}");
        assert_eq!(event["run_id"], events[0]["run_id"]);
    }
    let terminal: Vec<&Value> = events
        .iter()
        .filter(|e| matches!(e["type"].as_str(), Some("run.completed" | "run.failed" | "run.cancelled")))
        .collect();
    assert_eq!(terminal.len(), 1, "exactly one terminal event: {events:#?}");
    assert_eq!(events.last(), terminal.first().copied(), "the terminal event is the last");
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

/// Runs `wb-lsp run --json`, returning the events, stderr and how it exited.
/// Runs `wb-lsp run --json`: the events (each with the moment its line arrived), stderr and the exit code.
fn run_json(command: &mut Command) -> (Vec<(Value, SystemTime)>, String, i32) {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr_reader = deadline(child.stderr.take().unwrap(), FINISH_WITHIN, "wb-lsp run's stderr up to its end");
    let stdout = deadline(child.stdout.take().unwrap(), FINISH_WITHIN, "wb-lsp run's events up to its end");
    let mut events = Vec::new();
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let at = SystemTime::now();
        lines.push(line.clone());
        match serde_json::from_str(&line) {
            Ok(event) => events.push((event, at)),
            Err(_) => lines.push(format!("(not an event) {line}")),
        }
    }
    let status = child.wait().unwrap();
    let stderr = stderr_reader.text_to_end();
    assert_eq!(lines.len(), events.len(), "stdout holds only events: {lines:#?}\nstderr: {stderr}");
    (events, stderr, status.code().unwrap_or(-1))
}

/// When the parts of one run happened (wall clock).
struct Timing {
    started: SystemTime,
    /// The runner process started and exited (only measured through a timing wrapper).
    spawned: Option<SystemTime>,
    exited: Option<SystemTime>,
    first_request: SystemTime,
    completed: SystemTime,
}

/// A wrapper placed before the real runner on PATH that notes when the runner starts and exits.
fn timing_wrapper(dir: &Path, bin: &Path, runner: Runner) {
    use std::os::unix::fs::PermissionsExt;
    let executable = match runner {
        Runner::OpenCode => "opencode",
        Runner::ClaudeCode => "claude",
        Runner::Pi => "pi",
    };
    let real = bin.join(executable).canonicalize().unwrap();
    let script = format!(
        "#!/bin/sh\ndate +%s%N > \"$WB_TIMING_DIR/spawned\"\n\"{}\" \"$@\"\nrc=$?\ndate +%s%N > \"$WB_TIMING_DIR/exited\"\nexit $rc\n",
        real.display()
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(executable);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn read_stamp(path: &Path) -> Option<SystemTime> {
    let nanos: u64 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos))
}

#[test]
fn the_adapters_are_verified_against_the_pinned_runners() {
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-runners.sh"))
            .unwrap();
    for (runner, package) in [
        ("opencode", "opencode-ai"),
        ("claude-code", "@anthropic-ai/claude-code"),
        ("pi", "@mariozechner/pi-coding-agent"),
    ] {
        let adapter = wb_engine::adapters::adapter(runner).unwrap();
        let pinned = script
            .lines()
            .find_map(|line| line.split_once(&format!("={package}@")).map(|(_, version)| version.trim().to_owned()))
            .unwrap_or_else(|| panic!("install-runners.sh pins no {package}"));
        assert_eq!(adapter.verified_versions(), [pinned.as_str()], "{runner}");
        // What the "Runner CLI is unavailable" message tells a person to install is what the script installs.
        assert_eq!(adapter.npm_package(), package, "{runner}");
        let capabilities = adapter.capabilities();
        for capability in [
            "streamed_text",
            "tool_events",
            "file_changes",
            "usage",
            "permissions",
            "multi_turn",
            "steering",
            "image_input",
            "image_generation",
            "cancellation",
            "failures",
            "unknown_native_events",
        ] {
            assert!(capabilities.iter().any(|(name, _)| *name == capability), "{runner} lacks {capability}");
        }
    }
    let Some(bin) = runners_bin() else { return };
    for (exe, runner) in [("opencode", "opencode"), ("claude", "claude-code"), ("pi", "pi")] {
        // With the runner cache first on PATH, as every run here has it: its Node (bundled where the system's is
        // too old for Pi, as Debian 12's 18 is) is the one a runner's `#!/usr/bin/env node` finds.
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let output = Command::new(bin.join(exe)).arg("--version").env("PATH", path).output().unwrap();
        // Pi prints its version on stderr.
        let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        let adapter = wb_engine::adapters::adapter(runner).unwrap();
        assert!(
            text.split_whitespace().any(|word| adapter.verified_versions().contains(&word)),
            "{exe} --version printed {text:?}, not a verified version"
        );
    }
}

#[test]
fn smoke_and_dry_run_with_the_real_runners() {
    let Some(bin) = runners_bin() else { return };
    for runner in RUNNERS {
        let model = start_model(runner, Path::new("/nonexistent"), vec![Action::Answer("Configuration accepted.")]);
        let fixture = fixture(runner, &model.url(), None);
        let report = fixture.smoke(&bin, runner, &model.url());
        assert!(report["runner"]["path"].as_str().unwrap().starts_with(bin.to_str().unwrap()), "{report}");
        assert_eq!(report["runner"]["verified"], true, "{report}");
        // No warning, but Claude Code's where this machine cannot sandbox its tools (a chroot makes no user
        // namespace): the same probe as the adapter's says which.
        let sandboxes = Command::new("bwrap")
            .args(["--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "true"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        let expected: Vec<&str> = if runner == Runner::ClaudeCode && !sandboxes {
            vec!["Claude Code's tools see the run's environment"]
        } else {
            Vec::new()
        };
        let warnings: Vec<&str> = report["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert_eq!(warnings.len(), expected.len(), "{report}");
        assert!(warnings.iter().zip(&expected).all(|(warning, start)| warning.starts_with(start)), "{report}");
        let (provider, variable, method) = match runner {
            Runner::ClaudeCode => ("anthropic", Value::from("ANTHROPIC_API_KEY"), "environment"),
            _ => ("scripted", Value::Null, "runner_config"),
        };
        assert_eq!(report["authentication"]["provider"], provider, "{report}");
        assert_eq!(report["authentication"]["variable"], variable, "{report}");
        assert_eq!(report["authentication"]["method"], method, "{report}");

        let stage = fixture.root.join("stage");
        let dry_run = fixture.kept_dry_run(&bin, runner, &model.url(), &stage);
        assert!(model.requests().is_empty(), "smoke and dry run make no model request");
        assert!(fixture.leftover_stages().is_empty(), "temporary staged files are removed");
        assert_eq!(dry_run["stage_dir"], stage.display().to_string());
        for file in dry_run["staged_files"].as_array().unwrap() {
            assert!(stage.join(file.as_str().unwrap()).exists(), "{runner:?}: {file} is not in the kept stage");
        }

        // The runner accepts what the dry run printed: its command, run by hand with the staged configuration
        // and the variables the dry run names, loads everything and answers.
        let command: Vec<String> =
            dry_run["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
        let mut process = Command::new(bin.join(&command[0]));
        process
            .args(&command[1..])
            .current_dir(dry_run["cwd"].as_str().unwrap())
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HOME", &fixture.home)
            .env("XDG_CONFIG_HOME", fixture.home.join(".config"))
            .env("XDG_DATA_HOME", fixture.home.join(".local/share"))
            .env("XDG_CACHE_HOME", fixture.home.join(".cache"))
            .env("WORKBENCH_OUTPUT_DIR", fixture.tmp.join("outbox"));
        let names: Vec<&str> = dry_run["env"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let (key, value) = runner.selected_key();
        assert!(names.contains(&key) || runner != Runner::ClaudeCode, "{runner:?}: {names:?}");
        process.env(key, value);
        match runner {
            Runner::OpenCode => {
                assert!(names.contains(&"OPENCODE_CONFIG_CONTENT") && names.contains(&"OPENCODE_CONFIG_DIR"));
                process
                    .env("OPENCODE_CONFIG_CONTENT", dry_run["native"].to_string())
                    .env("OPENCODE_CONFIG_DIR", &stage)
                    .env("OPENCODE_CONFIG", fixture.workspace.join(".workbenches/release-notes/opencode.json"));
            }
            Runner::ClaudeCode => {
                assert!(names.contains(&"CLAUDE_CONFIG_DIR"));
                process
                    .env("CLAUDE_CONFIG_DIR", &stage)
                    .env("ANTHROPIC_BASE_URL", model.url())
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", "1");
            }
            Runner::Pi => {
                assert!(names.contains(&"PI_CODING_AGENT_DIR") && names.contains(&"PI_OFFLINE"));
                process.env("PI_CODING_AGENT_DIR", &stage).env("PI_OFFLINE", "1");
            }
        }
        let (accepted, native_stdout, stderr) = if command.get(1).is_some_and(|sub| sub == "serve") {
            // OpenCode's server: started by hand with a password of the test's own, and given the task over its
            // HTTP API, as the engine's bridge gives it.
            serve_by_hand(&mut process, &command)
        } else {
            let (status, stdout, stderr) = run_by_hand(&mut process, dry_run["stdin"].as_str());
            (status.success(), stdout, stderr)
        };
        assert!(accepted, "{runner:?} refused the dry run's command: {native_stdout}{stderr}");
        let turns = model.turns();
        let first = turns.first().unwrap_or_else(|| panic!("{runner:?} made no model request: {native_stdout}"));
        assert!(first.system.contains(INSTRUCTIONS_MARKER), "{runner:?}: the staged instructions were not loaded");
        assert!(native_stdout.contains("Configuration accepted."), "{runner:?}: {native_stdout}\n{stderr}");
    }
}

/// Starts a dry run's `opencode serve` command by hand and, once it listens, gives it a task through its HTTP
/// API as the engine's bridge does (a session, then its prompt; `/message` answers once the turn is over).
/// Returns whether the server answered, the turn's reply and the server's stderr.
fn serve_by_hand(server: &mut Command, command: &[String]) -> (bool, String, String) {
    const PASSWORD: &str = "serve-by-hand-7d2e";
    let port: u16 =
        command.iter().position(|a| a == "--port").and_then(|at| command.get(at + 1)).unwrap().parse().unwrap();
    let mut child = server
        .env("OPENCODE_SERVER_PASSWORD", PASSWORD)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = deadline(child.stdout.take().unwrap(), Duration::from_secs(60), "opencode serve's first line");
    let listening = BufReader::new(stdout).lines().map_while(Result::ok).any(|line| line.contains("listening on"));
    assert!(listening, "opencode serve did not listen");
    let answered = prompt_server(port, PASSWORD);
    let _ = child.kill();
    let _ = child.wait();
    (answered.0, answered.1, String::new())
}

/// Gives OpenCode's server listening on this host's `port` a task over its HTTP API, as the engine's bridge does
/// (a session, then its prompt; `/message` answers once the turn is over): whether it answered, and its reply.
fn prompt_server(port: u16, password: &str) -> (bool, String) {
    let post = |path: &str, body: &Value| -> (u16, String) {
        use std::io::{Read, Write};
        let body = body.to_string();
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
        let auth = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("opencode:{password}"));
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        let status = reply.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
        (status, reply.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default())
    };
    let (status, session) = post("/session", &json!({}));
    let id = serde_json::from_str::<Value>(&session).ok().and_then(|s| s["id"].as_str().map(str::to_owned));
    let answered = match id {
        Some(id) if status == 200 => {
            let prompt = json!({"parts": [{"type": "text", "text": "Check the configuration."}]});
            post(&format!("/session/{id}/message"), &prompt)
        }
        _ => (status, session),
    };
    (answered.0 == 200, answered.1)
}

/// Runs a dry run's command by hand: with its `stdin` (an interactive runner's task) written, and its stdin kept
/// open until the runner said its turn ended (Claude Code's `result`, Pi's `agent_end`), as the engine does.
/// Returns the exit status, stdout and stderr.
fn run_by_hand(process: &mut Command, stdin: Option<&str>) -> (std::process::ExitStatus, String, String) {
    use std::io::Write;
    let mut child = process.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take();
    if let (Some(pipe), Some(text)) = (input.as_mut(), stdin) {
        pipe.write_all(format!("{text}\n").as_bytes()).unwrap();
        pipe.flush().unwrap();
    } else {
        input = None;
    }
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let ended = line.contains("\"type\":\"result\"") || line.contains("\"type\":\"agent_end\"");
        seen.push_str(&line);
        seen.push('\n');
        if ended {
            break;
        }
    }
    drop(input);
    seen.extend(rx.iter().map(|line| line + "\n"));
    let output = child.wait_with_output().unwrap();
    (output.status, seen, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The full run for one runner; returns (wb-lsp start → first model request, first request → exit).
fn full_run(bin: &Path, runner: Runner) -> Timing {
    full_run_in(bin, runner, Place::Local, Start::Attached)
}

/// The address a container reaches the host on: the default bridge's gateway.
fn docker_gateway() -> std::net::IpAddr {
    wb_testsupport::docker::bridge_gateway().unwrap_or_else(|problem| panic!("no bridge gateway: {problem}"))
}

/// How [`full_run_in`] starts the run.
#[derive(Clone, Copy, PartialEq)]
enum Start {
    /// `run --json`, followed by the command itself.
    Attached,
    /// `run --detach`, then `attach --json`: the run belongs to its supervisor from the start.
    Detached,
    /// `run --json` through a wrapper that notes when the runner starts and exits.
    Timed,
}

fn full_run_in(bin: &Path, runner: Runner, place: Place, start: Start) -> Timing {
    let timed = start == Start::Timed;
    let docker = place == Place::Docker;
    let remote = matches!(place, Place::E2b | Place::Daytona);
    let ip: std::net::IpAddr = if docker { docker_gateway() } else { std::net::IpAddr::from([127, 0, 0, 1]) };
    let mcp = McpServer::start_on(ip).unwrap();
    let temp_workspace = tempfile::tempdir().unwrap();
    // The workspace path is only known once the fixture exists; the model needs it for absolute paths.
    let placeholder = temp_workspace.path().to_path_buf();
    let model_holder: std::sync::Arc<std::sync::Mutex<PathBuf>> =
        std::sync::Arc::new(std::sync::Mutex::new(placeholder));
    let holder = model_holder.clone();
    let actions = work_script(runner);
    let model = ModelServer::start_on(ip, move |exchange| {
        let workspace = holder.lock().unwrap().clone();
        match actions.get(exchange.turn) {
            Some(action) => tool_call(runner, exchange, &workspace, action),
            None => Turn::text("Nothing left to do."),
        }
    })
    .unwrap();
    let fixture = fixture_in(
        runner,
        &model.url(),
        runner.supports_mcp().then(|| mcp.url()).as_deref(),
        docker.then_some(bin),
        place,
    );
    // The runner sees the workspace where its runtime puts it.
    *model_holder.lock().unwrap() =
        if docker || remote { PathBuf::from("/workspace") } else { fixture.workspace.clone() };
    // The fake service's image has the real binary at /opt/wb/bin/opencode.
    let service = remote.then(|| {
        let image_bin = fixture.root.join("image-bin");
        std::fs::create_dir_all(&image_bin).unwrap();
        let binary = bin.join(runner.executable()).canonicalize().unwrap();
        let target = image_bin.join(runner.executable());
        if std::fs::hard_link(&binary, &target).is_err() {
            std::fs::copy(&binary, &target).unwrap();
        }
        FakeService::start(place, image_bin)
    });

    let task = "Write the release notes for 1.4.";
    let run_args: Vec<&str> = match start {
        Start::Detached => vec!["run", "--detach", "--task", task, &fixture.source],
        _ => vec!["run", "--json", "--task", task, &fixture.source],
    };
    let mut command = fixture.command(bin, runner, &model.url(), &run_args);
    if let Some(service) = &service {
        command.envs(service.env());
    }
    let timing_dir = fixture.root.join("timing");
    if timed {
        timing_wrapper(&timing_dir.join("bin"), bin, runner);
        command
            .env("PATH", format!("{}:{}:/usr/local/bin:/usr/bin:/bin", timing_dir.join("bin").display(), bin.display()))
            .env("WB_TIMING_DIR", &timing_dir);
    }
    let started = SystemTime::now();
    let (timed_events, stderr, code) = if start == Start::Detached {
        // The command returns once the run has started, printing only its id; attach replays and follows it.
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{runner:?}: run --detach: {output:?}");
        let run_id = stdout.trim().to_owned();
        assert!(run_id.starts_with("wb_") && !run_id.contains('\n'), "{runner:?}: run --detach printed {stdout:?}");
        let mut attach = fixture.command(bin, runner, &model.url(), &["attach", &run_id, "--json"]);
        if let Some(service) = &service {
            attach.envs(service.env());
        }
        run_json(&mut attach)
    } else {
        run_json(&mut command)
    };
    let completed = timed_events.last().map_or(SystemTime::now(), |(_, at)| *at);
    let events: Vec<Value> = timed_events.into_iter().map(|(event, _)| event).collect();
    if std::env::var_os("WB_DEBUG_MODEL").is_some() {
        for request in model.requests() {
            let roles: Vec<String> = request.body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| {
                    let content = &m["content"];
                    let kinds: Vec<&str> =
                        content.as_array().into_iter().flatten().filter_map(|c| c["type"].as_str()).collect();
                    format!("{}{:?}", m["role"].as_str().unwrap_or("?"), kinds)
                })
                .collect();
            eprintln!("{} turn={:?} tools={} {:?}", request.path, request.turn, request.tools.len(), roles);
        }
    }
    let context = format!("{runner:?}\nevents: {events:#?}\nstderr: {stderr}");
    assert_eq!(code, 0, "{context}");
    check_events(&events);
    let kinds = kinds(&events);
    assert_eq!(kinds.last(), Some(&"run.completed"), "{context}");
    for kind in [
        "run.started",
        "run.ready",
        "output.text",
        "tool.started",
        "tool.completed",
        "file.changed",
        "usage.updated",
        "outcome.available",
    ] {
        assert!(kinds.contains(&kind), "no {kind}: {context}");
    }
    let text: String =
        events.iter().filter(|e| e["type"] == "output.text").filter_map(|e| e["data"]["text"].as_str()).collect();
    assert!(text.contains(FINAL_ANSWER), "{runner:?}: the final answer was not streamed: {text:?}");
    let all = serde_json::to_string(&events).unwrap() + &stderr;
    assert_no_secret(&all, "the run's events");

    // The model's side: instructions, context and skill reached it; the right credentials authenticated.
    let turns = model.turns();
    let first = turns.first().unwrap_or_else(|| panic!("no scripted turn was requested: {context}"));
    assert!(
        first.system.contains(INSTRUCTIONS_MARKER),
        "{runner:?}: instructions not in the system prompt:\n{}",
        first.system
    );
    assert!(first.system.contains("<workbench_context>"), "{runner:?}: no context block:\n{}", first.system);
    assert!(first.system.contains("<workbench_runtime>"), "{runner:?}: no runtime block");
    let later = serde_json::to_string(&turns.last().unwrap().body).unwrap();
    assert!(later.contains(SKILL_MARKER), "{runner:?}: the skill's text never reached the model: {later}");
    let (variable, key) = runner.selected_key();
    for request in &turns {
        let credential = request.header("authorization").or(request.header("x-api-key")).unwrap_or_default();
        assert!(
            credential.contains(key),
            "{runner:?}: the model request authenticated with {credential:?}, not {variable}"
        );
    }
    // What the runner's own shell saw (the bash tool result went back to the model).
    let report = turns.last().unwrap().body.to_string();
    for name in ["OPENAI_API_KEY", "OPENROUTER_API_KEY"] {
        assert!(report.contains(&format!("{name}=unset")), "{runner:?}: {name} reached the runner: {report}");
    }
    if runner != Runner::ClaudeCode {
        // Claude Code scrubs credentials from its tools' environment, so only the others can show it.
        assert!(report.contains(&format!("{variable}=set")), "{runner:?}: {variable} did not reach the runner");
    }
    if runner.supports_mcp() {
        let requests = mcp.requests();
        assert!(
            requests.iter().any(|r| r.rpc.as_deref() == Some("tools/call")),
            "{runner:?}: the MCP tool was never called"
        );
        for request in &requests {
            assert_eq!(request.header("authorization"), Some(format!("Bearer {MCP_TOKEN}").as_str()), "{runner:?}");
        }
        assert!(later.contains(wb_testkit::mcp::LOOKUP_ANSWER), "{runner:?}: the MCP answer never reached the model");
    }

    // The workspace and the outcome: exactly the three changes and the artifact. A sandbox's changes come back
    // pending: the host is untouched until the outcome is applied.
    let workspace = &fixture.workspace;
    if remote {
        assert_eq!(std::fs::read_to_string(workspace.join("notes.txt")).unwrap(), "Release 1.4\nstatus: draft\n");
        assert!(workspace.join("obsolete.txt").exists());
        let available = events.iter().find(|e| e["type"] == "outcome.available").unwrap();
        assert_eq!(available["data"]["application_state"], "pending", "{available}");
        let id = available["data"]["outcome_id"].as_str().unwrap();
        let applied = fixture.json(bin, runner, &model.url(), &["outcome", id, "--apply", "--json"]);
        assert_eq!((applied["applied"].as_u64(), applied["unchanged"].as_u64()), (Some(3), Some(0)), "{applied}");
        let service = service.as_ref().unwrap();
        assert_eq!(service.live(), 0, "the run left its sandbox");
        for request in service.requests() {
            let text = format!("{:?}{}", request.headers, String::from_utf8_lossy(&request.body));
            assert!(
                !text.contains(OPENAI_KEY) && !text.contains(OPENROUTER_KEY),
                "an unselected key was sent: {}",
                request.path
            );
        }
    }
    assert_eq!(std::fs::read_to_string(workspace.join("notes.txt")).unwrap(), "Release 1.4\nstatus: final\n");
    assert!(std::fs::read_to_string(workspace.join("CHANGELOG.md")).unwrap().contains("Scripted release notes"));
    assert!(!workspace.join("obsolete.txt").exists());

    let available = events.iter().find(|e| e["type"] == "outcome.available").unwrap();
    let id = available["data"]["outcome_id"].as_str().unwrap_or_else(|| panic!("{available}"));
    let dir = fixture.workbench_home.join("outcomes").join(id);
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("outcome.json")).unwrap()).unwrap();
    let errors: Vec<String> =
        outcomes_validator("outcome.schema.json").iter_errors(&manifest).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut changes: Vec<(String, String)> = manifest["changesets"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["entries"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            (e["path"].as_str().unwrap_or_default().to_owned(), e["operation"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    changes.sort();
    assert_eq!(
        changes,
        [
            ("CHANGELOG.md".to_owned(), "add".to_owned()),
            ("notes.txt".to_owned(), "modify".to_owned()),
            ("obsolete.txt".to_owned(), "delete".to_owned())
        ],
        "{runner:?}: {manifest:#}"
    );
    let artifacts: Vec<&str> =
        manifest["artifacts"].as_array().into_iter().flatten().filter_map(|a| a["path"].as_str()).collect();
    assert_eq!(artifacts, ["report.md"], "{runner:?}: {manifest:#}");
    assert!(fixture.leftover_stages().is_empty(), "staged files are removed");
    assert_eq!(fixture.root.join("repo"), *workspace);

    let first_request = model.requests().first().map(|r| r.wall).unwrap();
    Timing {
        started,
        spawned: read_stamp(&timing_dir.join("spawned")),
        exited: read_stamp(&timing_dir.join("exited")),
        first_request,
        completed,
    }
}

/// OpenCode on the `e2b` runtime: the real binary in a fake E2B sandbox (staging, preflight, the scripted
/// work, collection), then the pending outcome applied to the host.
#[test]
fn opencode_does_the_scripted_work_in_an_e2b_sandbox() {
    let Some(bin) = runners_bin() else { return };
    full_run_in(&bin, Runner::OpenCode, Place::E2b, Start::Attached);
}

/// OpenCode on the `daytona` runtime: the same in a fake Daytona sandbox (its environment through the 0600
/// file, its output polled from the session's logs).
#[test]
fn opencode_does_the_scripted_work_in_a_daytona_sandbox() {
    let Some(bin) = runners_bin() else { return };
    full_run_in(&bin, Runner::OpenCode, Place::Daytona, Start::Attached);
}

#[test]
fn opencode_does_the_scripted_work() {
    let Some(bin) = runners_bin() else { return };
    full_run(&bin, Runner::OpenCode);
}

/// OpenCode on the `docker` runtime, in an image built around the real binary. Like the engine's Docker tests,
/// it needs a Docker engine unless `WB_LSP_SKIP_DOCKER_TESTS=1`.
#[test]
fn opencode_does_the_scripted_work_in_docker() {
    let Some(bin) = runners_bin() else { return };
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return;
    }
    full_run_in(&bin, Runner::OpenCode, Place::Docker, Start::Attached);
}

/// The rest of OpenCode's docker matrix: smoke in the built image, the dry run's command accepted by the
/// real binary inside that image, and cancellation mid-turn removing the container.
#[test]
fn opencode_in_docker_smokes_accepts_its_dry_run_and_cancels() {
    let Some(bin) = runners_bin() else { return };
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return;
    }
    let runner = Runner::OpenCode;
    let ip = docker_gateway();
    let model = ModelServer::start_on(ip, |exchange| match exchange.turn {
        0 => Turn::text("Configuration accepted."),
        _ => Turn { text: Some("Let me think about the notes".to_owned()), tool_calls: Vec::new(), hang: true },
    })
    .unwrap();
    let fixture = fixture_in(runner, &model.url(), None, Some(&bin), Place::Docker);

    let report = fixture.smoke(&bin, runner, &model.url());
    assert_eq!(report["runtime"], "docker");
    assert_eq!(report["runner"]["path"], "/usr/local/bin/opencode", "found inside the image: {report}");
    assert_eq!(report["authentication"]["method"], "runner_config");

    let output = fixture.command(&bin, runner, &model.url(), &["build", "--json", &fixture.source]).output().unwrap();
    let built: Value = serde_json::from_slice(&output.stdout).unwrap();
    let built = built.as_array().map(|a| a[0].clone()).unwrap_or(built);
    let image = built["image"]["id"].as_str().unwrap_or_else(|| panic!("{built}")).to_owned();
    let stage = fixture.root.join("stage");
    let dry_run = fixture.kept_dry_run(&bin, runner, &model.url(), &stage);
    assert_eq!(dry_run["cwd"], "/workspace");
    let outbox = fixture.root.join("outbox");
    std::fs::create_dir_all(&outbox).unwrap();
    let package = Path::new(&fixture.source);
    let volume = |host: &Path, target: &str, mode: &str| format!("{}:{target}:{mode}", host.display());
    let user = format!("{}:{}", nix::unistd::getuid(), nix::unistd::getgid());
    let mut docker = Command::new("docker");
    docker
        .args(["run", "--rm", "--read-only", "--tmpfs", "/tmp", "-w", "/workspace", "-u", &user])
        .args(["-v", &volume(&fixture.workspace, "/workspace", "rw")])
        .args(["-v", &volume(package, "/workbench/package", "ro")])
        .args(["-v", &volume(&stage, "/workbench/stage", "rw")])
        .args(["-v", &volume(&outbox, "/outbox", "rw")])
        .args(["-e", "HOME=/tmp", "-e", "WORKBENCH_OUTPUT_DIR=/outbox", "-e", "SCRIPTED_API_KEY"])
        .args(["-e", "OPENCODE_CONFIG_CONTENT", "-e", "OPENCODE_CONFIG_DIR=/workbench/stage"])
        .args(["-e", "OPENCODE_CONFIG=/workbench/package/opencode.json", &image])
        .args(dry_run["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()))
        .env("SCRIPTED_API_KEY", SCRIPTED_KEY)
        .env("OPENCODE_CONFIG_CONTENT", dry_run["native"].to_string());
    // The image's OpenCode is one whose server the engine drives: the dry run's command is the server, run here
    // with a password of the test's own, published on this host's loopback, and given its task over HTTP.
    assert_eq!(dry_run["command"][1], "serve", "{dry_run}");
    const PASSWORD: &str = "docker-by-hand-41c0";
    let name = format!("wb-lsp-serve-by-hand-{}", std::process::id());
    docker.env("OPENCODE_SERVER_PASSWORD", PASSWORD);
    let arguments: Vec<String> = docker.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    let at = arguments.iter().position(|a| a == "--rm").unwrap();
    let mut detached = Command::new("docker");
    detached
        .args(&arguments[..at])
        .args(["-d", "--name", &name, "-p", "127.0.0.1::4096", "-e", "OPENCODE_SERVER_PASSWORD"])
        .args(&arguments[at..])
        .envs(docker.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))));
    let started = detached.output().unwrap();
    assert!(started.status.success(), "{started:?}");
    let port = Command::new("docker").args(["port", &name, "4096/tcp"]).output().unwrap();
    let port: u16 = String::from_utf8_lossy(&port.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("127.0.0.1:").and_then(|p| p.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no published port: {port:?}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let logs = Command::new("docker").args(["logs", &name]).output().unwrap();
        if String::from_utf8_lossy(&logs.stdout).contains("listening on") {
            break;
        }
        assert!(Instant::now() < deadline, "the server in the container did not listen: {logs:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (accepted, native) = prompt_server(port, PASSWORD);
    let _ = Command::new("docker").args(["rm", "-f", &name]).output();
    assert!(accepted, "the runner refused the dry run's command: {native}");
    assert!(native.contains("Configuration accepted."), "{native}");
    let first = model.turns().first().cloned().expect("a model request from the container");
    assert!(first.system.contains(INSTRUCTIONS_MARKER), "the staged instructions were not loaded");
    assert!(first.header("authorization").is_some_and(|h| h.contains(SCRIPTED_KEY)));

    cancel_with(&bin, runner, &model, &fixture, |fixture| containers_for(&fixture.workspace));
}

/// A workspace bound read-only stays so on the local runtime where the runner can be told: OpenCode through
/// its `edit` permission patterns, Claude Code through its settings (Pi's tools never ask: its adapter warns).
/// OpenCode ends a one-shot run at the first refusal; Claude Code goes on.
#[test]
fn read_only_workspaces_refuse_writes() {
    let Some(bin) = runners_bin() else { return };
    for runner in [Runner::OpenCode, Runner::ClaudeCode] {
        let actions = vec![Action::Write("docs:forbidden.txt", "must not be written\n"), Action::Answer("Understood.")];
        let model = start_model(runner, Path::new("/unused"), actions);
        let fixture = fixture(runner, &model.url(), None);
        let docs = format!("docs={}", fixture.root.join("docs").display());
        let (timed, stderr, code) = run_json(&mut fixture.command(
            &bin,
            runner,
            &model.url(),
            &["run", "--json", "--task", "Write into the docs.", "--workspace", &docs, &fixture.source],
        ));
        let events: Vec<Value> = timed.into_iter().map(|(event, _)| event).collect();
        assert_eq!(code, 0, "{runner:?}: {events:#?}\n{stderr}");
        check_events(&events);
        assert!(!fixture.root.join("docs/forbidden.txt").exists(), "{runner:?} wrote into a read-only workspace");
        let refused = events.iter().any(|e| {
            e["type"] == "tool.completed" && e["data"]["status"] == "failed" && e.to_string().contains("forbidden.txt")
        });
        assert!(refused, "{runner:?}: the refused write is not a failed tool call: {events:#?}");
    }
}

/// Claude Code detached: `run --detach` returns once the run has started, the run goes on under its
/// supervisor, and `attach` replays and follows it to the same events and outcome as a followed run.
#[test]
fn claude_code_does_the_scripted_work_detached() {
    let Some(bin) = runners_bin() else { return };
    full_run_in(&bin, Runner::ClaudeCode, Place::Local, Start::Detached);
}

#[test]
fn claude_code_does_the_scripted_work() {
    let Some(bin) = runners_bin() else { return };
    full_run(&bin, Runner::ClaudeCode);
}

#[test]
fn pi_does_the_scripted_work() {
    let Some(bin) = runners_bin() else { return };
    full_run(&bin, Runner::Pi);
}

/// Cancels a run while the model is mid-turn (Ctrl-C to `wb-lsp run`).
fn cancel_mid_turn(bin: &Path, runner: Runner) {
    let model = start_model(runner, Path::new("/unused"), vec![Action::Hang("Let me think about the notes")]);
    let fixture = fixture(runner, &model.url(), None);
    cancel_with(bin, runner, &model, &fixture, |fixture| processes_in(&fixture.workspace))
}

/// Containers of wb-lsp's that mount `workspace`.
fn containers_for(workspace: &Path) -> Vec<String> {
    let output = Command::new("docker").args(["ps", "-aq", "--filter", "label=dev.wb-lsp.managed"]).output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter(|id| {
            let mounts = Command::new("docker")
                .args(["inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", id])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            mounts.split_whitespace().any(|source| Path::new(source) == workspace)
        })
        .map(str::to_owned)
        .collect()
}

/// Ctrl-C to `wb-lsp run` while the model holds its turn open; `alive` lists what runs the runner (its
/// processes, or its container), which must be gone afterwards.
fn cancel_with(
    bin: &Path,
    runner: Runner,
    model: &ModelServer,
    fixture: &Fixture,
    alive: impl Fn(&Fixture) -> Vec<String>,
) {
    let before = model.turns().len();
    let mut child = fixture
        .command(bin, runner, &model.url(), &["run", "--json", "--task", "Write the release notes.", &fixture.source])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = deadline(child.stdout.take().unwrap(), FINISH_WITHIN, "the cancelled run's events up to its end");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .collect::<Vec<_>>()
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    while model.turns().len() == before {
        assert!(Instant::now() < deadline, "{runner:?} never asked the model");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let running = alive(fixture);
    assert!(!running.is_empty(), "{runner:?}: nothing runs the runner mid-turn");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let events = reader.join().unwrap();
    let stderr = wb_testsupport::deadline(child.stderr.take().unwrap(), FINISH_WITHIN, "the cancelled run's stderr")
        .text_to_end();
    check_events(&events);
    assert_eq!(events.last().unwrap()["type"], "run.cancelled", "{runner:?}: {events:#?}\n{stderr}");
    assert_eq!(status.code(), Some(130), "{runner:?}: {stderr}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left: Vec<String> = alive(fixture).into_iter().filter(|what| running.contains(what)).collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "{runner:?}: the runner outlived the cancelled run: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(fixture.leftover_stages().is_empty(), "{runner:?}: staged files are removed");
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

/// Live processes whose working directory is `dir`.
fn processes_in(dir: &Path) -> Vec<String> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == dir) && !is_zombie(pid) {
            pids.push(pid.to_string());
        }
    }
    pids
}

#[test]
fn cancelling_mid_turn_stops_every_runner() {
    let Some(bin) = runners_bin() else { return };
    for runner in RUNNERS {
        cancel_mid_turn(&bin, runner);
    }
}

#[test]
fn the_editor_streams_a_real_runner() {
    let Some(bin) = runners_bin() else { return };
    let runner = Runner::OpenCode;
    let holder: std::sync::Arc<std::sync::Mutex<PathBuf>> = std::sync::Arc::default();
    let shared = holder.clone();
    let actions = [
        Action::Write("CHANGELOG.md", "# Changelog\n\n- From the editor.\n"),
        Action::Answer("Written from the editor."),
    ];
    let model = ModelServer::start_with(move |exchange| {
        let workspace = shared.lock().unwrap().clone();
        match actions.get(exchange.turn) {
            Some(action) => tool_call(runner, exchange, &workspace, action),
            None => Turn::text("Nothing left to do."),
        }
    })
    .unwrap();
    let fixture = fixture(runner, &model.url(), None);
    *holder.lock().unwrap() = fixture.workspace.clone();
    let manifest = fixture.workspace.join(".workbenches/release-notes/workbench.yml");
    let mut command = fixture.command(&bin, runner, &model.url(), &["serve"]);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |value: Value| {
        let body = value.to_string();
        std::io::Write::write_all(&mut stdin, format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes())
            .unwrap();
        std::io::Write::flush(&mut stdin).unwrap();
    };
    let root = format!("file://{}", fixture.workspace.display());
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": root}}));
    send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let uri = format!("file://{}", manifest.display());
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
        "params": {"command": "workbench.run", "arguments": [{"uri": uri, "task": "Write the changelog."}], "workDoneToken": "run-1"}}));
    let mut events = Vec::new();
    let mut transcript = String::new();
    let result = loop {
        let message = read_message(&mut stdout);
        transcript.push_str(&message.to_string());
        if message["id"] == 2 {
            break message;
        }
        if message["method"] == "workbench/runEvent" {
            events.push(message["params"]["event"].clone());
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}));
    send(json!({"jsonrpc": "2.0", "method": "exit"}));
    let _ = child.wait();
    assert_eq!(result["result"]["ending"]["status"], "completed", "{result}\n{events:#?}");
    assert_eq!(result["result"]["finalText"], "Written from the editor.");
    assert!(result["result"]["outcomeId"].as_str().is_some_and(|id| id.starts_with("wbo_")), "{result}");
    check_events(&events);
    let kinds = kinds(&events);
    for kind in [
        "run.started",
        "output.text",
        "tool.started",
        "tool.completed",
        "file.changed",
        "usage.updated",
        "run.completed",
    ] {
        assert!(kinds.contains(&kind), "the editor received no {kind}: {kinds:?}");
    }
    assert!(events.iter().any(|e| e["type"] == "output.text" && e["data"]["text"] == "Written from the editor."));
    assert_no_secret(&transcript, "the editor session");
    assert!(std::fs::read_to_string(fixture.workspace.join("CHANGELOG.md")).unwrap().contains("From the editor."));
}

/// The engine's overhead around real runs (figures for the notes, not a pass/fail measurement):
/// `WB_MEASURE_RUNS=N` repeats each runner's full local run N times through a wrapper that stamps the
/// runner's start and exit, and prints the medians. A measurement, not a test: ignored unless asked for with
/// `WB_MEASURE_RUNS=N cargo test -p wb-lsp --test real_runners -- --ignored measure_overhead`.
#[test]
#[ignore = "a measurement: WB_MEASURE_RUNS=N and --ignored"]
fn measure_overhead_when_asked() {
    let count = std::env::var("WB_MEASURE_RUNS").ok().and_then(|n| n.parse::<usize>().ok()).unwrap_or(5);
    let Some(bin) = runners_bin() else { return };
    let median = |mut values: Vec<Duration>| {
        values.sort();
        values[values.len() / 2]
    };
    let since = |later: SystemTime, earlier: SystemTime| later.duration_since(earlier).unwrap_or_default();
    for runner in RUNNERS {
        let samples: Vec<Timing> = (0..count).map(|_| full_run_in(&bin, runner, Place::Local, Start::Timed)).collect();
        let launch = median(samples.iter().map(|t| since(t.spawned.unwrap(), t.started)).collect());
        let to_first = median(samples.iter().map(|t| since(t.first_request, t.started)).collect());
        let runner_start = median(samples.iter().map(|t| since(t.first_request, t.spawned.unwrap())).collect());
        let finish = median(samples.iter().map(|t| since(t.completed, t.exited.unwrap())).collect());
        let total = median(samples.iter().map(|t| since(t.completed, t.started)).collect());
        eprintln!(
            "{}: {count} runs, medians: wb-lsp start → runner spawned {launch:?}; → first model request {to_first:?} \
             (of which the runner's own start-up {runner_start:?}); runner exit → run.completed (outcome committed) \
             {finish:?}; whole run {total:?}",
            runner.name()
        );
    }
}

/// `--max-cost` on a real runner driven by the scripted model: the costs the runner reports after each step add
/// up past the cap, and the run stops as a cancel (partial outcome, the limit named in `run.cancelled`),
/// before the model's last turn, which would hang.
fn spend_cap_stops(bin: &Path, runner: Runner) {
    let steps = (0..6).map(|n| Action::Bash(format!("echo step {n}")));
    let actions: Vec<Action> = steps.chain([Action::Hang("Still working")]).collect();
    let model = start_model(runner, Path::new("/unused"), actions);
    let fixture = fixture(runner, &model.url(), None);
    let (events, stderr, code) = run_json(&mut fixture.command(
        bin,
        runner,
        &model.url(),
        &["run", "--json", "--max-cost", "0.0000001", "--task", "Write the release notes.", &fixture.source],
    ));
    let events: Vec<Value> = events.into_iter().map(|(event, _)| event).collect();
    let context = format!("{runner:?}\nevents: {events:#?}\nstderr: {stderr}");
    let reported: Vec<f64> =
        events.iter().filter(|e| e["type"] == "usage.updated").filter_map(|e| e["data"]["cost_usd"].as_f64()).collect();
    assert!(reported.iter().any(|cost| *cost > 0.0), "{runner:?} reported no cost: {context}");
    assert_eq!(code, 130, "{context}");
    let terminal = events.last().unwrap();
    assert_eq!(terminal["type"], "run.cancelled", "{context}");
    let message = terminal["data"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Stopped by --max-cost 0.00 USD: the runner reported "), "{context}");
    assert!(terminal["data"]["cost_usd"].as_f64().is_some_and(|cost| cost > 0.0), "{context}");
    let available = events.iter().find(|e| e["type"] == "outcome.available").expect("an outcome");
    assert_eq!(available["data"]["completeness"], "partial", "{context}");
}

#[test]
fn a_spend_cap_stops_a_scripted_model_run() {
    let Some(bin) = runners_bin() else { return };
    for runner in [Runner::OpenCode, Runner::Pi] {
        spend_cap_stops(&bin, runner);
    }
}

const SESSION_WORD: &str = "ZEBRA-17";

/// The session's script: the first turn writes the report's first version and names a code word; the second
/// turn's first request must carry the first turn's messages (the runner kept its conversation), and writes the
/// second version with the word; the third only answers (its result is unchanged: no snapshot).
fn session_model(runner: Runner) -> ModelServer {
    ModelServer::start_with(move |exchange| match exchange.turn {
        0 => tool_call(runner, exchange, Path::new("/unused"), &Action::Write("outbox:report.md", "version 1\n")),
        1 => Turn::text(&format!("The first version is written. The code word is {SESSION_WORD}.")),
        2 => {
            let body = exchange.body.to_string();
            if !body.contains(SESSION_WORD) || !body.contains("Write the first version") {
                return script_error(format!("the second turn does not carry the first: {body}"));
            }
            let text = Box::leak(format!("version 2 ({SESSION_WORD})\n").into_boxed_str());
            tool_call(runner, exchange, Path::new("/unused"), &Action::Write("outbox:report.md", text))
        }
        3 => Turn::text("The second version is written."),
        4 => Turn::text("Nothing to change."),
        // The resumed session: the conversation goes on, and the new outbox holds the second version.
        5 => {
            let body = exchange.body.to_string();
            if !body.contains(SESSION_WORD) || !body.contains("Go on from where you were") {
                return script_error(format!("the resumed session does not carry the conversation: {body}"));
            }
            tool_call(runner, exchange, Path::new("/unused"), &Action::Read("outbox:report.md"))
        }
        6 => {
            let body = exchange.body.to_string();
            if !body.contains("version 2 (") {
                return script_error(format!("the resumed outbox does not hold the second version: {body}"));
            }
            Turn::text("Resumed with the second version in the outbox.")
        }
        _ => Turn::text("Nothing to change."),
    })
    .unwrap()
}

/// The outcome `id`'s manifest, valid against the official schema.
fn stored_outcome(fixture: &Fixture, id: &str) -> Value {
    let path = fixture.workbench_home.join("outcomes").join(id).join("outcome.json");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let errors: Vec<String> =
        outcomes_validator("outcome.schema.json").iter_errors(&manifest).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    manifest
}

/// The bytes of an outcome's artifact at `path`, from the content store.
fn artifact_text(fixture: &Fixture, manifest: &Value, path: &str) -> String {
    let artifact = manifest["artifacts"].as_array().unwrap().iter().find(|a| a["path"] == path).unwrap();
    let digest = artifact["content"]["digest"].as_str().unwrap().trim_start_matches("sha256:");
    let blob = fixture.workbench_home.join("blobs/sha256").join(&digest[..2]).join(&digest[2..]);
    std::fs::read_to_string(blob).unwrap()
}

fn session_turns(bin: &Path, runner: Runner) {
    let model = session_model(runner);
    let fixture = fixture(runner, &model.url(), None);
    let url = model.url();
    let run = |args: &[&str]| run_json(&mut fixture.command(bin, runner, &url, args));
    // Nobody answers here: what a runner asks is refused at once, as before runs could ask (Claude Code asks to
    // read the outbox on a resumed turn).
    let (first, stderr, code) =
        run(&["run", "--session", "--no-input", "--json", "--task", "Write the first version.", "."]);
    let first: Vec<Value> = first.into_iter().map(|(event, _)| event).collect();
    let context = format!("{runner:?}\nevents: {first:#?}\nstderr: {stderr}\nrequests: {:#?}", model.turns());
    assert_eq!(code, 0, "{context}");
    let run_id = first[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        kinds(&first).into_iter().filter(|k| k.starts_with("turn.") || k.starts_with("outcome.")).collect::<Vec<_>>(),
        ["turn.started", "outcome.available", "turn.completed"],
        "{context}"
    );
    let snapshot = first.iter().find(|e| e["type"] == "outcome.available").unwrap();
    assert_eq!(snapshot["data"]["turn_index"], 1, "{context}");
    assert_eq!(snapshot["data"]["completeness"], "partial", "{context}");
    assert_eq!(snapshot["data"]["application_state"], "present", "{context}");
    let first_snapshot = snapshot["data"]["outcome_id"].as_str().unwrap().to_owned();

    let (second, stderr, code) = run(&["send", "--json", &run_id, "Now write the second version."]);
    let second: Vec<Value> = second.into_iter().map(|(event, _)| event).collect();
    let context = format!("{runner:?}\nevents: {second:#?}\nstderr: {stderr}\nrequests: {:#?}", model.turns());
    assert_eq!(code, 0, "{context}");
    assert_eq!(second.first().map(|e| &e["type"]), Some(&json!("turn.started")), "{context}");
    assert_eq!(second[0]["data"]["turn_index"], 2, "{context}");
    assert!(second[0]["data"]["input_id"].as_str().is_some_and(|id| id.starts_with("in_")), "{context}");
    let snapshot = second.iter().find(|e| e["type"] == "outcome.available").expect("a second snapshot");
    assert_eq!(snapshot["data"]["turn_index"], 2, "{context}");
    let second_snapshot = snapshot["data"]["outcome_id"].as_str().unwrap().to_owned();
    assert!(!second.iter().any(|e| e["type"].as_str().is_some_and(|k| k.starts_with("run."))), "{context}");

    // Nothing changes in the third turn: no snapshot.
    let (third, stderr, code) = run(&["send", "--json", &run_id, "Anything else?"]);
    let third: Vec<Value> = third.into_iter().map(|(event, _)| event).collect();
    let context = format!("{runner:?}\nevents: {third:#?}\nstderr: {stderr}");
    assert_eq!(code, 0, "{context}");
    assert!(!third.iter().any(|e| e["type"] == "outcome.available"), "{context}");
    assert_eq!(third.last().map(|e| &e["data"]["turn_index"]), Some(&json!(3)), "{context}");

    let status = fixture.command(bin, runner, &url, &["runs", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&status.stdout).unwrap();
    let record = listed.as_array().unwrap().iter().find(|r| r["run_id"] == run_id.as_str()).unwrap();
    assert_eq!((&record["state"], &record["turns"], &record["session"]), (&json!("idle"), &json!(3), &json!(true)));

    // `kill` ends the idle session: its final outcome is collected and the run completes.
    let killed = fixture.command(bin, runner, &url, &["kill", &run_id]).output().unwrap();
    assert!(killed.status.success(), "{}", String::from_utf8_lossy(&killed.stderr));
    let waited = fixture.command(bin, runner, &url, &["wait", &run_id]).output().unwrap();
    assert_eq!(waited.status.code(), Some(0));
    let log = std::fs::read_to_string(fixture.workbench_home.join("runs").join(&run_id).join("events.ndjson")).unwrap();
    let events: Vec<Value> = log.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    check_events(&events);
    assert_eq!(events.last().unwrap()["type"], "run.completed", "{events:#?}");
    let last = events.iter().rev().find(|e| e["type"] == "outcome.available").unwrap();
    assert!(last["data"].get("turn_index").is_none(), "the final outcome is no turn's: {last}");
    assert_eq!(last["data"]["completeness"], "complete");

    // Each snapshot keeps its own bytes; the final outcome has the last version.
    let one = stored_outcome(&fixture, &first_snapshot);
    assert_eq!((&one["turn_index"], &one["completeness"]), (&json!(1), &json!("partial")));
    assert_eq!(one["changesets"], json!([]));
    assert_eq!(artifact_text(&fixture, &one, "report.md"), "version 1\n");
    let two = stored_outcome(&fixture, &second_snapshot);
    assert_eq!(artifact_text(&fixture, &two, "report.md"), format!("version 2 ({SESSION_WORD})\n"));
    let receipt: Value = serde_json::from_str(
        &std::fs::read_to_string(
            fixture.workbench_home.join("outcomes").join(&first_snapshot).join("application.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(receipt["state"], "present");
    let last_id = last["data"]["outcome_id"].as_str().unwrap();
    let last = stored_outcome(&fixture, last_id);
    assert_eq!(artifact_text(&fixture, &last, "report.md"), format!("version 2 ({SESSION_WORD})\n"));
    assert_no_secret(&log, "the session's log");
    assert!(fixture.leftover_stages().is_empty(), "staged files are removed");

    // `resume` starts the ended session again: a new run that carries the conversation and the files on.
    let (resumed, stderr, code) = run(&["resume", "--json", &run_id, "Go on from where you were."]);
    let resumed: Vec<Value> = resumed.into_iter().map(|(event, _)| event).collect();
    let context = format!("{runner:?}\nevents: {resumed:#?}\nstderr: {stderr}\nrequests: {:#?}", model.turns());
    assert_eq!(code, 0, "{context}");
    let new_id = resumed[0]["run_id"].as_str().unwrap().to_owned();
    assert_ne!(new_id, run_id);
    let answer: String =
        resumed.iter().filter(|e| e["type"] == "output.text").filter_map(|e| e["data"]["text"].as_str()).collect();
    assert!(answer.contains("Resumed with the second version"), "{context}");
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture.workbench_home.join("runs").join(&new_id).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["resumed_from"], run_id.as_str());
    let killed = fixture.command(bin, runner, &url, &["kill", &new_id]).output().unwrap();
    assert!(killed.status.success(), "{}", String::from_utf8_lossy(&killed.stderr));
    assert_eq!(fixture.command(bin, runner, &url, &["wait", &new_id]).output().unwrap().status.code(), Some(0));
}

#[test]
fn a_session_carries_the_conversation_across_turns() {
    let Some(bin) = runners_bin() else { return };
    for runner in RUNNERS {
        session_turns(&bin, runner);
    }
}

/// The draft an authoring agent is working on: a misspelt runner and an undeclared `${API_TOKEN}` (safe fixes)
/// and an unknown field (only a person removes it).
const AUTHORED_DRAFT: &str = "spec: 1
version: 0.1.0
name: notes
description: Drafts release notes.
runner: opencod
model:
  id: openai/gpt-5.1
instructions: ./instructions.md
mcps:
  - name: api
    url: https://example.com/mcp
    headers:
      Authorization: Bearer ${API_TOKEN}
runtimes:
  local: {}
zzz_unknown: 1
";

/// The texts of the tool results in a chat completions request, in order.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
            other => other.to_string(),
        })
        .collect()
}

/// The authoring loop with a real runner: OpenCode, given `wb-lsp mcp` as a local MCP server by the package's
/// `runner_config` (the manifest's `mcps` are remote only), offers its tools to the scripted model as `wb_*`;
/// the model checks a draft package, gets the exact diagnostics, fixes it, and the file is fixed on disk (and
/// in the run's outcome).
#[test]
fn opencode_authors_a_package_with_the_wb_lsp_mcp_tools() {
    let Some(bin) = runners_bin() else { return };
    let started = Instant::now();
    let runner = Runner::OpenCode;
    let draft_dir = ".workbenches/notes";
    let model = ModelServer::start_with(move |exchange| {
        let call = |tool: &str| match find_tool(exchange, tool) {
            Ok(tool) => Turn::tools(None, vec![ToolCall { name: tool, arguments: json!({"path": draft_dir}) }]),
            Err(turn) => turn,
        };
        match exchange.turn {
            0 => call("wb_check"),
            1 => call("wb_fix"),
            _ => Turn::text("The draft is fixed but for zzz_unknown, which is yours to remove."),
        }
    })
    .unwrap();

    let (temp, root) = temp_dir();
    let workspace = root.join("repo");
    let draft = workspace.join(draft_dir).join("workbench.yml");
    write_file(&draft, AUTHORED_DRAFT);
    write_file(&workspace.join(draft_dir).join("instructions.md"), "# Notes\n");
    let package = workspace.join(".workbenches/author");
    let config = json!({
        "provider": {"scripted": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted model server",
            "options": {"baseURL": format!("{}/v1", model.url()), "apiKey": "{env:SCRIPTED_API_KEY}"},
            "models": {"model-1": {"name": "Scripted model 1", "tool_call": true}},
        }},
        "mcp": {"wb": {
            "type": "local",
            "command": [env!("CARGO_BIN_EXE_wb-lsp"), "mcp", "--root", workspace.display().to_string()],
            "enabled": true,
        }},
    });
    write_file(&package.join("opencode.json"), serde_json::to_string_pretty(&config).unwrap());
    write_file(&package.join("instructions.md"), "# Author\n\nCheck every package you write with wb_check.\n");
    write_file(
        &package.join("workbench.yml"),
        "spec: 1\nversion: 1.0.0\nname: author\ndescription: Writes Workbench packages and checks them as it goes.\n\
         runner: opencode\nmodel:\n  id: scripted-lab/model-1\n  routes:\n    - provider: scripted\n      model: model-1\n\
         runner_config: ./opencode.json\ninstructions: ./instructions.md\nenv:\n  SCRIPTED_API_KEY:\n    required: true\n\
         runtimes:\n  local: {}\n",
    );
    let (home, workbench_home, tmp) = (root.join("home"), root.join("workbench-home"), root.join("tmp"));
    for dir in [&home, &workbench_home, &tmp] {
        std::fs::create_dir_all(dir).unwrap();
    }
    offline_opencode(&home);
    let fixture = Fixture {
        _temp: temp,
        root,
        workspace: workspace.clone(),
        source: ".workbenches/author".to_owned(),
        home,
        workbench_home,
        tmp,
    };

    let task = "Check the draft package in .workbenches/notes and fix what can be fixed.";
    let mut command = fixture.command(&bin, runner, &model.url(), &["run", "--json", "--task", task, &fixture.source]);
    let (events, stderr, code) = run_json(&mut command);
    let events: Vec<Value> = events.into_iter().map(|(event, _)| event).collect();
    let turns = model.turns();
    let context = format!(
        "events: {events:#?}\nstderr: {stderr}\nturns: {:#?}",
        turns.iter().map(|t| &t.body).collect::<Vec<_>>()
    );
    assert_eq!(code, 0, "{context}");
    check_events(&events);
    assert_eq!(kinds(&events).last(), Some(&"run.completed"), "{context}");
    assert_no_secret(&(serde_json::to_string(&events).unwrap() + &stderr), "the run's events");

    // OpenCode offered every wb-lsp tool, named `<server>_<tool>`.
    assert_eq!(turns.len(), 3, "{context}");
    for tool in ["wb_check", "wb_fix", "wb_dry_run", "wb_smoke", "wb_outcome"] {
        assert!(turns[0].tools.iter().any(|t| t == tool), "{tool} not offered: {:?}", turns[0].tools);
    }

    // `wb_check`'s result reached the model: the exact diagnostics, as `check --format json` gives them.
    let checked = tool_results(&turns[1].body);
    let checked: Value = serde_json::from_str(checked.last().unwrap_or_else(|| panic!("no tool result: {context}")))
        .unwrap_or_else(|e| panic!("{e}: {context}"));
    assert_eq!(checked["root"], workspace.display().to_string(), "{checked:#}");
    let found: Vec<(String, String, String, Value)> = checked["packages"][0]["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("{checked:#}"))
        .iter()
        .map(|d| {
            let text = |key: &str| d[key].as_str().unwrap_or_default().to_owned();
            (text("code"), text("message"), text("path"), d["range"].clone())
        })
        .collect();
    let range = |line: u32, start: u32, end: u32| json!({"start": {"line": line, "column": start}, "end": {"line": line, "column": end}});
    let path = ".workbenches/notes/workbench.yml".to_owned();
    assert_eq!(
        found,
        [
            ("unsupported-runner".to_owned(), "Unsupported runner: opencod".to_owned(), path.clone(), range(5, 9, 16)),
            (
                "undeclared-env-reference".to_owned(),
                "MCP api references undeclared environment variable: API_TOKEN".to_owned(),
                path.clone(),
                range(13, 29, 41)
            ),
            (
                "unknown-field".to_owned(),
                "Unknown manifest field: zzz_unknown".to_owned(),
                path.clone(),
                range(16, 1, 12)
            ),
        ],
        "{checked:#}"
    );
    assert_eq!(checked["packages"][0]["diagnostics"][0]["fixes"][0]["title"], "Change to `opencode`");

    // `wb_fix`'s result reached the model: what it changed and what is left.
    let fixed = tool_results(&turns[2].body);
    let fixed: Value = serde_json::from_str(fixed.last().unwrap()).unwrap_or_else(|e| panic!("{e}: {context}"));
    assert_eq!(
        fixed["changed"],
        json!([{"path": path, "applied": ["Change to `opencode`", "Declare `API_TOKEN` in env"]}]),
        "{fixed:#}"
    );
    let remaining = &fixed["remaining"]["packages"][0]["diagnostics"];
    assert_eq!(remaining.as_array().map(Vec::len), Some(1), "{fixed:#}");
    assert_eq!(remaining[0]["code"], "unknown-field");

    // The file is fixed on disk, and the run's outcome records the change.
    let text = std::fs::read_to_string(&draft).unwrap();
    assert!(
        text.contains("runner: opencode\n") && text.ends_with("env:\n  API_TOKEN:\n    required: true\n"),
        "{text}"
    );
    assert!(text.contains("zzz_unknown: 1\n"), "{text}");
    let available = events.iter().find(|e| e["type"] == "outcome.available").unwrap_or_else(|| panic!("{context}"));
    let id = available["data"]["outcome_id"].as_str().unwrap();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture.workbench_home.join("outcomes").join(id).join("outcome.json")).unwrap(),
    )
    .unwrap();
    let changes: Vec<(&str, &str)> = manifest["changesets"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["entries"].as_array().into_iter().flatten())
        .map(|e| (e["path"].as_str().unwrap_or_default(), e["operation"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(changes, [(".workbenches/notes/workbench.yml", "modify")], "{manifest:#}");
    eprintln!("the authoring run took {:?}", started.elapsed());
}

/// One small trial with the real OpenCode on the scripted model (issue 42): the package's one task, whose fixture
/// is the release-notes repository, attempted once with the package; the scripted work (a changelog written,
/// notes.txt edited, obsolete.txt removed) is graded on a fresh copy by gates the agent never sees.
#[test]
fn opencode_passes_a_small_trial() {
    let Some(bin) = runners_bin() else { return };
    let runner = Runner::OpenCode;
    let mcp = McpServer::start().unwrap();
    let actions = work_script(runner);
    // The attempt's workspace is made by the trial: the model reads it from the runtime block of its prompt.
    let model = ModelServer::start_with(move |exchange| {
        let system = system_of(exchange);
        let workspace = runtime_path(&system, "Primary workspace (your working directory): ").map(PathBuf::from);
        match (actions.get(exchange.turn), workspace) {
            (Some(action), Some(workspace)) => tool_call(runner, exchange, &workspace, action),
            (Some(_), None) => script_error(format!("no primary workspace in the system prompt:\n{system}")),
            (None, _) => Turn::text("Nothing left to do."),
        }
    })
    .unwrap();
    let fixture = fixture(runner, &model.url(), Some(&mcp.url()));
    let task = fixture.workspace.join(".workbenches/release-notes/trials/notes");
    write_file(&task.join("fixture/notes.txt"), "Release 1.4\nstatus: draft\n");
    write_file(&task.join("fixture/obsolete.txt"), "remove me\n");
    write_file(&task.join("fixture/README.md"), "# Demo\n");
    write_file(&task.join("prompt.md"), "Write the release notes for 1.4.\n");
    write_file(
        &task.join("task.json"),
        r#"{"version": 1, "id": "notes", "title": "Release notes", "fixture": {"kind": "dir", "path": "fixture"},
 "timeoutMinutes": 5, "gates": [
  {"id": "changelog", "run": "grep -q 'Scripted release notes' CHANGELOG.md"},
  {"id": "final", "run": "grep -q 'status: final' notes.txt"},
  {"id": "gone", "run": "test ! -e obsolete.txt"}]}
"#,
    );
    let output = fixture
        .command(&bin, runner, &model.url(), &["trial", ".", "--arms", "workbench", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_no_secret(&stdout, "the trial's output");
    assert_no_secret(&stderr, "the trial's messages");
    assert!(output.status.success(), "the trial failed:\n{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let attempt = &report["report"]["attempts"][0];
    assert_eq!(attempt["verdict"], "works", "{attempt:#}");
    let gates: Vec<(&str, i64)> = attempt["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["id"].as_str().unwrap(), g["exit_code"].as_i64().unwrap()))
        .collect();
    assert_eq!(gates, [("changelog", 0), ("final", 0), ("gone", 0)]);
    assert!(attempt["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "the scripted prices give a cost: {attempt}");
    // The package's own repository was not touched by the attempt.
    assert_eq!(std::fs::read_to_string(fixture.workspace.join("notes.txt")).unwrap(), "Release 1.4\nstatus: draft\n");
}

/// `wb-lsp wait` on `run_id` until it exits 2 (the run needs input): the one request it lists, `(kind, id,
/// line)`.
fn waiting_request(fixture: &Fixture, bin: &Path, runner: Runner, run_id: &str) -> (String, String, String) {
    let output = fixture.command(bin, runner, "", &["wait", run_id, "--timeout", "90s"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(2), "wait exits 2 when the run needs input: {output:?}");
    let line = stdout.lines().next().unwrap_or_default().to_owned();
    let (kind, rest) = line.split_once(" · ").unwrap_or_else(|| panic!("kind · id: details, not {line:?}"));
    let id = rest.split(':').next().unwrap_or_default().to_owned();
    (kind.to_owned(), id, line)
}

/// Real Claude Code asks for what its staged rules do not allow (Bash here) and asks a question: `wait` exits 2
/// and lists each request, `answer … allow` lets the command run, `deny` keeps the file, the question's answer
/// is what the model reads next, and every event validates against the official schema.
#[test]
fn claude_code_asks_and_the_person_answers() {
    asks_and_the_person_answers(Runner::ClaudeCode);
}

/// Real OpenCode, through its server, the same way: its packaged rules make Bash ask, its `question` tool asks.
#[test]
fn opencode_asks_and_the_person_answers() {
    asks_and_the_person_answers(Runner::OpenCode);
}

/// The same with OpenCode's server in a Docker container, published on a port of this host's loopback.
#[test]
fn opencode_in_docker_asks_and_the_person_answers() {
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return;
    }
    asks_and_the_person_answers_in(Runner::OpenCode, Place::Docker);
}

fn asks_and_the_person_answers(runner: Runner) {
    asks_and_the_person_answers_in(runner, Place::Local);
}

fn asks_and_the_person_answers_in(runner: Runner, place: Place) {
    let Some(bin) = runners_bin() else { return };
    let docker = place == Place::Docker;
    let holder: std::sync::Arc<std::sync::Mutex<PathBuf>> = std::sync::Arc::default();
    let workspace_of = holder.clone();
    let actions = [
        Action::Bash("rm obsolete.txt".to_owned()),
        Action::Bash("rm README.md".to_owned()),
        Action::Ask("Which colour should the notes use?", &["Red", "Blue"]),
        Action::Answer("Done as you said."),
    ];
    let ip = if docker { docker_gateway() } else { std::net::IpAddr::from([127, 0, 0, 1]) };
    let model = ModelServer::start_on(ip, move |exchange| {
        let workspace = workspace_of.lock().unwrap().clone();
        match actions.get(exchange.turn) {
            Some(action) => tool_call(runner, exchange, &workspace, action),
            None => Turn::text("Nothing left to do."),
        }
    })
    .unwrap();
    let fixture = fixture_in(runner, &model.url(), None, docker.then_some(bin.as_path()), place);
    *holder.lock().unwrap() = if docker { PathBuf::from("/workspace") } else { fixture.workspace.clone() };
    let package = match docker {
        true => PathBuf::from(&fixture.source),
        false => fixture.workspace.join(".workbenches/release-notes"),
    };
    if runner == Runner::ClaudeCode {
        // Nothing allowed beyond what the engine stages (reads and edits of the workspaces): Bash is asked.
        write_file(&package.join("claude.json"), r#"{"permissions": {"allow": []}, "max_turns": 20}"#);
    } else {
        // OpenCode allows Bash by default: the package makes it ask.
        let path = package.join("opencode.json");
        let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        config["permission"] = json!({"bash": "ask"});
        write_file(&path, serde_json::to_string_pretty(&config).unwrap());
    }
    let url = model.url();
    let task = "Tidy the repository.";
    let output =
        fixture.command(&bin, runner, &url, &["run", "--detach", "--task", task, &fixture.source]).output().unwrap();
    assert!(output.status.success(), "{runner:?}: run --detach: {output:?}");
    let run_id = String::from_utf8_lossy(&output.stdout).trim().to_owned();

    for (expected_kind, what, answer) in [
        ("permission", "rm obsolete.txt", "allow"),
        ("permission", "rm README.md", "deny"),
        ("question", "Which colour", "Blue"),
    ] {
        let (kind, id, line) = waiting_request(&fixture, &bin, runner, &run_id);
        assert_eq!(kind, expected_kind, "{line}");
        assert!(line.contains(what), "{line}");
        let answered = fixture.command(&bin, runner, &url, &["answer", &run_id, &id, answer]).output().unwrap();
        let said = String::from_utf8_lossy(&answered.stdout).into_owned();
        assert!(answered.status.success() && said.contains("answered"), "answer {answer}: {answered:?}");
    }
    let waited = fixture.command(&bin, runner, &url, &["wait", &run_id, "--timeout", "90s"]).output().unwrap();
    assert_eq!(waited.status.code(), Some(0), "the run completes: {waited:?}");

    if std::env::var_os("WB_DEBUG_MODEL").is_some() {
        for turn in model.turns() {
            eprintln!("{}", turn.body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default());
        }
    }
    assert!(!fixture.workspace.join("obsolete.txt").exists(), "the allowed command ran");
    assert!(fixture.workspace.join("README.md").exists(), "the denied command did not");
    let events: Vec<Value> =
        std::fs::read_to_string(fixture.workbench_home.join("runs").join(&run_id).join("events.ndjson"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    check_events(&events);
    let kinds = kinds(&events);
    for kind in ["input.requested", "input.accepted", "question.requested", "question.answered", "run.completed"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let answers: Vec<&str> =
        events.iter().filter(|e| e["type"] == "input.accepted").filter_map(|e| e["data"]["answer"].as_str()).collect();
    assert_eq!(answers, ["allow", "deny"]);
    // What the model read after the question: the person's choice.
    let after_question = model.turns().into_iter().nth(3).expect("the turn after the question");
    assert!(after_question.body.to_string().contains("Blue"), "the answer reached the model");
}

/// Real OpenCode asks for Bash while nobody can answer: with `--no-input` the request is refused at once, and with
/// `--input-timeout 2s` once nobody answered; each refusal says why in its event (valid against the official
/// schema), OpenCode hears it as the person's refusal and goes on, and the command never ran.
#[test]
fn opencode_requests_are_refused_with_the_reason_when_nobody_can_answer() {
    let Some(bin) = runners_bin() else { return };
    for (flags, reason) in [
        (vec!["--no-input"], "--no-input: this run takes no input"),
        (vec!["--input-timeout", "2s"], "nobody answered within 2s (--input-timeout)"),
    ] {
        let holder: std::sync::Arc<std::sync::Mutex<PathBuf>> = std::sync::Arc::default();
        let workspace_of = holder.clone();
        let actions = [Action::Bash("rm obsolete.txt".to_owned()), Action::Answer("Left it as it was.")];
        let model = ModelServer::start_with(move |exchange| {
            let workspace = workspace_of.lock().unwrap().clone();
            match actions.get(exchange.turn) {
                Some(action) => tool_call(Runner::OpenCode, exchange, &workspace, action),
                None => Turn::text("Nothing left to do."),
            }
        })
        .unwrap();
        let fixture = fixture(Runner::OpenCode, &model.url(), None);
        *holder.lock().unwrap() = fixture.workspace.clone();
        let path = fixture.workspace.join(".workbenches/release-notes/opencode.json");
        let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        config["permission"] = json!({"bash": "ask"});
        write_file(&path, serde_json::to_string_pretty(&config).unwrap());
        let mut args = vec!["run", "--json", "--task", "Tidy the repository."];
        args.extend(flags.iter().copied());
        args.push(".");
        let (events, stderr, code) = run_json(&mut fixture.command(&bin, Runner::OpenCode, &model.url(), &args));
        let events: Vec<Value> = events.into_iter().map(|(event, _)| event).collect();
        let context = format!("{flags:?}\nevents: {events:#?}\nstderr: {stderr}");
        assert_eq!(code, 0, "{context}");
        check_events(&events);
        let rejected = events.iter().find(|e| e["type"] == "input.rejected").unwrap_or_else(|| panic!("{context}"));
        assert_eq!(rejected["data"]["reason"], reason, "{context}");
        assert!(fixture.workspace.join("obsolete.txt").exists(), "{flags:?}: the refused command did not run");
        // OpenCode went on after the refusal: the model was asked again, and saw why.
        let after = model.turns().into_iter().nth(1).unwrap_or_else(|| panic!("no turn after the refusal: {context}"));
        assert!(after.body.to_string().contains("refused"), "{flags:?}: the model was told");
    }
}

/// Real Claude Code is steered during a turn: `send --steer` while its Bash command runs returns once Claude Code
/// took the message (`input.delivered`), and the model's next request carries it, so what the runner does next
/// changes (the scripted model answers differently when it sees the steer).
#[test]
fn claude_code_is_steered_during_a_turn() {
    steered_during_a_turn(Runner::ClaudeCode);
}

/// Real Pi in RPC mode is steered the same way: its `steer` command, taken at its next turn.
#[test]
fn pi_is_steered_during_a_turn() {
    steered_during_a_turn(Runner::Pi);
}

/// Real OpenCode's server is steered the same way: a user message posted while its turn runs, taken when an
/// assistant message is parented on it.
#[test]
fn opencode_is_steered_during_a_turn() {
    steered_during_a_turn(Runner::OpenCode);
}

fn steered_during_a_turn(runner: Runner) {
    let Some(bin) = runners_bin() else { return };
    const STEER: &str = "STEER-7c1: also mention the moon";
    let holder: std::sync::Arc<std::sync::Mutex<PathBuf>> = std::sync::Arc::default();
    let workspace_of = holder.clone();
    let model = ModelServer::start_with(move |exchange| {
        let workspace = workspace_of.lock().unwrap().clone();
        match exchange.turn {
            0 => tool_call(runner, exchange, &workspace, &Action::Bash("sleep 4 && echo slept".to_owned())),
            _ if exchange.body.to_string().contains("STEER-7c1") => Turn::text("Done, and the moon is mentioned."),
            _ => Turn::text("Done; no steer was seen."),
        }
    })
    .unwrap();
    let fixture = fixture(runner, &model.url(), None);
    *holder.lock().unwrap() = fixture.workspace.clone();
    let url = model.url();
    let output = fixture
        .command(&bin, runner, &url, &["run", "--session", "--detach", "--task", "Tidy up.", "."])
        .output()
        .unwrap();
    assert!(output.status.success(), "{runner:?}: run --session --detach: {output:?}");
    let run_id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    // Steered while the Bash command runs: the model has asked for it, and its result is not back yet.
    let deadline = Instant::now() + Duration::from_secs(60);
    while model.turns().is_empty() {
        assert!(Instant::now() < deadline, "{runner:?}: the model was never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let steered = fixture.command(&bin, runner, &url, &["send", &run_id, "--steer", STEER]).output().unwrap();
    let said = String::from_utf8_lossy(&steered.stdout).into_owned();
    assert!(steered.status.success() && said.contains("delivered"), "{runner:?}: send --steer: {steered:?}");
    let waited = fixture.command(&bin, runner, &url, &["wait", &run_id, "--timeout", "90s"]).output().unwrap();
    assert_eq!(waited.status.code(), Some(0), "{runner:?}: the turn ends and the session waits: {waited:?}");
    let events: Vec<Value> =
        std::fs::read_to_string(fixture.workbench_home.join("runs").join(&run_id).join("events.ndjson"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    let texts: String =
        events.iter().filter(|e| e["type"] == "output.text").filter_map(|e| e["data"]["text"].as_str()).collect();
    assert!(texts.contains("the moon is mentioned"), "{runner:?}: what the runner did next: {texts:?}");
    let kinds = kinds(&events);
    let accepted = kinds.iter().position(|k| *k == "input.accepted").expect("input.accepted");
    let delivered = kinds.iter().position(|k| *k == "input.delivered").expect("input.delivered");
    assert!(accepted < delivered, "{kinds:?}");
    let _ = fixture.command(&bin, runner, &url, &["kill", &run_id]).output();
}
