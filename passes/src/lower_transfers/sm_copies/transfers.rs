//! The `ldst` transfers: each copy program copies its blocks of every
//! transfer's chunk from the source rank's heap into its own rank's
//! buffer, in schedule order, and the last program to finish a chunk sets
//! its arrival flag ([`lower`]).

use super::{
    CopyPrograms, MIN_COPY_BLOCK, copy_block,
    emit::{copy_blocks, copy_rows, last_to_finish, split_grid},
    emit_affine,
    tma::{self, TensorMaps, TmaBox, TmaSide, TmaView},
};
use crate::plan::BufferDecl;
use crate::{
    abi::AbiArgs,
    flag_ops::{peer_ptr, wait_on},
    lower_transfers::schedule::{as_2d, forwarded_rows, row_major_strides, same_rows},
    plan::{
        FlagKind, FlagRange, Plan, Transfer, fail, internal, region_offsets, region_parts,
        slots::SlotRing,
    },
};
use melior::ir::AffineMap;
use synco_chunk::{PassFailed, attrs};
use synco_ir::{self as ir, Builder, Op, RmwOp, Scope, Sem, Value, builder::Cmp};

/// One transfer to copy, with what the code needs.
struct SmCopy<'c> {
    op: Transfer,
    /// The ranks its maps are evaluated on: `0..world_size`.
    world_size: i64,
    src_rank_map: AffineMap<'c>,
    src_offsets_map: AffineMap<'c>,
    dst_offsets_map: AffineMap<'c>,
    /// Elements in the chunk.
    len: i64,
    /// The chunk as rows of `row_elems` elements, `src_pitch` and
    /// `dst_pitch` apart in the two buffers (one row when it is
    /// contiguous in both).
    rows: i64,
    row_elems: i64,
    src_pitch: i64,
    dst_pitch: i64,
    /// Elements per copy step (see [`copy_block`]).
    block: i64,
    /// The bulk copies' geometry, for `backend(tma)`, and the source and
    /// destination buffers as whole-buffer tensor maps see them, where the
    /// chunk lies within their rows on every rank; else vector loads and
    /// stores.
    tma: Option<(TmaBox, Option<(TmaView, TmaView)>)>,
    /// The arrival flags of the destination's chunks.
    flag: Option<FlagRange>,
    /// The flags of the source rows, where they are forwarded (a ring):
    /// the copy waits on the source rank for the chunk's flag.
    forwards: Option<(i64, usize, i64)>,
    /// The counters of the source rows, where kernel tiles produce them (a
    /// produced all-to-all): the copy waits on the source rank until the
    /// chunk's counter has all its tiles, `(base, dim, rows per chunk,
    /// tiles)`.
    produced: Option<(i64, usize, i64, i64)>,
    /// Row-major strides of the source and destination buffers.
    src_strides: Vec<i64>,
    strides: Vec<i64>,
    /// The source buffer, where it is not the destination, and the
    /// destination (each's name, and the kernel argument it is bound to;
    /// unbound: the ABI's argument of it).
    src: Option<(String, Option<usize>)>,
    dst: (String, Option<usize>),
    /// Where the destination keeps a ring's blocks in two slots: the copy
    /// runs in the launch of the step before its destination reads it,
    /// between the places the ranks hold the block in.
    slots: Option<SlotRing>,
}

