//! `chunk-reorder-tiles`: run tiles in the order their chunks arrive.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkReorderTiles` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::{
    plan::{
        BlockOrder, FlagKind, Owners, Produce, ReductionKind, TileMap, block_order, bound_kernel,
        fail, flag_layout, internal, loc, plans, reduction_kind,
    },
    tiles::{
        Access, SOURCE_INDEX_ATTR, TILE_INDEX_ATTR, find_tile_index, find_tile_loops,
        scaled_by_tile,
    },
};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkReorderTilesOptions, PassOptions, RustPass};
use synco_chunk::{Diagnostic, PassFailed};
use synco_ir::{self as ir, Builder, Op, Value};

mod kernel_loop;
mod ring_steps;
mod rotation;

use kernel_loop::split_tile_loop;
use ring_steps::step_tile_loop;
use rotation::{interleave, rotate, rotate_back};

/// The body of `chunk-reorder-tiles`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkReorderTilesOptions;

    fn run(module: OperationRef, options: &ChunkReorderTilesOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkReorderTilesOptions::ARGUMENT;

fn run(module: OperationRef, options: &ChunkReorderTilesOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    for plan in plans(module) {
        let (kernel, abi) = bound_kernel(&plan, module, NAME)?;
        unify_program_ids(kernel);
        let reduced = crate::plan::reduced_buffers(&plan);
        let consumes = plan.consumes();
        let produces: Vec<Produce> = plan
            .produces()
            .into_iter()
            .filter(|p| p.buffer().is_some_and(|b| reduced.contains(&b)))
            .collect();
        if let (Some(_), Some(produce)) = (consumes.first(), produces.first()) {
            return Err(fail(
                *produce,
                "chunk-reorder-tiles: a kernel that both consumes gathered chunks and produces reduced ones \
                 needs two tile orders; this is not supported yet",
            ));
        }
        let tile_maps = consumes
            .into_iter()
            .map(|c| (TileMap::from(c), Access::Load))
            .chain(
                produces
                    .into_iter()
                    .map(|p| (TileMap::from(p), Access::Store)),
            );
        for (consume, access) in tile_maps {
            let name = consume.buffer().unwrap_or_default();
            let Some(buffer) = plan.buffer(&name) else {
                continue;
            };
            let Some(arg) = buffer.arg else {
                return Err(fail(
                    consume,
                    format!("@{name} is not bound to a kernel argument"),
                ));
            };
            let dim = consume.dim();
            let tile = consume.tile().unwrap_or(1);
            if access == Access::Load && buffer.slots.is_some() {
                let loops = find_tile_loops(kernel, arg, tile, consume)?;
                let Some(first) = loops.first() else {
                    return Err(fail(
                        consume,
                        format!(
                            "chunk-reorder-tiles: @{name} is kept in ring slots (slots(2)), which only a consumer whose blocks a kernel loop walks (an attention's loop over the keys and values) reads, one ring step per launch; no loop over @{name} in blocks of {tile} was found"
                        ),
                    ));
                };
                step_tile_loop(kernel, abi, &plan, consume, buffer, *first, loops.len())?;
                continue;
            }
            if access == Access::Load {
                let loops = find_tile_loops(kernel, arg, tile, consume)?;
                for (i, tile_loop) in loops.iter().enumerate() {
                    let remark = (i == 0).then_some(loops.len());
                    split_tile_loop(abi.rank, &plan, consume, &name, *tile_loop, remark, options)?;
                }
                if !loops.is_empty() {
                    continue;
                }
            }
            if access == Access::Load && zigzag(&plan, &name)? {
                return Err(fail(
                    consume,
                    format!(
                        "chunk-reorder-tiles: @{name} is gathered in zigzag blocks, which only a consumer whose blocks a kernel loop walks (an attention's loop over the keys and values) supports; no loop over @{name} in blocks of {tile} was found"
                    ),
                ));
            }
            if let Some(source) = consume.source() {
                order_sources(kernel, abi.rank, &plan, consume, &name, arg, tile, &source)?;
                continue;
            }
            let extent = buffer.shape[dim];
            let block = extent / plan.world_size;
            if extent % tile != 0 || block % tile != 0 {
                let along = if dim == 0 {
                    "rows".to_string()
                } else {
                    format!("elements along dim({dim})")
                };
                return Err(fail(
                    consume,
                    format!(
                        "tiles of {tile} do not divide @{name}'s {extent} {along} into whole per-rank blocks of {block}"
                    ),
                ));
            }
            let index_name = consume.index();
            let t = find_tile_index(kernel, arg, access, tile, index_name.as_deref(), consume)?;
            let order = match access {
                // Consumers start at their own block, then take the
                // peers' in the order they arrive.
                Access::Load => match block_order(&plan, &name, dim, block) {
                    BlockOrder::Forward => Order::Rotate { first_block: 0 },
                    BlockOrder::Backward => Order::RotateBack,
                },
                // A one-shot all-reduce: every rank waits for the same
                // tiles of every peer, so all ranks keep the kernel's order.
                Access::Store if reduction_kind(&plan, &name) == Some(ReductionKind::AllReduce) => {
                    Order::Identity
                }
                // Other producers of partials: own chunks after the peers'.
                Access::Store => {
                    let chunks_per_rank = flag_layout(&plan)?
                        .iter()
                        .find(|r| r.kind == FlagKind::Reduction && r.buffer == name)
                        .map_or(1, |r| r.chunks_per_rank);
                    let order = if chunks_per_rank > 1 && (block / tile) % chunks_per_rank == 0 {
                        Order::Interleave {
                            world_size: plan.world_size,
                            chunks_per_rank,
                            tiles_per_chunk: block / tile / chunks_per_rank,
                        }
                    } else {
                        Order::Rotate { first_block: 1 }
                    };
                    check_swizzle(consume, t, order, block / tile)?;
                    order
                }
            };
            let (marked, how) = remap(kernel, t, abi.rank, order, block / tile, extent / tile)?;
            let ctx = ir::context_of(consume.0);
            ir::set_attr(marked, TILE_INDEX_ATTR, ir::string_attr(ctx, &name));
            Diagnostic::remark(loc(consume), format!("tiles of @{name}: {how}")).emit();
        }
    }
    Ok(())
}

/// A consumer that reads every rank's block in a loop over sources
/// (`source("src")`): the tiles keep the kernel's order (each reads every
/// block; the chunks of a block arrive in the order of `dim`), and the loop
/// is rotated so that iteration `i` reads rank `(i + rank) mod W`'s block:
/// the rank's own first, then its peers' in the order they arrive.
#[allow(clippy::too_many_arguments)]
fn order_sources(
    kernel: Op,
    rank: Value,
    plan: &crate::plan::Plan,
    consume: TileMap,
    name: &str,
    arg: usize,
    tile: i64,
    source: &str,
) -> Result<(), PassFailed> {
    let ctx = ir::context_of(consume.0);
    let index_name = consume.index();
    let t = find_tile_index(
        kernel,
        arg,
        Access::Load,
        tile,
        index_name.as_deref(),
        consume,
    )?;
    // The waits index chunks by `t * tile`: a tile size the kernel does not
    // use would make tiles wait for the wrong chunks.
    let loads = crate::tiles::loads_of(kernel, arg);
    if !scaled_by_tile(&loads, tile)
        .into_iter()
        .any(|x| ir::same_value(x, t))
    {
        return Err(fail(
            consume,
            format!(
                "the kernel's loads of @{name} never multiply its tile index{} by {tile}: tile({tile}) must be the kernel's block size along this dimension",
                index_name
                    .as_deref()
                    .map(|n| format!(" '{n}'"))
                    .unwrap_or_default()
            ),
        ));
    }
    let (marked, _) = remap(kernel, t, rank, Order::Identity, 1, 1)?;
    ir::set_attr(marked, TILE_INDEX_ATTR, ir::string_attr(ctx, name));
    let rotated = ir::walk(kernel)
        .into_iter()
        .any(|op| ir::str_attr(op, SOURCE_INDEX_ATTR).as_deref() == Some(source));
    if !rotated {
        let iv = source_loop(kernel, consume, source, plan.world_size)?;
        let (marked, _) = remap(
            kernel,
            iv,
            rank,
            Order::Rotate { first_block: 0 },
            1,
            plan.world_size,
        )?;
        ir::set_attr(marked, SOURCE_INDEX_ATTR, ir::string_attr(ctx, source));
    }
    Diagnostic::remark(
        loc(consume),
        format!(
            "tiles of @{name} keep the kernel's order; the loop over '{source}' is rotated to read this rank's block first, then rank r+1's, ..."
        ),
    )
    .emit();
    Ok(())
}

/// Whether the chunks that transfers bring into `name` are held in zigzag
/// half-blocks (not before the collectives are expanded).
fn zigzag(plan: &crate::plan::Plan, name: &str) -> Result<bool, PassFailed> {
    if plan.transfers_into(name).is_empty() {
        return Ok(false);
    }
    Ok(flag_layout(plan)?
        .iter()
        .any(|r| r.kind == FlagKind::Arrival && r.buffer == name && r.owners == Owners::Zigzag))
}

/// The induction variable of the kernel's `scf.for` named `source`, which
/// must run from 0 to the world size by 1 (one iteration per rank).
fn source_loop(
    kernel: Op,
    consume: TileMap,
    source: &str,
    world_size: i64,
) -> Result<Value, PassFailed> {
    let kernel_name = ir::str_attr(kernel, "sym_name").unwrap_or_default();
    let found = crate::tiles::loop_variable_named(kernel, source).and_then(|iv| {
        let l = ir::block_arg_owner(iv).and_then(ir::block_parent_op)?;
        Some((l, iv))
    });
    let Some((l, iv)) = found else {
        return Err(fail(
            consume,
            format!("kernel @{kernel_name} has no loop over a variable named '{source}'"),
        ));
    };
    let bounds: Vec<Option<i64>> = ir::operands(l)
        .into_iter()
        .take(3)
        .map(ir::constant_int)
        .collect();
    if bounds != [Some(0), Some(world_size), Some(1)] {
        let show = |b: &Option<i64>| b.map_or("a runtime value".to_string(), |v| v.to_string());
        return Err(fail(
            consume,
            format!(
                "the loop over '{source}' must run from 0 to the world size ({world_size}) by 1, one iteration per rank \
                 (found {} to {} by {}; make its bound a tl.constexpr)",
                show(&bounds[0]),
                show(&bounds[1]),
                show(&bounds[2])
            ),
        ));
    }
    Ok(iv)
}

/// A GROUP_M swizzle runs the tiles of a group of row tiles column by
/// column: the reordered row index keeps its order only between whole
/// groups. A group that straddles two units of the order (chunks, or a
/// rank's block) would run a rank's own tiles, which wait for its peers'
/// tiles, before peers' tiles that the peers' own tiles wait for; in a
/// persistent kernel every program can end up waiting (a deadlock), in a
/// grid the waiting tiles hold SMs. Refused.
fn check_swizzle(
    produce: TileMap,
    t: Value,
    order: Order,
    tiles_per_rank: i64,
) -> Result<(), PassFailed> {
    let Some(group) = crate::tiles::swizzle_group(t).filter(|g| *g > 1) else {
        return Ok(());
    };
    let (unit, what) = match order {
        Order::Interleave {
            tiles_per_chunk, ..
        } => (tiles_per_chunk, "chunks"),
        _ => (tiles_per_rank, "per-rank blocks"),
    };
    if unit % group == 0 {
        return Ok(());
    }
    Err(fail(
        produce,
        format!(
            "chunk-reorder-tiles: {what} of {unit} row tiles split the kernel's swizzle groups of \
             {group} row tiles (GROUP_M): its own tiles would run before peers' tiles they wait for, \
             which can deadlock; use chunks of a multiple of {group} row tiles, or a GROUP_M that \
             divides {unit}"
        ),
    ))
}

fn program_id(value: Value) -> Option<(Op, i64)> {
    let op = ir::defining_op(value)?;
    (ir::op_name(op) == "tt.get_program_id").then(|| (op, ir::int_attr(op, "axis").unwrap_or(-1)))
}

/// The order in which a rank runs the row tiles.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// Blocks in rank order from block `rank + first_block`.
    Rotate { first_block: i64 },
    /// This rank's block first, then rank `r - 1`'s, `r - 2`'s, ... (the
    /// order a ring written out as `r -> r + 1` delivers its blocks in).
    RotateBack,
    /// The kernel's own order (only marked).
    Identity,
    /// Peers' chunks and own chunks interleaved (see the module doc).
    Interleave {
        world_size: i64,
        chunks_per_rank: i64,
        tiles_per_chunk: i64,
    },
}

