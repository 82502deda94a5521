//! `chunk-split-first-wave`: keep the first wave of a per-source GEMM busy
//! while the peers' operands are still on the wire.
//!
//! A consumer read per source (`chunk.consume ... source("src")`, the
//! reduce-scatter from gathered operands) makes every tile multiply its
//! rank's own block first, then wait for the peer's chunks and multiply
//! those. The first wave of tiles needs all of the peer's A rows and the
//! first chunk of its B columns, which cross the link only well after the
//! own halves are done: every SM idles meanwhile. This pass splits the
//! tiles of the operand's first `n` chunks (the operand whose tiles a swizzle
//! group walks last, B's column chunks; `split-chunks`) in two:
//!
//! * programs `[0, E)` (the `E` split tiles, first in dispatch order)
//!   multiply only the own block and store the fp32 accumulator in the
//!   scratch buffer `@synco_split_acc` (the runtime allocates it, the
//!   kernel takes it as `synco_buffer_synco_split_acc`), then count their
//!   flag (`chunk.arrive`, GPU scope);
//! * programs `[E, T)` are the other tiles, whole, as before;
//! * `E` programs appended after the grid (`tt.get_num_programs` is
//!   `T + E`) wait for their tile's flag, load its accumulator and
//!   multiply the peers' blocks into it, then run the rest of the tile
//!   (its stores).
//!
//! The loop over `src` (which `chunk-reorder-tiles` rotated so that its
//! first iteration reads the rank's own block) runs iteration 0 only in
//! the first programs and skips it in the appended ones; everything after
//! the loop runs in an `scf.if` that the first programs skip. The
//! accumulator goes through memory unchanged, so the results are
//! bit-identical to the unsplit kernel's. The copies of the split tiles'
//! chunks go last on every copy stream (their `order`s move behind the
//! other chunks' of the same buffer), as those tiles read them last.
//!
//! No wait can deadlock: the first programs wait for nothing, the appended
//! ones only for the first ones (lower program ids, dispatched first) and
//! for copies, which wait for no tile.
//!
//! The plan records `synco.split_tiles = E` and `synco.split_flags = base`
//! (the ready flags follow the flag layout of `plan::flag_layout`);
//! `chunk-lower-transfers` adds the flags to `num_flags` and `E` to the
//! schedule's `split_programs`, which the runtime appends to the 1D grid.
//!
//! Options:
//! * `split-chunks=auto|N` (default `auto`): how many leading chunks'
//!   tiles to split; `auto` splits the first chunk when its tiles fit in
//!   one wave (`sms` programs) and the operand has more than one chunk,
//!   `0` turns the pass off;
//! * `sms=N` (default 132): programs in one wave (the GPU's SMs).
//!
//! Plans without a per-source consumer are left alone; so are kernels the
//! pass cannot split, with a remark saying why (a persistent or 2D grid,
//! a tile order that does not walk one operand's chunks in turn, a plan
//! that also produces a buffer, SM copy programs, a loop over sources
//! that does not carry one accumulator).
//!
//! Preconditions: `chunk-reorder-tiles` and `chunk-insert-waits` ran (the
//! loop over sources is rotated and waits in each iteration), collectives
//! expanded. Postconditions: as above; the kernel computes the same
//! results with `E` more programs.

use crate::{
    plan::{
        FlagKind, Plan, STAGING_ATTR, bound_kernel, declare_kernel_buffer, fail, flag_layout, loc,
        plans, region_offsets,
    },
    tiles::{SOURCE_INDEX_ATTR, TILE_INDEX_ATTR, swizzle_group},
};
use synco_chunk::{Diagnostic, PassDescriptor, PassFailed, PassOption, attrs};
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

pub static PASS: PassDescriptor = PassDescriptor {
    argument: "chunk-split-first-wave",
    description: "Split the first wave's tiles of a per-source GEMM into an own half at the start and a peers' half at the end, so no SM idles while the peers' first chunks cross",
    anchor: "builtin.module",
    options: &[
        PassOption {
            name: "split-chunks",
            description: "Leading chunks whose tiles are split: auto (the first one, when its tiles fit in one wave), 0 (off) or N",
            default: "auto",
        },
        PassOption {
            name: "sms",
            description: "Programs in one wave of the kernel (the GPU's SMs)",
            default: "132",
        },
    ],
    run,
};

