//! The `ldst` backend of `chunk-lower-transfers`: chunks copied by SM
//! programs of the fused kernel itself.
//!
//! The kernel's 1D grid grows by `C` *copy programs*, the first `C` program
//! ids (so the hardware dispatches them first and they are always resident
//! while compute programs wait). The kernel body becomes
//!
//! ```text
//! pid = program_id(0)
//! if pid < C:   copy program pid: for every ldst transfer in schedule
//!               order, copy blocks pid, pid + C, ... of the chunk from the
//!               source rank's heap (vector loads through the peer mapping)
//!               into this rank's buffer; then count the program done on
//!               the chunk (acq_rel/sys add); the program that completes the
//!               count sets the chunk's flag to the epoch (release/sys).
//! else:         the original kernel, with program_id(0) - C and
//!               num_programs(0) - C.
//! ```
//!
//! Counters live after the flags in the flag array and grow by exactly `C`
//! every launch of the kernel, so they need no reset either: the program
//! whose increment completes a multiple of `C` is the launch's last.
//!
//! A kernel with a 2D grid keeps its program ids: the runtime launches one
//! more *copy plane* in front, `program_id(2) = 0` (dispatched first, as a
//! grid is dispatched x fastest, then y, then z), whose programs with
//! linear id `x + y * num_programs(0) < C` copy and the rest return at
//! once; the kernel runs in plane 1. The schedule records `copy_plane`.
//!
//! A block is one vector load and store of up to 32 KiB ([`copy_block`]):
//! a copy program's bandwidth over NVLink is what it has in flight.
//!
//! The same copy programs also run a staged reduction's copies
//! ([`lower_reduction_copies`]): they push finished chunks of partials (and
//! a two-shot all-reduce's sums) into their owners' buffers.
//!
//! Supported: pull transfers of contiguous chunks (whole rows, as
//! all_gather along dimension 0 produces) whose element count is a multiple
//! of 4096, in kernels with a 1D or 2D grid.

use crate::{
    abi::AbiArgs,
    fuse_reductions::{count_one, peer_ptr, wait},
    plan::{FlagRange, Plan, fail, internal, region_parts},
};
use melior::ir::{AffineExpr, AffineMap};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Builder, Op, RmwOp, Scope, Sem, Value, builder::Cmp};
use synco_manifest::ReductionCopy;

/// Bytes each copy program moves per step (one vector tensor): what one
/// program keeps in flight. Over NVLink between two H200s, 16 programs
/// moved 308 GB/s in steps of 32 KiB and 109 GB/s in steps of 8 KiB
/// (`benches/ag_gemm/experiments/nvlink_sm_probe.py`): a step's latency,
/// not the SM, bounds a program.
pub const COPY_STEP_BYTES: i64 = 32 * 1024;

/// The fewest elements a step may copy.
pub const MIN_COPY_BLOCK: i64 = 4096;

/// Elements per step for a chunk of `len` elements of `element_bytes`
/// bytes: the largest power of two up to [`COPY_STEP_BYTES`] that divides
/// the chunk, if it is at least [`MIN_COPY_BLOCK`].
pub fn copy_block(len: i64, element_bytes: i64) -> Option<i64> {
    let mut block = (COPY_STEP_BYTES / element_bytes.max(1)).max(MIN_COPY_BLOCK);
    while block >= MIN_COPY_BLOCK {
        if len % block == 0 {
            return Some(block);
        }
        block /= 2;
    }
    None
}

/// Emits `map` (one dimension, no symbols: a rank map or a region's
/// offsets) at `rank` as i32 arithmetic with MLIR's affine semantics, as
/// the plan verifier evaluated it: `mod` is never negative, `floordiv` and
/// `ceildiv` round down and up. A verified map divides only by positive
/// constants. Each subexpression's range over ranks `0..world_size` is
/// bounded first: where a dividend cannot be negative, `mod` and
/// `floordiv` are a plain `remsi` / `divsi`; else a `select` corrects the
/// truncating result (so `(r - 1) mod W` on rank 0 is `W - 1`, not -1). A
/// map with a value that may leave i32 on some rank is refused, naming it.
pub fn emit_affine(
    b: &Builder,
    map: AffineMap,
    rank: Value,
    world_size: i64,
) -> Result<Vec<Value>, String> {
    let ranks = Range {
        lo: 0,
        hi: i128::from(world_size) - 1,
    };
    (0..map.result_count())
        .map(|i| {
            let expr = map.result(i).map_err(|e| e.to_string())?;
            Ok(emit_expr(b, expr, rank, ranks)?.0)
        })
        .collect()
}

