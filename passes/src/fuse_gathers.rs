//! `chunk-fuse-gathers`: send what the kernel's tiles produce to every peer,
//! chunk by chunk, as soon as the tiles of a chunk are done.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkFuseGathers` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::{
    flag_ops::arrive,
    plan::{
        FlagKind, FlagRange, Plan, Transfer, bound_kernel, fail, flag_layout, internal, loc,
        plain_send_source, plans, records,
    },
    tiles::{Access, find_tile_index, scaled_by_tile, tile_store},
};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkFuseGathersOptions, PassOptions, RustPass};
use synco_chunk::{Diagnostic, PassFailed, attrs, attrs::CollectiveKind};
use synco_ir::{self as ir, Builder, Op};
use synco_manifest::{CopyRows, ReductionCopy};

/// The body of `chunk-fuse-gathers`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkFuseGathersOptions;

    fn run(module: OperationRef, options: &ChunkFuseGathersOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkFuseGathersOptions::ARGUMENT;

fn run(module: OperationRef, _options: &ChunkFuseGathersOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    for plan in plans(module) {
        let outputs: Vec<FlagRange> = flag_layout(&plan)?
            .into_iter()
            .filter(|r| r.kind == FlagKind::Output)
            .collect();
        if outputs.is_empty() {
            continue;
        }
        let (kernel, abi) = bound_kernel(&plan, module, NAME)?;
        if let [_, second, ..] = &outputs[..] {
            return Err(fail(
                plan.op,
                format!(
                    "chunk-fuse-gathers: one gathered output per plan is supported; @{} is a second one",
                    second.buffer
                ),
            ));
        }
        let range = &outputs[0];
        let (transfers, reshard) = gather_transfers(&plan, &range.buffer)?;
        // One fused operation per plan: a reduction fused before this pass
        // owns the side stream's copies or the launch's completion.
        for (recorded, key, what) in [
            (
                records::has_reduction_copies(&plan),
                records::REDUCTION_COPIES_ATTR,
                "has copies on the copy engine's side stream",
            ),
            (
                records::has_completion(&plan),
                records::COMPLETION_ATTR,
                "ends the launch on its own completion flags",
            ),
        ] {
            if recorded {
                return Err(fail(
                    transfers[0],
                    format!(
                        "chunk-fuse-gathers: a reduction fused into this plan already {what} ({key}); gathering an output beside it is not supported"
                    ),
                ));
            }
        }
        if let Some(into) = reshard {
            check_reshard(&plan, range, &transfers, &into)?;
            // Pulled by the destinations' copy programs (`chunk-lower-
            // transfers` lowers the transfers), or sent by the copy engine
            // (recorded copies: the transfers are done here).
            let pulled = transfers.iter().any(|t| !t.is_local() && t.copied_by_sms());
            fuse(&plan, kernel, abi, range, Some((&into, pulled)))?;
            if !pulled {
                for t in transfers {
                    records::mark_fused(t);
                }
            }
            continue;
        }
        // One transfer per chunk of the tiles' dimension and peer: chunks
        // that cut another dimension would not follow the tiles.
        let expected = (plan.world_size - 1) * range.chunks_per_rank;
        if transfers.len() as i64 != expected {
            return Err(fail(
                transfers[0],
                format!(
                    "chunk-fuse-gathers: the all-gather's chunks of @{} must cut dimension {} (along which its tiles are produced) and nothing else; use split({}), or chunks(1)",
                    range.buffer, range.dim, range.dim
                ),
            ));
        }
        check_layout(&plan, range, &transfers)?;
        fuse(&plan, kernel, abi, range, None)?;
        for t in transfers {
            records::mark_fused(t);
        }
    }
    Ok(())
}

/// Refuses gather transfers that the recorded copies would not make as
/// written: on every rank, each must send one chunk (`rows_per_chunk`
/// along the tiles' dimension) of its source rank's own block, into the
/// same place of the destination's buffer, as `record` copies it. The plan
/// verifier checked that every element lands exactly once; a plan written
/// out by hand can still move a block elsewhere or relay another rank's.
fn check_layout(plan: &Plan, range: &FlagRange, transfers: &[Transfer]) -> Result<(), PassFailed> {
    let chunk = range.rows_per_chunk;
    let block = range.rank_block;
    for &t in transfers {
        let Some(sizes) = t.sizes() else {
            return Err(internal(t, "a transfer without regions"));
        };
        for r in 0..plan.world_size {
            let (Some(source), Some(src_at), Some(dst_at)) =
                (t.src_rank_on(r), t.src_offsets_on(r), t.dst_offsets_on(r))
            else {
                return Err(internal(t, "cannot evaluate the transfer on every rank"));
            };
            // (first, size) along dimension `d`.
            let along = |d: usize| Some((*src_at.get(d)?, *sizes.get(d)?));
            let (Some((first, extent)), Some((start, size))) =
                (along(range.rank_dim), along(range.dim))
            else {
                return Err(internal(
                    t,
                    "a region with fewer dimensions than its buffer",
                ));
            };
            let own_block = first >= source * block && first + extent <= (source + 1) * block;
            let one_chunk = size == chunk && start % chunk == 0;
            if src_at != dst_at || !own_block || !one_chunk {
                return Err(fail(
                    t,
                    format!(
                        "chunk-fuse-gathers: on rank {r}, this transfer sends {sizes:?} of @{} at {src_at:?} from rank {source} to {dst_at:?}, but the fused gather sends each rank's own block ({block} along dimension {}), {chunk} along dimension {} at a time, to the same place on every peer: write the collective and let chunk-expand-collectives expand it",
                        range.buffer, range.rank_dim, range.dim
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A re-sharding all-to-all of the tiles' output, as [`fuse`] sends it:
/// chunks(1), each rank's block `d` of `@X` (along `s`, the dimension the
/// tiles are produced along: rows, `dim(0) to(1)`, or columns, `dim(1)
/// to(0)`) whole to rank `d`, into its block of `@Y` (along the other
/// dimension) that the producing rank owns. The plan verifier checked
/// that every element lands once; a plan written out by hand can still
/// move them elsewhere.
fn check_reshard(
    plan: &Plan,
    range: &FlagRange,
    transfers: &[Transfer],
    into: &str,
) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let name = &range.buffer;
    let (Some(x), Some(y)) = (plan.buffer(name), plan.buffer(into)) else {
        return Err(internal(
            transfers[0],
            "the all-to-all's buffers are not in the plan",
        ));
    };
    let (&[rows, cols], &[_, _]) = (&x.shape[..], &y.shape[..]) else {
        return Err(fail(
            transfers[0],
            format!(
                "chunk-fuse-gathers: an all-to-all of the tiles' output re-shards 2D buffers; @{name} and @{into} are not"
            ),
        ));
    };
    let (split, block) = (range.rank_dim, range.rank_block);
    let (chunk, per_rank) = (range.rows_per_chunk, range.chunks_per_rank);
    if range.dim != split || split > 1 || transfers.len() as i64 != w * per_rank {
        return Err(fail(
            transfers[0],
            format!(
                "chunk-fuse-gathers: an all-to-all of @{name}, which tiles produce along dimension {}, is fused as dim({0}) to({}): each rank's block to its rank, in chunks along dimension {0}",
                range.dim,
                1 - range.dim.min(1)
            ),
        ));
    }
    for &t in transfers {
        for r in 0..w {
            let (Some(src), Some(src_at), Some(dst), Some(dst_at), Some(sizes)) = (
                t.src_rank_on(r),
                t.src_offsets_on(r),
                t.dst_rank_on(r),
                t.dst_offsets_on(r),
                t.sizes(),
            ) else {
                return Err(internal(t, "cannot evaluate the transfer on every rank"));
            };
            // Chunk c of rank dst's block of @X, into rank dst's @Y where
            // rank src's go, at the chunk's place there.
            let c = (src_at[split] - dst * block)
                .div_euclid(chunk)
                .clamp(0, per_rank - 1);
            let (from, to, size) = if split == 0 {
                (
                    [dst * block + c * chunk, 0],
                    [c * chunk, src * cols],
                    [chunk, cols],
                )
            } else {
                (
                    [0, dst * block + c * chunk],
                    [src * rows, c * chunk],
                    [rows, chunk],
                )
            };
            if src_at != from || dst_at != to || sizes != size {
                return Err(fail(
                    t,
                    format!(
                        "chunk-fuse-gathers: on rank {r}, this transfer moves {sizes:?} of @{name} at {src_at:?} from rank {src} to {dst_at:?} of rank {dst}'s @{into}, but the fused all-to-all moves {size:?} from {from:?} to {to:?}: chunk {c} of rank {dst}'s block, to where rank {src}'s go"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn gather_transfers(
    plan: &Plan,
    buffer: &str,
) -> Result<(Vec<Transfer>, Option<String>), PassFailed> {
    let resharded = crate::plan::transfers_from(plan, buffer);
    if let Some(first) = resharded.first() {
        let backend = first.backend();
        if let Some(t) = resharded.iter().find(|t| {
            !matches!(
                t.backend(),
                Some(attrs::Backend::CopyEngine | attrs::Backend::Ldst | attrs::Backend::Tma)
            ) || (!t.is_local() && t.backend() != backend)
        }) {
            return Err(fail(
                *t,
                format!(
                    "chunk-fuse-gathers: an all-to-all of an output the tiles produce is sent by the copy engine or pulled by the copy programs (ldst, tma), one of them for all its chunks; backend '{}' is not implemented for it",
                    t.backend().map_or("?", |b| b.keyword())
                ),
            ));
        }
        if resharded
            .iter()
            .any(|t| t.dst_buffer() != first.dst_buffer())
            || first.collective().map(|c| c.0) != Some(CollectiveKind::AllToAll)
        {
            return Err(fail(
                *first,
                format!(
                    "chunk-fuse-gathers: @{buffer} is produced by kernel tiles and copied into other buffers; only one all-to-all of it is fused"
                ),
            ));
        }
        let into = first
            .dst_buffer()
            .ok_or_else(|| internal(*first, "a transfer without a destination"))?;
        return Ok((resharded, Some(into)));
    }
    let mut out = Vec::new();
    for t in plan.transfers() {
        if plain_send_source(t).as_deref() != Some(buffer) {
            continue;
        }
        if t.collective() != Some((CollectiveKind::AllGather, None)) {
            return Err(fail(
                t,
                format!(
                    "chunk-fuse-gathers: @{buffer} is produced by kernel tiles and sent by this transfer, which no all-gather expanded; only an all-gather of a produced buffer is fused"
                ),
            ));
        }
        let backend = t.backend();
        if backend != Some(attrs::Backend::CopyEngine) {
            return Err(fail(
                t,
                format!(
                    "chunk-fuse-gathers: an all-gather of an output the tiles produce is sent by the copy engine; backend '{}' is not implemented for it",
                    backend.map_or("?", |b| b.keyword())
                ),
            ));
        }
        out.push(t);
    }
    if out.is_empty() {
        return Err(internal(plan.op, "a gathered output without transfers"));
    }
    Ok((out, None))
}

/// Has the tiles count each finished chunk and records the copies that
/// send it (`reshard`: into that buffer, by [`record_reshard`]; else as an
/// all-gather, by [`record`]).
fn fuse(
    plan: &Plan,
    kernel: Op,
    abi: crate::abi::AbiArgs,
    range: &FlagRange,
    reshard: Option<(&str, bool)>,
) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let name = &range.buffer;
    let produce = plan
        .producer_of(name)
        .ok_or_else(|| internal(plan.op, "a gathered output without its chunk.produce"))?;
    let tile = produce.tile().unwrap_or(1);
    let output = plan
        .buffer(name)
        .ok_or_else(|| internal(produce, "a produced buffer that is not in the plan"))?;
    let [_, n] = output.shape[..] else {
        return Err(fail(
            produce,
            format!("chunk-fuse-gathers: @{name} must be a 2D [M, N] buffer"),
        ));
    };
    if reshard.is_none() && range.rank_dim != 0 {
        return Err(fail(
            produce,
            format!(
                "chunk-fuse-gathers: each rank's block of @{name} must be rows (an all-gather along dim(0)); it is along dimension {}",
                range.rank_dim
            ),
        ));
    }
    let Some(arg) = output.arg else {
        return Err(fail(
            produce,
            format!(
                "@{name} is produced by kernel tiles but not bound to a kernel argument: add bind(i)"
            ),
        ));
    };
    let element_bytes = output.element_bytes().ok_or_else(|| {
        fail(
            produce,
            format!("unsupported element type {}", output.element),
        )
    })?;
    // The rank's rows (its block along dimension 0).
    let block = range.rank_block;
    let chunk = range.rows_per_chunk;
    if chunk % tile != 0 {
        return Err(fail(
            produce,
            format!(
                "chunks of {chunk} along dimension {} of @{name} would split its {tile}-wide tiles: pick a chunk count whose chunks hold whole tiles",
                range.dim
            ),
        ));
    }
    let index_name = produce.index();
    let t = find_tile_index(
        kernel,
        arg,
        Access::Store,
        tile,
        index_name.as_deref(),
        produce,
    )?;
    let index_op = ir::defining_op(t).ok_or_else(|| {
        fail(
            produce,
            format!("chunk-fuse-gathers: the tile index of @{name} must be computed in the kernel, not a block argument"),
        )
    })?;
    let store = tile_store(kernel, arg, name, index_op, produce, NAME)?;
    // The chunk is computed from `t`: the store's addresses must be `t`
    // tiles in (not, say, a reordered copy of it).
    if !scaled_by_tile(&[store], tile)
        .into_iter()
        .any(|x| ir::same_value(x, t))
    {
        return Err(fail(
            store,
            format!(
                "chunk-fuse-gathers: this store of @{name} does not address its tile as the tile index times {tile}; cannot tell which chunk it writes"
            ),
        ));
    }
    let operands = ir::operands(store);
    let (ptrs, value) = (operands[0], operands[1]);
    let shape = ir::tensor_shape(ir::type_of(value)).unwrap_or_default();
    let [tile_rows, tile_cols] = shape[..] else {
        return Err(fail(
            store,
            "chunk-fuse-gathers: the tile's store must write a 2D tensor",
        ));
    };
    let along = if range.dim == 0 { tile_rows } else { tile_cols };
    if along != tile {
        return Err(fail(
            store,
            format!(
                "this store writes tiles {along} wide along dimension {}, but the plan produces tile({tile})",
                range.dim
            ),
        ));
    }
    // Tiles of one chunk: the chunk's extent along the produced dimension,
    // times the tiles across the rest of the rank's block (of a re-shard's
    // @X: all its rows).
    let across = if reshard.is_some() {
        output.shape[0]
    } else {
        block
    };
    let tiles_per_chunk = if range.dim == 0 {
        chunk / tile * ((n + tile_cols - 1) / tile_cols)
    } else {
        chunk / tile * ((across + tile_rows - 1) / tile_rows)
    };

    let b = Builder::before(store).with_loc(ir::location_of(produce.0));
    let c = b.divsi(b.muli(t, b.const_i32(tile)), b.const_i32(chunk));
    let g = if reshard.is_some() {
        // The tiles write all of @X: chunk c is rank c's rows.
        c
    } else {
        let g = b.addi(c, b.muli(abi.rank, b.const_i32(range.chunks_per_rank)));
        // Rank r's rows of @C: every address moves by r blocks of rows.
        let shift = b.muli(b.to_i64(abi.rank), b.const_i64(block * n));
        if (block * n) % 16 == 0 {
            b.assume_multiple_of(shift, 16);
        }
        ir::set_operand(store, 0, b.addptr(ptrs, b.splat(shift, &shape)));
        g
    };
    let next = ir::next_op(store).ok_or_else(|| internal(store, "a store that ends its block"))?;
    let after = Builder::before(next).with_loc(ir::location_of(produce.0));
    arrive(
        &after,
        abi.flags,
        after.addi(g, after.const_i32(range.base)),
    );

    if let Some((into, pulled)) = reshard {
        let shape = [output.shape[0], n];
        if pulled {
            return pull_reshard(plan, kernel, range, into, tiles_per_chunk, produce);
        }
        record_reshard(plan, range, into, tiles_per_chunk, shape, element_bytes)?;
        let (part, there) = if range.dim == 0 {
            ("rows", format!("this rank's {n} columns there"))
        } else {
            ("columns", format!("this rank's {} rows there", shape[0]))
        };
        let (counted, sent) = match range.chunks_per_rank {
            1 => (format!("each rank's {part}"), format!("rank d's {part}")),
            n => (
                format!("each chunk of each rank's {part} ({n} per rank)"),
                format!("each chunk of rank d's {part}"),
            ),
        };
        Diagnostic::remark(
            loc(produce),
            format!(
                "tiles of @{name} count {counted} they finish ({tiles_per_chunk} tiles each, counters {}..{}); the copy engine sends {sent} to rank d's @{into} ({there}) as soon as they are done",
                range.base,
                range.base + range.count(w),
            ),
        )
        .emit();
        return Ok(());
    }
    record(plan, range, tiles_per_chunk, [n, element_bytes])?;
    Diagnostic::remark(
        loc(produce),
        format!(
            "tiles of @{name} store into the rank's block and count its chunks ({} per rank, {tiles_per_chunk} tiles each, counters {}..{}); the copy engine sends each finished chunk to {} peer(s){}",
            range.chunks_per_rank,
            range.base,
            range.base + range.count(w),
            w - 1,
            if range.dim == 0 {
                String::new()
            } else {
                format!(", {block} rows of {chunk} columns per copy")
            }
        ),
    )
    .emit();
    Ok(())
}

/// A re-sharding all-to-all of the tiles' output pulled by the
/// destinations' copy programs (`ldst`, `tma`): the flag layout records
/// how many tiles complete a chunk, which each copy waits for on its
/// source rank before it pulls (`chunk-lower-transfers`), and the kernel
/// gets `into` as an argument where no argument carries it.
fn pull_reshard(
    plan: &Plan,
    kernel: Op,
    range: &FlagRange,
    into: &str,
    tiles_per_chunk: i64,
    produce: crate::plan::Produce,
) -> Result<(), PassFailed> {
    let mut layout = flag_layout(plan)?;
    for r in layout.iter_mut().filter(|r| r.buffer == range.buffer) {
        r.arrivals_per_chunk = Some(tiles_per_chunk);
    }
    records::record_flag_layout(plan, &layout)?;
    let Some(target) = plan.buffer(into) else {
        return Err(internal(
            produce,
            "the all-to-all's destination is not in the plan",
        ));
    };
    if crate::abi::buffer_pointer(kernel, target).is_none() {
        crate::abi::append_buffer_args(kernel, &[(into, &target.element)], NAME)?;
    }
    let part = if range.dim == 0 { "rows" } else { "columns" };
    Diagnostic::remark(
        loc(produce),
        format!(
            "tiles of @{} count each chunk of each rank's {part} they finish ({} per rank, {tiles_per_chunk} tiles each, counters {}..{}); rank d's copy programs pull each into its @{into} once the chunk's tiles are counted on the source rank",
            range.buffer,
            range.chunks_per_rank,
            range.base,
            range.base + range.count(plan.world_size),
        ),
    )
    .emit();
    Ok(())
}

/// The copies of a re-sharding all-to-all of the tiles' output (`@X` of
/// `[rows, cols]`): rank s sends its block of rank d (`rank_block` rows
/// of every column, or columns of every row) to rank d's `into`, where
/// rank s's go (its columns, or its rows, there); its own block too,
/// within the rank, each once its tiles are done.
fn record_reshard(
    plan: &Plan,
    range: &FlagRange,
    into: &str,
    tiles_per_chunk: i64,
    [rows, cols]: [i64; 2],
    element_bytes: i64,
) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let (block, chunk, per_rank) = (
        range.rank_block,
        range.rows_per_chunk,
        range.chunks_per_rank,
    );
    let copy = |s: i64, d: i64, c: i64| {
        // Source and destination offsets, rows, their length and the
        // destination's row pitch (the source's is a row of @X), in
        // elements: chunk c of rank d's block.
        let (src, dst, count, row, dst_pitch) = if range.dim == 0 {
            let at = d * block + c * chunk;
            (
                at * cols,
                c * chunk * w * cols + s * cols,
                chunk,
                cols,
                w * cols,
            )
        } else {
            (
                d * block + c * chunk,
                s * rows * block + c * chunk,
                rows,
                chunk,
                block,
            )
        };
        ReductionCopy {
            src_buffer: range.buffer.clone(),
            dst_buffer: into.to_string(),
            owner: d,
            src_offset: src * element_bytes,
            dst_offset: dst * element_bytes,
            bytes: row * element_bytes,
            produced: (range.base + d * per_rank + c, tiles_per_chunk),
            consumed: None,
            arrived: None,
            copied: None,
            rows: Some(CopyRows {
                count,
                src_pitch: cols * element_bytes,
                dst_pitch: dst_pitch * element_bytes,
            }),
        }
    };
    // Peers first (r+1, r+2, ...), the rank's own block last; each block
    // chunk by chunk, in the order the tiles finish them.
    let copies: Vec<Vec<ReductionCopy>> = (0..w)
        .map(|s| {
            (1..=w)
                .flat_map(|k| (0..per_rank).map(move |c| ((s + k) % w, c)))
                .map(|(d, c)| copy(s, d, c))
                .collect()
        })
        .collect();
    records::record_reduction_copies(plan, &copies)
}

/// The side streams' copies (see the module docs), as the plan attribute
/// `chunk-lower-transfers` moves into the schedule. `[n, element_bytes]`: the row length and element size.
fn record(
    plan: &Plan,
    range: &FlagRange,
    tiles_per_chunk: i64,
    [n, element_bytes]: [i64; 2],
) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let block = range.rank_block;
    let per_rank = range.chunks_per_rank;
    let chunk = range.rows_per_chunk;
    let copies: Vec<Vec<ReductionCopy>> = (0..w)
        .map(|s| {
            (0..per_rank)
                .flat_map(|c| (1..w).map(move |k| (c, k)))
                .map(|(c, k)| {
                    let g = s * per_rank + c;
                    // Column chunks: `block` rows of `chunk` elements; row
                    // chunks: one contiguous range.
                    let (offset, bytes, rows) = if range.dim == 0 {
                        ((s * block + c * chunk) * n, chunk * n * element_bytes, None)
                    } else {
                        let pitch = n * element_bytes;
                        let rows = CopyRows {
                            count: block,
                            src_pitch: pitch,
                            dst_pitch: pitch,
                        };
                        (s * block * n + c * chunk, chunk * element_bytes, Some(rows))
                    };
                    ReductionCopy {
                        src_buffer: range.buffer.clone(),
                        dst_buffer: range.buffer.clone(),
                        owner: (s + k) % w,
                        src_offset: offset * element_bytes,
                        dst_offset: offset * element_bytes,
                        bytes,
                        produced: (range.base + g, tiles_per_chunk),
                        consumed: None,
                        arrived: None,
                        copied: None,
                        rows,
                    }
                })
                .collect()
        })
        .collect();
    records::record_reduction_copies(plan, &copies)
}
