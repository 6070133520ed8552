//! "Did you mean" helpers: the closest known name within a small edit distance.

use wb_syntax::Mapping;

/// The allowed names a mapping does not use yet (the candidates of "did you mean"), computed once per mapping.
pub(super) fn absent_names<'n>(allowed: &[&'n str], mapping: &Mapping) -> Vec<&'n str> {
    let present: std::collections::HashSet<&str> = mapping.entries.iter().map(|e| e.key.as_str()).collect();
    allowed.iter().copied().filter(|name| !present.contains(name)).collect()
}

/// The closest candidate within a small edit distance, for "did you mean" fixes.
pub(super) fn closest<'c>(value: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let value = value.to_ascii_lowercase();
    let limit = if value.len() <= 3 { 1 } else { 2 };
    candidates
        .iter()
        .map(|candidate| (edit_distance(&value, candidate), *candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 2 {
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
    #[test]
    fn closest_suggests_small_typos_only() {
        assert_eq!(super::closest("desciption", &["description", "name"]), Some("description"));
        assert_eq!(super::closest("zzz", &["description", "name"]), None);
    }
}
