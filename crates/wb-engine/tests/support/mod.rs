//! Shared by the engine's tests and the CLI's execution tests (`crates/wb-lsp/tests/execute.rs` includes this
//! file with `#[path]`): a scratch world with a repository, a primary workspace, a home and the fake runners,
//! the official event schema, and the fixture locations.
//!
//! The fake runners (`tests/fixtures/runners/`, see `fake_runner.py` there) are Python 3 scripts. They are
//! copied into the world's `bin/` with their `#!` line pointing at the Python found here, so they start fast
//! and do not depend on a version manager's shims.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The task every run gets unless a test says otherwise.
pub const TASK: &str = "Add the notes file and retitle the readme";

/// The final answer of every `success.jsonl` stream.
pub const FINAL: &str = "Done: added notes/hello.txt, retitled README.md and removed obsolete.txt.";

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../wb-engine/tests/fixtures")
}

/// A recorded native stream: `streams/<runner>/<name>.jsonl`.
pub fn stream(runner: &str, name: &str) -> PathBuf {
    fixtures().join("streams").join(runner).join(format!("{name}.jsonl"))
}

/// The official event schema of the standard (beside the repository, like the manifest schemas the checker's
/// interoperability tests use).
pub fn event_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/schemas/events/v0/workbench-event.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("the official event schema {} is unreadable: {error}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the event schema is JSON");
    jsonschema::draft202012::options().should_validate_formats(true).build(&schema).expect("the schema compiles")
}

/// Checks a whole run's events: each validates against the official schema, one run id of the right shape,
/// the runner's name, sequence 1..=n, exactly one terminal event and it is the last one.
pub fn check_events(events: &[Value], runner: &str) {
    let validator = event_validator();
    assert!(!events.is_empty(), "no events");
    let run_id = events[0]["run_id"].as_str().expect("run_id").to_owned();
    assert!(
        run_id.starts_with("wb_")
            && run_id.len() == 27
            && run_id[3..].chars().all(|c| matches!(c, 'a'..='f' | '0'..='9')),
        "run id {run_id}"
    );
    for (index, event) in events.iter().enumerate() {
        // `outcome.available` and `outcome.failed` are newer-engine events (engine facts (g)) the official
        // schema's enum does not list yet: their envelope is validated as a data-free type, their data here.
        let mut checked = event.clone();
        if matches!(event["type"].as_str(), Some("outcome.available" | "outcome.failed")) {
            check_outcome_event(event);
            checked["type"] = Value::from("run.ready");
        }
        let errors: Vec<String> =
            validator.iter_errors(&checked).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "event {event} does not validate: {errors:?}");
        assert_eq!(event["sequence"], Value::from(index as u64 + 1), "sequence of {event}");
        assert_eq!(event["run_id"], Value::from(run_id.as_str()));
        assert_eq!(event["runner"], Value::from(runner));
        assert_eq!(event["protocol"], Value::from(0));
    }
    let terminal: Vec<&Value> = events
        .iter()
        .filter(|e| matches!(e["type"].as_str(), Some("run.completed" | "run.failed" | "run.cancelled")))
        .collect();
    assert_eq!(terminal.len(), 1, "exactly one terminal event: {events:#?}");
    assert!(std::ptr::eq(terminal[0], events.last().expect("events")), "the terminal event is the last one");
}

