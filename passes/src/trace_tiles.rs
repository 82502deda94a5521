//! `chunk-trace-tiles`: record, for every tile of a fused kernel, when it
//! starts, waits, publishes and ends.
//!
//! Declares the plan's trace buffer and instruments the kernel with
//! `chunk.trace` ops (see the op for the record layout):
//!
//! ```mlir
//! chunk.buffer @synco_trace : !chunk.buffer<16384x8xi64> {synco.staging, synco.trace}
//! ...
//! %t = ... {synco.tile_index = "P"}              // the tile index
//! %record = pid * R + i                          // i: the tile's iteration
//! chunk.trace tile_begin %trace[%record], %t records(16384)
//! ...
//! chunk.trace wait_begin %trace[%record], %t records(16384)
//! chunk.wait %flags[%c], %epoch
//! chunk.trace wait_end %trace[%record], %t records(16384)
//! ...
//! chunk.arrive %flags[%c]
//! chunk.trace signal %trace[%record], %t records(16384)
//! ...
//! chunk.trace tile_end %trace[%record], %t records(16384)
//! ```
//!
//! The tile index is the first op `chunk-reorder-tiles` marked (a kernel
//! that consumes and produces chunks has two). `pid` is the program's
//! linear id over the grid; `R` is 1 where the tile
//! index is computed once per program (a kernel of one tile per program),
//! else `tiles-per-program` and `i` the iteration of the loop that computes
//! it (a persistent kernel's tile loop); a tile past `R` is not recorded.
//! Waits and arrivals inside another loop of the tile (not the tile loop)
//! are not bracketed: a wait per K step would record only the last one.
//! The loop over sources (`chunk.consume ... source(...)`) is the
//! exception: its waits, one per peer's block, are bracketed, and the
//! record keeps the first one's begin and the last one's end.
//! The trace buffer is kernel scratch like a staging buffer: the runtime
//! allocates it (`synco_buffer_synco_trace`, the kernel's last argument),
//! `Node::clear_trace` zeroes it once, `Node::read_trace` decodes it: each
//! record holds the last launch that ran its tile.
//!
//! Each event is one thread's store, no barrier and no atomic: the cost is
//! a few instructions per event (`wait_begin` also reads its word, to keep
//! the first of several waits).
//!
//! Options: `records` (trace records, default 16384: 1 MiB);
//! `tiles-per-program` (default 64).
//! Preconditions: `chunk-bind-kernel` and `chunk-reorder-tiles` ran (the
//! tile index is marked); run after `chunk-insert-waits` and
//! `chunk-fuse-reductions` (the waits and arrivals to bracket) and before
//! `chunk-lower-transfers` (which lists the plan's buffers in the launch
//! manifest) and `chunk-to-triton`.
//! Postconditions: the plan has `@synco_trace`; the kernel takes it and
//! records every tile.

use crate::{
    plan::{
        STAGING_ATTR, TRACE_ATTR, bound_kernel, declare_kernel_buffer, fail, int_option, internal,
        plans,
    },
    tiles::{SOURCE_INDEX_ATTR, TILE_INDEX_ATTR},
};
use synco_chunk::{PassDescriptor, PassFailed, PassOption, attrs::TraceEvent};
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

pub static PASS: PassDescriptor = PassDescriptor {
    argument: "chunk-trace-tiles",
    description: "Record when every tile of the fused kernel starts, waits, publishes and ends (%globaltimer) in a trace buffer",
    anchor: "builtin.module",
    options: &[
        PassOption {
            name: "records",
            description: "Trace records (64 bytes each); tiles past the last are not recorded",
            default: "16384",
        },
        PassOption {
            name: "tiles-per-program",
            description: "Records per program of a persistent kernel (a tile loop); later tiles are not recorded",
            default: "64",
        },
    ],
    run,
};

/// The trace buffer's name in the plan.
pub const TRACE_BUFFER: &str = "synco_trace";

