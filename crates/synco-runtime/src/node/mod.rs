//! GPUs, symmetric heaps, launches and the watchdog: the node itself and
//! its memory here; `open.rs`, opening it (every rank in one process, or
//! one rank of many processes); `launch.rs`, one fused operation on every
//! rank it drives; `alone.rs`, one rank's kernel by itself with its chunks
//! marked present (for benchmarks); `watchdog.rs`, waiting for it, its
//! timing and the error buffers.

mod alone;
mod launch;
mod open;
mod replay;
mod steps;
mod watchdog;

use crate::{
    error::{Result, RuntimeError},
    heap::{Buffer, HeapLayout},
    kernel::FusedKernel,
    timeline::{LaunchMarks, PendingCopy},
};
use cudarc::driver::{
    CudaContext,
    sys::{self, CUdeviceptr, CUevent, CUresult, CUstream},
};
use std::{ops::Range, sync::Arc};

pub use open::Exchange;

pub(crate) fn check(rank: usize, call: &'static str, code: CUresult) -> Result<()> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::Cuda { call, rank, code })
    }
}

/// One rank this process drives: its GPU's context, streams, heap and
/// events.
pub(crate) struct Gpu {
    pub rank: usize,
    /// The CUDA device the rank runs on (this process's ordinal).
    pub device: usize,
    pub ctx: Arc<CudaContext>,
    /// The stream kernels run on: the node's own, or the caller's
    /// ([`Node::set_compute_stream`]).
    pub compute: CUstream,
    pub copy: CUstream,
    /// Signals the launch's start to the peers that wait for it (see
    /// `sync.rs`), off the compute stream.
    pub signal: CUstream,
    /// Reads the error buffer for the watchdog, behind nothing else.
    pub watch: CUstream,
    pub heap: CUdeviceptr,
    pub heap_bases: CUdeviceptr,
    pub errors: CUdeviceptr,
    /// Recorded on the compute stream at each launch's start (the rank's
    /// previous work done) and end; synchronisation only, no timing (CUDA
    /// events that keep time cost the GPU more to record).
    pub start: CUevent,
    pub end: CUevent,
    /// Recorded on the compute stream after a kernel that reaches into
    /// peers' heaps: the signal stream then tells those peers.
    pub kernel_done: CUevent,
    /// Recorded on the copy stream after a launch's copies: the launch
    /// ends after it, and the next launch's kernel waits for it when its
    /// copies leave the epochs to the streams
    /// (`FusedPlan::copies_ordered_by_streams`).
    pub copies_done: CUevent,
    /// Recorded on the compute stream once every rank has entered a
    /// launch that replays (`replay.rs`): the side streams wait for it.
    pub entered: CUevent,
    /// Recorded on the signal stream at the end of a launch that replays,
    /// for the compute stream to join it back.
    pub signals_sent: CUevent,
}

impl Gpu {
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| RuntimeError::Open {
            gpu: self.device,
            message: e.to_string(),
        })
    }
}

/// Where a rank's heap lies and which GPU it runs on, for every rank of
/// the world (those of other processes too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RankPlace {
    /// The heap's base as this process addresses it (its own, or a peer's
    /// mapped through CUDA IPC).
    pub heap: CUdeviceptr,
    /// The GPU's UUID: ranks with equal ones share a GPU.
    pub gpu: [u8; 16],
}

