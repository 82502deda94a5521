//! `chunk-insert-waits`: make each tile wait for the chunk it reads.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkInsertWaits` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::{
    plan::{
        Consume, FlagKind, FlagRange, Owners, Transfer, bound_kernel, fail, flag_layout, internal,
        loc, plans, records,
    },
    tiles::{
        CHUNK_INDEX_ATTR, CHUNK_LOOP_ATTR, FLATTEN_ATTR, PRESENT_PATH_ATTR, SOURCE_INDEX_ATTR,
        TILE_INDEX_ATTR, TileLoop, find_tile_loops, loads_of,
    },
};
use melior::ir::operation::OperationRef;
use std::collections::HashMap;
use synco_chunk::passes::{ChunkInsertWaitsOptions, PassOptions, RustPass};
use synco_chunk::{Diagnostic, PassFailed, attrs::TransferMode};
use synco_ir::{self as ir, Builder, Value, builder::Cmp};

/// The body of `chunk-insert-waits`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkInsertWaitsOptions;

    fn run(module: OperationRef, options: &ChunkInsertWaitsOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkInsertWaitsOptions::ARGUMENT;

fn run(module: OperationRef, _options: &ChunkInsertWaitsOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    for plan in plans(module) {
        let (kernel, abi) = bound_kernel(&plan, module, NAME)?;
        let layout = flag_layout(&plan)?;
        // The consumers read per source, where their waits go, and which of
        // them another one's waits imply.
        let mut sites = Vec::new();
        for range in layout.iter().filter(|r| r.kind == FlagKind::Arrival) {
            if let Some(site) = source_site(&plan, kernel, range)? {
                sites.push(site);
            }
        }
        for site in &sites {
            match sites.iter().find(|other| implies(other, site)) {
                Some(other) => skip_implied_waits(site, other),
                None => wait_per_source(&plan, &abi, site),
            }
        }
        // What the present paths' polls found, by flag range.
        let mut polled = HashMap::new();
        for range in layout.iter().filter(|r| r.kind == FlagKind::Arrival) {
            let Some(buffer) = plan.buffer(&range.buffer) else {
                continue;
            };
            let consume = plan
                .consumer_of(&range.buffer)
                .ok_or_else(|| internal(plan.op, "a flag range without its chunk.consume"))?;
            // (Consumers read per source waited above.)
            if consume.reads_per_source() {
                continue;
            }
            let tile = consume.tile().unwrap_or(1);
            let arg = buffer.arg.unwrap_or(usize::MAX);
            let loops = find_tile_loops(kernel, arg, tile, consume.into())?;
            for (i, tile_loop) in loops.iter().enumerate() {
                let remark = (i == 0).then_some(loops.len());
                wait_per_chunk(&plan, &abi, range, consume, *tile_loop, remark, &mut polled)?;
            }
            if !loops.is_empty() {
                continue;
            }
            if range.rows_per_chunk % tile != 0 {
                return Err(fail(
                    consume,
                    format!(
                        "chunks of {} rows of @{} would split {tile}-row tiles: pick a chunk count whose chunks hold whole tiles",
                        range.rows_per_chunk, range.buffer
                    ),
                ));
            }
            let marked = ir::walk(kernel)
                .into_iter()
                .find(|op| ir::str_attr(*op, TILE_INDEX_ATTR).as_deref() == Some(&range.buffer));
            let Some(marked) = marked else {
                return Err(fail(
                    consume,
                    "chunk-insert-waits: no tile index for this buffer; run chunk-reorder-tiles first",
                ));
            };
            let t = ir::result(marked, 0);
            let Some(block) = ir::block_of(marked) else {
                return Err(internal(marked, "the tile index is not in a block"));
            };
            let Some(first) = first_load_in(kernel, arg, block, marked, || {
                format!(
                    "this load of @{} is not inside the tile whose index was found; cannot place its wait",
                    range.buffer
                )
            })?
            else {
                continue;
            };
            let b = Builder::before(first).with_loc(ir::location_of(consume.0));
            let row = b.muli(t, b.const_i32(tile));
            let chunk = b.divsi(row, b.const_i32(range.rows_per_chunk));
            let owner = owner_of(&b, chunk, range, plan.world_size);
            let remote = b.cmpi(Cmp::Ne, owner, abi.rank);
            let columns = columns_of(&plan, &b, range, (kernel, arg), first, first)?;
            let flags = chunk_flags(&b, range, chunk, columns);
            b.if_then(remote, |inner| wait_for(&inner, &abi, flags));
            Diagnostic::remark(
                loc(consume),
                format!(
                    "tiles of @{} wait for their chunk ({} rows{}, flags {}..{}) before '{}'",
                    range.buffer,
                    range.rows_per_chunk,
                    parts_word(range),
                    range.base,
                    range.base + range.count(plan.world_size),
                    ir::op_name(first)
                ),
            )
            .emit();
            unflatten_enclosing_loops(first, consume);
        }
        agree_on_present_paths(kernel);
    }
    Ok(())
}

/// Makes each present path's condition the program's: every thread polled
/// the flags for itself, and a flag set between two threads' reads would
/// send them down different paths, whose barriers and shared buffers would
/// not match. So the program takes the present path only where all its
/// threads found every chunk (one `chunk.agree`, before the branch, by
/// which time the polls have landed). The branch still tests the thread's
/// own answer too, `missing || !agreed`, which is the same value (a thread
/// that found a chunk missing makes the agreement fail): LLVM, which sees
/// through the thread's answer but not through the agreement, then knows
/// on the present path what it knew without it, and keeps that path's
/// loops as lean (a causal kernel's present loops otherwise grow by some
/// 66 SASS instructions per iteration).
fn agree_on_present_paths(kernel: ir::Op) {
    for branch in ir::walk(kernel) {
        if ir::attr(branch, PRESENT_PATH_ATTR).is_none() {
            continue;
        }
        let missing = ir::operands(branch)[0];
        if ir::constant_int(missing).is_some() {
            continue;
        }
        let b = Builder::before(branch).with_loc(ir::location_of(branch));
        let no = b.constant(ir::i1_type(b.ctx), 0);
        let all_present = crate::flag_ops::agree(&b, b.cmpi(Cmp::Eq, missing, no));
        let disagreed = b.cmpi(Cmp::Eq, all_present, no);
        ir::set_operand(branch, 0, b.ori(missing, disagreed));
    }
}

/// The waits of a consumer whose blocks a kernel loop walks, once
/// `chunk-reorder-tiles` has split the loop by chunk: before the loop
/// clipped to chunk `c`, if it reads any of it and the chunk is a peer's,
/// a wait for the chunk's flag, `base + c`. A chunk the loop does not read
/// (past a causal bound) is not waited for.
fn wait_per_chunk(
    plan: &crate::plan::Plan,
    abi: &crate::abi::AbiArgs,
    range: &crate::plan::FlagRange,
    consume: Consume,
    tile_loop: TileLoop,
    remark_for_loops: Option<usize>,
    polled: &mut HashMap<i64, Value>,
) -> Result<(), PassFailed> {
    let (var, subject) = (tile_loop.key(), tile_loop.subject());
    if range.owners == Owners::Irregular {
        return Err(fail(
            consume,
            format!(
                "chunk-insert-waits: the transfers into @{} leave its chunks held neither in one block per rank nor in zigzag half-blocks: {subject} cannot tell which chunks to wait for",
                range.buffer
            ),
        ));
    }
    // The loop found is the clipped one, once split (it carries the mark),
    // in the body of the loop over chunks, beside its chunk index.
    let clipped = tile_loop.op;
    let chunk = ir::block_of(clipped).and_then(|body| {
        ir::ops_in(body)
            .into_iter()
            .find(|op| ir::str_attr(*op, CHUNK_INDEX_ATTR).as_deref() == Some(var.as_str()))
    });
    let (Some(chunk), true) = (chunk, ir::attr(clipped, CHUNK_LOOP_ATTR).is_some()) else {
        return Err(fail(
            consume,
            format!(
                "chunk-insert-waits: {subject} is not split by chunk; run chunk-reorder-tiles first"
            ),
        ));
    };
    let b = Builder::before(clipped).with_loc(ir::location_of(consume.0));
    let bounds = ir::operands(clipped);
    let reads = b.cmpi(Cmp::Slt, bounds[0], bounds[1]);
    let c = ir::result(chunk, 0);
    let owner = owner_of(&b, c, range, plan.world_size);
    let remote = b.cmpi(Cmp::Ne, owner, abi.rank);
    let columns = match range.cut {
        None => None,
        Some(_) => {
            let (kernel, arg) = read_in(plan, range, clipped)?;
            columns_of(plan, &b, range, (kernel, arg.0), arg.1, clipped)?
        }
    };
    let flags = chunk_flags(&b, range, c, columns);
    b.if_then(b.andi(reads, remote), |inner| wait_for(&inner, abi, flags));
    if range.cut.is_none() {
        poll_for_present_path(plan, abi, range, clipped, polled);
    }
    let Some(loops) = remark_for_loops else {
        return Ok(());
    };
    Diagnostic::remark(
        loc(consume),
        format!(
            "{}, before each of @{}'s chunks {}, for that chunk ({} {}{}, flags {}..{})",
            crate::tiles::loops_doing(loops, tile_loop, "waits", "wait"),
            range.buffer,
            if loops == 1 { "it reads" } else { "they read" },
            range.rows_per_chunk,
            crate::plan::extent_word(range.dim, plan.rank_of(&range.buffer)),
            parts_word(range),
            range.base,
            range.base + range.count(plan.world_size)
        ),
    )
    .emit();
    Ok(())
}

/// Where the loop over chunks around `clipped` is the `then` branch of a
/// present path (`chunk-reorder-tiles`), ors whether one of `range`'s
/// peer chunks is missing into the branch's condition, and starts the
/// present (`else`) branch with `chunk.acquire` (once for all the buffers
/// the loop reads).
fn poll_for_present_path(
    plan: &crate::plan::Plan,
    abi: &crate::abi::AbiArgs,
    range: &FlagRange,
    clipped: ir::Op,
    polled: &mut HashMap<i64, Value>,
) {
    let Some(branch) = ir::ancestors(clipped).find(|p| ir::attr(*p, PRESENT_PATH_ATTR).is_some())
    else {
        return;
    };
    let Some(kernel) = crate::abi::enclosing_kernel(branch) else {
        return;
    };
    let present = *polled
        .entry(range.base)
        .or_insert_with(|| poll_peer_chunks(plan, abi, range, kernel, branch));
    let b = Builder::before(branch).with_loc(ir::location_of(branch));
    let missing = b.cmpi(Cmp::Eq, present, b.constant(ir::i1_type(b.ctx), 0));
    // `true` from chunk-reorder-tiles, or another buffer's polls.
    let placeholder = ir::operands(branch)[0];
    let from_reorder =
        ir::defining_op(placeholder).is_some_and(|op| ir::op_name(op) == "arith.constant");
    let condition = if from_reorder {
        missing
    } else {
        b.ori(placeholder, missing)
    };
    ir::set_operand(branch, 0, condition);
    let present_block = ir::blocks(ir::regions(branch)[1])[0];
    let first = ir::ops_in(present_block)[0];
    if ir::op_name(first) != "chunk.acquire" {
        crate::flag_ops::acquire(&Builder::before(first));
    }
}

/// Whether every chunk of `range` that another rank holds has arrived:
/// one `chunk.poll` of each flag, at the start of `kernel` (the reads are
/// in flight while the kernel loads its own operands), located at `at`.
fn poll_peer_chunks(
    plan: &crate::plan::Plan,
    abi: &crate::abi::AbiArgs,
    range: &FlagRange,
    kernel: ir::Op,
    at: ir::Op,
) -> Value {
    let entry = ir::blocks(ir::regions(kernel)[0])[0];
    let b = Builder::before(ir::ops_in(entry)[0]).with_loc(ir::location_of(at));
    let mut present = b.constant(ir::i1_type(b.ctx), 1);
    for chunk in 0..range.chunks_per_rank * plan.world_size {
        let c = b.const_i32(chunk);
        let own = b.cmpi(Cmp::Eq, owner_of(&b, c, range, plan.world_size), abi.rank);
        let flag = b.addi(c, b.const_i32(range.base));
        let arrived = crate::flag_ops::poll(&b, *abi, flag, abi.epoch);
        present = b.andi(present, b.ori(own, arrived));
    }
    present
}

/// Waits for `flags`: the first, then the second where it is another.
fn wait_for(b: &Builder, abi: &crate::abi::AbiArgs, (first, second): (Value, Option<Value>)) {
    b.op("chunk.wait", &[abi.flags, first, abi.epoch], &[], &[]);
    if let Some(second) = second {
        b.if_then(b.cmpi(Cmp::Ne, second, first), |inner| {
            inner.op("chunk.wait", &[abi.flags, second, abi.epoch], &[], &[]);
        });
    }
}

/// The flags a tile waits for in chunk `c` (of `range`'s, in row order):
/// `base + c`; where the chunks also cut the columns, the flags of the
/// parts holding the first and the last of `columns` (the first column
/// and the width: one part, or two where the tile straddles them).
fn chunk_flags(
    b: &Builder,
    range: &FlagRange,
    c: Value,
    columns: Option<(Value, i64)>,
) -> (Value, Option<Value>) {
    let (Some(cut), Some((first, width))) = (range.cut, columns) else {
        return (b.addi(c, b.const_i32(range.base)), None);
    };
    let parts = b.addi(b.muli(c, b.const_i32(cut.count)), b.const_i32(range.base));
    let part_of = |column: Value| {
        let part = b.minsi(
            b.divsi(column, b.const_i64(cut.width)),
            b.const_i64(cut.count - 1),
        );
        b.addi(parts, b.trunc_i32(part))
    };
    let last = b.addi(first, b.const_i64(width - 1));
    (part_of(first), Some(part_of(last)))
}

/// ", in parts of N columns" where `range`'s chunks also cut the columns.
fn parts_word(range: &FlagRange) -> String {
    range
        .cut
        .map(|cut| format!(" in parts of {} columns", cut.width))
        .unwrap_or_default()
}

/// Where `range`'s chunks also cut the columns: the first column that
/// `access` (of `kernel`'s argument `arg`) reads and its width, built with
/// `b` before `at`; none otherwise. Refused where the cut is not of the
/// last dimension, the tile is wider than a part, or the columns cannot be
/// told from the access's address.
fn columns_of(
    plan: &crate::plan::Plan,
    b: &Builder,
    range: &FlagRange,
    (kernel, arg): (ir::Op, usize),
    access: ir::Op,
    at: ir::Op,
) -> Result<Option<(Value, i64)>, PassFailed> {
    let Some(cut) = range.cut else {
        return Ok(None);
    };
    let name = &range.buffer;
    let shape = plan
        .buffer(name)
        .map(|b| b.shape.clone())
        .unwrap_or_default();
    if cut.dim + 1 != shape.len() {
        return Err(fail(
            access,
            format!(
                "{NAME}: the chunks of @{name} also cut dimension {}, not its last: tiles can wait per part of the last dimension only",
                cut.dim
            ),
        ));
    }
    let arg_value = crate::tiles::kernel_arg(kernel, arg)
        .ok_or_else(|| internal(access, "the buffer's argument is not the kernel's"))?;
    let (first, width) = crate::kernel_access::columns_read(b, access, arg_value, shape[cut.dim], at)
        .map_err(|why| {
            fail(
                access,
                format!(
                    "{NAME}: the chunks of @{name} cut its columns in parts of {}, but this access's columns cannot be told: {why}",
                    cut.width
                ),
            )
        })?;
    if width > cut.width {
        return Err(fail(
            access,
            format!(
                "{NAME}: tiles of @{name} {width} columns wide would read several of its parts of {} columns and wait for two: cut it in parts at least as wide as a tile",
                cut.width
            ),
        ));
    }
    Ok(Some((first, width)))
}

/// The kernel and (argument, first load) of `range`'s buffer inside loop
/// `clipped`.
fn read_in(
    plan: &crate::plan::Plan,
    range: &FlagRange,
    clipped: ir::Op,
) -> Result<(ir::Op, (usize, ir::Op)), PassFailed> {
    let arg = plan.buffer(&range.buffer).and_then(|b| b.arg);
    let kernel = crate::abi::enclosing_kernel(clipped);
    let (Some(arg), Some(kernel)) = (arg, kernel) else {
        return Err(internal(clipped, "a split loop outside its kernel"));
    };
    let load = loads_of(kernel, arg)
        .into_iter()
        .find(|op| ir::is_ancestor(clipped, *op))
        .ok_or_else(|| internal(clipped, "a split loop that loads nothing of its buffer"))?;
    Ok((kernel, (arg, load)))
}

/// The rank that holds chunk `c` (of `range`'s, in row order) before any
/// transfer: `c / n` for contiguous blocks of `n` chunks; for zigzag
/// half-blocks `h = c / (n / 2)`, `h` or `2W - 1 - h`.
fn owner_of(b: &Builder, c: Value, range: &FlagRange, world_size: i64) -> Value {
    let k = |v: i64| b.const_i32(v);
    match range.owners {
        Owners::Zigzag => {
            let half = b.divsi(c, k((range.chunks_per_rank / 2).max(1)));
            let mirrored = b.subi(k(2 * world_size - 1), half);
            b.select(b.cmpi(Cmp::Slt, half, k(world_size)), half, mirrored)
        }
        Owners::Contiguous | Owners::Irregular => b.divsi(c, k(range.chunks_per_rank)),
    }
}

/// Where a consumer that reads every rank's block in a loop over sources
/// (`source("src")`, rotated by `chunk-reorder-tiles`) waits: inside the
/// loop, before its first load of the buffer.
struct SourceSite<'a> {
    range: &'a crate::plan::FlagRange,
    consume: Consume,
    tile: i64,
    source: String,
    /// The loop's (rotated) source index and the tile index.
    source_index: ir::Op,
    tile_index: ir::Op,
    /// The op in the loop's body before which the tile waits.
    first: ir::Op,
    /// The transfers that write the buffer from other ranks.
    transfers: Vec<Transfer>,
    /// Their transfer mode, if they share one.
    mode: Option<TransferMode>,
    /// For each (source, destination) rank pair, the first and last of
    /// its copies in the order the driving rank's copy stream issues them
    /// (`order`, then the transfer's place in the plan: what
    /// `chunk-lower-transfers` sorts by).
    issued: HashMap<RankPair, (IssueKey, IssueKey)>,
}

