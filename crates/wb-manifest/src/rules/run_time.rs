//! Problems the reference engine finds only at smoke or run time (engine facts b.6), reported early from the text.

use wb_syntax::{Mapping, TextRange, Value};

use super::{Rules, closest, closest_or_extension};
use crate::diagnostic::Code;
use crate::fields;
use crate::manifest::{Image, Spanned};

impl Rules<'_> {
    /// Problems the reference finds only at smoke or run time, reported early.
    pub(super) fn runtime_problems(&mut self, top: &Mapping) {
        let runner = self.manifest.runner.clone();
        let runner_name = runner.as_ref().map(|r| r.value.as_str());
        self.runner_problems(runner.as_ref());
        self.mcp_reference_problems(top, runner_name);
        self.runtime_entry_problems(top);
        self.model_routes();
    }

    /// A runner the reference cannot run (with the nearest one as a fix).
    fn runner_problems(&mut self, runner: Option<&Spanned<String>>) {
        if let Some(runner) = runner
            && !fields::RUNNERS.contains(&runner.value.as_str())
        {
            let fix =
                closest_or_extension(&runner.value, fields::RUNNERS).map(|name| self.rename_fix(runner.range, name));
            let diagnostic =
                self.report(Code::UnsupportedRunner, runner.range, format!("Unsupported runner: {}", runner.value));
            if let Some(fix) = fix {
                diagnostic.fixes.push(fix);
            }
        }
    }

    /// MCP header references: each must name a declared variable (fixes: the nearest name, or declaring it);
    /// Claude Code does not expand Claude or Anthropic variables there; Pi has no MCP transport.
    fn mcp_reference_problems(&mut self, top: &Mapping, runner_name: Option<&str>) {
        let env_declared = top.entry("env").is_some_and(|e| matches!(e.value.value, Value::Mapping(_)));
        // Taken out while reporting needs `self`, and put back: no copy of the servers.
        let mcps = std::mem::take(&mut self.manifest.mcps);
        for mcp in &mcps {
            let mut claude_disabled = None;
            for (_, value) in &mcp.headers {
                for (name, range) in self.env_references(value) {
                    let declared = self.manifest.env_var(&name).is_some();
                    let invalid_env_entry = env_declared
                        && top
                            .entry("env")
                            .and_then(|e| e.value.as_mapping())
                            .is_some_and(|m| m.entry(&name).is_some());
                    if !declared && !invalid_env_entry {
                        let names: Vec<&str> = self.manifest.env.iter().map(|var| var.name.value.as_str()).collect();
                        let rename = closest(&name, &names).map(|near| {
                            let written = self.text.get(range.as_range()).unwrap_or_default();
                            self.rename_fix(range, &written.replacen(name.as_str(), near, 1))
                        });
                        let fix = rename.into_iter().chain(self.declare_env_fix(top, &name));
                        let diagnostic = self.report(
                            Code::UndeclaredEnvReference,
                            range,
                            format!("MCP {} references undeclared environment variable: {name}", mcp.name.value),
                        );
                        diagnostic.fixes.extend(fix);
                    }
                    if runner_name == Some("claude-code")
                        && (name.starts_with("CLAUDE") || name.starts_with("ANTHROPIC_"))
                    {
                        claude_disabled.get_or_insert(range);
                    }
                }
            }
            if let Some(range) = claude_disabled {
                self.report(
                    Code::ClaudeMcpDisabled,
                    range,
                    format!(
                        "MCP {} is disabled because Claude Code does not expand Claude or Anthropic environment references in MCP headers",
                        mcp.name.value
                    ),
                );
            }
        }
        self.manifest.mcps = mcps;
        if runner_name == Some("pi")
            && let Some(entry) = top.entry("mcps")
            && entry.value.as_sequence().is_some_and(|items| !items.is_empty())
        {
            self.report(
                        Code::PiMcpUnsupported,
                        entry.key_range,
                        "Pi does not provide a native MCP transport. This Workbench requires an explicit Pi extension before it can run.",
                    );
        }
    }

    /// Each runtime entry as the reference runs it: Daytona's class and published image, spec 0's local
    /// image, and providers the reference does not have.
    fn runtime_entry_problems(&mut self, top: &Mapping) {
        let runtimes = std::mem::take(&mut self.manifest.runtimes);
        for runtime in &runtimes {
            match runtime.provider.value.as_str() {
                "daytona" => {
                    if let Some(class) = &runtime.class
                        && class.value != "linux"
                    {
                        self.report(
                            Code::DaytonaClassUnsupported,
                            class.range,
                            format!(
                                "The reference engine runs only the linux Daytona class; a {} sandbox cannot run yet",
                                class.value
                            ),
                        );
                    }
                    match &runtime.image {
                        Some(Image::Published(_)) => {}
                        Some(Image::Build { build, .. }) => {
                            self.report(
                                Code::DaytonaImageRequired,
                                build.range,
                                "runtimes.daytona.image must name a published image to run; Daytona cannot build one",
                            );
                        }
                        None => {
                            self.report(
                                Code::DaytonaImageRequired,
                                runtime.provider.range,
                                "runtimes.daytona.image is required to run; the sandbox is created from this entry's own published image",
                            );
                        }
                    }
                }
                "local" if self.spec == 0 => {
                    if let Some(image) = top.entry("image") {
                        self.report(
                            Code::LocalRuntimeImage,
                            image.key_range,
                            "image is not supported with the local runtime",
                        );
                    }
                }
                "local" | "docker" | "e2b" => {}
                other => {
                    let message = format!("Unsupported runtime: {other}");
                    let fix = closest(other, fields::RUNTIME_PROVIDERS)
                        .map(|name| self.rename_fix(runtime.provider.range, name));
                    let diagnostic = self.report(Code::UnsupportedRuntime, runtime.provider.range, message);
                    if let Some(fix) = fix {
                        diagnostic.fixes.push(fix);
                    }
                }
            }
        }
        self.manifest.runtimes = runtimes;
    }

    /// `${NAME}` references in a header value, with ranges inside the source when they can be found there.
    pub(super) fn env_references(&self, value: &Spanned<String>) -> Vec<(String, TextRange)> {
        crate::env_refs::scalar_refs(self.text, &value.value, value.range)
            .into_iter()
            .map(|reference| (reference.name.to_owned(), reference.range.unwrap_or(value.range)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::catalog::ModelCatalog;
    use crate::diagnostic::Code;

    #[test]
    fn a_repeated_undeclared_reference_points_at_each_use() {
        let text = "spec: 1\nmcps:\n  - name: db\n    url: https://example.com/mcp\n    headers:\n      Authorization: Bearer ${A}-${A}\n";
        let parse = wb_syntax::parse_str(text);
        let (_, diagnostics) = super::super::check_manifest(
            Path::new("/r/.workbenches/p/workbench.yml"),
            &parse,
            ModelCatalog::embedded(),
        );
        let ranges: Vec<_> = diagnostics
            .iter()
            .filter(|d| d.code == Code::UndeclaredEnvReference)
            .map(|d| (d.range.start, &text[d.range.as_range()]))
            .collect();
        let first = text.find("${A}").expect("first");
        let second = text.rfind("${A}").expect("second");
        assert_eq!(ranges, [(first, "${A}"), (second, "${A}")]);
    }

    /// Applies the fix titled `title` of the first undeclared-reference diagnostic of `text`.
    fn fixed(text: &str, title: &str) -> Option<String> {
        let parse = wb_syntax::parse_str(text);
        let (_, diagnostics) = super::super::check_manifest(
            Path::new("/r/.workbenches/p/workbench.yml"),
            &parse,
            ModelCatalog::embedded(),
        );
        let diagnostic = diagnostics.iter().find(|d| d.code == Code::UndeclaredEnvReference)?;
        let fix = diagnostic.fixes.iter().find(|fix| fix.title == title)?;
        let mut out = text.to_owned();
        let mut edits = fix.edits.clone();
        edits.sort_by_key(|edit| std::cmp::Reverse(edit.range.start));
        for edit in edits {
            out.replace_range(edit.range.as_range(), &edit.new_text);
        }
        Some(out)
    }

    const HEAD: &str = "spec: 1\nmcps:\n  - name: db\n    url: https://example.com/mcp\n    headers:\n      Authorization: Bearer ${API_TOKEN}\n";

    #[test]
    fn declare_in_env_works_for_every_shape_of_env() {
        let declare = "Declare `API_TOKEN` in env";
        let block = format!("{HEAD}env:\n  OTHER:\n    required: false\nruntimes:\n  local: {{}}\n");
        assert_eq!(
            fixed(&block, declare).as_deref(),
            Some(format!("{HEAD}env:\n  OTHER:\n    required: false\n  API_TOKEN:\n    required: true\nruntimes:\n  local: {{}}\n").as_str())
        );
        let scaffold = format!("{HEAD}env: {{}}\nruntimes:\n  local: {{}}\n");
        assert_eq!(
            fixed(&scaffold, declare).as_deref(),
            Some(format!("{HEAD}env:\n  API_TOKEN:\n    required: true\nruntimes:\n  local: {{}}\n").as_str())
        );
        let flow = format!("{HEAD}env: {{ OTHER: {{ required: false }} }}\n");
        assert_eq!(
            fixed(&flow, declare).as_deref(),
            Some(format!("{HEAD}env: {{ OTHER: {{ required: false }}, API_TOKEN: {{ required: true }} }}\n").as_str())
        );
        let empty = format!("{HEAD}env:\nruntimes:\n  local: {{}}\n");
        assert_eq!(
            fixed(&empty, declare).as_deref(),
            Some(format!("{HEAD}env:\n  API_TOKEN:\n    required: true\nruntimes:\n  local: {{}}\n").as_str())
        );
        let absent = format!("{HEAD}runtimes:\n  local: {{}}\n");
        assert_eq!(
            fixed(&absent, declare).as_deref(),
            Some(format!("{HEAD}runtimes:\n  local: {{}}\nenv:\n  API_TOKEN:\n    required: true\n").as_str())
        );
    }

    #[test]
    fn a_misspelt_reference_is_offered_the_declared_name() {
        let text = format!("{HEAD}env:\n  API_TOKN:\n    required: true\n");
        let fixed = fixed(&text, "Change to `${API_TOKN}`").expect("rename fix");
        assert!(fixed.contains("Bearer ${API_TOKN}\n"), "{fixed}");
    }
}