pub struct Node {
    /// The ranks this process drives, `first_rank` and up.
    pub(crate) gpus: Vec<Gpu>,
    first_rank: usize,
    /// Every rank of the world.
    pub(crate) places: Vec<RankPlace>,
    /// Peers' heaps opened from CUDA IPC handles, closed with the node.
    imported: Vec<(usize, CUdeviceptr)>,
    /// The rank and error of a launch that timed out (see [`Node::wait`]).
    failed: std::cell::RefCell<Option<(usize, String)>>,
    /// What the heaps hold (the same on every rank): the caller's buffers
    /// from the start, kernels' flags and staging buffers from the end
    /// (symmetric too: peers bump each other's counters and copy into each
    /// other's staging).
    layout: HeapLayout,
    epoch: u32,
    /// The ring step the launch being issued runs, for a kernel that runs
    /// once per ring step (its copies are those of the step).
    pub(crate) ring_step: Option<u32>,
    /// Whether the last launch was captured in a CUDA graph: its events
    /// belong to the graph, and the watchdog cannot query them.
    captured: bool,
    /// Whether the last launch ended a call of ring steps (several
    /// launches): the watchdog keeps the stream waits of all of them, and
    /// counts from when it starts waiting (a later step's start event is
    /// behind an earlier step's stuck wait).
    pub(crate) ring_call: bool,
    /// Scratch for Triton's global scratch pointer, per rank driven here.
    scratch: Vec<(CUdeviceptr, usize)>,
    /// Whether launches time their side-stream copies (`record_timeline`),
    /// and the last launch's copies with their events.
    pub(crate) timeline_on: bool,
    pub(crate) timeline: Vec<PendingCopy>,
    /// With the timeline on: the last launch's timing events on every
    /// rank's compute stream (empty otherwise).
    pub(crate) marks: LaunchMarks,
    /// The stream waits on flag words the last launch issued, in order,
    /// for the watchdog to name the one a stuck stream waits at.
    pub(crate) stream_waits: std::cell::RefCell<Vec<StreamWait>>,
    /// How long a stream may wait at one of them once the launch has
    /// started on its rank (see [`Node::set_peer_timeout`]).
    pub(crate) peer_timeout: std::time::Duration,
    /// A fault a test injected ([`Node::inject_fault`]).
    pub(crate) fault: Fault,
}

/// A fault a test can inject into a node's launches, to check that its
/// peers' watchdogs report it, or that they keep in step with a slow one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    #[default]
    None,
    /// The node's ranks keep in step with their peers (they signal their
    /// starts, kernels and copies done) but issue neither copies nor
    /// kernels: the chunks peers wait for never come, as from a peer
    /// whose kernel silently failed.
    WithholdWork,
    /// After signalling its starts, the node's host stalls for
    /// [`STALLED_ISSUE`] before it issues the launch's copies and kernels,
    /// as a process descheduled mid-launch: peers that run ahead must not
    /// overwrite rows it has yet to read.
    StallIssue,
}

/// How long a node with [`Fault::StallIssue`] stalls in each launch.
pub const STALLED_ISSUE: std::time::Duration = std::time::Duration::from_millis(300);

/// A stream wait (`cuStreamWaitValue32`, >=) that a launch issued on one
/// of `rank`'s streams: on `word`, until it reaches `value`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamWait {
    pub rank: usize,
    pub word: CUdeviceptr,
    pub value: u32,
    pub awaited: crate::sync::Awaited,
    /// The epoch of the launch that issued it.
    pub epoch: u32,
}

