//! `chunk-lower-transfers`: turn transfers into what moves the data.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkLowerTransfers` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::plan::{
    FlagKind, FlagRange, Plan, dst_buffer, fail, flag_layout, internal, loc, plans, region_offsets,
    region_parts,
};
use crate::{fuse_reductions::FUSED_ATTR, sm_copies};
use melior::ir::operation::OperationRef;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use synco_chunk::passes::{ChunkLowerTransfersOptions, PassOptions, RustPass};
use synco_chunk::{Diagnostic, PassFailed, attrs};
use synco_ir as ir;

pub const SCHEDULE_ATTR: &str = "synco.host_schedule";

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

/// Refuses transfers into a consumed buffer that would not set each of its
/// arrival flags exactly once on every rank. A tile waits for the one flag
/// of its chunk (`rows_per_chunk` rows along the consumed dimension, the
/// size of the buffer's first transfer), and the copy that writes the chunk
/// sets it. So every transfer from another rank must write exactly one
/// whole chunk: a smaller one would set the flag before the rest of the
/// chunk arrives (tiles would read stale rows), a larger one would leave
/// the next chunks' flags unset, and two transfers into one chunk would set
/// its flag at the first. Every chunk of every other rank's block must be
/// written: its tiles would wait for it until the runtime's watchdog (or,
/// where a later copy's flag implies the buffer's, see
/// `chunk-insert-waits`, read rows that never came). Plans from
/// `chunk-expand-collectives` hold all of this; a plan written out by hand
/// may not.
fn check_arrival_flags(plan: &Plan, layout: &[FlagRange]) -> Result<(), PassFailed> {
    for range in layout.iter().filter(|r| r.kind == FlagKind::Arrival) {
        let name = &range.buffer;
        let chunk = range.rows_per_chunk;
        let writers: Vec<ir::Op> = plan
            .ops_named("chunk.transfer")
            .into_iter()
            .filter(|t| dst_buffer(*t).as_deref() == Some(name.as_str()))
            .collect();
        // The transfer `flag_layout` took the chunk size from.
        let sized_by = writers
            .first()
            .and_then(|t| ir::str_attr(*t, "sym_name"))
            .unwrap_or_default();
        let transfers: Vec<ir::Op> = writers
            .into_iter()
            .filter(|t| !crate::plan::is_local(*t))
            .collect();
        // Chunks whose arrival a later copy implies (`chunk-insert-waits`)
        // set no flag, but their tiles still read them.
        let implied_by = transfers
            .iter()
            .find_map(|t| ir::str_attr(*t, crate::insert_waits::IMPLIED_ATTR));
        let mut setters: HashMap<(i64, i64), ir::Op> = HashMap::new();
        for &t in &transfers {
            let (Some(dst), Some(sizes)) = (ir::attr(t, "dst"), crate::plan::region_sizes(t))
            else {
                return Err(internal(t, "a transfer without a destination region"));
            };
            let rows = sizes.get(range.dim).copied().unwrap_or(0);
            for r in 0..plan.world_size {
                let (Some(on), Some(offsets)) = (
                    crate::plan::rank_at(t, "dst_rank", r),
                    region_offsets(dst, r),
                ) else {
                    return Err(internal(t, "cannot evaluate the transfer on every rank"));
                };
                let start = offsets.get(range.dim).copied().unwrap_or(0);
                if rows != chunk || start % chunk != 0 {
                    return Err(fail(
                        t,
                        format!(
                            "chunk-lower-transfers: tiles wait for @{name} in chunks of {chunk} along dimension {} (the size of @{sized_by}, its first transfer), one flag each, but on rank {on} this transfer writes {rows} from {start}: a transfer into a consumed buffer must write exactly one chunk, or the chunk's flag is set before all of it arrives",
                            range.dim
                        ),
                    ));
                }
                let Some(flag) = range.flag_at(&offsets) else {
                    return Err(internal(t, "the transfer's chunk has no flag"));
                };
                if let Some(other) = setters.insert((on, flag), t) {
                    Diagnostic::error(
                        loc(t),
                        format!(
                            "chunk-lower-transfers: on rank {on}, this transfer and another write chunk {} of @{name}: its flag would be set when the first lands",
                            flag - range.base
                        ),
                    )
                    .note(loc(other), "the other transfer")
                    .emit();
                    return Err(PassFailed);
                }
            }
        }
        let consume = plan.consumer_of(name).unwrap_or(plan.op);
        for r in 0..plan.world_size {
            for index in 0..range.chunks_per_rank * plan.world_size {
                let owner = index / range.chunks_per_rank;
                if owner != r && !setters.contains_key(&(r, range.base + index)) {
                    let consequence = match &implied_by {
                        None => "but tiles wait for it: the launch would never finish".to_string(),
                        Some(by) => format!(
                            "but tiles read it once @{by}'s chunks arrive: they would read rows that never came"
                        ),
                    };
                    return Err(fail(
                        consume,
                        format!(
                            "chunk-lower-transfers: on rank {r}, no transfer writes chunk {index} of @{name} (in rank {owner}'s block), {consequence}"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn schedule(plan: &Plan, layout: &[crate::plan::FlagRange]) -> Result<Json, PassFailed> {
    let w = plan.world_size;
    let mut per_rank: Vec<Vec<(i64, Json)>> = vec![Vec::new(); w as usize];
    for t in plan.ops_named("chunk.transfer") {
        let backend = ir::int_attr(t, "backend").and_then(attrs::Backend::from_value);
        let mode = crate::plan::transfer_mode(t);
        // A copy within the rank runs before the kernel, on its stream (the
        // driver may run it on SMs, which waiting tiles would hold): no
        // flag, the kernel starts with the rows in place.
        let before_kernel = mode == Some(attrs::TransferMode::Local);
        // Nor does a chunk whose arrival a later flag of the same copy
        // stream implies (chunk-insert-waits: no tile waits for it).
        let implied = ir::attr(t, crate::insert_waits::IMPLIED_ATTR).is_some();
        let (Some(src_attr), Some(dst_attr)) = (ir::attr(t, "src"), ir::attr(t, "dst")) else {
            return Err(internal(t, "a transfer without regions"));
        };
        if moves_nothing(t)
            || backend == Some(attrs::Backend::Ldst)
            || ir::attr(t, FUSED_ATTR).is_some()
        {
            continue;
        }
        if ir::attr(t, "reduce").is_some() || ir::attr(t, "after").is_some() {
            return Err(fail(
                t,
                "chunk-lower-transfers: reducing transfers and transfers that wait for others are lowered only \
                 by chunk-fuse-reductions (reductions) or chunk-fuse-gathers (an all-gather of what the kernel's tiles produce), which must run first",
            ));
        }
        if backend != Some(attrs::Backend::CopyEngine) {
            return Err(fail(
                t,
                format!(
                    "chunk-lower-transfers: backend '{}' is not implemented yet; use copy_engine or ldst",
                    backend.map_or("?", |b| b.keyword())
                ),
            ));
        }
        let (Some((src_name, _, sizes)), Some(dst_name)) = (region_parts(src_attr), dst_buffer(t))
        else {
            return Err(internal(t, "cannot read the transfer's regions"));
        };
        let (Some(src_buf), Some(dst_buf)) = (plan.buffer(&src_name), plan.buffer(&dst_name))
        else {
            return Err(internal(t, "the transfer's buffers are not in the plan"));
        };
        let range = layout.iter().find(|r| r.buffer == dst_name);
        let order = ir::int_attr(t, "order").unwrap_or(0);
        for r in 0..w {
            let rank_of = |key: &str| crate::plan::rank_at(t, key, r);
            let (Some(src_rank), Some(dst_rank)) = (rank_of("src_rank"), rank_of("dst_rank"))
            else {
                return Err(fail(
                    t,
                    "chunk-lower-transfers: cannot evaluate the rank maps",
                ));
            };
            let (Some(src_off), Some(dst_off)) =
                (region_offsets(src_attr, r), region_offsets(dst_attr, r))
            else {
                return Err(fail(
                    t,
                    "chunk-lower-transfers: cannot evaluate the region offsets",
                ));
            };
            let (src_offset, src_rows, row_elems, src_pitch) =
                as_2d(&src_buf.shape, &src_off, &sizes).ok_or_else(|| {
                    fail(
                        t,
                        "chunk-lower-transfers: the source region is not a 2D strided box",
                    )
                })?;
            let dst_sizes = crate::plan::region_sizes(t).unwrap_or_default();
            let (dst_offset, _, dst_row_elems, dst_pitch) =
                as_2d(&dst_buf.shape, &dst_off, &dst_sizes).ok_or_else(|| {
                    fail(
                        t,
                        "chunk-lower-transfers: the destination region is not a 2D strided box",
                    )
                })?;
            if dst_row_elems != row_elems {
                return Err(fail(
                    t,
                    "chunk-lower-transfers: source and destination rows differ in length",
                ));
            }
            let flag = range
                .filter(|_| !before_kernel && !implied)
                .and_then(|range| range.flag_at(&dst_off));
            // The destination's rank drives a pull, the source's a push.
            let driver = if mode == Some(attrs::TransferMode::Push) {
                src_rank
            } else {
                dst_rank
            };
            per_rank[driver as usize].push((
                order,
                json!({
                    "name": ir::str_attr(t, "sym_name"),
                    "order": order,
                    "src_rank": src_rank,
                    "dst_rank": dst_rank,
                    "src_buffer": src_name,
                    "dst_buffer": dst_name,
                    "src_offset": src_offset,
                    "dst_offset": dst_offset,
                    "rows": src_rows,
                    "row_elems": row_elems,
                    "src_pitch": src_pitch,
                    "dst_pitch": dst_pitch,
                    "flag": flag,
                    "before_kernel": before_kernel,
                }),
            ));
        }
    }
    let copies: Vec<Vec<Json>> = per_rank
        .into_iter()
        .map(|mut list| {
            list.sort_by_key(|(order, _)| *order);
            list.into_iter().map(|(_, c)| c).collect()
        })
        .collect();
    let buffers: Vec<Json> = plan
        .buffers
        .iter()
        .map(|b| {
            json!({"name": b.name, "arg": b.arg, "shape": b.shape, "element": b.element,
                   "element_bytes": b.element_bytes(), "staging": b.staging, "trace": b.trace})
        })
        .collect();
    let num_flags: i64 = layout.iter().map(|r| r.count(w)).sum();
    let consumers: Vec<Json> = layout
        .iter()
        .map(|r| {
            let kind = match r.kind {
                crate::plan::FlagKind::Arrival => "arrival",
                crate::plan::FlagKind::Reduction => "reduction",
                crate::plan::FlagKind::Output => "output",
            };
            json!({"buffer": r.buffer, "kind": kind, "dim": r.dim, "rows_per_chunk": r.rows_per_chunk,
                         "chunks_per_rank": r.chunks_per_rank, "flag_base": r.base})
        })
        .collect();
    // What the launch waits for after the kernel (chunk-fuse-reductions).
    let completion: Json = ir::str_attr(plan.op, crate::fuse_reductions::COMPLETION_ATTR)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!([]));
    let reduction_copies: Json =
        ir::str_attr(plan.op, crate::fuse_reductions::REDUCTION_COPIES_ATTR)
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| json!([]));
    Ok(json!({
        "reduction_copies": reduction_copies,
        "completion": completion,
        "plan": plan.name,
        "world_size": w,
        "num_flags": num_flags,
        "copy_programs": 0,
        "buffers": buffers,
        "chunks": consumers,
        "copies": copies,
    }))
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

/// A box as (element offset, rows, elements per row, row pitch): every
/// dimension after the first one the box does not span fully must be full.
fn as_2d(shape: &[i64], offsets: &[i64], sizes: &[i64]) -> Option<(i64, i64, i64, i64)> {
    let n = shape.len();
    if n == 0 || offsets.len() != n || sizes.len() != n {
        return None;
    }
    let mut strides = vec![1i64; n];
    for d in (0..n - 1).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let offset: i64 = offsets.iter().zip(&strides).map(|(o, s)| o * s).sum();
    // Innermost dimensions spanned fully form one contiguous row.
    let mut inner = n;
    while inner > 1 && sizes[inner - 1] == shape[inner - 1] {
        inner -= 1;
    }
    // Dimensions [inner, n) are full; dimension inner-1 may be partial: the
    // row is sizes[inner-1] * stride; rows are the product of the outer
    // sizes, which must be at most one partial dimension deep.
    let row_elems = sizes[inner - 1] * strides[inner - 1];
    let outer: Vec<usize> = (0..inner - 1).collect();
    let partial_outer: Vec<&usize> = outer.iter().filter(|d| sizes[**d] != 1).collect();
    match partial_outer.as_slice() {
        [] => Some((offset, 1, row_elems, row_elems)),
        [d] if (**d + 1..inner - 1).all(|e| sizes[e] == 1) => {
            Some((offset, sizes[**d], row_elems, strides[**d]))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::as_2d;

    #[test]
    fn boxes_as_2d_copies() {
        // Whole rows: one contiguous block.
        assert_eq!(as_2d(&[8, 4], &[2, 0], &[3, 4]), Some((8, 1, 12, 12)));
        // A column block: 3 rows of 2, pitch 4.
        assert_eq!(as_2d(&[8, 4], &[2, 1], &[3, 2]), Some((9, 3, 2, 4)));
        // 3D, full inner dims.
        assert_eq!(
            as_2d(&[2, 4, 4], &[1, 0, 0], &[1, 4, 4]),
            Some((16, 1, 16, 16))
        );
        // Not expressible as one strided 2D copy.
        assert_eq!(as_2d(&[4, 4, 4], &[0, 0, 0], &[2, 2, 2]), None);
    }
}
