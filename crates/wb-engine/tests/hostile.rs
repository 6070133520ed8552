//! Hostile packages (issue 13) against the engine: a path the package names that leads out of the repository
//! (or, for `runner_config`, the package) through a link never reaches the staged configuration, the system
//! prompt or a Docker build context. The dry run refuses such a package, and the functions that read and stage
//! package files at use time refuse a link that appeared after the checks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wb_engine::adapters::package_files::{self, Links};
use wb_engine::runtime::docker::context_archive;
use wb_engine::{EngineError, Options};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_testsupport::{TASK, World, minimal};

/// A string that appears only outside the repository.
const MARKER: &str = "HOSTILE-MARKER-91c2";

fn options(world: &World, package: &str) -> Options {
    let mut inherited = world.inherited();
    inherited.insert("OPENAI_API_KEY".to_owned(), "sk-openai-test-value".to_owned());
    common::options(world, format!(".workbenches/{package}"), TASK, inherited)
}

/// Dry-runs into `world.root/stage` and returns the error, after checking no staged file holds `needle`.
fn refused_dry_run(world: &World, package: &str, needle: &str) -> String {
    let stage = world.root.join("stage");
    let result = wb_engine::dry_run(&OsFileSystem, &options(world, package), Some(&stage), ModelCatalog::embedded());
    for file in files_below(&world.root.join("stage")) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(needle), "{} holds bytes from outside the repository", file.display());
    }
    match result {
        Ok(_) => panic!("the dry run accepted a package that leaves its boundary"),
        Err(error) => error.to_string(),
    }
}

fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}

/// A secret file in the stand-in `$HOME` (outside the repository).
fn home_secret(world: &World) -> PathBuf {
    let path = world.home.join("secret.txt");
    std::fs::write(&path, format!("{MARKER}\n")).unwrap();
    path
}

#[test]
fn instructions_through_proc_self_never_reach_the_system_prompt() {
    let world = World::new();
    let dir = world.package("env", &minimal("env", "opencode", "openai/gpt-5.6-terra", ""));
    let manifest = std::fs::read_to_string(dir.join("workbench.yml")).unwrap();
    std::fs::write(dir.join("workbench.yml"), manifest.replace("./instructions.md", "./p/environ")).unwrap();
    symlink("/proc/self", dir.join("p")).unwrap();
    // Any variable of this process: the environment is what must not be staged.
    let (name, value) = std::env::vars().find(|(_, value)| value.len() > 3).expect("an environment variable");
    let error = refused_dry_run(&world, "env", &format!("{name}={value}"));
    assert_eq!(error, "instructions must not resolve into /proc, /sys or /dev: ./p/environ");
}

#[test]
fn a_runner_config_directory_linked_out_of_the_package_is_never_staged() {
    let world = World::new();
    let dir = world.package("pi", &minimal("pi", "pi", "google/gemini-3-flash", "runner_config: ./pi\n"));
    let outside = world.home.join("pi-config");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("settings.json"), format!("{{\"note\": \"{MARKER}\"}}")).unwrap();
    symlink(&outside, dir.join("pi")).unwrap();
    let error = refused_dry_run(&world, "pi", MARKER);
    assert!(error.contains("runner_config must not contain symbolic links"), "{error}");

    // A directory above it linked out: the checks see through it.
    let dir = world.package("pi2", &minimal("pi2", "pi", "google/gemini-3-flash", "runner_config: ./cfg/pi-config\n"));
    symlink(&world.home, dir.join("cfg")).unwrap();
    let error = refused_dry_run(&world, "pi2", MARKER);
    assert_eq!(error, "runner_config resolves outside the package through a symbolic link: ./cfg/pi-config");
}

#[test]
fn staging_refuses_a_link_that_appears_in_runner_config_after_the_checks() {
    let world = World::new();
    let secret = home_secret(&world);
    let config = world.dir("repo/.workbenches/pkg/config");
    std::fs::write(config.join("settings.json"), "{}").unwrap();
    symlink(&secret, config.join("models.json")).unwrap();
    let package = world.repo.join(".workbenches/pkg");
    let target = world.dir("staged");
    let error = package_files::copy_tree(&package, &config, &target, Links::Refuse).unwrap_err();
    assert!(error.to_string().contains("symbolic link: models.json"), "{error}");
    assert!(!target.join("models.json").exists());
    // A linked runner_config directory: the walk starts at its real path and refuses it.
    let linked = package.join("linked");
    symlink(&world.home, &linked).unwrap();
    assert!(package_files::copy_tree(&package, &linked, &world.dir("staged2"), Links::Refuse).is_err());
}

