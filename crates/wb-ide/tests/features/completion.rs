//! Completion: keys by context, values (enums, runners, model ids, routes, paths) and `${` env references.

use expect_test::{Expect, expect};
use wb_ide::CompletionOptions;

use crate::support::{catalog, cursor, package};

/// Completion for an editor that expands snippets.
fn check(fixture: &str, expect: Expect) {
    check_with(fixture, CompletionOptions { snippets: true }, expect);
}

/// Completion for an editor that inserts plain text only.
fn check_plain(fixture: &str, expect: Expect) {
    check_with(fixture, CompletionOptions { snippets: false }, expect);
}

fn check_with(fixture: &str, options: CompletionOptions, expect: Expect) {
    let (text, offset) = cursor(fixture);
    let package = package();
    let items = wb_ide::completions(&wb_manifest::OsFileSystem, &package.manifest, &text, offset, &catalog(), options);
    let mut out = String::new();
    if let Some(first) = items.first() {
        assert!(items.iter().all(|item| item.replace == first.replace), "one replaced range per answer");
        out.push_str(&format!("replaces {:?}\n", &text[first.replace.as_range()]));
    }
    let mut items = items;
    items.sort_by(|a, b| a.sort_text.cmp(&b.sort_text));
    for item in items {
        out.push_str(&format!("{:?} {}", item.kind, item.label));
        if let Some(detail) = &item.detail {
            out.push_str(&format!(" ({detail})"));
        }
        if item.snippet {
            out.push_str(&format!(" snippet {:?}", item.insert_text));
        } else if item.insert_text != item.label {
            out.push_str(&format!(" inserts {:?}", item.insert_text));
        }
        out.push('\n');
    }
    expect.assert_eq(&out);
}