/// Discardable attribute on a split plan: the tiles split (`E`).
pub const SPLIT_TILES_ATTR: &str = "synco.split_tiles";

/// Discardable attribute on a split plan: the first of its `E` ready flags.
pub const SPLIT_FLAGS_ATTR: &str = "synco.split_flags";

/// The scratch buffer of the split tiles' accumulators.
pub const SPLIT_BUFFER: &str = "synco_split_acc";

/// The ready flags a split plan adds after its flag layout (0 if none).
pub fn split_flags(plan: &Plan) -> i64 {
    ir::int_attr(plan.op, SPLIT_TILES_ATTR).unwrap_or(0)
}

fn run(module: melior::ir::operation::OperationRef, options: &[&str]) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let requested = match options.first().copied().unwrap_or("auto") {
        "auto" | "" => None,
        n => Some(n.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            fail(
                module,
                format!(
                    "{}: split-chunks={n} is neither auto nor a count",
                    PASS.argument
                ),
            )
        })?),
    };
    let sms = options
        .get(1)
        .copied()
        .filter(|s| !s.is_empty())
        .unwrap_or("132");
    let sms: i64 = sms.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
        fail(
            module,
            format!("{}: sms={sms} is not a positive count", PASS.argument),
        )
    })?;
    if requested == Some(0) {
        return Ok(());
    }
    for plan in plans(module) {
        let Some(site) = find_site(&plan, module, requested, sms)? else {
            continue;
        };
        let (kernel, abi) = bound_kernel(&plan, module, PASS.argument)?;
        let base: i64 = flag_layout(&plan)?
            .iter()
            .map(|r| r.count(plan.world_size))
            .sum();
        let acc_shape = ir::tensor_shape(ir::type_of(site.init)).unwrap_or_default();
        let scratch = declare_kernel_buffer(
            &plan,
            kernel,
            SPLIT_BUFFER,
            &[site.early * acc_shape[0], acc_shape[1]],
            "f32",
            &[STAGING_ATTR],
            PASS.argument,
        )?;
        split_kernel(&plan, &site, abi, scratch, base)?;
        reorder_copies(&plan, &site)?;
        let ctx = ir::context_of(plan.op);
        let i64_attr = |v: i64| ir::int_attr_of(ir::i64_type(ctx), v);
        ir::set_attr(plan.op, SPLIT_TILES_ATTR, i64_attr(site.early));
        ir::set_attr(plan.op, SPLIT_FLAGS_ATTR, i64_attr(base));
        Diagnostic::remark(
            loc(site.consume),
            format!(
                "the first {} tiles (@{}'s chunks {}..{}) run in two halves: their own block in the first programs, \
                 the peers' in {} programs after the grid; those chunks are copied last",
                site.early,
                site.buffer,
                0,
                site.split_chunks - 1,
                site.early
            ),
        )
        .emit();
    }
    Ok(())
}

/// What the pass splits in one plan.
struct Site {
    consume: Op,
    buffer: String,
    /// The kernel's program id (axis 0) and the loop over sources.
    program_id: Op,
    source_loop: Op,
    /// The accumulator's initial value (the loop's only iteration value).
    init: Value,
    /// Tiles split, and the leading chunks they read.
    early: i64,
    split_chunks: i64,
    /// Dimension the chunks cut, and elements per chunk along it.
    dim: usize,
    rows_per_chunk: i64,
}

