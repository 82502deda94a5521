//! A staged reduction's copies run by the copy programs
//! (`chunk-fuse-reductions{mode=stage}`, [`lower_reduction_copies`]): they
//! push finished chunks of partials, and a two-shot all-reduce's sums,
//! into their owners' buffers, and set the owners' flags.

use super::{
    CopyPrograms, CopySite, MIN_COPY_BLOCK, copy_block,
    emit::{copy_blocks, last_to_finish},
    split_grid,
    tma::{self, TmaBox},
};
use crate::{
    abi::AbiArgs,
    flag_ops::{peer_ptr, wait},
    plan::{Plan, fail, internal},
};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Builder, Op, RmwOp, Scope, Sem, Value, builder::Cmp};
use synco_manifest::ReductionCopy;

/// Runs a staged reduction's copies in the kernel's copy programs: the
/// list `chunk-fuse-reductions{mode=stage}` recorded for each rank, which
/// the host's side stream runs for a reduction on the copy engine (see
/// `synco_manifest::ReductionCopy`). Rank `r`'s programs take
/// `per_rank[r]` in order; for each copy they wait until the chunk is
/// produced (and, if the copy says so, until its owner read the previous
/// epoch's), store their blocks into the owner's buffer through the peer
/// mapping, then count themselves done on a counter of their own
/// (`counter_base` + the copy's position, acq_rel/sys); the program that
/// completes the count sets the owner's `arrived` flag, and this rank's
/// `copied` flag if any, to the epoch (release/sys).
#[allow(clippy::too_many_arguments)]
pub fn lower_reduction_copies(
    plan: &Plan,
    kernel: Op,
    abi: AbiArgs,
    per_rank: &[Vec<ReductionCopy>],
    programs: i64,
    placement: CopyPrograms,
    counter_base: i64,
) -> Result<(), PassFailed> {
    // Everything that can fail is resolved before any IR is built.
    let mut resolved: Vec<Vec<(&ReductionCopy, StagedCopy)>> = Vec::new();
    for copies in per_rank {
        let mut list = Vec::new();
        for copy in copies {
            list.push((copy, StagedCopy::resolve(plan, kernel, copy)?));
        }
        resolved.push(list);
    }
    let site = split_grid(kernel, programs, placement)?;
    let b = site.builder.with_loc(ir::location_of(plan.op));
    for (rank, copies) in resolved.iter().enumerate() {
        if copies.is_empty() {
            continue;
        }
        let mine = b.cmpi(Cmp::Eq, abi.rank, b.const_i32(rank as i64));
        b.if_then(mine, |rb| {
            for (position, (copy, staged)) in copies.iter().enumerate() {
                let counter = counter_base + position as i64;
                emit_reduction_copy(&rb, abi, copy, staged, &site, programs, counter);
            }
        });
    }
    Ok(())
}

/// What one reduction copy moves, in the kernel's terms.
struct StagedCopy {
    src: Value,
    dst: Value,
    element: ir::Type,
    /// Offsets and length in elements.
    src_offset: i64,
    dst_offset: i64,
    len: i64,
    block: i64,
    /// The bulk copies' geometry, where the buffer's transfers are on
    /// `tma`; else vector loads and stores.
    tma: Option<TmaBox>,
}

