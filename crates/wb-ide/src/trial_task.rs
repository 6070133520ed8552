//! Completion and hover in a trial task's `task.json`: the fields of the task, its fixture (by kind), a gate and
//! a criterion, each with what it means; the fixture kinds as values. The checks are `wb_manifest::trial_task`'s.

use wb_manifest::trial_task::{CRITERION_FIELDS, FIXTURE_KINDS, GATE_FIELDS, TASK_FIELDS};
use wb_syntax::{Mapping, Node, TextRange};

use crate::completion::{CompletionItem, CompletionKind, CompletionOptions};
use crate::hover::Hover;

/// Where in a task a position is: which object's fields apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place<'a> {
    Task,
    /// The fixture, with its kind when it names a known one.
    Fixture(Option<&'a str>),
    Gate,
    Criterion,
}

const FIELD_DOCS: &[(&str, &str)] = &[
    ("kind", "The fixture's kind: `empty` (an empty repository), `dir` (a directory beside the task) or `git`."),
    ("path", "The fixture directory, relative to the task's directory."),
    ("url", "The repository to clone."),
    ("commit", "The full 40-character commit to check out."),
    ("subdir", "The directory of the repository the attempt works in."),
    ("overlay", "A directory, relative to the task's directory, copied over the fixture."),
    ("run", "The gate's shell command: exit status 0 passes."),
    ("timeoutSeconds", "How long the gate may run; past it the attempt is inconclusive."),
    ("text", "What a reviewer looks for."),
];

