//! The kernel-side flag operations the fusing passes emit (the `chunk`
//! ops `chunk-to-triton` lowers, and the one atomic counter they share):
//! wait for a flag or poll it, mark a chunk arrived, count a tile, address
//! a peer.

use crate::abi::AbiArgs;
use synco_ir::{self as ir, Builder, RmwOp, Scope, Sem, Value};

/// `chunk.peer_ptr %ptr, %peer`.
pub fn peer_ptr(b: &Builder, ptr: Value, peer: Value) -> Value {
    ir::result(
        b.op("chunk.peer_ptr", &[ptr, peer], &[ir::type_of(ptr)], &[]),
        0,
    )
}

/// `chunk.wait %flags[%flag], %epoch count(n)` on this rank's flags.
pub fn wait(b: &Builder, abi: AbiArgs, flag: Value, epoch: Value, n: i64) {
    wait_on(b, abi.flags, flag, epoch, n);
}

/// `chunk.wait %flags[%flag], %epoch count(n)` on the flags `flags` points
/// to (this rank's, or a peer's through [`peer_ptr`]).
pub fn wait_on(b: &Builder, flags: Value, flag: Value, epoch: Value, n: i64) {
    let count = ir::int_attr_of(ir::i64_type(b.ctx), n);
    b.op(
        "chunk.wait",
        &[flags, flag, epoch],
        &[],
        &[("count", count)],
    );
}

/// `chunk.poll %flags[%flag], %epoch` on this rank's flags: whether the
/// flag has reached the epoch (one relaxed read; see [`acquire`]).
pub fn poll(b: &Builder, abi: AbiArgs, flag: Value, epoch: Value) -> Value {
    ir::result(
        b.op(
            "chunk.poll",
            &[abi.flags, flag, epoch],
            &[ir::i1_type(b.ctx)],
            &[],
        ),
        0,
    )
}

/// `chunk.agree %holds`: whether `holds` is true on every thread of the
/// program, the same answer on all of them (a barrier).
pub fn agree(b: &Builder, holds: Value) -> Value {
    ir::result(b.op("chunk.agree", &[holds], &[ir::i1_type(b.ctx)], &[]), 0)
}

/// `chunk.acquire`: what the polled flags published becomes visible to
/// the reads after it.
pub fn acquire(b: &Builder) {
    b.op("chunk.acquire", &[], &[], &[]);
}

/// Adds 1 to `%flags[%counter]` (one acq_rel atomic at `scope`) and
/// returns the count it made, the old value plus 1, to every thread.
pub fn count_one(b: &Builder, flags: Value, counter: Value, scope: Scope) -> Value {
    let before = b.atomic_rmw(
        RmwOp::Add,
        b.addptr(flags, counter),
        b.const_i32(1),
        Sem::AcqRel,
        scope,
    );
    b.addi(before, b.const_i32(1))
}

/// `chunk.arrive %flags[%flag]`.
pub fn arrive(b: &Builder, flags: Value, flag: Value) {
    b.op("chunk.arrive", &[flags, flag], &[], &[]);
}