#[test]
fn a_skill_directory_linked_out_of_the_repository_is_never_staged() {
    let world = World::new();
    let dir = world.package("sk", &minimal("sk", "opencode", "openai/gpt-5.6-terra", "skills:\n  - ./skills/review\n"));
    let outside = world.home.join("review");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("SKILL.md"), format!("---\nname: review\ndescription: {MARKER}\n---\n")).unwrap();
    std::fs::create_dir_all(dir.join("skills")).unwrap();
    symlink(&outside, dir.join("skills/review")).unwrap();
    let error = refused_dry_run(&world, "sk", MARKER);
    assert_eq!(error, "skills resolves outside the repository through a symbolic link: ./skills/review");
}

#[test]
fn a_link_inside_a_skill_is_copied_when_it_stays_inside_and_refused_when_it_leaves() {
    let world = World::new();
    let secret = home_secret(&world);
    world.package("sk", &minimal("sk", "opencode", "openai/gpt-5.6-terra", "skills:\n  - ./skills/review\n"));
    world.skill("sk", "review");
    let skill = world.repo.join(".workbenches/sk/skills/review");
    world.file("docs/guide.md", "In-repository guide.\n");
    symlink(world.repo.join("docs/guide.md"), skill.join("guide.md")).unwrap();
    let staged = world.dir("staged");
    package_files::copy_tree(&world.repo, &skill, &staged, Links::FollowInside).unwrap();
    assert_eq!(std::fs::read_to_string(staged.join("guide.md")).unwrap(), "In-repository guide.\n");
    assert!(staged.join("SKILL.md").is_file() && staged.join("reference.md").is_file());

    symlink(&secret, skill.join("notes.md")).unwrap();
    let staged = world.dir("staged2");
    let error = package_files::copy_tree(&world.repo, &skill, &staged, Links::FollowInside).unwrap_err();
    assert!(error.to_string().contains("leaves the repository: notes.md"), "{error}");
    assert!(files_below(&staged).iter().all(|file| !std::fs::read_to_string(file).unwrap().contains(MARKER)));
    // The dry run's checks stop at it before anything is staged.
    let error = refused_dry_run(&world, "sk", MARKER);
    assert_eq!(error, "skills resolves outside the repository through a symbolic link: ./skills/review/notes.md");
}

