//! The staged transports of a reduce-scatter's partials (and of a
//! two-shot all-reduce's sums): peers' tiles store their partial locally
//! and count it, and something else moves each finished chunk into the
//! owner's staging buffer `@P_staging`: the copy engine, driven by the
//! host's side stream from the copies [`record_copies`] lists, or, with
//! `mode=stage` ([`stage`]), the kernel's own copy programs
//! (`chunk-lower-transfers`). Their flags are [`CeFlags`].

use super::{Mode, NAME, TileChunk, elements_between, site::Site};
use crate::flag_ops::{arrive, wait};
use crate::plan::{
    FlagRange, Plan, ReductionKind, Transfer, fail, internal, records, reduction_kind,
};
use synco_chunk::{PassFailed, attrs};
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};
use synco_manifest::ReductionCopy;

/// `mode=stage`: marks the plan's reductions on `ldst` or `tma` as staged (so that
/// the flag layout is the copy engine's, `plan::staged`) and gives each
/// reduced buffer the owners' staging buffer that `chunk-expand-collectives`
/// declares for the copy engine (`W - 1` blocks of its rows, kernel-owned),
/// with its kernel argument. A one-shot all-reduce is not staged.
pub(super) fn stage(plan: &Plan, kernel: Op, reducing: &[Transfer]) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let mut names: Vec<String> = Vec::new();
    for t in reducing {
        let local = t.is_local();
        let Some(name) = t.src_buffer() else {
            return Err(internal(*t, "a reducing transfer without a source region"));
        };
        if local || !t.copied_by_sms() || names.contains(&name) {
            continue;
        }
        if reduction_kind(plan, &name) == Some(ReductionKind::AllReduce) {
            let why = if t.backend() == Some(attrs::Backend::Tma) {
                "backend(tma) stages partials in the owners' buffers, which a one-shot all-reduce has none of: use backend(ldst), or algorithm(two_shot)"
            } else {
                "mode=stage moves a reduce-scatter or a two-shot all-reduce; this one-shot all-reduce needs mode=push or pull"
            };
            return Err(fail(*t, format!("chunk-fuse-reductions: {why}")));
        }
        names.push(name);
    }
    let ctx = ir::context_of(plan.op);
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let Some(list) = ir::parse_attr(ctx, &format!("[{}]", quoted.join(", "))) else {
        return Err(internal(plan.op, "cannot build the staged buffers' list"));
    };
    ir::set_attr(plan.op, crate::plan::STAGED_ATTR, list);
    for name in names {
        // W - 1 blocks of the partial's rows (fused partials are split
        // along dimension 0, see `fuse`).
        let Some(rows) = plan.buffer(&name).and_then(|b| b.shape.first().copied()) else {
            return Err(internal(plan.op, "a reduced buffer without rows"));
        };
        let (staging, shape, element) =
            crate::plan::staging_decl(plan, &name, 0, rows / w * (w - 1), plan.op, NAME)?;
        crate::plan::declare_kernel_buffer(
            plan,
            kernel,
            &staging,
            &shape,
            &element,
            &[crate::plan::STAGING_ATTR],
            NAME,
        )?;
    }
    Ok(())
}

/// The owner waits for one flag per source, set to the epoch by the copy
/// engine (or the copy programs) once the source's partial is in.
pub(super) fn wait_for_partials(site: &Site, ob: &Builder, at: &TileChunk) {
    let (abi, w) = (site.abi, site.world_size);
    // One flag per source, set to the epoch by the copy engine.
    for s in 0..w {
        let peer = ob.const_i32(s);
        ob.if_then(ob.cmpi(Cmp::Ne, abi.rank, peer), |ib| {
            let arrived = at.ce.arrived(&ib, at.chunk, peer);
            wait(&ib, abi, arrived, abi.epoch, 1);
        });
    }
}

/// Where rank `source`'s partial of the tile was copied: this rank's
/// staging buffer, in source `source`'s slot.
pub(super) fn partial_in_staging(site: &Site, ob: &Builder, source: i64) -> Value {
    let (block, n) = (site.buffers.block, site.buffers.cols);
    staging_shift(
        ob,
        site.tile.ptrs,
        site.buffers.p_arg,
        site.staging_ptr,
        site.abi.rank,
        source,
        site.world_size,
        block * n,
        site.buffers.element_bytes,
        &site.tile.shape,
    )
}

