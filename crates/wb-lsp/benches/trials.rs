//! A trial at scale on the sandbox services' fakes (issue 42 item 8): by default 400 attempts (20 tasks × 2 arms ×
//! 10 repetitions) at `--parallel 200`, each attempt's agent working for a few seconds in a sandbox of the E2B
//! fake, then of the Daytona fake (`wb-sandbox-fakes`: their sandboxes are bubblewrap roots on this machine).
//!
//! ```text
//! cargo bench -p wb-lsp --bench trials                      # E2B then Daytona, 400 attempts at --parallel 200
//! cargo bench -p wb-lsp --bench trials -- e2b 100 50        # one service, that many attempts, that parallel
//! ```
//!
//! It runs the product `wb-lsp trial` (release, no test hooks) and samples every wb-lsp process four times a
//! second: the trial, every attempt's supervisor and its watchdog. Figures:
//! - wall time against the ideal (the agent's working time × attempts ÷ parallel);
//! - peak resident and private memory of all wb-lsp processes together, and private memory per running attempt
//!   (its supervisor and watchdog; target ≤ 2 MiB) at the peak of attempts running;
//! - CPU per attempt overall, and the share of a core one running attempt takes while its agent works (the
//!   orchestration's cost while it waits);
//! - the job directory's size.
//!
//! The fakes run in this process; their own cost is not counted. Nothing here asserts a figure: the bench asserts
//! that every attempt works.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wb_sandbox_fakes::daytona::{self, DaytonaFake};
use wb_sandbox_fakes::e2b::{self, E2bFake};

/// How long the agent works in its sandbox.
const AGENT_SECONDS: f64 = 3.0;
const TASKS: usize = 20;

const MANIFEST: &str = "spec: 1
version: 1.0.0
name: scale
description: A package tried at scale.
runner: opencode
model:
  id: openai/gpt-5.1
  routes:
    - provider: openai
instructions: ./instructions.md
runtimes:
  e2b:
    image: ghcr.io/acme/agent:1
  daytona:
    class: linux
    image: ghcr.io/acme/agent:1
";

fn agent() -> String {
    format!(
        "#!/bin/sh\nsleep {AGENT_SECONDS}\necho hello > hello.txt\n\
         printf '{{\"type\":\"text\",\"part\":{{\"type\":\"text\",\"text\":\"done\"}}}}\\n'\n\
         printf '{{\"type\":\"step_finish\",\"part\":{{\"type\":\"step-finish\",\"cost\":0.001,\"tokens\":{{\"input\":10,\"output\":2,\"reasoning\":0,\"cache\":{{\"read\":0,\"write\":0}}}}}}}}\\n'\n"
    )
}

/// One sample of every wb-lsp process.
#[derive(Default, Clone)]
struct Sample {
    processes: usize,
    supervisors: usize,
    rss_kib: u64,
    private_kib: u64,
    /// The trial process's own private memory.
    trial_private_kib: u64,
}

/// The fields of `/proc/<pid>/smaps_rollup` named, in KiB.
fn rollup(pid: &str, names: &[&str]) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else { return 0 };
    text.lines()
        .filter(|line| names.iter().any(|name| line.starts_with(name)))
        .filter_map(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Samples every process running `binary`, and every watchdog shell, until `stop`: the samples, and the last CPU
/// ticks seen per process.
fn sample(binary: PathBuf, stop: Arc<AtomicBool>, trial_pid: u32) -> (Vec<Sample>, HashMap<String, u64>) {
    let (mut samples, mut cpu) = (Vec::new(), HashMap::new());
    while !stop.load(Ordering::SeqCst) {
        let mut now = Sample::default();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            // A supervisor's watchdog idles as a shell (`/bin/sh -c …supervise-watch…`) until it becomes wb-lsp:
            // it is part of what a running attempt costs.
            let watchdog = cmdline.windows(15).any(|w| w == b"supervise-watch");
            if !watchdog && std::fs::read_link(entry.path().join("exe")).ok().as_deref() != Some(binary.as_path()) {
                continue;
            }
            now.processes += 1;
            if cmdline.windows(13).any(|w| w == b"supervise-run") {
                now.supervisors += 1;
            }
            now.rss_kib += rollup(&pid, &["Rss:"]);
            let private = rollup(&pid, &["Private_Clean:", "Private_Dirty:"]);
            now.private_kib += private;
            if pid == trial_pid.to_string() {
                now.trial_private_kib = private;
            }
            if let Some(ticks) = cpu_ticks(&pid) {
                cpu.insert(pid, ticks);
            }
        }
        samples.push(now);
        std::thread::sleep(Duration::from_millis(250));
    }
    (samples, cpu)
}

