//! Ring slots: a gathered buffer whose blocks a ring delivers one per
//! step, kept in two slots instead of one place per block
//! (`chunk.all_gather ... algorithm(ring) slots(2)`, recorded on the
//! buffer as [`SLOTS_ATTR`]).
//!
//! The plan, its transfers and the kernel's addresses stay those of the
//! whole gathered buffer (`W` blocks along dimension 0, the *logical*
//! buffer). What a rank holds is three blocks (the *physical* buffer): its
//! own block, then slot 0 and slot 1. At ring step `s` rank `r` reads block
//! `(r + s) mod W`: its own at step 0, then the block the ring (each rank
//! receiving from `r + 1`) delivered in the step before, in slot `s mod 2`.
//! The fused kernel runs once per step; its launch `s` copies the block of
//! step `s + 1` into the neighbour's other slot, which the neighbour's
//! launch `s - 1` was the last to read.

/// Discardable attribute on a `chunk.buffer`: the slots its gathered
/// blocks rotate through (2), set by `chunk-expand-collectives` from
/// `slots(n)`.
pub const SLOTS_ATTR: &str = "chunk.slots";

/// Discardable unit attribute on the op of a slotted kernel's body that
/// computes its ring step, `(epoch - 1) mod W` (`chunk-reorder-tiles`).
pub const RING_STEP_ATTR: &str = "chunk.ring_step";

/// Discardable attribute on a `tt.func` that runs once per ring step: the
/// bytes of state each program keeps between the launches (what its loop
/// carries), for the launch manifest.
pub const STEP_STATE_BYTES_ATTR: &str = "chunk.step_state_bytes";

use synco_ir::{Builder, Value, builder::Cmp};

/// The only slot count built: one block computed on while the next lands.
pub const RING_SLOTS: i64 = 2;

/// Where a slotted buffer's blocks live, for `world` ranks with blocks of
/// `block_rows` rows of dimension 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRing {
    pub world: i64,
    pub block_rows: i64,
}

impl SlotRing {
    /// The ring over `shape` (the logical buffer, dimension 0 gathered) of
    /// `world` ranks; `None` where dimension 0 does not split in `world`
    /// blocks.
    pub fn new(shape: &[i64], world: i64) -> Option<SlotRing> {
        let rows = *shape.first()?;
        (world > 1 && rows % world == 0).then_some(SlotRing {
            world,
            block_rows: rows / world,
        })
    }

    /// Blocks each rank holds: its own and the slots.
    pub const fn physical_blocks() -> i64 {
        1 + RING_SLOTS
    }

    /// The step at which rank `rank` reads logical block `block`.
    pub fn step_of(self, rank: i64, block: i64) -> i64 {
        (block - rank).rem_euclid(self.world)
    }

    /// The logical block rank `rank` reads at `step` (the inverse of
    /// [`SlotRing::step_of`]).
    pub fn block_at(self, rank: i64, step: i64) -> i64 {
        (rank + step).rem_euclid(self.world)
    }

    /// [`SlotRing::step_of`] built with `b`, from values in `[0, W)`.
    pub fn step_of_value(self, b: &Builder, rank: Value, block: Value) -> Value {
        let world = b.const_i32(self.world);
        b.remsi(b.subi(b.addi(block, world), rank), world)
    }

    /// [`SlotRing::block_at`] built with `b`, from values in `[0, W)`.
    pub fn block_at_value(self, b: &Builder, rank: Value, step: Value) -> Value {
        b.remsi(b.addi(step, rank), b.const_i32(self.world))
    }

    /// The physical block holding what a rank reads at `step`: its own
    /// (0) at step 0, then slot `step mod 2` (1 + that).
    pub fn physical_block(step: i64) -> i64 {
        if step == 0 { 0 } else { 1 + step % RING_SLOTS }
    }

    /// The physical row of logical row `row` on rank `rank`.
    pub fn physical_row(self, rank: i64, row: i64) -> i64 {
        let block = row / self.block_rows;
        Self::physical_block(self.step_of(rank, block)) * self.block_rows + row % self.block_rows
    }

    /// The ring step a launch runs, built with `b` from its `epoch`:
    /// `(epoch - 1) mod W` (a call of the operation is W launches, epochs
    /// counting them).
    pub fn step_value(self, b: &Builder, epoch: Value) -> Value {
        b.remsi(b.subi(epoch, b.const_i32(1)), b.const_i32(self.world))
    }

