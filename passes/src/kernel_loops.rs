//! What the passes read from a kernel's loops before splitting them by
//! chunk: offsets a loop carries in step with its variable, and bounds
//! that are multiples of a tile.
//!
//! Triton lowers a block pointer that a loop advances (`tl.advance(p,
//! (0, BLOCK_N))`, the style of Triton's fused-attention tutorial) to an
//! integer offset the loop carries, starting at the loop's lower bound and
//! growing by its step: the loop's variable under another name.
//! [`carried_offsets_to_variable`] makes the addresses use the variable
//! itself (and, in the loops that walk a consumed buffer, pointers moved
//! by the step times a stride: [`carried_pointers_to_variable`]), so that
//! a loop split by chunk and walked out of order
//! (`chunk-reorder-tiles`) still reads, at each iteration, the rows of that
//! iteration.

use synco_ir::{self as ir, Builder, Op, Value};

/// Rewrites, in every `scf.for` of `kernel`, each integer iteration value
/// that grows by the step each iteration, whose final value nothing reads
/// and that starts at the lower bound (or its `arith.extsi`), into the
/// loop's variable (sign-extended to its type); one that starts at `base`
/// plus the lower bound (or at `base` where the loop starts at 0; `base`
/// defined before the loop: the tutorial's `offset_y + lo`, a head's first
/// row in a descriptor over every head's rows), into `base` plus the
/// variable. Exact, since the variable runs over the same values in i32.
pub fn carried_offsets_to_variable(kernel: Op) {
    for op in ir::find_all(kernel, "scf.for") {
        let Some(LoopBody { args, first, .. }) = loop_body(op) else {
            continue;
        };
        let b = Builder::before(first).with_loc(ir::location_of(op));
        for (i, &arg) in args.iter().enumerate().skip(1) {
            let unread = ir::uses(ir::result(op, i - 1)).is_empty();
            let Some(start) = in_step_start(arg).filter(|_| unread) else {
                continue;
            };
            let Some(variable) = variable_as_wide_as(&b, args[0], arg) else {
                continue;
            };
            match start {
                InStepStart::LowerBound => ir::replace_all_uses(arg, variable),
                InStepStart::Plus(base) => ir::replace_all_uses(arg, b.addi(base, variable)),
            }
        }
    }
}

/// Marks the `p0 + v * x` that [`carried_pointers_to_variable`] wrote for
/// a pointer the kernel moved (`chunk-carry-pointers` carries it again
/// once the loops are split).
pub const MOVED_POINTER_ATTR: &str = "chunk.moved_pointer";

/// Rewrites, in each `scf.for` from 0 that carries a pointer into kernel
/// argument `arg` (`k_ptrs += BLOCK_N * stride_kn` at the end of the loop,
/// the style of Triton's early tutorials), each pointer tensor the loop
/// carries that starts at `p0` and moves by `step * x` each iteration (`x`
/// defined outside the loop, the final value unread) into `p0 + v * x`
/// for the loop's variable `v`, marked [`MOVED_POINTER_ATTR`]: exact,
/// since after `v / step` iterations the pointer has moved by `v * x`.
/// Only such loops are touched (a GEMM's loop over K that walks no
/// consumed argument keeps its pointers).
pub fn carried_pointers_to_variable(kernel: Op, arg: Value) {
    for op in ir::find_all(kernel, "scf.for") {
        let operands = ir::operands(op);
        let Some(step) = ir::constant_int(operands[2]) else {
            continue;
        };
        if ir::constant_int(operands[0]) != Some(0) {
            continue;
        }
        let Some(LoopBody {
            args,
            first,
            yielded,
        }) = loop_body(op)
        else {
            continue;
        };
        let moved: Vec<(Value, Value, Value)> = args
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(i, _)| ir::uses(ir::result(op, i - 1)).is_empty())
            .filter_map(|(i, &carried)| {
                let init = *operands.get(2 + i)?;
                let x = moved_by(*yielded.get(i - 1)?, carried, step, op)?;
                Some((carried, init, x))
            })
            .collect();
        let walks_arg = moved.iter().any(|(_, init, _)| {
            ir::backward_slice(*init)
                .iter()
                .any(|v| ir::same_value(*v, arg))
        });
        if !walks_arg {
            continue;
        }
        let iv = args[0];
        let b = Builder::before(first).with_loc(ir::location_of(op));
        for (carried, init, x) in moved {
            let Some(shape) = ir::tensor_shape(ir::type_of(carried)) else {
                continue;
            };
            let Some(v) = variable_as_wide_as(&b, iv, x) else {
                continue;
            };
            let offsets = b.splat(b.muli(v, x), &shape);
            let at_variable = b.addptr(init, offsets);
            if let Some(add) = ir::defining_op(at_variable) {
                ir::set_attr(add, MOVED_POINTER_ATTR, ir::unit_attr(ir::context_of(add)));
            }
            ir::replace_all_uses(carried, at_variable);
        }
    }
}

