//! `chunk-reorder-tiles`: run tiles in the order their chunks arrive.
//!
//! For each `chunk.consume @A dim(d) tile(T)` of a plan, finds the kernel's
//! tile index `t` along `d` (the value its loads of `@A` multiply by `T`, or
//! the value named by `index("...")`) and remaps it so that, in dispatch
//! order, tiles consume chunks in arrival order: the rank's own block first,
//! then the block of rank `r+1`, `r+2`, ... (see `chunk-expand-collectives`).
//!
//! * 2D grid, `t = tt.get_program_id 0` and the other tile index is
//!   `tt.get_program_id 1`: CUDA dispatches `x` fastest, so the grid would
//!   sweep every row block before finishing one. The pass linearises the
//!   program id and makes `t` the slow index
//!   (`L = pid0 + pid1 * num_programs(0)`, `t' = L / num_programs(1)`,
//!   `other' = L % num_programs(1)`), then rotates `t'`.
//! * Otherwise (a 1D grid with GROUP_M swizzle, a persistent tile loop, or
//!   a 2D grid whose row index is already the slow axis) the tile order is
//!   already row-block-major; the pass only rotates `t`:
//!   `t' = (t + rank * T_r) mod T_all`, with `T_r = block / T` row tiles per
//!   rank and `T_all = A.shape[d] / T`.
//!
//! Producers run the other way round: for `chunk.produce @tiles @P` whose
//! buffer `@P` is reduced by the plan (a reduce-scatter's partial), tiles
//! compute the blocks other ranks own first, starting with rank `r+1`'s,
//! and the rank's own block last (`t' = (t + (rank + 1) * T_r) mod T_all`),
//! so that partials are ready by the time their owner reduces them; the
//! tile index is found from the kernel's stores of `@P`.
//!
//! The op computing `t'` is marked `synco.tile_index = "<buffer>"` for
//! `chunk-insert-waits` and `chunk-fuse-reductions`. A remark reports what
//! was done.
//!
//! Options: none.
//! Preconditions: `chunk-bind-kernel` ran (the rank is an ABI argument);
//! `A.shape[d]` and the block are multiples of `T`; a kernel either
//! consumes gathered buffers or produces reduced ones, not both.
//! Postconditions: every consumed buffer and every produced reduced buffer
//! has a marked tile index.

use crate::{
    plan::{bound_kernel, fail, internal, loc, plans},
    tiles::{Access, TILE_INDEX_ATTR, find_tile_index},
};
use synco_chunk::{Diagnostic, PassDescriptor, PassFailed};
use synco_ir::{self as ir, Builder, Op, Value};

pub static PASS: PassDescriptor = PassDescriptor {
    argument: "chunk-reorder-tiles",
    description: "Remap the kernel's tile index so tiles consume chunks in arrival order",
    anchor: "builtin.module",
    options: &[],
    run,
};

fn run(module: melior::ir::operation::OperationRef, _options: &[&str]) -> Result<(), PassFailed> {
    let module = module.to_raw();
    for plan in plans(module) {
        let (kernel, abi) = bound_kernel(&plan, module, PASS.argument)?;
        let reduced = crate::plan::reduced_buffers(&plan);
        let consumes = plan.ops_named("chunk.consume");
        let produces: Vec<Op> = plan
            .ops_named("chunk.produce")
            .into_iter()
            .filter(|p| {
                ir::attr(*p, "buffer")
                    .and_then(ir::symbol_value)
                    .is_some_and(|b| reduced.contains(&b))
            })
            .collect();
        if let (Some(_), Some(produce)) = (consumes.first(), produces.first()) {
            return Err(fail(
                *produce,
                "chunk-reorder-tiles: a kernel that both consumes gathered chunks and produces reduced ones \
                 needs two tile orders; this is not supported yet",
            ));
        }
        let tile_maps = consumes
            .into_iter()
            .map(|c| (c, Access::Load))
            .chain(produces.into_iter().map(|p| (p, Access::Store)));
        for (consume, access) in tile_maps {
            let name = ir::attr(consume, "buffer")
                .and_then(ir::symbol_value)
                .unwrap_or_default();
            let Some(buffer) = plan.buffer(&name) else {
                continue;
            };
            let Some(arg) = buffer.arg else {
                return Err(fail(
                    consume,
                    format!("@{name} is not bound to a kernel argument"),
                ));
            };
            let dim = ir::int_attr(consume, "dim").unwrap_or(0) as usize;
            let tile = ir::int_attr(consume, "tile").unwrap_or(1);
            let rows = buffer.shape[dim];
            let block = rows / plan.world_size;
            if rows % tile != 0 || block % tile != 0 {
                return Err(fail(
                    consume,
                    format!(
                        "tiles of {tile} do not divide @{name}'s {rows} rows into whole per-rank blocks of {block}"
                    ),
                ));
            }
            let index_name = ir::str_attr(consume, "index");
            let t = find_tile_index(kernel, arg, access, tile, index_name.as_deref(), consume)?;
            // Consumers start at their own block, producers of partials at
            // the next rank's (their own block last).
            let first_block = i64::from(access == Access::Store);
            let (marked, how) = remap(kernel, t, abi.rank, first_block, block / tile, rows / tile)?;
            let ctx = ir::context_of(consume);
            ir::set_attr(marked, TILE_INDEX_ATTR, ir::string_attr(ctx, &name));
            Diagnostic::remark(loc(consume), format!("tiles of @{name}: {how}")).emit();
        }
    }
    Ok(())
}

