//! The portable skill contract: a `SKILL.md` that opens with YAML frontmatter naming the skill (matching its
//! directory) and describing it.

use std::path::Path;

use wb_syntax::{Node, TextRange, Value};

use crate::diagnostic::{Code, Diagnostic};
use crate::manifest::Spanned;

/// One problem found in a `SKILL.md`, with its range in that file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillProblem {
    pub code: Code,
    pub range: TextRange,
    pub message: String,
}

/// What the frontmatter says, and what is wrong with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillCheck {
    pub name: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub problems: Vec<SkillProblem>,
}

/// Finds the frontmatter block: the text between an opening `---` line and the next `---` line.
/// Returns the range of the YAML inside.
pub fn frontmatter_range(text: &str) -> Option<TextRange> {
    let body_start = if text.starts_with("---\n") {
        4
    } else if text.starts_with("---\r\n") {
        5
    } else {
        return None;
    };
    let mut offset = body_start;
    for line in text[body_start..].split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if content == "---" {
            return Some(TextRange::new(body_start, offset));
        }
        offset += line.len();
    }
    None
}

/// What a `SKILL.md`'s frontmatter holds, parsed once whatever entries name the file (a package that names
/// one file from many skill entries, through links or repeats, has it read and parsed once): what
/// [`Frontmatter::judge`] needs to check it for each entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frontmatter {
    /// The range of the first line (where problems without a better place are reported).
    first_line: TextRange,
    shape: Shape,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// No `---` block at the start.
    Missing,
    /// The block is not valid YAML: the first error's range (in the file) and message.
    Invalid(TextRange, String),
    /// The block is not a mapping.
    NotObject,
    Fields {
        name: Field,
        description: Field,
    },
}

/// One field of the frontmatter: its trimmed non-empty string value, and where to report on it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Field {
    value: Option<String>,
    /// The value's range (the key's when the value is empty or the field is `description`).
    problem_range: TextRange,
    value_range: TextRange,
}

impl Frontmatter {
    /// Parses the frontmatter of a `SKILL.md` text.
    pub fn parse(text: &str) -> Frontmatter {
        let first_line = TextRange::new(0, text.find(['\n', '\r']).unwrap_or(text.len()));
        let Some(range) = frontmatter_range(text).filter(|range| !range.is_empty()) else {
            return Frontmatter { first_line, shape: Shape::Missing };
        };
        // Ranges from parsing the slice are shifted back into the file.
        let parsed = wb_syntax::parse_str(&text[range.as_range()]);
        let shift = |r: TextRange| TextRange::new(r.start + range.start, r.end + range.start);
        if let Some(error) = parsed.errors.first() {
            return Frontmatter { first_line, shape: Shape::Invalid(shift(error.range), error.message.clone()) };
        }
        let Some(Value::Mapping(mapping)) = parsed.root.as_ref().map(|node| &node.value) else {
            return Frontmatter { first_line, shape: Shape::NotObject };
        };
        let text_of = |node: Option<&Node>| -> Option<String> {
            node.and_then(Node::as_str).map(crate::rules::js_trim).filter(|s| !s.is_empty()).map(str::to_owned)
        };
        let name_entry = mapping.entry("name");
        let name_range = name_entry
            .map_or(first_line, |e| shift(if e.value.range.is_empty() { e.key_range } else { e.value.range }));
        let name =
            Field { value: text_of(name_entry.map(|e| &e.value)), problem_range: name_range, value_range: name_range };
        let description_entry = mapping.entry("description");
        let description = Field {
            value: text_of(description_entry.map(|e| &e.value)),
            problem_range: description_entry.map_or(first_line, |e| shift(e.key_range)),
            value_range: description_entry.map_or(first_line, |e| shift(e.value.range)),
        };
        Frontmatter { first_line, shape: Shape::Fields { name, description } }
    }

