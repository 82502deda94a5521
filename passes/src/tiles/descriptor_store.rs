//! A producer's tile stored through a tensor descriptor the kernel makes
//! (`tl.make_tensor_descriptor(C, ...).store([m, n], tile)`), rewritten as
//! the same store through pointers, which the producer passes know how to
//! redirect (a peer's partials, a counted chunk): the addresses
//! `C + (m + i) * stride + (n + j)` for the tile's `i`, `j`, masked to the
//! descriptor's shape (coordinates from 0 to its extents) as a bulk tensor
//! store clips its box. The store then
//! goes through the generic proxy, so the tile's count (a release) orders
//! it for the peers, which an asynchronous bulk store would not be.

use crate::plan::fail;
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

/// `store` itself, or where it is a 2-D `tt.descriptor_store` through a
/// descriptor made in the kernel, the equivalent masked `tt.store` put in
/// its place (the descriptor store erased). A store through a descriptor
/// the kernel does not make itself (a host descriptor, one carried by a
/// loop) is refused: its buffer's address is not in the kernel.
pub(super) fn as_pointer_store(store: Op, name: &str, pass: &str) -> Result<Op, PassFailed> {
    if ir::op_name(store) != "tt.descriptor_store" {
        return Ok(store);
    }
    let operands = ir::operands(store);
    let refuse = |why: &str| {
        fail(
            store,
            format!(
                "{pass}: this store of @{name} goes through a tensor descriptor {why}; store the tile through pointers, or through a descriptor the kernel makes of a 2-D buffer"
            ),
        )
    };
    let maker = operands
        .first()
        .and_then(|d| ir::defining_op(*d))
        .filter(|op| ir::op_name(*op) == "tt.make_tensor_descriptor")
        .ok_or_else(|| refuse("that the kernel does not make itself (a host descriptor, or one carried by a loop)"))?;
    let made = ir::operands(maker);
    let (tile, indices) = match &operands[..] {
        [_, tile, indices @ ..] => (*tile, indices),
        _ => return Err(refuse("with no tile")),
    };
    let shape = ir::tensor_shape(ir::type_of(tile)).unwrap_or_default();
    let ([rows, cols], [row, col], [base, extent_rows, extent_cols, stride_rows, stride_cols]) =
        (&shape[..], indices, &made[..])
    else {
        return Err(refuse("of other than two dimensions"));
    };
    if ir::constant_int(*stride_cols) != Some(1) {
        return Err(refuse("whose last stride is not the constant 1"));
    }
    let b = Builder::before(store).with_loc(ir::location_of(store));
    let (rows, cols) = (*rows, *cols);
    let full = [rows, cols];
    // Each dimension's coordinates as a [rows, 1] or [1, cols] tensor.
    let coords = |start: Value, n: i64, axis: usize| {
        let range = b.addi(b.splat(start, &[n]), b.make_range(n));
        b.expand_dims(range, 1 - axis)
    };
    let (row_coords, col_coords) = (coords(*row, rows, 0), coords(*col, cols, 1));
    let row_offsets = b.muli(
        b.extsi_i64(row_coords),
        b.splat(b.to_i64(*stride_rows), &[rows, 1]),
    );
    let offsets = b.addi(
        b.broadcast(row_offsets, &full),
        b.broadcast(b.extsi_i64(col_coords), &full),
    );
    let ptrs = b.addptr(b.splat(*base, &full), offsets);
    let inside = |coords: Value, extent: Value, shape: &[i64]| {
        let zero = b.splat(b.const_i32(0), shape);
        let from_zero = b.cmpi(Cmp::Sge, coords, zero);
        let below = b.cmpi(Cmp::Slt, coords, b.splat(extent, shape));
        b.broadcast(b.andi(from_zero, below), &full)
    };
    let mask = b.andi(
        inside(row_coords, *extent_rows, &[rows, 1]),
        inside(col_coords, *extent_cols, &[1, cols]),
    );
    let rewritten = b.store_masked(ptrs, tile, mask);
    ir::erase(store);
    Ok(rewritten)
}
