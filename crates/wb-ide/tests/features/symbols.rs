//! Document symbols (the outline) and folding ranges.

use expect_test::expect;

const MANIFEST: &str = "spec: 1\nname: demo\nmodel:\n  id: openai/gpt-5.6-terra\n  routes:\n    - provider: openai\n    - provider: openrouter\n      model: openai/gpt-5.6-terra\nskills:\n  - ./skills/review\nmcps:\n  - name: db\n    url: https://x.example/mcp\n  - url: https://y.example/mcp\nruntimes:\n  local: {}\n";

#[test]
fn the_outline_names_list_items_by_name_provider_or_value() {
    let parse = wb_syntax::parse_str(MANIFEST);
    let symbols = wb_ide::symbols(parse.root.as_ref().unwrap());
    fn render(symbols: &[wb_ide::Symbol], depth: usize, out: &mut String) {
        for symbol in symbols {
            out.push_str(&"  ".repeat(depth));
            out.push_str(&format!("{:?} {}", symbol.kind, symbol.name));
            if let Some(detail) = &symbol.detail {
                out.push_str(&format!(" = {detail}"));
            }
            out.push_str(&format!(" {:?}\n", &MANIFEST[symbol.selection.as_range()]));
            render(&symbol.children, depth + 1, out);
        }
    }
    let mut out = String::new();
    render(&symbols, 0, &mut out);
    expect![[r#"
        Number spec = 1 "spec"
        String name = demo "name"
        Object model "model"
          String id = openai/gpt-5.6-terra "id"
          Array routes "routes"
            Object openai "provider: openai"
              String provider = openai "provider"
            Object openrouter "provider: openrouter\n      model: openai/gpt-5.6-terra"
              String provider = openrouter "provider"
              String model = openai/gpt-5.6-terra "model"
        Array skills "skills"
          String ./skills/review "./skills/review"
        Array mcps "mcps"
          Object db "name: db\n    url: https://x.example/mcp"
            String name = db "name"
            String url = https://x.example/mcp "url"
          Object [1] "url: https://y.example/mcp"
            String url = https://y.example/mcp "url"
        Object runtimes "runtimes"
          Object local "local"
    "#]]
    .assert_eq(&out);
}

#[test]
fn folds_cover_multi_line_blocks_from_their_key() {
    let parse = wb_syntax::parse_str(MANIFEST);
    let folds = wb_ide::folding_ranges(MANIFEST, parse.root.as_ref().unwrap());
    let index = wb_syntax::LineIndex::new(MANIFEST);
    let out: String = folds
        .iter()
        .map(|fold| {
            let start = index.line_col(fold.range.start, wb_syntax::PositionEncoding::Utf8).line + 1;
            let end = index.line_col(fold.range.end, wb_syntax::PositionEncoding::Utf8).line + 1;
            let first = MANIFEST.lines().nth(start as usize - 1).unwrap_or_default();
            format!("lines {start}-{end}: {first}\n")
        })
        .collect();
    expect![[r#"
        lines 3-8: model:
        lines 5-8:   routes:
        lines 7-8:     - provider: openrouter
        lines 9-10: skills:
        lines 11-14: mcps:
        lines 12-13:   - name: db
        lines 15-16: runtimes:
    "#]]
    .assert_eq(&out);
}
