//! `mcps`: each MCP server's name, transport, URL and headers.

use wb_syntax::{Entry, Node, Value};

use super::{Label, Rules, Slot, matches, slug};
use crate::diagnostic::Code;
use crate::fields;
use crate::manifest::{Mcp, Spanned};

impl Rules<'_> {
    pub(super) fn mcps(&mut self, entry: &Entry) {
        let Value::Sequence(items) = &entry.value.value else {
            let range = Slot::of_entry(entry).range();
            self.report(Code::InvalidType, range, "mcps must be an array");
            return;
        };
        for (index, item) in items.iter().enumerate() {
            if let Some(mcp) = self.mcp(item, index) {
                self.manifest.mcps.push(mcp);
            }
        }
    }

    pub(super) fn mcp(&mut self, item: &Node, index: usize) -> Option<Mcp> {
        let label = Label::Index("mcps", index);
        let mcp = self.record(Slot::of_item(item), label)?;
        self.check_keys(mcp, fields::MCP_FIELDS, label);
        let anchor = mcp.entries.first().map_or(item.range, |e| e.key_range);
        let mut ok = true;
        let name = self.text_in(mcp, "name", format_args!("{label}.name"), anchor).and_then(|name| {
            if !matches(slug(), &name.value) {
                self.report(Code::InvalidName, name.range, format!("Invalid MCP name: {}", name.value));
                return None;
            }
            if let Some((_, first_range)) = self.mcp_names.iter().find(|(seen, _)| *seen == name.value) {
                let (path, first_range) = (self.path.clone(), *first_range);
                self.report(Code::DuplicateName, name.range, format!("Duplicate MCP name: {}", name.value))
                    .related
                    .push(crate::Related { path, range: first_range, message: "first MCP with this name".to_owned() });
                return None;
            }
            self.mcp_names.push((name.value.clone(), name.range));
            Some(name)
        });
        if let Some(transport) = mcp.entry("transport") {
            // An empty value means the default, `http`.
            if !transport.value.is_null() && transport.value.as_str() != Some("http") {
                let range = Slot::of_entry(transport).range();
                let fix = self.rename_fix(transport.value.range, "http");
                let diagnostic = self.report(Code::InvalidValue, range, format!("{label}.transport must be http"));
                if transport.value.as_str().is_some() {
                    diagnostic.fixes.push(fix);
                }
                ok = false;
            }
        }
        let url = self.text_in(mcp, "url", format_args!("{label}.url"), anchor).and_then(|url| {
            match url::Url::parse(&url.value) {
                Err(_) => {
                    self.report(Code::InvalidUrl, url.range, format!("{label}.url must be an absolute URL"));
                    None
                }
                Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => {
                    self.report(Code::InvalidUrl, url.range, format!("{label}.url must use http or https"));
                    None
                }
                Ok(_) => Some(url),
            }
        });
        let mut headers = Vec::new();
        if let Some(entry) = mcp.entry("headers") {
            if let Some(map) = self.record(Slot::of_entry(entry), format_args!("{label}.headers")) {
                for header in &map.entries {
                    let value = self.text(Slot::of_entry(header), format_args!("{label}.headers.{}", header.key));
                    match value {
                        Some(value) => headers.push((Spanned::new(header.key.to_string(), header.key_range), value)),
                        None => ok = false,
                    }
                }
            } else {
                ok = false;
            }
        }
        match (name, url) {
            (Some(name), Some(url)) if ok => Some(Mcp { name, url, headers, range: item.range }),
            _ => None,
        }
    }
}
