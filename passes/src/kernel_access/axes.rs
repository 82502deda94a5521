//! How a 2-D pointer access's tensor axes land on its buffer's dimensions,
//! read from what its address multiplies each axis's offsets by.
//!
//! An axis whose expanded offsets are used as they are (or times 1) is the
//! buffer's last dimension, the contiguous one, and the other axis its
//! first, whose stride is the row stride. Where both axes are multiplied by
//! a kernel argument or a constant (a kernel compiled without Triton's
//! specialisation of unit strides), the axes are the buffer's dimensions in
//! order and the strides must be the plan buffer's row-major ones: the
//! runtime refuses a launch that passes others, so the order holds on
//! every launch that runs. Anything else (an axis with two strides, a
//! stride computed in the kernel) leaves the dimensions unknown.

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
    /// The strides the address multiplies by, with the buffer dimension
    /// each belongs to.
    pub(super) fn scaled(&self) -> Vec<(usize, KernelValue)> {
        (0..2)
            .filter_map(|axis| match self.strides[axis] {
                AxisStride::By(stride) => Some((self.dims[axis], stride)),
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

/// The buffer dimension of tensor axis `axis` in an access of a buffer of
/// `rank` dimensions whose address is `slice`: a 1-D buffer's one, a 2-D
/// buffer's where [`axis_layout`] tells.
pub(super) fn buffer_dim(axis: usize, slice: &[Value], rank: usize) -> Option<usize> {
    match rank {
        1 => Some(0),
        2 => axis_layout(slice).and_then(|layout| layout.dims.get(axis).copied()),
        _ => None,
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
