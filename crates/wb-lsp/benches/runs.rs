//! The engine's own overhead around a local run, and the cost of the outcome snapshots, on a 10,000-file Git
//! workspace (issue 16 item 5).
//!
//! ```text
//! cargo bench -p wb-lsp --bench runs            # release build, 10 runs and 10 samples of each snapshot figure
//! cargo bench -p wb-lsp --bench runs -- 20      # 20 of each instead
//! ```
//!
//! The scratch directory holds a package (`repo/.workbenches/bench`, spec 1, OpenCode, local runtime), a
//! workspace (`work/`: a Git repository of 10,000 committed files of 200 B–4 KiB in nested directories,
//! deterministic content), a Workbench home and a fake `opencode` on PATH. The fake runner stamps the time
//! when it starts and right before it exits (bash's `EPOCHREALTIME`, no extra process), modifies three
//! files, adds two and deletes one, prints a successful OpenCode stream and exits 0.
//!
//! Figures:
//! - `wb-lsp run --json`, as a person starts it: (a) process start → runner started; (b) runner exit →
//!   terminal event read on stdout (the outcome committed: `outcome.available` comes first); (c) the whole run.
//! - In process, with exactly the calls the engine makes (`crates/wb-engine/src/outcome.rs`): the baseline
//!   (`Snapshot::baseline`), the changeset after the same edits (`Snapshot::capture_excluding_home`,
//!   `Snapshot::unrepresentable_warnings`, `Changeset::between`), and `git status --porcelain` spawned on the
//!   same tree, clean and edited, with the ratios.
//!
//! The workspace is reset (`git checkout -- . && git clean -fdq`) before every sample, so each one sees the same
//! tree. Nothing here asserts a time; the bench asserts that every run succeeded and the outcome lists the
//! expected changes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use wb_outcomes::{Changeset, ContentStore, Entry, OutcomeBudget, OutcomeStore, Snapshot, WorkspaceRef};
use wb_testsupport::{git, minimal, temp_dir};

/// Files in the workspace: 20 × 10 directories of 50 files.
const FILES: usize = 10_000;

/// What the fake runner changes, as the changeset must list it (by path).
const EXPECTED: &[(&str, &str)] = &[
    ("add", "notes/bench.md"),
    ("add", "src/m00/new.txt"),
    ("modify", "src/m03/d1/f04.txt"),
    ("delete", "src/m07/d3/f11.txt"),
    ("modify", "src/m12/d5/f27.txt"),
    ("modify", "src/m19/d9/f49.txt"),
];

struct Bench {
    _temp: tempfile::TempDir,
    repo: PathBuf,
    work: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    tmp: PathBuf,
    stamps: PathBuf,
}

/// A deterministic pseudo-random sequence (xorshift), so every bench builds the same tree.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const WORDS: &[&str] = &[
    "ledger", "account", "balance", "entry", "posting", "journal", "period", "credit", "debit", "invoice", "payment",
    "currency", "rate", "total", "report", "audit", "fn", "let", "return", "match", "struct", "impl", "pub", "use",
];

/// Text of `size` bytes: lines of words, like source or notes.
fn content(sequence: &mut Sequence, size: usize) -> String {
    let mut text = String::with_capacity(size + 16);
    let mut line = 0;
    while text.len() < size {
        let word = WORDS[(sequence.next() % WORDS.len() as u64) as usize];
        text.push_str(word);
        line += word.len() + 1;
        if line > 60 + (sequence.next() % 30) as usize {
            text.push('\n');
            line = 0;
        } else {
            text.push(' ');
        }
    }
    text.truncate(size - 1);
    text.push('\n');
    text
}

