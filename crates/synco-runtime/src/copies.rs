//! The side streams' copies of a launch: a gather's chunks before the
//! kernels (and the copies within a GPU in front of its kernel), a
//! reduction's finished chunks after them.

use crate::{
    error::{Result, RuntimeError},
    heap::Buffer,
    kernel::FusedKernel,
    node::{Node, check},
    sync::within_gpu,
    timeline::PendingCopy,
};
use cudarc::driver::sys::{self, CUdeviceptr};
use std::collections::HashSet;

/// Which copy-engine copies `Node::enqueue_copies` issues for a rank.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CopyPhase {
    /// The rank's copies between GPUs, on its copy stream, each setting its
    /// flag.
    SideStream,
    /// Copies into the rank within its GPU (`before_kernel`, or from a rank
    /// sharing the GPU), on its compute stream before its kernel.
    BeforeKernel,
}

/// The symmetric buffer bound to the plan's buffer `name`.
pub(crate) fn bound(bindings: &[(&str, Buffer)], name: &str) -> Result<Buffer> {
    bindings
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
        .ok_or_else(|| RuntimeError::UnboundBuffer(name.into()))
}

impl Node {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn enqueue_copies(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        fused: &synco_manifest::FusedPlan,
        bindings: &[(&str, Buffer)],
        epoch: u32,
        spans: &mut Vec<PendingCopy>,
        phase: CopyPhase,
    ) -> Result<()> {
        let before_kernel = phase == CopyPhase::BeforeKernel;
        let flags = kernel.flags;
        let gpu = self.local(rank);
        // Copies within one GPU (a rank's own, or between ranks sharing the
        // GPU) go on the destination's compute stream, in front of its
        // kernel: the driver may run them on SMs, which the kernel's tiles,
        // waiting for them, would hold. The others go on the source's or
        // destination's copy stream (whichever drives them). (The
        // manifest's copies name ranks of the plan, which `launch` checked
        // is this node's world.)
        let same_gpu = |a: usize, b: usize| self.same_gpu(a, b);
        let within_gpu = |c: &synco_manifest::Copy| within_gpu(c, &same_gpu);
        // (A kernel that runs once per ring step makes the copies of the
        // step it runs.)
        let of_step = |c: &&synco_manifest::Copy| c.step == self.ring_step;
        let copies: Vec<&synco_manifest::Copy> = match phase {
            CopyPhase::SideStream => fused
                .copies
                .get(rank)
                .into_iter()
                .flatten()
                .filter(of_step)
                .filter(|c| !within_gpu(c))
                .collect(),
            CopyPhase::BeforeKernel => fused
                .copies
                .iter()
                .flatten()
                .filter(of_step)
                .filter(|c| c.dst_rank as usize == rank && within_gpu(c))
                .collect(),
        };
        // The copy stream waits for this launch's start on this rank (an
        // event) and on every rank its copies write into (pushes: the
        // destination's previous kernel may still read); peers' starts are
        // their signals (see `sync.rs`). The compute stream has waited for
        // the sources of the copies in front of the kernel
        // (`Node::issue_kernel`).
        let stream = if before_kernel { gpu.compute } else { gpu.copy };
        if !before_kernel && !copies.is_empty() && kernel.replays() {
            // A launch that replays: after every rank has zeroed its words
            // (`Node::enter_replayed_launch`).
            self.wait_peers_entered(rank, stream)?;
        } else if !before_kernel && !copies.is_empty() {
            unsafe {
                check(
                    rank,
                    "cuStreamWaitEvent",
                    sys::cuStreamWaitEvent(stream, gpu.start, 0),
                )?;
            }
            for &peer in &kernel.sync.rank(rank).copies_wait_start {
                self.wait_word(rank, stream, kernel, kernel.words.started_by(peer), epoch)?;
            }
        }
        let place = |name: &str| -> Result<(Buffer, i64)> {
            let buffer = bound(bindings, name)?;
            let elem = fused
                .buffers
                .iter()
                .find(|b| b.name == name)
                .and_then(|b| b.element_bytes)
                .unwrap_or(1);
            Ok((buffer, elem))
        };
        for copy in copies {
            let (src_buf, elem) = place(&copy.src_buffer)?;
            let (dst_buf, _) = place(&copy.dst_buffer)?;
            let src = self.ptr(copy.src_rank as usize, &src_buf) + (copy.src_offset * elem) as u64;
            let dst = self.ptr(copy.dst_rank as usize, &dst_buf) + (copy.dst_offset * elem) as u64;
            let width = (copy.row_elems * elem) as usize;
            // The timeline follows the side stream only.
            let side_event = || {
                if before_kernel {
                    Ok(None)
                } else {
                    self.side_stream_event(rank)
                }
            };
            if let Some(flag) = copy.after_flag {
                // Rows the source received from its own neighbour (a ring):
                // forwarded once they arrived there.
                let owner = copy.src_rank as usize;
                self.wait_peer_flag(rank, stream, kernel, owner, flag as usize, epoch)?;
            }
            let start = side_event()?;
            copy_2d(
                rank,
                stream,
                [dst, src],
                width,
                copy.rows as usize,
                [
                    (copy.dst_pitch * elem) as usize,
                    (copy.src_pitch * elem) as usize,
                ],
            )?;
            let data_end = side_event()?;
            unsafe {
                if let Some(flag) = copy.flag {
                    let flags = self.ptr(copy.dst_rank as usize, &flags);
                    // A ring step's copy brings the next launch's block.
                    let ready = if copy.step.is_some() {
                        epoch + 1
                    } else {
                        epoch
                    };
                    check(
                        rank,
                        "cuStreamWriteValue32",
                        sys::cuStreamWriteValue32_v2(stream, flags + 4 * flag as u64, ready, 0),
                    )?;
                }
            }
            if before_kernel {
                continue;
            }
            self.close_span(
                spans,
                rank,
                [start, data_end],
                (width * copy.rows as usize) as u64,
                || {
                    format!(
                        "{} of rank {} -> {}",
                        copy.src_buffer, copy.src_rank, copy.dst_buffer
                    )
                },
            )?;
        }
        Ok(())
    }