#[test]
fn a_fifo_or_dev_zero_is_never_read_as_a_package_file() {
    let world = World::new();
    let package = world.repo.join(".workbenches/pkg");
    std::fs::create_dir_all(&package).unwrap();
    let fifo = package.join("pipe.md");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let started = Instant::now();
    assert!(package_files::read_text(&world.repo, &fifo).is_err());
    symlink("/dev/zero", package.join("zero.md")).unwrap();
    assert!(package_files::read_text(&world.repo, &package.join("zero.md")).is_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    // A dry run with either as instructions is refused before anything is staged.
    for (name, file) in [("fifo", "./pipe.md"), ("zero", "./zero.md")] {
        let dir = world.package(name, &minimal(name, "opencode", "openai/gpt-5.6-terra", ""));
        let manifest = std::fs::read_to_string(dir.join("workbench.yml")).unwrap();
        std::fs::write(dir.join("workbench.yml"), manifest.replace("./instructions.md", file)).unwrap();
        if name == "fifo" {
            nix::unistd::mkfifo(&dir.join("pipe.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        } else {
            symlink("/dev/zero", dir.join("zero.md")).unwrap();
        }
        let _ = std::fs::remove_dir_all(world.root.join("stage"));
        let error = refused_dry_run(&world, name, "\0\0\0\0");
        assert!(error.starts_with("instructions must not"), "{error}");
    }
}

#[test]
fn an_oversized_instructions_file_is_refused_with_bounded_reads() {
    let world = World::new();
    let dir = world.package("big", &minimal("big", "opencode", "openai/gpt-5.6-terra", ""));
    let file = std::fs::OpenOptions::new().write(true).open(dir.join("instructions.md")).unwrap();
    file.set_len(20 * 1024 * 1024).unwrap();
    let started = Instant::now();
    let error = refused_dry_run(&world, "big", "\0\0\0\0");
    assert!(error.starts_with("Instructions file is too large: 20971520 bytes (the limit is 4 MiB)"), "{error}");
    let error = package_files::read_text(&world.repo, &dir.join("instructions.md")).unwrap_err();
    assert!(error.to_string().contains("larger than 4 MiB"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_build_context_linked_to_home_never_enters_the_archive() {
    let world = World::new();
    home_secret(&world);
    std::fs::create_dir_all(world.home.join(".config/gh")).unwrap();
    std::fs::write(world.home.join(".config/gh/hosts.yml"), format!("token: {MARKER}\n")).unwrap();
    let package = world.repo.join(".workbenches/img");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("Dockerfile"), "FROM scratch\n").unwrap();
    symlink(&world.home, package.join("ctx")).unwrap();
    let refused = context_archive(&world.repo, &package.join("ctx"), &package.join("Dockerfile"));
    match refused {
        Ok(archive) => {
            assert!(!String::from_utf8_lossy(&archive.tar).contains(MARKER), "the archive carries $HOME");
            panic!("a context outside the repository was archived: {:?}", archive.entries);
        }
        Err(error @ EngineError::Io { .. }) => assert_eq!(
            error.to_string(),
            format!(
                "cannot archive the Docker build context {}: resolves outside its boundary through a symbolic link",
                package.join("ctx").display()
            )
        ),
        Err(other) => panic!("{other}"),
    }
    // A Dockerfile linked out of the repository is refused too.
    symlink(world.home.join("secret.txt"), package.join("Dockerfile.out")).unwrap();
    assert!(context_archive(&world.repo, &package, &package.join("Dockerfile.out")).is_err());
}

#[test]
fn links_inside_a_build_context_are_stored_as_links_never_followed() {
    let world = World::new();
    let secret = home_secret(&world);
    let context = world.repo.join("ctx");
    std::fs::create_dir_all(context.join("sub")).unwrap();
    std::fs::write(context.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(context.join("sub/app.txt"), "app\n").unwrap();
    symlink(&secret, context.join("leak")).unwrap();
    symlink(&world.home, context.join("home")).unwrap();
    symlink("sub/app.txt", context.join("app")).unwrap();
    let archive = context_archive(&world.repo, &context, &context.join("Dockerfile")).unwrap();
    assert!(!String::from_utf8_lossy(&archive.tar).contains(MARKER), "a link was followed out of the repository");
    assert_eq!(archive.entries, ["Dockerfile", "app", "home", "leak", "sub/", "sub/app.txt"]);
    let mut tar = tar::Archive::new(archive.tar.as_slice());
    for entry in tar.entries().unwrap() {
        let entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        if ["app", "home", "leak"].contains(&path.as_str()) {
            assert_eq!(entry.header().entry_type(), tar::EntryType::Symlink, "{path}");
        }
    }
}

#[test]
fn in_repository_links_keep_working_in_a_dry_run() {
    let world = World::new();
    // runner_config itself may not be a link (the standard), but a directory above it may lead within the package.
    let extra = "skills:\n  - ./skills/shared\nrunner_config: ./config/opencode.json\n";
    let dir = world.package("ok", &minimal("ok", "opencode", "openai/gpt-5.6-terra", extra));
    std::fs::rename(dir.join("instructions.md"), dir.join("real.md")).unwrap();
    symlink("real.md", dir.join("instructions.md")).unwrap();
    let shared = world.repo.join("shared/shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("SKILL.md"), "---\nname: shared\ndescription: Shared.\n---\n").unwrap();
    std::fs::create_dir_all(dir.join("skills")).unwrap();
    symlink(&shared, dir.join("skills/shared")).unwrap();
    std::fs::create_dir_all(dir.join("real-config")).unwrap();
    std::fs::write(dir.join("real-config/opencode.json"), "{}").unwrap();
    symlink("real-config", dir.join("config")).unwrap();
    let stage = world.root.join("stage");
    let report =
        wb_engine::dry_run(&OsFileSystem, &options(&world, "ok"), Some(&stage), ModelCatalog::embedded()).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let prompt = std::fs::read_to_string(stage.join("workbench-instructions.md")).unwrap();
    assert!(prompt.contains("Package instructions of ok"), "{prompt}");
    assert!(stage.join("skills/shared/SKILL.md").is_file(), "{json}");
    assert!(stage.join("packaged-config.json").is_file(), "{json}");
}
