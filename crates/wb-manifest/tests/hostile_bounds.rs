//! Hostile packages that try to make `check` (and the language server, which runs the same check) use memory
//! or time out of proportion to the manifest (issue 26, item 6). A `SKILL.md` named by hundreds of entries
//! (links to its directory, hard links, or the same entry repeated) is read and held once; "did you mean"
//! over hundreds of long folder names and hundreds of missing entries is bounded work, and still suggests the
//! names that are near. Work is counted (reads, bytes held, suggestion steps), never timed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wb_manifest::{Code, DiskCache, ModelCatalog, OsFileSystem, PackageReport, Recording, check_package};

/// A repository with one package whose manifest lists `skills` (as written), and nothing else of note.
fn package(skills: &[String]) -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let package = root.join(".workbenches/demo");
    std::fs::create_dir_all(package.join("skills")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let mut manifest = "spec: 1\nversion: 1.0.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
                        runtimes:\n  local: {}\nskills:\n"
        .to_owned();
    for skill in skills {
        manifest.push_str(&format!("  - {skill}\n"));
    }
    std::fs::write(package.join("workbench.yml"), manifest).unwrap();
    (temp, package)
}

/// A 1 MiB `SKILL.md` whose name does not match its directory, so every entry that names it gets a diagnostic
/// pointing into it (and the report must carry its text).
fn big_skill(dir: &Path) -> usize {
    std::fs::create_dir_all(dir).unwrap();
    let mut text = "---\nname: elsewhere\ndescription: A large skill.\n---\n".to_owned();
    while text.len() < 1024 * 1024 {
        text.push_str("Step by step, carefully, with every detail written down for the agent.\n");
    }
    std::fs::write(dir.join("SKILL.md"), &text).unwrap();
    text.len()
}

/// The bytes of file text the report holds: each distinct text once, as memory holds it.
fn bytes_held(report: &PackageReport) -> usize {
    let mut seen = HashSet::new();
    report.sources.values().filter(|text| seen.insert(Arc::as_ptr(text) as *const u8)).map(|text| text.len()).sum()
}

/// How many times any `SKILL.md` was read.
fn skill_reads(recording: &Recording<'_>) -> usize {
    recording.dependencies().reads.iter().filter(|(path, _)| path.ends_with("SKILL.md")).map(|(_, n)| *n).sum()
}

fn check(package: &Path) -> (PackageReport, usize) {
    let disk = DiskCache::new();
    let recording = Recording::new(&disk);
    let report = check_package(&recording, &package.join("workbench.yml"), ModelCatalog::embedded());
    let reads = skill_reads(&recording);
    (report, reads)
}

fn mismatches(report: &PackageReport) -> usize {
    reported(report, Code::SkillNameMismatch)
}

/// How many diagnostics of `code` the report holds or counts: past the first
/// `wb_manifest::MAX_DIAGNOSTICS_PER_CODE` of a file, one diagnostic says how many more there are.
fn reported(report: &PackageReport, code: Code) -> usize {
    report
        .diagnostics
        .iter()
        .filter(|d| d.code == code)
        .map(|d| match d.message.strip_prefix("… and ") {
            Some(rest) => rest.split(' ').next().unwrap().replace(',', "").parse().unwrap(),
            None => 1,
        })
        .sum()
}

/// 600 skill directories that are links to one skill: each entry is still checked and reported (with its
/// related location in its own path), but the file is read once and the report holds its text once.
#[test]
fn a_skill_named_through_600_links_is_read_and_held_once() {
    let skills: Vec<String> = (0..600).map(|i| format!("./skills/s{i}")).collect();
    let (_temp, package) = package(&skills);
    let size = big_skill(&package.join("skills/big"));
    for i in 0..600 {
        symlink("big", package.join(format!("skills/s{i}"))).unwrap();
    }
    let (report, reads) = check(&package);
    assert_eq!(mismatches(&report), 600, "every entry is reported");
    let related: HashSet<&Path> =
        report.diagnostics.iter().flat_map(|d| &d.related).map(|related| related.path.as_path()).collect();
    let shown = wb_manifest::MAX_DIAGNOSTICS_PER_CODE;
    assert!(related.len() >= shown, "each entry shown points into its own path: {}", related.len());
    assert!(related.iter().all(|path| report.sources.contains_key(*path)), "every path has its text");
    assert_eq!(reads, 1, "the file is read once");
    let manifest = report.sources[&report.manifest_path].len();
    assert_eq!(bytes_held(&report), size + manifest, "one copy of the skill's text");
}

/// The same entry 600 times: one read, one text, and the duplicate names reported.
#[test]
fn a_skill_entry_repeated_600_times_is_read_and_held_once() {
    let skills: Vec<String> = (0..600).map(|_| "./skills/big".to_owned()).collect();
    let (_temp, package) = package(&skills);
    let size = big_skill(&package.join("skills/big"));
    let (report, reads) = check(&package);
    assert_eq!(mismatches(&report), 600);
    assert_eq!(reported(&report, Code::DuplicateName), 599);
    assert_eq!(reads, 1, "the file is read once");
    let manifest = report.sources[&report.manifest_path].len();
    assert_eq!(bytes_held(&report), size + manifest);
}

