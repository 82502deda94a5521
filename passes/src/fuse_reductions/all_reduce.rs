//! The all-reduce specifics of `chunk-fuse-reductions`: a one-shot
//! all-reduce, whose every tile pushes its partial to every peer and adds
//! theirs ([`fuse_one_shot`]), and the end of a two-shot all-reduce on SMs
//! in the kernel ([`wait_for_peers_sums`]; its first phase is a
//! reduce-scatter).

use super::{
    elements_between,
    epilogue::rank_ordered_sum,
    site::{Buffers, Site, TileStore},
    store_under,
};
use crate::{
    abi::{AbiArgs, buffer_arg},
    flag_ops::{arrive, count_one, peer_ptr, wait},
    plan::{FlagRange, Transfer, fail, loc},
};
use synco_chunk::{Diagnostic, PassFailed};
use synco_ir::{self as ir, Builder, Op, Scope, Value, builder::Cmp};

/// Fuses the one-shot all-reduce of `site` (`transfer` is one of its
/// transfers): with more than two ranks, peers' partials beyond the first
/// land in `@P_staging`, which must be a kernel argument.
pub(super) fn fuse_one_shot(site: &Site, kernel: Op, transfer: Transfer) -> Result<(), PassFailed> {
    let (w, name) = (site.world_size, site.buffers.name);
    // Peers' partials beyond the first land in the staging buffer.
    let staging = if w > 2 {
        let staging = crate::plan::staging_name(name);
        Some(buffer_arg(kernel, &staging).ok_or_else(|| {
                fail(
                    transfer,
                    format!(
                        "chunk-fuse-reductions: a one-shot all-reduce of {w} ranks stages peers' partials in @{staging}, which is not a kernel argument; run chunk-expand-collectives and chunk-bind-kernel first"
                    ),
                )
            })?)
    } else {
        None
    };
    fuse_all_reduce(site, staging)
}

/// Most tiles one all-reduce chunk may have: every tile of a chunk waits
/// for the peers' same chunk, so they must all be resident at once (one
/// program per SM on 132 SMs, with some room).
const MAX_ALL_REDUCE_CHUNK_TILES: i64 = 128;

/// One-shot all-reduce, every tile (the kernel's own order, the same on
/// every rank). Source `s`'s partial lands on rank `r` in slot
/// `(s - r - 1) mod W` ([`crate::plan::staging_slot`]): slot 0 is `r`'s own
/// `@P`, which a one-shot all-reduce never stores into, slot `k > 0` copy
/// `k - 1` of `@P_staging`. With `n` tiles per chunk:
///
/// ```mlir
/// chunk.wait %flags[G + g], %epoch - 1 count((W - 1) * n) // peers read my last pushes
/// tt.store peer_ptr(slot(rank, s) of %ptrs, s), %v       // for every peer s
/// chunk.arrive peer_ptr(%flags, s)[g]
/// chunk.wait %flags[g], %epoch count((W - 1) * n)        // every peer's pushes of chunk g
/// tt.store %c_ptrs, truncf(x_0 + ... + x_{W-1})          // rank order, f32
/// chunk.arrive peer_ptr(%flags, s)[G + g]                // consumed, for every peer s
/// ```
fn fuse_all_reduce(site: &Site, staging: Option<Value>) -> Result<(), PassFailed> {
    let (abi, range, world_size) = (site.abi, site.range, site.world_size);
    let Buffers {
        name,
        produce,
        tile,
        p_arg,
        rows,
        cols,
        ref out_name,
        out_ptr,
        element_bytes,
        ..
    } = site.buffers;
    let TileStore {
        marked,
        store,
        ptrs,
        value,
        mask,
        ref shape,
        tiles_per_chunk,
        element,
    } = site.tile;
    let partial_elems = rows * cols;
    if tiles_per_chunk > MAX_ALL_REDUCE_CHUNK_TILES {
        return Err(fail(
            produce,
            format!(
                "chunk-fuse-reductions: all-reduce chunks of {} rows hold {tiles_per_chunk} tiles, more than the {MAX_ALL_REDUCE_CHUNK_TILES} that can wait for the peers at once: the kernel would deadlock; use chunks of {tile} rows",
                range.rows_per_chunk
            ),
        ));
    }
    let b = Builder::before(store).with_loc(ir::location_of(produce.0));
    let chunks = range.chunks_per_rank * world_size;
    let t = ir::result(marked, 0);
    let chunk = b.divsi(
        b.muli(t, b.const_i32(tile)),
        b.const_i32(range.rows_per_chunk),
    );
    let arrival = b.addi(chunk, b.const_i32(range.base));
    let ack = b.addi(chunk, b.const_i32(range.base + chunks));
    let peers_tiles = (world_size - 1) * tiles_per_chunk;
    let slots = Slots {
        ptrs,
        p_arg,
        staging,
        partial_elems,
        element_bytes,
        world_size,
    };
    // Push this rank's partial into every peer's slot for it, once the
    // peers have read the previous epoch's.
    let previous = b.subi(abi.epoch, b.const_i32(1));
    wait(&b, abi, ack, previous, peers_tiles);
    for s in 0..world_size {
        let peer = b.const_i32(s);
        b.if_then(b.cmpi(Cmp::Ne, abi.rank, peer), |ib| {
            let remote = peer_ptr(&ib, slots.of(&ib, abi.rank, peer, shape), peer);
            store_under(&ib, remote, value, mask);
            arrive(&ib, peer_ptr(&ib, abi.flags, peer), arrival);
        });
    }
    // Every peer's partial of this chunk, pushed into this rank's slots.
    wait(&b, abi, arrival, abi.epoch, peers_tiles);
    // Added in rank order on every rank, so all get the same bits.
    let sum = rank_ordered_sum(&b, abi, store, value, mask, world_size, |_, source| {
        slots.of(&b, source, abi.rank, shape)
    })?;
    let sum = b.convert_float(sum, element);
    // @C has @P's shape: the same rows, another buffer.
    let between = elements_between(&b, p_arg, out_ptr, element_bytes);
    b.assume_multiple_of(between, 16);
    let out_ptrs = b.addptr(ptrs, b.splat(between, shape));
    store_under(&b, out_ptrs, sum, mask);
    for s in 0..world_size {
        let peer = b.const_i32(s);
        b.if_then(b.cmpi(Cmp::Ne, abi.rank, peer), |ib| {
            arrive(&ib, peer_ptr(&ib, abi.flags, peer), ack);
        });
    }
    ir::erase(store);
    Diagnostic::remark(
        loc(produce),
        format!(
            "tiles of @{name} all-reduce into @{out_name}: every tile pushes its partial to {} and adds theirs, in rank order, after {peers_tiles} arrivals per chunk (counters {}..{}{})",
            if world_size == 2 {
                "the peer".to_string()
            } else {
                format!("the {} peers", world_size - 1)
            },
            range.base,
            range.base + range.count(world_size),
            if staging.is_some() {
                format!(", {} peers' partials in @{}", world_size - 2, crate::plan::staging_name(name))
            } else {
                String::new()
            }
        ),
    )
    .emit();
    Ok(())
}

