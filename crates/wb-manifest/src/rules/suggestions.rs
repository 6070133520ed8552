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

/// The work one check may spend on "did you mean", in steps (a candidate looked at, a character of it scanned
/// in eight, a cell of the edit-distance table): a few milliseconds. A manifest that asks for more (thousands
/// of misspelt paths beside thousands of long names) gets suggestions until the budget is spent, then none.
pub const PASS_BUDGET: u64 = 4_000_000;

thread_local! {
    /// The steps left in the pass running on this thread (`None`: no pass, each search has its own budget).
    static REMAINING: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    /// Every step taken on this thread, for tests.
    static TAKEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Runs one check's pass with [`PASS_BUDGET`] for every suggestion it makes (a nested pass has its own).
pub(crate) fn in_pass<T>(pass: impl FnOnce() -> T) -> T {
    let outer = REMAINING.with(|remaining| remaining.replace(Some(PASS_BUDGET)));
    let result = pass();
    REMAINING.with(|remaining| remaining.set(outer));
    result
}

/// The steps of "did you mean" work taken on the calling thread so far (tests compare it before and after a
/// check run on their own thread).
#[doc(hidden)]
pub fn suggestion_steps() -> u64 {
    TAKEN.with(std::cell::Cell::get)
}

/// The budget one search draws on: the pass's, or its own when no pass runs.
struct Budget {
    own: Option<u64>,
}

impl Budget {
    fn new() -> Budget {
        let in_pass = REMAINING.with(|remaining| remaining.get().is_some());
        Budget { own: (!in_pass).then_some(PASS_BUDGET) }
    }

    /// Takes `steps`, or says the budget is spent.
    fn take(&mut self, steps: u64) -> bool {
        let granted = match &mut self.own {
            Some(own) => take_from(own, steps),
            None => REMAINING.with(|remaining| {
                let mut left = remaining.get().unwrap_or(0);
                let granted = take_from(&mut left, steps);
                remaining.set(Some(left));
                granted
            }),
        };
        if granted {
            TAKEN.with(|taken| taken.set(taken.get().saturating_add(steps)));
        }
        granted
    }
}

fn take_from(left: &mut u64, steps: u64) -> bool {
    if *left < steps {
        *left = 0;
        return false;
    }
    *left -= steps;
    true
}

/// Characters folded into this many counts: the difference of two texts' counts bounds their edit distance
/// from below, so most candidates are dismissed without an edit-distance table.
const BUCKETS: usize = 32;

/// A text as the search compares it: lower-cased characters, and their counts by bucket.
struct Prepared {
    chars: Vec<char>,
    buckets: [u32; BUCKETS],
}

impl Prepared {
    fn of(text: &str, into: &mut Prepared) {
        into.chars.clear();
        into.buckets = [0; BUCKETS];
        for ch in text.chars() {
            let ch = ch.to_ascii_lowercase();
            into.chars.push(ch);
            into.buckets[(ch as usize) % BUCKETS] += 1;
        }
    }

    /// A lower bound of the edit distance between the two texts: each edit changes at most one count up and
    /// one down.
    fn bucket_distance(&self, other: &Prepared) -> usize {
        let (mut more, mut fewer) = (0usize, 0usize);
        for (a, b) in self.buckets.iter().zip(&other.buckets) {
            if a > b {
                more += (a - b) as usize;
            } else {
                fewer += (b - a) as usize;
            }
        }
        more.max(fewer)
    }

    /// Equal once `.` and `_` are read as `-`.
    fn same_but_separators(&self, other: &Prepared) -> bool {
        let unify = |ch: char| if matches!(ch, '.' | '_') { '-' } else { ch };
        self.chars.len() == other.chars.len()
            && self.chars.iter().zip(&other.chars).all(|(a, b)| unify(*a) == unify(*b))
    }
}

/// Names prepared once for many searches (the entries of a directory, for every missing path in it).
pub(crate) struct Candidates {
    items: Vec<(String, Prepared)>,
}

impl Candidates {
    pub(crate) fn new(names: Vec<String>) -> Candidates {
        let items = names
            .into_iter()
            .map(|name| {
                let mut prepared = Prepared { chars: Vec::new(), buckets: [0; BUCKETS] };
                Prepared::of(&name, &mut prepared);
                (name, prepared)
            })
            .collect();
        Candidates { items }
    }

    /// The nearest name but `except`, within a small edit distance, as [`closest`] finds it.
    pub(crate) fn closest_except(&self, value: &str, except: &str) -> Option<&str> {
        let items = self
            .items
            .iter()
            .filter(|(name, _)| name != except)
            .map(|(name, prepared)| (name.as_str(), Some(prepared)));
        rank(value, items, 1).into_iter().next()
    }
}

/// Up to `limit` candidates within a small edit distance of the value, nearest first. Separators (`-`, `.`,
/// `_`) are interchangeable: a value that differs from a candidate only in them is nearest of all. The search
/// draws on the pass's budget ([`PASS_BUDGET`]): candidates far in length or in characters are dismissed
/// before any edit distance is computed, and the distance is computed only as far as the allowed one.
pub(crate) fn nearest<'c>(value: &str, candidates: &[&'c str], limit: usize) -> Vec<&'c str> {
    rank(value, candidates.iter().map(|candidate| (*candidate, None)), limit)
}

