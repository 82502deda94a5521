//! `chunk-insert-waits`: make each tile wait for the chunk it reads.
//!
//! For each consumed buffer, at the tile index marked by
//! `chunk-reorder-tiles`, inserts before the first loop or op of the tile
//! that loads the buffer:
//!
//! ```mlir
//! %chunk = (t' * T) / rows_per_chunk          // the chunk holding the rows
//! %owner = %chunk / chunks_per_rank
//! scf.if (%owner != rank) {                   // own rows are in place
//!   chunk.wait %synco_flags[base + %chunk], %synco_epoch   // acquire, sys
//! }
//! ```
//!
//! so the tile spins (bounded, see `chunk.wait`) on one flag, before any of
//! its loads of the buffer, and reads the chunk with acquire ordering.
//!
//! A consumer read per source (`chunk.consume ... source("src")`: every
//! tile reads every rank's block, one per iteration of the kernel's loop
//! over `src`, which `chunk-reorder-tiles` rotated to `src'`) waits inside
//! that loop instead, before the iteration's first load of the buffer, for
//! the chunk of block `src'` holding its tile (flag
//! `base + src' * chunks_per_rank + (t' * T) / rows_per_chunk`), unless
//! `src'` is the rank itself (its block is in place when the kernel
//! starts). Only the copy engine moves such chunks so far.
//!
//! A loop nest Triton would flatten (`tt.flatten` on a persistent kernel's
//! tile loop) loses the attribute, with a remark: once flattened, Triton's
//! software pipeliner issues the loads of a tile's first K steps while the
//! previous tile still runs, ahead of the tile's wait. Unflattened, the wait
//! stays in front of the pipelined K loop.
//!
//! Options: none.
//! Preconditions: collectives expanded; `chunk-bind-kernel` and
//! `chunk-reorder-tiles` ran; chunks hold whole tiles.
//! Postconditions: every load of a consumed buffer is preceded, in its tile,
//! by a `chunk.wait` on that tile's chunk.

use crate::{
    plan::{FlagKind, bound_kernel, fail, flag_layout, internal, loc, plans},
    tiles::{FLATTEN_ATTR, SOURCE_INDEX_ATTR, TILE_INDEX_ATTR, loads_of},
};
use synco_chunk::{Diagnostic, PassDescriptor, PassFailed};
use synco_ir::{self as ir, Builder, builder::Cmp};

pub static PASS: PassDescriptor = PassDescriptor {
    argument: "chunk-insert-waits",
    description: "Insert, before each tile's first load of a consumed buffer, a wait on that tile's chunk",
    anchor: "builtin.module",
    options: &[],
    run,
};

fn run(module: melior::ir::operation::OperationRef, _options: &[&str]) -> Result<(), PassFailed> {
    let module = module.to_raw();
    for plan in plans(module) {
        let (kernel, abi) = bound_kernel(&plan, module, PASS.argument)?;
        let layout = flag_layout(&plan)?;
        for range in layout.iter().filter(|r| r.kind == FlagKind::Arrival) {
            let Some(buffer) = plan.buffer(&range.buffer) else {
                continue;
            };
            let consume = plan
                .ops_named("chunk.consume")
                .into_iter()
                .find(|c| {
                    ir::attr(*c, "buffer").and_then(ir::symbol_value).as_deref()
                        == Some(&range.buffer)
                })
                .ok_or_else(|| internal(plan.op, "a flag range without its chunk.consume"))?;
            let tile = ir::int_attr(consume, "tile").unwrap_or(1);
            if let Some(source) = ir::str_attr(consume, "source") {
                wait_per_source(&plan, kernel, &abi, range, consume, tile, &source)?;
                continue;
            }
            if range.rows_per_chunk % tile != 0 {
                return Err(fail(
                    consume,
                    format!(
                        "chunks of {} rows of @{} would split {tile}-row tiles: pick a chunk count whose chunks hold whole tiles",
                        range.rows_per_chunk, range.buffer
                    ),
                ));
            }
            let marked = ir::walk(kernel)
                .into_iter()
                .find(|op| ir::str_attr(*op, TILE_INDEX_ATTR).as_deref() == Some(&range.buffer));
            let Some(marked) = marked else {
                return Err(fail(
                    consume,
                    "chunk-insert-waits: no tile index for this buffer; run chunk-reorder-tiles first",
                ));
            };
            let t = ir::result(marked, 0);
            let Some(block) = ir::block_of(marked) else {
                return Err(internal(marked, "the tile index is not in a block"));
            };
            let arg = buffer.arg.unwrap_or(usize::MAX);
            let Some(first) = first_load_in(kernel, arg, block, marked, || {
                format!(
                    "this load of @{} is not inside the tile whose index was found; cannot place its wait",
                    range.buffer
                )
            })?
            else {
                continue;
            };
            let b = Builder::before(first).with_loc(ir::location_of(consume));
            let row = b.muli(t, b.const_i32(tile));
            let chunk = b.divsi(row, b.const_i32(range.rows_per_chunk));
            let owner = b.divsi(chunk, b.const_i32(range.chunks_per_rank));
            let remote = b.cmpi(Cmp::Ne, owner, abi.rank);
            let flag = b.addi(chunk, b.const_i32(range.base));
            b.if_then(remote, |inner| {
                inner.op("chunk.wait", &[abi.flags, flag, abi.epoch], &[], &[]);
            });
            Diagnostic::remark(
                loc(consume),
                format!(
                    "tiles of @{} wait for their chunk ({} rows, flags {}..{}) before '{}'",
                    range.buffer,
                    range.rows_per_chunk,
                    range.base,
                    range.base + range.count(plan.world_size),
                    ir::op_name(first)
                ),
            )
            .emit();
            unflatten_enclosing_loops(first, consume);
        }
    }
    Ok(())
}

