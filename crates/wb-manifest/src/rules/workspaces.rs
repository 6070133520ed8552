//! `workspaces`: named workspace declarations and their access.

use wb_syntax::Entry;

use super::{Label, Rules, Slot, closest, matches, slug};
use crate::diagnostic::Code;
use crate::fields;
use crate::manifest::{Access, Spanned, Workspace};

impl Rules<'_> {
    pub(super) fn workspaces(&mut self, entry: &Entry) {
        let Some(workspaces) = self.record(Slot::of_entry(entry), "workspaces") else { return };
        for workspace in &workspaces.entries {
            if !matches(slug(), &workspace.key) || workspace.key == "primary" {
                self.report(
                    Code::InvalidName,
                    workspace.key_range,
                    format!("Invalid workspace name: {}", workspace.key),
                );
                continue;
            }
            let label = Label::Key("workspaces", &workspace.key);
            let Some(declaration) = self.record(Slot::of_entry(workspace), label) else { continue };
            self.check_keys(declaration, fields::WORKSPACE_FIELDS, label);
            let required = self.boolean(declaration, "required", format_args!("{label}.required"), true);
            let access = match declaration.entry("access") {
                None => Access::ReadOnly,
                Some(access) if access.value.is_null() => Access::ReadOnly,
                Some(access) => match access.value.as_str() {
                    Some("read-only") => Access::ReadOnly,
                    Some("read-write") => Access::ReadWrite,
                    other => {
                        let range = Slot::of_entry(access).range();
                        let fix = other
                            .and_then(|value| closest(value, fields::ACCESS_VALUES))
                            .map(|value| self.rename_fix(access.value.range, value));
                        let diagnostic = self.report(
                            Code::InvalidValue,
                            range,
                            format!("{label}.access must be read-only or read-write"),
                        );
                        if let Some(fix) = fix {
                            diagnostic.fixes.push(fix);
                        }
                        Access::ReadOnly
                    }
                },
            };
            let name = Spanned::new(workspace.key.to_string(), workspace.key_range);
            self.manifest.workspaces.push(Workspace { name, required, access });
        }
    }
}
