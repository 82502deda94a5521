//! How a 2-D pointer access's tensor axes land on its buffer's dimensions,
//! read from what its address multiplies each axis's offsets by.
//!
//! An axis whose expanded offsets are used as they are (or times 1) walks
//! the buffer's last dimension, the contiguous one; the other axis, whose
//! offsets the address multiplies by a stride, walks the dimension before
//! it in a 2-D buffer. In a buffer of three or more (an attention's K as
//! [heads, tokens, head_dim] or [tokens, heads, head_dim]) the leading
//! dimensions offset the tile's base pointer, and the strided axis walks
//! the dimension the plan's tile map names: the plan's claim, which its
//! row-major stride then checks. Where both axes are multiplied by a kernel
//! argument or a constant (a kernel compiled without Triton's
//! specialisation of unit strides), the axes are those dimensions in
//! order. Either way the strides must be the plan buffer's row-major ones
//! (the runtime refuses a launch that passes others), so the dimensions
//! hold on every launch that runs. Anything else (an axis with two
//! strides, a stride computed in the kernel, a buffer of three or more
//! dimensions tiled along its last) leaves the dimensions unknown.

use crate::plan::{BufferDecl, Plan};
use crate::tiles::in_slice;
use synco_ir::{self as ir, Value};

/// A value the kernel's arithmetic uses (a stride, an extent).
#[derive(Clone, Copy)]
pub(super) enum KernelValue {
    /// A scalar value: a kernel argument, a constant, or computed.
    Scalar(Value),
    /// A constant (a splat tensor constant, as a specialised stride is).
    Constant(i64),
}

impl KernelValue {
    /// The same argument or computed value, or the same constant.
    pub(super) fn same(self, other: KernelValue) -> bool {
        match (self, other) {
            (KernelValue::Scalar(a), KernelValue::Scalar(b)) => ir::same_value(root(a), root(b)),
            (KernelValue::Constant(a), KernelValue::Constant(b)) => a == b,
            _ => false,
        }
    }

    /// A constant, or a kernel argument (what the runtime can check).
    fn is_checkable(self) -> bool {
        let KernelValue::Scalar(v) = self else {
            return true;
        };
        let v = root(v);
        ir::constant_int(v).is_some()
            || ir::block_arg_owner(v)
                .and_then(ir::block_parent_op)
                .is_some_and(|op| ir::op_name(op) == "tt.func")
    }
}

/// What one tensor axis's expanded offsets are multiplied by.
#[derive(Clone, Copy)]
pub(super) enum AxisStride {
    /// Nothing, or 1.
    Unit,
    By(KernelValue),
}

/// A 2-D access's axes: the stride of each, and the buffer dimension each
/// walks.
pub(super) struct AxisLayout {
    pub(super) strides: [AxisStride; 2],
    pub(super) dims: [usize; 2],
}

impl AxisLayout {
    /// The dimensions of `buffer` that the two axes walk (see the module
    /// docs), if they are known.
    pub(super) fn buffer_dims(&self, buffer: BufferDims) -> Option<[usize; 2]> {
        match buffer.rank {
            2 => Some(self.dims),
            rank if rank >= 3 => {
                let last = rank - 1;
                let tiled = buffer.tiled.filter(|d| *d < last)?;
                Some(self.dims.map(|d| if d == 1 { last } else { tiled }))
            }
            _ => None,
        }
    }

    /// The strides the address multiplies by, with the dimension of
    /// `buffer` each belongs to (none where the dimensions are unknown).
    pub(super) fn scaled(&self, buffer: BufferDims) -> Vec<(usize, KernelValue)> {
        let Some(dims) = self.buffer_dims(buffer) else {
            return Vec::new();
        };
        (0..2)
            .filter_map(|axis| match self.strides[axis] {
                AxisStride::By(stride) => Some((dims[axis], stride)),
                AxisStride::Unit => None,
            })
            .collect()
    }
}

