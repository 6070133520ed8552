//! `env`: environment variable declarations.

use wb_syntax::Entry;

use super::{Rules, Slot};
use crate::diagnostic::Code;
use crate::env_refs::is_env_name;
use crate::fields;
use crate::manifest::{EnvVar, Spanned};

impl Rules<'_> {
    pub(super) fn env(&mut self, entry: &Entry) {
        let Some(env) = self.record(Slot::of_entry(entry), "env") else { return };
        // The labels messages name (`env.NAME`, `env.NAME.required`), built in two buffers reused for every
        // variable: a large manifest declares thousands.
        let mut label = String::new();
        let mut required_label = String::new();
        for var in &env.entries {
            if !is_env_name(&var.key) {
                let upper = var.key.to_ascii_uppercase().replace('-', "_");
                let fix = is_env_name(&upper).then(|| self.rename_fix(var.key_range, &upper).needs_review());
                let diagnostic = self.report(
                    Code::InvalidName,
                    var.key_range,
                    format!("Invalid environment variable name: {}", var.key),
                );
                if let Some(fix) = fix {
                    diagnostic.fixes.push(fix);
                }
                continue;
            }
            label.clear();
            label.push_str("env.");
            label.push_str(&var.key);
            let Some(declaration) = self.record(Slot::of_entry(var), &label) else { continue };
            self.check_keys(declaration, fields::ENV_FIELDS, &label);
            required_label.clear();
            required_label.push_str(&label);
            required_label.push_str(".required");
            let required = self.boolean(declaration, "required", &required_label, true);
            self.manifest.env.push(EnvVar { name: Spanned::new(var.key.to_string(), var.key_range), required });
        }
    }
}