/// (source rank, destination rank) of a copy.
type RankPair = (i64, i64);
/// Where a copy is issued on its stream: (`order`, place in the plan).
type IssueKey = (i64, usize);

/// The wait site of `range`'s consumer if it reads per source (`None`
/// otherwise, or if nothing loads the buffer).
fn source_site<'a>(
    plan: &crate::plan::Plan,
    kernel: ir::Op,
    range: &'a crate::plan::FlagRange,
) -> Result<Option<SourceSite<'a>>, PassFailed> {
    let name = &range.buffer;
    let Some(consume) = plan.consumer_of(name) else {
        return Err(internal(plan.op, "a flag range without its chunk.consume"));
    };
    let Some(source) = consume.source() else {
        return Ok(None);
    };
    let tile = consume.tile().unwrap_or(1);
    if range.rows_per_chunk % tile != 0 {
        return Err(fail(
            consume,
            format!(
                "chunks of {} along dimension {} of @{name} would split {tile}-wide tiles: pick a chunk count whose chunks hold whole tiles",
                range.rows_per_chunk, range.dim
            ),
        ));
    }
    // The transfers that write the buffer, with their place in the plan.
    let writers: Vec<(usize, Transfer)> = plan
        .transfers()
        .into_iter()
        .enumerate()
        .filter(|(_, t)| t.dst_buffer().as_deref() == Some(name.as_str()))
        .collect();
    if let Some((_, t)) = writers
        .iter()
        .find(|(_, t)| t.backend() != Some(synco_chunk::attrs::Backend::CopyEngine))
    {
        return Err(fail(
            *t,
            format!(
                "@{name} is consumed per source ({source}): only backend(copy_engine) moves its chunks so far"
            ),
        ));
    }
    let marked = |attr: &str, value: &str| {
        ir::walk(kernel)
            .into_iter()
            .find(|op| ir::str_attr(*op, attr).as_deref() == Some(value))
    };
    let (Some(tile_index), Some(source_index)) = (
        marked(TILE_INDEX_ATTR, name),
        marked(SOURCE_INDEX_ATTR, &source),
    ) else {
        return Err(fail(
            consume,
            "chunk-insert-waits: no tile index or source index for this buffer; run chunk-reorder-tiles first",
        ));
    };
    let Some(body) = ir::block_of(source_index) else {
        return Err(internal(source_index, "the source index is not in a block"));
    };
    let arg = plan.buffer(name).and_then(|b| b.arg).unwrap_or(usize::MAX);
    let Some(first) = first_load_in(kernel, arg, body, source_index, || {
        format!(
            "this load of @{name} is not inside the loop over '{source}'; cannot place its wait"
        )
    })?
    else {
        return Ok(None);
    };
    let remote: Vec<(usize, Transfer)> =
        writers.into_iter().filter(|(_, t)| !t.is_local()).collect();
    let mut issued: HashMap<RankPair, (IssueKey, IssueKey)> = HashMap::new();
    for &(place, t) in &remote {
        let order = t.order();
        for r in 0..plan.world_size {
            let (Some(src), Some(dst)) = (t.src_rank_on(r), t.dst_rank_on(r)) else {
                continue;
            };
            let key = (order, place);
            issued
                .entry((src, dst))
                .and_modify(|(first, last)| {
                    *first = (*first).min(key);
                    *last = (*last).max(key);
                })
                .or_insert((key, key));
        }
    }
    Ok(Some(SourceSite {
        range,
        consume,
        tile,
        source,
        source_index,
        tile_index,
        first,
        mode: shared_mode(remote.iter().map(|(_, t)| *t)),
        transfers: remote.into_iter().map(|(_, t)| t).collect(),
        issued,
    }))
}

