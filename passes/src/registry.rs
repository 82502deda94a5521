//! Every Synco pass and named pipeline, and the call that registers them.

use synco_chunk::PassDescriptor;

use crate::{
    bind_kernel, chunk_to_triton, expand_collectives, fuse_gathers, fuse_reductions, insert_waits,
    kernel_summary, lower_transfers, reorder_tiles, select_backend, select_chunk_size, trace_tiles,
    verify_plan,
};

/// All of Synco's passes, in pipeline order.
pub static PASSES: &[&PassDescriptor] = &[
    &select_backend::PASS,
    &select_chunk_size::PASS,
    &expand_collectives::PASS,
    &verify_plan::PASS,
    &bind_kernel::PASS,
    &reorder_tiles::PASS,
    &insert_waits::PASS,
    &fuse_reductions::PASS,
    &fuse_gathers::PASS,
    &trace_tiles::PASS,
    &lower_transfers::PASS,
    &chunk_to_triton::PASS,
    &kernel_summary::PASS,
];

/// The passes that fuse a plan into its kernel, down to plain TTIR.
const FUSE: &str = "chunk-select-backend,chunk-select-chunk-size,chunk-expand-collectives,chunk-verify-plan,chunk-bind-kernel,\
     chunk-reorder-tiles,chunk-insert-waits,chunk-fuse-reductions,chunk-fuse-gathers,chunk-lower-transfers,chunk-to-triton,\
     canonicalize,cse";

/// Named pipelines: (name, description, pass list).
pub static PIPELINES: &[(&str, &str, &str)] = &[
    (
        "synco-ag-gemm",
        "Fuse an all-gather plan into its GEMM kernel, down to plain TTIR",
        FUSE,
    ),
    (
        "synco-gemm-rs",
        "Fuse a reduce-scatter plan into the GEMM kernel that produces its partials, down to plain TTIR",
        FUSE,
    ),
    (
        "synco-gemm-rs-gather",
        "Fuse a reduce-scatter computed from gathered operands (every rank's A rows and B, consumed per source) into its GEMM kernel, down to plain TTIR",
        FUSE,
    ),
    (
        "synco-gemm-ar-gather",
        "Fuse an all-reduce computed from gathered operands (each rank computes its rows of the sum from every rank's A rows and B, then its tiles' chunks of C go to every peer) into its GEMM kernel, down to plain TTIR",
        FUSE,
    ),
    (
        "synco-gemm-ar",
        "Fuse an all-reduce plan (one-shot or two-shot) into the GEMM kernel that produces its partials, down to plain TTIR",
        FUSE,
    ),
];

/// Registers every upstream MLIR pass, every pass in [`PASSES`] and every
/// pipeline in [`PIPELINES`] in MLIR's global registry, so textual
/// pipelines can name them. Idempotent.
pub fn register_all() {
    melior::utility::register_all_passes();
    for pass in PASSES {
        synco_chunk::register_pass(pass);
    }
    for (name, description, passes) in PIPELINES {
        synco_chunk::register_pipeline(name, description, passes);
    }
}
