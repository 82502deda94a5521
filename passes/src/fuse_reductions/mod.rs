//! `chunk-fuse-reductions`: fuse a reduce-scatter, or a one-shot
//! all-reduce, into the GEMM tiles that produce its partials.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkFuseReductions` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).
//!
//! This file holds the pass itself, the transports (`Mode`), how a
//! reduce-scatter's tiles split between owner and peers, and the flag and
//! pointer helpers the fused code (and `chunk-fuse-gathers`, the copy
//! programs of `chunk-lower-transfers`) builds from. The rest, by concern:
//! `layout.rs`, the refusals before any code is built; `site.rs`, what one
//! reduction needs of the plan and the kernel; `epilogue.rs`, the owner's
//! sum; `push_pull.rs`, partials moved by SM stores or loads; `staged.rs`,
//! partials moved through the owner's staging buffer (the copy engine, or
//! copy programs with `mode=stage`); `all_reduce.rs`, the one-shot
//! all-reduce and the two-shot's end in the kernel.

mod all_reduce;
mod epilogue;
mod layout;
mod push_pull;
mod site;
mod staged;

use crate::{
    abi::AbiArgs,
    checked,
    plan::{
        FlagKind, FlagRange, MAX_RANK_COPIES, Plan, Transfer, bound_kernel, fail, flag_layout,
        internal, loc, plans, relayout_flags,
    },
};
use melior::ir::operation::OperationRef;
use site::Site;
use staged::CeFlags;
use synco_chunk::passes::{ChunkFuseReductionsOptions, PassOptions, ReductionMode, RustPass};
use synco_chunk::{Diagnostic, PassFailed, attrs};
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

/// The body of `chunk-fuse-reductions`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkFuseReductionsOptions;

    fn run(module: OperationRef, options: &ChunkFuseReductionsOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkFuseReductionsOptions::ARGUMENT;

/// How partials reach their owner (the pass option `mode`, or the copy
/// engine when the reduce-scatter's backend is `copy_engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Push,
    Pull,
    CopyEngine,
    /// Staged like `CopyEngine`, moved by SM copy programs.
    Stage,
}

impl Mode {
    /// Partials travel through the owner's staging buffer: tiles store and
    /// count them locally, and something else moves each finished chunk.
    fn staged(self) -> bool {
        matches!(self, Mode::CopyEngine | Mode::Stage)
    }

    /// The kernel itself keeps one epoch's chunks from overwriting the
    /// previous epoch's before they were moved or read (the `consumed`,
    /// `copied` and `sent` flags). On the copy engine the runtime's stream
    /// order does it instead (a rank's copies wait for the owners' previous
    /// launch, its next kernel for its previous launch's copies), so those
    /// flags are neither waited for nor bumped.
    fn guards_epochs_in_kernel(self) -> bool {
        !matches!(self, Mode::CopyEngine)
    }
}

fn run(module: OperationRef, options: &ChunkFuseReductionsOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let mode = match options.mode {
        ReductionMode::Push => Mode::Push,
        ReductionMode::Pull => Mode::Pull,
        ReductionMode::Stage => Mode::Stage,
    };
    for plan in plans(module) {
        let reducing: Vec<Transfer> = plan
            .transfers()
            .into_iter()
            .filter(|t| t.reduces())
            .collect();
        if reducing.is_empty() {
            continue;
        }
        for t in &reducing {
            layout::check_fusable(*t)?;
        }
        layout::check_layout(&plan, &reducing)?;
        let (kernel, abi) = bound_kernel(&plan, module, NAME)?;
        // Bulk copies move partials only from the copy programs.
        let by_tma = reducing
            .iter()
            .any(|t| !t.is_local() && t.backend() == Some(attrs::Backend::Tma));
        let mode = if by_tma { Mode::Stage } else { mode };
        if mode == Mode::Stage {
            staged::stage(&plan, kernel, &reducing)?;
            // Staged partials take more counters per chunk.
            relayout_flags(&plan)?;
        }
        for range in flag_layout(&plan)?
            .into_iter()
            .filter(|r| r.kind == FlagKind::Reduction)
        {
            // A transfer of this partial: it names the reduction's output.
            let transfer = reducing
                .iter()
                .copied()
                .find(|t| t.src_buffer().as_deref() == Some(range.buffer.as_str()))
                .ok_or_else(|| internal(plan.op, "a reduction range without its transfers"))?;
            fuse(&plan, kernel, abi, &range, transfer, mode)?;
        }
        // A two-shot all-reduce's gathering transfers move the sums the
        // owners now push themselves.
        let gathers = crate::plan::two_shot_gathers(&plan);
        for t in reducing.into_iter().chain(gathers) {
            crate::plan::records::mark_fused(t);
        }
    }
    Ok(())
}

/// Fuses the reduction of `range`'s partials, which `transfer` (one of its
/// reducing transfers) names the output of.
fn fuse(
    plan: &Plan,
    kernel: Op,
    abi: AbiArgs,
    range: &FlagRange,
    transfer: Transfer,
    mode: Mode,
) -> Result<(), PassFailed> {
    let site = Site::resolve(plan, kernel, abi, range, transfer, mode)?;
    check_recorded_copies(&site, transfer)?;
    if site.buffers.all_reduce() {
        return all_reduce::fuse_one_shot(&site, kernel, transfer);
    }
    fuse_scatter(&site)
}

