//! Tensor descriptors with fewer dimensions than their buffer: the 2-D
//! `[Z * H * N, D]` view of a `[Z * H, N, D]` (or `[Z, H, N, D]`) buffer
//! that Triton's fused-attention tutorial reads K and V through. (One made
//! at an offset into the buffer, one head's `[N, D]` at the head's
//! address, is checked as a pointer access's offset is,
//! [`super::leading_offset`].)
//!
//! The descriptor's dimensions are the buffer's last ones, in order; its
//! first also runs over the buffer's leading dimensions (their rows
//! follow each other, row-major), so a block at row `base + v` of the
//! view is the block at `v` along that dimension of the buffer, in the
//! head `base` selects, when `base` is a whole number of heads: a multiple
//! of the buffer's extent along the dimension the block walks. That
//! extent is a constant the arithmetic shows, or a kernel argument the
//! plan fixes (`offset_y = off_z * (N_CTX * H) + off_h * N_CTX`: every
//! term a multiple of `N_CTX`).

use super::axes::root;
use crate::kernel_loops::is_multiple_of;
use synco_ir::{self as ir, Op, Value};

/// The `tt.make_tensor_descriptor` that made the descriptor a
/// `tt.descriptor_load`/`_store` reads or writes through, if one alone did.
pub(super) fn descriptor_maker(op: Op) -> Option<Op> {
    let descriptor = ir::operands(op).first().copied()?;
    let makers: Vec<Op> = ir::backward_slice(descriptor)
        .into_iter()
        .filter_map(ir::defining_op)
        .filter(|o| ir::op_name(*o) == "tt.make_tensor_descriptor")
        .collect();
    match makers[..] {
        [maker] => Some(maker),
        _ => None,
    }
}

/// Whether the descriptor `op` goes through was made at an offset into its
/// buffer (`K + off`), not at the buffer's start.
pub(super) fn made_at_offset(op: Op) -> bool {
    descriptor_maker(op)
        .and_then(|maker| ir::operands(maker).first().copied())
        .and_then(ir::defining_op)
        .is_some_and(|o| ir::op_name(o) == "tt.addptr")
}

/// Why a row offset's base is a whole number of `rows` (see the module
/// docs).
pub(super) enum WholeRows {
    /// The arithmetic shows it (constants, `tl.multiple_of`).
    Shown,
    /// Every term of the sum has this kernel argument as a factor: the
    /// plan fixes it to `rows`.
    Times(Value),
}

/// Whether `base` is a whole number of `rows`, and why.
pub(super) fn whole_rows(base: Value, rows: i64) -> Option<WholeRows> {
    if is_multiple_of(base, rows) {
        return Some(WholeRows::Shown);
    }
    let terms: Vec<Vec<Value>> = leaves(base, "arith.addi")
        .into_iter()
        .map(|term| leaves(term, "arith.muli"))
        .collect();
    let (first, rest) = terms.split_first()?;
    first
        .iter()
        .copied()
        .filter(|f| is_kernel_arg(*f))
        .find(|f| {
            rest.iter()
                .all(|factors| factors.iter().any(|g| ir::same_value(*g, *f)))
        })
        .map(WholeRows::Times)
}

/// The operands of the tree of `op_name` ops (an `arith.addi`'s terms, an
/// `arith.muli`'s factors) that computes `v`, through integer casts.
pub(super) fn leaves(v: Value, op_name: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut stack = vec![root(v)];
    while let Some(v) = stack.pop() {
        match ir::defining_op(v).filter(|o| ir::op_name(*o) == op_name) {
            Some(op) => stack.extend(ir::operands(op).into_iter().map(root)),
            None => found.push(v),
        }
        if found.len() + stack.len() > 64 {
            return Vec::new(); // Not an index a person writes.
        }
    }
    found
}

/// Whether `v` is one of the kernel's arguments.
pub(super) fn is_kernel_arg(v: Value) -> bool {
    ir::block_arg_owner(v)
        .and_then(ir::block_parent_op)
        .is_some_and(|op| ir::op_name(op) == "tt.func")
}