/// The values an affine expression takes over a range of ranks, bounded
/// (`lo <= value <= hi`; the bounds may be loose, never wrong).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    lo: i128,
    hi: i128,
}

impl Range {
    /// The smallest range holding the four `values`.
    fn hull(values: [i128; 4]) -> Range {
        Range {
            lo: values.into_iter().fold(i128::MAX, i128::min),
            hi: values.into_iter().fold(i128::MIN, i128::max),
        }
    }
}

/// `expr` at `rank`, and the range of its values over `ranks`.
fn emit_expr(
    b: &Builder,
    expr: AffineExpr,
    rank: Value,
    ranks: Range,
) -> Result<(Value, Range), String> {
    let (value, range) = emit_unchecked(b, expr, rank, ranks)?;
    let fits = |v: i128| i32::try_from(v).is_ok();
    if !fits(range.lo) || !fits(range.hi) {
        return Err(format!(
            "`{expr}` may reach {} on ranks 0 to {}, beyond the 32-bit arithmetic of the copy code",
            if fits(range.lo) { range.hi } else { range.lo },
            ranks.hi
        ));
    }
    Ok((value, range))
}

fn emit_unchecked(
    b: &Builder,
    expr: AffineExpr,
    rank: Value,
    ranks: Range,
) -> Result<(Value, Range), String> {
    if expr.is_constant() {
        let c = expr.constant_value();
        let c128 = i128::from(c);
        return Ok((b.const_i32(c), Range { lo: c128, hi: c128 }));
    }
    if expr.is_dim() {
        return Ok((rank, ranks));
    }
    if !expr.is_binary() {
        return Err(format!(
            "`{expr}` has a symbol; rank maps and offsets have none"
        ));
    }
    let (lhs, l) = emit_expr(b, expr.lhs(), rank, ranks)?;
    let (rhs, r) = emit_expr(b, expr.rhs(), rank, ranks)?;
    if expr.is_add() {
        return Ok((
            b.addi(lhs, rhs),
            Range {
                lo: l.lo + r.lo,
                hi: l.hi + r.hi,
            },
        ));
    }
    if expr.is_mul() {
        let products = [l.lo * r.lo, l.lo * r.hi, l.hi * r.lo, l.hi * r.hi];
        return Ok((b.muli(lhs, rhs), Range::hull(products)));
    }
    // Without symbols a divisor is a constant, and the verifier refused
    // every plan whose divisor is not positive.
    let divisor = if expr.rhs().is_constant() {
        i128::from(expr.rhs().constant_value())
    } else {
        0
    };
    if divisor <= 0 {
        return Err(format!(
            "`{expr}` divides by a value that is not a positive constant"
        ));
    }
    let non_negative = l.lo >= 0;
    let zero = || b.const_i32(0);
    let one = || b.const_i32(1);
    if expr.is_mod() {
        let rem = b.remsi(lhs, rhs);
        let range = if non_negative && l.hi < divisor {
            l
        } else {
            Range {
                lo: 0,
                hi: divisor - 1,
            }
        };
        if non_negative {
            return Ok((rem, range));
        }
        let negative = b.cmpi(Cmp::Slt, rem, zero());
        return Ok((b.select(negative, b.addi(rem, rhs), rem), range));
    }
    let floor = |v: i128| v.div_euclid(divisor);
    let ceil = |v: i128| -(-v).div_euclid(divisor);
    if expr.is_floor_div() {
        let quotient = b.divsi(lhs, rhs);
        let range = Range {
            lo: floor(l.lo),
            hi: floor(l.hi),
        };
        if non_negative {
            return Ok((quotient, range));
        }
        let below = b.cmpi(Cmp::Slt, b.remsi(lhs, rhs), zero());
        return Ok((b.select(below, b.subi(quotient, one()), quotient), range));
    }
    if expr.is_ceil_div() {
        let quotient = b.divsi(lhs, rhs);
        let above = b.cmpi(Cmp::Sgt, b.remsi(lhs, rhs), zero());
        let range = Range {
            lo: ceil(l.lo),
            hi: ceil(l.hi),
        };
        return Ok((b.select(above, b.addi(quotient, one()), quotient), range));
    }
    Err(format!(
        "`{expr}` is not an affine operation the copy code lowers"
    ))
}