impl StagedCopy {
    fn resolve(plan: &Plan, kernel: Op, copy: &ReductionCopy) -> Result<StagedCopy, PassFailed> {
        if copy.rows.is_some() {
            return Err(fail(
                plan.op,
                format!(
                    "the kernel's copy programs move contiguous chunks; a chunk of @{} is a 2D box (a gathered output's column chunk), which only the copy engine moves",
                    copy.src_buffer
                ),
            ));
        }
        if copy.arrived.is_none() {
            // The copy programs have no stream to end the owner's launch
            // after them: every copy they make sets its owner's flag.
            return Err(internal(
                plan.op,
                "a staged reduction copy without an arrival flag",
            ));
        }
        let arg = |name: &str| {
            let buffer = plan.buffer(name).ok_or_else(|| {
                internal(
                    plan.op,
                    &format!("a reduction copy of @{name}, which is not in the plan"),
                )
            })?;
            let value = crate::abi::buffer_pointer(kernel, buffer)
                .ok_or_else(|| internal(kernel, &format!("@{name} has no kernel argument")))?;
            let bytes = buffer.element_bytes().ok_or_else(|| {
                fail(
                    plan.op,
                    format!("the ldst backend cannot copy {} elements", buffer.element),
                )
            })?;
            let element = ir::parse_type(ir::context_of(kernel), &buffer.element)
                .ok_or_else(|| internal(plan.op, &format!("no type {}", buffer.element)))?;
            Ok::<_, PassFailed>((value, bytes, element))
        };
        let (src, bytes, element) = arg(&copy.src_buffer)?;
        let (dst, dst_bytes, _) = arg(&copy.dst_buffer)?;
        let in_elements = |offset: i64| (offset % bytes == 0).then_some(offset / bytes);
        let (Some(src_offset), Some(dst_offset), Some(len)) = (
            in_elements(copy.src_offset),
            in_elements(copy.dst_offset),
            in_elements(copy.bytes),
        ) else {
            return Err(internal(plan.op, "a reduction copy that splits elements"));
        };
        if dst_bytes != bytes {
            return Err(internal(plan.op, "a reduction copy between element types"));
        }
        let block = copy_block(len, bytes).ok_or_else(|| {
            fail(
                plan.op,
                format!(
                    "the ldst backend copies chunks of a multiple of {MIN_COPY_BLOCK} elements; a chunk of @{} has {len}",
                    copy.src_buffer
                ),
            )
        })?;
        let tma = if by_tma(plan, &copy.src_buffer) {
            let geometry = TmaBox::new((1, len, len, len), block, bytes)
                .and_then(|g| {
                    tma::check_aligned(src_offset, bytes)?;
                    tma::check_aligned(dst_offset, bytes)?;
                    Ok(g)
                })
                .map_err(|why| {
                    fail(
                        plan.op,
                        format!(
                            "the tma backend cannot copy a chunk of @{}: {why}",
                            copy.src_buffer
                        ),
                    )
                })?;
            Some(geometry)
        } else {
            None
        };
        Ok(StagedCopy {
            src,
            dst,
            element,
            src_offset,
            dst_offset,
            len,
            block,
            tma,
        })
    }
}

/// Whether the copies out of `buffer` (a reduction's partials, or a
/// two-shot all-reduce's sums) are bulk copies: its transfers to other
/// ranks are on `tma`.
fn by_tma(plan: &Plan, buffer: &str) -> bool {
    plan.transfers().into_iter().any(|t| {
        !t.is_local()
            && t.src_buffer().as_deref() == Some(buffer)
            && t.backend() == Some(synco_chunk::attrs::Backend::Tma)
    })
}

fn emit_reduction_copy(
    b: &Builder,
    abi: AbiArgs,
    copy: &ReductionCopy,
    staged: &StagedCopy,
    site: &CopySite,
    programs: i64,
    counter: i64,
) {
    let (produced, count) = copy.produced;
    wait(b, abi, b.const_i32(produced), abi.epoch, count);
    if let Some((consumed, count)) = copy.consumed {
        let previous = b.subi(abi.epoch, b.const_i32(1));
        wait(b, abi, b.const_i32(consumed), previous, count);
    }
    let owner = b.const_i32(copy.owner);
    let src_base = b.addptr(staged.src, b.const_i64(staged.src_offset));
    let dst_base = peer_ptr(
        b,
        b.addptr(staged.dst, b.const_i64(staged.dst_offset)),
        owner,
    );
    let ids = (site.copier_id, site.programs);
    match staged.tma {
        Some(geometry) => tma::copy_chunk(b, (src_base, dst_base), geometry, staged.element, ids),
        None => copy_blocks(
            b,
            (src_base, dst_base),
            staged.len,
            staged.block,
            staged.element,
            ids,
        ),
    }
    let last = last_to_finish(b, abi, b.const_i32(counter), programs);
    b.if_then(last, |then| {
        if let Some(arrived) = copy.arrived {
            let owner_flags = peer_ptr(&then, abi.flags, owner);
            then.atomic_rmw(
                RmwOp::Xchg,
                then.addptr(owner_flags, then.const_i32(arrived)),
                abi.epoch,
                Sem::Release,
                Scope::Sys,
            );
        }
        if let Some(copied) = copy.copied {
            then.atomic_rmw(
                RmwOp::Xchg,
                then.addptr(abi.flags, then.const_i32(copied)),
                abi.epoch,
                Sem::Release,
                Scope::Sys,
            );
        }
    });
}
