//! The index arithmetic of `chunk-reorder-tiles`' orders: a tile or chunk
//! index rotated to start at this rank's block (forwards or backwards),
//! walked through zigzag half-blocks, or interleaved across the peers'
//! chunks.

use synco_ir::{self as ir, Builder, Op, Value, builder::Cmp};

/// Index `t` of `all` chunks held in zigzag half-blocks (`per_rank / 2`
/// chunks each; rank `o` holds half-blocks `o` and `2W - 1 - o`), walked
/// in two passes, each one rotation of the rows (so that a present path
/// walks them in four runs of rows, passes/docs/zigzag-order.md): first
/// the low half-blocks from this rank's, `h = (rank + s) mod W` at step
/// `s = t / (per_rank / 2)`; then the high ones from rank `rank - 1`'s,
/// `h = W + (s - rank) mod W` at step `s` of the second pass. Returns the
/// op of the new index.
pub(super) fn zigzag_rotate(b: &Builder, t: Value, rank: Value, per_rank: i64, all: i64) -> Op {
    let c = |v: i64| b.const_i32(v);
    let world = all / per_rank.max(1);
    let per_half = (per_rank / 2).max(1);
    let low_chunks = world * per_half;
    let high = b.cmpi(Cmp::Sge, t, c(low_chunks));
    let in_pass = b.select(high, b.subi(t, c(low_chunks)), t);
    let step = b.divsi(in_pass, c(per_half));
    let within = b.remsi(in_pass, c(per_half));
    let shift = b.select(high, b.subi(c(world), rank), rank);
    let first_half_block = b.select(high, c(world), c(0));
    let half = b.addi(first_half_block, b.remsi(b.addi(step, shift), c(world)));
    let index = b.addi(b.muli(half, c(per_half)), within);
    ir::defining_op(index).expect("an op result")
}

/// `(t + (rank + first_block) * per_rank) mod all`; returns the value and
/// its op.
pub(super) fn rotate(
    b: &Builder,
    t: Value,
    rank: Value,
    first_block: i64,
    per_rank: i64,
    all: i64,
) -> Op {
    let block = if first_block == 0 {
        rank
    } else {
        b.addi(rank, b.const_i32(first_block))
    };
    let shift = b.muli(block, b.const_i32(per_rank));
    let rotated = b.remsi(b.addi(t, shift), b.const_i32(all));
    ir::defining_op(rotated).expect("an op result")
}

/// Index `t` of `all` (blocks of `per_rank`) walked from this rank's block
/// backwards: block `(rank - t / per_rank) mod W`, the same index within
/// it. Returns the op of the new index.
pub(super) fn rotate_back(b: &Builder, t: Value, rank: Value, per_rank: i64, all: i64) -> Op {
    let c = |v: i64| b.const_i32(v);
    let blocks = all / per_rank.max(1);
    let step = b.divsi(t, c(per_rank));
    let within = b.remsi(t, c(per_rank));
    let owner = b.remsi(b.subi(b.addi(rank, c(blocks)), step), c(blocks));
    let index = b.addi(b.muli(owner, c(per_rank)), within);
    ir::defining_op(index).expect("an op result")
}

/// The interleaved order of [`Order::Interleave`]: dispatch slot
/// `j = t / tiles_per_chunk` runs, with `S = W - 1` and `n` chunks per rank,
/// chunk 0 of block `rank + j + 1` for `j < S`; then, for `q = (j - S) /
/// (S + 1)` and `i = (j - S) % (S + 1)`: chunk `q + 1` of block
/// `rank + i + 1` for `i < S`, own chunk `q` for `i = S`; the last slot is
/// own chunk `n - 1`. Returns the op of the new row tile index.
pub(super) fn interleave(
    b: &Builder,
    t: Value,
    rank: Value,
    world_size: i64,
    chunks_per_rank: i64,
    tiles_per_chunk: i64,
) -> Op {
    let c = |v: i64| b.const_i32(v);
    let peers = world_size - 1;
    let slot = b.divsi(t, c(tiles_per_chunk));
    let within = b.remsi(t, c(tiles_per_chunk));
    let after_first = b.subi(slot, c(peers));
    let q = b.divsi(after_first, c(peers + 1));
    let i = b.remsi(after_first, c(peers + 1));
    let in_first = b.cmpi(Cmp::Slt, slot, c(peers));
    let is_last = b.cmpi(Cmp::Sge, q, c(chunks_per_rank - 1));
    let is_peer = b.cmpi(Cmp::Slt, i, c(peers));
    // Blocks counted from this rank (0 = own) and chunks within them.
    let steady_block = b.select(is_peer, b.addi(i, c(1)), c(0));
    let steady_chunk = b.select(is_peer, b.addi(q, c(1)), q);
    let later_block = b.select(is_last, c(0), steady_block);
    let later_chunk = b.select(is_last, c(chunks_per_rank - 1), steady_chunk);
    let block = b.select(in_first, b.addi(slot, c(1)), later_block);
    let chunk = b.select(in_first, c(0), later_chunk);
    let owner = b.remsi(b.addi(rank, block), c(world_size));
    let row_tile = b.addi(
        b.muli(owner, c(chunks_per_rank * tiles_per_chunk)),
        b.addi(b.muli(chunk, c(tiles_per_chunk)), within),
    );
    ir::defining_op(row_tile).expect("an op result")
}