/// The data of an outcome event (engine facts (f)): `outcome.available` {outcome_id, completeness,
/// application_state, changesets, artifacts, links, warnings (counts), summary?}; `outcome.failed` {message}.
pub fn check_outcome_event(event: &Value) {
    let data = event["data"].as_object().unwrap_or_else(|| panic!("outcome event data: {event}"));
    if event["type"] == "outcome.failed" {
        assert!(data.len() == 1 && data["message"].as_str().is_some_and(|m| !m.is_empty()), "{event}");
        return;
    }
    let id = data["outcome_id"].as_str().unwrap_or_default();
    assert!(
        id.starts_with("wbo_")
            && (20..=64).contains(&(id.len() - 4))
            && id[4..].chars().all(|c| matches!(c, 'a'..='z' | '0'..='9')),
        "outcome id {id}"
    );
    assert!(matches!(data["completeness"].as_str(), Some("complete" | "partial")), "{event}");
    assert!(matches!(data["application_state"].as_str(), Some("pending" | "present" | "applied")), "{event}");
    for count in ["changesets", "artifacts", "links", "warnings"] {
        assert!(data[count].is_u64(), "{count} is a count: {event}");
    }
    let known = [
        "outcome_id",
        "completeness",
        "application_state",
        "changesets",
        "artifacts",
        "links",
        "warnings",
        "summary",
        "turn_index",
    ];
    assert!(data.keys().all(|k| known.contains(&k.as_str())), "unexpected keys: {event}");
    if let Some(summary) = data.get("summary") {
        assert!(summary.as_str().is_some_and(|s| !s.is_empty()), "{event}");
    }
}

pub fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["type"].as_str().unwrap_or_default().to_owned()).collect()
}

/// The canonical event types each runner's `success.jsonl` becomes, in order.
pub fn success_types(runner: &str) -> Vec<&'static str> {
    let tools = [
        "tool.started",
        "tool.completed",
        "file.changed",
        "tool.started",
        "tool.completed",
        "file.changed",
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
    ];
    let mut out = vec!["run.started", "run.ready"];
    match runner {
        "opencode" => {
            out.extend(["runner.event", "output.text"]);
            out.extend(tools);
            out.extend([
                "usage.updated",
                "runner.event",
                "runner.event",
                "runner.event",
                "output.text",
                "usage.updated",
            ]);
        }
        "claude-code" => {
            out.extend(["runner.event", "runner.event", "output.text"]);
            out.extend(tools);
            out.extend(["runner.event", "runner.event", "output.text", "usage.updated"]);
        }
        "pi" => {
            out.extend(["runner.event"; 6]);
            out.extend(["runner.event", "output.text", "output.text", "usage.updated"]);
            out.extend(tools);
            out.extend(["runner.event", "runner.event", "runner.event", "runner.event"]);
            out.extend(["output.text", "output.text", "usage.updated", "runner.event", "runner.event"]);
        }
        other => panic!("no runner {other}"),
    }
    out.extend(["outcome.available", "run.completed"]);
    out
}

/// The native types the untranslated events of each runner's `success.jsonl` carry, in order.
pub fn success_native_types(runner: &str) -> Vec<&'static str> {
    match runner {
        "opencode" => vec!["step_start", "session.compacted", "stdout", "step_start"],
        "claude-code" => vec!["system.init", "assistant.thinking", "stream_event", "stdout"],
        "pi" => vec![
            "session",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update.text_start",
            "turn_end",
            "stdout",
            "turn_start",
            "message_start",
            "turn_end",
            "agent_end",
        ],
        other => panic!("no runner {other}"),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Packages

/// OpenCode: a skill, a tool, an MCP whose headers reference two optional variables, a required variable and an
/// optional read-only workspace.
pub const OPENCODE: &str = r"spec: 1
version: 1.0.0
name: oc-demo
description: An OpenCode package.
runner: opencode
model:
  id: openai/gpt-5.1
  routes:
    - provider: openai
    - provider: openrouter
instructions: ./instructions.md
skills:
  - ./skills/sql-migrations
tools:
  - sh
mcps:
  - name: database
    url: https://db.example.com/mcp
    headers:
      Authorization: Bearer ${DATABASE_API_TOKEN}
      X-Team: ${TEAM_ID}-fixed
env:
  DATABASE_URL:
    required: true
  DATABASE_API_TOKEN:
    required: false
  TEAM_ID:
    required: false
workspaces:
  infra:
    required: false
    access: read-only
runtimes:
  local: {}
";

/// Claude Code: a JSON runner_config, a skill, an MCP it can use and one it must disable (an Anthropic
/// reference), a required read-write workspace and an optional read-only one.
pub const CLAUDE: &str = r"spec: 1
version: 2.0.0
name: cc-demo
description: A Claude Code package.
runner: claude-code
model:
  id: anthropic/claude-sonnet-4.5
runner_config: ./claude.json
instructions: ./instructions.md
skills:
  - ./skills/code-review
mcps:
  - name: tracker
    url: https://tracker.example.com/mcp
    headers:
      Authorization: Bearer ${TRACKER_TOKEN}
  - name: console
    url: https://console.example.com/mcp
    headers:
      X-Key: ${ANTHROPIC_ADMIN_KEY}
env:
  TRACKER_TOKEN:
    required: false
  ANTHROPIC_ADMIN_KEY:
    required: false
workspaces:
  docs:
    required: true
    access: read-write
  infra:
    required: false
    access: read-only
runtimes:
  local: {}
";

pub const CLAUDE_CONFIG: &str = r#"{
  "permissions": {"allow": ["Bash(git diff:*)"], "deny": ["WebFetch"]},
  "max_turns": 7
}
"#;