/// [`nearest`] over candidates that may be prepared already.
fn rank<'c>(
    value: &str,
    candidates: impl Iterator<Item = (&'c str, Option<&'c Prepared>)>,
    limit: usize,
) -> Vec<&'c str> {
    let mut budget = Budget::new();
    let mut wanted = Prepared { chars: Vec::new(), buckets: [0; BUCKETS] };
    Prepared::of(value, &mut wanted);
    let length = wanted.chars.len();
    let allowed = match length {
        0..=3 => 1,
        4..=12 => 2,
        _ => 3,
    };
    let mut scratch = Prepared { chars: Vec::new(), buckets: [0; BUCKETS] };
    let mut table = Vec::new();
    let mut ranked: Vec<(usize, usize, &str)> = Vec::new();
    for (order, (text, prepared)) in candidates.enumerate() {
        if !budget.take(1) {
            break;
        }
        // A text of `n` bytes holds between `n / 4` and `n` characters.
        if text.len() + allowed < length || text.len().div_ceil(4) > length + allowed {
            continue;
        }
        let candidate = match prepared {
            Some(prepared) => prepared,
            None => {
                if !budget.take(text.len() as u64 / 8 + 1) {
                    break;
                }
                Prepared::of(text, &mut scratch);
                &scratch
            }
        };
        if candidate.chars.len().abs_diff(length) > allowed {
            continue;
        }
        if !budget.take(BUCKETS as u64 / 8) {
            break;
        }
        if candidate.same_but_separators(&wanted) {
            ranked.push((0, order, text));
            continue;
        }
        if candidate.bucket_distance(&wanted) > allowed {
            continue;
        }
        match bounded_distance(&wanted.chars, &candidate.chars, allowed, &mut table, &mut budget) {
            Distance::Within(distance) => ranked.push((distance + 1, order, text)),
            Distance::Beyond => {}
            Distance::OutOfBudget => break,
        }
    }
    ranked.sort_unstable();
    ranked.into_iter().take(limit).map(|(_, _, candidate)| candidate).collect()
}

enum Distance {
    Within(usize),
    Beyond,
    OutOfBudget,
}

/// The edit distance of `a` and `b` when it is at most `allowed`: only the cells within `allowed` of the
/// diagonal are computed, a row at a time, and the computation stops at the first row whose cells all exceed
/// `allowed`. Each row is paid for from the budget before it is computed.
fn bounded_distance(a: &[char], b: &[char], allowed: usize, table: &mut Vec<usize>, budget: &mut Budget) -> Distance {
    // The common ends cost nothing to match.
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    if a.len().abs_diff(b.len()) > allowed {
        return Distance::Beyond;
    }
    let over = allowed + 1;
    let width = b.len() + 1;
    // Two rows of the table; cells outside the band hold `over`.
    table.clear();
    table.resize(2 * width, over);
    for (j, cell) in table.iter_mut().take(width.min(over)).enumerate() {
        *cell = j;
    }
    let band = 2 * allowed as u64 + 1;
    for i in 1..=a.len() {
        if !budget.take(band) {
            return Distance::OutOfBudget;
        }
        let (previous, current) = table.split_at_mut(width);
        let (previous, current) = if i % 2 == 1 { (&*previous, current) } else { (&*current, previous) };
        let low = i.saturating_sub(allowed).max(1);
        let high = (i + allowed).min(b.len());
        // The cells just outside the band read as `over` (this row's left one now, its right one for the next
        // row); the band itself is written below.
        current[0] = if i <= allowed { i } else { over };
        current[low - 1] = if low == 1 { current[0] } else { over };
        if let Some(right) = current.get_mut(high + 1) {
            *right = over;
        }
        let mut row_min = current[0];
        for j in low..=high {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let value = (previous[j - 1] + cost).min(previous[j] + 1).min(current[j - 1] + 1).min(over);
            current[j] = value;
            row_min = row_min.min(value);
        }
        if row_min > allowed {
            return Distance::Beyond;
        }
    }
    let last = if a.len() % 2 == 1 { &table[width..] } else { &table[..width] };
    match last[b.len()] {
        distance if distance <= allowed => Distance::Within(distance),
        _ => Distance::Beyond,
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::ModelCatalog;

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