/// Rewrites `kernel` so that `programs` copy programs copy `transfers`,
/// placed as `placement` says; returns whether any copy forwards rows
/// another rank's copy programs bring (they then wait for those programs).
#[allow(clippy::too_many_arguments)]
pub fn lower(
    plan: &Plan,
    kernel: Op,
    abi: AbiArgs,
    transfers: &[Transfer],
    programs: i64,
    placement: CopyPrograms,
    layout: &[FlagRange],
    counter_base: i64,
) -> Result<bool, PassFailed> {
    let mut copies = Vec::new();
    for &t in transfers {
        let forwarded = plan.forwarded_by(t);
        // A chunk of what the source rank's tiles produce: its count there.
        let produced = t.src_buffer().and_then(|src| {
            layout
                .iter()
                .find(|r| r.kind == FlagKind::Output && r.buffer == src)
                .and_then(|r| {
                    r.arrivals_per_chunk
                        .map(|n| (r.base, r.dim, r.rows_per_chunk, n))
                })
        });
        if t.reduces() || (t.after().len() > forwarded.len() && produced.is_none()) {
            return Err(fail(
                t,
                "the ldst backend does not lower reducing transfers, or transfers that wait for kernel tiles other than a produced all-to-all's (chunk-fuse-gathers)",
            ));
        }
        let forwards = forwarded_rows(layout, t, &forwarded)?;
        let (Some((src_buf, src_map, sizes)), Some((dst_buf, dst_map, _))) = (
            t.src().and_then(region_parts),
            t.dst().and_then(region_parts),
        ) else {
            return Err(internal(t, "cannot read the transfer's regions"));
        };
        // Rank r's copy programs run the instance of rank r, into r's own
        // buffer.
        for r in 0..plan.world_size {
            let dst_rank = t.dst_rank_on(r);
            if dst_rank != Some(r) {
                return Err(fail(
                    t,
                    format!(
                        "the ldst backend's copy programs load into their own rank's buffer, but on rank {r} this transfer writes {}: write it from the destination's side, `to <...> on (r) -> (r)`, with its source rank map naming the peer",
                        dst_rank.map_or("an unknown rank".into(), |d| format!("rank {d}'s"))
                    ),
                ));
            }
        }
        let (Some(buffer), Some(source)) = (plan.buffer(&dst_buf), plan.buffer(&src_buf)) else {
            return Err(internal(t, "the transfer's buffers are not in the plan"));
        };
        if crate::abi::buffer_pointer(kernel, buffer).is_none() {
            return Err(fail(
                t,
                format!("the ldst backend needs @{dst_buf} bound to a kernel argument"),
            ));
        }
        // Rows of one length in both buffers (contiguous: one row).
        let zeros = vec![0; sizes.len()];
        let boxes = as_2d(&source.shape, &zeros, &sizes)
            .zip(t.sizes().and_then(|d| as_2d(&buffer.shape, &zeros, &d)))
            .and_then(|((_, r, e, p), (_, dr, de, dp))| same_rows((r, e, p), (dr, de, dp)));
        let Some(((rows, row_elems, src_pitch), (_, _, dst_pitch))) = boxes else {
            return Err(fail(
                t,
                "the ldst backend copies chunks that are rows of one length in both buffers (2D strided boxes)",
            ));
        };
        let len: i64 = sizes.iter().product();
        let element_bytes = buffer.element_bytes().ok_or_else(|| {
            fail(
                t,
                format!("the ldst backend cannot copy {} elements", buffer.element),
            )
        })?;
        let Some(block) = copy_block(len, element_bytes) else {
            return Err(fail(
                t,
                format!(
                    "the ldst backend copies chunks of a multiple of {MIN_COPY_BLOCK} elements; this chunk has {len}"
                ),
            ));
        };
        let tma = if t.backend() == Some(attrs::Backend::Tma) {
            let rows = (rows, row_elems, src_pitch, dst_pitch);
            let geometry = TmaBox::new(rows, block, element_bytes)
                .and_then(|tma| {
                    let starts =
                        aligned_starts(t, plan.world_size, (source, buffer), element_bytes)?;
                    Ok((tma, whole_buffer_views(&tma, (source, buffer), &starts)))
                })
                .map_err(|why| fail(t, format!("the tma backend cannot copy this chunk: {why}")))?;
            Some(geometry)
        } else {
            None
        };
        let slots = slotted_ring(plan, t, buffer)?;
        copies.push(SmCopy {
            op: t,
            slots,
            tma,
            world_size: plan.world_size,
            src_rank_map: t
                .src_rank_map()
                .ok_or_else(|| internal(t, "cannot read the transfer's source rank map"))?,
            src_offsets_map: src_map,
            dst_offsets_map: dst_map,
            len,
            block,
            rows,
            row_elems,
            src_pitch,
            dst_pitch,
            flag: layout.iter().find(|r| r.buffer == dst_buf).cloned(),
            forwards: forwards.map(|r| (r.base, r.dim, r.rows_per_chunk)),
            produced,
            src_strides: row_major_strides(&source.shape),
            strides: row_major_strides(&buffer.shape),
            src: (src_buf != dst_buf).then(|| (src_buf.clone(), source.arg)),
            dst: (dst_buf.clone(), buffer.arg),
        });
    }
    // In schedule order; copies that wait for kernel tiles after every
    // other (the tiles may wait for those: Ulysses attention's output
    // after its Q, K and V), and of those the rank's own block last (the
    // tiles finish the peers' blocks first).
    copies.sort_by_key(|c| (c.produced.is_some(), c.op.is_local(), c.op.order()));

    let site = split_grid(kernel, programs, placement)?;
    let mut maps = TensorMaps::default();
    for copy in &copies {
        emit_copy(
            &site.builder,
            kernel,
            abi,
            copy,
            (site.copier_id, site.programs, programs),
            counter_base,
            &mut maps,
        )?;
    }
    Ok(copies
        .iter()
        .any(|c| c.forwards.is_some() || c.produced.is_some()))
}

