//! Steers of a run's running turn (`send --steer`), one file each under `runs/<id>/steer/`, taken by the run's
//! owner in the order they were given: it hands each to the runner's own steering (`input.accepted`), says when
//! the runner took it (`input.delivered`), and refuses one it cannot deliver (`input.rejected`): a steer is never
//! a later follow-up in disguise.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::RunDir;
use super::layout::{read_bounded, write_private};

/// The most bytes a steer's file may hold.
const STEER_LIMIT: u64 = 1024 * 1024;

/// One steer: its id (`in_` and eight hex digits, what its events name) and its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steer {
    pub id: String,
    pub text: String,
}

/// Gives run `dir` a steer; returns its id.
pub fn steer(dir: &RunDir, text: &str) -> std::io::Result<String> {
    let steers = dir.steers();
    wb_outcomes::create_private_dir(&steers)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let steer = Steer { id: format!("in_{}", wb_outcomes::random_hex(4)), text: text.to_owned() };
    let bytes = serde_json::to_vec(&steer).map_err(std::io::Error::other)?;
    write_private(&steers.join(format!("{nanos:024}-{}.json", steer.id)), &bytes)?;
    Ok(steer.id)
}

/// Takes the steers given so far, oldest first (their files removed); one that cannot be read is dropped.
pub fn take_steers(dir: &RunDir) -> Vec<Steer> {
    let Ok(entries) = std::fs::read_dir(dir.steers()) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let bytes = read_bounded(&file, STEER_LIMIT);
            let _ = std::fs::remove_file(&file);
            serde_json::from_slice(&bytes.ok()?).ok()
        })
        .collect()
}

/// Takes steer `id` back, if its owner has not taken it yet; whether it did.
pub fn withdraw(dir: &RunDir, id: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir.steers()) else { return false };
    let suffix = format!("-{id}.json");
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(&suffix))
        .any(|entry| std::fs::remove_file(entry.path()).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steers_are_taken_once_in_the_order_they_were_given() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = RunDir::new(home.path(), "wb_0123456789abcdef01234567");
        assert!(take_steers(&dir).is_empty());
        let first = steer(&dir, "first").unwrap_or_default();
        let second = steer(&dir, "second").unwrap_or_default();
        let taken = take_steers(&dir);
        assert_eq!(
            taken.iter().map(|s| (s.id.as_str(), s.text.as_str())).collect::<Vec<_>>(),
            [(first.as_str(), "first"), (second.as_str(), "second")]
        );
        assert!(take_steers(&dir).is_empty(), "taken once");
        let third = steer(&dir, "third").unwrap_or_default();
        assert!(withdraw(&dir, &third) && !withdraw(&dir, &third), "withdrawn once");
        assert!(take_steers(&dir).is_empty());
    }
}