/// How long a stream waits for a peer's signal, by default, before the
/// watchdog reports it: the fused kernels' own bound on a spin (the
/// `timeout_ns` of `chunk.wait`, 10 s unless the plan says otherwise).
pub const DEFAULT_PEER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Node {
    pub fn world_size(&self) -> usize {
        self.places.len()
    }

    /// The ranks this process drives (every rank, unless the node was
    /// opened with [`Node::open_process`]).
    pub fn local_ranks(&self) -> Range<usize> {
        self.first_rank..self.first_rank + self.gpus.len()
    }

    /// Whether ranks `a` and `b` run on one GPU.
    pub(crate) fn same_gpu(&self, a: usize, b: usize) -> bool {
        self.places[a].gpu == self.places[b].gpu
    }

    /// How many ranks run on `rank`'s GPU (with it).
    pub(crate) fn sharing(&self, rank: usize) -> usize {
        (0..self.world_size())
            .filter(|&r| self.same_gpu(r, rank))
            .count()
    }

    /// A rank this process drives (internal callers iterate over
    /// [`Node::local_ranks`]).
    pub(crate) fn local(&self, rank: usize) -> &Gpu {
        &self.gpus[rank - self.first_rank]
    }

    /// The epoch of the last launch (its kernel's launch count).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Places a symmetric buffer of `bytes` in every rank's heap.
    pub fn alloc(&mut self, bytes: usize) -> Result<Buffer> {
        self.layout.alloc(bytes)
    }

    /// Places a kernel's own storage (its flags, then its staging buffers)
    /// at the heap's end, so that [`Node::reset_heap`] keeps it; the
    /// kernel's [`Node::unload`] gives it back.
    pub(crate) fn alloc_kernel_storage(&mut self, bytes: usize) -> Result<Buffer> {
        self.layout.alloc_kernel_storage(bytes)
    }

    /// Unloads `kernel` from every GPU once its launches are done (call
    /// [`Node::wait`] first). Its storage at the heap's end is given back
    /// if no kernel loaded later still holds storage below it (kernels
    /// loaded and unloaded one after another, as a benchmark does, reuse
    /// the same bytes); otherwise it stays until the node closes.
    pub fn unload(&mut self, kernel: FusedKernel) -> Result<()> {
        let storage = kernel.storage;
        kernel.unload_modules(self)?;
        self.layout.release_kernel_storage(storage);
        Ok(())
    }

    /// Frees every buffer (the heap is reused from its start); kernels'
    /// flags and staging buffers stay.
    pub fn reset_heap(&mut self) {
        self.layout.reset();
    }

    /// `rank`'s GPU, or an error naming the world size or the ranks this
    /// process drives.
    fn gpu(&self, rank: usize) -> Result<&Gpu> {
        if rank >= self.world_size() {
            return Err(RuntimeError::NoSuchRank {
                rank,
                world_size: self.world_size(),
            });
        }
        if !self.local_ranks().contains(&rank) {
            return Err(RuntimeError::NotLocal {
                rank,
                local: self.local_ranks(),
            });
        }
        Ok(self.local(rank))
    }

    /// The device address of `buffer` on `rank`.
    ///
    /// # Panics
    ///
    /// If `rank` is not below [`Node::world_size`].
    pub fn ptr(&self, rank: usize, buffer: &Buffer) -> CUdeviceptr {
        self.places[rank].heap + buffer.offset as u64
    }

    /// Copies `bytes` into `buffer` on `rank`, at `offset`; returns once
    /// they are in place. (On the compute stream, then synchronised: the
    /// legacy default stream would not be ordered with the non-blocking
    /// streams the kernels run on, nor with peers' kernels.)
    pub fn write(&self, rank: usize, buffer: &Buffer, offset: usize, bytes: &[u8]) -> Result<()> {
        let gpu = self.gpu(rank)?;
        if offset
            .checked_add(bytes.len())
            .is_none_or(|end| end > buffer.bytes)
        {
            return Err(RuntimeError::WritePastBuffer {
                offset,
                bytes: bytes.len(),
                buffer: buffer.bytes,
            });
        }
        gpu.bind()?;
        unsafe {
            check(
                rank,
                "cuMemcpyHtoDAsync",
                sys::cuMemcpyHtoDAsync_v2(
                    self.ptr(rank, buffer) + offset as u64,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    gpu.compute,
                ),
            )?;
            check(
                rank,
                "cuStreamSynchronize",
                sys::cuStreamSynchronize(gpu.compute),
            )
        }
    }

    pub fn read(&self, rank: usize, buffer: &Buffer) -> Result<Vec<u8>> {
        let gpu = self.gpu(rank)?;
        gpu.bind()?;
        self.synchronize(rank)?;
        let mut out = vec![0u8; buffer.bytes];
        unsafe {
            check(
                rank,
                "cuMemcpyDtoH",
                sys::cuMemcpyDtoH_v2(
                    out.as_mut_ptr().cast(),
                    self.ptr(rank, buffer),
                    buffer.bytes,
                ),
            )?;
        }
        Ok(out)
    }

    /// Sets every byte of `buffer` on `rank` (to poison outputs); returns
    /// once it is done (see [`Node::write`]).
    pub fn fill(&self, rank: usize, buffer: &Buffer, byte: u8) -> Result<()> {
        let gpu = self.gpu(rank)?;
        gpu.bind()?;
        unsafe {
            check(
                rank,
                "cuMemsetD8Async",
                sys::cuMemsetD8Async(self.ptr(rank, buffer), byte, buffer.bytes, gpu.compute),
            )?;
            check(
                rank,
                "cuStreamSynchronize",
                sys::cuStreamSynchronize(gpu.compute),
            )
        }
    }

    pub fn synchronize(&self, rank: usize) -> Result<()> {
        let gpu = self.gpu(rank)?;
        gpu.bind()?;
        unsafe {
            check(
                rank,
                "cuStreamSynchronize",
                sys::cuStreamSynchronize(gpu.compute),
            )?;
            check(
                rank,
                "cuStreamSynchronize",
                sys::cuStreamSynchronize(gpu.copy),
            )
        }
    }

    /// Synchronises every rank this process drives.
    pub fn synchronize_all(&self) -> Result<()> {
        self.local_ranks().try_for_each(|r| self.synchronize(r))
    }

    /// Makes `stream` (one of the caller's, on `rank`'s GPU, such as
    /// PyTorch's current stream) the stream `rank`'s kernels, waits and
    /// writes go on from now on.
    pub fn set_compute_stream(&mut self, rank: usize, stream: CUstream) -> Result<()> {
        self.gpu(rank)?;
        self.gpus[rank - self.first_rank].compute = stream;
        Ok(())
    }

    /// How long a launch's streams may wait for a peer's signal (its start,
    /// its kernel or its copies done) or a flag, counted from the moment
    /// the watchdog ([`Node::wait`]) sees the launch started on the rank,
    /// before it reports [`RuntimeError::PeerTimedOut`]: a peer that died
    /// or never launched. Default [`DEFAULT_PEER_TIMEOUT`].
    pub fn set_peer_timeout(&mut self, timeout: std::time::Duration) {
        self.peer_timeout = timeout;
    }

    /// Injects `fault` into this node's later launches (for fault tests).
    pub fn inject_fault(&mut self, fault: Fault) {
        self.fault = fault;
    }

    /// The compute stream of `rank` (for callers that enqueue their own
    /// work, e.g. a cuBLAS reference).
    ///
    /// # Panics
    ///
    /// If `rank` is not below [`Node::world_size`].
    pub fn compute_stream(&self, rank: usize) -> cudarc::driver::sys::CUstream {
        self.local(rank).compute
    }

    /// The CUDA context of `rank`'s GPU.
    ///
    /// # Panics
    ///
    /// If `rank` is not below [`Node::world_size`].
    pub fn context(&self, rank: usize) -> &Arc<CudaContext> {
        &self.local(rank).ctx
    }
}