/// Pi: a runner_config directory shipping its own APPEND_SYSTEM.md, and a skill.
pub const PI: &str = r"spec: 1
version: 0.3.0
name: pi-demo
description: A Pi package.
runner: pi
model:
  id: google/gemini-2.5-flash
  routes:
    - provider: google
runner_config: ./pi
instructions: ./instructions.md
skills:
  - ./skills/api-docs
runtimes:
  local: {}
";

/// The smallest package of a runner, with extra top-level YAML appended.
pub fn minimal(name: &str, runner: &str, model: &str, extra: &str) -> String {
    format!(
        "spec: 1\nversion: 1.0.0\nname: {name}\ndescription: Minimal.\nrunner: {runner}\nmodel:\n  id: {model}\ninstructions: ./instructions.md\n{extra}{}",
        if extra.contains("runtimes:") { "" } else { "runtimes:\n  local: {}\n" }
    )
}

pub fn opencode_world() -> World {
    let world = World::new();
    world.package("oc-demo", OPENCODE);
    world.skill("oc-demo", "sql-migrations");
    world
}

pub fn claude_world() -> World {
    let world = World::new();
    world.package("cc-demo", CLAUDE);
    world.skill("cc-demo", "code-review");
    world.file(".workbenches/cc-demo/claude.json", CLAUDE_CONFIG);
    world.dir("docs");
    world
}

pub fn pi_world() -> World {
    let world = World::new();
    world.package("pi-demo", PI);
    world.skill("pi-demo", "api-docs");
    world.file(".workbenches/pi-demo/pi/APPEND_SYSTEM.md", "Shipped Pi system text.\n");
    world.file(".workbenches/pi-demo/pi/settings.json", "{\"defaultThinkingLevel\": \"low\"}\n");
    world
}

/// The Python 3 interpreter the fake runners run with.
pub fn python() -> PathBuf {
    let system = PathBuf::from("/usr/bin/python3");
    if system.is_file() {
        return system;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|candidate| candidate.is_file())
        .expect("the fake runners need python3")
}