/// One transfer to copy, with what the code needs.
struct SmCopy<'c> {
    op: Op,
    /// The ranks its maps are evaluated on: `0..world_size`.
    world_size: i64,
    src_rank_map: AffineMap<'c>,
    src_offsets_map: AffineMap<'c>,
    dst_offsets_map: AffineMap<'c>,
    /// Elements in the (contiguous) chunk.
    len: i64,
    /// Elements per copy step (see [`copy_block`]).
    block: i64,
    flag: Option<(i64, usize, i64)>, // (flag base, dim, rows per chunk)
    strides: Vec<i64>,
    arg: usize,
}

/// Where the copy programs go (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPrograms {
    /// The first program ids of a 1D grid.
    Front,
    /// A plane of a 2D grid in front of the kernel's (`program_id(2) = 0`).
    Plane,
}

/// Where `kernel` can take copy programs: in front of a 1D grid, or in an
/// extra plane of a 2D one; an error for a 3D grid.
pub fn placement(kernel: Op, at: Op) -> Result<CopyPrograms, PassFailed> {
    let kernel_name = ir::str_attr(kernel, "sym_name").unwrap_or_default();
    let axes: Vec<i64> = ir::find_all(kernel, "tt.get_program_id")
        .into_iter()
        .chain(ir::find_all(kernel, "tt.get_num_programs"))
        .filter_map(|op| ir::int_attr(op, "axis"))
        .collect();
    if axes.contains(&2) {
        return Err(fail(
            at,
            format!(
                "the ldst backend needs a 1D or 2D grid, but kernel @{kernel_name} reads axis 2"
            ),
        ));
    }
    if !axes.contains(&1) {
        return Ok(CopyPrograms::Front);
    }
    Ok(CopyPrograms::Plane)
}