/// `i64` words per trace record (see `chunk.trace` for the layout).
pub const RECORD_WORDS: i64 = 8;

fn run(module: melior::ir::operation::OperationRef, options: &[&str]) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let records = int_option(module, PASS.argument, "records", options[0])?.unwrap_or(16384);
    let per_program =
        int_option(module, PASS.argument, "tiles-per-program", options[1])?.unwrap_or(64);
    for (name, value) in [("records", records), ("tiles-per-program", per_program)] {
        if !(1..=i32::MAX as i64).contains(&value) {
            return Err(fail(
                module,
                format!(
                    "{}: {name} must be in 1..=2^31-1, not {value}",
                    PASS.argument
                ),
            ));
        }
    }
    for plan in plans(module) {
        let (kernel, _) = bound_kernel(&plan, module, PASS.argument)?;
        if plan.buffer(TRACE_BUFFER).is_some() {
            return Err(fail(
                plan.op,
                format!(
                    "{}: plan @{} already has a buffer @{TRACE_BUFFER} (traced twice?)",
                    PASS.argument, plan.name
                ),
            ));
        }
        if crate::abi::buffer_arg(kernel, TRACE_BUFFER).is_some() {
            continue; // Two plans, one kernel: traced once.
        }
        let Some(marked) = ir::walk(kernel)
            .into_iter()
            .find(|op| ir::attr(*op, TILE_INDEX_ATTR).is_some())
        else {
            return Err(fail(
                plan.op,
                format!(
                    "{}: the kernel has no marked tile index; run chunk-reorder-tiles first",
                    PASS.argument
                ),
            ));
        };
        let trace = declare_buffer(&plan, kernel, records)?;
        instrument(kernel, marked, trace, records, per_program)?;
    }
    Ok(())
}

/// Adds `@synco_trace` to the plan and its pointer to the kernel's ABI
/// buffers; returns the kernel argument.
fn declare_buffer(plan: &crate::plan::Plan, kernel: Op, records: i64) -> Result<Value, PassFailed> {
    declare_kernel_buffer(
        plan,
        kernel,
        TRACE_BUFFER,
        &[records, RECORD_WORDS],
        "i64",
        &[STAGING_ATTR, TRACE_ATTR],
        PASS.argument,
    )
}

/// Inserts the `chunk.trace` ops of the tile whose index `marked` computes.
fn instrument(
    kernel: Op,
    marked: Op,
    trace: Value,
    records: i64,
    per_program: i64,
) -> Result<(), PassFailed> {
    let Some(block) = ir::block_of(marked) else {
        return Err(internal(marked, "the tile index has no block"));
    };
    let ops = ir::ops_in(block);
    let (Some(after), Some(terminator)) = (ir::next_op(marked), ops.last().copied()) else {
        return Err(internal(marked, "the tile index ends its block"));
    };
    let tile = ir::result(marked, 0);
    let tile_loop = ir::parent_op(marked).filter(|p| ir::op_name(*p) == "scf.for");
    let b = Builder::before(after).with_loc(ir::location_of(marked));
    let record = record_index(&b, kernel, tile_loop, records, per_program);
    let event = |b: &Builder, event: TraceEvent| {
        b.op(
            "chunk.trace",
            &[trace, record, tile],
            &[],
            &[
                ("event", ir::int_attr_of(ir::i32_type(b.ctx), event as i64)),
                ("records", ir::int_attr_of(ir::i64_type(b.ctx), records)),
            ],
        );
    };
    event(&b, TraceEvent::TileBegin);
    for op in ir::walk(kernel) {
        let name = ir::op_name(op);
        let is_wait = name == "chunk.wait";
        if !(is_wait || name == "chunk.signal" || name == "chunk.arrive") {
            continue;
        }
        // In this tile after its index, and not in a loop of its own (a K
        // loop).
        let Some(top) = ir::ancestor_in_block(op, block) else {
            continue;
        };
        if !ir::is_before_in_block(marked, top) || nearest_loop(op, tile_loop) {
            continue;
        }
        let Some(next) = ir::next_op(op) else {
            return Err(internal(op, "a synchronisation op ends its block"));
        };
        let loc = ir::location_of(op);
        if is_wait {
            event(&Builder::before(op).with_loc(loc), TraceEvent::WaitBegin);
            event(&Builder::before(next).with_loc(loc), TraceEvent::WaitEnd);
        } else {
            event(&Builder::before(next).with_loc(loc), TraceEvent::Signal);
        }
    }
    event(
        &Builder::before(terminator).with_loc(ir::location_of(marked)),
        TraceEvent::TileEnd,
    );
    Ok(())
}