/// The transfer mode every one of `transfers` has; `None` if they differ
/// or there are none.
fn shared_mode(mut transfers: impl Iterator<Item = Transfer>) -> Option<TransferMode> {
    let mode = transfers.next()?.mode()?;
    transfers.all(|t| t.mode() == Some(mode)).then_some(mode)
}

/// Whether `by`'s wait implies `site`'s: both wait in the same loop over
/// sources before the same op, and for every pair of ranks, every chunk of
/// `site`'s buffer is copied before any chunk of `by`'s, by the same rank's
/// copy stream (the same transfer mode: pushes by the source, pulls by the
/// destination; the runtime issues a rank's copies in the order
/// `chunk-lower-transfers` lists them). A flag set after a copy on a
/// stream is set after every earlier copy of the stream has landed, so a
/// tile that saw its chunk of `by` from rank `s` sees all of `site`'s from
/// `s` too.
fn implies(by: &SourceSite, site: &SourceSite) -> bool {
    let one_mode = site.mode.is_some() && site.mode == by.mode;
    let copied_before = !site.issued.is_empty()
        && site
            .issued
            .iter()
            .all(|(pair, (_, last))| by.issued.get(pair).is_some_and(|(first, _)| last < first));
    by.range.buffer != site.range.buffer
        && by.source == site.source
        && ir::same_op(by.first, site.first)
        && one_mode
        && copied_before
}