fn program_id(value: Value) -> Option<(Op, i64)> {
    let op = ir::defining_op(value)?;
    (ir::op_name(op) == "tt.get_program_id").then(|| (op, ir::int_attr(op, "axis").unwrap_or(-1)))
}

/// Remaps tile index `t`; returns the op computing the new index.
/// Remaps tile index `t` of `kernel`; returns the op computing the new index.
fn remap(
    kernel: Op,
    t: Value,
    rank: Value,
    first_block: i64,
    tiles_per_rank: i64,
    tiles: i64,
) -> Result<(Op, String), PassFailed> {
    let whose = if first_block == 0 {
        "this rank's block"
    } else {
        "the next rank's block (this rank's block last)"
    };
    // A 2D grid whose row index is the fast axis: make it the slow one.
    if let Some((pid0, 0)) = program_id(t) {
        let pid1 = ir::find_all(kernel, "tt.get_program_id")
            .into_iter()
            .find(|op| ir::int_attr(*op, "axis") == Some(1));
        if let Some(pid1) = pid1 {
            let anchor = if ir::is_before_in_block(pid0, pid1) {
                pid1
            } else {
                pid0
            };
            let p0 = ir::result(pid0, 0);
            let p1 = ir::result(pid1, 0);
            let mut fast = p1;
            let (marked, new_ops) = insert_after(anchor, |b| {
                let i32t = ir::i32_type(b.ctx);
                let axis = |a: i64| ir::int_attr_of(i32t, a);
                let n0 = ir::result(
                    b.op("tt.get_num_programs", &[], &[i32t], &[("axis", axis(0))]),
                    0,
                );
                let n1 = ir::result(
                    b.op("tt.get_num_programs", &[], &[i32t], &[("axis", axis(1))]),
                    0,
                );
                let linear = b.addi(p0, b.muli(p1, n0));
                let slow = b.divsi(linear, n1);
                fast = b.remsi(linear, n1);
                rotate(b, slow, rank, first_block, tiles_per_rank, tiles)
            });
            ir::replace_uses_except(p0, ir::result(marked, 0), &new_ops);
            ir::replace_uses_except(p1, fast, &new_ops);
            return Ok((
                marked,
                format!(
                    "the row tile index (program_id 0) is now the slow axis of the grid and starts at {whose} ({tiles_per_rank} row tiles per rank)"
                ),
            ));
        }
    }
    // Rotate right where `t` is defined: after its op, or, for a loop's
    // induction variable, at the start of the loop body.
    let (marked, new_ops) = match ir::defining_op(t) {
        Some(def) => insert_after(def, |b| {
            rotate(b, t, rank, first_block, tiles_per_rank, tiles)
        }),
        None => {
            let block = ir::block_arg_owner(t)
                .ok_or_else(|| internal(kernel, "a value without a definition"))?;
            let first = ir::ops_in(block)
                .first()
                .copied()
                .ok_or_else(|| internal(kernel, "an empty loop body"))?;
            insert_before(first, |b| {
                rotate(b, t, rank, first_block, tiles_per_rank, tiles)
            })
        }
    };
    ir::replace_uses_except(t, ir::result(marked, 0), &new_ops);
    Ok((
        marked,
        format!(
            "the row tile index is rotated to start at {whose} ({tiles_per_rank} row tiles per rank, {tiles} in all)"
        ),
    ))
}

/// Builds ops right after `anchor` (every op has a successor: its block's
/// terminator); returns what `build` returns and the ops it created.
fn insert_after(anchor: Op, build: impl FnOnce(&Builder) -> Op) -> (Op, Vec<Op>) {
    let next = ir::next_op(anchor).expect("a non-terminator op has a next op");
    insert_before(next, build)
}

/// Builds ops right before `next`; returns what `build` returns and the ops
/// it created.
fn insert_before(next: Op, build: impl FnOnce(&Builder) -> Op) -> (Op, Vec<Op>) {
    let block = ir::block_of(next).expect("an op in a block");
    let existing = ir::ops_in(block);
    let result = build(&Builder::before(next));
    let created = ir::ops_in(block)
        .into_iter()
        .filter(|op| !existing.iter().any(|e| ir::same_op(*e, *op)))
        .collect();
    (result, created)
}

/// `(t + (rank + first_block) * per_rank) mod all`; returns the value and
/// its op.
fn rotate(b: &Builder, t: Value, rank: Value, first_block: i64, per_rank: i64, all: i64) -> Op {
    let block = if first_block == 0 {
        rank
    } else {
        b.addi(rank, b.const_i32(first_block))
    };
    let shift = b.muli(block, b.const_i32(per_rank));
    let rotated = b.remsi(b.addi(t, shift), b.const_i32(all));
    ir::defining_op(rotated).expect("an op result")
}
