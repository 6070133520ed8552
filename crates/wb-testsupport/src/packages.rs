//! The demo packages of the three runners (OpenCode, Claude Code, Pi), the smallest package of a runner, and
//! worlds holding a demo package with its skill and runner configuration.

use crate::World;

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