impl Order {
    /// What the order does to the row tile index, after "the row tile
    /// index" (`rotated`: the words for a 1D order, else a 2D grid's).
    fn describe(self, rotated: bool) -> String {
        let start = if rotated {
            "is rotated to start"
        } else {
            "starts"
        };
        match self {
            Order::Rotate { first_block: 0 } => format!("{start} at this rank's block"),
            Order::Rotate { .. } => {
                format!("{start} at the next rank's block (this rank's block last)")
            }
            Order::RotateBack => format!(
                "{start} at this rank's block, then walks back (rank r-1's, r-2's, ...: the arrival order of a ring r -> r+1)"
            ),
            Order::Identity => "keeps the kernel's order (the same on every rank)".into(),
            Order::Interleave {
                chunks_per_rank, ..
            } => format!(
                "interleaves peers' and own chunks ({chunks_per_rank} per rank; own chunk c after the peers' chunk c + 1)"
            ),
        }
    }

    /// Builds the new row tile index from `t`; returns its op.
    fn build(self, b: &Builder, t: Value, rank: Value, per_rank: i64, all: i64) -> Op {
        match self {
            Order::Rotate { first_block } => rotate(b, t, rank, first_block, per_rank, all),
            Order::RotateBack => rotate_back(b, t, rank, per_rank, all),
            Order::Identity => {
                // A no-op the later passes can find by its mark
                // (canonicalize folds it away).
                let same = b.addi(t, b.const_i32(0));
                ir::defining_op(same).expect("an op result")
            }
            Order::Interleave {
                world_size,
                chunks_per_rank,
                tiles_per_chunk,
            } => interleave(b, t, rank, world_size, chunks_per_rank, tiles_per_chunk),
        }
    }
}

