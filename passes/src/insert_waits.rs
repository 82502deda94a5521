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
    tiles::{FLATTEN_ATTR, TILE_INDEX_ATTR, loads_of},
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
            let loads = loads_of(kernel, buffer.arg.unwrap_or(usize::MAX));
            let mut anchors: Vec<ir::Op> = Vec::new();
            for load in &loads {
                match ir::ancestor_in_block(*load, block) {
                    Some(a) if ir::is_before_in_block(marked, a) => anchors.push(a),
                    _ => {
                        return Err(fail(
                            *load,
                            format!(
                                "this load of @{} is not inside the tile whose index was found; cannot place its wait",
                                range.buffer
                            ),
                        ));
                    }
                }
            }
            let Some(first) = anchors
                .iter()
                .copied()
                .reduce(|a, b| if ir::is_before_in_block(b, a) { b } else { a })
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
