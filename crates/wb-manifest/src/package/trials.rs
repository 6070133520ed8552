//! The package's trial tasks (`trials/<id>/task.json`), each checked as an open `task.json` is in the editor
//! (`crate::trial_task`), its problems reported in its own file.

use std::sync::Arc;

use crate::diagnostic::Code;
use crate::fs::ReadLimitError;
use crate::manifest::Manifest;
use crate::trial_task::{self, MAX_TASK_BYTES};

use super::{PackageChecks, text_of};

impl PackageChecks<'_> {
    pub(super) fn trials(&mut self, manifest: &Manifest) {
        let package = manifest.name.as_ref().map(|name| name.value.as_str());
        for task in trial_task::task_files(self.fs, self.package_dir) {
            let text = match self.fs.read_limited(&task, MAX_TASK_BYTES) {
                Ok(bytes) => text_of(bytes),
                Err(ReadLimitError::TooLarge(size)) => {
                    let message = format!("Trial task is too large: {size} bytes (the limit is 1 MiB)");
                    self.diagnostics.push(crate::Diagnostic::new(
                        Code::FileTooLarge,
                        &task,
                        wb_syntax::TextRange::empty(0),
                        message,
                    ));
                    continue;
                }
                Err(ReadLimitError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => {
                    let dir = task.parent().unwrap_or(self.package_dir);
                    let message = format!("Trial task directory has no {}: {}", trial_task::TASK_FILE, dir.display());
                    self.report(Code::PathNotFound, wb_syntax::TextRange::empty(0), message);
                    continue;
                }
                Err(ReadLimitError::Io(error)) => {
                    let message = format!("Trial task is unreadable: {}: {error}", task.display());
                    self.report(Code::IoError, wb_syntax::TextRange::empty(0), message);
                    continue;
                }
            };
            let (_, diagnostics) = trial_task::check_task(self.fs, &task, &text, package);
            if !diagnostics.is_empty() {
                self.sources.push((task.clone(), Arc::clone(&text)));
            }
            self.diagnostics.extend(diagnostics);
        }
    }
}
