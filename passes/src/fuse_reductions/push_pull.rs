//! The SM transports of a reduce-scatter's partials: with `mode=push` a
//! peer's tiles store their partial straight into the owner's `@P` (in
//! the rows of the peer's block), with `mode=pull` they store it into
//! their own `@P` and the owner loads it through the peer mapping. Either
//! way each tile arrives at the owner's counter of its chunk, and waits,
//! before it stores, until the owner read the previous epoch's partial.

use super::{Mode, TileChunk, site::Site, store_under};
use crate::flag_ops::{arrive, peer_ptr, wait};
use synco_ir::{self as ir, Builder, Op, Value};

/// The owner waits until every peer's tiles of the chunk arrived.
pub(super) fn wait_for_partials(site: &Site, ob: &Builder, at: &TileChunk) {
    let (abi, w) = (site.abi, site.world_size);
    wait(
        ob,
        abi,
        at.flag,
        abi.epoch,
        (w - 1) * site.tile.tiles_per_chunk,
    );
}

/// Where rank `source`'s pushed partial of the tile is: this rank's `@P`,
/// in the rows of block `source`.
pub(super) fn pushed_partial(site: &Site, ob: &Builder, source: Value) -> Value {
    let (block, n) = (site.buffers.block, site.buffers.cols);
    block_shift(
        ob,
        site.tile.ptrs,
        source,
        site.abi.rank,
        block * n,
        &site.tile.shape,
    )
}

/// A peer's tile (`pb` builds in its branch, before `peer_yield`): once
/// the owner read the previous epoch's partial, push it (or store it, for
/// the owner to pull) and arrive at the owner's counter.
pub(super) fn emit_peer_rows(site: &Site, pb: &Builder, peer_yield: Op, at: &TileChunk) {
    let abi = site.abi;
    let (store, ptrs, value, mask) = (
        site.tile.store,
        site.tile.ptrs,
        site.tile.value,
        site.tile.mask,
    );
    let (owner, flag) = (at.owner, at.flag);
    let (block, n) = (site.buffers.block, site.buffers.cols);
    let previous = pb.subi(abi.epoch, pb.const_i32(1));
    wait(pb, abi, flag, previous, site.tile.tiles_per_chunk);
    if site.mode == Mode::Pull {
        ir::move_before(store, peer_yield);
    } else {
        // Into the owner's @P, in the rows of this rank's block.
        let slot = block_shift(pb, ptrs, abi.rank, owner, block * n, &site.tile.shape);
        let remote = peer_ptr(pb, slot, owner);
        store_under(pb, remote, value, mask);
        ir::erase(store);
    }
    let owner_flags = peer_ptr(pb, abi.flags, owner);
    arrive(pb, owner_flags, flag);
}

/// `ptrs` moved by `(to - from)` blocks of `block_elems` elements: from a
/// row of block `from` to the same row of block `to`.
fn block_shift(
    b: &Builder,
    ptrs: Value,
    to: Value,
    from: Value,
    block_elems: i64,
    shape: &[i64],
) -> Value {
    let blocks = b.to_i64(b.subi(to, from));
    let elems = b.muli(blocks, b.const_i64(block_elems));
    b.addptr(ptrs, b.splat(elems, shape))
}
