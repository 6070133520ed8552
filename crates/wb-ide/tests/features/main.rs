//! Fixture tests of every editor feature: a manifest with a `$0` cursor marker, and the feature's answer
//! rendered as text and compared with `expect![[...]]` (`UPDATE_EXPECT=1 cargo test -p wb-ide --test features`
//! rewrites the expectations; review the diff).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod completion;
mod hover;
mod navigation;
mod support;
mod symbols;
