//! The offset a pointer access adds to its buffer's argument before its
//! 2-D tile, in a plan buffer of three or more dimensions whose tile map
//! walks the dimension before the last: an attention's K as [heads,
//! tokens, head_dim], read a head at a time as `K + off_z * stride_kz +
//! off_h * stride_kh + rows * stride_kn + cols`, or through a tensor
//! descriptor of that head's [tokens, head_dim] made at `K + off_z *
//! stride_kz + off_h * stride_kh`. The rows a tile reads are
//! those of the chunk it waits for only if that offset selects whole
//! slices of the walked and last dimensions: a multiple of the stride of
//! the dimension before the walked one (a shift of a few rows would read
//! rows of another chunk, before they arrive).
//!
//! Each term of the offset must show it (constants, `tl.multiple_of`, the
//! arithmetic of [`is_multiple_of`]), or have a kernel argument as a
//! factor, which the plan then requires at every launch to be a multiple
//! of that stride over what the term's constant factors give
//! (`ScalarRole::Multiple`: `stride_kh` a multiple of tokens x head_dim,
//! as a batch-1 launch's `stride_kz`, the whole buffer, is; `N_CTX` in
//! `off_h * N_CTX * 64` a multiple of the tokens). A term that does
//! neither is refused.

use super::axes::BufferDims;
use super::index_expr::index_expr;
use super::merged_rows::{descriptor_maker, is_kernel_arg, leaves};
use crate::kernel_loops::is_multiple_of;
use synco_ir::{self as ir, Op, Value};
use synco_manifest::IndexExpr;

/// Why one term of a leading offset selects whole slices.
pub(super) enum OffsetTerm {
    /// The arithmetic shows it.
    Shown,
    /// It has this kernel argument as a factor, which the plan requires to
    /// be a multiple of this (the slices' length over what the term's
    /// constant factors give already: `off_h * N_CTX * 64` in slices of
    /// 256 x 64 needs N_CTX a multiple of 256).
    Times(Value, i64),
    /// Neither.
    Unknown,
}

/// For a buffer whose tile map walks dimension `d` of `rank >= 3`, `d`
/// the one before the last: the dimension before it, whose slices a
/// leading offset selects.
pub(super) fn sliced_dim(dims: BufferDims) -> Option<usize> {
    let tiled = dims.tiled?;
    (dims.rank >= 3 && tiled + 2 == dims.rank)
        .then(|| tiled.checked_sub(1))
        .flatten()
}

/// The terms of the offsets pointer access `op` adds to argument `arg`
/// before it splats it into its tile (`arg + a + b`: the terms of `a` and
/// of `b`), each with why it is whole slices of `length` elements. None
/// where the tile's base is not `arg` plus scalar offsets (a pointer the
/// kernel computes otherwise, or one a loop carries), which this does not
/// check.
pub(super) fn leading_terms(op: Op, arg: Value, length: i64) -> Option<Vec<OffsetTerm>> {
    let offsets = tile_base_offsets(op, arg)?;
    let mut terms = Vec::new();
    for offset in offsets {
        match leaves(offset, "arith.addi")[..] {
            [] => return Some(vec![OffsetTerm::Unknown]),
            ref found => terms.extend_from_slice(found),
        }
    }
    let factors: Vec<Vec<Value>> = terms.iter().map(|t| leaves(*t, "arith.muli")).collect();
    // An argument that is a factor of more terms is likelier the one that
    // makes them whole (`off_z * H * N_CTX * D + off_h * N_CTX * D`: N_CTX).
    let terms_with = |a: Value| {
        factors
            .iter()
            .filter(|fs| fs.iter().any(|f| ir::same_value(*f, a)))
            .count()
    };
    let classify = |term: &Value, factors: &Vec<Value>| {
        if is_multiple_of(*term, length) {
            return OffsetTerm::Shown;
        }
        let Some(arg) = factors
            .iter()
            .copied()
            .filter(|f| is_kernel_arg(*f))
            .max_by_key(|a| terms_with(*a))
        else {
            return OffsetTerm::Unknown;
        };
        let constant = factors
            .iter()
            .filter_map(|f| ir::constant_int(*f))
            .try_fold(1i64, |p, c| p.checked_mul(c))
            .unwrap_or(1);
        OffsetTerm::Times(arg, length / gcd(length, constant))
    };
    Some(
        terms
            .iter()
            .zip(&factors)
            .map(|(t, fs)| classify(t, fs))
            .collect(),
    )
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(1).max(1)
}

/// The scalar offsets added to `arg` before access `op`'s tile: those of
/// the base a pointer access splats into its tile, or those of the address
/// the tensor descriptor it goes through was made at (`K + off_z *
/// stride_kz + off_h * stride_kh`, one head's [tokens, head_dim]). None
/// where the base is not `arg` plus scalar offsets.
pub(super) fn tile_base_offsets(op: Op, arg: Value) -> Option<Vec<Value>> {
    match ir::op_name(op).as_str() {
        "tt.load" | "tt.store" => {
            let ptr = *ir::operands(op).first()?;
            ir::backward_slice(ptr)
                .into_iter()
                .filter_map(ir::defining_op)
                .filter(|o| ir::op_name(*o) == "tt.splat")
                .filter_map(|splat| ir::operands(splat).first().copied())
                .find_map(|base| offsets_from(base, arg))
        }
        "tt.descriptor_load" | "tt.descriptor_store" => {
            let maker = descriptor_maker(op)?;
            offsets_from(*ir::operands(maker).first()?, arg)
        }
        _ => None,
    }
}

/// The offset access `op` adds to `arg` before its tile, as an
/// expression of the program ids and the kernel's arguments the runtime
/// evaluates over a launch; `None` where it adds none, or where a value
/// in it is something else (a load, a loop's variable).
pub(super) fn offset_expr(op: Op, arg: Value) -> Option<IndexExpr> {
    tile_base_offsets(op, arg)?
        .into_iter()
        .map(index_expr)
        .reduce(|sum, term| Some(IndexExpr::Add(Box::new(sum?), Box::new(term?))))?
}

/// Whether the descriptor access `op` goes through was made at a kernel
/// argument plus scalar offsets (which [`leading_terms`] reads).
pub(super) fn descriptor_made_at_offsets(op: Op) -> bool {
    descriptor_maker(op)
        .and_then(|maker| ir::operands(maker).first().copied())
        .is_some_and(|base| {
            let mut v = base;
            while let Some(add) = ir::defining_op(v).filter(|o| ir::op_name(*o) == "tt.addptr") {
                v = ir::operands(add)[0];
            }
            is_kernel_arg(v)
        })
}

/// The scalar offsets `tt.addptr`s add to `arg` to make `base`, if they do.
fn offsets_from(base: Value, arg: Value) -> Option<Vec<Value>> {
    let mut v = base;
    let mut offsets = Vec::new();
    while let Some(add) = ir::defining_op(v).filter(|o| ir::op_name(*o) == "tt.addptr") {
        let [pointer, offset] = ir::operands(add)[..] else {
            return None;
        };
        offsets.push(offset);
        v = pointer;
    }
    ir::same_value(v, arg).then_some(offsets)
}