/// The consumer to split for, or `None` (with a remark) when the plan has
/// none or its kernel cannot be split.
fn find_site(
    plan: &Plan,
    module: Op,
    requested: Option<i64>,
    sms: i64,
) -> Result<Option<Site>, PassFailed> {
    let per_source: Vec<Op> = plan
        .ops_named("chunk.consume")
        .into_iter()
        .filter(|c| ir::attr(*c, "source").is_some())
        .collect();
    let Some(first) = per_source.first().copied() else {
        return Ok(None);
    };
    let skip = |why: String| {
        Diagnostic::remark(loc(first), format!("{}: not split: {why}", PASS.argument)).emit();
        Ok(None)
    };
    if !plan.ops_named("chunk.produce").is_empty() {
        return skip("the plan also produces a buffer from the kernel's tiles".into());
    }
    if ir::attr(plan.op, SPLIT_TILES_ATTR).is_some() {
        return skip("already split".into());
    }
    let kernel = plan.kernel_in(module)?;
    let layout = flag_layout(plan)?;
    // The operand whose tiles a swizzle group walks last: its chunks
    // arrive one wave after another (see `chunk-select-chunk-size`).
    let mut found = None;
    for consume in &per_source {
        let name = ir::attr(*consume, "buffer")
            .and_then(ir::symbol_value)
            .unwrap_or_default();
        let (Some(buffer), Some(range)) = (
            plan.buffer(&name),
            layout
                .iter()
                .find(|r| r.kind == FlagKind::Arrival && r.buffer == name),
        ) else {
            continue;
        };
        if buffer.arg.is_none() {
            continue;
        }
        let tile = ir::int_attr(*consume, "tile").unwrap_or(1).max(1);
        // The tile index chunk-reorder-tiles marked: per source it keeps the
        // kernel's order, `t + 0` (a no-op for the later passes to find).
        let Some(t) = ir::walk(kernel)
            .into_iter()
            .find(|op| ir::str_attr(*op, TILE_INDEX_ATTR).as_deref() == Some(name.as_str()))
            .and_then(|op| ir::operands(op).first().copied())
        else {
            continue;
        };
        if crate::select_chunk_size::walked_last(t) {
            found = Some((*consume, name, range.clone(), tile, t));
        }
    }
    let Some((consume, buffer, range, tile, t)) = found else {
        return skip(
            "no per-source operand's tiles are walked last by the kernel's tile order".into(),
        );
    };
    let others: i64 = per_source
        .iter()
        .filter(|c| !ir::same_op(**c, consume))
        .filter_map(|c| crate::select_chunk_size::tiles_per_source(plan, *c))
        .product();
    if swizzle_group(t).is_none_or(|g| g < others) {
        return skip(format!(
            "a swizzle group does not hold the other operands' {others} tiles, so the first wave reads more than @{buffer}'s first chunks"
        ));
    }
    let tiles_per_chunk = others * (range.rows_per_chunk / tile);
    let split_chunks = match requested {
        Some(n) => n,
        None if tiles_per_chunk <= sms => 1,
        None => {
            return skip(format!(
                "one chunk of @{buffer} holds {tiles_per_chunk} tiles, more than a wave of {sms} programs"
            ));
        }
    };
    if split_chunks >= range.chunks_per_rank {
        let message = format!(
            "{}: split-chunks={split_chunks} leaves none of @{buffer}'s {} chunks per rank unsplit",
            PASS.argument, range.chunks_per_rank
        );
        if requested.is_some() {
            return Err(fail(consume, message));
        }
        return skip(format!(
            "@{buffer} has {} chunk per rank",
            range.chunks_per_rank
        ));
    }
    let uses_copy_programs = plan.ops_named("chunk.transfer").into_iter().any(|t| {
        ir::int_attr(t, "backend").and_then(attrs::Backend::from_value)
            == Some(attrs::Backend::Ldst)
    });
    if uses_copy_programs {
        return skip(
            "SM copy programs move chunks (their programs come in front of the grid)".into(),
        );
    }
    // A 1D grid of tiles: one program id, of axis 0, in no loop.
    let ids = ir::find_all(kernel, "tt.get_program_id");
    let [program_id] = ids.as_slice() else {
        return skip(format!("the kernel reads {} program ids", ids.len()));
    };
    let in_loop = |op: Op| {
        let mut at = ir::parent_op(op);
        while let Some(p) = at {
            if ir::op_name(p) == "scf.for" || ir::op_name(p) == "scf.while" {
                return true;
            }
            if ir::op_name(p) == "tt.func" {
                return false;
            }
            at = ir::parent_op(p);
        }
        false
    };
    if ir::int_attr(*program_id, "axis") != Some(0) || in_loop(*program_id) {
        return skip("the kernel is not a 1D grid with one program per tile".into());
    }
    let Some(source_loop) = ir::walk(kernel)
        .into_iter()
        .filter(|op| ir::attr(*op, SOURCE_INDEX_ATTR).is_some())
        .find_map(ir::parent_op)
        .and_then(enclosing_for)
    else {
        return skip("no loop over sources was rotated (run chunk-reorder-tiles first)".into());
    };
    let operands = ir::operands(source_loop);
    let bounds: Vec<Option<i64>> = operands
        .iter()
        .take(3)
        .map(|v| ir::constant_int(*v))
        .collect();
    if bounds != [Some(0), Some(plan.world_size), Some(1)] || operands.len() != 4 {
        return skip(
            "the loop over sources does not run 0 to W by 1 carrying one accumulator".into(),
        );
    }
    let init = operands[3];
    let acc_ty = ir::type_of(init);
    let is_f32 = ir::tensor_element(acc_ty).is_some_and(|e| ir::print_type(e) == "f32");
    if ir::tensor_shape(acc_ty).map(|s| s.len()) != Some(2) || !is_f32 {
        return skip(format!(
            "the loop over sources carries {}, not a 2D fp32 accumulator",
            ir::print_type(acc_ty)
        ));
    }
    let func_body = ir::block_of(*program_id);
    if !func_body.is_some_and(|b| ir::block_of(source_loop).is_some_and(|l| ir::same_block(b, l))) {
        return skip("the loop over sources is not in the kernel's top level".into());
    }
    Ok(Some(Site {
        consume,
        buffer,
        program_id: *program_id,
        source_loop,
        init,
        early: split_chunks * tiles_per_chunk,
        split_chunks,
        dim: range.dim,
        rows_per_chunk: range.rows_per_chunk,
    }))
}

