//! The copy programs' code that every copy shares: the grid split that
//! puts them in front of the kernel's programs ([`split_grid`]), the loop
//! by which each moves its blocks of a chunk, and the count by which the
//! last of them to finish learns that the chunk is complete.

use super::CopyPrograms;
use crate::{abi::AbiArgs, flag_ops::count_one, plan::internal};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Builder, Op, Scope, Value, builder::Cmp};

/// Where [`split_grid`] left the copy programs' code.
pub struct CopySite {
    /// Inserts into the copy programs' branch.
    pub builder: Builder,
    /// The copy program's index, `0..C`.
    pub copier_id: Value,
    /// `C`, as an `i32` value.
    pub programs: Value,
}

/// Gives `kernel` `programs` copy programs placed as `placement` says (the
/// original body moves to the other branch, its program ids shifted past
/// the copy programs in a 1D grid) and returns where their code goes.
pub fn split_grid(
    kernel: Op,
    programs: i64,
    placement: CopyPrograms,
) -> Result<CopySite, PassFailed> {
    let Some(entry) = ir::regions(kernel)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
    else {
        return Err(internal(kernel, "the kernel has no body"));
    };
    let body = ir::ops_in(entry);
    let (Some(&first), Some(&ret)) = (body.first(), body.last()) else {
        return Err(internal(kernel, "the kernel's body is empty"));
    };
    let old_ids: Vec<Op> = ir::walk(kernel)
        .into_iter()
        .filter(|op| {
            matches!(
                ir::op_name(*op).as_str(),
                "tt.get_program_id" | "tt.get_num_programs"
            )
        })
        .collect();
    let b = Builder::before(first);
    let i32t = ir::i32_type(b.ctx);
    let grid = |name: &str, axis: i64| {
        let axis = ir::int_attr_of(i32t, axis);
        ir::result(b.op(name, &[], &[i32t], &[("axis", axis)]), 0)
    };
    let pid = grid("tt.get_program_id", 0);
    let nprog = grid("tt.get_num_programs", 0);
    let c = b.const_i32(programs);
    // The copy programs' ids, and the condition that a program copies.
    let (copier_id, is_copy_program) = match placement {
        CopyPrograms::Front => (pid, b.cmpi(Cmp::Slt, pid, c)),
        CopyPrograms::Plane => {
            let id = b.addi(pid, b.muli(grid("tt.get_program_id", 1), nprog));
            let plane = grid("tt.get_program_id", 2);
            (id, b.cmpi(Cmp::Eq, plane, b.const_i32(0)))
        }
    };
    // In front of a 1D grid, the kernel sees only the programs after them.
    let compute_ids =
        (placement == CopyPrograms::Front).then(|| (b.subi(pid, c), b.subi(nprog, c)));
    let (_, then_block, else_block) = b.if_else(is_copy_program);
    // The original body (everything but the return) runs in the else branch...
    let else_yield = ir::ops_in(else_block)[0];
    for op in body {
        if !ir::same_op(op, ret) {
            unsafe { mlir_sys::mlirOperationMoveBefore(op, else_yield) };
        }
    }
    // ... and sees only the compute programs (in a plane of their own, they
    // keep their ids).
    for op in old_ids {
        let Some((compute_pid, compute_nprog)) = compute_ids else {
            break;
        };
        let replacement = if ir::op_name(op) == "tt.get_program_id" {
            compute_pid
        } else {
            compute_nprog
        };
        ir::replace_all_uses(ir::result(op, 0), replacement);
        ir::erase(op);
    }
    let then_yield = ir::ops_in(then_block)[0];
    let mut cb = Builder::before(then_yield);
    if placement == CopyPrograms::Plane {
        // Programs of the copy plane past the first C have nothing to do.
        let (_, copy_block, _) = cb.if_else(cb.cmpi(Cmp::Slt, copier_id, c));
        cb = Builder::before(ir::ops_in(copy_block)[0]);
    }
    Ok(CopySite {
        builder: cb,
        copier_id,
        programs: c,
    })
}

/// Copy program `pid` of `programs` copies blocks `pid`, `pid + programs`,
/// ... of `size` elements of the `len` from `from` to `to`: one vector
/// load and store each.
pub(super) fn copy_blocks(
    b: &Builder,
    (from, to): (Value, Value),
    len: i64,
    size: i64,
    element: ir::Type,
    (pid, programs): (Value, Value),
) {
    let blocks = b.const_i32(len / size);
    b.for_loop(pid, blocks, programs, |body, block| {
        let start = body.muli(block, body.const_i32(size));
        let index = body.addi(body.splat(start, &[size]), body.make_range(size));
        let src = body.addptr(body.splat(from, &[size]), index);
        let value = body.load_tensor(src, element);
        let dst = body.addptr(body.splat(to, &[size]), index);
        body.store(dst, value);
    });
}

/// [`copy_blocks`] for a chunk of `rows` rows of `row_elems` elements,
/// `src_pitch` and `dst_pitch` apart: element `e` of a block (in the
/// chunk's row-major order) is at row `e / row_elems`, column
/// `e % row_elems`. (`i32` offsets: `chunk-bind-kernel` keeps buffers
/// within them.)
pub(super) fn copy_rows(
    b: &Builder,
    (from, to): (Value, Value),
    (rows, row_elems, src_pitch, dst_pitch): (i64, i64, i64, i64),
    size: i64,
    element: ir::Type,
    (pid, programs): (Value, Value),
) {
    let blocks = b.const_i32(rows * row_elems / size);
    b.for_loop(pid, blocks, programs, |body, block| {
        let k = |v: i64| body.splat(body.const_i32(v), &[size]);
        let start = body.muli(block, body.const_i32(size));
        let e = body.addi(body.splat(start, &[size]), body.make_range(size));
        let (row, col) = (body.divsi(e, k(row_elems)), body.remsi(e, k(row_elems)));
        let at = |pitch: i64| body.addi(body.muli(row, k(pitch)), col);
        let src = body.addptr(body.splat(from, &[size]), at(src_pitch));
        let value = body.load_tensor(src, element);
        let dst = body.addptr(body.splat(to, &[size]), at(dst_pitch));
        body.store(dst, value);
    });
}

/// Counts this copy program done on `flags[counter]` (after a barrier, so
/// that the acq_rel/sys add covers the whole program's stores) and returns
/// whether it was the launch's last: every launch adds exactly `programs`
/// to the counter, whatever other kernels did with the epoch in between,
/// so the program whose increment completes a multiple is the last.
pub(super) fn last_to_finish(b: &Builder, abi: AbiArgs, counter: Value, programs: i64) -> Value {
    b.barrier();
    let count = count_one(b, abi.flags, counter, Scope::Sys);
    let done = b.remsi(count, b.const_i32(programs));
    b.cmpi(Cmp::Eq, done, b.const_i32(0))
}
