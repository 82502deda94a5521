//! Kernel values as expressions the runtime evaluates over a launch's
//! grid and arguments (`synco_manifest::IndexExpr`): the head offsets and
//! computed extents that `chunk-bind-kernel` records as index bounds.

use super::merged_rows::is_kernel_arg;
use synco_ir::{self as ir, Value};
use synco_manifest::IndexExpr;

/// The deepest expression [`index_expr`] follows.
const MAX_EXPR_DEPTH: usize = 32;

/// `v` as an expression of the program ids, the kernel's arguments and
/// constants the runtime can evaluate, if it is one.
pub(super) fn index_expr(v: Value) -> Option<IndexExpr> {
    index_expr_within(v, MAX_EXPR_DEPTH)
}

fn index_expr_within(v: Value, depth: usize) -> Option<IndexExpr> {
    use IndexExpr as E;
    if let Some(c) = ir::constant_int(v) {
        return Some(E::Const(c));
    }
    if is_kernel_arg(v) {
        return ir::block_arg_number(v).map(E::Arg);
    }
    let op = ir::defining_op(v)?;
    let depth = depth.checked_sub(1)?;
    let operand = |i: usize| {
        ir::operands(op)
            .get(i)
            .and_then(|x| index_expr_within(*x, depth))
            .map(Box::new)
    };
    let axis = || ir::int_attr(op, "axis").and_then(|a| usize::try_from(a).ok());
    Some(match ir::op_name(op).as_str() {
        "tt.get_program_id" => E::ProgramId(axis()?),
        "tt.get_num_programs" => E::NumPrograms(axis()?),
        "arith.extsi" | "arith.extui" | "arith.trunci" | "arith.index_cast" => *operand(0)?,
        "arith.addi" => E::Add(operand(0)?, operand(1)?),
        "arith.subi" => E::Sub(operand(0)?, operand(1)?),
        "arith.muli" => E::Mul(operand(0)?, operand(1)?),
        "arith.divsi" | "arith.divui" => E::Div(operand(0)?, operand(1)?),
        "arith.remsi" | "arith.remui" => E::Rem(operand(0)?, operand(1)?),
        "arith.minsi" => E::Min(operand(0)?, operand(1)?),
        "arith.maxsi" => E::Max(operand(0)?, operand(1)?),
        _ => return None,
    })
}