/// A consumer whose waits `by`'s imply (see [`implies`]) waits for nothing
/// itself, and its transfers set no flag (`IMPLIED_ATTR`, read by
/// `chunk-lower-transfers`).
fn skip_implied_waits(site: &SourceSite, by: &SourceSite) {
    for t in &site.transfers {
        records::mark_implied(*t, &by.range.buffer);
    }
    Diagnostic::remark(
        loc(site.consume),
        format!(
            "tiles of @{} need no wait of their own in the loop over '{}': each rank's chunks of it come before its chunks of @{} in the copy order, whose flags imply them, and the tiles wait for those before the same '{}'; its copies set no flag",
            site.range.buffer,
            site.source,
            by.range.buffer,
            ir::op_name(site.first)
        ),
    )
    .emit();
}

/// The waits of a consumer that reads every rank's block in a loop over
/// sources: inside the loop, before its first load of the buffer
/// (`site.first`), the tile waits for the chunk of the iteration's block
/// that holds its tile,
/// `base + src' * chunks_per_rank + (t * T) / rows_per_chunk`, unless the
/// block is the rank's own: in place before the kernel starts (an
/// all-gather's; an all-to-all's is copied right before the kernel, see
/// `chunk-lower-transfers`).
fn wait_per_source(plan: &crate::plan::Plan, abi: &crate::abi::AbiArgs, site: &SourceSite) {
    let range = site.range;
    let b = Builder::before(site.first).with_loc(ir::location_of(site.consume.0));
    let src = ir::result(site.source_index, 0);
    let t = ir::result(site.tile_index, 0);
    let within = b.divsi(
        b.muli(t, b.const_i32(site.tile)),
        b.const_i32(range.rows_per_chunk),
    );
    let chunk = b.addi(b.muli(src, b.const_i32(range.chunks_per_rank)), within);
    let flag = b.addi(chunk, b.const_i32(range.base));
    let remote = b.cmpi(Cmp::Ne, src, abi.rank);
    b.if_then(remote, |inner| {
        inner.op("chunk.wait", &[abi.flags, flag, abi.epoch], &[], &[]);
    });
    Diagnostic::remark(
        loc(site.consume),
        format!(
            "tiles of @{} wait, in each iteration of the loop over '{}' but the own rank's, for their chunk of that rank's block ({} along dimension {}, flags {}..{}) before '{}'",
            range.buffer,
            site.source,
            range.rows_per_chunk,
            range.dim,
            range.base,
            range.base + range.count(plan.world_size),
            ir::op_name(site.first)
        ),
    )
    .emit();
}

