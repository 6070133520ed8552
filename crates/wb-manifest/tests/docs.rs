//! `docs/diagnostics.md` documents every diagnostic code: one `## <code>` section per code, in the order of
//! `Code::ALL`, each stating its default severity on a line `Severity: <severity>` and showing a `yaml` example
//! that triggers it (unless the problem needs more than a manifest to show).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use wb_manifest::{Code, ModelCatalog, OsFileSystem, check_manifest_bytes};

/// Codes whose problem cannot be shown by a manifest alone: it needs a path given to the checker, other files,
/// bytes a Markdown page cannot hold, or an impractically large document. Their sections describe the trigger
/// in words or with the other file's content.
const NOT_SELF_CONTAINED: &[Code] = &[
    Code::ByteOrderMark,
    Code::InvalidUtf8,
    Code::NestingTooDeep,
    Code::TooManyNodes,
    Code::FileTooLarge,
    Code::PathNotFound,
    Code::NoWorkbenches,
    Code::OutsideWorkbenchesDirectory,
    Code::PathOutsideBoundary,
    Code::InvalidSkill,
    Code::SkillNameMismatch,
    Code::RunnerConfigSymlink,
    Code::RunnerConfigCredentialFile,
    Code::RunnerConfigInvalidJson,
    Code::RunnerConfigLiteralCredential,
    Code::RunnerConfigShape,
    Code::RunnerConfigContent,
    Code::DockerfileCopiesCredential,
    Code::IoError,
    Code::ProseUndeclaredTool,
    Code::ProseUnlistedSkill,
    Code::ProseUndeclaredEnv,
];

struct Section {
    heading: String,
    severities: Vec<String>,
    /// The first fenced block whose info string is exactly `yaml`.
    example: Option<String>,
}

fn sections() -> Vec<Section> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut sections: Vec<Section> = Vec::new();
    let mut fence: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some((info, body)) = fence.as_mut() {
            if line.trim_start().starts_with("```") {
                if let (Some(section), "yaml") = (sections.last_mut(), info.as_str())
                    && section.example.is_none()
                {
                    let mut example = body.join("\n");
                    example.push('\n');
                    section.example = Some(example);
                }
                fence = None;
            } else {
                body.push(line);
            }
            continue;
        }
        if let Some(info) = line.trim_start().strip_prefix("```") {
            fence = Some((info.trim().to_owned(), Vec::new()));
        } else if let Some(heading) = line.strip_prefix("## ") {
            sections.push(Section { heading: heading.trim().to_owned(), severities: Vec::new(), example: None });
        } else if let Some(severity) = line.strip_prefix("Severity: ")
            && let Some(section) = sections.last_mut()
        {
            section.severities.push(severity.trim().to_owned());
        }
    }
    assert!(fence.is_none(), "docs/diagnostics.md ends inside a code block");
    sections
}

#[test]
fn every_code_has_a_section_and_every_section_is_a_code() {
    let sections = sections();
    let headings: Vec<&str> = sections.iter().map(|s| s.heading.as_str()).collect();
    let mut problems = Vec::new();
    for code in Code::ALL {
        match headings.iter().filter(|h| **h == code.as_str()).count() {
            0 => problems.push(format!("no `## {code}` section")),
            1 => {}
            n => problems.push(format!("{n} `## {code}` sections")),
        }
    }
    for heading in &headings {
        if Code::from_name(heading).is_none() {
            problems.push(format!("`## {heading}` is not a diagnostic code"));
        }
    }
    let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    if problems.is_empty() && headings != codes {
        problems.push("the sections are not in the order of Code::ALL".to_owned());
    }
    assert!(problems.is_empty(), "docs/diagnostics.md:\n{}", problems.join("\n"));
}

#[test]
fn every_section_states_the_default_severity() {
    let mut problems = Vec::new();
    for section in sections() {
        let Some(code) = Code::from_name(&section.heading) else { continue };
        match section.severities.as_slice() {
            [severity] if severity == code.severity().as_str() => {}
            [severity] => problems.push(format!(
                "{code}: the page says `Severity: {severity}`, the code's severity is {}",
                code.severity().as_str()
            )),
            [] => problems.push(format!("{code}: no `Severity: ...` line")),
            _ => problems.push(format!("{code}: more than one `Severity: ...` line")),
        }
    }
    assert!(problems.is_empty(), "docs/diagnostics.md:\n{}", problems.join("\n"));
}

#[test]
fn every_example_triggers_its_code() {
    let manifest = std::env::temp_dir().join("wb-docs-examples/.workbenches/demo/workbench.yml");
    let mut problems = Vec::new();
    for section in sections() {
        let Some(code) = Code::from_name(&section.heading) else { continue };
        if NOT_SELF_CONTAINED.contains(&code) {
            continue;
        }
        let Some(example) = &section.example else {
            problems.push(format!("{code}: no ```yaml example"));
            continue;
        };
        let report = check_manifest_bytes(&OsFileSystem, &manifest, example.as_bytes(), ModelCatalog::embedded());
        if !report.diagnostics.iter().any(|d| d.code == code) {
            let found: Vec<String> = report.diagnostics.iter().map(|d| format!("{}: {}", d.code, d.message)).collect();
            problems.push(format!("{code}: the example does not trigger it; it gives {found:#?}"));
        }
    }
    assert!(problems.is_empty(), "docs/diagnostics.md:\n{}", problems.join("\n"));
}
