//! The clock the transport waits on between retries: the system's, or (tests) one that records every wait and
//! returns at once, with a fixed wall time so a `Retry-After` date gives a known wait.

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
