//! The kernel loops `chunk-reorder-tiles` splits by chunk: a consumer
//! whose blocks a kernel loop walks (`loop(...)`) gets a loop over the
//! buffer's chunks, in arrival order, around the kernel's own loop clipped
//! to each chunk.

use super::rotation::{rotate, rotate_back, zigzag_rotate};
use crate::{
    kernel_loops::MOVED_POINTER_ATTR,
    plan::{BlockOrder, FlagKind, Owners, TileMap, block_order, fail, flag_layout, loc},
    tiles::{CHUNK_INDEX_ATTR, CHUNK_LOOP_ATTR, PRESENT_LOOP_ATTR, PRESENT_PATH_ATTR, TileLoop},
};
use synco_chunk::{
    Diagnostic, PassFailed,
    passes::{ChunkReorderTilesOptions, PresentPath, PresentSplit},
};
use synco_ir::{self as ir, Builder, Value, builder::Cmp};

/// Rows per chunk and chunks in all of the split a tile loop carries
/// (`chunk.chunk_rows`, `chunk.chunk_count`), so that the buffers it walks
/// can be checked to share it.
pub(super) const CHUNK_ROWS_ATTR: &str = "chunk.chunk_rows";
pub(super) const CHUNKS_ATTR: &str = "chunk.chunk_count";

/// A consumer whose blocks a kernel loop walks (`loop(...)`; each loop, if
/// several do): the loop from `lo` (0 or a multiple of the tile) to `hi`
/// is split into a loop over the buffer's `C` chunks of `R` rows,
/// iteration `j` taking chunk `c = (j + rank * n) mod C` (`n` chunks per
/// rank: the rank's own first, then rank r+1's, ..., the order they
/// arrive in), around the kernel's loop clipped to
/// `[max(lo, c * R), min(hi, (c + 1) * R))`, its iteration values carried
/// through.
/// The chunk index is marked
/// for `chunk-insert-waits`, which waits before the clipped loop: outside
/// the loop Triton pipelines. Buffers walked by one loop (keys and values)
/// share the split, and must be chunked alike.
pub(super) fn split_tile_loop(
    rank: Value,
    plan: &crate::plan::Plan,
    consume: TileMap,
    name: &str,
    tile_loop: TileLoop,
    remark_for_loops: Option<usize>,
    options: &ChunkReorderTilesOptions,
) -> Result<(), PassFailed> {
    let ctx = ir::context_of(consume.0);
    let (var, subject) = (tile_loop.key(), tile_loop.subject());
    let layout = flag_layout(plan)?;
    let Some(range) = layout
        .iter()
        .find(|r| r.kind == FlagKind::Arrival && r.buffer == name)
    else {
        return Err(fail(
            consume,
            format!("@{name} has no chunks arriving from other ranks for {subject} to wait for"),
        ));
    };
    // (The plan verifier refuses chunks that split a tile.)
    let (rows, chunks) = (
        range.rows_per_chunk,
        range.chunks_per_rank * plan.world_size,
    );
    let order = match range.owners {
        Owners::Contiguous => LoopOrder::Blocks(block_order(
            plan,
            name,
            range.dim,
            rows * range.chunks_per_rank,
        )),
        Owners::Zigzag => LoopOrder::Zigzag,
        Owners::Irregular => {
            return Err(fail(
                consume,
                format!(
                    "chunk-reorder-tiles: the transfers into @{name} leave its chunks held neither in one block per rank nor in zigzag half-blocks (some rank's chunk is never written, or a rank's own chunk is): {subject} cannot tell which chunks to wait for"
                ),
            ));
        }
    };
    let mut present_built = false;
    if ir::attr(tile_loop.op, CHUNK_LOOP_ATTR).is_some() {
        let split = (
            ir::int_attr(tile_loop.op, CHUNK_ROWS_ATTR),
            ir::int_attr(tile_loop.op, CHUNKS_ATTR),
        );
        if split != (Some(rows), Some(chunks)) {
            return Err(fail(
                consume,
                format!(
                    "@{name} comes in {chunks} chunks of {rows} rows, but {subject} is already split for a buffer in {} chunks of {} rows: buffers read in one loop must be chunked alike",
                    split.1.unwrap_or(0),
                    split.0.unwrap_or(0)
                ),
            ));
        }
    } else {
        let present = present_path_kind(options.present_path, order, range.cut.is_some(), chunks);
        present_built = present != PresentPath::None;
        split_loop(
            tile_loop,
            rank,
            (rows, range.chunks_per_rank, chunks),
            order,
            &var,
            (present, unrolls(options, present, chunks, tile_loop)),
        );
        let i64t = ir::i64_type(ctx);
        ir::set_attr(tile_loop.op, CHUNK_ROWS_ATTR, ir::int_attr_of(i64t, rows));
        ir::set_attr(tile_loop.op, CHUNKS_ATTR, ir::int_attr_of(i64t, chunks));
    }
    let Some(loops) = remark_for_loops else {
        return Ok(());
    };
    Diagnostic::remark(
        loc(consume),
        format!(
            "{} @{name} chunk by chunk ({chunks} chunks of {rows} {}): {}{}",
            crate::tiles::loops_doing(loops, tile_loop, "reads", "read"),
            crate::plan::extent_word(range.dim, plan.rank_of(name)),
            match order {
                LoopOrder::Blocks(BlockOrder::Forward) => "this rank's first, then rank r+1's, ...",
                LoopOrder::Blocks(BlockOrder::Backward) =>
                    "this rank's first, then rank r-1's, ...",
                LoopOrder::Zigzag =>
                    "the low zigzag half-blocks from this rank's (r, r+1, ...), then the high ones from rank r-1's (2W-r, ..., 2W-1, W, ...)",
            },
            if present_built {
                "; a program that finds every chunk present reads them without waits"
            } else {
                ""
            }
        ),
    )
    .emit();
    Ok(())
}