/// Rewrites `kernel` so that `programs` copy programs copy `transfers`,
/// placed as `placement` says.
#[allow(clippy::too_many_arguments)]
pub fn lower(
    plan: &Plan,
    kernel: Op,
    abi: AbiArgs,
    transfers: &[Op],
    programs: i64,
    placement: CopyPrograms,
    layout: &[FlagRange],
    counter_base: i64,
) -> Result<(), PassFailed> {
    let mut copies = Vec::new();
    for &t in transfers {
        if ir::attr(t, "reduce").is_some() || ir::attr(t, "after").is_some() {
            return Err(fail(
                t,
                "the ldst backend does not lower reducing transfers or transfers that wait for others yet",
            ));
        }
        let (Some((src_buf, src_map, sizes)), Some((dst_buf, dst_map, _))) = (
            ir::attr(t, "src").and_then(region_parts),
            ir::attr(t, "dst").and_then(region_parts),
        ) else {
            return Err(internal(t, "cannot read the transfer's regions"));
        };
        if src_buf != dst_buf {
            return Err(fail(
                t,
                "the ldst backend copies within one buffer (all_gather); not yet between buffers",
            ));
        }
        // Rank r's copy programs run the instance of rank r, into r's own
        // buffer.
        for r in 0..plan.world_size {
            let dst_rank = crate::plan::rank_at(t, "dst_rank", r);
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
        let Some(buffer) = plan.buffer(&dst_buf) else {
            return Err(internal(t, "the transfer's buffer is not in the plan"));
        };
        let Some(arg) = buffer.arg else {
            return Err(fail(
                t,
                format!("the ldst backend needs @{dst_buf} bound to a kernel argument"),
            ));
        };
        // Contiguous: one index in every dimension before the first partial
        // one, everything in every dimension after it.
        let first_partial = sizes
            .iter()
            .zip(&buffer.shape)
            .position(|(s, d)| s != d)
            .unwrap_or(0);
        let outer_single = sizes[..first_partial].iter().all(|s| *s == 1);
        if !outer_single
            || sizes
                .iter()
                .zip(&buffer.shape)
                .skip(first_partial + 1)
                .any(|(s, d)| s != d)
        {
            return Err(fail(
                t,
                "the ldst backend copies contiguous chunks only (whole rows)",
            ));
        }
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
        let mut strides = vec![1i64; buffer.shape.len()];
        for d in (0..buffer.shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * buffer.shape[d + 1];
        }
        copies.push(SmCopy {
            op: t,
            world_size: plan.world_size,
            src_rank_map: crate::plan::rank_map(t, "src_rank")
                .ok_or_else(|| internal(t, "cannot read the transfer's source rank map"))?,
            src_offsets_map: src_map,
            dst_offsets_map: dst_map,
            len,
            block,
            flag: layout
                .iter()
                .find(|r| r.buffer == dst_buf)
                .map(|r| (r.base, r.dim, r.rows_per_chunk)),
            strides,
            arg,
        });
    }
    copies.sort_by_key(|c| ir::int_attr(c.op, "order").unwrap_or(0));

    let site = split_grid(kernel, programs, placement)?;
    for copy in &copies {
        emit_copy(
            &site.builder,
            kernel,
            abi,
            copy,
            site.copier_id,
            site.programs,
            programs,
            counter_base,
        )?;
    }
    Ok(())
}

/// Where [`split_grid`] left the copy programs' code.
pub struct CopySite {
    /// Inserts into the copy programs' branch.
    pub builder: Builder,
    /// The copy program's index, `0..C`.
    pub copier_id: Value,
    /// `C`, as an `i32` value.
    pub programs: Value,
}

/// Gives `kernel` `programs` copy programs placed as `placement` says (the
/// original body moves to the other branch, its program ids shifted past
/// the copy programs in a 1D grid) and returns where their code goes.
pub fn split_grid(
    kernel: Op,
    programs: i64,
    placement: CopyPrograms,
) -> Result<CopySite, PassFailed> {
    let Some(entry) = ir::regions(kernel)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
    else {
        return Err(internal(kernel, "the kernel has no body"));
    };
    let body = ir::ops_in(entry);
    let (Some(&first), Some(&ret)) = (body.first(), body.last()) else {
        return Err(internal(kernel, "the kernel's body is empty"));
    };
    let old_ids: Vec<Op> = ir::walk(kernel)
        .into_iter()
        .filter(|op| {
            matches!(
                ir::op_name(*op).as_str(),
                "tt.get_program_id" | "tt.get_num_programs"
            )
        })
        .collect();
    let b = Builder::before(first);
    let i32t = ir::i32_type(b.ctx);
    let grid = |name: &str, axis: i64| {
        let axis = ir::int_attr_of(i32t, axis);
        ir::result(b.op(name, &[], &[i32t], &[("axis", axis)]), 0)
    };
    let pid = grid("tt.get_program_id", 0);
    let nprog = grid("tt.get_num_programs", 0);
    let c = b.const_i32(programs);
    // The copy programs' ids, and the condition that a program copies.
    let (copier_id, is_copy_program) = match placement {
        CopyPrograms::Front => (pid, b.cmpi(Cmp::Slt, pid, c)),
        CopyPrograms::Plane => {
            let id = b.addi(pid, b.muli(grid("tt.get_program_id", 1), nprog));
            let plane = grid("tt.get_program_id", 2);
            (id, b.cmpi(Cmp::Eq, plane, b.const_i32(0)))
        }
    };
    // In front of a 1D grid, the kernel sees only the programs after them.
    let compute_ids =
        (placement == CopyPrograms::Front).then(|| (b.subi(pid, c), b.subi(nprog, c)));
    let (_, then_block, else_block) = b.if_else(is_copy_program);
    // The original body (everything but the return) runs in the else branch...
    let else_yield = ir::ops_in(else_block)[0];
    for op in body {
        if !ir::same_op(op, ret) {
            unsafe { mlir_sys::mlirOperationMoveBefore(op, else_yield) };
        }
    }
    // ... and sees only the compute programs (in a plane of their own, they
    // keep their ids).
    for op in old_ids {
        let Some((compute_pid, compute_nprog)) = compute_ids else {
            break;
        };
        let replacement = if ir::op_name(op) == "tt.get_program_id" {
            compute_pid
        } else {
            compute_nprog
        };
        ir::replace_all_uses(ir::result(op, 0), replacement);
        ir::erase(op);
    }
    let then_yield = ir::ops_in(then_block)[0];
    let mut cb = Builder::before(then_yield);
    if placement == CopyPrograms::Plane {
        // Programs of the copy plane past the first C have nothing to do.
        let (_, copy_block, _) = cb.if_else(cb.cmpi(Cmp::Slt, copier_id, c));
        cb = Builder::before(ir::ops_in(copy_block)[0]);
    }
    Ok(CopySite {
        builder: cb,
        copier_id,
        programs: c,
    })
}

#[allow(clippy::too_many_arguments)]
fn emit_copy(
    b: &Builder,
    kernel: Op,
    abi: AbiArgs,
    copy: &SmCopy,
    pid: Value,
    programs_value: Value,
    programs: i64,
    counter_base: i64,
) -> Result<(), PassFailed> {
    let b = b.with_loc(ir::location_of(copy.op));
    let Some(base) = crate::tiles::kernel_arg(kernel, copy.arg) else {
        return Err(internal(copy.op, "the buffer's kernel argument is missing"));
    };
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
    let linear = |offsets: Vec<Value>| -> Value {
        let mut total = b.const_i64(0);
        for (off, stride) in offsets.into_iter().zip(&copy.strides) {
            total = b.addi(total, b.muli(b.to_i64(off), b.const_i64(*stride)));
        }
        total
    };
    let src_offsets = emit(copy.src_offsets_map)?;
    let dst_offsets = emit(copy.dst_offsets_map)?;
    let flag_index = copy
        .flag
        .map(|(base, dim, rows)| (base, dst_offsets[dim], rows));
    let src_off = linear(src_offsets);
    let dst_off = linear(dst_offsets);
    // The peer's copy of the buffer: heap bases differ by a multiple of the
    // allocation alignment, so the element delta is a multiple of 16.
    let i64t = ir::i64_type(b.ctx);
    let my_heap = b.load(b.addptr(abi.heap_bases, abi.rank), i64t);
    let src_heap = b.load(b.addptr(abi.heap_bases, src_rank), i64t);
    let delta = b.divsi(b.subi(src_heap, my_heap), b.const_i64(elem_bytes));
    b.assume_multiple_of(delta, 16);
    let src_base = b.addptr(b.addptr(base, delta), src_off);
    let dst_base = b.addptr(base, dst_off);
    copy_blocks(
        &b,
        (src_base, dst_base),
        copy.len,
        copy.block,
        element,
        (pid, programs_value),
    );
    let Some((flag_base, row, rows_per_chunk)) = flag_index else {
        return Ok(());
    };
    // Count this program done; the last one publishes the chunk.
    let chunk = b.divsi(row, b.const_i32(rows_per_chunk));
    let flag = b.addi(chunk, b.const_i32(flag_base));
    let counter = b.addi(flag, b.const_i32(counter_base));
    b.if_then(last_to_finish(&b, abi, counter, programs), |then| {
        then.atomic_rmw(
            RmwOp::Xchg,
            then.addptr(abi.flags, flag),
            abi.epoch,
            Sem::Release,
            Scope::Sys,
        );
    });
    Ok(())
}

/// Copy program `pid` of `programs` copies blocks `pid`, `pid + programs`,
/// ... of `size` elements of the `len` from `from` to `to`: one vector
/// load and store each.
fn copy_blocks(
    b: &Builder,
    (from, to): (Value, Value),
    len: i64,
    size: i64,
    element: ir::Type,
    (pid, programs): (Value, Value),
) {
    let blocks = b.const_i32(len / size);
    b.for_loop(pid, blocks, programs, |body, block| {
        let start = body.muli(block, body.const_i32(size));
        let index = body.addi(body.splat(start, &[size]), body.make_range(size));
        let src = body.addptr(body.splat(from, &[size]), index);
        let value = body.load_tensor(src, element);
        let dst = body.addptr(body.splat(to, &[size]), index);
        body.store(dst, value);
    });
}

/// Counts this copy program done on `flags[counter]` (after a barrier, so
/// that the acq_rel/sys add covers the whole program's stores) and returns
/// whether it was the launch's last: every launch adds exactly `programs`
/// to the counter, whatever other kernels did with the epoch in between,
/// so the program whose increment completes a multiple is the last.
fn last_to_finish(b: &Builder, abi: AbiArgs, counter: Value, programs: i64) -> Value {
    b.barrier();
    let count = count_one(b, abi.flags, counter, Scope::Sys);
    let done = b.remsi(count, b.const_i32(programs));
    b.cmpi(Cmp::Eq, done, b.const_i32(0))
}

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
            let value = match buffer.arg {
                Some(i) => crate::tiles::kernel_arg(kernel, i),
                None => crate::abi::buffer_arg(kernel, name),
            }
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
        Ok(StagedCopy {
            src,
            dst,
            element,
            src_offset,
            dst_offset,
            len,
            block,
        })
    }
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
    copy_blocks(
        b,
        (src_base, dst_base),
        staged.len,
        staged.block,
        staged.element,
        (site.copier_id, site.programs),
    );
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

