//! Synco's MLIR passes, written in Rust.
//!
//! One pass per file; each file's doc comment says what the pass does, its
//! options, and its pre- and post-conditions. [`registry`] lists them all and
//! registers them (and Synco's named pipelines) with MLIR, so that
//! `synco-opt --pass-pipeline='builtin.module(<name>)'` can use them.
//!
//! The all-gather + GEMM pipeline, in order (`synco-ag-gemm`):
//! `chunk-select-backend`, `chunk-select-chunk-size`, `chunk-expand-collectives`,
//! `chunk-verify-plan`, `chunk-bind-kernel`, `chunk-reorder-tiles`,
//! `chunk-insert-waits`, `chunk-fuse-reductions`, `chunk-fuse-gathers`,
//! `chunk-lower-transfers`, `chunk-carry-pointers`, `chunk-to-triton`, then
//! `canonicalize` and `cse`. The GEMM + reduce-scatter and all-reduce pipelines
//! (`synco-gemm-rs`, `synco-gemm-ar`, ...) run the same passes: each one
//! acts on what the plan holds (consumed chunks, reduced partials, gathered
//! outputs).
//!
//! `chunk-trace-tiles`, between `chunk-fuse-reductions` and
//! `chunk-lower-transfers`, instruments the fused kernel: when every tile
//! starts, waits, publishes and ends (not in the named pipelines).

pub mod abi;
pub mod bind_kernel;
pub mod calibration;
pub mod carry_pointers;
pub mod checked;
pub mod chunk_to_triton;
pub mod expand_collectives;
pub mod flag_ops;
pub mod fuse_gathers;
pub mod fuse_reductions;
pub mod import_stablehlo;
pub mod insert_waits;
pub mod kernel_access;
pub mod kernel_loops;
pub mod kernel_summary;
pub mod lower_transfers;
pub mod plan;
pub mod registry;
pub mod reorder_tiles;
pub mod select_backend;
pub mod select_chunk_size;
pub mod tiles;
pub mod trace_tiles;
pub mod verify_plan;

pub use registry::{register_all, register_synco_passes};
