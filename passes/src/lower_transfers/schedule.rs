//! The host's copy schedule that `chunk-lower-transfers` writes into the
//! module ([`schedule`]: per rank, the copies its streams drive, with the
//! plan's buffers and flag ranges), and the refusal of transfers into a
//! consumed buffer that would not set each of its arrival flags exactly
//! once ([`check_arrival_flags`]).

use super::moves_nothing;
use crate::plan::records;
use crate::plan::slots::SlotRing;
use crate::plan::{
    FlagKind, FlagRange, Plan, Transfer, fail, internal, loc, region_offsets, region_parts,
};
use std::collections::HashMap;
use synco_chunk::{Diagnostic, PassFailed, attrs};
use synco_manifest::{ChunkKind, ChunkLayout, Copy, FusedPlan, PlanBuffer};

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
pub(super) fn check_arrival_flags(plan: &Plan, layout: &[FlagRange]) -> Result<(), PassFailed> {
    for range in layout.iter().filter(|r| r.kind == FlagKind::Arrival) {
        let name = &range.buffer;
        let chunk = range.rows_per_chunk;
        let writers = plan.transfers_into(name);
        // The transfer `flag_layout` took the chunk size from.
        let sized_by = writers.first().and_then(|t| t.name()).unwrap_or_default();
        let transfers: Vec<Transfer> = writers.into_iter().filter(|t| !t.is_local()).collect();
        // Chunks whose arrival a later copy implies (`chunk-insert-waits`)
        // set no flag, but their tiles still read them.
        let implied_by = transfers.iter().find_map(|t| t.implied_by());
        let mut setters: HashMap<(i64, i64), Transfer> = HashMap::new();
        for &t in &transfers {
            let Some(sizes) = t.sizes() else {
                return Err(internal(t, "a transfer without a destination region"));
            };
            let rows = sizes.get(range.dim).copied().unwrap_or(0);
            for r in 0..plan.world_size {
                let (Some(on), Some(offsets)) = (t.dst_rank_on(r), t.dst_offsets_on(r)) else {
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
        let consume = plan.consumer_of(name).map_or(plan.op, |c| c.0);
        for r in 0..plan.world_size {
            for index in 0..range.chunks_per_rank * plan.world_size {
                let owner = range
                    .owners
                    .owner(index, range.chunks_per_rank, plan.world_size)
                    .unwrap_or(index / range.chunks_per_rank);
                // (With a cut of the columns, each of the chunk's parts.)
                let parts = range.parts();
                let unset = (0..parts)
                    .find(|part| !setters.contains_key(&(r, range.base + index * parts + part)));
                if let (true, Some(part)) = (owner != r, unset) {
                    let index = match range.cut {
                        Some(_) => format!("{index} (part {part})"),
                        None => index.to_string(),
                    };
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

/// Merges copies made before the kernel whose columns continue an earlier
/// one's (the same rows and pitches, between the same buffers and ranks,
/// each starting where the other's columns end: a re-shard's chunks per
/// head of the rank's own tokens) into that one, so that the rank's own
/// block is one 2-D copy. They set no flag and run in order on the compute
/// stream before the kernel, so nothing waits for any one of them.
fn merge_side_by_side(list: &mut Vec<Copy>) {
    let mut merged: Vec<Copy> = Vec::with_capacity(list.len());
    for copy in list.drain(..) {
        let continues = |earlier: &Copy| {
            earlier.before_kernel
                && copy.before_kernel
                && earlier.flag.is_none()
                && copy.flag.is_none()
                && earlier.after_flag.is_none()
                && copy.after_flag.is_none()
                && earlier.step == copy.step
                && (earlier.src_rank, earlier.dst_rank) == (copy.src_rank, copy.dst_rank)
                && (&earlier.src_buffer, &earlier.dst_buffer)
                    == (&copy.src_buffer, &copy.dst_buffer)
                && (earlier.rows, earlier.src_pitch, earlier.dst_pitch)
                    == (copy.rows, copy.src_pitch, copy.dst_pitch)
                && earlier.src_offset.checked_add(earlier.row_elems) == Some(copy.src_offset)
                && earlier.dst_offset.checked_add(earlier.row_elems) == Some(copy.dst_offset)
                && earlier
                    .row_elems
                    .checked_add(copy.row_elems)
                    .is_some_and(|w| w <= earlier.src_pitch && w <= earlier.dst_pitch)
        };
        match merged.iter_mut().rev().find(|earlier| continues(earlier)) {
            Some(earlier) => earlier.row_elems += copy.row_elems,
            None => merged.push(copy),
        }
    }
    *list = merged;
}

/// The host's copy schedule of `plan`, whose flags `layout` places: per
/// rank, the copies its streams drive (in transfer order), the plan's
/// buffers and flag ranges, and what `chunk-fuse-reductions` recorded.
pub(super) fn schedule(plan: &Plan, layout: &[FlagRange]) -> Result<FusedPlan, PassFailed> {
    let w = plan.world_size;
    let mut per_rank: Vec<Vec<Copy>> = vec![Vec::new(); w as usize];
    for t in plan.transfers() {
        host_copies(plan, layout, t, &mut per_rank)?;
    }
    for list in &mut per_rank {
        // Stable: copies of one order keep the transfers' order.
        list.sort_by_key(|c| c.order);
        merge_side_by_side(list);
    }
    let buffers = plan
        .buffers
        .iter()
        .map(|b| PlanBuffer {
            name: b.name.clone(),
            arg: b.arg,
            shape: b.shape.clone(),
            element: b.element.clone(),
            element_bytes: b.element_bytes(),
            staging: b.staging,
            trace: b.trace,
            held_rows: b
                .slots
                .and_then(|_| SlotRing::new(&b.shape, w))
                .map(SlotRing::physical_rows),
        })
        .collect();
    let chunks = layout
        .iter()
        .map(|r| ChunkLayout {
            buffer: r.buffer.clone(),
            kind: match r.kind {
                FlagKind::Arrival => ChunkKind::Arrival,
                FlagKind::Reduction => ChunkKind::Reduction,
                FlagKind::Output => ChunkKind::Output,
            },
            dim: r.dim,
            rows_per_chunk: r.rows_per_chunk,
            chunks_per_rank: r.chunks_per_rank,
            flag_base: r.base,
        })
        .collect();
    Ok(FusedPlan {
        plan: plan.name.clone(),
        world_size: w,
        // (The ranges follow one another, each ending within MAX_FLAGS:
        // `flag_layout` checked it.)
        num_flags: layout.iter().map(|r| r.count(w)).sum(),
        copy_programs: 0,
        copy_plane: false,
        persistent_programs: None,
        co_resident: false,
        copy_programs_forward: false,
        ring_steps: None,
        buffers,
        chunks,
        copies: per_rank,
        // What the launch waits for after the kernel, and the side
        // streams' copies (chunk-fuse-reductions, chunk-fuse-gathers).
        completion: records::completion(plan)?,
        reduction_copies: records::reduction_copies(plan)?,
        // What chunk-bind-kernel found the kernel's strides must be.
        scalar_args: records::scalar_args(plan)?,
        index_bounds: records::index_bounds(plan)?,
    })
}

/// Adds the copies of transfer `t` that the host drives, one per rank, to
/// the list of the rank that drives each; nothing for a transfer lowered
/// into the kernel or one that moves nothing.
fn host_copies(
    plan: &Plan,
    layout: &[FlagRange],
    t: Transfer,
    per_rank: &mut [Vec<Copy>],
) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let backend = t.backend();
    let mode = t.mode();
    // A copy within the rank runs before the kernel, on its stream (the
    // driver may run it on SMs, which waiting tiles would hold): no
    // flag, the kernel starts with the rows in place.
    let before_kernel = mode == Some(attrs::TransferMode::Local);
    // Nor does a chunk whose arrival a later flag of the same copy
    // stream implies (chunk-insert-waits: no tile waits for it).
    let implied = t.implied_by().is_some();
    let (Some(src_attr), Some(dst_attr)) = (t.src(), t.dst()) else {
        return Err(internal(t, "a transfer without regions"));
    };
    if moves_nothing(t) || t.copied_by_sms() || t.is_fused() {
        return Ok(());
    }
    let forwarded = plan.forwarded_by(t);
    if t.reduces() || t.after().len() > forwarded.len() {
        return Err(fail(
            t,
            "chunk-lower-transfers: reducing transfers and transfers that wait for kernel tiles are lowered only \
             by chunk-fuse-reductions (reductions) or chunk-fuse-gathers (an all-gather of what the kernel's tiles produce), which must run first",
        ));
    }
    let forwards = forwarded_rows(layout, t, &forwarded)?;
    if backend != Some(attrs::Backend::CopyEngine) {
        return Err(fail(
            t,
            format!(
                "chunk-lower-transfers: backend '{}' is not implemented yet; use copy_engine, ldst or tma",
                backend.map_or("?", |b| b.keyword())
            ),
        ));
    }
    let (Some((src_name, _, sizes)), Some(dst_name)) = (region_parts(src_attr), t.dst_buffer())
    else {
        return Err(internal(t, "cannot read the transfer's regions"));
    };
    let (Some(src_buf), Some(dst_buf)) = (plan.buffer(&src_name), plan.buffer(&dst_name)) else {
        return Err(internal(t, "the transfer's buffers are not in the plan"));
    };
    let range = layout.iter().find(|r| r.buffer == dst_name);
    let order = t.order();
    for r in 0..w {
        let (Some(src_rank), Some(dst_rank)) = (t.src_rank_on(r), t.dst_rank_on(r)) else {
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
        let (src_offset, src_rows, src_row_elems, src_pitch) =
            as_2d(&src_buf.shape, &src_off, &sizes).ok_or_else(|| {
                fail(
                    t,
                    "chunk-lower-transfers: the source region is not a 2D strided box",
                )
            })?;
        let dst_sizes = t.sizes().unwrap_or_default();
        let (dst_offset, dst_rows, dst_row_elems, dst_pitch) =
            as_2d(&dst_buf.shape, &dst_off, &dst_sizes).ok_or_else(|| {
                fail(
                    t,
                    "chunk-lower-transfers: the destination region is not a 2D strided box",
                )
            })?;
        let ((rows, row_elems, src_pitch), (_, _, dst_pitch)) = same_rows(
            (src_rows, src_row_elems, src_pitch),
            (dst_rows, dst_row_elems, dst_pitch),
        )
        .ok_or_else(|| {
            fail(
                t,
                "chunk-lower-transfers: source and destination rows differ in length",
            )
        })?;
        let flag = range
            .filter(|_| !before_kernel && !implied)
            .and_then(|range| range.flag_at(&dst_off));
        // The destination's rank drives a pull, the source's a push.
        let driver = if mode == Some(attrs::TransferMode::Push) {
            src_rank
        } else {
            dst_rank
        };
        // A ring's block moved into a slot: its rows where the ranks hold
        // them, in the launch of the step before the destination reads it.
        let (src_offset, dst_offset, step) = match dst_buf.slots {
            None => (src_offset, dst_offset, None),
            Some(_) => slot_copy(
                t,
                w,
                dst_buf,
                [(src_rank, &src_off), (dst_rank, &dst_off)],
                rows.checked_mul(row_elems),
            )?,
        };
        let after_flag = match forwards {
            Some(range) => Some(
                range
                    .flag_at(&src_off)
                    .ok_or_else(|| internal(t, "the forwarded rows have no arrival flag"))?,
            ),
            None => None,
        };
        per_rank[driver as usize].push(Copy {
            name: t.name(),
            order,
            src_rank,
            dst_rank,
            src_buffer: src_name.clone(),
            dst_buffer: dst_name.clone(),
            src_offset,
            dst_offset,
            rows,
            row_elems,
            src_pitch,
            dst_pitch,
            flag,
            before_kernel,
            after_flag,
            step,
        });
    }
    Ok(())
}

/// Where a transfer of `elements` elements into the slotted buffer
/// `buffer` (its own source, an all-gather) reads and writes (element
/// offsets of the rows each rank holds: [`SlotRing::physical_row`]), and
/// the ring step whose launch copies it ([`SlotRing::copy_step`]).
fn slot_copy(
    t: Transfer,
    w: i64,
    buffer: &crate::plan::BufferDecl,
    [(src_rank, src_off), (dst_rank, dst_off)]: [(i64, &[i64]); 2],
    elements: Option<i64>,
) -> Result<(i64, i64, Option<u32>), PassFailed> {
    let ring = SlotRing::new(&buffer.shape, w)
        .ok_or_else(|| internal(t, "a slotted buffer that does not split in blocks"))?;
    let name = &buffer.name;
    let row_elems: i64 = buffer.shape.iter().skip(1).product();
    let step = ring
        .copy_step(
            (src_rank, src_off),
            (dst_rank, dst_off),
            (elements, row_elems),
        )
        .map_err(|why| {
            fail(
                t,
                format!("chunk-lower-transfers: @{name} is kept in ring slots: {why}"),
            )
        })?;
    let offset = |rank: i64| {
        ring.physical_row(rank, src_off[0])
            .checked_mul(row_elems)
            .ok_or_else(|| fail(t, format!("@{name}'s offsets leave 64 bits")))
    };
    let step = u32::try_from(step).map_err(|_| internal(t, "a ring step beyond 32 bits"))?;
    Ok((offset(src_rank)?, offset(dst_rank)?, Some(step)))
}

/// The arrival flags of the rows transfer `t` forwards (it waits for the
/// transfers `forwarded`, which bring them to the rank it reads from), or
/// `None` for a transfer that forwards nothing. The copy waits there for
/// the flag of the chunk it reads, so the rows must be a consumed buffer's
/// chunks whose flags every awaited copy sets.
pub(super) fn forwarded_rows<'l>(
    layout: &'l [FlagRange],
    t: Transfer,
    forwarded: &[Transfer],
) -> Result<Option<&'l FlagRange>, PassFailed> {
    if forwarded.is_empty() {
        return Ok(None);
    }
    let Some(src) = t.src_buffer() else {
        return Err(internal(t, "a transfer without a source region"));
    };
    let Some(range) = layout
        .iter()
        .find(|r| r.kind == FlagKind::Arrival && r.buffer == src)
    else {
        return Err(fail(
            t,
            format!(
                "chunk-lower-transfers: this transfer forwards rows of @{src} once they arrived, but no kernel tiles consume @{src}, so its chunks have no arrival flags to wait for"
            ),
        ));
    };
    if let Some(u) = forwarded.iter().find(|u| u.implied_by().is_some()) {
        return Err(fail(
            t,
            format!(
                "chunk-lower-transfers: this transfer forwards rows that @{} brings, whose arrival flag chunk-insert-waits left unset",
                u.name().unwrap_or_default()
            ),
        ));
    }
    Ok(Some(range))
}

/// A box as (element offset, rows, elements per row, row pitch): every
/// dimension after the first one the box does not span fully must be full.
pub(super) fn as_2d(shape: &[i64], offsets: &[i64], sizes: &[i64]) -> Option<(i64, i64, i64, i64)> {
    let n = shape.len();
    if n == 0 || offsets.len() != n || sizes.len() != n {
        return None;
    }
    let strides = row_major_strides(shape);
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

/// The element strides of a row-major buffer of `shape`.
pub(super) fn row_major_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// A 2D box: `(rows, row_elems, pitch)`.
pub(super) type RowBox = (i64, i64, i64);

/// Two 2D boxes of as many elements as rows of one length: a contiguous
/// box (one row) is cut into the other's rows (a re-sharding all-to-all
/// copies column blocks into whole rows).
pub(super) fn same_rows(a: RowBox, b: RowBox) -> Option<(RowBox, RowBox)> {
    let cut = |whole: RowBox, rows: RowBox| {
        (whole.0 == 1 && Some(whole.1) == rows.0.checked_mul(rows.1))
            .then_some((rows.0, rows.1, rows.1))
    };
    if a.0 == b.0 && a.1 == b.1 {
        Some((a, b))
    } else if let Some(a) = cut(a, b) {
        Some((a, b))
    } else {
        cut(b, a).map(|b| (a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::{as_2d, same_rows};

    #[test]
    fn contiguous_boxes_cut_into_the_other_sides_rows() {
        // 3 rows of 2 (pitch 4) into 6 contiguous elements.
        assert_eq!(
            same_rows((3, 2, 4), (1, 6, 6)),
            Some(((3, 2, 4), (3, 2, 2)))
        );
        assert_eq!(
            same_rows((1, 6, 6), (3, 2, 4)),
            Some(((3, 2, 2), (3, 2, 4)))
        );
        assert_eq!(
            same_rows((3, 2, 4), (3, 2, 8)),
            Some(((3, 2, 4), (3, 2, 8)))
        );
        assert_eq!(same_rows((3, 2, 4), (1, 5, 5)), None);
        assert_eq!(same_rows((3, 2, 4), (2, 3, 4)), None);
    }

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