/// `!tt.ptr<bf16>` -> `bf16`.
fn element_of(ptr_type: &str) -> String {
    ptr_type
        .trim_start_matches("!tt.ptr<")
        .trim_end_matches('>')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use melior::{
        ir::{Attribute, Module},
        pass::{PassManager, transform::create_canonicalizer},
    };
    use synco_chunk::attrs;

    /// What the code `emit_affine` builds for `map` on 8 ranks computes on
    /// `rank` (or why it refused the map): the code is built in a function
    /// returning it, with a constant rank, and folded by the canonicalizer
    /// to the constant it returns.
    fn emitted_value(map: &str, rank: i64) -> Result<Option<i64>, String> {
        let context = synco_chunk::create_context();
        let module = Module::parse(
            &context,
            "func.func @f() -> i32 {\n  %rank = arith.constant 0 : i32\n  return %rank : i32\n}",
        )
        .expect("parses");
        let attribute = Attribute::parse(&context, &format!("affine_map<{map}>")).expect("a map");
        let map = attrs::affine_map_of(attribute).expect("an affine map");
        let module_op = module.as_operation().to_raw();
        let ret = ir::find_all(module_op, "func.return")[0];
        let b = Builder::before(ret);
        let rank = b.const_i32(rank);
        let [value] = emit_affine(&b, map, rank, 8)?[..] else {
            panic!("one result")
        };
        ir::set_operand(ret, 0, value);
        let passes = PassManager::new(&context);
        passes.add_pass(create_canonicalizer());
        let mut module = module;
        passes.run(&mut module).expect("canonicalizes");
        let ret = ir::find_all(module.as_operation().to_raw(), "func.return")[0];
        Ok(ir::constant_int(ir::operands(ret)[0]))
    }

    #[test]
    fn maps_beyond_32_bits_are_refused() {
        // 7 * 2^28 fits in i32; 7 * 2^29 does not, even where the result
        // would (a mod brings it back).
        assert_eq!(
            emitted_value("(d0) -> (d0 * 268435456)", 7),
            Ok(Some(7 << 28))
        );
        for map in [
            "(d0) -> (d0 * 536870912)",
            "(d0) -> ((d0 * 536870912) mod 3)",
            "(d0) -> (d0 - 2147483649)",
        ] {
            let why = emitted_value(map, 0).expect_err(map);
            assert!(why.contains("beyond the 32-bit arithmetic"), "{map}: {why}");
        }
    }

    #[test]
    fn emitted_affine_code_computes_what_the_verifier_evaluates() {
        let context = synco_chunk::create_context();
        for map in [
            "(d0) -> ((d0 + 1) mod 4)",
            "(d0) -> ((d0 - 1) mod 4)",
            "(d0) -> ((d0 * 3 - 7) mod 4)",
            "(d0) -> (((d0 - 5) floordiv 2) * 64)",
            "(d0) -> ((d0 - 5) ceildiv 2)",
            "(d0) -> (d0 ceildiv 3)",
            "(d0) -> (d0 floordiv 3 + 1)",
            "(d0) -> (((d0 + 3) mod 4) * 256 + 64)",
        ] {
            let attribute =
                Attribute::parse(&context, &format!("affine_map<{map}>")).expect("a map");
            let parsed = attrs::affine_map_of(attribute).expect("an affine map");
            for rank in 0..8 {
                let expected = attrs::evaluate_on_rank(parsed, rank).expect("evaluates")[0];
                assert_eq!(
                    emitted_value(map, rank),
                    Ok(Some(expected)),
                    "{map} on rank {rank}"
                );
            }
        }
    }

    #[test]
    fn copy_block_is_the_largest_step_that_divides_the_chunk() {
        // 32 KiB of bf16, f32 and bytes.
        assert_eq!(copy_block(1 << 20, 2), Some(16384));
        assert_eq!(copy_block(1 << 20, 4), Some(8192));
        assert_eq!(copy_block(1 << 20, 1), Some(32768));
        // Smaller steps where the chunk needs them, never below 4096.
        assert_eq!(copy_block(3 * 8192, 2), Some(8192));
        assert_eq!(copy_block(3 * 4096, 2), Some(4096));
        assert_eq!(copy_block(6400, 2), None);
        // Wide elements still copy 4096 per step.
        assert_eq!(copy_block(4096, 16), Some(4096));
    }
}
