//! Synco's MLIR passes, written in Rust on melior.
//!
//! One pass per file; each file's doc comment says what the pass does, its
//! options, and its pre- and post-conditions. [`registry`] lists them all and
//! registers them (and Synco's named pipelines) with MLIR, so that
//! `synco-opt --pass-pipeline='builtin.module(<name>)'` can use them.

pub mod kernel_summary;
pub mod registry;

pub use registry::{PASSES, register_all};