/// The `scf.for` that holds `op`'s block.
fn enclosing_for(op: Op) -> Option<Op> {
    let mut at = Some(op);
    while let Some(o) = at {
        if ir::op_name(o) == "scf.for" {
            return Some(o);
        }
        at = ir::parent_op(o);
    }
    None
}

/// Rewrites the kernel (see the module doc).
fn split_kernel(
    plan: &Plan,
    site: &Site,
    abi: crate::abi::AbiArgs,
    scratch: Value,
    flag_base: i64,
) -> Result<(), PassFailed> {
    let pid = ir::result(site.program_id, 0);
    let Some(after_pid) = ir::next_op(site.program_id) else {
        return Err(crate::plan::internal(
            site.program_id,
            "the program id ends its block",
        ));
    };
    let b = Builder::before(after_pid).with_loc(ir::location_of(site.program_id));
    let axis = ir::int_attr_of(ir::i32_type(b.ctx), 0);
    let programs = ir::result(
        b.op(
            "tt.get_num_programs",
            &[],
            &[ir::i32_type(b.ctx)],
            &[("axis", axis)],
        ),
        0,
    );
    let early = b.const_i32(site.early);
    let tiles = b.subi(programs, early);
    let peers_half = b.cmpi(Cmp::Sge, pid, tiles);
    let own_half = b.cmpi(Cmp::Slt, pid, early);
    let shifted = b.subi(pid, tiles);
    let tile = b.select(peers_half, shifted, pid);
    let keep: Vec<Op> = [tiles, peers_half, own_half, shifted, tile]
        .into_iter()
        .filter_map(ir::defining_op)
        .collect();
    ir::replace_uses_except(pid, tile, &keep);

    // Before the loop: its bounds, the scratch tile and the accumulator.
    let b = Builder::before(site.source_loop).with_loc(ir::location_of(site.source_loop));
    let (zero, one) = (b.const_i32(0), b.const_i32(1));
    let lower = b.select(peers_half, one, zero);
    let upper = b.select(own_half, one, b.const_i32(plan.world_size));
    ir::set_operand(site.source_loop, 0, lower);
    ir::set_operand(site.source_loop, 1, upper);
    let acc_ty = ir::type_of(site.init);
    let shape = ir::tensor_shape(acc_ty).unwrap_or_default();
    let (rows, cols) = (shape[0], shape[1]);
    let ptrs = scratch_tile(&b, scratch, tile, rows, cols);
    let ready = b.addi(tile, b.const_i32(flag_base));
    b.if_then(peers_half, |then| {
        crate::fuse_reductions::wait(&then, abi, ready, abi.epoch, 1);
    });
    let mask = b.splat(peers_half, &shape);
    let stored = b.load_masked(ptrs, mask, b.zeros(acc_ty));
    let init = b.select(peers_half, stored, site.init);
    ir::set_operand(site.source_loop, 3, init);

    // After the loop: the own half stores its accumulator and counts its
    // flag; every other program runs the rest of the tile.
    let Some(block) = ir::block_of(site.source_loop) else {
        return Err(crate::plan::internal(
            site.source_loop,
            "the loop has no block",
        ));
    };
    let ops = ir::ops_in(block);
    let Some(position) = ops.iter().position(|o| ir::same_op(*o, site.source_loop)) else {
        return Err(crate::plan::internal(
            site.source_loop,
            "the loop is not in its block",
        ));
    };
    let rest: Vec<Op> = ops[position + 1..ops.len().saturating_sub(1)].to_vec();
    let Some(first_after) = ops.get(position + 1).copied() else {
        return Err(crate::plan::internal(
            site.source_loop,
            "the loop ends its block",
        ));
    };
    let b = Builder::before(first_after).with_loc(ir::location_of(site.source_loop));
    let (_, own_block, rest_block) = b.if_else(own_half);
    let acc = ir::result(site.source_loop, 0);
    let own_yield = *ir::ops_in(own_block)
        .last()
        .ok_or_else(|| crate::plan::internal(site.source_loop, "empty scf.if"))?;
    let ob = Builder::before(own_yield).with_loc(ir::location_of(site.source_loop));
    ob.store(ptrs, acc);
    let scope = ir::int_attr_of(ir::i32_type(ob.ctx), attrs::MemScope::Gpu as i64);
    ob.op(
        "chunk.arrive",
        &[abi.flags, ready],
        &[],
        &[("scope", scope)],
    );
    let rest_yield = *ir::ops_in(rest_block)
        .last()
        .ok_or_else(|| crate::plan::internal(site.source_loop, "empty scf.if"))?;
    for op in rest {
        ir::move_before(op, rest_yield);
    }
    Ok(())
}

