//! `mlir-sys`, linked the way Synco links MLIR (see `build.rs`).
pub use mlir_sys::*;
