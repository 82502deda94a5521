//! Every Synco pass, and the call that registers them with MLIR.

use synco_chunk::PassDescriptor;

use crate::kernel_summary;

/// All of Synco's passes, in the order `--help` lists them.
pub static PASSES: &[&PassDescriptor] = &[&kernel_summary::PASS];

/// Registers every upstream MLIR pass and every pass in [`PASSES`] in MLIR's
/// global pass registry, so textual pipelines can name them. Idempotent.
pub fn register_all() {
    melior::utility::register_all_passes();
    for pass in PASSES {
        synco_chunk::register_pass(pass);
    }
}
