//! The clock the transport waits on between retries: the system's, or (tests) one that records every wait and
//! returns at once, with a fixed wall time so a `Retry-After` date gives a known wait. The tests' build (the
//! `test-hooks` feature) also has one a whole `wb-lsp` process can be given, which logs its waits to a file.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// A boxed wait.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What the retry policy needs of time: the wall clock (for `Retry-After` dates) and a wait.
pub trait Clock: Send + Sync {
    fn now(&self) -> SystemTime;
    fn sleep(&self, wait: Duration) -> Sleep;
}

/// The system clock and tokio's timer.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, wait: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(wait))
    }
}

/// A clock for tests: the wall time stands at `now`, and every wait returns at once after being recorded.
#[derive(Debug)]
pub struct RecordingClock {
    now: SystemTime,
    waits: Mutex<Vec<Duration>>,
}

impl RecordingClock {
    pub fn at(now: SystemTime) -> RecordingClock {
        RecordingClock { now, waits: Mutex::new(Vec::new()) }
    }

    /// Every wait asked for so far, in order.
    pub fn waits(&self) -> Vec<Duration> {
        self.waits.lock().map(|waits| waits.clone()).unwrap_or_default()
    }
}

impl Clock for RecordingClock {
    fn now(&self) -> SystemTime {
        self.now
    }

    fn sleep(&self, wait: Duration) -> Sleep {
        if let Ok(mut waits) = self.waits.lock() {
            waits.push(wait);
        }
        Box::pin(std::future::ready(()))
    }
}

/// The tests' build only: a clock that appends every wait to a file (milliseconds, one a line) and returns at
/// once, on the system's wall time. A test of the whole binary names the file in `WB_TEST_RETRY_WAITS` and reads
/// what the transport waited without sleeping.
#[cfg(feature = "test-hooks")]
#[derive(Debug)]
pub struct LoggingClock {
    log: std::path::PathBuf,
}

#[cfg(feature = "test-hooks")]
impl LoggingClock {
    /// The variable naming the log.
    pub const VARIABLE: &str = "WB_TEST_RETRY_WAITS";

    /// The clock `env` asks for, if it names a log.
    pub fn from_env(env: &std::collections::BTreeMap<String, String>) -> Option<LoggingClock> {
        env.get(Self::VARIABLE).filter(|path| !path.is_empty()).map(|path| LoggingClock { log: path.into() })
    }
}

#[cfg(feature = "test-hooks")]
impl Clock for LoggingClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, wait: Duration) -> Sleep {
        use std::io::Write;
        let line = format!("{}\n", wait.as_millis());
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        if let Err(error) = written {
            eprintln!("test hook: could not log a wait to {}: {error}", self.log.display());
        }
        Box::pin(std::future::ready(()))
    }
}
