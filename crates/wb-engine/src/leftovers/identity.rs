//! A process told apart from any later one with its pid, by its start time: what makes a leftover someone's (a
//! container's owner label, a stage directory's name, a runner's record). A leaf: the Docker runtime and the
//! stage directories name it without depending on what sweeps them.

use serde::{Deserialize, Serialize};

use crate::runs::{process_alive, process_start};

/// A process as it is told apart from any later one with its pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub pid: u32,
    /// Its start time as the kernel counts it; `None` off Linux, where nothing of it is ever signalled.
    pub start: Option<u64>,
}

impl Identity {
    pub fn of(pid: u32) -> Identity {
        Identity { pid, start: process_start(pid) }
    }

    /// `<pid>:<start>`, the value of a container's owner label (`<pid>:` without a start time).
    pub fn label(&self) -> String {
        format!("{}:{}", self.pid, self.start.map(|s| s.to_string()).unwrap_or_default())
    }

    pub fn from_label(label: &str) -> Option<Identity> {
        let (pid, start) = label.split_once(':')?;
        Some(Identity { pid: pid.parse().ok()?, start: start.parse().ok() })
    }

    /// Whether this very process still lives (one without a start time counts as living while its pid does).
    pub fn alive(&self) -> bool {
        process_alive(self.pid, self.start)
    }
}
