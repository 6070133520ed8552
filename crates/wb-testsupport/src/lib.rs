//! What wb-lsp's tests, benches and examples share, so each helper exists once with one behaviour: scratch
//! directories and file trees ([`tree`]), `git` ([`git`]), the official schemas ([`schemas`]), and the
//! engine's scratch [`World`] with its fake runners ([`world`]), demo packages ([`packages`]), recorded
//! streams ([`streams`]) and event checks ([`events`]); child processes ([`process`]); reads that fail past a
//! deadline instead of hanging ([`deadline`]); the Docker bridge's
//! gateway ([`docker`]); an in-memory file system for the checks ([`memfs`]); a language client over stdio
//! ([`lsp`]); a scratch home for every process a test starts ([`home`]); the benches' generated packages ([`corpus`]) and the `wb-lsp` they measure ([`product`]). A dev-dependency only: nothing in production uses it.
//!
//! Every helper panics with the path or command it concerns: a failed helper is a failed test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod corpus;
pub mod deadline;
pub mod docker;
pub mod events;
pub mod followed;
pub mod git;
pub mod home;
pub mod lsp;
pub mod memfs;
pub mod packages;
pub mod process;
pub mod product;
pub mod schemas;
pub mod streams;
pub mod tree;
pub mod world;

pub use deadline::{Deadline, deadline, deadline_taken};
pub use events::{check_events, check_outcome_event, check_plan_event, success_native_types, success_types, types};
pub use followed::{Started, events_until, opencode_text, run_id, run_record, script_file};
pub use git::git;
pub use home::{ScratchHome, isolate};
pub use lsp::{frame, read_message};
pub use memfs::MemFs;
pub use packages::{CLAUDE, CLAUDE_CONFIG, OPENCODE, PI, claude_world, minimal, opencode_world, pi_world};
pub use process::{Output, finish, finish_within, process_is_gone, wait_for};
pub use schemas::{assert_outcomes_schema, event_validator, outcomes_validator};
pub use streams::{
    FINAL, TASK, ToolCall, declaration, engine_fixtures, native_tool_call, outcome_stream, stream, stream_with_calls,
};
pub use tree::{chmod, copy_tree, copy_tree_without_git, read, repository_fixtures, temp_dir, write, write_file};
pub use world::{World, permissions_are_bypassed, python};
