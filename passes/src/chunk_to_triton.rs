//! `chunk-to-triton`: lower the remaining chunk ops to ops Triton compiles.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkToTriton` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::{
    abi::{BUFFERS_ATTR, FIRST_ARG_ATTR, abi_args, enclosing_kernel},
    kernel_loops::MOVED_POINTER_ATTR,
    plan::fail,
    tiles::{FLATTEN_ATTR, TILE_INDEX_ATTR},
};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkToTritonOptions, RustPass};
use synco_chunk::{PassFailed, attrs};
use synco_ir::{self as ir, Builder, Op, RmwOp, Scope, Sem, builder::Cmp};

/// The body of `chunk-to-triton`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkToTritonOptions;

    fn run(module: OperationRef, options: &ChunkToTritonOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

fn run(module: OperationRef, _options: &ChunkToTritonOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    for op in ir::walk(module) {
        let name = ir::op_name(op);
        match name.as_str() {
            "chunk.plan" => {
                let leftover = ir::walk(op).into_iter().find(|o| {
                    matches!(
                        ir::op_name(*o).as_str(),
                        "chunk.transfer"
                            | "chunk.all_gather"
                            | "chunk.reduce_scatter"
                            | "chunk.all_reduce"
                            | "chunk.all_to_all"
                    )
                });
                if let Some(left) = leftover {
                    return Err(fail(
                        left,
                        "chunk-to-triton: transfers and collectives must be lowered first (chunk-expand-collectives, chunk-lower-transfers)",
                    ));
                }
            }
            "chunk.rank" | "chunk.world_size" | "chunk.peer_ptr" | "chunk.wait" | "chunk.poll"
            | "chunk.agree" | "chunk.acquire" | "chunk.signal" | "chunk.arrive" | "chunk.trace" => {
                lower_kernel_op(op, &name)?;
            }
            _ => {
                ir::remove_attr(op, TILE_INDEX_ATTR);
                ir::remove_attr(op, MOVED_POINTER_ATTR);
            }
        }
    }
    for op in ir::walk(module) {
        if ir::op_name(op) == "scf.for" && ir::attr(op, FLATTEN_ATTR).is_some() {
            guard_flattened_epilogue(op);
        }
    }
    for op in ir::walk(module) {
        if ir::op_name(op) == "chunk.plan" {
            ir::erase(op);
        } else if ir::op_name(op) == "tt.func" {
            ir::remove_attr(op, FIRST_ARG_ATTR);
            ir::remove_attr(op, BUFFERS_ATTR);
        }
    }
    Ok(())
}

/// Appends a side-effecting no-op to `for_op`'s body when the op before its
/// terminator has regions (see the module docs: Triton's loop flattening
/// mistakes uses nested in a logue's last op for logue outputs).
fn guard_flattened_epilogue(for_op: Op) {
    let Some(body) = ir::regions(for_op)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
    else {
        return;
    };
    let ops = ir::ops_in(body);
    let [.., last, terminator] = ops.as_slice() else {
        return;
    };
    if ir::regions(*last).is_empty() {
        return;
    }
    let b = Builder::before(*terminator).with_loc(ir::location_of(*last));
    b.inline_asm_effect("mov.u32 $0, 0;");
}

fn lower_kernel_op(op: Op, name: &str) -> Result<(), PassFailed> {
    let Some(abi) = enclosing_kernel(op).and_then(abi_args) else {
        return Err(fail(
            op,
            format!("chunk-to-triton: {name} must be inside a tt.func bound by chunk-bind-kernel"),
        ));
    };
    let b = Builder::before(op);
    let operands = ir::operands(op);
    match name {
        "chunk.rank" => ir::replace_all_uses(ir::result(op, 0), abi.rank),
        "chunk.world_size" => ir::replace_all_uses(ir::result(op, 0), abi.world_size),
        "chunk.peer_ptr" => {
            let (ptr, peer) = (operands[0], operands[1]);
            let ty = ir::type_of(ptr);
            let i64t = ir::i64_type(b.ctx);
            let my_base = b.load(b.addptr(abi.heap_bases, abi.rank), i64t);
            let peer_base = b.load(b.addptr(abi.heap_bases, peer), i64t);
            let delta = b.subi(peer_base, my_base);
            let peer_ptr = match pointee_bytes(ty) {
                // In elements, through tt.addptr: Triton's alignment analysis
                // keeps the pointer's contiguity and, with heap bases
                // aligned to 16 elements, its vector width.
                Some(bytes) => {
                    let elements = b.divsi(delta, b.const_i64(bytes));
                    b.assume_multiple_of(elements, 16);
                    let offset = match ir::tensor_shape(ty) {
                        Some(shape) => b.splat(elements, &shape),
                        None => elements,
                    };
                    b.addptr(ptr, offset)
                }
                None => {
                    let delta = match ir::tensor_shape(ty) {
                        Some(shape) => b.splat(delta, &shape),
                        None => delta,
                    };
                    b.int_to_ptr(b.addi(b.ptr_to_int(ptr), delta), ty)
                }
            };
            ir::replace_all_uses(ir::result(op, 0), peer_ptr);
        }
        "chunk.wait" => lower_wait(op, &b, abi, operands[0], operands[1], operands[2])?,
        "chunk.poll" => {
            let arrived = lower_poll(op, &b, operands[0], operands[1], operands[2])?;
            ir::replace_all_uses(ir::result(op, 0), arrived);
        }
        "chunk.agree" => {
            let all = lower_agree(&b, operands[0]);
            ir::replace_all_uses(ir::result(op, 0), all);
        }
        "chunk.acquire" => {
            let proxy_fence = enclosing_kernel(op).is_some_and(reads_through_descriptors);
            b.inline_asm_effect(&acquire_ptx(scope_name(scope_of(op)), proxy_fence));
        }
        "chunk.trace" => lower_trace(op, &b, operands[0], operands[1], operands[2])?,
        "chunk.signal" => {
            let (flags, chunk, epoch) = (operands[0], operands[1], operands[2]);
            publish(&b);
            let (sem, scope) = (sem_of(op, Sem::Release), scope_of(op));
            b.atomic_rmw(RmwOp::Xchg, b.addptr(flags, chunk), epoch, sem, scope);
        }
        "chunk.arrive" => {
            let (flags, chunk) = (operands[0], operands[1]);
            publish(&b);
            let (sem, scope) = (sem_of(op, Sem::Release), scope_of(op));
            b.atomic_rmw(
                RmwOp::Add,
                b.addptr(flags, chunk),
                b.const_i32(1),
                sem,
                scope,
            );
        }
        _ => unreachable!("matched above"),
    }
    ir::erase(op);
    Ok(())
}

/// Bytes of the element a `!tt.ptr<T>` (or a tensor of them) points to.
pub fn pointee_bytes(ty: ir::Type) -> Option<i64> {
    let text = ir::print_type(ty);
    let start = text.find("!tt.ptr<")? + "!tt.ptr<".len();
    let pointee = text[start..].split(['>', ',']).next()?;
    Some(match pointee {
        "i8" | "f8E4M3FN" | "f8E5M2" => 1,
        "bf16" | "f16" | "i16" => 2,
        "f32" | "i32" => 4,
        "f64" | "i64" => 8,
        _ => return None,
    })
}

/// Every thread of the program has finished its accesses (CTA barrier)
/// before one thread (Triton's scalar atomic) publishes them with a release
/// atomic: in PTX's memory model the barrier synchronises the threads and
/// the release is cumulative, so its fence at the atomic's scope covers
/// every thread's writes (CUTLASS's `__syncthreads` + one-thread
/// `red.release` pattern). A `fence.acq_rel.sys` in every thread as well
/// cost 5% to 11% of the fused reductions at K_local = 1024
/// (passes/docs/publish-barrier.md). The barrier is
/// `bar.sync 0` in the asm rather than `gpu.barrier` (which Triton lowers
/// to the same instruction): Triton's software pipeliner leaves a loop
/// whose body holds a `gpu.barrier` alone, and a persistent kernel's tile
/// loop signals.
fn publish(b: &Builder) {
    b.inline_asm_effect("bar.sync 0;\n\tmov.u32 $0, 0;");
}

fn sem_of(op: Op, default: Sem) -> Sem {
    match ir::int_attr(op, "sem").and_then(attrs::MemSemantic::from_value) {
        Some(attrs::MemSemantic::Relaxed) => Sem::Relaxed,
        Some(attrs::MemSemantic::Acquire) => Sem::Acquire,
        Some(attrs::MemSemantic::Release) => Sem::Release,
        Some(attrs::MemSemantic::AcqRel) => Sem::AcqRel,
        None => default,
    }
}

fn scope_of(op: Op) -> Scope {
    match ir::int_attr(op, "scope").and_then(attrs::MemScope::from_value) {
        Some(attrs::MemScope::Gpu) => Scope::Gpu,
        Some(attrs::MemScope::Cta) => Scope::Cta,
        _ => Scope::Sys,
    }
}

/// Nanoseconds a waiting program sleeps between two reads of its flag.
const BACKOFF_NS: u32 = 64;

/// Whether `kernel` reads through tensor descriptors: its bulk tensor
/// copies read global memory in the async proxy, so what a wait acquired
/// (chunks written in the generic proxy, by copies or other GPUs' stores)
/// reaches them only across a proxy fence.
fn reads_through_descriptors(kernel: Op) -> bool {
    ir::walk(kernel).into_iter().any(|op| {
        matches!(
            ir::op_name(op).as_str(),
            "tt.descriptor_load" | "tt.descriptor_gather"
        )
    })
}

/// The PTX of a bounded wait: read the flag `$1` with `ld.<sem>.<scope>`
/// until it reaches `$2` (signed), the launch's error word `$3` is set, or
/// `timeout_ns` pass on `%globaltimer`, sleeping `BACKOFF_NS` between reads;
/// `$0` is the last value read. One asm block, not an `scf.while`: Triton's
/// software pipeliner leaves a loop alone when its body holds another loop,
/// and a wait sits inside the tile loop of a persistent kernel. Labels and
/// registers are scoped by the braces, so copies of the block may coexist.
/// With `proxy_fence`, the wait ends with `fence.proxy.async.global`
/// (see [`reads_through_descriptors`]).
fn spin_wait_ptx(sem: &str, scope: &str, timeout_ns: i64, proxy_fence: bool) -> String {
    let fence = if proxy_fence {
        "\n\tfence.proxy.async.global;"
    } else {
        ""
    };
    format!(
        "{{\n\t.reg .pred %done;\n\t.reg .u32 %err;\n\t.reg .u64 %t0, %t;\n\t\
         mov.u64 %t0, %globaltimer;\n\
         SYNCO_WAIT:\n\t\
         ld.{sem}.{scope}.global.u32 $0, [$1];\n\t\
         setp.ge.s32 %done, $0, $2;\n\t@%done bra SYNCO_DONE;\n\t\
         ld.relaxed.gpu.global.u32 %err, [$3];\n\t\
         setp.ne.u32 %done, %err, 0;\n\t@%done bra SYNCO_DONE;\n\t\
         mov.u64 %t, %globaltimer;\n\tsub.u64 %t, %t, %t0;\n\t\
         setp.ge.u64 %done, %t, {timeout_ns};\n\t@%done bra SYNCO_DONE;\n\t\
         nanosleep.u32 {BACKOFF_NS};\n\tbra SYNCO_WAIT;\n\
         SYNCO_DONE:{fence}\n\t}}"
    )
}

/// The PTX of `chunk.trace`: `$1` is the trace buffer, `$2` the record,
/// `$3` the tile; one thread (x = 0) writes, nobody waits for the stores.
/// Register names avoid PTX's special registers (`%tid`, `%smid`, ...).
fn trace_ptx(event: attrs::TraceEvent, records: i64) -> String {
    let word = 8 * event as i64;
    let record_bytes = 8 * attrs::TRACE_RECORD_WORDS;
    let mut ptx = format!(
        "{{\n\t.reg .pred %sy_p, %sy_in;\n\t.reg .u32 %sy_x;\n\t.reg .u64 %sy_a, %sy_t, %sy_old;\n\t\
         mov.u32 %sy_x, %tid.x;\n\tsetp.eq.u32 %sy_p, %sy_x, 0;\n\t\
         setp.lt.u32 %sy_in, $2, {records};\n\tand.pred %sy_p, %sy_p, %sy_in;\n\t\
         mul.wide.u32 %sy_a, $2, {record_bytes};\n\tadd.u64 %sy_a, %sy_a, $1;\n\t\
         mov.u64 %sy_t, %globaltimer;\n\t"
    );
    if event == attrs::TraceEvent::WaitBegin {
        ptx += &format!(
            "@%sy_p ld.global.u64 %sy_old, [%sy_a+{word}];\n\t\
             setp.eq.and.u64 %sy_p, %sy_old, 0, %sy_p;\n\t"
        );
    }
    if event == attrs::TraceEvent::TileBegin {
        // The whole record: the time, the other events' words cleared (a
        // record of an earlier launch is overwritten), the tile and where
        // it runs.
        ptx += "{\n\t.reg .u32 %sy_sm, %sy_cx, %sy_cy, %sy_cz;\n\t\
                mov.u32 %sy_sm, %smid;\n\tmov.u32 %sy_cx, %ctaid.x;\n\t\
                mov.u32 %sy_cy, %ctaid.y;\n\tmov.u32 %sy_cz, %ctaid.z;\n\t\
                @%sy_p st.global.v2.u64 [%sy_a+0], {%sy_t, 0};\n\t\
                @%sy_p st.global.v2.u64 [%sy_a+16], {0, 0};\n\t\
                @%sy_p st.global.v4.u32 [%sy_a+32], {0, 0, $3, %sy_sm};\n\t\
                @%sy_p st.global.v4.u32 [%sy_a+48], {%sy_cx, %sy_cy, %sy_cz, 0};\n\t}\n\t";
    } else {
        ptx += &format!("@%sy_p st.global.u64 [%sy_a+{word}], %sy_t;\n\t");
    }
    ptx + "mov.u32 $0, 0;\n\t}"
}

fn lower_trace(
    op: Op,
    b: &Builder,
    trace: ir::Value,
    record: ir::Value,
    tile: ir::Value,
) -> Result<(), PassFailed> {
    let event = ir::int_attr(op, "event").and_then(attrs::TraceEvent::from_value);
    let records = ir::int_attr(op, "records");
    let (Some(event), Some(records)) = (event, records) else {
        return Err(crate::plan::internal(
            op,
            "chunk.trace without a valid event or records",
        ));
    };
    if pointee_bytes(ir::type_of(trace)) != Some(8) || ir::is_ranked_tensor(ir::type_of(trace)) {
        return Err(fail(
            op,
            format!(
                "chunk-to-triton: a trace buffer is a scalar !tt.ptr<i64>, got {}",
                ir::print_type(ir::type_of(trace))
            ),
        ));
    }
    b.inline_asm(
        &trace_ptx(event, records),
        "=r,l,r,r",
        &[trace, record, tile],
        ir::i32_type(b.ctx),
    );
    Ok(())
}

/// `epoch * count` of a wait or poll (`count` from `op`, at least 1),
/// refused beyond the 32-bit flags.
fn flag_target(op: Op, b: &Builder, epoch: ir::Value) -> Result<ir::Value, PassFailed> {
    let count = ir::int_attr(op, "count").unwrap_or(1);
    if i32::try_from(count).is_err() {
        return Err(fail(
            op,
            format!(
                "chunk-to-triton: count({count}) is beyond the 32-bit flags it waits on (at most {})",
                i32::MAX
            ),
        ));
    }
    Ok(if count == 1 {
        epoch
    } else {
        b.muli(epoch, b.const_i32(count))
    })
}

/// The PTX scope qualifier of `scope`.
fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Gpu => "gpu",
        Scope::Cta => "cta",
        Scope::Sys => "sys",
    }
}