/// Remaps tile index `t` of `kernel`; returns the op computing the new index.
fn remap(
    kernel: Op,
    t: Value,
    rank: Value,
    order: Order,
    tiles_per_rank: i64,
    tiles: i64,
) -> Result<(Op, String), PassFailed> {
    // A 2D grid whose row index is the fast axis: make it the slow one.
    if let Some((pid0, 0)) = program_id(t) {
        let pid1 = ir::find_all(kernel, "tt.get_program_id")
            .into_iter()
            .find(|op| ir::int_attr(*op, "axis") == Some(1));
        if let Some(pid1) = pid1 {
            // The later of the two moves right after the earlier: the
            // remapped ids are then defined before any use of either.
            let (earlier, anchor) = if ir::is_before_in_block(pid0, pid1) {
                (pid0, pid1)
            } else {
                (pid1, pid0)
            };
            if let Some(next) = ir::next_op(earlier).filter(|next| next.ptr != anchor.ptr) {
                ir::move_before(anchor, next);
            }
            let p0 = ir::result(pid0, 0);
            let p1 = ir::result(pid1, 0);
            let mut fast = p1;
            let (marked, new_ops) = insert_after(anchor, ir::value_loc(t), |b| {
                let i32t = ir::i32_type(b.ctx);
                let axis = |a: i64| ir::int_attr_of(i32t, a);
                let n0 = ir::result(
                    b.op("tt.get_num_programs", &[], &[i32t], &[("axis", axis(0))]),
                    0,
                );
                let n1 = ir::result(
                    b.op("tt.get_num_programs", &[], &[i32t], &[("axis", axis(1))]),
                    0,
                );
                let linear = b.addi(p0, b.muli(p1, n0));
                let slow = b.divsi(linear, n1);
                fast = b.remsi(linear, n1);
                order.build(b, slow, rank, tiles_per_rank, tiles)
            });
            ir::replace_uses_except(p0, ir::result(marked, 0), &new_ops);
            ir::replace_uses_except(p1, fast, &new_ops);
            return Ok((
                marked,
                format!(
                    "the row tile index (program_id 0) is now the slow axis of the grid and {} ({tiles_per_rank} row tiles per rank)",
                    order.describe(false)
                ),
            ));
        }
    }
    // Rotate right where `t` is defined: after its op, or, for a loop's
    // induction variable, at the start of the loop body.
    let (marked, new_ops) = match ir::defining_op(t) {
        Some(def) => insert_after(def, ir::value_loc(t), |b| {
            order.build(b, t, rank, tiles_per_rank, tiles)
        }),
        None => {
            let block = ir::block_arg_owner(t)
                .ok_or_else(|| internal(kernel, "a value without a definition"))?;
            let first = ir::ops_in(block)
                .first()
                .copied()
                .ok_or_else(|| internal(kernel, "an empty loop body"))?;
            insert_before(first, ir::value_loc(t), |b| {
                order.build(b, t, rank, tiles_per_rank, tiles)
            })
        }
    };
    ir::replace_uses_except(t, ir::result(marked, 0), &new_ops);
    Ok((
        marked,
        format!(
            "the row tile index {} ({tiles_per_rank} row tiles per rank, {tiles} in all)",
            order.describe(true)
        ),
    ))
}