/// Pointers to split tile `tile`'s accumulator in the scratch buffer
/// (`rows x cols` fp32, row-major, tile after tile).
fn scratch_tile(b: &Builder, scratch: Value, tile: Value, rows: i64, cols: i64) -> Value {
    let base = b.addptr(scratch, b.muli(tile, b.const_i32(rows * cols)));
    let i32 = ir::i32_type(b.ctx);
    let expand = |v: Value, axis: i64, shape: &[i64]| {
        let attr = ir::int_attr_of(i32, axis);
        ir::result(
            b.op(
                "tt.expand_dims",
                &[v],
                &[ir::ranked_tensor(shape, i32)],
                &[("axis", attr)],
            ),
            0,
        )
    };
    let broadcast = |v: Value| {
        ir::result(
            b.op(
                "tt.broadcast",
                &[v],
                &[ir::ranked_tensor(&[rows, cols], i32)],
                &[],
            ),
            0,
        )
    };
    let row = expand(b.make_range(rows), 1, &[rows, 1]);
    let row = b.muli(row, b.splat(b.const_i32(cols), &[rows, 1]));
    let col = expand(b.make_range(cols), 0, &[1, cols]);
    let offsets = b.addi(broadcast(row), broadcast(col));
    b.addptr(b.splat(base, &[rows, cols]), offsets)
}

/// Moves the copies of the split chunks behind the buffer's other chunks:
/// the split tiles read them last. The buffer's copies keep the same set
/// of `order`s.
fn reorder_copies(plan: &Plan, site: &Site) -> Result<(), PassFailed> {
    let ctx = ir::context_of(plan.op);
    let mut copies: Vec<(i64, bool, Op)> = Vec::new();
    for t in plan.ops_named("chunk.transfer") {
        if crate::plan::dst_buffer(t).as_deref() != Some(site.buffer.as_str()) {
            continue;
        }
        let Some(offsets) = ir::attr(t, "dst").and_then(|a| region_offsets(ctx, a, 0)) else {
            return Err(crate::plan::internal(
                t,
                "a transfer without a destination region",
            ));
        };
        let chunk = offsets.get(site.dim).copied().unwrap_or(0) / site.rows_per_chunk;
        copies.push((
            ir::int_attr(t, "order").unwrap_or(0),
            chunk < site.split_chunks,
            t,
        ));
    }
    let mut orders: Vec<i64> = copies.iter().map(|(o, _, _)| *o).collect();
    orders.sort_unstable();
    copies.sort_by_key(|(order, split, _)| (*split, *order));
    for (order, (_, _, t)) in orders.into_iter().zip(copies) {
        ir::set_attr(t, "order", ir::int_attr_of(ir::i64_type(ctx), order));
    }
    Ok(())
}
