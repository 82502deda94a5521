//! A producer's tile stored through a tensor descriptor
//! (`desc.store([m, n], tile)`, of a descriptor the kernel makes with
//! `tl.make_tensor_descriptor(C, ...)` or of a host `TensorDescriptor`),
//! rewritten as the same store through pointers, which the producer passes
//! know how to redirect (a peer's partials, a counted chunk): the addresses
//! `C + (m + i) * stride + (n + j)` for the tile's `i`, `j`, masked to the
//! descriptor's shape (coordinates from 0 to its extents) as a bulk tensor
//! store clips its box. The store then goes through the generic proxy, so
//! the tile's count (a release) orders it for the peers, which an
//! asynchronous bulk store would not be.

use super::rows::descriptor_block;
use crate::plan::fail;
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

/// `store` itself, or where it is a 2-D `tt.descriptor_store`, the
/// equivalent masked `tt.store` put in its place (the descriptor store
/// erased). The descriptor is one `kernel` makes (`tt.make_tensor_descriptor`
/// of a pointer, its last stride the constant 1), or a host descriptor
/// argument of plan buffer `name`: its address is then the kernel's
/// `synco_buffer_<name>` argument and its extents and strides the arguments
/// Triton passes after it (its last stride 1, as the runtime requires of
/// every view it encodes). A descriptor carried by a loop is refused.
pub(super) fn as_pointer_store(
    kernel: Op,
    store: Op,
    name: &str,
    pass: &str,
) -> Result<Op, PassFailed> {
    if ir::op_name(store) != "tt.descriptor_store" {
        return Ok(store);
    }
    let refuse = |why: &str| {
        fail(
            store,
            format!(
                "{pass}: this store of @{name} goes through a tensor descriptor {why}; store the tile through pointers, or through a descriptor of a 2-D buffer"
            ),
        )
    };
    let operands = ir::operands(store);
    let (Some((indices, shape)), [descriptor, tile, ..]) = (descriptor_block(store), &operands[..])
    else {
        return Err(refuse("with no tile"));
    };
    let ([rows, cols], [row, col]) = (&shape[..], &indices[..]) else {
        return Err(refuse("of other than two dimensions"));
    };
    let (descriptor, tile) = (*descriptor, *tile);
    let view = descriptor_view(kernel, descriptor, name)
        .ok_or_else(|| refuse("that is neither made by the kernel nor a host descriptor of the buffer (one carried by a loop?)"))?;
    if view.unit_columns == Some(false) {
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
        b.splat(b.to_i64(view.row_stride), &[rows, 1]),
    );
    let offsets = b.addi(
        b.broadcast(row_offsets, &full),
        b.broadcast(b.extsi_i64(col_coords), &full),
    );
    let ptrs = b.addptr(b.splat(view.base, &full), offsets);
    let inside = |coords: Value, extent: Value, shape: &[i64]| {
        let zero = b.splat(b.const_i32(0), shape);
        let from_zero = b.cmpi(Cmp::Sge, coords, zero);
        let below = b.cmpi(Cmp::Slt, coords, b.splat(extent, shape));
        b.broadcast(b.andi(from_zero, below), &full)
    };
    let mask = b.andi(
        inside(row_coords, view.extents[0], &[rows, 1]),
        inside(col_coords, view.extents[1], &[1, cols]),
    );
    let rewritten = b.store_masked(ptrs, tile, mask);
    ir::erase(store);
    Ok(rewritten)
}

/// What a 2-D descriptor views: its buffer's address, extents (i32), the
/// stride of its rows, and whether its last stride is the constant 1
/// (`None` where the runtime guarantees it: a host descriptor).
struct DescriptorView {
    base: Value,
    extents: [Value; 2],
    row_stride: Value,
    unit_columns: Option<bool>,
}

/// The view of `descriptor`, made by `kernel` or passed to it for plan
/// buffer `name`; `None` for anything else, or other than 2-D.
fn descriptor_view(kernel: Op, descriptor: Value, name: &str) -> Option<DescriptorView> {
    if let Some(maker) = ir::defining_op(descriptor) {
        if ir::op_name(maker) != "tt.make_tensor_descriptor" {
            return None;
        }
        let [base, e0, e1, s0, s1] = ir::operands(maker)[..] else {
            return None;
        };
        return Some(DescriptorView {
            base,
            extents: [e0, e1],
            row_stride: s0,
            unit_columns: Some(ir::constant_int(s1) == Some(1)),
        });
    }
    // A host descriptor: an argument of the kernel, its shape (i32s) and
    // strides (i64s) the arguments after it.
    let index = ir::block_arg_number(descriptor)?;
    let entry = ir::blocks(*ir::regions(kernel).first()?).first().copied()?;
    let args = ir::block_args(entry);
    if !args
        .get(index)
        .is_some_and(|a| ir::same_value(*a, descriptor))
    {
        return None;
    }
    let part = |k: usize| args.get(index + k).copied();
    Some(DescriptorView {
        base: crate::abi::buffer_arg(kernel, name)?,
        extents: [part(1)?, part(2)?],
        row_stride: part(3)?,
        unit_columns: None,
    })
}
