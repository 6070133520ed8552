//! What a Workbench home stores: content-addressed blobs (`content.rs`) and the outcomes that reference them
//! (`outcomes.rs`).

mod content;
mod outcomes;

pub(crate) use content::charge;
pub use content::{ContentStore, Limits, OutcomeBudget};
pub use outcomes::{ListedOutcome, OutcomeStore, list_outcomes};
