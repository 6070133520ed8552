//! `--format github`: workflow commands that GitHub Actions shows as annotations on the pull request.

use wb_manifest::Severity;

use super::Checked;

fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(checked: &Checked<'_>) -> String {
    let mut out = String::new();
    for package in &checked.packages {
        for item in &package.items {
            let command = match item.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Information | Severity::Hint => "notice",
            };
            let location = &item.location;
            out.push_str(&format!(
                "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
                escape_property(&location.path),
                location.start.line,
                location.start.column,
                location.end.line,
                location.end.column,
                escape_property(&format!("wb-lsp {}", item.code)),
                escape_data(&item.message),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        assert_eq!(super::escape_data("a%b\nc"), "a%25b%0Ac");
        assert_eq!(super::escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