/// One `tt.get_program_id` per axis, at the start of the kernel: a kernel
/// may read its program id in several places (a helper inlined after the
/// caller read it too), and a remapped tile index must replace every one
/// of them, from a point that dominates them all.
fn unify_program_ids(kernel: Op) {
    let Some(first) = ir::regions(kernel)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
        .and_then(|b| ir::ops_in(b).first().copied())
    else {
        return;
    };
    for axis in 0..3 {
        let ids: Vec<Op> = ir::find_all(kernel, "tt.get_program_id")
            .into_iter()
            .filter(|op| ir::int_attr(*op, "axis") == Some(axis))
            .collect();
        // (A single one already dominates its uses: left in place.)
        let Some((&kept, others)) = ids.split_first().filter(|(_, others)| !others.is_empty())
        else {
            continue;
        };
        if kept.ptr != first.ptr {
            ir::move_before(kept, first);
        }
        for other in others {
            ir::replace_all_uses(ir::result(*other, 0), ir::result(kept, 0));
            ir::erase(*other);
        }
    }
}

/// Builds ops right after `anchor` (every op has a successor: its block's
/// terminator); returns what `build` returns and the ops it created. The
/// ops take location `loc`: that of the index they remap, so that they
/// carry its variable name (and not the next op's) for later lookups.
fn insert_after(anchor: Op, loc: ir::Loc, build: impl FnOnce(&Builder) -> Op) -> (Op, Vec<Op>) {
    let next = ir::next_op(anchor).expect("a non-terminator op has a next op");
    insert_before(next, loc, build)
}

/// Builds ops at `loc` right before `next`; returns what `build` returns
/// and the ops it created.
fn insert_before(next: Op, loc: ir::Loc, build: impl FnOnce(&Builder) -> Op) -> (Op, Vec<Op>) {
    let block = ir::block_of(next).expect("an op in a block");
    let existing = ir::ops_in(block);
    let result = build(&Builder::before(next).with_loc(loc));
    let created = ir::ops_in(block)
        .into_iter()
        .filter(|op| !existing.iter().any(|e| ir::same_op(*e, *op)))
        .collect();
    (result, created)
}