/// The ring whose slots `buffer` (the transfer's destination) keeps its
/// blocks in, once every rank's copy of `t` checks out
/// ([`SlotRing::copy_step`]); `None` for a buffer without slots.
fn slotted_ring(
    plan: &Plan,
    t: Transfer,
    buffer: &BufferDecl,
) -> Result<Option<SlotRing>, PassFailed> {
    if buffer.slots.is_none() {
        return Ok(None);
    }
    let name = &buffer.name;
    let ring = SlotRing::new(&buffer.shape, plan.world_size)
        .ok_or_else(|| internal(t, "a slotted buffer that does not split in blocks"))?;
    if t.backend() != Some(attrs::Backend::Ldst) {
        return Err(fail(
            t,
            format!(
                "chunk-lower-transfers: @{name} is kept in ring slots, which the copy engine and ldst fill; not tma"
            ),
        ));
    }
    let row_elems: i64 = buffer.shape.iter().skip(1).product();
    let elements = t.sizes().map(|sizes| sizes.iter().product());
    for r in 0..plan.world_size {
        let offsets = t
            .src()
            .zip(t.dst())
            .and_then(|(src, dst)| region_offsets(src, r).zip(region_offsets(dst, r)));
        let (Some((src_off, dst_off)), Some(src_rank)) = (offsets, t.src_rank_on(r)) else {
            return Err(internal(t, "cannot evaluate the transfer's regions"));
        };
        ring.copy_step((src_rank, &src_off), (r, &dst_off), (elements, row_elems))
            .map_err(|why| {
                fail(
                    t,
                    format!("chunk-lower-transfers: @{name} is kept in ring slots: {why}"),
                )
            })?;
    }
    Ok(Some(ring))
}

/// Where a copy into ring slots runs: in the launch of the step before its
/// destination reads the block (logical row `row`, on this rank), a builder
/// inside that guard; and the rows where the source and the destination
/// hold the block then (the place of this step and of the next).
fn in_ring_step(b: &Builder, abi: AbiArgs, ring: SlotRing, row: Value) -> (Builder, Value, Value) {
    let c = |v: i64| b.const_i32(v);
    let step = ring.step_value(b, abi.epoch);
    let block = b.divsi(row, c(ring.block_rows));
    let read_at = ring.step_of_value(b, abi.rank, block);
    let next = b.addi(step, c(1));
    let (_, then_block, _) = b.if_else(b.cmpi(Cmp::Eq, next, read_at));
    let inner = Builder::before(ir::ops_in(then_block)[0]).with_loc(b.loc);
    let place = |s: Value| {
        let at = SlotRing::physical_block_value(&inner, s);
        inner.muli(at, inner.const_i32(ring.block_rows))
    };
    let (src_row, dst_row) = (place(step), place(next));
    (inner, src_row, dst_row)
}

