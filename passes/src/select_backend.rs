//! `chunk-select-backend`: give every `backend(auto)` collective a backend.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkSelectBackend` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::checked;
use crate::plan::{Collective, Plan, fail, loc, plans};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkSelectBackendOptions, PassOptions, RustPass};
use synco_chunk::{
    Diagnostic, PassFailed,
    attrs::{Algorithm, Backend, CollectiveKind},
};
use synco_ir as ir;

/// The body of `chunk-select-backend`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkSelectBackendOptions;

    fn run(module: OperationRef, options: &ChunkSelectBackendOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkSelectBackendOptions::ARGUMENT;

fn run(module: OperationRef, options: &ChunkSelectBackendOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let min_bytes = options.copy_engine_min_bytes;
    for plan in plans(module) {
        for op in plan.body_ops() {
            if ir::int_attr(op, "backend").and_then(Backend::from_value) != Some(Backend::Auto) {
                continue;
            }
            let Some(collective) = Collective::of(op) else {
                return Err(fail(
                    op,
                    format!("{}: {} has no backend to select", NAME, ir::op_name(op)),
                ));
            };
            let (backend, why) = match collective.kind() {
                CollectiveKind::AllGather | CollectiveKind::AllToAll => (
                    Backend::CopyEngine,
                    "the chunks move while every SM computes".to_string(),
                ),
                CollectiveKind::ReduceScatter => reduction_backend(&plan, collective, min_bytes)?,
                CollectiveKind::AllReduce => {
                    if collective.algorithm() == Some(Algorithm::OneShot) {
                        (
                            Backend::Ldst,
                            "a one-shot all-reduce fuses with SM stores only".to_string(),
                        )
                    } else {
                        // Partials, then sums: twice the bytes to amortise.
                        let twice = checked::mul(
                            2,
                            min_bytes,
                            collective,
                            &format!(
                                "{NAME}: a two-shot all-reduce's threshold, twice copy-engine-min-bytes"
                            ),
                        )?;
                        reduction_backend(&plan, collective, twice)?
                    }
                }
            };
            collective.set_backend(backend);
            Diagnostic::remark(
                loc(op),
                format!("backend(auto) -> backend({}): {why}", backend.keyword()),
            )
            .emit();
        }
    }
    Ok(())
}

/// A reduction's backend: the copy engine when a rank's partial of a
/// peer's block holds more than `min_bytes`.
fn reduction_backend(
    plan: &Plan,
    op: Collective,
    min_bytes: i64,
) -> Result<(Backend, String), PassFailed> {
    let Some(src) = op.src().and_then(|n| plan.buffer(&n).cloned()) else {
        return Err(fail(
            op,
            format!("{}: the reduced buffer is not in the plan", NAME),
        ));
    };
    let Some(element_bytes) = src.element_bytes() else {
        return Err(fail(
            op,
            format!("{}: unsupported element type {}", NAME, src.element),
        ));
    };
    // A block of the split dimension (the verifier checked it divides),
    // within the buffer's bytes.
    let per_peer = src.shape.iter().product::<i64>() / plan.world_size * element_bytes;
    Ok(if per_peer > min_bytes {
        (
            Backend::CopyEngine,
            format!(
                "{per_peer} bytes of partial per peer, more than {min_bytes}: the side stream moves finished chunks while the SMs compute"
            ),
        )
    } else {
        (
            Backend::Ldst,
            format!(
                "{per_peer} bytes of partial per peer, at most {min_bytes}: the producing tiles store them (a copy's fixed cost would not be hidden)"
            ),
        )
    })
}