/// The op of `block`, after `after`, that holds the first load of kernel
/// argument `arg` (where its wait goes); `None` if nothing loads it. A load
/// outside `block` is refused with `outside()` as the message.
fn first_load_in(
    kernel: ir::Op,
    arg: usize,
    block: ir::Block,
    after: ir::Op,
    outside: impl Fn() -> String,
) -> Result<Option<ir::Op>, PassFailed> {
    let mut first: Option<ir::Op> = None;
    for load in loads_of(kernel, arg) {
        match ir::ancestor_in_block(load, block) {
            Some(a) if ir::is_before_in_block(after, a) => {
                if first.is_none_or(|f| ir::is_before_in_block(a, f)) {
                    first = Some(a);
                }
            }
            _ => return Err(fail(load, outside())),
        }
    }
    Ok(first)
}

/// Removes Triton's `tt.flatten` from the loops around `op` (see the module
/// docs), with a remark at the plan's `consume` op.
fn unflatten_enclosing_loops(op: ir::Op, consume: Consume) {
    let mut parent = ir::parent_op(op);
    while let Some(p) = parent {
        if ir::op_name(p) == "scf.for" && ir::remove_attr(p, FLATTEN_ATTR) {
            Diagnostic::remark(
                loc(consume),
                "the tile loop is no longer flattened (tt.flatten removed): Triton's pipeliner would load the next tile's data before its wait",
            )
            .emit();
        }
        parent = ir::parent_op(p);
    }
}