#[allow(clippy::too_many_arguments)]
fn emit_copy(
    b: &Builder,
    kernel: Op,
    abi: AbiArgs,
    copy: &SmCopy,
    (pid, programs_value, programs): (Value, Value, i64),
    counter_base: i64,
    maps: &mut TensorMaps,
) -> Result<(), PassFailed> {
    let b = b.with_loc(ir::location_of(copy.op.0));
    let argument = |(name, arg): &(String, Option<usize>)| {
        crate::abi::bound_pointer(kernel, *arg)
            .or_else(|| crate::abi::buffer_arg(kernel, name))
            .ok_or_else(|| internal(copy.op, &format!("no kernel argument carries @{name}")))
    };
    let base = argument(&copy.dst)?;
    let ptr_type = ir::type_of(base);
    let element = ir::parse_type(b.ctx, &element_of(&ir::print_type(ptr_type)))
        .ok_or_else(|| internal(copy.op, "the buffer's argument is not a pointer"))?;
    let elem_bytes = match ir::print_type(element).as_str() {
        "bf16" | "f16" | "i16" => 2,
        "f32" | "i32" => 4,
        "f64" | "i64" => 8,
        _ => 1,
    };
    let emit = |map: AffineMap| {
        emit_affine(&b, map, abi.rank, copy.world_size)
            .map_err(|why| fail(copy.op, format!("chunk-lower-transfers (ldst): {why}")))
    };
    let src_rank = emit(copy.src_rank_map)?[0];
    let src_offsets = emit(copy.src_offsets_map)?;
    let dst_offsets = emit(copy.dst_offsets_map)?;
    // Into ring slots: in its step's launch only, between the places the
    // ranks hold the block in; the flag set for the next launch.
    let (b, src_at, dst_at, ready) = match copy.slots {
        None => (b, src_offsets.clone(), dst_offsets.clone(), abi.epoch),
        Some(ring) => {
            let (inner, src_row, dst_row) = in_ring_step(&b, abi, ring, dst_offsets[0]);
            let at = |offsets: &[Value], row: Value| {
                std::iter::once(row)
                    .chain(offsets[1..].iter().copied())
                    .collect::<Vec<_>>()
            };
            let ready = inner.addi(abi.epoch, inner.const_i32(1));
            (
                inner,
                at(&src_offsets, src_row),
                at(&dst_offsets, dst_row),
                ready,
            )
        }
    };
    // Rows the source rank received from its own neighbour, or that its
    // tiles produce: every program waits there for their arrival flag, or
    // for their counter to count every tile of the chunk.
    let source_flag = copy
        .forwards
        .map(|(base, dim, rows)| (base, dim, rows, 1))
        .or(copy.produced);
    if let Some((base, dim, rows, count)) = source_flag {
        let chunk = b.divsi(src_offsets[dim], b.const_i32(rows));
        let flag = b.addi(chunk, b.const_i32(base));
        wait_on(
            &b,
            peer_ptr(&b, abi.flags, src_rank),
            flag,
            abi.epoch,
            count,
        );
    }
    let linear = |offsets: &[Value], strides: &[i64]| -> Value {
        let mut total = b.const_i64(0);
        for (off, stride) in offsets.iter().copied().zip(strides) {
            total = b.addi(total, b.muli(b.to_i64(off), b.const_i64(*stride)));
        }
        total
    };
    let src_off = linear(&src_at, &copy.src_strides);
    let dst_off = linear(&dst_at, &copy.strides);
    // The peer's copy of the buffer: heap bases differ by a multiple of the
    // allocation alignment, so the element delta is a multiple of 16.
    let i64t = ir::i64_type(b.ctx);
    let my_heap = b.load(b.addptr(abi.heap_bases, abi.rank), i64t);
    let src_heap = b.load(b.addptr(abi.heap_bases, src_rank), i64t);
    let delta = b.divsi(b.subi(src_heap, my_heap), b.const_i64(elem_bytes));
    b.assume_multiple_of(delta, 16);
    let src_buffer = match &copy.src {
        None => base,
        Some(src) => argument(src)?,
    };
    let peer_buffer = b.addptr(src_buffer, delta);
    let ids = (pid, programs_value);
    let chunk_bases = || (b.addptr(peer_buffer, src_off), b.addptr(base, dst_off));
    match copy.tma {
        // One tensor map per buffer and source rank, made at its first
        // chunk, and the chunk's place in it.
        Some((geometry, Some((src_view, dst_view)))) => {
            // (An all-gather in place reads the peers' copies of the
            // buffer it writes: its source is named by that buffer.)
            let src_name = copy.src.as_ref().unwrap_or(&copy.dst).0.as_str();
            let src_key = format!("src {src_name} {}", copy.src_rank_map);
            let src = maps.whole_buffer(&b, src_key, peer_buffer, src_view, &geometry, element);
            let dst_key = format!("dst {}", copy.dst.0);
            let dst = maps.whole_buffer(&b, dst_key, base, dst_view, &geometry, element);
            let sides = (
                TmaSide::Buffer {
                    descriptor: src,
                    start: src_off,
                    pitch: src_view.pitch,
                },
                TmaSide::Buffer {
                    descriptor: dst,
                    start: dst_off,
                    pitch: dst_view.pitch,
                },
            );
            tma::copy_box(&b, sides, geometry, element, ids);
        }
        Some((geometry, None)) => tma::copy_chunk(&b, chunk_bases(), geometry, element, ids),
        None if copy.rows == 1 => {
            copy_blocks(&b, chunk_bases(), copy.len, copy.block, element, ids);
        }
        None => {
            let rows = (copy.rows, copy.row_elems, copy.src_pitch, copy.dst_pitch);
            copy_rows(&b, chunk_bases(), rows, copy.block, element, ids);
        }
    }
    if let Some(range) = &copy.flag {
        let flag = chunk_flag(&b, range, &dst_offsets);
        publish(&b, abi, (flag, ready), counter_base, programs);
    }
    Ok(())
}

