//! `requirements`: os, arch, cpu, gpu, memory and disk.

use wb_syntax::{Entry, TextRange, Value};

use super::{Rules, Slot, closest};
use crate::diagnostic::Code;
use crate::fields;
use crate::manifest::Requirements;

impl Rules<'_> {
    pub(super) fn requirements(&mut self, entry: &Entry) {
        let Some(requirements) = self.record(Slot::of_entry(entry), "requirements") else { return };
        self.check_keys(requirements, fields::REQUIREMENTS_FIELDS, "requirements");
        let mut result = Requirements::default();
        if let Some(os) = requirements.entry("os") {
            result.os = self.enum_list(os, "requirements.os", fields::OS_VALUES);
        }
        if let Some(arch) = requirements.entry("arch") {
            result.arch = self.enum_list(arch, "requirements.arch", fields::ARCH_VALUES);
        }
        if let Some(cpu) = requirements.entry("cpu") {
            match cpu.value.value {
                Value::Number(n) if n.fract() == 0.0 && (1.0..=9_007_199_254_740_991.0).contains(&n) => {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let count = n as u64;
                    result.cpu = Some(count);
                }
                _ => {
                    let range = Slot::of_entry(cpu).range();
                    self.report(Code::InvalidValue, range, "requirements.cpu must be a positive integer");
                }
            }
        }
        result.gpu = self.boolean(requirements, "gpu", "requirements.gpu", false);
        for (key, slot) in [("memory_gb", &mut result.memory_gb), ("disk_gb", &mut result.disk_gb)] {
            if let Some(value) = requirements.entry(key) {
                match value.value.value {
                    Value::Number(n) if n.is_finite() && n > 0.0 => *slot = Some(n),
                    _ => {
                        let range = Slot::of_entry(value).range();
                        self.report(Code::InvalidValue, range, format!("requirements.{key} must be a positive number"));
                    }
                }
            }
        }
        self.manifest.requirements = result;
    }

    pub(super) fn enum_list(
        &mut self,
        entry: &Entry,
        label: impl std::fmt::Display + Copy,
        allowed: &[&str],
    ) -> Option<Vec<String>> {
        let items = match &entry.value.value {
            Value::Sequence(items) if !items.is_empty() => items,
            Value::Sequence(_) => {
                let range = Slot::of_entry(entry).range();
                self.report(Code::EmptyValue, range, format!("{label} must be a non-empty array"));
                return None;
            }
            _ => {
                let range = Slot::of_entry(entry).range();
                self.report(Code::InvalidType, range, format!("{label} must be a non-empty array"));
                return None;
            }
        };
        let mut values: Vec<(String, TextRange)> = Vec::new();
        let mut ok = true;
        for item in items {
            match item.as_str().filter(|value| allowed.contains(value)) {
                Some(value) => {
                    if let Some((_, first)) = values.iter().find(|(seen, _)| seen == value) {
                        let (path, first) = (self.path.clone(), *first);
                        self.report(Code::DuplicateName, item.range, format!("{label} must not repeat an entry"))
                            .related
                            .push(crate::Related { path, range: first, message: "first listed here".to_owned() });
                        ok = false;
                    } else {
                        values.push((value.to_owned(), item.range));
                    }
                }
                None => {
                    let fix = item.as_str().and_then(|v| closest(v, allowed)).map(|v| self.rename_fix(item.range, v));
                    let message = format!("{label} entries must be one of {}", allowed.join(", "));
                    let diagnostic = self.report(Code::InvalidValue, item.range, message);
                    if let Some(fix) = fix {
                        diagnostic.fixes.push(fix);
                    }
                    ok = false;
                }
            }
        }
        ok.then(|| values.into_iter().map(|(value, _)| value).collect())
    }
}
