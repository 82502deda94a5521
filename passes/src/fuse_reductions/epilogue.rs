//! The owner's side of a reduce-scatter's chunk (and of a two-shot
//! all-reduce's first phase): wait for the peers' partials, add every
//! rank's in rank order, store the sum into `@C`; then, as the transport
//! needs, send the sums on and tell the peers that their partials were
//! read.

use super::{
    Mode, TileChunk, all_reduce::wait_for_peers_sums, elements_between, push_pull, site::Site,
    staged, store_under,
};
use crate::{
    abi::AbiArgs,
    flag_ops::{arrive, peer_ptr, wait},
    plan::internal,
};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

/// Own rows: pull, reduce in rank order, store into the output block
/// (`ob` builds in the branch of the tiles this rank owns).
pub(super) fn emit_own_rows(site: &Site, ob: &Builder, at: &TileChunk) -> Result<(), PassFailed> {
    let (abi, mode, w) = (site.abi, site.mode, site.world_size);
    let (store, value, mask) = (site.tile.store, site.tile.value, site.tile.mask);
    if mode.staged() {
        staged::wait_for_partials(site, ob, at);
    } else {
        push_pull::wait_for_partials(site, ob, at);
    }
    let sum = rank_ordered_sum(ob, abi, store, value, mask, w, |s, peer| match mode {
        // Copied into this rank's staging buffer, in source s's slot.
        Mode::CopyEngine | Mode::Stage => staged::partial_in_staging(site, ob, s),
        // Pushed into this rank's @P, in the rows of block s.
        Mode::Push => push_pull::pushed_partial(site, ob, peer),
        Mode::Pull => peer_ptr(ob, site.tile.ptrs, peer),
    })?;
    let out_ptrs = output_rows(site, ob);
    let reduced = ob.convert_float(sum, site.tile.element);
    let two_shot = site.buffers.two_shot();
    let gathered_by_copy_engine = two_shot && mode.staged();
    let ce = &at.ce;
    if gathered_by_copy_engine && mode.guards_epochs_in_kernel() {
        // The copy programs have sent the previous epoch's sums of this chunk.
        let sent = ce.sent(ob, at.chunk);
        wait(ob, abi, sent, ob.subi(abi.epoch, ob.const_i32(1)), 1);
    }
    store_under(ob, out_ptrs, reduced, mask);
    if gathered_by_copy_engine {
        // Counted here; the side stream sends the chunk's sums once complete.
        arrive(ob, abi.flags, ce.reduced(ob, at.chunk));
    }
    to_peers(site, ob, at, out_ptrs, reduced);
    if two_shot {
        match mode {
            // The sums' copies set no flag: the runtime ends each launch
            // after the side streams that send this rank its sums.
            Mode::CopyEngine => {}
            Mode::Stage => staged::record_completion(site.plan, site.range, ce)?,
            // The kernel waits for the peers' sums itself.
            Mode::Push | Mode::Pull => {}
        }
    }
    Ok(())
}

/// Pointers into `@C` for the tile's rows of `@P`.
fn output_rows(site: &Site, ob: &Builder) -> Value {
    let abi = site.abi;
    let (p_arg, out_ptr, element_bytes) = (
        site.buffers.p_arg,
        site.buffers.out_ptr,
        site.buffers.element_bytes,
    );
    let (block, n) = (site.buffers.block, site.buffers.cols);
    // @C row = @P row - rank * block: shift every address by one offset, in
    // elements, through tt.addptr so the store stays vectorised (buffers
    // are aligned to 16 elements, rows hold a multiple of 16 elements).
    let between = elements_between(ob, p_arg, out_ptr, element_bytes);
    // (A two-shot all-reduce's @C has @P's shape: no shift by the block.)
    let shift = if site.buffers.two_shot() {
        between
    } else {
        ob.subi(
            between,
            ob.muli(ob.to_i64(abi.rank), ob.const_i64(block * n)),
        )
    };
    if n % 16 == 0 {
        ob.assume_multiple_of(shift, 16);
    }
    ob.addptr(site.tile.ptrs, ob.splat(shift, &site.tile.shape))
}

/// After the owner's store of its sums, to every peer: a two-shot
/// all-reduce's sums on SMs, and that the peer's partial was read.
fn to_peers(site: &Site, ob: &Builder, at: &TileChunk, out_ptrs: Value, reduced: Value) {
    let (abi, mode, w, range) = (site.abi, site.mode, site.world_size, site.range);
    let (mask, tiles_per_chunk) = (site.tile.mask, site.tile.tiles_per_chunk);
    let (chunk, flag, ce) = (at.chunk, at.flag, &at.ce);
    let two_shot = site.buffers.two_shot();
    let gathered_by_copy_engine = two_shot && mode.staged();
    // A two-shot all-reduce on SMs: the sum to every peer's @C too,
    // counted on its gathered-rows counter (the kernel ends when those are
    // complete, see `wait_for_peers_sums`); and every peer may overwrite
    // its partial (unless the runtime's stream order says so).
    let sums_to_peers = two_shot && !gathered_by_copy_engine;
    if sums_to_peers || mode.guards_epochs_in_kernel() {
        for s in 0..w {
            let peer = ob.const_i32(s);
            let other = ob.cmpi(Cmp::Ne, abi.rank, peer);
            ob.if_then(other, |ib| {
                let peer_flags = peer_ptr(&ib, abi.flags, peer);
                if sums_to_peers {
                    let gathered = ib.addi(flag, ib.const_i32(range.chunks_per_rank * w));
                    store_under(&ib, peer_ptr(&ib, out_ptrs, peer), reduced, mask);
                    arrive(&ib, peer_flags, gathered);
                }
                if mode.guards_epochs_in_kernel() {
                    let consumed = if mode.staged() {
                        ce.consumed(&ib, chunk)
                    } else {
                        flag
                    };
                    arrive(&ib, peer_flags, consumed);
                }
            });
        }
    }
    if sums_to_peers {
        wait_for_peers_sums(ob, abi, range, chunk, tiles_per_chunk, w);
    }
}

/// The sum in f32 of every rank's partial of the tile, added in rank order
/// (so every rank gets the same bits whatever order they arrived in): the
/// tile's own `value` for this rank, for every other rank `s` a load from
/// `partial_of(s, s as an i32 value)` (masked off on the rank itself).
pub(super) fn rank_ordered_sum(
    b: &Builder,
    abi: AbiArgs,
    store: Op,
    value: Value,
    mask: Option<Value>,
    world_size: i64,
    partial_of: impl Fn(i64, Value) -> Value,
) -> Result<Value, PassFailed> {
    let shape = ir::tensor_shape(ir::type_of(value)).unwrap_or_default();
    let f32t = ir::parse_type(b.ctx, "f32").ok_or_else(|| internal(store, "no f32 type"))?;
    let zeros = b.zeros(ir::type_of(value));
    let mut sum: Option<Value> = None;
    for s in 0..world_size {
        let source = b.const_i32(s);
        let is_me = b.splat(b.cmpi(Cmp::Eq, abi.rank, source), &shape);
        let not_me = b.splat(b.cmpi(Cmp::Ne, abi.rank, source), &shape);
        let load_mask = match mask {
            Some(m) => b.andi(m, not_me),
            None => not_me,
        };
        let theirs = b.load_masked(partial_of(s, source), load_mask, zeros);
        let x = b.convert_float(b.select(is_me, value, theirs), f32t);
        sum = Some(match sum {
            Some(acc) => b.addf(acc, x),
            None => x,
        });
    }
    sum.ok_or_else(|| internal(store, "a reduction without ranks"))
}