impl Bench {
    fn new() -> Bench {
        let (temp, root) = temp_dir();
        let bench = Bench {
            repo: root.join("repo"),
            work: root.join("work"),
            home: root.join("home"),
            bin: root.join("bin"),
            tmp: root.join("tmp"),
            stamps: root.join("stamps"),
            _temp: temp,
        };
        for dir in [&bench.repo, &bench.work, &bench.home, &bench.bin, &bench.tmp, &bench.stamps] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let package = bench.repo.join(".workbenches/bench");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("workbench.yml"), minimal("bench", "opencode", "openai/gpt-5.1", "")).unwrap();
        std::fs::write(package.join("instructions.md"), "Keep changes small.\n").unwrap();
        bench.build_workspace();
        bench.install_runner();
        bench
    }

    fn build_workspace(&self) {
        let mut sequence = Sequence(0x5eed_cafe_f00d_d00d);
        let mut written = 0;
        'top: for top in 0..20 {
            for sub in 0..10 {
                let dir = self.work.join(format!("src/m{top:02}/d{sub}"));
                std::fs::create_dir_all(&dir).unwrap();
                for file in 0..50 {
                    let size = 200 + (sequence.next() % (4096 - 200)) as usize;
                    std::fs::write(dir.join(format!("f{file:02}.txt")), content(&mut sequence, size)).unwrap();
                    written += 1;
                    if written == FILES {
                        break 'top;
                    }
                }
            }
        }
        std::fs::write(self.work.join(".gitignore"), "target/\n*.log\n").unwrap();
        git(&self.work, &["init", "-q", "-b", "main"]);
        git(&self.work, &["add", "-A"]);
        git(&self.work, &["commit", "-q", "-m", "The bench tree"]);
    }

    /// The fake `opencode`: stamps its start and exit, makes the edits of [`EXPECTED`], prints a successful stream.
    fn install_runner(&self) {
        let stamps = self.stamps.display();
        let work = self.work.display();
        let script = format!(
            r#"#!/bin/bash
stamp() {{ if [ -n "${{EPOCHREALTIME:-}}" ]; then echo "${{EPOCHREALTIME//[!0-9]/}}000" > "$1"; else date +%s%N > "$1"; fi; }}
stamp "{stamps}/started"
cd "{work}" || exit 3
printf 'edited by the fake runner\n' >> src/m03/d1/f04.txt
printf 'edited by the fake runner\n' >> src/m12/d5/f27.txt
printf 'edited by the fake runner\n' >> src/m19/d9/f49.txt
mkdir -p notes
printf '# Bench notes\n\nWritten by the fake runner.\n' > notes/bench.md
printf 'new file\n' > src/m00/new.txt
rm src/m07/d3/f11.txt
cat <<'EOF'
{{"type":"step_start","timestamp":1764480000010,"sessionID":"ses_bench","part":{{"sessionID":"ses_bench","messageID":"msg_1","id":"prt_01","type":"step-start"}}}}
{{"type":"tool_use","timestamp":1764480000020,"sessionID":"ses_bench","part":{{"sessionID":"ses_bench","messageID":"msg_1","id":"prt_02","type":"tool","callID":"call_1","tool":"write","state":{{"status":"completed","input":{{"filePath":"notes/bench.md","content":"..."}},"output":"","title":"notes/bench.md","metadata":{{}}}}}}}}
{{"type":"text","timestamp":1764480000030,"sessionID":"ses_bench","part":{{"sessionID":"ses_bench","messageID":"msg_1","id":"prt_03","type":"text","text":"Done."}}}}
{{"type":"step_finish","timestamp":1764480000040,"sessionID":"ses_bench","part":{{"sessionID":"ses_bench","messageID":"msg_1","id":"prt_04","type":"step-finish","reason":"stop","tokens":{{"input":10,"output":2,"reasoning":0,"cache":{{"read":0,"write":0}}}}}}}}
EOF
stamp "{stamps}/exited"
exit 0
"#
        );
        let path = self.bin.join("opencode");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Puts the workspace back to the committed tree.
    fn reset(&self) {
        git(&self.work, &["checkout", "-q", "--", "."]);
        git(&self.work, &["clean", "-fdq"]);
    }

    /// The fake runner's edits, made by the fake runner itself (its stream and stamps are discarded).
    fn edit(&self) {
        let status = Command::new(self.bin.join("opencode")).stdout(Stdio::null()).status().unwrap();
        assert!(status.success());
    }

    fn stamp(&self, name: &str) -> SystemTime {
        let text = std::fs::read_to_string(self.stamps.join(name)).unwrap();
        SystemTime::UNIX_EPOCH + Duration::from_nanos(text.trim().parse().unwrap())
    }

    /// One `wb-lsp run --json`, with the run's own environment only.
    fn run(&self) -> RunTiming {
        let _ = std::fs::remove_file(self.stamps.join("started"));
        let _ = std::fs::remove_file(self.stamps.join("exited"));
        let system = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
        let mut command = Command::new(wb_testsupport::product::wb_lsp());
        command
            .current_dir(&self.repo)
            .env_clear()
            .env("PATH", format!("{}:{system}", self.bin.display()))
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmp)
            .env("WORKBENCH_HOME", self.home.join(".workbench"))
            .env("OPENAI_API_KEY", "sk-bench-dummy")
            .args(["run", ".workbenches/bench", "--dir"])
            .arg(&self.work)
            .args(["--task", "Edit a few files.", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = SystemTime::now();
        let mut child = command.spawn().unwrap();
        let mut outcome: Option<Value> = None;
        let mut terminal: Option<(String, SystemTime)> = None;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            let at = SystemTime::now();
            let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            match kind.as_str() {
                "outcome.available" => outcome = Some(event["data"].clone()),
                "outcome.failed" => panic!("the outcome failed: {event}"),
                "run.completed" | "run.failed" | "run.cancelled" => {
                    assert!(terminal.is_none(), "two terminal events");
                    terminal = Some((kind, at));
                }
                _ => {}
            }
        }
        let output = child.wait_with_output().unwrap();
        let ended = SystemTime::now();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "wb-lsp run failed: {stderr}");
        let (kind, read) = terminal.expect("a terminal event");
        assert_eq!(kind, "run.completed", "{stderr}");
        let outcome = outcome.expect("outcome.available before the terminal event");
        assert_eq!(outcome["changesets"], 1, "{outcome}");
        self.check_outcome(outcome["outcome_id"].as_str().unwrap());
        let since = |later: SystemTime, earlier: SystemTime| later.duration_since(earlier).unwrap_or_default();
        let (runner_started, runner_exited) = (self.stamp("started"), self.stamp("exited"));
        RunTiming {
            to_runner: since(runner_started, started),
            runner: since(runner_exited, runner_started),
            to_terminal: since(read, runner_exited),
            whole: since(ended, started),
        }
    }

    /// The committed outcome lists exactly the fake runner's changes.
    fn check_outcome(&self, outcome_id: &str) {
        let store = ContentStore::open(&self.home.join(".workbench")).unwrap();
        let outcome = OutcomeStore::new(&store).load(outcome_id).unwrap();
        assert_eq!(outcome.changesets.len(), 1);
        assert_eq!(changes(&outcome.changesets[0]), EXPECTED);
    }
}

