//! The plain-text rendering of the Markdown the editor features write (hover, completion documentation), for
//! editors that show text as it is: no `**`, no backticks, code blocks indented, tables as aligned columns.

const CODE_INDENT: &str = "    ";

/// `markdown` (the subset hover and completion write: `**bold**`, `` `code` ``, fenced code blocks, pipe tables)
/// as plain text.
pub fn to_plain_text(markdown: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_code = false;
    let mut table: Vec<Vec<String>> = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            out.push(format!("{CODE_INDENT}{line}"));
            continue;
        }
        if line.trim_start().starts_with('|') {
            let cells = table_cells(line);
            if !cells.iter().all(|cell| is_separator(cell)) {
                table.push(cells.iter().map(|cell| inline(cell)).collect());
            }
            continue;
        }
        flush_table(&mut table, &mut out);
        out.push(inline(line));
    }
    flush_table(&mut table, &mut out);
    out.join("\n")
}

/// A line without its inline markup.
fn inline(line: &str) -> String {
    line.replace("**", "").replace('`', "")
}

fn table_cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(str::trim).collect()
}

fn is_separator(cell: &str) -> bool {
    !cell.is_empty() && cell.chars().all(|ch| matches!(ch, '-' | ':'))
}

/// The rows collected so far, each cell padded to its column's width.
fn flush_table(table: &mut Vec<Vec<String>>, out: &mut Vec<String>) {
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|column| table.iter().filter_map(|row| row.get(column)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    for row in table.drain(..) {
        let cells: Vec<String> =
            row.iter().enumerate().map(|(column, cell)| format!("{cell:<width$}", width = widths[column])).collect();
        out.push(cells.join("  ").trim_end().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::to_plain_text;

    #[test]
    fn inline_markup_code_blocks_and_tables() {
        let markdown = "**runner**: `opencode` | `pi` (required)\n\nThe harness.\n\n```yaml\nrunner: opencode\n```";
        assert_eq!(to_plain_text(markdown), "runner: opencode | pi (required)\n\nThe harness.\n\n    runner: opencode");
        let table = "**GPT** `a/b`\n\n| provider | native id | credentials |\n|---|---|---|\n| openai | `b` | OPENAI_API_KEY |\n| openrouter | `a/b` | OPENROUTER_API_KEY |\n";
        assert_eq!(
            to_plain_text(table),
            "GPT a/b\n\nprovider    native id  credentials\nopenai      b          OPENAI_API_KEY\nopenrouter  a/b        OPENROUTER_API_KEY"
        );
    }
}
