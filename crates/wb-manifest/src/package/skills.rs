//! Skills on disk (engine fact b.2): each entry's directory and its `SKILL.md`, the links in it, duplicate
//! names. A file named by many entries (through links, or the same entry repeated) is read, parsed and held
//! once: by its real path, and by its content for copies and hard links.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::PackageChecks;
use crate::boundary::{Escape, first_escaping_link};
use crate::diagnostic::{Code, Fix, TextEdit};
use crate::fs::FileKind;
use crate::manifest::{Manifest, Spanned};
use crate::skill::Frontmatter;

/// The `SKILL.md` files and skill directories a package's checks have met, so each is read and walked once.
#[derive(Default)]
pub(crate) struct SkillFiles {
    /// By real path: the file's text and its frontmatter.
    by_real_path: HashMap<PathBuf, (Arc<str>, Arc<Frontmatter>)>,
    /// By content: one text and one parse for files that hold the same bytes under different real paths.
    by_content: HashMap<Arc<str>, Arc<Frontmatter>>,
    /// By real path of a skill directory: the first link in it that leaves the boundary.
    escaping_links: HashMap<PathBuf, Option<(PathBuf, Escape)>>,
}

impl PackageChecks<'_> {
    pub(super) fn skills(&mut self, manifest: &Manifest, root: Option<&Path>) {
        let mut names: Vec<Spanned<String>> = Vec::new();
        for skill in &manifest.skills {
            let Some(dir) = self.resolve(skill, "skills", root) else { continue };
            let skill_file = dir.join("SKILL.md");
            let file_value = Spanned::new(format!("{}/SKILL.md", skill.value.trim_end_matches('/')), skill.range);
            if !self.within(skill, "skills", &dir, false) {
                continue;
            }
            if !self.within(&file_value, "skills", &skill_file, false) {
                continue;
            }
            self.skill_links(skill, &dir);
            let directory = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let (text, frontmatter) = match self.fs.kind_followed(&skill_file) {
                Ok(FileKind::File) => match self.skill_file(skill, &skill_file) {
                    Some(read) => read,
                    None => continue,
                },
                _ => {
                    self.missing_skill(skill, &dir, &skill_file, &directory);
                    continue;
                }
            };
            self.prose_files.add_skill(&skill_file, &text);
            let check = frontmatter.judge(&skill.value, &directory);
            for problem in &check.problems {
                let message = problem.message.clone();
                let related_range = problem.range;
                let fix = (problem.code == Code::SkillNameMismatch).then(|| Fix {
                    title: format!("Rename the skill to `{directory}` in SKILL.md"),
                    creates: Vec::new(),
                    edits: vec![TextEdit {
                        path: skill_file.clone(),
                        range: related_range,
                        new_text: directory.clone(),
                    }],
                    // Renaming the directory instead is as good a fix.
                    safe: false,
                });
                let diagnostic = self.report(problem.code, skill.range, message.clone());
                diagnostic.related.push(crate::Related { path: skill_file.clone(), range: related_range, message });
                diagnostic.fixes.extend(fix);
            }
            if !check.problems.is_empty() {
                // The report holds this text once however many paths point into it.
                self.sources.push((skill_file.clone(), text));
            }
            if let Some(name) = check.name {
                if let Some(first) = names.iter().find(|seen| seen.value == name.value) {
                    let first_range = first.range;
                    let path = self.manifest_path.to_owned();
                    self.report(Code::DuplicateName, skill.range, format!("Duplicate skill name: {}", name.value))
                        .related
                        .push(crate::Related {
                            path,
                            range: first_range,
                            message: "first skill with this name".to_owned(),
                        });
                } else {
                    names.push(Spanned::new(name.value, skill.range));
                }
            }
        }
    }

    /// The text and frontmatter of a `SKILL.md` (a regular file inside the boundary): read once per real path,
    /// held once per content. `None` when it was reported as too large or unreadable.
    fn skill_file(&mut self, skill: &Spanned<String>, skill_file: &Path) -> Option<(Arc<str>, Arc<Frontmatter>)> {
        let real = self.fs.real_path(skill_file).unwrap_or_else(|_| skill_file.to_owned());
        if let Some((text, frontmatter)) = self.skill_files.by_real_path.get(&real) {
            return Some((Arc::clone(text), Arc::clone(frontmatter)));
        }
        let bytes = match self.read_bounded(skill_file, skill.range, "Skill manifest") {
            Ok(bytes) => bytes,
            Err(None) => return None,
            Err(Some(error)) => {
                self.report(
                    Code::IoError,
                    skill.range,
                    format!("Skill manifest is unreadable: {}: {error}", skill_file.display()),
                );
                return None;
            }
        };
        // Text as read (no copy), or with what is not UTF-8 replaced.
        let text =
            String::from_utf8(bytes).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
        let files = &mut self.skill_files;
        let (text, frontmatter) = match files.by_content.get_key_value(text.as_str()) {
            Some((kept, frontmatter)) => (Arc::clone(kept), Arc::clone(frontmatter)),
            None => {
                let frontmatter = Arc::new(Frontmatter::parse(&text));
                let text = Arc::<str>::from(text);
                files.by_content.insert(Arc::clone(&text), Arc::clone(&frontmatter));
                (text, frontmatter)
            }
        };
        files.by_real_path.insert(real, (Arc::clone(&text), Arc::clone(&frontmatter)));
        Some((text, frontmatter))
    }

    /// A skill entry whose `SKILL.md` does not exist: the fixes create it, or rename the entry to a skill
    /// directory with a near name.
    fn missing_skill(&mut self, skill: &Spanned<String>, dir: &Path, skill_file: &Path, directory: &str) {
        let rename = self.nearest_fix(skill, dir, FileKind::Directory);
        let fix = Fix {
            title: format!("Create {}/SKILL.md", skill.value.trim_end_matches('/')),
            creates: vec![(
                skill_file.to_owned(),
                format!(
                    "---\nname: {directory}\ndescription: Describe when to use this skill.\n---\n\n# {directory}\n"
                ),
            )],
            edits: Vec::new(),
            safe: false,
        };
        self.report(
            Code::MissingSkillManifest,
            skill.range,
            format!("Skill manifest does not exist: {}", skill_file.display()),
        )
        .fixes
        .extend(rename.into_iter().chain([fix]));
    }

    /// Reports the first link in a skill directory that leaves the boundary: staging the skill would refuse it.
    /// A directory is walked once however many entries name it.
    fn skill_links(&mut self, skill: &Spanned<String>, dir: &Path) {
        let (boundary, name) = self.boundary(false);
        let boundary = boundary.to_owned();
        let real = self.fs.real_path(dir).unwrap_or_else(|_| dir.to_owned());
        let found = match self.skill_files.escaping_links.get(&real) {
            Some(found) => found.clone(),
            None => {
                let found = first_escaping_link(self.fs, dir, &boundary);
                self.skill_files.escaping_links.insert(real, found.clone());
                found
            }
        };
        if let Some((link, escape)) = found {
            let value = format!("{}/{}", skill.value.trim_end_matches('/'), link.display());
            self.report(Code::PathOutsideBoundary, skill.range, escape.message("skills", &value, name));
        }
    }
}