/// The layout of the 2-D access whose address is `slice` (see the module
/// docs), if the strides tell it.
pub(super) fn axis_layout(slice: &[Value]) -> Option<AxisLayout> {
    let mut seen: [Vec<AxisStride>; 2] = [Vec::new(), Vec::new()];
    for expand in slice
        .iter()
        .filter_map(|v| ir::defining_op(*v))
        .filter(|o| ir::op_name(*o) == "tt.expand_dims")
    {
        let axis = usize::from(ir::int_attr(expand, "axis")? == 0);
        let expanded = ir::result(expand, 0);
        let mut strides = ir::uses(expanded)
            .into_iter()
            .filter(|(user, _)| {
                ir::op_name(*user) == "arith.muli" && in_slice(slice, ir::result(*user, 0))
            })
            .filter_map(|(user, _)| {
                ir::operands(user)
                    .into_iter()
                    .find(|o| !ir::same_value(*o, expanded))
            })
            .filter(|o| !is_splat_of_one(*o))
            .map(|o| {
                splatted_scalar(o)
                    .map(KernelValue::Scalar)
                    .or_else(|| ir::constant_splat_int(o).map(KernelValue::Constant))
            });
        let stride = match (strides.next(), strides.next()) {
            (None, _) => AxisStride::Unit,
            (Some(Some(stride)), None) => AxisStride::By(stride),
            _ => return None, // Computed, or two multiplies.
        };
        seen[axis].push(stride);
    }
    let strides = [one_stride(&seen[0])?, one_stride(&seen[1])?];
    let dims = match strides {
        [AxisStride::Unit, AxisStride::By(_)] => [1, 0],
        [AxisStride::By(_), AxisStride::Unit] => [0, 1],
        [AxisStride::By(a), AxisStride::By(b)] if a.is_checkable() && b.is_checkable() => [0, 1],
        _ => return None,
    };
    Some(AxisLayout { strides, dims })
}

/// The stride every expansion of one axis agrees on.
fn one_stride(seen: &[AxisStride]) -> Option<AxisStride> {
    let (first, rest) = seen.split_first()?;
    let agrees = |s: &AxisStride| match (first, s) {
        (AxisStride::Unit, AxisStride::Unit) => true,
        (AxisStride::By(a), AxisStride::By(b)) => a.same(*b),
        _ => false,
    };
    rest.iter().all(agrees).then_some(*first)
}

/// A plan buffer as its accesses are read: its number of dimensions, and
/// the one its tile map (`chunk.consume` or `chunk.produce`) walks.
#[derive(Clone, Copy)]
pub(super) struct BufferDims {
    pub(super) rank: usize,
    pub(super) tiled: Option<usize>,
}

impl BufferDims {
    /// Nothing known: no dimension is found.
    pub(super) const UNKNOWN: BufferDims = BufferDims {
        rank: 0,
        tiled: None,
    };

    /// Plan buffer `buffer`'s (see the struct docs).
    pub(super) fn of(plan: &Plan, buffer: &BufferDecl) -> BufferDims {
        let tiled = plan
            .consumer_of(&buffer.name)
            .map(|c| c.dim())
            .or_else(|| plan.producer_of(&buffer.name).map(|p| p.dim()));
        BufferDims {
            rank: buffer.shape.len(),
            tiled,
        }
    }
}

/// The dimension of `buffer` that tensor axis `axis` walks in an access
/// whose address is `slice`: a 1-D buffer's one; in a buffer of two or
/// more, where [`AxisLayout::buffer_dims`] tells.
pub(super) fn buffer_dim(axis: usize, slice: &[Value], buffer: BufferDims) -> Option<usize> {
    match buffer.rank {
        0 => None,
        1 => Some(0),
        _ => axis_layout(slice)
            .and_then(|layout| layout.buffer_dims(buffer))
            .and_then(|dims| dims.get(axis).copied()),
    }
}

/// `v` without the integer casts around it.
pub(super) fn root(mut v: Value) -> Value {
    while let Some(op) = ir::defining_op(v).filter(|op| {
        matches!(
            ir::op_name(*op).as_str(),
            "arith.extsi" | "arith.extui" | "arith.trunci" | "arith.index_cast"
        )
    }) {
        v = ir::operands(op)[0];
    }
    v
}

/// The scalar `v` splats (`tt.splat`), if it is a splat.
pub(super) fn splatted_scalar(v: Value) -> Option<Value> {
    let op = ir::defining_op(v).filter(|o| ir::op_name(*o) == "tt.splat")?;
    ir::operands(op).first().copied()
}

/// Whether `v` is 1, or a splat of 1.
fn is_splat_of_one(v: Value) -> bool {
    ir::constant_splat_int(v) == Some(1) || splatted_scalar(v).and_then(ir::constant_int) == Some(1)
}
