//! Hover: field documentation, and facts about runner, model, provider, env and path values.

use expect_test::{Expect, expect};

use crate::support::{catalog, cursor, package};

fn check(fixture: &str, expect: Expect) {
    let (text, offset) = cursor(fixture);
    let package = package();
    let parse = wb_syntax::parse_str(&text);
    let root = parse.root.as_ref().expect("the fixture parses");
    let hover = wb_ide::hover(&wb_manifest::OsFileSystem, &package.manifest, &text, root, offset, &catalog());
    let out = match hover {
        Some(hover) => {
            let markdown = hover.markdown.replace(&package.dir.display().to_string(), "$PKG");
            format!("covers {:?}\n{markdown}\n", &text[hover.range.as_range()])
        }
        None => "no hover\n".to_owned(),
    };
    expect.assert_eq(&out);
}

const MCP: &str = "env:\n  API_TOKEN:\n    required: false\nmcps:\n  - name: db\n    url: https://x.example/mcp\n    headers:\n      Authorization: Bearer ${API_TOKEN}\n";

#[test]
fn a_top_level_key_shows_its_documentation() {
    check(
        "spec: 1\nrun$0ner: opencode\n",
        expect![[r#"
        covers "runner"
        **runner**: non-empty string (required)

        The harness that executes the work: `opencode`, `claude-code` or `pi`.

        ```yaml
        runner: opencode
        ```
    "#]],
    );
}

#[test]
fn a_nested_key_shows_its_documentation() {
    check(
        "runtimes:\n  docker:\n    ima$0ge: ghcr.io/x/y:1\n",
        expect![[r#"
        covers "image"
        **image**: image reference or `{build, context}` (required)

        A published image reference, or `{build, context}` to build one from a package-relative Dockerfile.

        ```yaml
        image:
          build: ./Dockerfile
          context: .
        ```
    "#]],
    );
}

#[test]
fn a_runner_value() {
    check(
        "runner: clau$0de-code\n",
        expect![[r#"
        covers "claude-code"
        **runner** `claude-code`

        Claude Code (`claude -p --output-format stream-json`). A `runner_config` must be a JSON file with `permissions` and `max_turns`.
    "#]],
    );
}

#[test]
fn a_catalog_model_lists_its_routes() {
    check(
        "model:\n  id: openai/gpt$0-5.6-terra\n",
        expect![[r#"
        covers "openai/gpt-5.6-terra"
        **GPT-5.6 Terra** `openai/gpt-5.6-terra`

        | provider | native id | credentials |
        |---|---|---|
        | openai | `gpt-5.6-terra` | OPENAI_API_KEY |
        | openrouter | `openai/gpt-5.6-terra` | OPENROUTER_API_KEY |

    "#]],
    );
}

#[test]
fn an_unknown_model_says_what_it_needs() {
    check(
        "model:\n  id: lab/unk$0nown\n",
        expect![[r#"
        covers "lab/unknown"
        **model** `lab/unknown`

        Not in the model catalog (test-catalog). Unknown models need an explicit `model` on every route and a packaged `runner_config`.
    "#]],
    );
}

#[test]
fn a_route_provider() {
    check(
        "model:\n  id: openai/gpt-5.6-terra\n  routes:\n    - provider: open$0router\n",
        expect![[r#"
        covers "openrouter"
        **provider** `openrouter`: OpenRouter

        Credentials: `OPENROUTER_API_KEY`
    "#]],
    );
}

#[test]
fn an_env_reference_in_a_header() {
    check(
        &MCP.replace("${API_TOKEN}", "${API_$0TOKEN}"),
        expect![[r#"
        covers "Bearer ${API_TOKEN}"
        **env** `API_TOKEN`: declared, required: `false`

        Referenced by MCP db

        The value is supplied when a run starts (`--env`, `--env-file` or the environment); it never appears in the manifest or in generated configuration.
    "#]],
    );
}

#[test]
fn an_env_declaration_names_its_users() {
    check(
        &MCP.replace("  API_TOKEN:", "  API_TO$0KEN:"),
        expect![[r#"
        covers "API_TOKEN"
        **env** `API_TOKEN`: declared, required: `false`

        Referenced by MCP db

        The value is supplied when a run starts (`--env`, `--env-file` or the environment); it never appears in the manifest or in generated configuration.
    "#]],
    );
}

#[test]
fn a_header_value_outside_a_reference_is_not_an_env_hover() {
    check(
        &MCP.replace("Bearer", "Bea$0rer"),
        expect![[r#"
        covers "Bearer ${API_TOKEN}"
        **headers**: map of strings (optional)

        Request headers. Values may reference declared environment variables as `${NAME}`; the secret never enters generated configuration.
    "#]],
    );
}

#[test]
fn a_skill_path_shows_its_skill() {
    check(
        "skills:\n  - ./skills/rev$0iew\n",
        expect![[r#"
        covers "./skills/review"
        `$PKG/skills/review`

        **skill** `review`

        Reviews pull requests.
    "#]],
    );
}

#[test]
fn a_missing_instructions_file() {
    check(
        "instructions: ./miss$0ing.md\n",
        expect![[r#"
        covers "./missing.md"
        `$PKG/missing.md`

        does not exist
    "#]],
    );
}