/// Loop variable `iv` as wide as the integer `other`: itself, or
/// sign-extended from i32 to i64 (built by `b`); none otherwise.
fn variable_as_wide_as(b: &Builder, iv: Value, other: Value) -> Option<Value> {
    let width = |v: Value| {
        [32, 64]
            .into_iter()
            .find(|w| ir::is_integer_type(ir::type_of(v), *w))
    };
    match (width(iv)?, width(other)?) {
        (iv_width, other_width) if iv_width == other_width => Some(iv),
        (32, 64) => Some(b.to_i64(iv)),
        _ => None,
    }
}

/// An `scf.for`'s body: its arguments (the variable, then the iteration
/// values), its first op and the values its `scf.yield` passes on.
pub(crate) struct LoopBody {
    pub args: Vec<Value>,
    pub first: Op,
    pub yielded: Vec<Value>,
}

pub(crate) fn loop_body(op: Op) -> Option<LoopBody> {
    let body = *ir::blocks(*ir::regions(op).first()?).first()?;
    let ops = ir::ops_in(body);
    Some(LoopBody {
        args: ir::block_args(body),
        first: *ops.first()?,
        yielded: ir::operands(*ops.last()?),
    })
}

/// For a pointer tensor `carried` the loop `for_op` moves to `next`: the
/// `x` of `next = carried + splat(x * step)` (either operand order), if
/// `x` is a scalar integer defined outside the loop.
pub(crate) fn moved_by(next: Value, carried: Value, step: i64, for_op: Op) -> Option<Value> {
    let add = ir::defining_op(next).filter(|op| ir::op_name(*op) == "tt.addptr")?;
    let [ptr, offset] = ir::operands(add)[..] else {
        return None;
    };
    if !ir::same_value(ptr, carried) || !ir::is_ranked_tensor(ir::type_of(carried)) {
        return None;
    }
    let splat = ir::defining_op(offset).filter(|op| ir::op_name(*op) == "tt.splat")?;
    let product =
        ir::defining_op(ir::operands(splat)[0]).filter(|op| ir::op_name(*op) == "arith.muli")?;
    let x = match ir::operands(product)[..] {
        [a, c] if ir::constant_int(c) == Some(step) => a,
        [c, a] if ir::constant_int(c) == Some(step) => a,
        _ => return None,
    };
    let inside = match ir::defining_op(x) {
        Some(def) => ir::is_ancestor(for_op, def),
        None => ir::block_arg_owner(x)
            .and_then(ir::block_parent_op)
            .is_some_and(|owner| ir::is_ancestor(for_op, owner)),
    };
    (!inside && ir::constant_int(x).is_none()).then_some(x)
}

/// Whether block argument `arg` is an iteration value its `scf.for`
/// carries in step with the variable (starts at the lower bound, grows by
/// the step): the variable under another name, as
/// [`carried_offsets_to_variable`] finds them.
pub fn is_in_step_offset(arg: Value) -> bool {
    matches!(in_step_start(arg), Some(InStepStart::LowerBound))
}