/// Whether this process can write into a directory whose permissions forbid it (root can).
pub fn permissions_are_bypassed(scratch: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = scratch.join("permission-probe");
    std::fs::create_dir_all(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let bypassed = std::fs::write(probe.join("x"), b"").is_ok();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = std::fs::remove_dir_all(&probe);
    bypassed
}

/// A scratch directory holding a repository (`repo/.workbenches/...`), the primary workspace (`work/`), a home
/// (`home/`, with `home/.workbench` as WORKBENCH_HOME), the fake runners (`bin/`), the fake runners' log
/// (`log/`) and a private temporary directory (`tmp/`, where the CLI stages).
pub struct World {
    _temp: tempfile::TempDir,
    pub root: PathBuf,
    pub repo: PathBuf,
    pub work: PathBuf,
    pub home: PathBuf,
    pub bin: PathBuf,
    pub log: PathBuf,
    pub tmp: PathBuf,
}

impl World {
    pub fn new() -> World {
        let temp = tempfile::Builder::new().prefix("wb-engine-test-").tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        let world = World {
            repo: root.join("repo"),
            work: root.join("work"),
            home: root.join("home"),
            bin: root.join("bin"),
            log: root.join("log"),
            tmp: root.join("tmp"),
            root,
            _temp: temp,
        };
        for dir in [&world.repo, &world.work, &world.home, &world.bin, &world.tmp] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::create_dir_all(world.repo.join(".workbenches")).unwrap();
        world.install_runners(&["opencode", "claude", "pi"]);
        world.reset_work();
        world
    }

    /// Puts the primary workspace back to what the `success.jsonl` streams expect.
    pub fn reset_work(&self) {
        let _ = std::fs::remove_dir_all(self.work.join("notes"));
        std::fs::write(self.work.join("README.md"), "# Old title\n\nThe ledger service.\n").unwrap();
        std::fs::write(self.work.join("obsolete.txt"), "remove me\n").unwrap();
    }

    /// Copies fake runners into `bin/` (executable, with the `#!` line pointing at Python).
    pub fn install_runners(&self, names: &[&str]) {
        use std::os::unix::fs::PermissionsExt;
        let source = fixtures().join("runners");
        let shebang = format!("#!{}", python().display());
        let common = std::fs::read_to_string(source.join("fake_runner.py")).unwrap();
        std::fs::write(self.bin.join("fake_runner.py"), common).unwrap();
        for name in names {
            let text = std::fs::read_to_string(source.join(name)).unwrap();
            let (_, rest) = text.split_once('\n').unwrap();
            let target = self.bin.join(name);
            std::fs::write(&target, format!("{shebang}\n{rest}")).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// Writes `repo/.workbenches/<name>/workbench.yml` and its `instructions.md`.
    pub fn package(&self, name: &str, manifest: &str) -> PathBuf {
        let dir = self.repo.join(".workbenches").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("workbench.yml"), manifest).unwrap();
        std::fs::write(dir.join("instructions.md"), format!("Package instructions of {name}: keep changes small.\n"))
            .unwrap();
        dir
    }

    /// Writes a skill `repo/.workbenches/<package>/skills/<skill>/SKILL.md`.
    pub fn skill(&self, package: &str, skill: &str) {
        let dir = self.repo.join(".workbenches").join(package).join("skills").join(skill);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {skill}\ndescription: The {skill} skill.\n---\n\n# {skill}\n\nSteps.\n"),
        )
        .unwrap();
        std::fs::write(dir.join("reference.md"), "More detail.\n").unwrap();
    }

    /// Writes a file below the repository.
    pub fn file(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.repo.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A directory below the scratch root.
    pub fn dir(&self, relative: &str) -> PathBuf {
        let path = self.root.join(relative);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// `PATH` with the fake runners first.
    pub fn path_variable(&self) -> String {
        let system = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
        format!("{}:{system}", self.bin.display())
    }

    /// The environment a run inherits: PATH, HOME and FAKE_RUNNER_LOG.
    pub fn inherited(&self) -> BTreeMap<String, String> {
        [
            ("PATH".to_owned(), self.path_variable()),
            ("HOME".to_owned(), self.home.display().to_string()),
            ("FAKE_RUNNER_LOG".to_owned(), self.log.display().to_string()),
        ]
        .into_iter()
        .collect()
    }

    /// What the fake runner recorded about its last start.
    pub fn invocation(&self) -> Value {
        let text = std::fs::read_to_string(self.log.join("invocation.json")).expect("the fake runner ran");
        serde_json::from_str(&text).unwrap()
    }

    /// The complete environment the fake runner received (values included).
    pub fn runner_environment(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(self.log.join("environment.json")).expect("the fake runner ran");
        serde_json::from_str(&text).unwrap()
    }

    /// A file of the staged configuration the fake runner copied (`log/staged/<VARIABLE>/<relative>`).
    pub fn staged(&self, variable: &str, relative: &str) -> String {
        let path = self.log.join("staged").join(variable).join(relative);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Checks the workspace edits every `success.jsonl` makes.
    pub fn assert_edited(&self) {
        assert_eq!(std::fs::read_to_string(self.work.join("notes/hello.txt")).unwrap(), "hello from the fake runner\n");
        assert_eq!(
            std::fs::read_to_string(self.work.join("README.md")).unwrap(),
            "# New title\n\nThe ledger service.\n"
        );
        assert!(!self.work.join("obsolete.txt").exists(), "obsolete.txt was removed");
    }

    /// Staging directories left in `tmp/` (the CLI stages there).
    pub fn leftover_stages(&self) -> Vec<String> {
        std::fs::read_dir(&self.tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("wb-lsp-stage-"))
            .collect()
    }
}

/// Waits (up to 20 s) for a file to appear.
pub fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !path.exists() {
        assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether a process is gone (not running and not a zombie).
pub fn process_is_gone(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses; Z is a zombie, X dead.
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
        }
        Err(_) if Path::new("/proc/self").exists() => true,
        Err(_) => {
            let status = std::process::Command::new("kill").args(["-0", &pid.to_string()]).status();
            !status.is_ok_and(|s| s.success())
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Outcomes

/// An official outcomes schema (`outcome.schema.json`, `application.schema.json`, `outbox.schema.json`).
pub fn outcomes_validator(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/schemas/outcomes/v1").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("the outcomes schema {} is unreadable: {error}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the outcomes schema is JSON");
    jsonschema::draft202012::options().should_validate_formats(true).build(&schema).expect("the schema compiles")
}

/// Asserts that a JSON document validates against an official outcomes schema.
pub fn assert_outcomes_schema(name: &str, document: &Value) {
    let validator = outcomes_validator(name);
    let errors: Vec<String> =
        validator.iter_errors(document).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{name}: {document:#} does not validate: {errors:?}");
}

/// The declaration the outcome streams write to the outbox (`declared` names the artifact it declares).
pub fn declaration(declared: &str) -> Value {
    serde_json::json!({
        "version": 1,
        "summary": "Prepared a findings report",
        "artifacts": [{"path": declared, "name": "Findings.html", "description": "The collected findings", "media_type": "text/html"}],
        "links": [{"label": "Implementation PR", "uri": "https://github.com/example/project/pull/42", "kind": "pull_request"}]
    })
}

/// The OpenCode `success.jsonl` stream plus two outbox writes before its last step: `reports/findings.html` and an
/// `outcome.json` declaring `declared`. Written to `<world.root>/<name>.jsonl`.
pub fn outcome_stream(world: &World, name: &str, declared: &str) -> PathBuf {
    let text = std::fs::read_to_string(stream("opencode", "success")).expect("the success stream");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let last = lines.pop().expect("a last line");
    let write = |id: &str, path: &str, content: &str| {
        serde_json::json!({"type": "tool_use", "timestamp": 1764480000095u64, "sessionID": "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c",
            "part": {"sessionID": "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c", "messageID": "msg_a1", "id": format!("prt_{id}"), "type": "tool",
                "callID": id, "tool": "write", "state": {"status": "completed",
                    "input": {"filePath": format!("{{{{env:WORKBENCH_OUTPUT_DIR}}}}/{path}"), "content": content},
                    "time": {"start": 1764480000091u64, "end": 1764480000094u64}, "output": "", "title": path, "metadata": {}}}})
        .to_string()
    };
    lines.push(write("call_out_1", "reports/findings.html", "<h1>Findings</h1>\n"));
    lines.push(write("call_out_2", "outcome.json", &declaration(declared).to_string()));
    lines.push(last);
    let path = world.root.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").expect("the stream is written");
    path
}

// ---------------------------------------------------------------------------------------------------------------
// Fake runners whose shell tool really runs (`fixtures/runners/fake_shell.py`)

impl World {
    /// Replaces the fake runners in `bin/` with `shell_runner` (installed as `opencode`, `claude` and `pi`): the
    /// same replay and recording, but a shell tool call runs its command with `/bin/sh` in the working directory.
    pub fn install_shell_runners(&self) {
        use std::os::unix::fs::PermissionsExt;
        let source = fixtures().join("runners");
        std::fs::copy(source.join("fake_shell.py"), self.bin.join("fake_shell.py")).unwrap();
        let text = std::fs::read_to_string(source.join("shell_runner")).unwrap();
        let (_, rest) = text.split_once('\n').unwrap();
        for name in ["opencode", "claude", "pi"] {
            let target = self.bin.join(name);
            std::fs::write(&target, format!("#!{}\n{rest}", python().display())).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

/// A tool call for [`native_tool_call`]: the runner-independent `write` (path, content) and `shell` (command).
#[derive(Clone, Debug)]
pub enum ToolCall {
    Write { path: String, content: String },
    Shell { command: String },
}

/// The native stream lines of one completed tool call, in a runner's own shape (`opencode`, `claude-code`,
/// `pi`): OpenCode a `tool_use` part, Claude Code an `assistant` `tool_use` block and its `user` tool result, Pi
/// `tool_execution_start` and `tool_execution_end`. `id` names the call.
pub fn native_tool_call(runner: &str, id: &str, call: &ToolCall) -> Vec<String> {
    use serde_json::json;
    // (the OpenCode and Pi tool name, the Claude Code tool name, title, OpenCode input, Claude Code input, Pi args)
    let (tool, claude_tool, title, opencode_input, claude_input, pi_args) = match call {
        ToolCall::Write { path, content } => (
            "write",
            "Write",
            path.clone(),
            json!({"filePath": path, "content": content}),
            json!({"file_path": path, "content": content}),
            json!({"path": path, "content": content}),
        ),
        ToolCall::Shell { command } => (
            "bash",
            "Bash",
            format!("Run {id}"),
            json!({"command": command, "description": format!("Run {id}")}),
            json!({"command": command, "description": format!("Run {id}")}),
            json!({"command": command}),
        ),
    };
    let session = "ses_4f1c2d3e4a5b6c7d8e9f0a1b2c";
    let claude_session = "3f1c2d3e-4a5b-4c7d-8e9f-0a1b2c3d4e5f";
    let lines = match runner {
        "opencode" => vec![json!({"type": "tool_use", "timestamp": 1764480000095u64, "sessionID": session,
            "part": {"sessionID": session, "messageID": "msg_a1", "id": format!("prt_{id}"), "type": "tool",
                "callID": id, "tool": tool, "state": {"status": "completed", "input": opencode_input,
                    "time": {"start": 1764480000091u64, "end": 1764480000094u64}, "output": "", "title": title,
                    "metadata": {}}}})],
        "claude-code" => vec![
            json!({"type": "assistant", "message": {"id": format!("msg_{id}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "tool_use", "id": id, "name": claude_tool,
                "input": claude_input}], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5}},
                "parent_tool_use_id": null, "session_id": claude_session}),
            json!({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": id, "type": "tool_result",
                "content": ""}]}, "parent_tool_use_id": null, "session_id": claude_session}),
        ],
        "pi" => vec![
            json!({"type": "tool_execution_start", "toolCallId": id, "toolName": tool, "args": pi_args}),
            json!({"type": "tool_execution_end", "toolCallId": id, "toolName": tool,
                "result": {"content": [{"type": "text", "text": ""}], "details": {}}, "isError": false}),
        ],
        other => panic!("no native tool calls for runner {other}"),
    };
    lines.iter().map(Value::to_string).collect()
}

/// A runner's `success.jsonl` stream with these tool calls carried out before its last line (each call's id is
/// `call_extra_<n>`). Written to `<world.root>/<name>.jsonl`.
pub fn stream_with_calls(world: &World, runner: &str, name: &str, calls: &[ToolCall]) -> PathBuf {
    let text = std::fs::read_to_string(stream(runner, "success")).expect("the success stream");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let last = lines.pop().expect("a last line");
    for (index, call) in calls.iter().enumerate() {
        lines.extend(native_tool_call(runner, &format!("call_extra_{}", index + 1), call));
    }
    lines.push(last);
    let path = world.root.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").expect("the stream is written");
    path
}