    /// [`SlotRing::physical_block`] of the step `step`, built with `b`.
    pub fn physical_block_value(b: &Builder, step: Value) -> Value {
        let slot = b.addi(b.const_i32(1), b.remsi(step, b.const_i32(RING_SLOTS)));
        let own = b.cmpi(Cmp::Eq, step, b.const_i32(0));
        b.select(own, b.const_i32(0), slot)
    }

    /// Rows of the physical buffer.
    pub fn physical_rows(self) -> i64 {
        Self::physical_blocks() * self.block_rows
    }

    /// The ring step whose launch makes a copy of `elements` elements
    /// (rows of `row_elems`) from `src` to `dst` (each a rank and the
    /// copy's first element's offsets in the logical buffer): the step
    /// before its destination reads it. Else why the slots cannot hold it:
    /// not a whole block moved into its own place, or not from the rank
    /// that read the block the step before (the ring's neighbour `r + 1`,
    /// whose slot of that step no launch overwrites before this copy).
    pub fn copy_step(
        self,
        (src_rank, src_off): (i64, &[i64]),
        (dst_rank, dst_off): (i64, &[i64]),
        (elements, row_elems): (Option<i64>, i64),
    ) -> Result<i64, String> {
        let whole_rows = |off: &[i64]| off.iter().skip(1).all(|o| *o == 0);
        let (src_row, dst_row) = (src_off[0], dst_off[0]);
        if elements != self.block_rows.checked_mul(row_elems)
            || !whole_rows(src_off)
            || !whole_rows(dst_off)
            || src_row != dst_row
            || dst_row % self.block_rows != 0
        {
            let rows = elements.map_or(0, |e| e / row_elems.max(1));
            return Err(format!(
                "ring slots take whole blocks of {} rows, each into the place it has in the gathered buffer; this transfer moves {rows} rows from row {src_row} to row {dst_row}",
                self.block_rows
            ));
        }
        let block = dst_row / self.block_rows;
        let read_at = self.step_of(dst_rank, block);
        if read_at == 0 || self.step_of(src_rank, block) != read_at - 1 {
            return Err(format!(
                "rank {dst_rank} reads block {block} at ring step {read_at}, so it must come from rank {}, which read it the step before (the ring's neighbour r + 1); this transfer brings it from rank {src_rank}",
                (dst_rank + 1).rem_euclid(self.world)
            ));
        }
        Ok(read_at - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_reads_the_block_the_ring_brought() {
        let ring = SlotRing::new(&[16, 4], 4).unwrap();
        assert_eq!(ring.block_rows, 4);
        // Rank 1: own block 1 at step 0, then 2, 3, 0.
        let steps: Vec<i64> = (0..4).map(|b| ring.step_of(1, b)).collect();
        assert_eq!(steps, [3, 0, 1, 2]);
        let blocks: Vec<i64> = (0..4).map(|s| ring.block_at(1, s)).collect();
        assert_eq!(blocks, [1, 2, 3, 0]);
        // Physical blocks of steps 0..4: own, slot 1, slot 0, slot 1.
        let places: Vec<i64> = (0..4).map(SlotRing::physical_block).collect();
        assert_eq!(places, [0, 2, 1, 2]);
        // Row 13 (block 3, read at step 2 by rank 1: slot 0).
        assert_eq!(ring.physical_row(1, 13), 4 + 1);
        assert_eq!(ring.physical_rows(), 12);
        // Rank 1 gets block 3 (read at step 2) from rank 2 at step 1; not
        // from its owner, nor from the other neighbour, nor in part.
        assert_eq!(
            ring.copy_step((2, &[12, 0]), (1, &[12, 0]), (Some(16), 4)),
            Ok(1)
        );
        for wrong_source in [3, 0] {
            assert!(
                ring.copy_step((wrong_source, &[12, 0]), (1, &[12, 0]), (Some(16), 4))
                    .is_err()
            );
        }
        assert!(
            ring.copy_step((2, &[12, 0]), (1, &[12, 0]), (Some(8), 4))
                .is_err()
        );
        assert_eq!(SlotRing::new(&[15, 4], 4), None);
        assert_eq!(SlotRing::new(&[16], 1), None);
    }
}