fn changes(changeset: &Changeset) -> Vec<(&'static str, &str)> {
    changeset
        .entries
        .iter()
        .map(|entry| {
            let kind = match entry {
                Entry::Add { .. } => "add",
                Entry::Modify { .. } => "modify",
                Entry::Delete { .. } => "delete",
            };
            (kind, entry.path())
        })
        .collect()
}

struct RunTiming {
    to_runner: Duration,
    runner: Duration,
    to_terminal: Duration,
    whole: Duration,
}

/// Times `git status --porcelain` as a person runs it (their configuration, index refresh included).
fn git_status(work: &Path) -> Duration {
    let started = Instant::now();
    let output = Command::new("git")
        .arg("-C")
        .arg(work)
        .args(["status", "--porcelain"])
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(output.status.success());
    elapsed
}

struct Figure {
    name: &'static str,
    samples: Vec<Duration>,
}

impl Figure {
    fn median(&self) -> Duration {
        let mut sorted = self.samples.clone();
        sorted.sort();
        sorted[sorted.len() / 2]
    }

    fn row(&self) {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let min = self.samples.iter().min().copied().unwrap_or_default();
        let max = self.samples.iter().max().copied().unwrap_or_default();
        println!(
            "{:<58} {:>9.2} ms {:>9.2} ms {:>9.2} ms {:>4}",
            self.name,
            ms(self.median()),
            ms(min),
            ms(max),
            self.samples.len()
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the first number is the sample count.
    let count = std::env::args().skip(1).find_map(|a| a.parse::<usize>().ok()).unwrap_or(10).max(1);
    let setup = Instant::now();
    let bench = Bench::new();
    println!(
        "workspace: {FILES} committed files in {:.1} s; {count} samples per figure",
        setup.elapsed().as_secs_f64()
    );

    // `wb-lsp run`, end to end. The first run warms the page cache and the baseline cache; it is not counted.
    bench.run();
    bench.reset();
    let mut runs = Vec::new();
    for _ in 0..count {
        runs.push(bench.run());
        bench.reset();
    }

    // The snapshot figures, in process, with the engine's calls.
    let home = bench.home.join("snapshots");
    let store = ContentStore::open(&home).unwrap();
    let (mut baseline, mut changeset, mut status_clean, mut status_edited) = (vec![], vec![], vec![], vec![]);
    for _ in 0..count + 1 {
        bench.reset();
        status_clean.push(git_status(&bench.work));
        let started = Instant::now();
        let before = Snapshot::baseline(&bench.work, &store).unwrap();
        baseline.push(started.elapsed());
        assert!(before.hashed_paths().is_empty(), "a clean tree is never read: {:?}", before.hashed_paths());
        bench.edit();
        let started = Instant::now();
        let after = Snapshot::capture_excluding_home(&bench.work, store.home()).unwrap();
        let warnings = Snapshot::unrepresentable_warnings(&before, &after, None);
        let built =
            Changeset::between("primary", WorkspaceRef::Primary, &before, &after, &store, &mut OutcomeBudget::new())
                .unwrap();
        changeset.push(started.elapsed());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(changes(&built), EXPECTED);
        status_edited.push(git_status(&bench.work));
    }
    bench.reset();
    // The first sample of each warmed up; it is left out.
    for samples in [&mut baseline, &mut changeset, &mut status_clean, &mut status_edited] {
        samples.remove(0);
    }

    let figures = [
        Figure { name: "run: wb-lsp start → runner started", samples: runs.iter().map(|r| r.to_runner).collect() },
        Figure {
            name: "run: runner exit → terminal event (outcome included)",
            samples: runs.iter().map(|r| r.to_terminal).collect(),
        },
        Figure { name: "run: whole wall time", samples: runs.iter().map(|r| r.whole).collect() },
        Figure {
            name: "run: the fake runner itself (start → exit)", samples: runs.iter().map(|r| r.runner).collect()
        },
        Figure { name: "snapshot: baseline (Snapshot::baseline)", samples: baseline },
        Figure { name: "snapshot: changeset after the edits (capture + between)", samples: changeset },
        Figure { name: "git status --porcelain, clean tree", samples: status_clean },
        Figure { name: "git status --porcelain, edited tree", samples: status_edited },
    ];
    println!();
    println!("{:<58} {:>12} {:>12} {:>12} {:>4}", "figure", "median", "min", "max", "n");
    for figure in &figures {
        figure.row();
    }
    let ratio = |a: &Figure, b: &Figure| a.median().as_secs_f64() / b.median().as_secs_f64();
    println!("{:<58} {:>9.2} x", "ratio: baseline / git status (clean)", ratio(&figures[4], &figures[6]));
    println!("{:<58} {:>9.2} x", "ratio: changeset / git status (edited)", ratio(&figures[5], &figures[7]));
}
