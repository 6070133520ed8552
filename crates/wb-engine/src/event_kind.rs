//! The canonical event types of protocol 0, each with its wire name: what every emitter sends and every
//! reader matches on. A new event type is one variant here plus its uses.

use std::fmt;

/// One event type. Its wire name is the envelope's `type` (`run.started`, `output.text`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    RunStarted,
    RunReady,
    RunCompleted,
    RunFailed,
    RunCancelled,
    TurnStarted,
    TurnCompleted,
    OutputText,
    ReasoningDelta,
    ReasoningCompleted,
    ToolStarted,
    ToolCompleted,
    FileChanged,
    UsageUpdated,
    OutcomeAvailable,
    OutcomeFailed,
    /// The run asks the person for something (a permission); it waits for the answer.
    InputRequested,
    /// A request was answered, or a steer taken by the engine for the runner.
    InputAccepted,
    /// A follow-up queued by the host for after the turn.
    InputQueued,
    /// The runner took a steer or a queued follow-up.
    InputDelivered,
    /// A request was refused (a person's rejection, `--no-input`, the input timeout) or input could not be delivered.
    InputRejected,
    /// The agent asks the person questions; the run waits for the answers.
    QuestionRequested,
    QuestionAnswered,
    QuestionRejected,
    /// The agent's plan (its todo list) as it now stands (an extension of protocol 0).
    PlanUpdated,
    /// A native event the adapter does not translate (only its native type crosses), or an engine warning
    /// about the runner's output.
    RunnerEvent,
    /// Never emitted: what a log reader puts in place of a line it cannot read.
    LogUnreadable,
}

impl EventKind {
    /// Every event type, in the order above.
    pub const ALL: [EventKind; 27] = [
        EventKind::RunStarted,
        EventKind::RunReady,
        EventKind::RunCompleted,
        EventKind::RunFailed,
        EventKind::RunCancelled,
        EventKind::TurnStarted,
        EventKind::TurnCompleted,
        EventKind::OutputText,
        EventKind::ReasoningDelta,
        EventKind::ReasoningCompleted,
        EventKind::ToolStarted,
        EventKind::ToolCompleted,
        EventKind::FileChanged,
        EventKind::UsageUpdated,
        EventKind::OutcomeAvailable,
        EventKind::OutcomeFailed,
        EventKind::InputRequested,
        EventKind::InputAccepted,
        EventKind::InputQueued,
        EventKind::InputDelivered,
        EventKind::InputRejected,
        EventKind::QuestionRequested,
        EventKind::QuestionAnswered,
        EventKind::QuestionRejected,
        EventKind::PlanUpdated,
        EventKind::RunnerEvent,
        EventKind::LogUnreadable,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::RunStarted => "run.started",
            EventKind::RunReady => "run.ready",
            EventKind::RunCompleted => "run.completed",
            EventKind::RunFailed => "run.failed",
            EventKind::RunCancelled => "run.cancelled",
            EventKind::TurnStarted => "turn.started",
            EventKind::TurnCompleted => "turn.completed",
            EventKind::OutputText => "output.text",
            EventKind::ReasoningDelta => "reasoning.delta",
            EventKind::ReasoningCompleted => "reasoning.completed",
            EventKind::ToolStarted => "tool.started",
            EventKind::ToolCompleted => "tool.completed",
            EventKind::FileChanged => "file.changed",
            EventKind::UsageUpdated => "usage.updated",
            EventKind::OutcomeAvailable => "outcome.available",
            EventKind::OutcomeFailed => "outcome.failed",
            EventKind::InputRequested => "input.requested",
            EventKind::InputAccepted => "input.accepted",
            EventKind::InputQueued => "input.queued",
            EventKind::InputDelivered => "input.delivered",
            EventKind::InputRejected => "input.rejected",
            EventKind::QuestionRequested => "question.requested",
            EventKind::QuestionAnswered => "question.answered",
            EventKind::QuestionRejected => "question.rejected",
            EventKind::PlanUpdated => "plan.updated",
            EventKind::RunnerEvent => "runner.event",
            EventKind::LogUnreadable => "log.unreadable",
        }
    }

    /// The type of wire name `name`; `None` for one this build does not know.
    pub fn from_wire(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// `run.completed`, `run.failed` or `run.cancelled`: the one event that ends a run's stream.
    pub const fn is_terminal(self) -> bool {
        matches!(self, EventKind::RunCompleted | EventKind::RunFailed | EventKind::RunCancelled)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_are_distinct() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::from_wire(kind.as_str()), Some(kind));
        }
        let names: std::collections::HashSet<&str> = EventKind::ALL.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(names.len(), EventKind::ALL.len());
        assert_eq!(EventKind::from_wire("run.paused"), None);
    }
}