/// Where an iteration value that grows by its loop's step starts, relative
/// to the loop's variable.
enum InStepStart {
    /// At the lower bound: it is the variable.
    LowerBound,
    /// At a value defined before the loop plus the lower bound: it is that
    /// value plus the variable.
    Plus(Value),
}

/// How block argument `arg`, an iteration value of its `scf.for` that grows
/// by the loop's constant step, starts (see [`InStepStart`]); none for any
/// other value.
fn in_step_start(arg: Value) -> Option<InStepStart> {
    let (block, i) = (ir::block_arg_owner(arg)?, ir::block_arg_number(arg)?);
    let op = ir::block_parent_op(block).filter(|op| ir::op_name(*op) == "scf.for")?;
    let body = loop_body(op)?;
    let operands = ir::operands(op);
    let (lower, step) = (operands[0], operands[2]);
    let init = *operands.get(2 + i).filter(|_| i > 0)?;
    if !steps_by(*body.yielded.get(i - 1)?, arg, step) {
        return None;
    }
    if starts_at(init, lower) {
        return Some(InStepStart::LowerBound);
    }
    if ir::constant_int(lower) == Some(0) {
        return Some(InStepStart::Plus(init));
    }
    let add = ir::defining_op(init).filter(|o| ir::op_name(*o) == "arith.addi")?;
    match ir::operands(add)[..] {
        [base, l] | [l, base] if starts_at(l, lower) => Some(InStepStart::Plus(base)),
        _ => None,
    }
}

/// Whether `init` is the loop's lower bound `lower`: the same value, its
/// `arith.extsi`, or a constant of the same value.
fn starts_at(init: Value, lower: Value) -> bool {
    if ir::same_value(init, lower) {
        return true;
    }
    if let (Some(a), Some(b)) = (ir::constant_int(init), ir::constant_int(lower)) {
        return a == b;
    }
    ir::defining_op(init)
        .filter(|op| ir::op_name(*op) == "arith.extsi")
        .is_some_and(|op| ir::same_value(ir::operands(op)[0], lower))
}

/// Whether `next` is `arg + step` for the loop's constant `step`.
fn steps_by(next: Value, arg: Value, step: Value) -> bool {
    let Some(step) = ir::constant_int(step) else {
        return false;
    };
    let Some(add) = ir::defining_op(next).filter(|op| ir::op_name(*op) == "arith.addi") else {
        return false;
    };
    match ir::operands(add)[..] {
        [a, b] if ir::same_value(a, arg) => ir::constant_int(b) == Some(step),
        [a, b] if ir::same_value(b, arg) => ir::constant_int(a) == Some(step),
        _ => false,
    }
}

/// Whether the kernel's arithmetic shows scalar `v` to be a multiple of
/// `n`: a constant; a value Triton was told is one (`tl.multiple_of`,
/// `tt.divisibility`); sums, differences, selections and extremes of
/// such; products with such a factor; their extensions.
pub fn is_multiple_of(v: Value, n: i64) -> bool {
    multiple(v, n, 32)
}

fn multiple(v: Value, n: i64, depth: u32) -> bool {
    if n == 0 || depth == 0 {
        return false;
    }
    if let Some(c) = ir::constant_int(v) {
        return c % n == 0;
    }
    let Some(op) = ir::defining_op(v) else {
        return false;
    };
    let told = ir::attr(op, "tt.divisibility")
        .and_then(|a| ir::dense_splat_int(a).or_else(|| ir::int_value(a)))
        .is_some_and(|d| d % n == 0);
    if told {
        return true;
    }
    let operands = ir::operands(op);
    let all = |from: usize| {
        operands
            .get(from..)
            .is_some_and(|o| !o.is_empty() && o.iter().all(|x| multiple(*x, n, depth - 1)))
    };
    match ir::op_name(op).as_str() {
        "arith.addi" | "arith.subi" | "arith.minsi" | "arith.maxsi" => all(0),
        "arith.select" => all(1),
        "arith.muli" => operands.iter().any(|x| multiple(*x, n, depth - 1)),
        "arith.extsi" | "arith.extui" => all(0),
        _ => false,
    }
}