#[test]
fn top_level_keys_leave_out_present_and_spec_0_fields() {
    check(
        "spec: 1\nname: demo\n$0\n",
        expect![[r#"
            replaces ""
            Field version (required) snippet "version: $0"
            Field runner (required) snippet "runner: ${1|opencode,claude-code,pi|}"
            Field model (required) snippet "model:\n  id: $1"
            Field instructions (required) snippet "instructions: $0"
            Field runtimes (required) snippet "runtimes:\n  ${1|local: {\\},docker:\n    image: |}$0"
            Field description (optional) snippet "description: $0"
            Field runner_config (optional) snippet "runner_config: $0"
            Field skills (optional, default []) snippet "skills:\n  - $0"
            Field tools (optional, default []) snippet "tools:\n  - $0"
            Field mcps (optional, default []) snippet "mcps:\n  - name: $1\n    url: $2"
            Field env (optional, default {}) snippet "env:\n  ${1:NAME}:\n    required: ${2|true,false|}"
            Field workspaces (optional, default {}) snippet "workspaces:\n  ${1:name}:\n    access: ${2|read-only,read-write|}"
            Field requirements (optional) snippet "requirements:\n  $0"
        "#]],
    );
}

#[test]
fn without_snippets_keys_insert_plain_text_with_each_placeholder_default() {
    check_plain(
        "spec: 1\nname: demo\n$0\n",
        expect![[r#"
        replaces ""
        Field version (required) inserts "version: "
        Field runner (required) inserts "runner: opencode"
        Field model (required) inserts "model:\n  id: "
        Field instructions (required) inserts "instructions: "
        Field runtimes (required) inserts "runtimes:\n  local: {}"
        Field description (optional) inserts "description: "
        Field runner_config (optional) inserts "runner_config: "
        Field skills (optional, default []) inserts "skills:\n  - "
        Field tools (optional, default []) inserts "tools:\n  - "
        Field mcps (optional, default []) inserts "mcps:\n  - name: \n    url: "
        Field env (optional, default {}) inserts "env:\n  NAME:\n    required: true"
        Field workspaces (optional, default {}) inserts "workspaces:\n  name:\n    access: read-only"
        Field requirements (optional) inserts "requirements:\n  "
    "#]],
    );
}

#[test]
fn without_snippets_nested_keys_carry_the_indentation_of_their_line() {
    check_plain(
        "mcps:\n  - name: db\n    url: https://x.example/mcp\n    he$0\n",
        expect![[r#"
        replaces "he"
        Field name (required) inserts "name: "
        Field headers (optional) inserts "headers:\n      Authorization: Bearer ${TOKEN}"
        Field transport (optional, default "http") inserts "transport: http"
    "#]],
    );
    check_plain(
        "mcps:\n  - he$0\n",
        expect![[r#"
        replaces "he"
        Field name (required) inserts "name: "
        Field url (required) inserts "url: "
        Field headers (optional) inserts "headers:\n      Authorization: Bearer ${TOKEN}"
        Field transport (optional, default "http") inserts "transport: http"
    "#]],
    );
    check_plain(
        "env:\n  $0\nmcps:\n  - name: db\n    url: https://x.example/mcp\n    headers:\n      A: ${A_TOKEN}\n",
        expect![[r#"
            replaces ""
            Variable A_TOKEN (referenced in an MCP header) inserts "A_TOKEN:\n    required: true"
        "#]],
    );
}

#[test]
fn after_a_dash_snippet_lines_line_up_under_the_key() {
    check(
        "mcps:\n  - he$0\n",
        expect![[r#"
        replaces "he"
        Field name (required) snippet "name: $0"
        Field url (required) snippet "url: $0"
        Field headers (optional) snippet "headers:\n    ${1:Authorization}: ${2:Bearer \\${${3:TOKEN}\\}}"
        Field transport (optional, default "http") snippet "transport: ${1|http|}"
    "#]],
    );
}

#[test]
fn a_key_typed_before_an_existing_colon_inserts_the_name_only() {
    check(
        "spec: 1\nrun$0: opencode\n",
        expect![[r#"
        replaces "run"
        Field version (required)
        Field name (required)
        Field runner (required)
        Field model (required)
        Field instructions (required)
        Field runtimes (required)
        Field description (optional)
        Field runner_config (optional)
        Field skills (optional, default [])
        Field tools (optional, default [])
        Field mcps (optional, default [])
        Field env (optional, default {})
        Field workspaces (optional, default {})
        Field requirements (optional)
    "#]],
    );
}

#[test]
fn spec_0_offers_its_runtime_fields() {
    check(
        "spec: 0\nname: demo\nversion: 0.1.0\ndescription: x\nrunner: pi\nmodel:\n  id: x\ninstructions: ./i.md\nskills: []\ntools: []\nmcps: []\nenv: {}\nworkspaces: {}\nrunner_config: ./c\n$0\n",
        expect![[r#"
        replaces ""
        Field runtime (required) snippet "runtime: ${1|local,docker,e2b,daytona|}"
        Field image (optional) snippet "image: $0"
        Field docker (optional) snippet "docker:\n  $0"
    "#]],
    );
}

#[test]
fn nested_keys_of_model_and_a_route() {
    check(
        "model:\n  id: openai/gpt-5.6-terra\n  $0\n",
        expect![[r#"
        replaces ""
        Field routes (optional) snippet "routes:\n  - provider: $1"
    "#]],
    );
    check(
        "model:\n  id: openai/gpt-5.6-terra\n  routes:\n    - provider: openai\n      $0\n",
        expect![[r#"
        replaces ""
        Field provider (required) snippet "provider: $0"
        Field model (optional) snippet "model: $0"
    "#]],
    );
}

#[test]
fn runtime_providers_get_their_skeletons() {
    check(
        "spec: 1\nruntimes:\n  local: {}\n  $0\n",
        expect![[r#"
        replaces ""
        Field docker (optional) snippet "docker:\n  image: $0"
        Field daytona (optional) snippet "daytona:\n  class: ${1|linux,windows,gpu,macos|}"
        Field e2b (optional) snippet "e2b:\n  image: $0"
    "#]],
    );
}

#[test]
fn runner_values() {
    check(
        "runner: o$0\n",
        expect![[r#"
        replaces "o"
        Enum opencode
        Enum claude-code
        Enum pi
    "#]],
    );
}

#[test]
fn model_ids_from_the_catalog() {
    check(
        "model:\n  id: $0\n",
        expect![[r#"
        replaces ""
        Model anthropic/claude-sonnet-5 (Claude Sonnet 5)
        Model openai/gpt-5.6-terra (GPT-5.6 Terra)
    "#]],
    );
}

#[test]
fn route_providers_serving_the_model_and_their_native_id() {
    check(
        "model:\n  id: openai/gpt-5.6-terra\n  routes:\n    - provider: $0\n",
        expect![[r#"
        replaces ""
        Enum openai (OpenAI (OPENAI_API_KEY))
        Enum openrouter (OpenRouter (OPENROUTER_API_KEY))
    "#]],
    );
    check(
        "model:\n  id: openai/gpt-5.6-terra\n  routes:\n    - provider: openrouter\n      model: $0\n",
        expect![[r#"
            replaces ""
            Value openai/gpt-5.6-terra (openrouter model id)
        "#]],
    );
}

#[test]
fn enum_values_daytona_class_and_workspace_access() {
    check(
        "runtimes:\n  daytona:\n    class: li$0\n",
        expect![[r#"
        replaces "li"
        Enum linux
        Enum windows
        Enum gpu
        Enum macos
    "#]],
    );
    check(
        "workspaces:\n  api:\n    access: $0\n",
        expect![[r#"
        replaces ""
        Enum read-only
        Enum read-write
    "#]],
    );
}

#[test]
fn enum_lists_inline_and_inside_brackets() {
    check(
        "requirements:\n  os: $0\n",
        expect![[r#"
        replaces ""
        Enum linux inserts "[linux]"
        Enum macos inserts "[macos]"
        Enum windows inserts "[windows]"
    "#]],
    );
    check(
        "requirements:\n  os: [linux, $0]\n",
        expect![[r#"
        replaces ""
        Enum macos
        Enum windows
    "#]],
    );
}

#[test]
fn env_references_inside_a_header_offer_declared_names() {
    check(
        "env:\n  API_TOKEN:\n    required: true\n  DB_URL: {}\nmcps:\n  - name: db\n    url: https://x.example/mcp\n    headers:\n      Authorization: Bearer ${A$0\n",
        expect![[r#"
            replaces "A"
            Variable API_TOKEN (declared in env) inserts "API_TOKEN}"
            Variable DB_URL (declared in env) inserts "DB_URL}"
        "#]],
    );
}

#[test]
fn env_keys_offer_each_undeclared_valid_reference_once() {
    check(
        "env:\n  DECLARED: {}\n  $0\nmcps:\n  - name: db\n    url: https://x.example/mcp\n    headers:\n      A: ${B_TOKEN} ${A_TOKEN}\n      B: ${B_TOKEN} ${DECLARED} ${lower}\n",
        expect![[r#"
            replaces ""
            Variable A_TOKEN (referenced in an MCP header) snippet "A_TOKEN:\n  required: ${1|true,false|}"
            Variable B_TOKEN (referenced in an MCP header) snippet "B_TOKEN:\n  required: ${1|true,false|}"
        "#]],
    );
}

#[test]
fn instructions_offer_markdown_files_and_folders() {
    check(
        "instructions: $0\n",
        expect![[r#"
        replaces ""
        File ./instructions.md
        Folder ./skills
    "#]],
    );
}

#[test]
fn skills_offer_skill_folders() {
    check(
        "skills:\n  - ./skills/$0\n",
        expect![[r#"
        replaces "./skills/"
        File ./skills/review (skill (has SKILL.md))
        Folder ./skills/drafts
    "#]],
    );
}

#[test]
fn image_build_offers_dockerfiles_and_context_offers_folders() {
    check(
        "runtimes:\n  docker:\n    image:\n      build: $0\n",
        expect![[r#"
        replaces ""
        File ./Dockerfile
        Folder ./skills
    "#]],
    );
    check(
        "runtimes:\n  docker:\n    image:\n      build: ./Dockerfile\n      context: $0\n",
        expect![[r#"
        replaces ""
        Folder ./skills
    "#]],
    );
}

#[test]
fn nothing_in_a_comment() {
    check("spec: 1\n# na$0\n", expect![[r#""#]]);
}
