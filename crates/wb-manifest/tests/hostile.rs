//! Hostile packages (issue 13): every path a package names is judged by where it really leads. A link out of
//! the repository (or, for `runner_config`, the package), into `/proc`, `/sys` or `/dev`, or a special file is
//! `path-outside-boundary` at the path in the manifest, and no byte of the file behind it reaches the report.
//! A `SKILL.md` over the size limit is `file-too-large`, found without reading it (the bytes the process read
//! are counted).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wb_manifest::{Code, ModelCatalog, OsFileSystem, PackageReport, Recording, check_path};

/// How many bytes this process has read through system calls so far (`rchar`, every thread counted).
fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines().find_map(|line| line.strip_prefix("rchar: ")?.trim().parse().ok()).expect("rchar")
}

/// A string that appears only in files outside the repository.
const MARKER: &str = "HOSTILE-MARKER-7f3a";

struct Repo {
    _temp: tempfile::TempDir,
    /// The repository root.
    root: PathBuf,
    /// The package directory `.workbenches/demo`.
    package: PathBuf,
    /// A directory outside the repository (a stand-in for `$HOME`).
    home: PathBuf,
}

impl Repo {
    fn new(extra: &str) -> Repo {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let root = base.join("repo");
        let package = root.join(".workbenches/demo");
        let home = base.join("home");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("secret.txt"), format!("{MARKER}\n")).unwrap();
        let manifest = format!(
            "spec: 1\nversion: 1.0.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n{extra}runtimes:\n  local: {{}}\n"
        );
        let manifest = if extra.contains("instructions:") {
            manifest
        } else {
            format!("instructions: ./instructions.md\n{manifest}")
        };
        std::fs::write(package.join("workbench.yml"), manifest).unwrap();
        std::fs::write(package.join("instructions.md"), "Do the work.\n").unwrap();
        Repo { _temp: temp, root, package, home }
    }

    fn check(&self) -> PackageReport {
        let mut reports = check_path(&OsFileSystem, &self.root, ModelCatalog::embedded());
        assert_eq!(reports.len(), 1);
        reports.remove(0)
    }

    /// A skill manifest whose frontmatter is broken, so a checker that reads it reports into its text.
    fn outside_skill(&self, name: &str) -> PathBuf {
        let dir = self.home.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("---\nname: [{MARKER}\n---\n{MARKER}\n")).unwrap();
        dir
    }
}

/// The report's boundary diagnostics as (message, text covered in the manifest).
fn boundary_errors(report: &PackageReport) -> Vec<(String, String)> {
    let text = report.sources.get(&report.manifest_path).map(|t| t.to_string()).unwrap_or_default();
    report
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::PathOutsideBoundary)
        .inspect(|d| assert_eq!(d.path, report.manifest_path, "{d:?}"))
        .map(|d| (d.message.clone(), text.get(d.range.as_range()).unwrap_or_default().to_owned()))
        .collect()
}

/// Nothing from outside the repository is in the report: no source text, message or related location.
fn assert_no_outside_bytes(report: &PackageReport) {
    for (path, text) in &report.sources {
        assert!(!text.contains(MARKER), "{} carries an outside file's text", path.display());
    }
    let rendered = format!("{:?}", report.diagnostics);
    assert!(!rendered.contains(MARKER), "{rendered}");
}

#[test]
fn instructions_through_a_link_to_proc_self_are_refused() {
    let repo = Repo::new("instructions: ./p/environ\n");
    symlink("/proc/self", repo.package.join("p")).unwrap();
    let report = repo.check();
    assert_eq!(
        boundary_errors(&report),
        [("instructions must not resolve into /proc, /sys or /dev: ./p/environ".to_owned(), "./p/environ".to_owned())]
    );
    let environment = report.sources.values().any(|text| text.contains("PATH="));
    assert!(!environment, "the process environment is in the report");
}

#[test]
fn instructions_linked_out_of_the_repository_are_refused() {
    let repo = Repo::new("instructions: ./docs/secret.txt\n");
    symlink(&repo.home, repo.package.join("docs")).unwrap();
    let report = repo.check();
    assert_eq!(
        boundary_errors(&report),
        [(
            "instructions resolves outside the repository through a symbolic link: ./docs/secret.txt".to_owned(),
            "./docs/secret.txt".to_owned()
        )]
    );
    assert_no_outside_bytes(&report);
}

