//! `chunk-lower-transfers`: turn transfers into what moves the data.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkLowerTransfers` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).
//!
//! This file holds the pass; `schedule.rs` the host's copy schedule it
//! writes (and the refusals of transfers whose arrival flags would not be
//! set exactly once); [`sm_copies`] the `ldst` backend, the copy programs
//! it adds to the kernel.

mod schedule;
pub mod sm_copies;

use crate::fuse_reductions::FUSED_ATTR;
use crate::plan::{fail, flag_layout, internal, plans};
use melior::ir::operation::OperationRef;
use schedule::{check_arrival_flags, schedule};
use serde_json::json;
use synco_chunk::passes::{ChunkLowerTransfersOptions, PassOptions, RustPass};
use synco_chunk::{PassFailed, attrs};
use synco_ir as ir;

pub const SCHEDULE_ATTR: &str = "chunk.host_schedule";

/// The body of `chunk-lower-transfers`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkLowerTransfersOptions;

    fn run(module: OperationRef, options: &ChunkLowerTransfersOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkLowerTransfersOptions::ARGUMENT;

fn run(module: OperationRef, options: &ChunkLowerTransfersOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let programs = options.copy_programs;
    let all = plans(module);
    if all.len() > 1 {
        return Err(fail(
            all[1].op,
            "chunk-lower-transfers: one plan per module is supported",
        ));
    }
    for plan in all {
        let sm_transfers: Vec<ir::Op> = plan
            .ops_named("chunk.transfer")
            .into_iter()
            .filter(|t| {
                ir::int_attr(*t, "backend").and_then(attrs::Backend::from_value)
                    == Some(attrs::Backend::Ldst)
            })
            .filter(|t| !moves_nothing(*t) && ir::attr(*t, FUSED_ATTR).is_none())
            .collect();
        let layout = flag_layout(&plan)?;
        check_arrival_flags(&plan, &layout)?;
        let mut schedule = schedule(&plan, &layout)?;
        if let Some(programs) = plan.find_kernel_in(module).and_then(persistent_programs) {
            schedule["persistent_programs"] = json!(programs);
            // Its programs wait for other programs' tiles (a reduction's
            // owners for the producers): all of them must be resident.
            let reduces = layout
                .iter()
                .any(|r| r.kind == crate::plan::FlagKind::Reduction);
            schedule["co_resident"] = json!(reduces);
        }
        if crate::plan::stages_on_sms(&plan) {
            // chunk-fuse-reductions{mode=stage}: the copy programs run the
            // reduction copies the copy engine would.
            if let Some(t) = sm_transfers.first() {
                return Err(fail(
                    *t,
                    "chunk-lower-transfers: the kernel's copy programs already move a staged reduction; an ldst transfer beside it is not supported",
                ));
            }
            let copies: Vec<Vec<synco_manifest::ReductionCopy>> =
                serde_json::from_value(schedule["reduction_copies"].take())
                    .map_err(|e| internal(plan.op, &format!("unreadable reduction copies: {e}")))?;
            let (kernel, abi) = crate::plan::bound_kernel(&plan, module, NAME)?;
            let flags = schedule["num_flags"].as_i64().unwrap_or(0);
            if copies.iter().any(|c| c.len() as i64 > flags) {
                return Err(internal(plan.op, "more reduction copies than counters"));
            }
            let placement = sm_copies::placement(kernel, plan.op)?;
            sm_copies::lower_reduction_copies(
                &plan, kernel, abi, &copies, programs, placement, flags,
            )?;
            schedule["reduction_copies"] = json!([]);
            schedule["copy_programs"] = json!(programs);
            schedule["copy_plane"] = json!(placement == sm_copies::CopyPrograms::Plane);
            schedule["num_flags"] = json!(2 * flags);
        } else if !sm_transfers.is_empty() {
            let (kernel, abi) = crate::plan::bound_kernel(&plan, module, NAME)?;
            let flags = schedule["num_flags"].as_i64().unwrap_or(0);
            let placement = sm_copies::placement(kernel, sm_transfers[0])?;
            sm_copies::lower(
                &plan,
                kernel,
                abi,
                &sm_transfers,
                programs,
                placement,
                &layout,
                flags,
            )?;
            schedule["copy_programs"] = json!(programs);
            schedule["copy_plane"] = json!(placement == sm_copies::CopyPrograms::Plane);
            schedule["num_flags"] = json!(2 * flags);
        }
        let ctx = ir::context_of(module);
        ir::set_attr(
            module,
            SCHEDULE_ATTR,
            ir::string_attr(ctx, &schedule.to_string()),
        );
        // The schedule now carries everything the transfers and tile maps
        // said; the plan keeps its buffers only.
        for name in ["chunk.transfer", "chunk.consume", "chunk.produce"] {
            for op in plan.ops_named(name) {
                ir::erase(op);
            }
        }
    }
    Ok(())
}

/// The number of programs a persistent kernel must be launched with: the
/// constant stride of the tile loop its marked tile index comes from.
fn persistent_programs(kernel: ir::Op) -> Option<i64> {
    ir::walk(kernel)
        .into_iter()
        .filter(|op| ir::attr(*op, crate::tiles::TILE_INDEX_ATTR).is_some())
        .find_map(|op| crate::tiles::persistent_stride(ir::result(op, 0)))
}

/// A local transfer whose source is its destination: the rows are in place.
fn moves_nothing(t: ir::Op) -> bool {
    crate::plan::is_local(t)
        && ir::attr(t, "src").map(ir::print_attr) == ir::attr(t, "dst").map(ir::print_attr)
}
