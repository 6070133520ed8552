//! "Did you mean" helpers: the closest known names within a small edit distance, for fixes and messages.

use wb_syntax::Mapping;

/// The allowed names a mapping does not use yet (the candidates of "did you mean"), computed once per mapping.
pub(super) fn absent_names<'n>(allowed: &[&'n str], mapping: &Mapping) -> Vec<&'n str> {
    let present: rustc_hash::FxHashSet<&str> = mapping.entries.iter().map(|e| e.key.as_str()).collect();
    allowed.iter().copied().filter(|name| !present.contains(name)).collect()
}

/// The closest candidate within a small edit distance, for "did you mean" fixes.
pub(crate) fn closest<'c>(value: &str, candidates: &[&'c str]) -> Option<&'c str> {
    nearest(value, candidates, 1).into_iter().next()
}

/// The closest candidate, or else the only candidate that extends the value at a word boundary (`claude` →
/// `claude-code`): for names people shorten, such as runners.
pub(crate) fn closest_or_extension<'c>(value: &str, candidates: &[&'c str]) -> Option<&'c str> {
    closest(value, candidates).or_else(|| {
        let value = value.to_ascii_lowercase();
        let mut extensions = candidates.iter().copied().filter(|candidate| {
            value.len() >= 2
                && candidate.strip_prefix(value.as_str()).is_some_and(|rest| rest.starts_with(['-', '_', '.']))
        });
        let first = extensions.next()?;
        extensions.next().is_none().then_some(first)
    })
}

/// Up to `limit` candidates within a small edit distance of the value, nearest first. Separators (`-`, `.`,
/// `_`) are interchangeable: a value that differs from a candidate only in them is nearest of all.
pub(crate) fn nearest<'c>(value: &str, candidates: &[&'c str], limit: usize) -> Vec<&'c str> {
    let value = value.to_ascii_lowercase();
    let allowed = match value.chars().count() {
        0..=3 => 1,
        4..=12 => 2,
        _ => 3,
    };
    let unified = unify_separators(&value);
    let mut ranked: Vec<(usize, usize, &str)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(order, candidate)| {
            if unify_separators(candidate) == unified {
                return Some((0, order, *candidate));
            }
            let distance = edit_distance(&value, &candidate.to_ascii_lowercase());
            if distance > allowed {
                return None;
            }
            Some((distance + 1, order, *candidate))
        })
        .collect();
    ranked.sort_unstable();
    ranked.into_iter().take(limit).map(|(_, _, candidate)| candidate).collect()
}

fn unify_separators(text: &str) -> String {
    text.chars().map(|ch| if matches!(ch, '.' | '_') { '-' } else { ch.to_ascii_lowercase() }).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 3 {
        return usize::MAX;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let value = (previous[j] + cost).min(previous[j + 1] + 1).min(current[j] + 1);
            current.push(value);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use crate::models::ModelCatalog;

    #[test]
    fn closest_suggests_small_typos_only() {
        assert_eq!(super::closest("desciption", &["description", "name"]), Some("description"));
        assert_eq!(super::closest("zzz", &["description", "name"]), None);
    }

    #[test]
    fn a_shortened_runner_gets_its_full_name() {
        let runners = ["opencode", "claude-code", "pi"];
        assert_eq!(super::closest_or_extension("claude", &runners), Some("claude-code"));
        assert_eq!(super::closest_or_extension("open-code", &runners), Some("opencode"));
        assert_eq!(super::closest_or_extension("codex", &runners), None);
        assert_eq!(super::closest_or_extension("a", &["a-b", "a-c"]), None);
    }

    #[test]
    fn model_ids_are_suggested_across_separators_and_typos() {
        let catalog = ModelCatalog::embedded();
        assert_eq!(catalog.nearest_models("anthropic/claude-sonnet-4-5").first(), Some(&"anthropic/claude-sonnet-4.5"));
        assert_eq!(catalog.nearest_models("openai/gpt-5.6-tera").first(), Some(&"openai/gpt-5.6-terra"));
        assert!(catalog.nearest_models("acme/coder-large").is_empty());
    }
}
