//! The `ldst` backend of `chunk-lower-transfers`: chunks copied by SM
//! programs of the fused kernel itself.
//!
//! The kernel's 1D grid grows by `C` *copy programs*, the first `C` program
//! ids (so the hardware dispatches them first and they are always resident
//! while compute programs wait). The kernel body becomes
//!
//! ```text
//! pid = program_id(0)
//! if pid < C:   copy program pid: for every ldst transfer in schedule
//!               order, copy blocks pid, pid + C, ... of the chunk from the
//!               source rank's heap (vector loads through the peer mapping)
//!               into this rank's buffer; then count the program done on
//!               the chunk (acq_rel/sys add); the program that completes the
//!               count sets the chunk's flag to the epoch (release/sys).
//! else:         the original kernel, with program_id(0) - C and
//!               num_programs(0) - C.
//! ```
//!
//! Counters live after the flags in the flag array and grow by exactly `C`
//! every launch of the kernel, so they need no reset either: the program
//! whose increment completes a multiple of `C` is the launch's last.
//!
//! A kernel with a 2D grid keeps its program ids: the runtime launches one
//! more *copy plane* in front, `program_id(2) = 0` (dispatched first, as a
//! grid is dispatched x fastest, then y, then z), whose programs with
//! linear id `x + y * num_programs(0) < C` copy and the rest return at
//! once; the kernel runs in plane 1. The schedule records `copy_plane`.
//!
//! A block is one vector load and store of up to 32 KiB ([`copy_block`]):
//! a copy program's bandwidth over NVLink is what it has in flight.
//!
//! The same copy programs also run a staged reduction's copies
//! ([`lower_reduction_copies`]): they push finished chunks of partials (and
//! a two-shot all-reduce's sums) into their owners' buffers.
//!
//! Transfers on `tma` take the same programs, counters and flags; each
//! program moves its blocks with bulk tensor copies instead of vector loads
//! and stores ([`tma`]).
//!
//! Supported: pull transfers of chunks that are rows of one length in both
//! buffers (whole rows, as all_gather along dimension 0 produces, or a
//! re-sharding all-to-all's column boxes) whose element count is a
//! multiple of 4096, in kernels with a 1D or 2D grid.
//!
//! The code, by concern: this file holds the step size and where the copy
//! programs go; `emit.rs` the grid split that makes room for them and the
//! copy loop and completion count every copy shares; `transfers.rs` the
//! `ldst` and `tma` transfers ([`lower`]); `reductions.rs` a staged
//! reduction's copies ([`lower_reduction_copies`]); `tma.rs` the bulk
//! copies; `rank_maps.rs` the affine rank
//! maps and offsets lowered to the copy code's own arithmetic
//! ([`emit_affine`]).

mod emit;
mod rank_maps;
mod reductions;
mod tma;
mod transfers;

pub use emit::{CopySite, split_grid};
pub use rank_maps::emit_affine;
pub use reductions::lower_reduction_copies;
pub use tma::TMA_BLOCK_BYTES;
pub use transfers::lower;

use crate::plan::{AsOp, fail};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op};

/// Bytes each copy program moves per step (one vector tensor): what one
/// program keeps in flight. Over NVLink between two H200s, 16 programs
/// moved 308 GB/s in steps of 32 KiB and 109 GB/s in steps of 8 KiB
/// (`benches/fused/experiments/nvlink_sm_probe.py`): a step's latency,
/// not the SM, bounds a program.
pub const COPY_STEP_BYTES: i64 = 32 * 1024;

/// The fewest elements a step may copy.
pub const MIN_COPY_BLOCK: i64 = 4096;

/// Elements per step for a chunk of `len` elements of `element_bytes`
/// bytes: the largest power of two up to [`COPY_STEP_BYTES`] that divides
/// the chunk, if it is at least [`MIN_COPY_BLOCK`].
pub fn copy_block(len: i64, element_bytes: i64) -> Option<i64> {
    let mut block = (COPY_STEP_BYTES / element_bytes.max(1)).max(MIN_COPY_BLOCK);
    while block >= MIN_COPY_BLOCK {
        if len % block == 0 {
            return Some(block);
        }
        block /= 2;
    }
    None
}

/// Where the copy programs go (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPrograms {
    /// The first program ids of a 1D grid.
    Front,
    /// A plane of a 2D grid in front of the kernel's (`program_id(2) = 0`).
    Plane,
}

/// Where `kernel` can take copy programs: in front of a 1D grid, or in an
/// extra plane of a 2D one; an error for a 3D grid.
pub fn placement(kernel: Op, at: impl AsOp) -> Result<CopyPrograms, PassFailed> {
    let kernel_name = ir::str_attr(kernel, "sym_name").unwrap_or_default();
    let axes: Vec<i64> = ir::find_all(kernel, "tt.get_program_id")
        .into_iter()
        .chain(ir::find_all(kernel, "tt.get_num_programs"))
        .filter_map(|op| ir::int_attr(op, "axis"))
        .collect();
    if axes.contains(&2) {
        return Err(fail(
            at,
            format!(
                "the ldst backend needs a 1D or 2D grid, but kernel @{kernel_name} reads axis 2"
            ),
        ));
    }
    if !axes.contains(&1) {
        return Ok(CopyPrograms::Front);
    }
    Ok(CopyPrograms::Plane)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_block_is_the_largest_step_that_divides_the_chunk() {
        // 32 KiB of bf16, f32 and bytes.
        assert_eq!(copy_block(1 << 20, 2), Some(16384));
        assert_eq!(copy_block(1 << 20, 4), Some(8192));
        assert_eq!(copy_block(1 << 20, 1), Some(32768));
        // Smaller steps where the chunk needs them, never below 4096.
        assert_eq!(copy_block(3 * 8192, 2), Some(8192));
        assert_eq!(copy_block(3 * 4096, 2), Some(4096));
        assert_eq!(copy_block(6400, 2), None);
        // Wide elements still copy 4096 per step.
        assert_eq!(copy_block(4096, 16), Some(4096));
    }
}