/// `chunk.poll`: one relaxed read of the flag (side-effecting asm, so that
/// it is neither hoisted nor merged with another read), compared with the
/// target.
fn lower_poll(
    op: Op,
    b: &Builder,
    flags: ir::Value,
    chunk: ir::Value,
    epoch: ir::Value,
) -> Result<ir::Value, PassFailed> {
    let target = flag_target(op, b, epoch)?;
    let scope = scope_name(scope_of(op));
    let seen = b.inline_asm(
        &format!("ld.relaxed.{scope}.global.u32 $0, [$1];"),
        "=r,l",
        &[b.addptr(flags, chunk)],
        ir::i32_type(b.ctx),
    );
    Ok(b.cmpi(Cmp::Sge, seen, target))
}

/// `chunk.agree`: `bar.red.and.pred` on barrier 0 (as `__syncthreads_and`),
/// every thread of the CTA contributing its predicate and getting the AND.
fn lower_agree(b: &Builder, holds: ir::Value) -> ir::Value {
    let i32t = ir::i32_type(b.ctx);
    let all = b.inline_asm(
        "{ .reg .pred %p<2>; setp.ne.b32 %p0, $1, 0; bar.red.and.pred %p1, 0, %p0; selp.b32 $0, 1, 0, %p1; }",
        "=r,r",
        &[b.select(holds, b.const_i32(1), b.const_i32(0))],
        i32t,
    );
    b.cmpi(Cmp::Ne, all, b.const_i32(0))
}