    /// The side stream's copies of chunks the kernel's tiles finish, for a
    /// reduction or a gathered output moved by the copy engine: partials
    /// into their owner's staging buffer, a two-shot all-reduce's sums or a
    /// gathered output's chunks into every peer's output (see
    /// `synco_manifest::ReductionCopy`). Where a kernel waits for a copy,
    /// the peer's flag is written by a 4-byte peer copy of this launch's
    /// epoch, kept in the word after the kernel's flags, so every stream
    /// memory operation stays local.
    pub(crate) fn enqueue_reduction_copies(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        fused: &synco_manifest::FusedPlan,
        bindings: &[(&str, Buffer)],
        epoch: u32,
        spans: &mut Vec<PendingCopy>,
    ) -> Result<()> {
        let Some(copies) = fused.reduction_copies.get(rank).filter(|c| !c.is_empty()) else {
            return Ok(());
        };
        let flags = kernel.flags;
        let gpu = self.local(rank);
        let local_flags = self.ptr(rank, &flags);
        let flag = |base: CUdeviceptr, index: i64| base + 4 * index as u64;
        let epoch_word = flag(local_flags, kernel.words.copy_epoch() as i64);
        // A launch that replays waits for every rank to have zeroed its
        // words (the tiles' counters these copies wait for, the epoch word)
        // and leaves out the waits for the owners' starts below.
        if kernel.replays() {
            self.wait_peers_entered(rank, gpu.copy)?;
        }
        // (Only the arrival flags copy the epoch word: a gathered output's
        // copies set none and leave it alone.)
        if copies.iter().any(|c| c.arrived.is_some()) {
            unsafe {
                check(
                    rank,
                    "cuStreamWriteValue32",
                    sys::cuStreamWriteValue32_v2(gpu.copy, epoch_word, epoch, 0),
                )?;
            }
        }
        // Where the kernels leave the epochs to the streams: each owner's
        // previous launch is done (this launch's start on it, its signal),
        // so its tiles have read what these copies overwrite in its
        // staging buffer.
        let waits_start = &kernel.sync.rank(rank).reduction_copies_wait_start;
        for &owner in kernel.start_waits(waits_start) {
            self.wait_word(
                rank,
                gpu.copy,
                kernel,
                kernel.words.started_by(owner),
                epoch,
            )?;
        }
        // Counters only grow within a launch, and the stream runs in order:
        // once it has waited for a counter to reach a value, a later wait
        // for the same value is already met. A chunk sent to several peers
        // (a gathered output, the two-shot's sums) waits once, not once per
        // peer.
        let mut waited: HashSet<(i64, u32)> = HashSet::new();
        let mut wait_for = |index: i64, value: u32| -> Result<()> {
            if !waited.insert((index, value)) {
                return Ok(());
            }
            self.wait_word(rank, gpu.copy, kernel, index as usize, value)
        };
        for copy in copies {
            let src = bound(bindings, &copy.src_buffer)?;
            let dst = bound(bindings, &copy.dst_buffer)?;
            let owner = copy.owner as usize;
            let target = |(_, count): (i64, i64), epoch: u32| (epoch as i64 * count) as u32;
            wait_for(copy.produced.0, target(copy.produced, epoch))?;
            if let Some(consumed) = copy.consumed {
                wait_for(consumed.0, target(consumed, epoch - 1))?;
            }
            let start = self.side_stream_event(rank)?;
            let (rows, pitches) = match &copy.rows {
                Some(r) => (r.count, [r.dst_pitch as usize, r.src_pitch as usize]),
                None => (1, [copy.bytes as usize; 2]),
            };
            copy_2d(
                rank,
                gpu.copy,
                [
                    self.ptr(owner, &dst) + copy.dst_offset as u64,
                    self.ptr(rank, &src) + copy.src_offset as u64,
                ],
                copy.bytes as usize,
                rows as usize,
                pitches,
            )?;
            let data_end = self.side_stream_event(rank)?;
            unsafe {
                // (Without an arrival flag, no kernel waits for this copy:
                // the owner's launch ends after this stream's copies.)
                if let Some(arrived) = copy.arrived {
                    check(
                        rank,
                        "cuMemcpyAsync",
                        sys::cuMemcpyAsync(
                            flag(self.ptr(owner, &flags), arrived),
                            epoch_word,
                            4,
                            gpu.copy,
                        ),
                    )?;
                }
                if let Some(copied) = copy.copied {
                    check(
                        rank,
                        "cuStreamWriteValue32",
                        sys::cuStreamWriteValue32_v2(gpu.copy, flag(local_flags, copied), epoch, 0),
                    )?;
                }
            }
            self.close_span(
                spans,
                rank,
                [start, data_end],
                (copy.bytes * rows) as u64,
                || {
                    format!(
                        "{} -> {} on rank {}",
                        copy.src_buffer, copy.dst_buffer, copy.owner
                    )
                },
            )?;
        }
        // (The next launch's kernel on this rank waits for these copies to
        // have read its partials and sums, and the owners of copies without
        // an arrival flag end this launch after them: `Node::launch`
        // records the copy stream's end, `Node::signal_copies_done` tells
        // the peers.)
        Ok(())
    }
}

/// Enqueues on `stream` a copy of `rows` rows of `width` bytes, from
/// `[dst, src]`'s second address to its first, rows `pitches` bytes apart
/// (`[dst_pitch, src_pitch]`); one row is a plain copy.
fn copy_2d(
    rank: usize,
    stream: sys::CUstream,
    [dst, src]: [CUdeviceptr; 2],
    width: usize,
    rows: usize,
    [dst_pitch, src_pitch]: [usize; 2],
) -> Result<()> {
    unsafe {
        if rows == 1 {
            return check(
                rank,
                "cuMemcpyAsync",
                sys::cuMemcpyAsync(dst, src, width, stream),
            );
        }
        let params = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: src,
            srcArray: std::ptr::null_mut(),
            srcPitch: src_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: dst,
            dstArray: std::ptr::null_mut(),
            dstPitch: dst_pitch,
            WidthInBytes: width,
            Height: rows,
        };
        check(
            rank,
            "cuMemcpy2DAsync",
            sys::cuMemcpy2DAsync_v2(&params, stream),
        )
    }
}
