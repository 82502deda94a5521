//! Attaches every pass body to its declaration, and registers them all.

use synco_chunk::passes::{self, RustPass};

use crate::{
    bind_kernel, carry_pointers, chunk_to_triton, expand_collectives, fuse_gathers,
    fuse_reductions, import_stablehlo, insert_waits, kernel_summary, lower_transfers,
    reorder_tiles, select_backend, select_chunk_size, trace_tiles, verify_plan,
};

/// The argument of every pass with a body here, in pipeline order.
pub fn implemented() -> Vec<&'static str> {
    let mut names = Vec::new();
    for_each_body(&mut |name, _| names.push(name));
    names
}

/// Calls `visit` with each body's pass argument and the function attaching it.
fn for_each_body(visit: &mut dyn FnMut(&'static str, fn())) {
    fn entry<P: RustPass>(visit: &mut dyn FnMut(&'static str, fn())) {
        visit(
            <P::Options as passes::PassOptions>::ARGUMENT,
            passes::set_body::<P>,
        );
    }
    entry::<import_stablehlo::Pass>(visit);
    entry::<select_backend::Pass>(visit);
    entry::<select_chunk_size::Pass>(visit);
    entry::<expand_collectives::Pass>(visit);
    entry::<verify_plan::Pass>(visit);
    entry::<bind_kernel::Pass>(visit);
    entry::<reorder_tiles::Pass>(visit);
    entry::<insert_waits::Pass>(visit);
    entry::<fuse_reductions::Pass>(visit);
    entry::<fuse_gathers::Pass>(visit);
    entry::<trace_tiles::Pass>(visit);
    entry::<lower_transfers::Pass>(visit);
    entry::<carry_pointers::Pass>(visit);
    entry::<chunk_to_triton::Pass>(visit);
    entry::<kernel_summary::Pass>(visit);
}

/// Registers Synco's passes (declared in `ChunkPasses.td`, with the bodies
/// here) and named pipelines (`synco-fuse` and its aliases) in MLIR's global
/// registry, without MLIR's own passes. For a pass plugin loaded into a
/// driver that registered those already. Idempotent.
pub fn register_synco_passes() {
    passes::register_declared();
    for_each_body(&mut |_, attach| attach());
}

/// Registers every upstream MLIR pass and Synco's passes and pipelines, so
/// textual pipelines can name them. Idempotent.
pub fn register_all() {
    melior::utility::register_all_passes();
    register_synco_passes();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every declared pass has one body and every body a declaration.
    #[test]
    fn bodies_match_declarations() {
        let mut bodies = implemented();
        bodies.sort_unstable();
        let mut declared = passes::DECLARED_PASSES.to_vec();
        declared.sort_unstable();
        assert_eq!(bodies, declared);
    }
}