/// Rewrites `tile_loop` (from `lo`, 0 or a multiple of the tile, to `hi`)
/// into the loop over `chunks` chunks of `rows` rows around it, clipped to
/// `[max(lo, c * R), min(hi, (c + 1) * R))` (see [`split_tile_loop`]); marks the
/// chunk index ([`CHUNK_INDEX_ATTR`]) and the clipped loop
/// ([`CHUNK_LOOP_ATTR`]) with `var`, the loop's [`TileLoop::key`]; with
/// a present path if `present` says so, unrolled if `unrolled`.
fn split_loop(
    tile_loop: TileLoop,
    rank: Value,
    (rows, per_rank, chunks): (i64, i64, i64),
    order: LoopOrder,
    var: &str,
    (present, unrolled): (PresentPath, bool),
) {
    let l = tile_loop.op;
    let ctx = ir::context_of(l);
    let operands = ir::operands(l);
    let (lower, upper, inits) = (operands[0], operands[1], operands[3..].to_vec());
    // (A loop from a multiple of the tile, as a causal band, starts at or
    // after the chunk's first row.)
    let from_zero = ir::constant_int(lower) == Some(0);
    let ty = ir::type_of(operands[0]);
    let b = Builder::before(l).with_loc(ir::location_of(l));
    let c = |v: i64| b.constant(ty, v);
    // Where the loop over the chunks unrolls, the chunk's rows are hidden
    // from LLVM: from a constant bound it widens the clipped loop's
    // variable to 64 bits, and a causal mask on it then compares in 64
    // bits. (Hidden in a loop that stays rolled, they cost more than they
    // save: passes/docs/kernel-loops.md.)
    let rows_per_chunk = rows;
    let rows = if unrolled { b.opaque(c(rows)) } else { c(rows) };
    if present == PresentPath::Arrival {
        // The runs' bounds, the chunk's rows hidden from LLVM as in an
        // unrolled split.
        let hidden = if unrolled {
            rows
        } else {
            b.opaque(c(rows_per_chunk))
        };
        present_path(
            l,
            var,
            present_order(&b, (tile_loop, order), rank, (hidden, per_rank, chunks)),
        );
    }
    let mut clipped = (upper, upper);
    let outer = b.for_loop_with(c(0), c(chunks), c(1), &inits, |body, j, args| {
        let chunk = match order {
            LoopOrder::Blocks(BlockOrder::Forward) => rotate(&body, j, rank, 0, per_rank, chunks),
            LoopOrder::Blocks(BlockOrder::Backward) => {
                rotate_back(&body, j, rank, per_rank, chunks)
            }
            LoopOrder::Zigzag => zigzag_rotate(&body, j, rank, per_rank, chunks),
        };
        ir::set_attr(chunk, CHUNK_INDEX_ATTR, ir::string_attr(ctx, var));
        let first = body.muli(ir::result(chunk, 0), rows);
        let end = body.addi(first, rows);
        let start = if from_zero {
            first
        } else {
            body.maxsi(lower, first)
        };
        clipped = (start, body.minsi(upper, end));
        args
    });
    // The kernel's loop moves inside, clipped to the chunk, its results
    // now the outer loop's.
    for (inner, outer) in ir::results(l).into_iter().zip(ir::results(outer)) {
        ir::replace_all_uses(inner, outer);
    }
    let body = ir::blocks(ir::regions(outer)[0])[0];
    let outer_yield = *ir::ops_in(body)
        .last()
        .expect("a loop body ends in scf.yield");
    ir::move_before(l, outer_yield);
    ir::set_operand(l, 0, clipped.0);
    ir::set_operand(l, 1, clipped.1);
    for (i, arg) in ir::block_args(body).into_iter().skip(1).enumerate() {
        ir::set_operand(l, 3 + i, arg);
    }
    for (i, result) in ir::results(l).into_iter().enumerate() {
        ir::set_operand(outer_yield, i, result);
    }
    ir::set_attr(l, CHUNK_LOOP_ATTR, ir::string_attr(ctx, var));
    if unrolled {
        ir::set_attr(outer, UNROLL_ATTR, b.i32_attr(chunks));
    }
}

