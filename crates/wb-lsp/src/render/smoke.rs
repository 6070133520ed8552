//! The lines a person reads for one smoke report: what `wb-lsp smoke` prints on a terminal (after its
//! `Checking NAME` line) and the `text` of each report `workbench.smoke` answers.

use wb_engine::{Smoke, SmokeStatus};

use super::{continued, printable};

/// `ready (provider)` or `required (how to sign in)`.
pub(crate) fn authentication(report: &Smoke) -> String {
    match &report.authentication {
        Some(a) if a.ready => format!("ready ({})", a.provider.clone().unwrap_or_default()),
        Some(a) => format!("required ({})", a.instruction.clone().unwrap_or_default()),
        None => String::new(),
    }
}

/// The runner executable smoke found, or nothing.
pub(crate) fn runner_path(report: &Smoke) -> &str {
    report.runner.as_ref().and_then(|r| r.path.as_deref()).unwrap_or_default()
}

/// The report for a person: whether the package is ready, its runner, tools, authentication, the requirements
/// checked and the warnings; for a package that cannot start, why. Every line starts with the package's name, so
/// the reports of several packages (and lines read out of context) say whose they are.
pub(crate) fn smoke_lines(report: &Smoke) -> Vec<String> {
    let name = printable(&report.workbench);
    let mut lines = match report.status {
        SmokeStatus::Failed => {
            let message = report.error.as_ref().map(|e| e.message.as_str()).unwrap_or_default();
            continued(&format!("{name} cannot start: "), message)
                .into_iter()
                .enumerate()
                .map(|(index, line)| if index == 0 { line } else { format!("{name}:{line}") })
                .collect()
        }
        SmokeStatus::Ready => vec![format!("{name} is ready")],
        SmokeStatus::NeedsAuth => vec![format!("{name} needs a connection")],
    };
    let mut detail = |text: String| lines.push(format!("{name}: {text}"));
    if report.status != SmokeStatus::Failed {
        detail(format!("runner {}", printable(runner_path(report))));
        detail(if report.tools.is_empty() {
            "no required tools".to_owned()
        } else {
            format!("{} tool(s)", report.tools.len())
        });
        detail(format!("auth {}", printable(&authentication(report))));
    }
    if let Some(requirements) = &report.requirements {
        for line in &requirements.checked {
            detail(format!("requirement {}", printable(line)));
        }
    }
    if let Some(sandbox) = &report.sandbox {
        let ending = if sandbox.destroyed { "and destroyed it" } else { "and could not destroy it" };
        detail(format!(
            "created {} sandbox {} from {} {ending}",
            printable(&sandbox.provider),
            printable(&sandbox.id),
            printable(&sandbox.template)
        ));
    }
    for warning in &report.warnings {
        detail(format!("warning: {}", printable(warning)));
    }
    lines
}

#[cfg(test)]
pub(crate) mod tests {
    use wb_engine::requirements::RequirementReport;
    use wb_engine::routing::Authentication;
    use wb_engine::{Smoke, SmokeError, SmokeRunner, SmokeStatus, SmokeTool, WorkspaceReport};

    use super::smoke_lines;

    /// A ready report with a runner, a tool, a checked and an unchecked requirement, a second workspace and a
    /// warning.
    pub(crate) fn report() -> Smoke {
        Smoke {
            status: SmokeStatus::Ready,
            workbench: "demo".into(),
            version: "1.0.0".into(),
            runtime: "local".into(),
            runner: Some(SmokeRunner {
                name: "opencode".into(),
                path: Some("/bin/opencode".into()),
                version: None,
                verified: None,
            }),
            tools: vec![SmokeTool { name: "sh".into(), path: "/bin/sh".into() }],
            authentication: Some(Authentication {
                ready: true,
                model: "openai/gpt-5.1".into(),
                provider: Some("openai".into()),
                route: Some("openai/gpt-5.1".into()),
                method: Some("environment".into()),
                variable: Some("OPENAI_API_KEY".into()),
                authenticated_providers: vec!["openai".into()],
                instruction: None,
            }),
            requirements: Some(RequirementReport {
                checked: vec!["cpu 2".into()],
                applied: Vec::new(),
                unchecked: vec!["disk_gb is not checked on the local runtime".into()],
            }),
            workspaces: vec![
                WorkspaceReport { name: "primary".into(), path: "/w".into(), access: "read-write".into() },
                WorkspaceReport { name: "docs".into(), path: "/d".into(), access: "read-only".into() },
            ],
            docker_engine: None,
            warnings: vec!["optional MCP disabled: db".into()],
            disabled_optional_mcps: vec!["db".into()],
            sandbox: None,
            error: None,
        }
    }

    #[test]
    fn ready_needs_auth_and_failed_reports() {
        assert_eq!(
            smoke_lines(&report()),
            [
                "demo is ready",
                "demo: runner /bin/opencode",
                "demo: 1 tool(s)",
                "demo: auth ready (openai)",
                "demo: requirement cpu 2",
                "demo: warning: optional MCP disabled: db"
            ]
        );
        let mut needs_auth = report();
        needs_auth.status = SmokeStatus::NeedsAuth;
        needs_auth.tools.clear();
        needs_auth.requirements = None;
        needs_auth.warnings = vec!["Set OPENAI_API_KEY".into()];
        if let Some(auth) = needs_auth.authentication.as_mut() {
            auth.ready = false;
            auth.instruction = Some("set OPENAI_API_KEY".into());
        }
        assert_eq!(
            smoke_lines(&needs_auth),
            [
                "demo needs a connection",
                "demo: runner /bin/opencode",
                "demo: no required tools",
                "demo: auth required (set OPENAI_API_KEY)",
                "demo: warning: Set OPENAI_API_KEY"
            ]
        );
        let failed = Smoke {
            status: SmokeStatus::Failed,
            runner: None,
            authentication: None,
            requirements: None,
            warnings: Vec::new(),
            error: Some(SmokeError { code: "smoke_failed", message: "no runner\n\u{1b}[2Jon PATH".into() }),
            ..report()
        };
        assert_eq!(smoke_lines(&failed), ["demo cannot start: no runner", "demo:  \\u{1b}[2Jon PATH"]);
    }
}
