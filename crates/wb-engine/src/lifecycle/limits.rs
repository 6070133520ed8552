//! A run's spend and time limits (`--max-cost`, `--max-duration`): crossing one stops the run as a cancel would,
//! with the limit named in its terminal event.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::{Options, RunLimits};
use crate::runs::RunRecord;

/// The run's spend and time limits: crossing one sets the cancel flag, with the reason the terminal event
/// gives. The duration is watched by a thread that ends with the run (dropping this ends it).
pub(super) struct Limits {
    max_cost: Option<f64>,
    cancel: Arc<AtomicBool>,
    pub(super) reason: Arc<Mutex<Option<String>>>,
    _timer: Option<mpsc::Sender<()>>,
}

impl Limits {
    pub(super) fn start(options: &Options, limits: RunLimits, cancel: Arc<AtomicBool>) -> Limits {
        let reason: Arc<Mutex<Option<String>>> = options.context.cancel_reason.clone().unwrap_or_default();
        let timer = limits.max_duration.map(|limit| {
            let (done, ended) = mpsc::channel::<()>();
            let (cancel, reason) = (Arc::clone(&cancel), Arc::clone(&reason));
            std::thread::spawn(move || {
                if ended.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                    stop(
                        &cancel,
                        &reason,
                        format!("Stopped by --max-duration: the run went on for {}", duration_text(limit)),
                    );
                }
            });
            done
        });
        Limits { max_cost: limits.max_cost_usd, cancel, reason, _timer: timer }
    }

    /// Stops the run once the cost so far crosses the limit.
    pub(super) fn observe(&self, record: &RunRecord) {
        if let (Some(limit), Some(cost)) = (self.max_cost, record.cost_usd)
            && cost > limit
            && !self.cancel.load(Ordering::SeqCst)
        {
            stop(
                &self.cancel,
                &self.reason,
                format!("Stopped by --max-cost {limit:.2} USD: the runner reported {cost:.4} USD"),
            );
        }
    }
}

/// Records why the run stops (the first reason wins) and sets the cancel flag.
fn stop(cancel: &AtomicBool, reason: &Mutex<Option<String>>, text: String) {
    if let Ok(mut reason) = reason.lock() {
        reason.get_or_insert(text);
    }
    cancel.store(true, Ordering::SeqCst);
}

/// `1h 5m`, `30m`, `45s`.
fn duration_text(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (hours, minutes, rest) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let parts: Vec<String> = [(hours, "h"), (minutes, "m"), (rest, "s")]
        .iter()
        .filter(|(value, _)| *value > 0)
        .map(|(value, unit)| format!("{value}{unit}"))
        .collect();
    if parts.is_empty() { "0s".to_owned() } else { parts.join(" ") }
}