/// Whether the split of `tile_loop` into `chunks` chunks, with the
/// `present` path, unrolls: up to `max-unrolled-chunks` chunks, and beside
/// a present path as `present-split` says (`auto`: where the loop runs to
/// a kernel argument; passes/docs/present-path.md).
fn unrolls(
    options: &ChunkReorderTilesOptions,
    present: PresentPath,
    chunks: i64,
    tile_loop: TileLoop,
) -> bool {
    let beside_present = match options.present_split {
        PresentSplit::Automatic => runs_to_argument(tile_loop),
        PresentSplit::Rolled => false,
        PresentSplit::Unrolled => true,
    };
    chunks <= options.max_unrolled_chunks && (present == PresentPath::None || beside_present)
}

/// Whether `tile_loop` runs to a bound the kernel takes as an argument
/// (the sequence's length: every program walks all of it, as without a
/// causal mask) rather than to one it computes (a causal band's end).
fn runs_to_argument(tile_loop: TileLoop) -> bool {
    ir::block_arg_owner(ir::operands(tile_loop.op)[1])
        .and_then(ir::block_parent_op)
        .is_some_and(|op| ir::op_name(op) == "tt.func")
}

/// The present path a split of `chunks` chunks in `order` gets, of the
/// one `asked` for: none where the chunks also cut the columns (their
/// flags are not polled), beyond [`MAX_POLLED_CHUNKS`], or where the
/// split's order is not a few runs of rows ([`present_order`]: a ring
/// written out `r -> r + 1` walks its blocks backwards).
fn present_path_kind(asked: PresentPath, order: LoopOrder, cut: bool, chunks: i64) -> PresentPath {
    let in_runs = matches!(
        order,
        LoopOrder::Blocks(BlockOrder::Forward) | LoopOrder::Zigzag
    );
    if cut || chunks > MAX_POLLED_CHUNKS || !in_runs {
        PresentPath::None
    } else {
        asked
    }
}

/// A run of rows a present loop walks, `[from, to)` clipped to the
/// kernel loop's bounds (`None`: the loop's own bound).
type RowRun = (Option<Value>, Option<Value>);

/// How a present path walks a split's iterations in the split's order.
enum PresentOrder {
    /// Blocks that come rank r+1's first: one loop over the kernel loop's
    /// range `[lo, hi)` that reads `[s, hi)` then `[lo, s)` from the
    /// rank's first row `s` ([`rotated_loop`]).
    Rotated(Value),
    /// One loop per run of rows, in turn.
    Runs(Vec<RowRun>),
}