/// The PTX of `chunk.acquire`: an acquire fence at `scope` (PTX 8.6; on
/// sm_90 the L1 invalidation an acquire load ends with, where an acq_rel
/// fence would wait for every outstanding access), then, with
/// `proxy_fence`, the async proxy's fence (as at the end of a wait).
fn acquire_ptx(scope: &str, proxy_fence: bool) -> String {
    let proxy = if proxy_fence {
        " fence.proxy.async.global;"
    } else {
        ""
    };
    format!("fence.acquire.{scope};{proxy} mov.u32 $0, 0;")
}

fn lower_wait(
    op: Op,
    b: &Builder,
    abi: crate::abi::AbiArgs,
    flags: ir::Value,
    chunk: ir::Value,
    epoch: ir::Value,
) -> Result<(), PassFailed> {
    let timeout_ns = ir::int_attr(op, "timeout_ns").unwrap_or(10_000_000_000);
    let target = flag_target(op, b, epoch)?;
    let sem = match sem_of(op, Sem::Acquire) {
        Sem::Relaxed => "relaxed",
        _ => "acquire",
    };
    let scope = scope_name(scope_of(op));
    let flag = b.addptr(flags, chunk);
    let proxy_fence = enclosing_kernel(op).is_some_and(reads_through_descriptors);
    // Once any wait of the launch failed (the error word is set), later
    // waits fall through.
    let seen = b.inline_asm(
        &spin_wait_ptx(sem, scope, timeout_ns, proxy_fence),
        "=r,l,r,l",
        &[flag, target, abi.errors],
        ir::i32_type(b.ctx),
    );
    let timed_out = b.cmpi(Cmp::Slt, seen, target);
    let rank = abi.rank;
    let errors = abi.errors;
    b.if_then(timed_out, |then| {
        let old = then.atomic_cas(
            errors,
            then.const_i32(0),
            then.const_i32(1),
            Sem::AcqRel,
            Scope::Sys,
        );
        let first = then.cmpi(Cmp::Eq, old, then.const_i32(0));
        then.if_then(first, |record| {
            record.store(record.addptr(errors, record.const_i32(1)), rank);
            record.store(record.addptr(errors, record.const_i32(2)), chunk);
            record.store(record.addptr(errors, record.const_i32(3)), epoch);
        });
    });
    Ok(())
}
