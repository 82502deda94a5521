//! `chunk-carry-pointers`: give the kernel back the pointers it moved.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkCarryPointers`
//! in `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::kernel_loops::{LoopBody, MOVED_POINTER_ATTR, loop_body, moved_by};
use melior::ir::operation::OperationRef;
use synco_chunk::PassFailed;
use synco_chunk::passes::{ChunkCarryPointersOptions, RustPass};
use synco_ir::{self as ir, Builder, Op, Value};

/// The body of `chunk-carry-pointers`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkCarryPointersOptions;

    fn run(module: OperationRef, _options: &ChunkCarryPointersOptions) -> Result<(), PassFailed> {
        for at_variable in ir::walk(module.to_raw()) {
            if ir::remove_attr(at_variable, MOVED_POINTER_ATTR) {
                carry(at_variable);
            }
        }
        Ok(())
    }
}

/// The parts of `p0 + splat(v * x)` (`at_variable`, a `tt.addptr` that
/// `chunk-bind-kernel` marked) in the loop `for_op` whose variable is `v`
/// (or its `arith.extsi`).
struct AtVariable {
    for_op: Op,
    start: Value,
    stride: Value,
}

/// Carries `at_variable` again, if its loop still has the iteration value
/// the kernel moved: that value starts at `p0 + lower * x` and moves by
/// `step * x`, and `at_variable`'s uses read it. Anything else is left at
/// the variable (the same addresses).
fn carry(at_variable: Op) {
    let Some(AtVariable {
        for_op,
        start,
        stride,
    }) = parts(at_variable)
    else {
        return;
    };
    let Some(slot) = dead_slot_moved_from(for_op, at_variable, stride) else {
        return;
    };
    let b = Builder::before(for_op).with_loc(ir::location_of(at_variable));
    let lower = ir::operands(for_op)[0];
    let init = if ir::constant_int(lower) == Some(0) {
        start
    } else {
        let Some(shape) = ir::tensor_shape(ir::type_of(start)) else {
            return;
        };
        let lower = if ir::is_integer_type(ir::type_of(stride), 64) {
            b.to_i64(lower)
        } else {
            lower
        };
        b.addptr(start, b.splat(b.muli(lower, stride), &shape))
    };
    ir::set_operand(for_op, 3 + slot, init);
    let body = ir::blocks(ir::regions(for_op)[0])[0];
    ir::replace_all_uses(ir::result(at_variable, 0), ir::block_args(body)[1 + slot]);
    erase_dead_chain(at_variable);
}

/// Reads `p0 + splat(v * x)`: `p0` and `x` defined outside the loop whose
/// variable `v` is.
fn parts(at_variable: Op) -> Option<AtVariable> {
    let [start, offsets] = ir::operands(at_variable)[..] else {
        return None;
    };
    let splat = ir::defining_op(offsets).filter(|op| ir::op_name(*op) == "tt.splat")?;
    let product =
        ir::defining_op(ir::operands(splat)[0]).filter(|op| ir::op_name(*op) == "arith.muli")?;
    let [variable, stride] = ir::operands(product)[..] else {
        return None;
    };
    let variable = match ir::defining_op(variable) {
        Some(ext) if ir::op_name(ext) == "arith.extsi" => ir::operands(ext)[0],
        Some(_) => return None,
        None => variable,
    };
    let for_op = ir::block_arg_owner(variable)
        .and_then(ir::block_parent_op)
        .filter(|op| ir::op_name(*op) == "scf.for")?;
    let body = ir::blocks(ir::regions(for_op)[0])[0];
    let outside = |v: Value| !defined_in(v, for_op);
    (ir::same_value(ir::block_args(body)[0], variable) && outside(start) && outside(stride))
        .then_some(AtVariable {
            for_op,
            start,
            stride,
        })
}

/// Whether `v` is defined inside `op` (by an op or as a block argument).
fn defined_in(v: Value, op: Op) -> bool {
    match ir::defining_op(v) {
        Some(def) => ir::is_ancestor(op, def),
        None => ir::block_arg_owner(v)
            .and_then(ir::block_parent_op)
            .is_some_and(|owner| ir::is_ancestor(op, owner)),
    }
}

/// The iteration value of `for_op` that the kernel moved: the slot whose
/// yielded value is `at_variable + splat(stride * step)` (as
/// [`moved_by`] reads it) and whose block argument nothing reads
/// (`chunk-bind-kernel` moved its uses to `at_variable`).
fn dead_slot_moved_from(for_op: Op, at_variable: Op, stride: Value) -> Option<usize> {
    let step = ir::constant_int(ir::operands(for_op)[2])?;
    let LoopBody { args, yielded, .. } = loop_body(for_op)?;
    let at = ir::result(at_variable, 0);
    yielded
        .iter()
        .position(|next| {
            moved_by(*next, at, step, for_op).is_some_and(|x| ir::same_value(x, stride))
        })
        .filter(|slot| {
            let arg = args[1 + slot];
            ir::uses(arg).is_empty() && ir::same_type(ir::type_of(arg), ir::type_of(at))
        })
}

/// Erases `op` once nothing reads it, then the operands' definitions that
/// nothing else reads (the splat and product of the variable).
fn erase_dead_chain(op: Op) {
    if !ir::uses(ir::result(op, 0)).is_empty() {
        return;
    }
    let mut feeders: Vec<Op> = Vec::new();
    for feeder in ir::operands(op).into_iter().filter_map(ir::defining_op) {
        if !feeders.iter().any(|f| ir::same_op(*f, feeder)) {
            feeders.push(feeder);
        }
    }
    ir::erase(op);
    for feeder in feeders {
        let name = ir::op_name(feeder);
        let pure = matches!(name.as_str(), "tt.splat" | "arith.muli" | "arith.extsi");
        if pure && ir::results(feeder).len() == 1 {
            erase_dead_chain(feeder);
        }
    }
}
