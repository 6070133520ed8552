//! Navigation: definition, document links, env references and rename.

use expect_test::{Expect, expect};

use crate::support::{cursor, mark, package};

const MCP: &str = "env:\n  API_TOKEN:\n    required: false\nmcps:\n  - name: db\n    url: https://x.example/mcp\n    headers:\n      Authorization: Bearer ${API_TOKEN}\n      X-Again: ${API_TOKEN}-${lower}\n";

fn parse(text: &str) -> wb_syntax::Parse {
    let parse = wb_syntax::parse_str(text);
    assert!(parse.root.is_some(), "the fixture parses");
    parse
}

fn check_definition(fixture: &str, expect: Expect) {
    let (text, offset) = cursor(fixture);
    let package = package();
    let parse = parse(&text);
    let root = parse.root.as_ref().unwrap();
    let links = wb_ide::definition(&wb_manifest::OsFileSystem, &package.manifest, &text, root, offset);
    let mut out = String::new();
    for link in links {
        let target = match link.target_range {
            Some(range) if link.target == package.manifest => format!("{:?} in the manifest", &text[range.as_range()]),
            Some(range) => format!("{} at {range:?}", package.show(&link.target)),
            None => package.show(&link.target),
        };
        out.push_str(&format!("{:?} -> {target}\n", &text[link.origin.as_range()]));
    }
    expect.assert_eq(&out);
}

#[test]
fn definition_of_an_env_reference_is_its_declaration() {
    check_definition(
        &MCP.replacen("${API_TOKEN}", "${API$0_TOKEN}", 1),
        expect![[r#"
        "API_TOKEN" -> "API_TOKEN" in the manifest
    "#]],
    );
}

#[test]
fn definition_of_an_undeclared_reference_is_nothing() {
    check_definition("mcps:\n  - name: db\n    headers:\n      A: ${MISS$0ING}\n", expect![[r#""#]]);
}

#[test]
fn definition_of_path_values_opens_their_file() {
    check_definition(
        "instructions: ./instr$0uctions.md\n",
        expect![[r#"
        "./instructions.md" -> instructions.md
    "#]],
    );
    check_definition(
        "skills:\n  - ./skills/re$0view\n",
        expect![[r#"
        "./skills/review" -> skills/review/SKILL.md
    "#]],
    );
    check_definition(
        "runner_config: ./open$0code.json\n",
        expect![[r#"
        "./opencode.json" -> opencode.json
    "#]],
    );
}

#[test]
fn document_links_cover_every_existing_path() {
    let text = "instructions: ./instructions.md\nrunner_config: ./opencode.json\nskills:\n  - ./skills/review\n  - ./skills/drafts\n  - ./skills/missing\nruntimes:\n  docker:\n    image:\n      build: ./Dockerfile\n";
    let package = package();
    let parse = parse(text);
    let links = wb_ide::document_links(&wb_manifest::OsFileSystem, &package.manifest, parse.root.as_ref().unwrap());
    let out: String =
        links.iter().map(|l| format!("{:?} -> {}\n", &text[l.origin.as_range()], package.show(&l.target))).collect();
    expect![[r#"
        "./instructions.md" -> instructions.md
        "./opencode.json" -> opencode.json
        "./skills/review" -> skills/review/SKILL.md
        "./Dockerfile" -> Dockerfile
    "#]]
    .assert_eq(&out);
}

fn check_references(fixture: &str, include_declaration: bool, expect: Expect) {
    let (text, offset) = cursor(fixture);
    let parse = parse(&text);
    let ranges = wb_ide::env_references(&text, parse.root.as_ref().unwrap(), offset, include_declaration);
    expect.assert_eq(&mark(&text, &ranges));
}

#[test]
fn references_from_the_declaration() {
    check_references(
        &MCP.replacen("API_TOKEN:", "API_$0TOKEN:", 1),
        true,
        expect![[r#"
        env:
          [API_TOKEN]:
            required: false
        mcps:
          - name: db
            url: https://x.example/mcp
            headers:
              Authorization: Bearer ${[API_TOKEN]}
              X-Again: ${[API_TOKEN]}-${lower}
    "#]],
    );
}

#[test]
fn references_from_a_use_without_the_declaration() {
    check_references(
        &MCP.replacen("${API_TOKEN}-", "${API_TOKEN$0}-", 1),
        false,
        expect![[r#"
        env:
          API_TOKEN:
            required: false
        mcps:
          - name: db
            url: https://x.example/mcp
            headers:
              Authorization: Bearer ${[API_TOKEN]}
              X-Again: ${[API_TOKEN]}-${lower}
    "#]],
    );
}

#[test]
fn an_invalid_name_has_no_references() {
    check_references(
        &MCP.replacen("${lower}", "${low$0er}", 1),
        true,
        expect![[r#"
        env:
          API_TOKEN:
            required: false
        mcps:
          - name: db
            url: https://x.example/mcp
            headers:
              Authorization: Bearer ${API_TOKEN}
              X-Again: ${API_TOKEN}-${lower}
    "#]],
    );
}

fn check_rename(fixture: &str, new_name: &str, expect: Expect) {
    let (text, offset) = cursor(fixture);
    let parse = parse(&text);
    let root = parse.root.as_ref().unwrap();
    let prepared = wb_ide::env_range_at(&text, root, offset).map(|range| text[range.as_range()].to_owned());
    let out = match wb_ide::rename_env(&text, root, offset, new_name) {
        Ok(edits) => {
            let mut renamed = text.clone();
            let mut edits = edits;
            edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
            for (range, new_text) in edits {
                renamed.replace_range(range.as_range(), &new_text);
            }
            format!("prepare {prepared:?}\n{renamed}")
        }
        Err(error) => format!("prepare {prepared:?}\nerror: {error}\n"),
    };
    expect.assert_eq(&out);
}

#[test]
fn rename_from_a_reference_renames_declaration_and_every_use() {
    check_rename(
        &MCP.replacen("${API_TOKEN}", "${$0API_TOKEN}", 1),
        "SERVICE_TOKEN",
        expect![[r#"
        prepare Some("API_TOKEN")
        env:
          SERVICE_TOKEN:
            required: false
        mcps:
          - name: db
            url: https://x.example/mcp
            headers:
              Authorization: Bearer ${SERVICE_TOKEN}
              X-Again: ${SERVICE_TOKEN}-${lower}
    "#]],
    );
}

#[test]
fn rename_refuses_invalid_taken_and_non_env_names() {
    check_rename(
        &MCP.replacen("API_TOKEN:", "API_TOKEN$0:", 1),
        "service-token",
        expect![[r#"
        prepare Some("API_TOKEN")
        error: Invalid environment variable name: service-token
    "#]],
    );
    let taken = MCP.replacen("env:\n", "env:\n  OTHER: {}\n", 1).replacen("API_TOKEN:", "$0API_TOKEN:", 1);
    check_rename(
        &taken,
        "OTHER",
        expect![[r#"
        prepare Some("API_TOKEN")
        error: OTHER is already declared in env
    "#]],
    );
    check_rename(
        &MCP.replacen("name: db", "name: d$0b", 1),
        "X",
        expect![[r#"
        prepare None
        error: Rename works on environment variables declared in env or referenced as ${NAME}
    "#]],
    );
    check_rename(
        &MCP.replacen("${lower}", "${lo$0wer}", 1),
        "LOWER",
        expect![[r#"
        prepare None
        error: Rename works on environment variables declared in env or referenced as ${NAME}
    "#]],
    );
}