/// A peer's tile (`pb` builds in its branch, before `peer_yield`): the
/// kernel's own store, counted on the chunk's `produced` counter; the
/// chunk's copies are recorded for the side stream (or the copy programs).
pub(super) fn emit_peer_rows(
    site: &Site,
    pb: &Builder,
    peer_yield: Op,
    at: &TileChunk,
) -> Result<(), PassFailed> {
    let (abi, mode) = (site.abi, site.mode);
    let (block, n, element_bytes) = (
        site.buffers.block,
        site.buffers.cols,
        site.buffers.element_bytes,
    );
    if mode == Mode::Stage {
        // The copy programs have copied the previous epoch's partial.
        let previous = pb.subi(abi.epoch, pb.const_i32(1));
        wait(pb, abi, at.ce.copied(pb, at.chunk), previous, 1);
    }
    // (On the copy engine, the runtime's stream order keeps this epoch's
    // partial from the rows the copy engine still reads: see
    // `guards_epochs_in_kernel`.)
    ir::move_before(site.tile.store, peer_yield);
    // Counted here; the side stream (or the copy programs) copies
    // the chunk once complete.
    arrive(pb, abi.flags, at.flag);
    record_copies(
        site.plan,
        site.range,
        site.tile.tiles_per_chunk,
        block * n * element_bytes,
        n * element_bytes,
        site.buffers
            .two_shot()
            .then_some(site.buffers.out_name.as_str()),
        mode.guards_epochs_in_kernel(),
    )
}

/// Pointers into the staging buffer for `ptrs` (the rank's own rows of
/// `@P`): the same rows of the rank's block, in source `source`'s slot
/// ([`crate::plan::staging_slot`]). One shift in elements, through
/// `tt.addptr`, so the loads stay vectorised.
#[allow(clippy::too_many_arguments)]
fn staging_shift(
    b: &Builder,
    ptrs: Value,
    p_arg: Value,
    staging: Value,
    rank: Value,
    source: i64,
    world_size: i64,
    block_elems: i64,
    element_bytes: i64,
    shape: &[i64],
) -> Value {
    let between = elements_between(b, p_arg, staging, element_bytes);
    // slot - rank, in blocks: (source - rank - 1) mod W - rank.
    let rank = b.to_i64(rank);
    let w = b.const_i64(world_size);
    let slot = b.remsi(b.subi(b.const_i64(source - 1 + world_size), rank), w);
    let blocks = b.subi(slot, rank);
    let shift = b.addi(between, b.muli(blocks, b.const_i64(block_elems)));
    if block_elems % 16 == 0 {
        b.assume_multiple_of(shift, 16);
    }
    b.addptr(ptrs, b.splat(shift, shape))
}

/// A two-shot all-reduce staged on SMs ends on rank `r` once every other
/// rank's sums arrived: the `gathered` flag of every chunk `r` does not own
/// reaches the epoch (set by the copy programs).
pub(super) fn record_completion(
    plan: &Plan,
    range: &FlagRange,
    ce: &CeFlags,
) -> Result<(), PassFailed> {
    let chunks = range.chunks_per_rank * plan.world_size;
    let per_rank: Vec<Vec<(i64, i64)>> = (0..plan.world_size)
        .map(|r| {
            (0..chunks)
                .filter(|g| g / range.chunks_per_rank != r)
                .map(|g| (ce.gathered_index(g), 1))
                .collect()
        })
        .collect();
    records::record_completion(plan, &per_rank)
}

/// The flags of a reduce-scatter moved by the copy engine, after the
/// range's base (`G = W * chunks_per_rank` global chunks): `produced[g]`
/// (this rank's tiles of chunk g, a counter), `arrived[g * W + s]` (set to
/// the epoch by the copy engine once source s's partial of chunk g is in),
/// `consumed[g]` (the owner's tiles that read this rank's partial, a
/// counter), `copied[g]` (set to the epoch once the copy engine has read
/// this rank's partial of chunk g); a two-shot all-reduce also has
/// `reduced[g]` (the owner's tiles that stored their sums, a counter),
/// `sent[g]` (set to the epoch once the copy engine has sent the owner's
/// sums to every peer) and `gathered[g]` (set to the epoch on every peer
/// once the sums are in its `@C`). The copy engine itself uses only
/// `produced`, `arrived` and `reduced`: its streams order the rest (see
/// `record_copies`); the SM-staged mode uses every one.
#[derive(Clone, Copy)]
pub(super) struct CeFlags {
    base: i64,
    chunks: i64,
    world_size: i64,
}

impl CeFlags {
    pub(super) fn new(range: &FlagRange, world_size: i64) -> CeFlags {
        CeFlags {
            base: range.base,
            chunks: range.chunks_per_rank * world_size,
            world_size,
        }
    }

    fn produced_index(&self, g: i64) -> i64 {
        self.base + g
    }