    /// Checks the frontmatter for one manifest entry: `value` is the entry as written (used in messages);
    /// `directory` is the basename of the skill directory.
    pub fn judge(&self, value: &str, directory: &str) -> SkillCheck {
        let (range, message) = match &self.shape {
            Shape::Fields { name, description } => return judge_fields(name, description, value, directory),
            Shape::Missing => (self.first_line, format!("Skill must begin with YAML frontmatter: {value}")),
            Shape::Invalid(range, error) => (*range, format!("Skill {value} frontmatter is not valid YAML: {error}")),
            Shape::NotObject => (self.first_line, format!("Skill {value} must be an object")),
        };
        SkillCheck {
            problems: vec![SkillProblem { code: Code::InvalidSkill, range, message }],
            ..SkillCheck::default()
        }
    }
}

/// The checks of a frontmatter that is a mapping: `name` and `description` present, the name a slug matching
/// the skill's directory.
fn judge_fields(name: &Field, description: &Field, value: &str, directory: &str) -> SkillCheck {
    let mut check = SkillCheck::default();
    match &name.value {
        None => check.problems.push(SkillProblem {
            code: Code::InvalidSkill,
            range: name.problem_range,
            message: format!("Skill {value} name must be a non-empty string"),
        }),
        Some(text) if !crate::rules::matches(crate::rules::slug(), text) => check.problems.push(SkillProblem {
            code: Code::InvalidName,
            range: name.problem_range,
            message: format!("Invalid skill name: {text}"),
        }),
        Some(text) => check.name = Some(Spanned::new(text.clone(), name.value_range)),
    }
    match &description.value {
        None => check.problems.push(SkillProblem {
            code: Code::InvalidSkill,
            range: description.problem_range,
            message: format!("Skill {value} description must be a non-empty string"),
        }),
        Some(text) => check.description = Some(Spanned::new(text.clone(), description.value_range)),
    }
    if let Some(name) = &check.name
        && name.value != directory
    {
        check.problems.push(SkillProblem {
            code: Code::SkillNameMismatch,
            range: name.range,
            message: format!("Skill name must match its directory: {}", name.value),
        });
    }
    check
}

/// Checks a `SKILL.md` text. `value` is the manifest entry as written (used in messages); `directory` is the
/// basename of the skill directory.
pub fn check_skill_text(text: &str, value: &str, directory: &str) -> SkillCheck {
    Frontmatter::parse(text).judge(value, directory)
}

/// Diagnostics for an open `SKILL.md`, located in that file (the language server shows them there).
pub fn skill_file_diagnostics(path: &Path, text: &str) -> Vec<Diagnostic> {
    let directory =
        path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let value = format!("./skills/{directory}");
    check_skill_text(text, &value, &directory)
        .problems
        .into_iter()
        .map(|problem| Diagnostic::new(problem.code, path, problem.range, problem.message))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_skill_with_crlf() {
        let check = check_skill_text(
            "---\r\nname: migrations\r\ndescription: Plans migrations.\r\n---\r\nBody\r\n",
            "./skills/migrations",
            "migrations",
        );
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        assert_eq!(check.name.map(|n| n.value).as_deref(), Some("migrations"));
    }

    #[test]
    fn every_rule_has_its_text() {
        let cases = [
            ("# no frontmatter\n", "Skill must begin with YAML frontmatter: ./s/x"),
            ("---\n- a\n---\n", "Skill ./s/x must be an object"),
            ("---\ndescription: d\n---\n", "Skill ./s/x name must be a non-empty string"),
            ("---\nname: Bad_Name\ndescription: d\n---\n", "Invalid skill name: Bad_Name"),
            ("---\nname: x\n---\n", "Skill ./s/x description must be a non-empty string"),
            ("---\nname: y\ndescription: d\n---\n", "Skill name must match its directory: y"),
        ];
        for (text, message) in cases {
            let check = check_skill_text(text, "./s/x", "x");
            assert_eq!(check.problems.first().map(|p| p.message.as_str()), Some(message), "{text:?}");
        }
    }
}