#[test]
fn a_fifo_or_dev_zero_as_instructions_is_refused_without_blocking() {
    let repo = Repo::new("instructions: ./pipe.md\n");
    nix::unistd::mkfifo(&repo.package.join("pipe.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let started = Instant::now();
    let report = repo.check();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        boundary_errors(&report),
        [("instructions must not be a device, FIFO or socket: ./pipe.md".to_owned(), "./pipe.md".to_owned())]
    );

    let repo = Repo::new("instructions: ./zero.md\n");
    symlink("/dev/zero", repo.package.join("zero.md")).unwrap();
    let report = repo.check();
    assert_eq!(
        boundary_errors(&report),
        [("instructions must not resolve into /proc, /sys or /dev: ./zero.md".to_owned(), "./zero.md".to_owned())]
    );
}

#[test]
fn runner_config_below_a_linked_directory_is_refused() {
    let repo = Repo::new("runner_config: ./config/opencode.json\n");
    std::fs::write(repo.home.join("opencode.json"), format!("{{\"x\": \"{MARKER}\"")).unwrap();
    symlink(&repo.home, repo.package.join("config")).unwrap();
    let report = repo.check();
    assert_eq!(
        boundary_errors(&report),
        [(
            "runner_config resolves outside the package through a symbolic link: ./config/opencode.json".to_owned(),
            "./config/opencode.json".to_owned()
        )]
    );
    assert_no_outside_bytes(&report);
}

#[test]
fn runner_config_with_a_link_inside_is_still_refused() {
    let repo = Repo::new("runner_config: ./config\n");
    std::fs::create_dir_all(repo.package.join("config")).unwrap();
    symlink(repo.home.join("secret.txt"), repo.package.join("config/opencode.json")).unwrap();
    let report = repo.check();
    assert!(report.diagnostics.iter().any(|d| d.code == Code::RunnerConfigSymlink), "{:?}", report.diagnostics);
    assert_no_outside_bytes(&report);
}

#[test]
fn a_skill_directory_linked_out_of_the_repository_is_refused() {
    let repo = Repo::new("skills:\n  - ./skills/review\n");
    std::fs::create_dir_all(repo.package.join("skills")).unwrap();
    symlink(repo.outside_skill("review"), repo.package.join("skills/review")).unwrap();
    let report = repo.check();
    assert_eq!(
        boundary_errors(&report),
        [(
            "skills resolves outside the repository through a symbolic link: ./skills/review".to_owned(),
            "./skills/review".to_owned()
        )]
    );
    assert_no_outside_bytes(&report);
}

#[test]
fn a_skill_manifest_linked_out_of_the_repository_is_refused() {
    let repo = Repo::new("skills:\n  - ./skills/review\n");
    let dir = repo.package.join("skills/review");
    std::fs::create_dir_all(&dir).unwrap();
    symlink(repo.outside_skill("review").join("SKILL.md"), dir.join("SKILL.md")).unwrap();
    let report = repo.check();
    assert_eq!(
        boundary_errors(&report),
        [(
            "skills resolves outside the repository through a symbolic link: ./skills/review/SKILL.md".to_owned(),
            "./skills/review".to_owned()
        )]
    );
    assert_no_outside_bytes(&report);
    assert_eq!(report.sources.len(), 1, "only the manifest's text is carried");
}

#[test]
fn a_link_in_a_skill_that_leaves_the_repository_is_refused() {
    let repo = Repo::new("skills:\n  - ./skills/review\n");
    let dir = repo.package.join("skills/review/docs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(repo.package.join("skills/review/SKILL.md"), "---\nname: review\ndescription: Reviews.\n---\n")
        .unwrap();
    std::fs::write(repo.root.join("guide.md"), "In the repository.\n").unwrap();
    symlink(repo.root.join("guide.md"), dir.join("guide.md")).unwrap();
    assert!(repo.check().diagnostics.is_empty(), "a link that stays inside is fine");
    symlink(repo.home.join("secret.txt"), dir.join("notes.md")).unwrap();
    let report = repo.check();
    assert_eq!(
        boundary_errors(&report),
        [(
            "skills resolves outside the repository through a symbolic link: ./skills/review/docs/notes.md".to_owned(),
            "./skills/review".to_owned()
        )]
    );
    assert_no_outside_bytes(&report);
}

#[test]
fn an_oversized_skill_manifest_is_reported_without_being_read() {
    let repo = Repo::new("skills:\n  - ./skills/big\n");
    let dir = repo.package.join("skills/big");
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::create(dir.join("SKILL.md")).unwrap();
    // 20 MB, sparse: the frontmatter is valid, the rest is a hole.
    std::io::Write::write_all(&mut &file, b"---\nname: big\ndescription: Big.\n---\n").unwrap();
    file.set_len(20 * 1024 * 1024).unwrap();
    let recording = Recording::new(&OsFileSystem);
    let before = bytes_read();
    let mut reports = check_path(&recording, &repo.root, ModelCatalog::embedded());
    let read = bytes_read() - before;
    assert_eq!(reports.len(), 1);
    let report = reports.remove(0);
    // Asked for once, through the bounded read, which refuses it by its size: the process read none of its
    // 20 MB, nor the 4 MiB a bounded read may hold (the other tests running meanwhile read a few KiB).
    let reads = recording.dependencies().reads;
    assert_eq!(reads.get(&dir.join("SKILL.md")), Some(&1), "{reads:?}");
    assert!(read < 1024 * 1024, "the check read {read} bytes");
    let too_large: Vec<&str> =
        report.diagnostics.iter().filter(|d| d.code == Code::FileTooLarge).map(|d| d.message.as_str()).collect();
    assert_eq!(
        too_large,
        [format!(
            "Skill manifest is too large: 20971520 bytes (the limit is 4 MiB): {}",
            dir.join("SKILL.md").display()
        )]
    );
    assert_eq!(report.sources.len(), 1, "the skill's text is not carried");
}

/// The instructions are sized before they are read (the prose checks read them): one over the limit is reported
/// at the value without being read, for the file itself and for a link to it inside the repository (whose
/// target's size counts), on the disk and through the pass cache.
#[test]
fn oversized_instructions_are_reported_by_their_size() {
    let repo = Repo::new("instructions: ./docs/long.md\n");
    let docs = repo.package.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let file = std::fs::File::create(repo.root.join("long.md")).unwrap();
    file.set_len(20 * 1024 * 1024).unwrap();
    symlink(repo.root.join("long.md"), docs.join("long.md")).unwrap();
    let expected = format!(
        "Instructions file is too large: 20971520 bytes (the limit is 4 MiB): {}",
        docs.join("long.md").display()
    );
    let too_large = |report: &PackageReport| -> Vec<String> {
        report.diagnostics.iter().filter(|d| d.code == Code::FileTooLarge).map(|d| d.message.clone()).collect()
    };
    assert_eq!(too_large(&repo.check()), std::slice::from_ref(&expected));
    let cached = check_path(&wb_manifest::DiskCache::new(), &repo.root, ModelCatalog::embedded());
    assert_eq!(too_large(&cached[0]), [expected]);

    // At the limit it is accepted.
    file.set_len(4 * 1024 * 1024).unwrap();
    assert!(repo.check().is_valid(), "{:?}", repo.check().diagnostics);
    assert!(cached[0].sources.len() == 1, "the instructions' text is not carried");
}

#[test]
fn image_build_paths_linked_out_of_the_repository_are_refused() {
    let repo = Repo::new("");
    std::fs::write(repo.home.join("Dockerfile"), "FROM scratch\n").unwrap();
    symlink(&repo.home, repo.package.join("home")).unwrap();
    let manifest = std::fs::read_to_string(repo.package.join("workbench.yml")).unwrap().replace(
        "runtimes:\n  local: {}\n",
        "runtimes:\n  docker:\n    image:\n      build: ./home/Dockerfile\n      context: ./home\n",
    );
    std::fs::write(repo.package.join("workbench.yml"), manifest).unwrap();
    let report = repo.check();
    let messages: Vec<String> = boundary_errors(&report).into_iter().map(|(message, _)| message).collect();
    assert_eq!(
        messages,
        [
            "runtimes.docker.image.build resolves outside the repository through a symbolic link: ./home/Dockerfile",
            "runtimes.docker.image.context resolves outside the repository through a symbolic link: ./home",
        ]
    );
}

#[test]
fn a_manifest_linked_out_of_the_repository_is_not_read() {
    let repo = Repo::new("");
    let outside = repo.home.join("workbench.yml");
    std::fs::write(&outside, format!("{MARKER}: [\n")).unwrap();
    let manifest = repo.package.join("workbench.yml");
    std::fs::remove_file(&manifest).unwrap();
    symlink(&outside, &manifest).unwrap();
    let report = repo.check();
    assert_eq!(report.diagnostics.len(), 1, "{:?}", report.diagnostics);
    assert_eq!(report.diagnostics[0].code, Code::PathOutsideBoundary);
    assert_no_outside_bytes(&report);
}

#[test]
fn links_that_stay_inside_the_repository_keep_working() {
    let repo =
        Repo::new("instructions: ./linked.md\nskills:\n  - ./skills/shared\nrunner_config: ./config/opencode.json\n");
    symlink("instructions.md", repo.package.join("linked.md")).unwrap();
    let shared = repo.root.join("shared/shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("SKILL.md"), "---\nname: shared\ndescription: Shared.\n---\n").unwrap();
    std::fs::create_dir_all(repo.package.join("skills")).unwrap();
    symlink(&shared, repo.package.join("skills/shared")).unwrap();
    // A link below the package that stays in it.
    std::fs::create_dir_all(repo.package.join("real-config")).unwrap();
    std::fs::write(repo.package.join("real-config/opencode.json"), "{}").unwrap();
    symlink("real-config", repo.package.join("config")).unwrap();
    let report = repo.check();
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
}

#[test]
fn the_package_boundary_function_judges_real_paths() {
    use wb_manifest::boundary::{Escape, resolve_within};
    let repo = Repo::new("");
    symlink(&repo.home, repo.package.join("out")).unwrap();
    let inside = resolve_within(&OsFileSystem, &repo.package.join("instructions.md"), &repo.root).unwrap();
    assert!(inside.exists && inside.real.starts_with(&repo.root));
    let missing = resolve_within(&OsFileSystem, &repo.package.join("new/file.md"), &repo.root).unwrap();
    assert!(!missing.exists);
    // A file that does not exist yet below a link out is judged by where the link leads.
    assert_eq!(resolve_within(&OsFileSystem, &repo.package.join("out/new.md"), &repo.root), Err(Escape::Outside));
    assert_eq!(resolve_within(&OsFileSystem, Path::new("/proc/self/environ"), Path::new("/")), Err(Escape::Pseudo));
}
