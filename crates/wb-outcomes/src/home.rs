//! Where the Workbench home is: the one rule the engine (which stores a run's outcome there) and every front
//! end (which looks the outcome up) must share, or a lookup misses what a run stored.

use std::ffi::OsString;
use std::path::PathBuf;

/// The Workbench home for an environment (`variable` looks a name up in it): a non-empty `WORKBENCH_HOME`,
/// else `.workbench` in a non-empty `HOME`, else `workbench` in the temporary directory. An empty value counts
/// as unset, as it does for `HOME` everywhere.
pub fn workbench_home(variable: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let set = |name: &str| variable(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    set("WORKBENCH_HOME")
        .or_else(|| set("HOME").map(|home| home.join(".workbench")))
        .unwrap_or_else(|| std::env::temp_dir().join("workbench"))
}

/// The Workbench home of this process's environment ([`workbench_home`]).
pub fn default_home() -> PathBuf {
    workbench_home(|name| std::env::var_os(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_of(pairs: &[(&str, &str)]) -> PathBuf {
        workbench_home(|name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(v)))
    }

    #[test]
    fn an_empty_workbench_home_counts_as_unset() {
        assert_eq!(home_of(&[("WORKBENCH_HOME", "/w"), ("HOME", "/h")]), PathBuf::from("/w"));
        assert_eq!(home_of(&[("WORKBENCH_HOME", ""), ("HOME", "/h")]), PathBuf::from("/h/.workbench"));
        assert_eq!(home_of(&[("HOME", "/h")]), PathBuf::from("/h/.workbench"));
        assert_eq!(home_of(&[("WORKBENCH_HOME", ""), ("HOME", "")]), std::env::temp_dir().join("workbench"));
        assert_eq!(home_of(&[]), std::env::temp_dir().join("workbench"));
    }
}
