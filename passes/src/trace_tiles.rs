//! `chunk-trace-tiles`: record, for every tile of a fused kernel, when it
//! starts, waits, publishes and ends.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkTraceTiles` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::{
    plan::{STAGING_ATTR, TRACE_ATTR, bound_kernel, declare_kernel_buffer, fail, internal, plans},
    tiles::{SOURCE_INDEX_ATTR, TILE_INDEX_ATTR},
};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkTraceTilesOptions, PassOptions, RustPass};
use synco_chunk::{PassFailed, attrs::TraceEvent};
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

/// The body of `chunk-trace-tiles`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkTraceTilesOptions;

    fn run(module: OperationRef, options: &ChunkTraceTilesOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkTraceTilesOptions::ARGUMENT;

/// The trace buffer's name in the plan.
pub const TRACE_BUFFER: &str = "synco_trace";

use synco_chunk::attrs::TRACE_RECORD_WORDS as RECORD_WORDS;

fn run(module: OperationRef, options: &ChunkTraceTilesOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let records = options.records;
    let per_program = options.tiles_per_program;
    for plan in plans(module) {
        let (kernel, _) = bound_kernel(&plan, module, NAME)?;
        if plan.buffer(TRACE_BUFFER).is_some() {
            return Err(fail(
                plan.op,
                format!(
                    "{}: plan @{} already has a buffer @{TRACE_BUFFER} (traced twice?)",
                    NAME, plan.name
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
            let why = if ir::walk(kernel)
                .into_iter()
                .any(|op| ir::attr(op, crate::tiles::CHUNK_LOOP_ATTR).is_some())
            {
                "its tiles are walked by a kernel loop split by chunk (a consume with loop(...)), which tracing does not instrument yet"
            } else {
                "the kernel has no marked tile index; run chunk-reorder-tiles first"
            };
            return Err(fail(plan.op, format!("{NAME}: {why}")));
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
        NAME,
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