/// The present path of the split of `l` in `order` (chunks of `rows`
/// rows, `per_rank` per rank, `chunks` in all), in the split's order:
/// - blocks that come rank r+1's first: from the rank's first row to the
///   end, then from the start to it, in one loop where the kernel's loop
///   runs to a bound it takes as an argument (no causal band); in two
///   where it runs to a bound it computes (a causal band's end: one loop
///   ran up to 7 points slower there, passes/docs/present-path.md), or
///   where the kernel moved pointers by the loop's step (so that
///   `chunk-carry-pointers` carries them again in each: a rotated loop's
///   rows jump);
/// - zigzag half-blocks (`H` rows each, `W` ranks): the low half-blocks
///   from the rank's, `[r H, W H)` then `[0, r H)`, then the high ones
///   from rank r-1's, `[(2W - r) H, end)` then `[W H, (2W - r) H)`
///   ([`super::rotation::zigzag_rotate`]), in four loops.
fn present_order(
    b: &Builder,
    (tile_loop, order): (TileLoop, LoopOrder),
    rank: Value,
    (rows, per_rank, chunks): (Value, i64, i64),
) -> PresentOrder {
    let ty = ir::type_of(rows);
    let c = |v: i64| b.constant(ty, v);
    match order {
        LoopOrder::Blocks(_) => {
            let own = b.muli(b.muli(rank, c(per_rank)), rows);
            if runs_to_argument(tile_loop) && !moves_pointers(tile_loop.op) {
                PresentOrder::Rotated(own)
            } else {
                PresentOrder::Runs(vec![(Some(own), None), (None, Some(own))])
            }
        }
        LoopOrder::Zigzag => {
            let world = chunks / per_rank.max(1);
            let half = b.muli(c((per_rank / 2).max(1)), rows);
            let own_low = b.muli(rank, half);
            let highs = b.muli(c(world), half);
            let own_high_next = b.muli(b.subi(c(2 * world), rank), half);
            PresentOrder::Runs(vec![
                (Some(own_low), Some(highs)),
                (None, Some(own_low)),
                (Some(own_high_next), None),
                (Some(highs), Some(own_high_next)),
            ])
        }
    }
}

/// Puts the kernel's loop `l` in the `then` branch of a new `scf.if`,
/// marked [`PRESENT_PATH_ATTR`] with `var`, whose `else` branch runs the
/// loop's iterations without waits in `order` (the split's,
/// [`present_order`]), in loops marked [`PRESENT_LOOP_ATTR`], each one's
/// values carried into the next. The condition, "a chunk is missing", is
/// `true` until `chunk-insert-waits` polls the chunks' flags; the `then`
/// branch's loop is then split (the `scf.if` yields its results). (The
/// present loops come after the split in the kernel's code: before it, a
/// causal kernel ran a point slower.)
fn present_path(l: ir::Op, var: &str, order: PresentOrder) {
    let ctx = ir::context_of(l);
    let b = Builder::before(l).with_loc(ir::location_of(l));
    let operands = ir::operands(l);
    let (lower, upper, inits) = (operands[0], operands[1], operands[3..].to_vec());
    let kernel_results = ir::results(l);
    let types: Vec<ir::Type> = kernel_results.iter().map(|v| ir::type_of(*v)).collect();
    let branch = b.if_yield(
        b.constant(ir::i1_type(ctx), 1),
        &types,
        |_| kernel_results.clone(),
        |present| match order {
            PresentOrder::Rotated(from) => {
                let start = present.maxsi(lower, present.minsi(upper, from));
                let copy = rotated_loop(&present, l, var, start);
                // An opaque read of the accumulators in the branch keeps
                // the loop's last `wgmma` wait there: sunk to where the
                // branches join, `ptxas` serialises every `wgmma` of the
                // kernel (C7515; passes/docs/present-path.md).
                ir::results(copy)
                    .into_iter()
                    .map(|v| {
                        if is_accumulator(v) {
                            present.opaque(v)
                        } else {
                            v
                        }
                    })
                    .collect()
            }
            PresentOrder::Runs(runs) => runs.iter().fold(inits.clone(), |carried, (from, to)| {
                let from = from.map_or(lower, |row| present.maxsi(lower, row));
                let to = to.map_or(upper, |row| present.minsi(upper, row));
                let copy = present_copy(&present, l, var, (from, to));
                for (i, v) in carried.iter().enumerate() {
                    ir::set_operand(copy, 3 + i, *v);
                }
                ir::results(copy)
            }),
        },
    );
    ir::set_attr(branch, PRESENT_PATH_ATTR, ir::string_attr(ctx, var));
    for (kernel, chosen) in kernel_results.iter().zip(ir::results(branch)) {
        ir::replace_all_uses(*kernel, chosen);
    }
    let then_yield = ir::regions(branch)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
        .and_then(|block| ir::ops_in(block).last().copied())
        .expect("scf.if's then branch ends in scf.yield");
    for (i, kernel) in kernel_results.into_iter().enumerate() {
        ir::set_operand(then_yield, i, kernel);
    }
    ir::move_before(l, then_yield);
}