impl Drop for Node {
    /// Closes the peers' heaps this process mapped (its own memory goes
    /// with its context).
    fn drop(&mut self) {
        if let Some(gpu) = self.gpus.first()
            && gpu.bind().is_ok()
        {
            for &(_, heap) in &self.imported {
                // SAFETY: a mapping cuIpcOpenMemHandle gave this node; a
                // failure here has nobody to report to.
                let _ = unsafe { sys::cuIpcCloseMemHandle(heap) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a GPU (CI) opening a node is an error, not a panic; with
    /// GPUs, a one-rank node opens and round-trips a buffer.
    #[test]
    fn opens_a_node_or_reports_no_driver() {
        match Node::open(1, 1 << 20) {
            Err(RuntimeError::NoDriver) => {
                eprintln!("skipped the GPU part: no CUDA driver on this machine");
            }
            Err(RuntimeError::NotEnoughGpus { .. }) => {
                eprintln!("skipped the GPU part: the driver sees no GPU");
            }
            Err(other) => panic!("unexpected error: {other}"),
            Ok(mut node) => {
                let buffer = node.alloc(1024).unwrap();
                let data: Vec<u8> = (0..1024).map(|i| (i % 251) as u8).collect();
                node.write(0, &buffer, 0, &data).unwrap();
                assert_eq!(node.read(0, &buffer).unwrap(), data);
                assert!(matches!(
                    node.alloc(1 << 21),
                    Err(RuntimeError::HeapFull { .. })
                ));
                assert!(matches!(
                    node.write(0, &buffer, 1000, &data[..100]),
                    Err(RuntimeError::WritePastBuffer { .. })
                ));
                // Launch times are kept only with the timeline on.
                assert!(matches!(node.elapsed_ms(), Err(RuntimeError::NoTimeline)));
                assert!(matches!(
                    node.read(1, &buffer),
                    Err(RuntimeError::NoSuchRank {
                        rank: 1,
                        world_size: 1
                    })
                ));
            }
        }
    }

    /// Sharing GPUs: at least one GPU, at most one per rank (checked
    /// before the driver, so on any machine).
    #[test]
    fn refuses_impossible_sharing() {
        for (world_size, devices) in [(4, 0), (2, 3)] {
            match Node::open_shared(world_size, devices, 1 << 20) {
                Err(e @ RuntimeError::BadSharing { .. }) => {
                    assert!(
                        e.to_string()
                            .contains(&format!("{world_size} ranks cannot share {devices} GPUs"))
                    );
                }
                Err(other) => panic!("unexpected error: {other}"),
                Ok(_) => panic!("{world_size} ranks opened on {devices} GPUs"),
            }
        }
    }
}
