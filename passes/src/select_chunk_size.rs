//! `chunk-select-chunk-size`: give every `chunks(auto)` collective a count.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkSelectChunkSize` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::checked;
use crate::plan::{AsOp, BufferDecl, Collective, Consume, Plan, fail, loc, plans};
use crate::tiles::{self, Access, find_tile_index};
use melior::ir::operation::OperationRef;
use synco_chunk::attrs::{BlockLayout, CollectiveKind};
use synco_chunk::passes::{ChunkSelectChunkSizeOptions, PassOptions, RustPass};
use synco_chunk::{Diagnostic, PassFailed};
use synco_cost_model::{
    AllGatherGemm, GatheredOutput, Machine, choose, choose_gathered_output, chunks_per_wave,
};
use synco_ir::{self as ir, Op};

/// The body of `chunk-select-chunk-size`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkSelectChunkSizeOptions;

    fn run(module: OperationRef, options: &ChunkSelectChunkSizeOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkSelectChunkSizeOptions::ARGUMENT;

const CANDIDATES: [i64; 5] = [1, 2, 4, 8, 16];

/// Fewest row tiles in an automatically sized reduce-scatter chunk: one
/// swizzle group of Triton's matmul (GROUP_M = 8).
pub const MIN_REDUCE_CHUNK_TILES: i64 = 8;

fn run(module: OperationRef, options: &ChunkSelectChunkSizeOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    // 0: no count given, ask the cost model.
    let forced = Some(options.chunks_per_rank).filter(|&n| n != 0);
    let machine = crate::calibration::machine(module, NAME, &options.calibration)?;
    for plan in plans(module) {
        // New chunk sizes: a flag layout laid out before does not hold.
        crate::plan::records::forget_flag_layout(plan.op);
        for op in plan.collectives() {
            if op.chunks().is_some() {
                continue;
            }
            match op.kind() {
                CollectiveKind::AllGather if plan.producer_of(&landing_buffer(op)).is_some() => {
                    select_gathered_output(&plan, module, op, forced, &machine)?
                }
                CollectiveKind::AllGather | CollectiveKind::AllToAll => {
                    if let Some(walked) = walked_by_loop(&plan, module) {
                        select_for_loop(&plan, op, forced, &walked)?
                    } else if op.blocks() == BlockLayout::Zigzag {
                        return Err(fail(
                            op,
                            "chunk-select-chunk-size: chunks(auto) for a blocks(zigzag) all_gather needs a consumer whose kernel loop walks it (loop(...)); the GEMM cost model does not apply",
                        ));
                    } else if read_per_source(&plan, op) {
                        select_per_source(&plan, module, op, forced, &machine)?
                    } else {
                        select(&plan, op, forced, &machine)?
                    }
                }
                CollectiveKind::ReduceScatter => {
                    select_reduce_scatter(&plan, module, op, forced, false)?
                }
                // A two-shot all-reduce starts as a reduce-scatter; a
                // one-shot one waits chunk by chunk on every rank.
                CollectiveKind::AllReduce => {
                    let one_shot = op.algorithm() == Some(synco_chunk::attrs::Algorithm::OneShot);
                    select_reduce_scatter(&plan, module, op, forced, one_shot)?
                }
            }
        }
    }
    Ok(())
}

/// How remarks name the kernel loop that walks a consumer of `plan`: the
/// one a consume names (`loop("start_n")`: an attention kernel's loop
/// over the keys and values), or, in a kernel of the module, a loop that
/// must walk a consumed buffer because no program tile indexes it (a
/// consume with a tile and no `index`, `source` or `loop`, whose loads
/// multiply no program-id value by the tile: `chunk-bind-kernel` finds the
/// loop). Buffers read in one loop share its split, so every gather of
/// the plan goes by it.
fn walked_by_loop(plan: &Plan, module: Op) -> Option<String> {
    if let Some(name) = plan.consumes().into_iter().find_map(|c| c.loop_var()) {
        return Some(format!("the kernel's loop over '{name}'"));
    }
    let kernel = plan.kernel_op_in(module)?;
    plan.consumes().into_iter().find_map(|c| {
        let (name, tile) = (c.buffer()?, c.tile()?);
        let arg = plan.buffer(&name)?.arg?;
        let walked = c.index().is_none()
            && c.source().is_none()
            && !crate::tiles::loads_of(kernel, arg).is_empty()
            && !crate::tiles::tiled_by_program(kernel, arg, tile);
        walked.then(|| "a kernel loop (no program id indexes the consumers' tiles)".to_string())
    })
}

/// `chunks(auto)` for a gather a kernel loop walks: one chunk per rank
/// (or the forced count). The cost model predicts GEMM tiles, not a loop
/// split by chunk: there each chunk is its own software-pipelined loop,
/// whose prologue and drain cost more the more chunks there are, and a
/// peer's whole block arrives while the loop reads the rank's own
/// (measured: `benches/attention/README.md`).
fn select_for_loop(
    plan: &Plan,
    op: Collective,
    forced: Option<i64>,
    walker: &str,
) -> Result<(), PassFailed> {
    let (buffer, block, tile) = collective_blocks(plan, op, op.dst(), TilesOf::Consumers)?;
    // Zigzag: each rank's two half-blocks are cut alike.
    let halves = if op.blocks() == BlockLayout::Zigzag {
        2
    } else {
        1
    };
    let valid = |n: i64| n % halves == 0 && block % n == 0 && (block / n) % tile == 0;
    let whole_tiles = || {
        let zigzag = if halves == 2 {
            " (an even count: zigzag half-blocks)"
        } else {
            ""
        };
        format!("a block of {block} rows into chunks of whole {tile}-row tiles{zigzag}")
    };
    let chosen = match checked_forced(op, forced, valid, whole_tiles)? {
        Some(n) => n,
        None => {
            let per = if halves == 2 {
                " (one per zigzag half-block)"
            } else {
                ""
            };
            Diagnostic::remark(
                loc(op),
                format!(
                    "chunks(auto) -> chunks({halves}) for @{}{per}: {walker} walks it, and each chunk is a loop of its own (one chunk per rank cost the least on an H200, benches/attention/README.md)",
                    buffer.name
                ),
            )
            .emit();
            halves
        }
    };
    op.set_chunks(chosen);
    Ok(())
}

/// The buffer a gather or all-to-all lands in (`buffer`, or `dst`).
fn landing_buffer(op: Collective) -> String {
    op.dst().unwrap_or_default()
}

/// The per-source consume of `buffer` (`chunk.consume ... source(...)`).
fn per_source_consume(plan: &Plan, buffer: &str) -> Option<Consume> {
    plan.consumers_of(buffer)
        .into_iter()
        .find(|c| c.reads_per_source())
}

/// Whether `op`'s chunks are those of a per-source operand: its buffer is
/// read per source, or it is split across another dimension than the
/// ranks' blocks (which only per-source consumers can wait for).
fn read_per_source(plan: &Plan, op: Collective) -> bool {
    let split = op.chunk_dim() != op.dim();
    split || per_source_consume(plan, &landing_buffer(op)).is_some()
}

/// Tiles a per-source consume walks in one source's block: the block's
/// extent along the consumed dimension (a rank's block when that is the
/// dimension the ranks' blocks stack along) over the tile.
fn tiles_per_source(plan: &Plan, consume: Consume) -> Option<i64> {
    let name = consume.buffer()?;
    let buffer = plan.buffer(&name)?;
    let dim = consume.dim() as i64;
    let stacked = plan
        .collectives()
        .into_iter()
        .filter(|op| {
            matches!(
                op.kind(),
                CollectiveKind::AllGather | CollectiveKind::AllToAll
            )
        })
        .find(|op| landing_buffer(*op) == name)
        .map_or(dim, |op| op.dim() as i64);
    let extent = buffer.shape.get(dim as usize)? / if stacked == dim { plan.world_size } else { 1 };
    Some(extent / consume.tile().unwrap_or(1).max(1))
}

/// Whether tile index `t` is the quotient of Triton's grouped order
/// (`pid_n = (pid % num_pid_in_group) // group_size_m`): within a swizzle
/// group, tiles walk it last.
fn walked_last(t: ir::Value) -> bool {
    ir::defining_op(t).is_some_and(|op| {
        ir::op_name(op) == "arith.divsi"
            && ir::operands(op)
                .get(1)
                .and_then(|d| ir::defining_op(*d))
                .is_some_and(|d| ir::op_name(d) == "arith.minsi")
    })
}

/// `chunks(auto)` (or `chunks-per-rank`) for an operand read per source
/// (see the module doc).
fn select_per_source(
    plan: &Plan,
    module: Op,
    op: Collective,
    forced: Option<i64>,
    machine: &Machine,
) -> Result<(), PassFailed> {
    let name = landing_buffer(op);
    let Some(buffer) = plan.buffer(&name).cloned() else {
        return Err(fail(
            op,
            "chunk-select-chunk-size: the collective's buffer is not in the plan",
        ));
    };
    let refuse = |why: String| {
        fail(
            op,
            format!(
                "chunk-select-chunk-size: no chunk count for @{name} ({why}); \
                 give chunks(n) (measured: 4 to 8 column chunks best for a gathered B, passes/docs/gathered-chunks-per-wave.md) or chunks-per-rank=N"
            ),
        )
    };
    let Some(consume) = per_source_consume(plan, &name) else {
        return Err(refuse(
            "it is split across another dimension than the ranks' blocks, but no chunk.consume reads it per source".into(),
        ));
    };
    let dim = op.dim() as i64;
    let chunk_dim = op.chunk_dim() as i64;
    let tile = consume.tile().unwrap_or(1).max(1);
    if consume.dim() as i64 != chunk_dim {
        return Err(refuse(format!(
            "its chunks cut dimension {chunk_dim}, its tiles walk another"
        )));
    }
    let extent =
        buffer.shape[chunk_dim as usize] / if chunk_dim == dim { plan.world_size } else { 1 };
    let valid = |n: i64| n >= 1 && extent % n == 0 && (extent / n) % tile == 0;
    let chosen = match checked_forced(op, forced, valid, || {
        format!(
            "@{name}'s {extent} elements along dimension {chunk_dim} into chunks of whole {tile}-wide tiles"
        )
    })? {
        Some(n) => n,
        None => {
            let (_, _, t) = kernel_tile_index(
                plan,
                module,
                &buffer,
                (consume.index(), consume),
                Access::Load,
                tile,
                refuse,
            )?;
            let own = extent / tile;
            let other_tiles: Vec<i64> = plan
                .consumes()
                .into_iter()
                .filter(|c| c.reads_per_source() && !ir::same_op(c.0, consume.0))
                .filter_map(|c| tiles_per_source(plan, c))
                .collect();
            let others = checked::product(
                &other_tiles,
                op,
                &format!("{NAME}: the tiles per source of the operands read beside @{name}"),
            )?;
            let group = tiles::swizzle_group(t);
            let candidates: Vec<u64> = CANDIDATES
                .into_iter()
                .filter(|&n| valid(n))
                .map(|n| n as u64)
                .collect();
            match group {
                Some(g) if walked_last(t) && g >= others => {
                    let total = checked::mul(
                        own,
                        others,
                        op,
                        &format!("{NAME}: the tiles of @{name} and the other operands"),
                    )?
                    .unsigned_abs();
                    let Some(best) = chunks_per_wave(machine, total, &candidates) else {
                        return Err(refuse(format!(
                            "no count in {CANDIDATES:?} splits its {extent} elements into whole {tile}-wide tiles"
                        )));
                    };
                    Diagnostic::remark(
                        loc(op),
                        format!(
                            "chunks(auto) -> chunks({best}) for @{name}: its tiles are walked last (a swizzle group of {g} holds the other operands' {others} tiles), \
                             {total} tiles in waves of {} programs: one chunk per wave",
                            machine.sms
                        ),
                    )
                    .emit();
                    best as i64
                }
                Some(g) if !walked_last(t) && g >= own && valid(1) => {
                    Diagnostic::remark(
                        loc(op),
                        format!(
                            "chunks(auto) -> chunks(1) for @{name}: every wave of tiles reads all of it (a swizzle group of {g} holds its {own} tiles)"
                        ),
                    )
                    .emit();
                    1
                }
                _ => {
                    return Err(refuse(format!(
                        "the kernel's tile order is not one operand's tiles after another: {} holds neither @{name}'s {own} tiles per source nor the other operands' {others}",
                        group.map_or("no swizzle group".to_string(), |g| format!(
                            "its swizzle group of {g}"
                        ))
                    )));
                }
            }
        }
    };
    op.set_chunks(chosen);
    Ok(())
}

/// The count `chunks-per-rank=N` forces on `op`, if given: refused, at
/// `op`, where it is below 1 or `valid` rejects it (it does not split
/// `what()`, e.g. "a block of 512 rows into chunks of whole 128-row
/// tiles").
fn checked_forced(
    op: Collective,
    forced: Option<i64>,
    valid: impl Fn(i64) -> bool,
    what: impl FnOnce() -> String,
) -> Result<Option<i64>, PassFailed> {
    match forced {
        Some(n) if n < 1 || !valid(n) => Err(fail(
            op,
            format!(
                "chunk-select-chunk-size: chunks-per-rank={n} does not split {}",
                what()
            ),
        )),
        other => Ok(other),
    }
}

/// The plan's kernel, `buffer`'s argument and the tile index that
/// `tile_op` (its consume or produce) names or implies: what an `auto`
/// choice that follows the kernel's tile order reads. Without a kernel in
/// the module or an argument for the buffer, `refuse` says why.
fn kernel_tile_index(
    plan: &Plan,
    module: Op,
    buffer: &BufferDecl,
    (index, tile_op): (Option<String>, impl AsOp),
    access: Access,
    tile: i64,
    refuse: impl Fn(String) -> PassFailed,
) -> Result<(Op, usize, ir::Value), PassFailed> {
    let Some(kernel) = plan.find_kernel_in(module) else {
        return Err(refuse(
            "the module has no kernel whose tile order to follow".into(),
        ));
    };
    let Some(arg) = buffer.arg else {
        return Err(refuse("it is not bound to a kernel argument".into()));
    };
    let t = find_tile_index(kernel, arg, access, tile, index.as_deref(), tile_op)?;
    Ok((kernel, arg, t))
}

/// An all-gather of the kernel's output (see the module docs): chunks along
/// the dimension the tiles are produced along, as many as
/// `synco_cost_model::choose_gathered_output` predicts fastest when the
/// tiles finish the chunks one after another, else one.
fn select_gathered_output(
    plan: &Plan,
    module: Op,
    op: Collective,
    forced: Option<i64>,
    machine: &Machine,
) -> Result<(), PassFailed> {
    let name = landing_buffer(op);
    let (Some(buffer), Some(produce)) = (plan.buffer(&name).cloned(), plan.producer_of(&name))
    else {
        return Err(fail(
            op,
            "chunk-select-chunk-size: the gathered buffer is not in the plan",
        ));
    };
    let refuse = |why: String| {
        fail(
            op,
            format!(
                "chunk-select-chunk-size: no chunk count for @{name} ({why}); give chunks(n) or chunks-per-rank=N"
            ),
        )
    };
    let dim = op.dim() as i64;
    let chunk_dim = op.chunk_dim() as i64;
    let tile = produce.tile().unwrap_or(1).max(1);
    let w = plan.world_size;
    let Some(&along) = buffer.shape.get(chunk_dim as usize) else {
        return Err(refuse(format!("it has no dimension {chunk_dim}")));
    };
    let extent = along / if chunk_dim == dim { w } else { 1 };
    let follows_tiles = produce.dim() as i64 == chunk_dim;
    // Chunks across the tiles' dimension: only the whole block.
    let valid = |n: i64| {
        n >= 1
            && extent % n == 0
            && if follows_tiles {
                (extent / n) % tile == 0
            } else {
                n == 1
            }
    };
    let remark = |n: i64, why: String| {
        Diagnostic::remark(
            loc(op),
            format!("chunks(auto) -> chunks({n}) for @{name}: {why}"),
        )
        .emit();
    };
    let chosen = match checked_forced(op, forced, valid, || {
        format!(
            "@{name}'s {extent} elements along dimension {chunk_dim} into chunks of whole {tile}-wide tiles along the dimension they are produced along"
        )
    })? {
        Some(n) => n,
        None if !follows_tiles => {
            remark(
                1,
                format!(
                    "its chunks would cut dimension {chunk_dim}, its tiles are produced along another: one chunk once every tile is done"
                ),
            );
            1
        }
        None => {
            let (kernel, arg, t) = kernel_tile_index(
                plan,
                module,
                &buffer,
                (produce.index(), produce),
                Access::Store,
                tile,
                refuse,
            )?;
            // Rows of the rank's block and of one tile (from the kernel's
            // store of the output).
            let block = buffer.shape.first().copied().unwrap_or(0) / w;
            let tile_rows = tiles::stores_of(kernel, arg)
                .first()
                .and_then(|s| ir::operands(*s).get(1).copied())
                .and_then(|v| ir::tensor_shape(ir::type_of(v)))
                .and_then(|shape| shape.first().copied())
                .unwrap_or(1)
                .max(1);
            let row_tiles = block / tile_rows;
            // Column chunks finish one after another only if the tiles go
            // column block by column block: every row tile in one swizzle
            // group.
            let in_order = chunk_dim == 0
                || (walked_last(t) && tiles::swizzle_group(t).is_some_and(|g| g >= row_tiles));
            if !in_order {
                remark(1, "the kernel's tiles do not finish its chunks one after another (its swizzle group does not hold every row tile): one chunk once every tile is done".into());
                1
            } else {
                let n = buffer.shape.last().copied().unwrap_or(0);
                // The kernel's K: a consumed operand [K, N] (B, every
                // source's rows stacked).
                let k = plan
                    .consumes()
                    .into_iter()
                    .filter_map(|c| c.buffer())
                    .filter_map(|b| plan.buffer(&b))
                    .find(|b| b.shape.len() == 2 && b.shape[1] == n)
                    .map(|b| b.shape[0]);
                let Some(k) = k else {
                    return Err(refuse(format!(
                        "no consumed [K, {n}] operand tells the kernel's work"
                    )));
                };
                // (`n` is the last dimension: the first one too in a 1D
                // buffer, so the product is not bounded by its bytes.)
                let block_bytes = checked::product(
                    &[block, n, buffer.element_bytes().unwrap_or(2)],
                    op,
                    &format!("{NAME}: the bytes of a rank's block of @{name}"),
                )?;
                let output = GatheredOutput {
                    peers: (w - 1) as u64,
                    block_bytes: block_bytes.unsigned_abs(),
                    flops: 2.0 * block as f64 * n as f64 * k as f64,
                };
                let candidates: Vec<u64> = CANDIDATES
                    .into_iter()
                    .filter(|&c| valid(c))
                    .map(|c| c as u64)
                    .collect();
                let Some((best, predictions)) =
                    choose_gathered_output(machine, &output, &candidates)
                else {
                    return Err(refuse(format!(
                        "no count in {CANDIDATES:?} splits its {extent} elements into whole {tile}-wide tiles"
                    )));
                };
                let listed: Vec<String> = predictions
                    .iter()
                    .map(|(c, us)| format!("{c}: {us:.1} us"))
                    .collect();
                remark(
                    best as i64,
                    format!(
                        "its tiles finish the chunks one after another and the copy engine sends each to {} peer(s) (predicted {})",
                        w - 1,
                        listed.join(", ")
                    ),
                );
                best as i64
            }
        }
    };
    op.set_chunks(chosen);
    Ok(())
}

/// The swizzle group height (row tiles) of the plan's kernel, if the
/// module has it (plans are also checked without their kernel).
fn swizzle_group(plan: &Plan, module: Op) -> Option<i64> {
    crate::tiles::kernel_swizzle_group(plan.find_kernel_in(module)?)
}

/// Whose tiles of a buffer [`collective_blocks`] reads.
enum TilesOf {
    /// Its `chunk.produce` (one at most).
    Producer,
    /// Its `chunk.consume`s.
    Consumers,
}

/// A collective's buffer (attribute `key`), the rows of a rank's block
/// along its `dim`, and the largest tile of its producer's or consumers'
/// tiles.
fn collective_blocks(
    plan: &Plan,
    op: Collective,
    buffer: Option<String>,
    tiles_of: TilesOf,
) -> Result<(BufferDecl, i64, i64), PassFailed> {
    let Some(buffer) = buffer.and_then(|n| plan.buffer(&n).cloned()) else {
        return Err(fail(
            op,
            "chunk-select-chunk-size: the collective's buffer is not in the plan",
        ));
    };
    let dim = op.dim();
    let block = buffer.shape[dim] / plan.world_size;
    let tiles: Vec<i64> = match tiles_of {
        TilesOf::Producer => plan
            .producer_of(&buffer.name)
            .and_then(|p| p.tile())
            .into_iter()
            .collect(),
        TilesOf::Consumers => plan
            .consumers_of(&buffer.name)
            .into_iter()
            .filter_map(|c| c.tile())
            .collect(),
    };
    let tile = tiles.into_iter().max().unwrap_or(1);
    Ok((buffer, block, tile))
}

/// The finest count that splits a rank's block of the partial into chunks
/// of whole produced tiles (see the module doc).
///
/// `one_shot` (a one-shot all-reduce): the finest count, so that the tiles
/// of a chunk, which wait for the peers' same chunk together, are as few as
/// possible.
fn select_reduce_scatter(
    plan: &Plan,
    module: Op,
    op: Collective,
    forced: Option<i64>,
    one_shot: bool,
) -> Result<(), PassFailed> {
    let (partial, block, tile) = collective_blocks(plan, op, op.src(), TilesOf::Producer)?;
    let group = if one_shot {
        1
    } else {
        swizzle_group(plan, module).unwrap_or(1)
    };
    let valid = |n: i64| n >= 1 && block % n == 0 && (block / n) % tile == 0;
    let whole_tiles = || format!("a block of {block} rows into chunks of whole {tile}-row tiles");
    let chosen = match checked_forced(op, forced, valid, whole_tiles)? {
        Some(n) => n,
        None => {
            let min_tiles = if one_shot { 1 } else { MIN_REDUCE_CHUNK_TILES };
            // `block / n >= min_tiles * tile`, divided by the tile so that
            // no product overflows.
            let whole_groups =
                |n: i64| block / n / tile >= min_tiles && (block / n / tile) % group == 0;
            let Some(best) = CANDIDATES
                .into_iter()
                .rev()
                .find(|&n| valid(n) && whole_groups(n))
                .or_else(|| valid(1).then_some(1))
            else {
                return Err(fail(
                    op,
                    format!(
                        "chunk-select-chunk-size: no chunk count in {CANDIDATES:?} splits a block of {block} rows into whole {tile}-row tiles"
                    ),
                ));
            };
            Diagnostic::remark(
                loc(op),
                format!(
                    "chunks(auto) -> chunks({best}) for @{}: the finest count whose chunks hold at least {min_tiles} whole {tile}-row tiles{}",
                    partial.name,
                    if one_shot {
                        String::new()
                    } else if group > 1 {
                        format!(" and whole swizzle groups of {group}")
                    } else {
                        " (one swizzle group)".to_string()
                    }
                ),
            )
            .emit();
            best
        }
    };
    op.set_chunks(chosen);
    Ok(())
}

fn select(
    plan: &Plan,
    op: Collective,
    forced: Option<i64>,
    machine: &Machine,
) -> Result<(), PassFailed> {
    let (buffer, block, tile) = collective_blocks(plan, op, op.dst(), TilesOf::Consumers)?;
    let dim = op.dim();
    let valid = |n: i64| block % n == 0 && (block / n) % tile == 0;
    let candidates: Vec<i64> = CANDIDATES.into_iter().filter(|&n| valid(n)).collect();
    let whole_tiles = || format!("a block of {block} rows into chunks of whole {tile}-row tiles");
    let chosen = if let Some(n) = checked_forced(op, forced, valid, whole_tiles)? {
        n
    } else {
        if candidates.is_empty() {
            return Err(fail(
                op,
                format!(
                    "chunk-select-chunk-size: no chunk count in {CANDIDATES:?} splits a block of {block} rows into whole {tile}-row tiles"
                ),
            ));
        }
        let elem = buffer.element_bytes().unwrap_or(2);
        let k: i64 = buffer
            .shape
            .iter()
            .enumerate()
            .filter(|(d, _)| *d != dim)
            .map(|(_, s)| *s)
            .product();
        let n_out = plan
            .buffers
            .iter()
            .find(|b| b.name != buffer.name && b.shape.first() == buffer.shape.get(dim))
            .and_then(|b| b.shape.last().copied())
            .unwrap_or(k);
        let problem = AllGatherGemm {
            world_size: plan.world_size as u64,
            rows_per_rank: block as u64,
            row_bytes: (k * elem) as u64,
            flops_per_row: 2.0 * k as f64 * n_out as f64,
        };
        let counts: Vec<u64> = candidates.iter().map(|&n| n as u64).collect();
        let Some((best, predictions)) = choose(machine, &problem, &counts) else {
            return Err(fail(op, "chunk-select-chunk-size: no prediction"));
        };
        let table = predictions
            .iter()
            .map(|p| format!("{}: {:.1} us", p.chunks_per_rank, p.fused_us))
            .collect::<Vec<_>>()
            .join(", ");
        Diagnostic::remark(
            loc(op),
            format!(
                "chunks(auto) -> chunks({best}) for @{}; predicted fused time per count: {table}",
                buffer.name
            ),
        )
        .emit();
        best as i64
    };
    op.set_chunks(chosen);
    Ok(())
}
