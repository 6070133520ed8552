//! Samples and their summary; whole-process measurements (wall time, peak RSS).

use std::process::Command;
use std::time::{Duration, Instant};

/// Durations of one figure, summarised.
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn new(mut samples: Vec<Duration>) -> Samples {
        assert!(!samples.is_empty(), "a figure needs samples");
        samples.sort();
        Samples(samples)
    }

    fn at(&self, p: f64) -> Duration {
        let index = ((self.0.len() as f64 - 1.0) * p).round() as usize;
        self.0[index.min(self.0.len() - 1)]
    }

    pub fn median(&self) -> Duration {
        self.at(0.5)
    }

    /// `median 1.23 ms (p95 …, min …, n)`.
    pub fn summary(&self) -> String {
        format!("median {} (p95 {}, min {}, n={})", ms(self.median()), ms(self.at(0.95)), ms(self.0[0]), self.0.len())
    }
}

pub fn ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms < 10.0 { format!("{ms:.2} ms") } else { format!("{ms:.0} ms") }
}

pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One line of the report: what, wb-lsp's figure, the peer's.
pub fn row(what: &str, ours: &str, peer: &str) {
    println!("  {what:<58} {ours:<44} {peer}");
}

/// When started as `perf --rusage PROGRAM ARGS…`: runs the program (stdout discarded), waits, and prints its
/// wall time in nanoseconds and its peak RSS in KiB. The child is this process's only child, so
/// `RUSAGE_CHILDREN` is its own.
pub fn rusage_child() -> Option<i32> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("--rusage") {
        return None;
    }
    let program = args.next()?;
    let started = Instant::now();
    let status = Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run the measured program");
    let wall = started.elapsed();
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    println!("{} {} {}", wall.as_nanos(), usage.max_rss(), status.code().unwrap_or(-1));
    Some(0)
}

/// Runs `program args` `runs` times through [`rusage_child`]; returns the wall times, the largest peak RSS
/// (KiB) and the exit code of the last run.
pub fn measure_process(program: &std::path::Path, args: &[String], runs: usize) -> (Samples, u64, i32) {
    let me = std::env::current_exe().expect("the bench binary");
    let mut walls = Vec::new();
    let mut peak = 0;
    let mut code = 0;
    for _ in 0..runs {
        let output = Command::new(&me).arg("--rusage").arg(program).args(args).output().expect("measure");
        let text = String::from_utf8_lossy(&output.stdout);
        let fields: Vec<i64> = text.split_whitespace().filter_map(|f| f.parse().ok()).collect();
        assert_eq!(fields.len(), 3, "measurement of {}: {text}", program.display());
        walls.push(Duration::from_nanos(fields[0] as u64));
        peak = peak.max(fields[1] as u64);
        code = fields[2] as i32;
    }
    (Samples::new(walls), peak, code)
}
