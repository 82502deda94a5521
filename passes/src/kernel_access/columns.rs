//! The columns a tile reads, for the waits of a buffer whose chunks also
//! cut its last dimension (a re-sharding all-to-all's `split(dim)`: a
//! chunk per head of each source rank's tokens, `[tokens, heads *
//! head_dim]`). The tile index tells the rows; the columns are where the
//! access's base lands in a row.
//!
//! An access reads its tile from its argument plus scalar offsets (the
//! base a pointer access splats, or the address its tensor descriptor was
//! made at), plus, through a descriptor, the descriptor's offset along the
//! last dimension (`desc.load([start_n, off_h * HEAD_DIM])`): in a
//! row-major buffer of rows of `C` elements, that element offset modulo
//! `C` is the tile's first column, and the tile is the access's block
//! wide. The offsets are the kernel's own values (after
//! `chunk-reorder-tiles` remapped the program ids), so they must be
//! computed before the wait: a base computed inside the loop that reads
//! the blocks is refused.

use super::axes::axis_layout;
use super::leading_offset::tile_base_offsets;
use crate::tiles::descriptor_block;
use synco_ir::{self as ir, Builder, Op, Value};

/// The first column (an `i64`) access `op` of `arg` reads, built with `b`
/// (before `at`, where the wait goes), in rows of `row_elems` elements,
/// and how many columns its tile spans (at most: a pointer tile whose
/// strides do not show its contiguous axis counts its largest extent);
/// or why not.
pub fn columns_read(
    b: &Builder,
    op: Op,
    arg: Value,
    row_elems: i64,
    at: Op,
) -> Result<(Value, i64), String> {
    let mut offsets = tile_base_offsets(op, arg).ok_or(
        "its base is not the argument plus scalar offsets (a pointer the loop carries, a host descriptor)",
    )?;
    let width = match descriptor_block(op) {
        Some((at_offsets, block)) => {
            offsets.extend(at_offsets.last().copied());
            block.last().copied()
        }
        None => pointer_tile_width(op)?,
    }
    .ok_or("its tile has no shape")?;
    if let Some(late) = offsets.iter().find(|v| !dominates(**v, at)) {
        let what = ir::defining_op(*late).map(ir::op_name).unwrap_or_default();
        return Err(format!(
            "its base's offset ({what}) is computed where the wait cannot use it (inside the loop that reads the blocks): compute the head's base before the loop"
        ));
    }
    let sum = offsets
        .into_iter()
        .map(|v| b.to_i64(v))
        .reduce(|sum, v| b.addi(sum, v))
        .unwrap_or_else(|| b.const_i64(0));
    Ok((b.remsi(sum, b.const_i64(row_elems)), width))
}

/// How many columns a pointer access's 2-D tile spans: its extent along
/// the axis whose offsets its address uses unscaled (the contiguous one;
/// a transposed K tile `[head_dim, block_n]` spans `head_dim`), or, where
/// the strides do not show it, its largest extent.
fn pointer_tile_width(op: Op) -> Result<Option<i64>, String> {
    let shape = ir::tensor_shape(ir::type_of(access_value(op)?)).unwrap_or_default();
    let ptr = ir::operands(op)
        .first()
        .copied()
        .ok_or("an access without an address")?;
    let contiguous = axis_layout(&ir::backward_slice(ptr))
        .and_then(|layout| layout.dims.iter().position(|d| *d == 1));
    Ok(match contiguous {
        Some(axis) if shape.len() == 2 => shape.get(axis).copied(),
        _ => shape.iter().copied().max(),
    })
}

/// The tile an access reads or writes: a load's result, a store's value.
fn access_value(op: Op) -> Result<Value, String> {
    match ir::op_name(op).as_str() {
        "tt.load" => Ok(ir::result(op, 0)),
        "tt.store" => ir::operands(op)
            .get(1)
            .copied()
            .ok_or_else(|| "a store without a value".into()),
        other => Err(format!("'{other}' is not a tile access")),
    }
}

/// Whether `v` is defined where `at` can use it: a block argument of a
/// block enclosing `at`, or an op before `at` in a block enclosing it.
fn dominates(v: Value, at: Op) -> bool {
    if let Some(block) = ir::block_arg_owner(v) {
        return ir::ancestor_in_block(at, block).is_some();
    }
    let Some(def) = ir::defining_op(v) else {
        return false;
    };
    ir::block_of(def)
        .and_then(|block| ir::ancestor_in_block(at, block))
        .is_some_and(|anchor| ir::same_op(anchor, def) || ir::is_before_in_block(def, anchor))
}