/// The fields that apply at `place`, each with its documentation.
fn fields(place: Place<'_>) -> Vec<(&'static str, &'static str)> {
    let doc = |name: &str| FIELD_DOCS.iter().find(|(field, _)| *field == name).map_or("", |(_, doc)| *doc);
    let named = |names: &[&'static str]| -> Vec<(&'static str, &'static str)> {
        names
            .iter()
            .map(|name| match *name {
                "id" if place == Place::Gate => ("id", "The gate's id, unique in the task."),
                "id" => ("id", "The criterion's id, unique in the task."),
                "title" => ("title", "One line on what the gate checks."),
                other => (other, doc(other)),
            })
            .collect()
    };
    match place {
        Place::Task => TASK_FIELDS.to_vec(),
        Place::Fixture(kind) => {
            let all: &[&'static str] = &["kind", "path", "url", "commit", "subdir", "overlay"];
            let names = FIXTURE_KINDS.iter().find(|(name, _)| Some(*name) == kind).map_or(all, |(_, fields)| *fields);
            named(names)
        }
        Place::Gate => named(GATE_FIELDS),
        Place::Criterion => named(CRITERION_FIELDS),
    }
}

/// The innermost object of the task holding `offset`, and its place.
fn locate(root: &Node, offset: usize) -> Option<(&Mapping, Place<'_>)> {
    let top = root.as_mapping().filter(|_| contains(root.range, offset))?;
    for entry in &top.entries {
        let value = &entry.value;
        if !contains(value.range, offset) {
            continue;
        }
        match entry.key.as_str() {
            "fixture" => {
                let map = value.as_mapping()?;
                let kind = map.get("kind").and_then(Node::as_str);
                return Some((map, Place::Fixture(kind)));
            }
            "gates" | "criteria" => {
                let place = if entry.key == "gates" { Place::Gate } else { Place::Criterion };
                let item = value.as_sequence()?.iter().find(|item| contains(item.range, offset))?;
                return Some((item.as_mapping()?, place));
            }
            _ => return None,
        }
    }
    Some((top, Place::Task))
}

/// Inside a value: past its first byte, up to its end (a flow collection's range may stop before its closing
/// bracket).
fn contains(range: TextRange, offset: usize) -> bool {
    range.start < offset && offset <= range.end
}

/// The string (or the word) being typed at `offset`: its range, quotes included.
fn token(text: &str, offset: usize) -> TextRange {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let mut start = offset.min(bytes.len());
    while start > 0 && word(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = offset.min(bytes.len());
    while end < bytes.len() && word(bytes[end]) {
        end += 1;
    }
    if start > 0 && bytes[start - 1] == b'"' {
        start -= 1;
        if end < bytes.len() && bytes[end] == b'"' {
            end += 1;
        }
    }
    TextRange::new(start, end)
}

/// The value a field gets when it is inserted, as a snippet and as plain text.
fn template(field: &str) -> (&'static str, &'static str) {
    match field {
        "version" => ("1", "1"),
        "fixture" => ("{\"kind\": \"${1|empty,dir,git|}\"}", "{\"kind\": \"empty\"}"),
        "timeoutMinutes" => ("${1:30}", "30"),
        "timeoutSeconds" => ("${1:300}", "300"),
        "setup" => ("[\"$1\"]", "[]"),
        "gates" => ("[{\"id\": \"$1\", \"run\": \"$2\"}]", "[{\"id\": \"\", \"run\": \"\"}]"),
        "criteria" => ("[{\"id\": \"$1\", \"text\": \"$2\"}]", "[{\"id\": \"\", \"text\": \"\"}]"),
        "kind" => ("\"${1|empty,dir,git|}\"", "\"empty\""),
        _ => ("\"$1\"", "\"\""),
    }
}

/// Completion items at `offset` of a task's text: the fields the object there does not have yet, or the fixture
/// kinds in the value of `kind`. A text that does not parse offers the task's fields.
pub fn task_completions(
    text: &str,
    parse: &wb_syntax::Parse,
    offset: usize,
    options: CompletionOptions,
) -> Vec<CompletionItem> {
    let root = parse.root.as_ref().filter(|_| parse.errors.is_empty());
    let replace = token(text, offset);
    let located = root.and_then(|root| locate(root, offset));
    if let Some((map, Place::Fixture(_))) = located
        && let Some(kind) = map.entry("kind")
        && (contains(kind.value.range, offset) || kind.value.range.start == offset || kind.value.range.end == offset)
    {
        return FIXTURE_KINDS
            .iter()
            .enumerate()
            .map(|(index, (name, _))| CompletionItem {
                label: (*name).to_owned(),
                kind: CompletionKind::Enum,
                detail: Some("fixture kind".to_owned()),
                documentation: FIELD_DOCS.first().map(|(_, doc)| (*doc).to_owned()),
                insert_text: format!("\"{name}\""),
                snippet: false,
                replace: kind.value.range,
                sort_text: format!("{index:02}"),
                deprecated: false,
            })
            .collect();
    }
    let (present, place) = match located {
        Some((map, place)) => (map.entries.iter().map(|e| e.key.to_string()).collect::<Vec<_>>(), place),
        // Being typed (a trailing comma, an open string): the object at `offset` read from the text.
        None => match scan(text, offset) {
            Some(scanned) => scanned,
            None => return Vec::new(),
        },
    };
    fields(place)
        .into_iter()
        .enumerate()
        .filter(|(_, (name, _))| {
            !present.iter().any(|key| key == name)
                || text.get(replace.start..replace.end).is_some_and(|t| t.trim_matches('"') == *name)
        })
        .map(|(index, (name, doc))| {
            let (snippet, plain) = template(name);
            let value = if options.snippets { snippet } else { plain };
            CompletionItem {
                label: name.to_owned(),
                kind: CompletionKind::Field,
                detail: None,
                documentation: Some(doc.to_owned()),
                insert_text: format!("\"{name}\": {value}"),
                snippet: options.snippets,
                replace,
                sort_text: format!("{index:02}"),
                deprecated: false,
            }
        })
        .collect()
}

/// For a text that does not parse: the keys of the object `offset` is in, and its place (from the keys the
/// objects and arrays around it are the values of). `None` where no field applies (inside a string value, or in
/// an array of strings).
fn scan(text: &str, offset: usize) -> Option<(Vec<String>, Place<'static>)> {
    // Each open object or array: the key it is the value of, and (objects) the keys it has so far.
    let mut stack: Vec<(Option<String>, Option<Vec<String>>)> = Vec::new();
    let mut last_string: Option<String> = None;
    let mut key: Option<String> = None;
    let mut kind: Option<&'static str> = None;
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < offset.min(bytes.len()) {
        match bytes[at] {
            b'"' => {
                let start = at + 1;
                at = start;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
                last_string = text.get(start..at.min(bytes.len())).map(str::to_owned);
                if key.as_deref() == Some("kind") && stack.len() == 2 {
                    kind =
                        FIXTURE_KINDS.iter().map(|(name, _)| *name).find(|name| last_string.as_deref() == Some(*name));
                }
            }
            b':' => {
                key = last_string.take();
                if let (Some((_, Some(keys))), Some(name)) = (stack.last_mut(), &key) {
                    keys.push(name.clone());
                }
            }
            b'{' => stack.push((key.take(), Some(Vec::new()))),
            b'[' => stack.push((key.take(), None)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => key = None,
            _ => {}
        }
        at += 1;
    }
    let (_, keys) = stack.last()?;
    let keys = keys.clone()?;
    let place = match stack.iter().rev().find_map(|(key, _)| key.as_deref()) {
        None => Place::Task,
        Some("fixture") if stack.len() == 2 => Place::Fixture(kind),
        Some("gates") if stack.len() == 3 => Place::Gate,
        Some("criteria") if stack.len() == 3 => Place::Criterion,
        Some(_) => return None,
    };
    Some((keys, place))
}

/// The documentation of the field whose key is at `offset`.
pub fn task_hover(root: &Node, offset: usize) -> Option<Hover> {
    let inside = |range: TextRange| range.start <= offset && offset <= range.end;
    let mut map = root.as_mapping()?;
    let mut place = Place::Task;
    if let Some((inner, inner_place)) = locate(root, offset) {
        map = inner;
        place = inner_place;
    }
    let entry = map.entries.iter().find(|entry| inside(entry.key_range))?;
    let (name, doc) = fields(place).into_iter().find(|(name, _)| *name == entry.key)?;
    Some(Hover { markdown: format!("**`{name}`**\n\n{doc}"), range: entry.key_range })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, marker: &str) -> (String, usize) {
        let offset = text.find(marker).unwrap_or(0);
        (text.replacen(marker, "", 1), offset)
    }

    fn labels(items: &[CompletionItem]) -> Vec<&str> {
        items.iter().map(|item| item.label.as_str()).collect()
    }

    #[test]
    fn the_fields_missing_at_each_place_are_offered() {
        let plain = CompletionOptions { snippets: false };
        let (text, offset) = at("{\"version\": 1, \"id\": \"x\", |}", "|");
        let parse = wb_syntax::parse_str(&text);
        let items = task_completions(&text, &parse, offset, plain);
        assert_eq!(labels(&items), ["title", "workbench", "fixture", "timeoutMinutes", "setup", "gates", "criteria"]);
        assert_eq!(items[0].insert_text, "\"title\": \"\"");

        let (text, offset) = at("{\"gates\": [{\"id\": \"t\", |}]}", "|");
        let parse = wb_syntax::parse_str(&text);
        let items = task_completions(&text, &parse, offset, CompletionOptions { snippets: true });
        assert_eq!(labels(&items), ["title", "run", "timeoutSeconds"]);
        assert_eq!(items[1].insert_text, "\"run\": \"$1\"");

        let (text, offset) = at("{\"fixture\": {\"kind\": \"git\", |}}", "|");
        let parse = wb_syntax::parse_str(&text);
        let items = task_completions(&text, &parse, offset, plain);
        assert_eq!(labels(&items), ["url", "commit", "subdir", "overlay"]);
    }

    #[test]
    fn the_fixture_kinds_are_offered_in_its_value() {
        let (text, offset) = at("{\"fixture\": {\"kind\": \"d|\"}}", "|");
        let parse = wb_syntax::parse_str(&text);
        let items = task_completions(&text, &parse, offset, CompletionOptions { snippets: false });
        assert_eq!(labels(&items), ["empty", "dir", "git"]);
        let replaced = &text[items[1].replace.start..items[1].replace.end];
        assert_eq!((replaced, items[1].insert_text.as_str()), ("\"d\"", "\"dir\""));
    }

    #[test]
    fn a_key_being_typed_is_replaced_whole() {
        // Unparsable while typed: the task's fields, the partial key replaced with its quotes.
        let (text, offset) = at("{\"version\": 1, \"ti|", "|");
        let items =
            task_completions(&text, &wb_syntax::parse_str(&text), offset, CompletionOptions { snippets: false });
        let title = items.iter().find(|item| item.label == "title").unwrap_or_else(|| panic!("{items:?}"));
        assert_eq!(&text[title.replace.start..title.replace.end], "\"ti");
    }

    #[test]
    fn hover_documents_a_key_at_every_place() {
        let text = "{\"timeoutMinutes\": 5, \"gates\": [{\"id\": \"t\", \"run\": \"true\"}], \"fixture\": {\"kind\": \"dir\", \"path\": \"f\"}}";
        let parse = wb_syntax::parse_str(text);
        let root = parse.root.unwrap_or_else(|| panic!("parsed"));
        let hover = |needle: &str| task_hover(&root, text.find(needle).unwrap_or(0) + 2).map(|h| h.markdown);
        assert!(hover("\"timeoutMinutes\"").is_some_and(|m| m.contains("in minutes")));
        assert!(hover("\"run\"").is_some_and(|m| m.contains("exit status 0")));
        assert!(hover("\"path\"").is_some_and(|m| m.contains("relative to the task's directory")));
        assert!(hover("\"true\"").is_none(), "a value has no hover");
    }
}