    fn arrived_index(&self, g: i64, source: i64) -> i64 {
        self.base + self.chunks + g * self.world_size + source
    }

    fn consumed_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (1 + self.world_size) + g
    }

    fn copied_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (2 + self.world_size) + g
    }

    fn reduced_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (3 + self.world_size) + g
    }

    fn sent_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (4 + self.world_size) + g
    }

    fn gathered_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (5 + self.world_size) + g
    }

    pub(super) fn reduced(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.reduced_index(0)))
    }

    pub(super) fn sent(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.sent_index(0)))
    }

    fn arrived(&self, b: &Builder, chunk: Value, source: Value) -> Value {
        let first = b.const_i32(self.arrived_index(0, 0));
        b.addi(
            first,
            b.addi(b.muli(chunk, b.const_i32(self.world_size)), source),
        )
    }

    pub(super) fn consumed(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.consumed_index(0)))
    }

    fn copied(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.copied_index(0)))
    }
}

/// The side stream of rank `s` copies each chunk `g` of its partial that
/// rank `o` owns, in the order the kernel computes them (chunk by chunk,
/// ranks s+1, s+2, ...): once `produced[g]` reaches `epoch * n` and the
/// owner consumed the previous epoch's (`consumed[g]`), from `s`'s @P rows
/// of `g` to the same rows of slot `staging_slot(s, o)` of `o`'s
/// `@P_staging`; then the epoch into `o`'s `arrived[g * W + s]` and into
/// `s`'s `copied[g]`. A two-shot all-reduce (`gather` names its `@C`)
/// then sends each of `s`'s own chunks of sums: once `reduced[g]` reaches
/// `epoch * n`, from `s`'s `@C` rows of `g` to the same rows of every
/// peer's, the epoch into each peer's `gathered[g]`, and, after the last
/// peer, into `s`'s `sent[g]`. Without `epoch_flags` (the copy engine,
/// whose stream order guards the epochs: `Mode::guards_epochs_in_kernel`)
/// the copies neither wait for `consumed[g]` nor set `copied[g]`,
/// `sent[g]` and `gathered[g]`: no kernel waits for the sums, and the
/// runtime ends each peer's launch after the side streams that send it
/// sums (`FusedPlan::sources_ordered_by_streams`).
fn record_copies(
    plan: &Plan,
    range: &FlagRange,
    tiles_per_chunk: i64,
    block_bytes: i64,
    row_bytes: i64,
    gather: Option<&str>,
    epoch_flags: bool,
) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let flags = CeFlags::new(range, w);
    let chunk_bytes = range.rows_per_chunk * row_bytes;
    let per_rank: Vec<Vec<ReductionCopy>> = (0..w)
        .map(|s| {
            let partials = (0..range.chunks_per_rank)
                .flat_map(|c| (1..w).map(move |k| (c, (s + k) % w)))
                .map(|(c, o)| {
                    let g = o * range.chunks_per_rank + c;
                    let rows = c * range.rows_per_chunk;
                    let slot = crate::plan::staging_slot(s, o, w);
                    ReductionCopy {
                        src_buffer: range.buffer.clone(),
                        dst_buffer: crate::plan::staging_name(&range.buffer),
                        owner: o,
                        src_offset: o * block_bytes + rows * row_bytes,
                        dst_offset: slot * block_bytes + rows * row_bytes,
                        bytes: chunk_bytes,
                        produced: (flags.produced_index(g), tiles_per_chunk),
                        consumed: epoch_flags.then(|| (flags.consumed_index(g), tiles_per_chunk)),
                        arrived: Some(flags.arrived_index(g, s)),
                        copied: epoch_flags.then(|| flags.copied_index(g)),
                        rows: None,
                    }
                });
            let sums = gather.into_iter().flat_map(move |out| {
                (0..range.chunks_per_rank).flat_map(move |c| {
                    let g = s * range.chunks_per_rank + c;
                    (1..w).map(move |k| {
                        let offset = g * chunk_bytes;
                        ReductionCopy {
                            src_buffer: out.to_string(),
                            dst_buffer: out.to_string(),
                            owner: (s + k) % w,
                            src_offset: offset,
                            dst_offset: offset,
                            bytes: chunk_bytes,
                            produced: (flags.reduced_index(g), tiles_per_chunk),
                            consumed: None,
                            arrived: epoch_flags.then(|| flags.gathered_index(g)),
                            copied: (epoch_flags && k == w - 1).then(|| flags.sent_index(g)),
                            rows: None,
                        }
                    })
                })
            });
            partials.chain(sums).collect()
        })
        .collect();
    records::record_reduction_copies(plan, &per_rank)
}