/// The waits of a consumer that reads every rank's block in a loop over
/// sources (`source("src")`, rotated by `chunk-reorder-tiles`): inside the
/// loop, before its first load of the buffer, the tile waits for the chunk
/// of the iteration's block that holds its tile,
/// `base + src' * chunks_per_rank + (t * T) / rows_per_chunk`, unless the
/// block is the rank's own: in place before the kernel starts (an
/// all-gather's; an all-to-all's is copied right before the kernel, see
/// `chunk-lower-transfers`).
fn wait_per_source(
    plan: &crate::plan::Plan,
    kernel: ir::Op,
    abi: &crate::abi::AbiArgs,
    range: &crate::plan::FlagRange,
    consume: ir::Op,
    tile: i64,
    source: &str,
) -> Result<(), PassFailed> {
    let name = &range.buffer;
    if range.rows_per_chunk % tile != 0 {
        return Err(fail(
            consume,
            format!(
                "chunks of {} along dimension {} of @{name} would split {tile}-wide tiles: pick a chunk count whose chunks hold whole tiles",
                range.rows_per_chunk, range.dim
            ),
        ));
    }
    let transfers: Vec<ir::Op> = plan
        .ops_named("chunk.transfer")
        .into_iter()
        .filter(|t| crate::plan::dst_buffer(*t).as_deref() == Some(name.as_str()))
        .collect();
    if let Some(t) = transfers.iter().find(|t| {
        ir::int_attr(**t, "backend").and_then(synco_chunk::attrs::Backend::from_value)
            != Some(synco_chunk::attrs::Backend::CopyEngine)
    }) {
        return Err(fail(
            *t,
            format!(
                "@{name} is consumed per source ({source}): only backend(copy_engine) moves its chunks so far"
            ),
        ));
    }
    let marked = |attr: &str, value: &str| {
        ir::walk(kernel)
            .into_iter()
            .find(|op| ir::str_attr(*op, attr).as_deref() == Some(value))
    };
    let (Some(tile_index), Some(source_index)) = (
        marked(TILE_INDEX_ATTR, name),
        marked(SOURCE_INDEX_ATTR, source),
    ) else {
        return Err(fail(
            consume,
            "chunk-insert-waits: no tile index or source index for this buffer; run chunk-reorder-tiles first",
        ));
    };
    let Some(body) = ir::block_of(source_index) else {
        return Err(internal(source_index, "the source index is not in a block"));
    };
    let arg = plan.buffer(name).and_then(|b| b.arg).unwrap_or(usize::MAX);
    let Some(first) = first_load_in(kernel, arg, body, source_index, || {
        format!(
            "this load of @{name} is not inside the loop over '{source}'; cannot place its wait"
        )
    })?
    else {
        return Ok(());
    };
    let b = Builder::before(first).with_loc(ir::location_of(consume));
    let src = ir::result(source_index, 0);
    let t = ir::result(tile_index, 0);
    let within = b.divsi(
        b.muli(t, b.const_i32(tile)),
        b.const_i32(range.rows_per_chunk),
    );
    let chunk = b.addi(b.muli(src, b.const_i32(range.chunks_per_rank)), within);
    let flag = b.addi(chunk, b.const_i32(range.base));
    let remote = b.cmpi(Cmp::Ne, src, abi.rank);
    b.if_then(remote, |inner| {
        inner.op("chunk.wait", &[abi.flags, flag, abi.epoch], &[], &[]);
    });
    Diagnostic::remark(
        loc(consume),
        format!(
            "tiles of @{name} wait, in each iteration of the loop over '{source}' but the own rank's, for their chunk of that rank's block ({} along dimension {}, flags {}..{}) before '{}'",
            range.rows_per_chunk,
            range.dim,
            range.base,
            range.base + range.count(plan.world_size),
            ir::op_name(first)
        ),
    )
    .emit();
    Ok(())
}

/// The op of `block`, after `after`, that holds the first load of kernel
/// argument `arg` (where its wait goes); `None` if nothing loads it. A load
/// outside `block` is refused with `outside()` as the message.
fn first_load_in(
    kernel: ir::Op,
    arg: usize,
    block: ir::Block,
    after: ir::Op,
    outside: impl Fn() -> String,
) -> Result<Option<ir::Op>, PassFailed> {
    let mut first: Option<ir::Op> = None;
    for load in loads_of(kernel, arg) {
        match ir::ancestor_in_block(load, block) {
            Some(a) if ir::is_before_in_block(after, a) => {
                if first.is_none_or(|f| ir::is_before_in_block(a, f)) {
                    first = Some(a);
                }
            }
            _ => return Err(fail(load, outside())),
        }
    }
    Ok(first)
}

/// Removes Triton's `tt.flatten` from the loops around `op` (see the module
/// docs), with a remark at the plan's `consume` op.
fn unflatten_enclosing_loops(op: ir::Op, consume: ir::Op) {
    let mut parent = ir::parent_op(op);
    while let Some(p) = parent {
        if ir::op_name(p) == "scf.for" && ir::remove_attr(p, FLATTEN_ATTR) {
            Diagnostic::remark(
                loc(consume),
                "the tile loop is no longer flattened (tt.flatten removed): Triton's pipeliner would load the next tile's data before its wait",
            )
            .emit();
        }
        parent = ir::parent_op(p);
    }
}