/// A staged reduction records a copy per chunk, source and owner (twice
/// for a two-shot all-reduce, whose sums go back to every peer): refused
/// above [`MAX_RANK_COPIES`] before any is listed.
fn check_recorded_copies(site: &Site, transfer: Transfer) -> Result<(), PassFailed> {
    if !site.mode.staged() || site.buffers.all_reduce() {
        return Ok(());
    }
    let w = site.world_size;
    let copies = checked::product(
        &[
            w,
            w - 1,
            site.range.chunks_per_rank,
            if site.buffers.two_shot() { 2 } else { 1 },
        ],
        transfer,
        "the staged reduction's copies",
    )?;
    if copies > MAX_RANK_COPIES {
        return Err(fail(
            transfer,
            format!(
                "{NAME}: the staged reduction of @{} records {copies} copies ({} chunks per rank, {w} ranks): \
                 more than {MAX_RANK_COPIES} per-rank copies; use fewer chunks or ranks",
                site.range.buffer, site.range.chunks_per_rank
            ),
        ));
    }
    Ok(())
}

/// The chunk a reduce-scatter's tile belongs to, and its flags.
struct TileChunk {
    /// The chunk's index among all `W * chunks_per_rank`.
    chunk: Value,
    /// The rank whose block holds the chunk, which sums it.
    owner: Value,
    /// The chunk's reduction counter (`range.base + chunk`).
    flag: Value,
    /// The staged transports' flags.
    ce: CeFlags,
}

/// A reduce-scatter (alone, or a two-shot all-reduce's first phase): a
/// tile in a chunk this rank owns adds every rank's partial and stores
/// the sum ([`epilogue::emit_own_rows`]); any other tile hands its partial
/// to the chunk's owner, as the transport does.
fn fuse_scatter(site: &Site) -> Result<(), PassFailed> {
    let (abi, range) = (site.abi, site.range);
    let (produce, store) = (site.buffers.produce, site.tile.store);
    let b = Builder::before(store).with_loc(ir::location_of(produce.0));
    let t = ir::result(site.tile.marked, 0);
    let chunk = b.divsi(
        b.muli(t, b.const_i32(site.buffers.tile)),
        b.const_i32(range.rows_per_chunk),
    );
    let owner = b.divsi(chunk, b.const_i32(range.chunks_per_rank));
    let flag = b.addi(chunk, b.const_i32(range.base));
    let own = b.cmpi(Cmp::Eq, owner, abi.rank);
    let (_, own_block, peer_block) = b.if_else(own);
    let yield_of = |block| ir::ops_in(block).last().copied();

    // Own rows: pull, reduce in rank order, store into the output block.
    let own_yield =
        yield_of(own_block).ok_or_else(|| internal(store, "an scf.if without yield"))?;
    let ob = Builder::before(own_yield).with_loc(ir::location_of(produce.0));
    let tile_chunk = TileChunk {
        chunk,
        owner,
        flag,
        ce: CeFlags::new(range, site.world_size),
    };
    epilogue::emit_own_rows(site, &ob, &tile_chunk)?;

    // Other ranks' rows: the kernel's own store, between an acknowledgement
    // of the previous epoch and an arrival at the owner.
    let peer_yield =
        yield_of(peer_block).ok_or_else(|| internal(store, "an scf.if without yield"))?;
    let pb = Builder::before(peer_yield).with_loc(ir::location_of(produce.0));
    match site.mode {
        Mode::Push | Mode::Pull => push_pull::emit_peer_rows(site, &pb, peer_yield, &tile_chunk),
        Mode::CopyEngine | Mode::Stage => {
            staged::emit_peer_rows(site, &pb, peer_yield, &tile_chunk)?
        }
    }
    remark_scatter(site);
    Ok(())
}

/// The remark that says how a reduce-scatter's tiles were fused.
fn remark_scatter(site: &Site) {
    let (mode, range, w) = (site.mode, site.range, site.world_size);
    let tiles_per_chunk = site.tile.tiles_per_chunk;
    let (name, out_name) = (site.buffers.name, &site.buffers.out_name);
    let how = match mode {
        Mode::CopyEngine => {
            "other rows store their partial and count it; the copy engine moves each finished chunk to its owner; own rows add"
        }
        Mode::Stage => {
            "other rows store their partial and count it; the kernel's copy programs move each finished chunk to its owner; own rows add"
        }
        Mode::Push => {
            "other rows push their partial into the owner's @P and arrive at its counter; own rows add"
        }
        Mode::Pull => {
            "other rows store their partial and arrive at the owner's counter; own rows pull and add"
        }
    };
    Diagnostic::remark(
        loc(site.buffers.produce),
        format!(
            "tiles of @{name} reduce into @{out_name}: {how} {} peer partial(s) per tile after {} per chunk \
             (counters {}..{}, {tiles_per_chunk} tiles per chunk)",
            w - 1,
            if mode == Mode::CopyEngine {
                format!("{} copy-engine flag(s)", w - 1)
            } else if mode == Mode::Stage {
                format!("{} copy-program flag(s)", w - 1)
            } else {
                format!("{} arrivals", (w - 1) * tiles_per_chunk)
            },
            range.base,
            range.base + range.count(w)
        ),
    )
    .emit();
}

/// How many elements of `element_bytes` each buffer `to` starts after buffer
/// `from` (an `i64`; both are kernel arguments).
fn elements_between(b: &Builder, from: Value, to: Value, element_bytes: i64) -> Value {
    b.divsi(
        b.subi(b.ptr_to_int(to), b.ptr_to_int(from)),
        b.const_i64(element_bytes),
    )
}

/// A `tt.store` under the kernel store's mask, if it had one.
fn store_under(b: &Builder, ptrs: Value, value: Value, mask: Option<Value>) {
    match mask {
        Some(m) => b.store_masked(ptrs, value, m),
        None => b.store(ptrs, value),
    };
}