fn du(path: &Path) -> u64 {
    let output = Command::new("du").args(["-sk"]).arg(path).output().unwrap();
    String::from_utf8_lossy(&output.stdout).split_whitespace().next().and_then(|k| k.parse().ok()).unwrap_or(0)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn scenario(service: &str, attempts: usize, parallel: usize) {
    let binary = wb_testsupport::product::wb_lsp();
    let temp = tempfile::Builder::new().prefix("wb-trial-bench-").tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let (repo, home) = (root.join("repo"), root.join("home"));
    let package = repo.join(".workbenches/scale");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::create_dir_all(home.join(".workbench")).unwrap();
    std::fs::write(package.join("workbench.yml"), MANIFEST).unwrap();
    std::fs::write(package.join("instructions.md"), "Say hello.\n").unwrap();
    let reps = attempts.div_ceil(TASKS * 2).max(1);
    for t in 0..TASKS {
        let dir = package.join(format!("trials/t{t:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("prompt.md"), "Say hello.\n").unwrap();
        std::fs::write(
            dir.join("task.json"),
            format!(
                "{{\"version\": 1, \"id\": \"t{t:03}\", \"title\": \"Hello\", \"fixture\": {{\"kind\": \"empty\"}}, \
                 \"timeoutMinutes\": 10, \"gates\": [{{\"id\": \"said\", \"run\": \"test -f hello.txt\"}}]}}\n"
            ),
        )
        .unwrap();
    }
    let image_bin = root.join("image-bin");
    std::fs::create_dir_all(&image_bin).unwrap();
    std::fs::write(image_bin.join("opencode"), agent()).unwrap();
    std::fs::set_permissions(image_bin.join("opencode"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let read_only = vec![(image_bin, "/opt/wb/bin".to_owned())];
    let mut env: Vec<(String, String)> = Vec::new();
    let _e2b;
    let _daytona;
    if service == "e2b" {
        let fake = E2bFake::start(e2b::FakeOptions { read_only, ..e2b::FakeOptions::default() }).unwrap();
        env.extend(fake.env());
        _e2b = fake;
    } else {
        let fake = DaytonaFake::start(daytona::Options { read_only, ..daytona::Options::default() }).unwrap();
        env.push(("DAYTONA_API_KEY".to_owned(), fake.api_key()));
        env.push(("DAYTONA_API_URL".to_owned(), fake.api_url()));
        _daytona = fake;
    }
    let begin = Instant::now();
    let child = Command::new(&binary)
        .args(["trial", ".workbenches/scale", "--runtime", service, "--reps", &reps.to_string()])
        .args(["--parallel", &parallel.to_string()])
        .current_dir(&repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("WORKBENCH_HOME", home.join(".workbench"))
        .env("TMPDIR", std::env::temp_dir())
        .env("OPENAI_API_KEY", "sk-bench")
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (binary, stop, pid) = (binary.clone(), Arc::clone(&stop), child.id());
        std::thread::spawn(move || sample(binary, stop, pid))
    };
    let output = child.wait_with_output().unwrap();
    let wall = begin.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    let (samples, cpu) = sampler.join().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the trial failed: {stderr}");
    let total = TASKS * 2 * reps;
    let works = stderr.lines().filter(|l| l.contains(": works (")).count();
    assert_eq!(works, total, "every attempt works: {stderr}");

    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as f64;
    let cpu_seconds = cpu.values().sum::<u64>() as f64 / ticks;
    let peak_rss = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let peak_private = samples.iter().map(|s| s.private_kib).max().unwrap_or(0);
    let peak_running = samples.iter().map(|s| s.supervisors).max().unwrap_or(0);
    let per_attempt: Vec<f64> = samples
        .iter()
        .filter(|s| s.supervisors * 2 >= peak_running && s.supervisors > 0)
        .map(|s| (s.private_kib - s.trial_private_kib.min(s.private_kib)) as f64 / s.supervisors as f64 / 1024.0)
        .collect();
    let ideal = AGENT_SECONDS * total as f64 / parallel as f64;
    let job = std::fs::read_dir(home.join(".workbench/trials")).unwrap().flatten().next().unwrap().path();
    let runs = home.join(".workbench/runs");
    println!(
        "trial of {total} attempts at --parallel {parallel} on the {service} fake (agent works {AGENT_SECONDS} s)"
    );
    println!("  wall time            {wall:.1} s (ideal {ideal:.1} s: {:.2}×)", wall / ideal);
    println!("  attempts running     at most {peak_running} at once");
    println!(
        "  memory, all wb-lsp   peak {:.0} MiB resident, {:.0} MiB private ({} processes at most)",
        peak_rss as f64 / 1024.0,
        peak_private as f64 / 1024.0,
        samples.iter().map(|s| s.processes).max().unwrap_or(0)
    );
    println!(
        "  private per attempt  median {:.2} MiB, peak {:.2} MiB (supervisor and watchdog; the trial apart)",
        median(per_attempt.clone()),
        per_attempt.iter().copied().fold(0.0, f64::max)
    );
    println!(
        "  CPU                  {cpu_seconds:.1} s in all ({:.0} ms per attempt; {:.1}% of a core per running attempt)",
        cpu_seconds * 1000.0 / total as f64,
        cpu_seconds / wall / (peak_running.max(1) as f64) * 100.0
    );
    println!("  job directory        {} KiB; runs {} KiB", du(&job), du(&runs));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let services: Vec<&str> = match args.first().map(String::as_str) {
        Some(service @ ("e2b" | "daytona")) => vec![service],
        _ => vec!["e2b", "daytona"],
    };
    let attempts = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let parallel = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200);
    for service in services {
        scenario(service, attempts, parallel);
    }
}