/// Hard links have real paths of their own, so each is read, but a text already held is not held again.
#[test]
fn hard_links_to_one_skill_are_held_once() {
    let skills: Vec<String> = (0..50).map(|i| format!("./skills/h{i}")).collect();
    let (_temp, package) = package(&skills);
    let size = big_skill(&package.join("skills/big"));
    for i in 0..50 {
        let dir = package.join(format!("skills/h{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::hard_link(package.join("skills/big/SKILL.md"), dir.join("SKILL.md")).unwrap();
    }
    let (report, _) = check(&package);
    assert_eq!(mismatches(&report), 50);
    let manifest = report.sources[&report.manifest_path].len();
    assert_eq!(bytes_held(&report), size + manifest, "one copy of the skill's text");
}

/// A deterministic stream of lower-case names.
struct Names(u64);

impl Names {
    fn next(&mut self, length: usize) -> String {
        (0..length)
            .map(|_| {
                self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                char::from(b'a' + ((self.0 >> 33) % 26) as u8)
            })
            .collect()
    }
}

/// The fixes' titles of the `missing-skill-manifest` diagnostics, in manifest order.
fn renames(report: &PackageReport) -> Vec<Option<String>> {
    report
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::MissingSkillManifest)
        .map(|d| d.fixes.iter().map(|f| f.title.clone()).find(|title| title.starts_with("Change to")))
        .collect()
}

/// 500 folders with 200-character names beside 200 entries that name none of them: the suggestions cost a
/// bounded number of steps (on the old code every pair computed a full 201 × 201 table: four billion cells,
/// 144 s in a debug build), and the two entries that are typos of existing folders still get them.
#[test]
fn did_you_mean_over_500_long_names_and_200_missing_entries_is_bounded() {
    let mut names = Names(7);
    let folders: Vec<String> = (0..500).map(|_| names.next(200)).collect();
    let random: Vec<String> = (0..198).map(|_| format!("./skills/{}", names.next(200))).collect();
    let mut skills = Vec::new();
    // Two typos: a letter dropped from one folder's name, two letters swapped in another's.
    let dropped = format!("{}{}", &folders[17][..100], &folders[17][101..]);
    let mut swapped: Vec<char> = folders[420].chars().collect();
    swapped.swap(50, 51);
    let swapped: String = swapped.into_iter().collect();
    skills.push(format!("./skills/{dropped}"));
    skills.push(format!("./skills/{swapped}"));
    // First, so they are among the diagnostics the report shows (the first 100 of the code).
    skills.extend(random);
    let (_temp, report, steps) = check_with_folders(&skills, &folders);
    assert_eq!(reported(&report, Code::MissingSkillManifest), 200, "every missing entry is reported");
    let renames = renames(&report);
    assert_eq!(renames[0].as_deref(), Some(format!("Change to `./skills/{}`", folders[17]).as_str()));
    assert_eq!(renames[1].as_deref(), Some(format!("Change to `./skills/{}`", folders[420]).as_str()));
    assert!(renames[2..].iter().all(Option::is_none), "random names are near nothing");
    // 100,000 pairs: each dismissed in a few steps by length and character counts, or its distance computed
    // within the band only.
    assert!(steps < 1_000_000, "{steps} steps");
}

/// Checks a package listing `skills` beside the skill folders `folders`, and counts the suggestion steps the
/// check took (on this thread: the steps counted are this check's).
fn check_with_folders(skills: &[String], folders: &[String]) -> (tempfile::TempDir, wb_manifest::PackageReport, u64) {
    let (temp, package) = package(skills);
    for folder in folders {
        std::fs::create_dir_all(package.join("skills").join(folder)).unwrap();
    }
    let before = wb_manifest::suggestion_steps();
    let report = check_package(&OsFileSystem, &package.join("workbench.yml"), ModelCatalog::embedded());
    let steps = wb_manifest::suggestion_steps() - before;
    (temp, report, steps)
}

/// Names made to defeat every cheap filter (same length, same characters, one long common middle) cost at most
/// the pass's budget: the entries are all reported, the suggestions stop when it is spent.
#[test]
fn did_you_mean_that_defeats_the_filters_stops_at_the_budget() {
    let middle = "ab".repeat(100);
    let folders: Vec<String> = (0..500).map(|i| format!("{:03}{middle}{:03}", i, 999 - i)).collect();
    let skills: Vec<String> = (0..200).map(|i| format!("./skills/{:03}{middle}{:03}", 999 - i, i)).collect();
    let (_temp, report, steps) = check_with_folders(&skills, &folders);
    assert_eq!(reported(&report, Code::MissingSkillManifest), 200, "every missing entry is reported");
    assert!(steps <= wb_manifest::SUGGESTION_BUDGET, "{steps} steps");
}