/// A copy of the kernel's loop `l` at `at` over `[from, to)`, marked
/// [`PRESENT_LOOP_ATTR`] with `var`, from the kernel's initial values.
fn present_copy(at: &Builder, l: ir::Op, var: &str, (from, to): (Value, Value)) -> ir::Op {
    let copy = ir::clone_op(l);
    at.insert(copy);
    ir::set_operand(copy, 0, from);
    ir::set_operand(copy, 1, to);
    ir::set_attr(
        copy,
        PRESENT_LOOP_ATTR,
        ir::string_attr(ir::context_of(l), var),
    );
    copy
}

/// A copy of the kernel's loop `l` (`[lo, hi)` by `step`) that reads
/// `[start, hi)` then `[lo, start)` (`start` in `[lo, hi]`, `start - lo` a
/// multiple of `step`) in one pipelined loop: over `[lo, hi)`, its
/// variable `v` read as `v + (start - lo)` until the first run's `n`
/// iterations are done (`v < lo + n * step`), as `v - n * step` after.
/// The same iterations in the same order as the two runs' loops, without
/// a second pipeline start.
fn rotated_loop(at: &Builder, l: ir::Op, var: &str, start: Value) -> ir::Op {
    let operands = ir::operands(l);
    let (lower, upper, step) = (operands[0], operands[1], operands[2]);
    let shift = at.subi(start, lower);
    // The first run's rows, rounded up to whole steps (`hi - start` need
    // not be a multiple of the step).
    let first = at.muli(
        at.divsi(
            at.subi(
                at.addi(at.subi(upper, start), step),
                at.constant(ir::type_of(step), 1),
            ),
            step,
        ),
        step,
    );
    let wrap_at = at.addi(lower, first);
    let back = at.subi(at.constant(ir::type_of(first), 0), first);
    let copy = present_copy(at, l, var, (lower, upper));
    let body = ir::blocks(ir::regions(copy)[0])[0];
    let variable = ir::block_args(body)[0];
    let first_op = ir::ops_in(body)[0];
    let inside = Builder::before(first_op).with_loc(ir::location_of(first_op));
    let wrapped = inside.cmpi(Cmp::Sge, variable, wrap_at);
    let read = inside.addi(variable, inside.select(wrapped, back, shift));
    let rotation = [wrapped, read].map(|v| ir::defining_op(v).expect("an op's result"));
    ir::replace_uses_except(variable, read, &rotation);
    copy
}

/// Whether the kernel moved a pointer by the step of its loop `l`
/// ([`MOVED_POINTER_ATTR`]: `chunk-bind-kernel` reads it at the loop's
/// variable until `chunk-carry-pointers` carries it again).
fn moves_pointers(l: ir::Op) -> bool {
    ir::walk(l)
        .into_iter()
        .any(|op| ir::attr(op, MOVED_POINTER_ATTR).is_some())
}

/// Whether `v`, a result of a kernel loop, is an accumulator: a 2-D
/// tensor of `f32` (what a `tt.dot` accumulates into).
fn is_accumulator(v: Value) -> bool {
    let ty = ir::type_of(v);
    ir::tensor_shape(ty).is_some_and(|shape| shape.len() == 2)
        && ir::tensor_element(ty).is_some_and(ir::is_f32_type)
}

/// The most chunks a present path's condition polls (each one's flag).
const MAX_POLLED_CHUNKS: i64 = 16;

/// Triton's attribute that has its loop-unroll pass unroll a loop by its
/// value (`tl.range(..., loop_unroll_factor=n)`). (A split loop of at
/// most `max-unrolled-chunks` chunks gets it: each clipped loop then sits
/// in the kernel's body, and LLVM keeps its iteration as short as the
/// kernel's own, passes/docs/kernel-loops.md.)
const UNROLL_ATTR: &str = "tt.loop_unroll_factor";

/// The order in which a split loop reads a buffer's chunks.
#[derive(Clone, Copy)]
enum LoopOrder {
    /// Block by block, in the order the peers' blocks arrive.
    Blocks(BlockOrder),
    /// Zigzag half-blocks: the low ones from this rank's, then the high
    /// ones from rank r-1's ([`super::rotation::zigzag_rotate`]).
    Zigzag,
}