/// The arrival flag of the chunk whose box starts at `offsets` (in-kernel
/// values), as [`FlagRange::flag_at`] places it: `base + row / rows`, or,
/// where the chunks also cut the columns, `base + (row / rows) * parts +
/// column / width`.
fn chunk_flag(b: &Builder, range: &FlagRange, offsets: &[Value]) -> Value {
    let chunk = b.divsi(offsets[range.dim], b.const_i32(range.rows_per_chunk));
    let chunk = match range.cut {
        Some(cut) => b.addi(
            b.muli(chunk, b.const_i32(cut.count)),
            b.divsi(offsets[cut.dim], b.const_i32(cut.width)),
        ),
        None => chunk,
    };
    b.addi(chunk, b.const_i32(range.base))
}

/// Counts this program done on the chunk whose arrival flag is `flag`;
/// the last one publishes the chunk: the flag set to `ready` (the epoch, or
/// the next launch's for a ring step's copy).
fn publish(
    b: &Builder,
    abi: AbiArgs,
    (flag, ready): (Value, Value),
    counter_base: i64,
    programs: i64,
) {
    let counter = b.addi(flag, b.const_i32(counter_base));
    b.if_then(last_to_finish(b, abi, counter, programs), |then| {
        then.atomic_rmw(
            RmwOp::Xchg,
            then.addptr(abi.flags, flag),
            ready,
            Sem::Release,
            Scope::Sys,
        );
    });
}

/// The chunk's first element in the source and destination buffers on
/// every rank; an error where a bulk copy cannot start there (see
/// [`tma::check_aligned`]).
fn aligned_starts(
    t: Transfer,
    world_size: i64,
    (source, destination): (&BufferDecl, &BufferDecl),
    element_bytes: i64,
) -> Result<Vec<(i64, i64)>, String> {
    let start_on = |r: i64, offsets: Option<Vec<i64>>, buffer: &BufferDecl| {
        let Some(offsets) = offsets else {
            return Err(format!("its offsets on rank {r} are unknown"));
        };
        let strides = row_major_strides(&buffer.shape);
        let start = offsets
            .iter()
            .zip(&strides)
            .try_fold(0i64, |sum, (o, s)| {
                o.checked_mul(*s).and_then(|x| sum.checked_add(x))
            })
            .ok_or_else(|| format!("its offset on rank {r} overflows 64 bits"))?;
        tma::check_aligned(start, element_bytes)
            .map_err(|why| format!("on rank {r} in @{}, {why}", buffer.name))?;
        Ok(start)
    };
    (0..world_size)
        .map(|r| {
            Ok((
                start_on(r, t.src_offsets_on(r), source)?,
                start_on(r, t.dst_offsets_on(r), destination)?,
            ))
        })
        .collect()
}

/// The source and destination buffers as rows of the box's pitch in each,
/// if every rank's chunk (first elements `starts`) lies within those rows:
/// then one tensor map per buffer and rank serves every chunk.
fn whole_buffer_views(
    tma: &TmaBox,
    (source, destination): (&BufferDecl, &BufferDecl),
    starts: &[(i64, i64)],
) -> Option<(TmaView, TmaView)> {
    let elements = |b: &BufferDecl| b.shape.iter().try_fold(1i64, |n, d| n.checked_mul(*d));
    let src = TmaView::of(elements(source)?, tma.src_pitch)?;
    let dst = TmaView::of(elements(destination)?, tma.dst_pitch)?;
    starts
        .iter()
        .all(|&(s, d)| src.holds(s, tma.row_elems) && dst.holds(d, tma.row_elems))
        .then_some((src, dst))
}

/// `!tt.ptr<bf16>` -> `bf16`.
fn element_of(ptr_type: &str) -> String {
    ptr_type
        .trim_start_matches("!tt.ptr<")
        .trim_end_matches('>')
        .to_string()
}
