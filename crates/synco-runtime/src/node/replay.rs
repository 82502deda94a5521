//! Launches that replay: a launch captured in a CUDA graph, and every
//! later launch of its kernel (see `docs/graph-capture.md`). A graph
//! replays its nodes with the values they were captured with, so these
//! launches are all epoch 1, each on words it zeroed itself, between two
//! barriers of every rank: the one at the start orders the zeroing before
//! any peer's signal of this launch, the one at the end orders every
//! peer's access of this launch before the next launch's zeroing. (A call
//! of ring steps is epochs 1 to W, its words zeroed at its first step: a
//! step's copies set the next step's flags.)

use super::{Node, check};
use crate::{
    error::{Result, RuntimeError},
    kernel::FusedKernel,
    sync::SyncWords,
    timeline::LaunchMarks,
};
use cudarc::driver::sys;

impl Node {
    /// Whether the compute stream of a rank this process drives is being
    /// captured into a CUDA graph.
    pub(super) fn capturing(&self) -> Result<bool> {
        for rank in self.local_ranks() {
            let gpu = self.local(rank);
            gpu.bind()?;
            let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
            // SAFETY: queries a stream of the bound context.
            unsafe {
                check(
                    rank,
                    "cuStreamIsCapturing",
                    sys::cuStreamIsCapturing(gpu.compute, &mut status),
                )?;
            }
            if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A launch of `kernel` may be captured: it has run before (its first
    /// launch waits for the peers on the host, and loads what a capture
    /// may not), its Triton scratch (`scratch_bytes` for the grid) is
    /// already allocated, and no timeline is recorded.
    pub(super) fn check_capturable(
        &self,
        kernel: &FusedKernel,
        scratch_bytes: usize,
    ) -> Result<()> {
        let refuse = |reason: &'static str| RuntimeError::Capture {
            kernel: kernel.manifest.kernel.clone(),
            reason,
        };
        if kernel.epochs() == 0 {
            return Err(refuse(
                "it never ran: launch it once before the capture (a warm-up, as torch.cuda.graph asks)",
            ));
        }
        if self.scratch.iter().any(|&(_, bytes)| scratch_bytes > bytes) {
            return Err(refuse(
                "its Triton scratch must grow for this grid: launch it once with the grid before the capture",
            ));
        }
        if self.timeline_on {
            return Err(refuse(
                "the node records a timeline (Node::record_timeline), whose events a graph does not replay",
            ));
        }
        Ok(())
    }

    /// `rank`'s start of a launch that replays, on its compute stream: its
    /// flags, counters and sync words zeroed (every peer's access of the
    /// previous launch is done: its end barrier), then the barrier every
    /// rank enters: the signal to every peer, from the signal stream, and
    /// the waits for every peer's, whose words are then zeroed too (a
    /// peer signals the next launch only after this launch's end barrier).
    /// `gpu.entered` marks the barrier passed: the side streams wait for
    /// it.
    pub(super) fn enter_replayed_launch(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        marks: &mut LaunchMarks,
    ) -> Result<()> {
        let gpu = self.local(rank);
        gpu.bind()?;
        let words = &kernel.words;
        let flags = self.ptr(rank, &kernel.flags);
        // A call of ring steps zeroes its words at its first step; a later
        // step keeps the flags its predecessor's copies set (for it, at
        // the epoch after that step's) and zeroes only the words of the
        // end barrier it passed.
        let (first, count) = match self.ring_step {
            Some(step) if step > 0 => (words.ended_by(0), self.world_size()),
            _ => (0, words.zeroed()),
        };
        // SAFETY: stream operations on the bound context's streams, on
        // words of this kernel's flags buffer.
        unsafe {
            check(
                rank,
                "cuMemsetD32Async",
                sys::cuMemsetD32Async(flags + 4 * first as u64, 0, count, gpu.compute),
            )?;
            check(
                rank,
                "cuEventRecord",
                sys::cuEventRecord(gpu.start, gpu.compute),
            )?;
            check(
                rank,
                "cuStreamWaitEvent",
                sys::cuStreamWaitEvent(gpu.signal, gpu.start, 0),
            )?;
        }
        if let Some(event) = self.timeline_event(rank, gpu.compute)? {
            marks.began.push(event);
        }
        self.barrier(rank, kernel, gpu.signal, SyncWords::entered_by)?;
        let entered = flags + 4 * words.entered_by(0) as u64;
        // SAFETY: as above.
        unsafe {
            check(
                rank,
                "cuMemsetD32Async",
                sys::cuMemsetD32Async(entered, 0, self.world_size(), gpu.compute),
            )?;
            check(
                rank,
                "cuEventRecord",
                sys::cuEventRecord(gpu.entered, gpu.compute),
            )
        }
    }

    /// Makes `stream`, one of `rank`'s side streams, wait until every rank
    /// has entered the launch that replays (a fork of the compute stream,
    /// which a capture follows).
    pub(crate) fn wait_peers_entered(&self, rank: usize, stream: sys::CUstream) -> Result<()> {
        let gpu = self.local(rank);
        // SAFETY: an event wait on the bound context's streams.
        unsafe {
            check(
                rank,
                "cuStreamWaitEvent",
                sys::cuStreamWaitEvent(stream, gpu.entered, 0),
            )
        }
    }

    /// `rank`'s end of a launch that replays, on its compute stream, after
    /// the waits of any launch's end: the signal stream joined back (a
    /// capture must end with every stream it forked joined), then the
    /// barrier every rank leaves through, its words zeroed at the next
    /// launch's start.
    pub(super) fn leave_replayed_launch(&self, rank: usize, kernel: &FusedKernel) -> Result<()> {
        let gpu = self.local(rank);
        // SAFETY: event operations on the bound context's streams.
        unsafe {
            check(
                rank,
                "cuEventRecord",
                sys::cuEventRecord(gpu.signals_sent, gpu.signal),
            )?;
            check(
                rank,
                "cuStreamWaitEvent",
                sys::cuStreamWaitEvent(gpu.compute, gpu.signals_sent, 0),
            )?;
        }
        self.barrier(rank, kernel, gpu.compute, SyncWords::ended_by)
    }

    /// `rank`'s part of a barrier of every rank on the words `word` names:
    /// 1 (from `words.one()`) into `word(peer's words, rank)` of every
    /// peer, sent from `stream`, then the compute stream's wait for every
    /// peer's `word(rank's words, peer)`.
    fn barrier(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        stream: sys::CUstream,
        word: fn(&SyncWords, usize) -> usize,
    ) -> Result<()> {
        let peers: Vec<usize> = (0..self.world_size()).filter(|&p| p != rank).collect();
        let words = &kernel.words;
        self.send_epoch(rank, stream, kernel, words.one(), Some(1), &peers, &|w| {
            word(w, rank)
        })?;
        let compute = self.local(rank).compute;
        for &peer in &peers {
            self.wait_word(rank, compute, kernel, word(words, peer), 1)?;
        }
        Ok(())
    }
}
