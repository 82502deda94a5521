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

use crate::plan::records;
use crate::plan::{Transfer, fail, flag_layout, internal, plans};
use melior::ir::operation::OperationRef;
use schedule::{check_arrival_flags, schedule};
use synco_chunk::passes::{ChunkLowerTransfersOptions, PassOptions, RustPass};
use synco_chunk::{PassFailed, attrs};
use synco_ir as ir;
use synco_manifest::FusedPlan;

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
        let sm_transfers: Vec<Transfer> = plan
            .transfers()
            .into_iter()
            .filter(|t| t.backend() == Some(attrs::Backend::Ldst))
            .filter(|t| !moves_nothing(*t) && !t.is_fused())
            .collect();
        let layout = flag_layout(&plan)?;
        check_arrival_flags(&plan, &layout)?;
        let mut schedule = schedule(&plan, &layout)?;
        if let Some(programs) = plan.find_kernel_in(module).and_then(persistent_programs) {
            let programs = u32::try_from(programs).map_err(|_| {
                fail(
                    plan.op,
                    format!("chunk-lower-transfers: the kernel's tile loop strides by {programs} programs, which no grid launches"),
                )
            })?;
            schedule.persistent_programs = Some(programs);
            // Its programs wait for other programs' tiles (a reduction's
            // owners for the producers): all of them must be resident.
            schedule.co_resident = layout
                .iter()
                .any(|r| r.kind == crate::plan::FlagKind::Reduction);
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
            let copies = std::mem::take(&mut schedule.reduction_copies);
            let (kernel, abi) = crate::plan::bound_kernel(&plan, module, NAME)?;
            let flags = schedule.num_flags;
            if copies.iter().any(|c| c.len() as i64 > flags) {
                return Err(internal(plan.op, "more reduction copies than counters"));
            }
            let placement = sm_copies::placement(kernel, plan.op)?;
            sm_copies::lower_reduction_copies(
                &plan, kernel, abi, &copies, programs, placement, flags,
            )?;
            add_copy_programs(&plan, &mut schedule, programs, placement)?;
        } else if !sm_transfers.is_empty() {
            let (kernel, abi) = crate::plan::bound_kernel(&plan, module, NAME)?;
            let placement = sm_copies::placement(kernel, sm_transfers[0])?;
            sm_copies::lower(
                &plan,
                kernel,
                abi,
                &sm_transfers,
                programs,
                placement,
                &layout,
                schedule.num_flags,
            )?;
            add_copy_programs(&plan, &mut schedule, programs, placement)?;
        }
        records::record_host_schedule(module, &schedule)?;
        // The schedule now carries everything the transfers, tile maps and
        // records said; the plan keeps its buffers only.
        records::forget_plan_records(plan.op);
        for name in ["chunk.transfer", "chunk.consume", "chunk.produce"] {
            for op in plan.ops_named(name) {
                ir::erase(op);
            }
        }
    }
    Ok(())
}

/// The schedule of a kernel given `programs` copy programs, placed as
/// `placement` says: each copy program has a flag per flag of the kernel.
fn add_copy_programs(
    plan: &crate::plan::Plan,
    schedule: &mut FusedPlan,
    programs: i64,
    placement: sm_copies::CopyPrograms,
) -> Result<(), PassFailed> {
    let (Ok(count), Some(flags)) = (u32::try_from(programs), schedule.num_flags.checked_mul(2))
    else {
        return Err(internal(
            plan.op,
            "copy programs or flags beyond the launch's range",
        ));
    };
    schedule.copy_programs = count;
    schedule.copy_plane = placement == sm_copies::CopyPrograms::Plane;
    schedule.num_flags = flags;
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
fn moves_nothing(t: Transfer) -> bool {
    t.is_local() && t.src().map(ir::print_attr) == t.dst().map(ir::print_attr)
}
