//! `chunk-select-backend`: give every `backend(auto)` collective a backend.
//!
//! * `all_gather`, `all_to_all`: `copy_engine` (the chunks move while every
//!   SM computes; SM copies were as fast only where the GEMM dominates, and
//!   up to 2.5x slower where the transfer does, see
//!   benches/ag_gemm/README.md);
//! * `reduce_scatter` and two-shot `all_reduce` of a partial that kernel
//!   tiles produce: `copy_engine` when each rank's partial of a peer's
//!   block, `B = M / W * N` elements, exceeds `copy-engine-min-bytes`, else
//!   `ldst` (the producing tiles push their partials). The copy engine
//!   frees the SMs from waiting for remote stores, but each chunk it moves
//!   costs a stream wait and a copy launch that a small transfer at the
//!   kernel's end does not hide. A two-shot all-reduce moves twice (the
//!   partials, then the sums), so its threshold is twice the
//!   reduce-scatter's. Defaults from 2 x H200 (commit f93bc6b): the copy
//!   engine lost at 4 MiB per peer (reduce-scatter 1024x7168x4096: 0.116
//!   against 0.106 ms), tied at 8 MiB, won from 16 MiB (4% to 17%); the
//!   two-shot copy engine lost up to 16% at 4 and 8 MiB and won 5% to 12%
//!   from 16 MiB;
//! * one-shot `all_reduce`: `ldst` (the only fused one).
//!
//! Each choice is reported as a remark with its reason.
//!
//! Options:
//! * `copy-engine-min-bytes=N` (default 4194304, 4 MiB): the reduce-scatter
//!   threshold above.
//!
//! Preconditions: plans verify. Postconditions: no collective has
//! `backend(auto)`.

use crate::plan::{Plan, fail, int_option, loc, plans};
use synco_chunk::{
    Diagnostic, PassDescriptor, PassFailed, PassOption,
    attrs::{Algorithm, Backend},
};
use synco_ir::{self as ir, Op};

pub static PASS: PassDescriptor = PassDescriptor {
    argument: "chunk-select-backend",
    description: "Pick a backend for backend(auto) collectives (copy engine or SM loads and stores)",
    anchor: "builtin.module",
    options: &[PassOption {
        name: "copy-engine-min-bytes",
        description: "Bytes of a rank's partial per peer above which a reduce-scatter's partials move by the copy engine (twice that for a two-shot all-reduce)",
        default: "4194304",
    }],
    run,
};

/// The reduce-scatter threshold measured on 2 x H200 (see the module docs).
pub const COPY_ENGINE_MIN_BYTES: i64 = 4 << 20;

fn run(module: melior::ir::operation::OperationRef, options: &[&str]) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let min_bytes = int_option(module, PASS.argument, "copy-engine-min-bytes", options[0])?
        .unwrap_or(COPY_ENGINE_MIN_BYTES);
    if min_bytes < 0 {
        return Err(fail(
            module,
            format!(
                "{}: copy-engine-min-bytes must be >= 0, not {min_bytes}",
                PASS.argument
            ),
        ));
    }
    for plan in plans(module) {
        for op in plan.body_ops() {
            if ir::int_attr(op, "backend").and_then(Backend::from_value) != Some(Backend::Auto) {
                continue;
            }
            let (backend, why) = match ir::op_name(op).as_str() {
                "chunk.all_gather" | "chunk.all_to_all" => (
                    Backend::CopyEngine,
                    "the chunks move while every SM computes".to_string(),
                ),
                "chunk.reduce_scatter" => reduction_backend(&plan, op, min_bytes)?,
                "chunk.all_reduce" => {
                    let one_shot = ir::int_attr(op, "algorithm").and_then(Algorithm::from_value)
                        == Some(Algorithm::OneShot);
                    if one_shot {
                        (
                            Backend::Ldst,
                            "a one-shot all-reduce fuses with SM stores only".to_string(),
                        )
                    } else {
                        // Partials, then sums: twice the bytes to amortise.
                        reduction_backend(&plan, op, 2 * min_bytes)?
                    }
                }
                other => {
                    return Err(fail(
                        op,
                        format!("{}: {other} has no backend to select", PASS.argument),
                    ));
                }
            };
            let ctx = ir::context_of(op);
            ir::set_attr(
                op,
                "backend",
                ir::int_attr_of(ir::i32_type(ctx), backend as i64),
            );
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
fn reduction_backend(plan: &Plan, op: Op, min_bytes: i64) -> Result<(Backend, String), PassFailed> {
    let Some(src) = ir::attr(op, "src")
        .and_then(ir::symbol_value)
        .and_then(|n| plan.buffer(&n).cloned())
    else {
        return Err(fail(
            op,
            format!("{}: the reduced buffer is not in the plan", PASS.argument),
        ));
    };
    let Some(element_bytes) = src.element_bytes() else {
        return Err(fail(
            op,
            format!(
                "{}: unsupported element type {}",
                PASS.argument, src.element
            ),
        ));
    };
    // A block of the split dimension (the verifier checked it divides).
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