/// Whether a loop other than `tile_loop` encloses `op` (inside the tile).
/// The loop over sources that `chunk-reorder-tiles` rotated does not
/// count: its waits run once per source, and the record keeps the first
/// one's begin and the last one's end.
fn nearest_loop(op: Op, tile_loop: Option<Op>) -> bool {
    let mut current = ir::parent_op(op);
    while let Some(p) = current {
        if tile_loop.is_some_and(|t| ir::same_op(t, p)) || ir::op_name(p) == "tt.func" {
            return false;
        }
        if matches!(ir::op_name(p).as_str(), "scf.for" | "scf.while") && !is_source_loop(p) {
            return true;
        }
        current = ir::parent_op(p);
    }
    false
}

/// Whether `op` is a loop over sources (its body computes the rotated
/// source index, see `chunk-reorder-tiles`).
fn is_source_loop(op: Op) -> bool {
    ir::regions(op)
        .into_iter()
        .flat_map(ir::blocks)
        .flat_map(ir::ops_in)
        .any(|o| ir::attr(o, SOURCE_INDEX_ATTR).is_some())
}

/// `pid * R + i`, where `pid` is the program's linear id over the grid
/// axes the kernel reads (no more: the `ldst` backend's copy programs take
/// a grid axis the kernel does not read); `records` (out of range: not
/// recorded) once `i` reaches `R`.
fn record_index(
    b: &Builder,
    kernel: Op,
    tile_loop: Option<Op>,
    records: i64,
    per_program: i64,
) -> Value {
    let i32t = ir::i32_type(b.ctx);
    let axis = |a: i64| ir::int_attr_of(i32t, a);
    let grid = |name: &str, a: i64| ir::result(b.op(name, &[], &[i32t], &[("axis", axis(a))]), 0);
    let axes = ir::walk(kernel)
        .into_iter()
        .filter(|op| {
            matches!(
                ir::op_name(*op).as_str(),
                "tt.get_program_id" | "tt.get_num_programs"
            )
        })
        .filter_map(|op| ir::int_attr(op, "axis"))
        .max()
        .unwrap_or(0);
    // x + nx * (y + ny * z), from the last axis read down.
    let mut pid = grid("tt.get_program_id", axes);
    for a in (0..axes).rev() {
        pid = b.addi(
            grid("tt.get_program_id", a),
            b.muli(grid("tt.get_num_programs", a), pid),
        );
    }
    let Some(tile_loop) = tile_loop else {
        return pid;
    };
    let (lower, step) = (ir::operands(tile_loop)[0], ir::operands(tile_loop)[2]);
    let iv = ir::regions(tile_loop)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
        .and_then(|body| ir::block_args(body).first().copied());
    let Some(iv) = iv.filter(|v| ir::is_integer_type(ir::type_of(*v), 32)) else {
        return pid;
    };
    let r = b.const_i32(per_program);
    let i = b.divsi(b.subi(iv, lower), step);
    let record = b.addi(b.muli(pid, r), i);
    b.select(b.cmpi(Cmp::Slt, i, r), record, b.const_i32(records))
}