/// Where a one-shot all-reduce's partials land: the kernel's pointers into
/// `@P`, moved to the same elements of the slot that holds source `s`'s
/// partial on rank `r`.
struct Slots {
    ptrs: Value,
    p_arg: Value,
    staging: Option<Value>,
    partial_elems: i64,
    element_bytes: i64,
    world_size: i64,
}

impl Slots {
    /// Pointers into rank `rank`'s slot for source `source` (both i32
    /// values): `@P` itself for slot 0, else `@P_staging` + (slot - 1)
    /// partials. One shift in elements through `tt.addptr`, so the
    /// accesses stay vectorised.
    fn of(&self, b: &Builder, source: Value, rank: Value, shape: &[i64]) -> Value {
        let Some(staging) = self.staging else {
            // Two ranks: the only slot is @P.
            return self.ptrs;
        };
        let w = b.const_i32(self.world_size);
        // (source - rank - 1) mod W, kept non-negative.
        let slot = b.remsi(
            b.addi(b.subi(source, rank), b.const_i32(self.world_size - 1)),
            w,
        );
        let into_staging = b.addi(
            elements_between(b, self.p_arg, staging, self.element_bytes),
            b.muli(
                b.to_i64(b.subi(slot, b.const_i32(1))),
                b.const_i64(self.partial_elems),
            ),
        );
        let shift = b.select(
            b.cmpi(Cmp::Eq, slot, b.const_i32(0)),
            b.const_i64(0),
            into_staging,
        );
        if self.partial_elems % 16 == 0 {
            b.assume_multiple_of(shift, 16);
        }
        b.addptr(self.ptrs, b.splat(shift, shape))
    }
}

/// A two-shot all-reduce on SMs ends in its kernel: the owner's tiles of
/// each of its chunks count themselves done (once their sums are sent) on
/// the chunk's `finished` counter, and the chunk's last tile of the launch
/// waits until every peer's chunk of the same index within its block has
/// all its sums here (its `gathered` counter at `epoch * tiles_per_chunk`),
/// so the kernel is over only once every peer's sums have arrived. A stream
/// wait after the kernel (`chunk.completion`) did the same at about 3 us
/// more per launch (benches/fused/README.md).
///
/// Only the chunk's last tile waits, after its own sums are out: no tile
/// holds its SM while tiles of its rank that a peer's sums depend on (its
/// partials, which come first in the tile order) still have to run. With a
/// persistent kernel a waiting program's later tiles (own chunks of a
/// higher index) wait too; the waits still cannot form a cycle, since the
/// last tile of chunk `i` waits only for peers' chunks `i`, whose tiles
/// follow no wait of a higher index.
pub(super) fn wait_for_peers_sums(
    b: &Builder,
    abi: AbiArgs,
    range: &FlagRange,
    chunk: Value,
    tiles_per_chunk: i64,
    w: i64,
) {
    let chunks = range.chunks_per_rank * w;
    let finished = b.addi(chunk, b.const_i32(range.base + 2 * chunks));
    let done = count_one(b, abi.flags, finished, Scope::Gpu);
    let last = b.cmpi(
        Cmp::Eq,
        done,
        b.muli(abi.epoch, b.const_i32(tiles_per_chunk)),
    );
    b.if_then(last, |lb| {
        let within = lb.remsi(chunk, lb.const_i32(range.chunks_per_rank));
        for s in 0..w {
            let peer = lb.const_i32(s);
            lb.if_then(lb.cmpi(Cmp::Ne, abi.rank, peer), |pb| {
                let theirs = pb.addi(pb.muli(peer, pb.const_i32(range.chunks_per_rank)), within);
                let gathered = pb.addi(theirs, pb.const_i32(range.base + chunks));
                wait(&pb, abi, gathered, abi.epoch, tiles_per_chunk);
            });
        }
    });
}
