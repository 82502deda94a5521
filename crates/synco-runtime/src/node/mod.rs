//! GPUs, symmetric heaps, launches and the watchdog: the node itself and
//! its memory here; `launch.rs`, one fused operation on every rank;
//! `watchdog.rs`, waiting for it, its timing and the error buffers.

mod launch;
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
use std::sync::Arc;

pub(crate) fn check(rank: usize, call: &'static str, code: CUresult) -> Result<()> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(RuntimeError::Cuda { call, rank, code })
    }
}

/// One rank (its index in `Node::gpus`): its GPU's context, streams, heap
/// and events.
pub(crate) struct Gpu {
    /// The CUDA device the rank runs on.
    pub device: usize,
    pub ctx: Arc<CudaContext>,
    pub compute: CUstream,
    pub copy: CUstream,
    pub heap: CUdeviceptr,
    pub heap_bases: CUdeviceptr,
    pub errors: CUdeviceptr,
    /// Recorded on the compute stream at each launch's start (the rank's
    /// previous work done) and end; synchronisation only, no timing (CUDA
    /// events that keep time cost the GPU more to record).
    pub start: CUevent,
    pub end: CUevent,
    /// Recorded on the copy stream after a launch's reduction copies: the
    /// next launch's kernel waits for it when its copies leave the epochs
    /// to the streams (`FusedPlan::copies_ordered_by_streams`), and the
    /// owners of copies that set no arrival flag end the launch after it
    /// (`FusedPlan::sources_ordered_by_streams`).
    pub copies_done: CUevent,
}

impl Gpu {
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| RuntimeError::Open {
            gpu: self.device,
            message: e.to_string(),
        })
    }
}

pub struct Node {
    pub(crate) gpus: Vec<Gpu>,
    /// What the heaps hold (the same on every rank): the caller's buffers
    /// from the start, kernels' flags and staging buffers from the end
    /// (symmetric too: peers bump each other's counters and copy into each
    /// other's staging).
    layout: HeapLayout,
    epoch: u32,
    /// Scratch for Triton's global scratch pointer, per rank.
    scratch: Vec<(CUdeviceptr, usize)>,
    /// Whether launches time their side-stream copies (`record_timeline`),
    /// and the last launch's copies with their events.
    pub(crate) timeline_on: bool,
    pub(crate) timeline: Vec<PendingCopy>,
    /// With the timeline on: the last launch's timing events on every
    /// rank's compute stream (empty otherwise).
    pub(crate) marks: LaunchMarks,
}

impl Node {
    /// Opens GPUs `0..world_size`, one rank each, each with a symmetric
    /// heap of `heap_bytes` and an error buffer, and enables peer access
    /// between every pair.
    pub fn open(world_size: usize, heap_bytes: usize) -> Result<Node> {
        Node::open_shared(world_size, world_size, heap_bytes)
    }

    /// Opens `world_size` ranks on GPUs `0..devices`: rank `r` runs on GPU
    /// `r mod devices`, and ranks on one GPU share its context (each has
    /// its own streams and heap). This tests plans of more ranks than the
    /// machine has GPUs, for correctness only: ranks that share a GPU
    /// share its SMs and bandwidth, and a fused kernel whose tiles wait for
    /// another rank's tiles completes only if the kernels of all ranks on
    /// a GPU fit on it together (otherwise the watchdog reports the wait).
    pub fn open_shared(world_size: usize, devices: usize, heap_bytes: usize) -> Result<Node> {
        if devices == 0 || devices > world_size {
            return Err(RuntimeError::BadSharing {
                world_size,
                devices,
            });
        }
        // SAFETY: only tries to load libcuda.so.
        if !unsafe { sys::is_culib_present() } {
            return Err(RuntimeError::NoDriver);
        }
        let found = CudaContext::device_count().map_err(|e| RuntimeError::Open {
            gpu: 0,
            message: e.to_string(),
        })? as usize;
        if found < devices {
            return Err(RuntimeError::NotEnoughGpus {
                wanted: devices,
                found,
            });
        }
        let mut gpus = Vec::with_capacity(world_size);
        for rank in 0..world_size {
            let device = rank % devices;
            let ctx = CudaContext::new(device).map_err(|e| RuntimeError::Open {
                gpu: device,
                message: e.to_string(),
            })?;
            ctx.bind_to_thread().map_err(|e| RuntimeError::Open {
                gpu: device,
                message: e.to_string(),
            })?;
            let g = rank;
            unsafe {
                let mut compute = std::ptr::null_mut();
                check(
                    g,
                    "cuStreamCreate",
                    sys::cuStreamCreate(
                        &mut compute,
                        sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
                    ),
                )?;
                let mut copy = std::ptr::null_mut();
                check(
                    g,
                    "cuStreamCreate",
                    sys::cuStreamCreate(
                        &mut copy,
                        sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
                    ),
                )?;
                let alloc = |bytes: usize| -> Result<CUdeviceptr> {
                    let mut p = 0;
                    check(g, "cuMemAlloc", sys::cuMemAlloc_v2(&mut p, bytes))?;
                    check(g, "cuMemsetD8", sys::cuMemsetD8_v2(p, 0, bytes))?;
                    Ok(p)
                };
                let heap = alloc(heap_bytes)?;
                let heap_bases = alloc(8 * world_size)?;
                let errors = alloc(16)?;
                let sync_event = || -> Result<CUevent> {
                    let mut event = std::ptr::null_mut();
                    let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
                    check(g, "cuEventCreate", sys::cuEventCreate(&mut event, flags))?;
                    Ok(event)
                };
                let (start, end, copies_done) = (sync_event()?, sync_event()?, sync_event()?);
                gpus.push(Gpu {
                    device,
                    ctx,
                    compute,
                    copy,
                    heap,
                    heap_bases,
                    errors,
                    start,
                    end,
                    copies_done,
                });
            }
        }
        // Peer access in both directions, and every rank's heap-base table.
        for a in 0..world_size {
            gpus[a].bind()?;
            for b in 0..world_size {
                // Ranks on one GPU share its context: nothing to enable.
                if gpus[a].device == gpus[b].device {
                    continue;
                }
                unsafe {
                    let mut can = 0;
                    check(
                        a,
                        "cuDeviceCanAccessPeer",
                        sys::cuDeviceCanAccessPeer(
                            &mut can,
                            gpus[a].ctx.cu_device(),
                            gpus[b].ctx.cu_device(),
                        ),
                    )?;
                    if can == 0 {
                        return Err(RuntimeError::NoPeerAccess {
                            a: gpus[a].device,
                            b: gpus[b].device,
                        });
                    }
                    let code = sys::cuCtxEnablePeerAccess(gpus[b].ctx.cu_ctx(), 0);
                    if code != CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                        check(a, "cuCtxEnablePeerAccess", code)?;
                    }
                }
            }
            let bases: Vec<u64> = gpus.iter().map(|g| g.heap).collect();
            unsafe {
                check(
                    a,
                    "cuMemcpyHtoD",
                    sys::cuMemcpyHtoD_v2(gpus[a].heap_bases, bases.as_ptr().cast(), 8 * world_size),
                )?;
            }
        }
        Ok(Node {
            scratch: vec![(0, 0); world_size],
            gpus,
            layout: HeapLayout::new(heap_bytes),
            epoch: 0,
            timeline_on: false,
            timeline: Vec::new(),
            marks: LaunchMarks::default(),
        })
    }

    pub fn world_size(&self) -> usize {
        self.gpus.len()
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

    /// `rank`'s GPU, or an error naming the world size.
    fn gpu(&self, rank: usize) -> Result<&Gpu> {
        self.gpus.get(rank).ok_or(RuntimeError::NoSuchRank {
            rank,
            world_size: self.gpus.len(),
        })
    }

    /// The device address of `buffer` on `rank`.
    ///
    /// # Panics
    ///
    /// If `rank` is not below [`Node::world_size`].
    pub fn ptr(&self, rank: usize, buffer: &Buffer) -> CUdeviceptr {
        self.gpus[rank].heap + buffer.offset as u64
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

    pub fn synchronize_all(&self) -> Result<()> {
        (0..self.world_size()).try_for_each(|r| self.synchronize(r))
    }

    /// The compute stream of `rank` (for callers that enqueue their own
    /// work, e.g. a cuBLAS reference).
    ///
    /// # Panics
    ///
    /// If `rank` is not below [`Node::world_size`].
    pub fn compute_stream(&self, rank: usize) -> cudarc::driver::sys::CUstream {
        self.gpus[rank].compute
    }

    /// The CUDA context of `rank`'s GPU.
    ///
    /// # Panics
    ///
    /// If `rank` is not below [`Node::world_size`].
    pub fn context(&self, rank: usize) -> &Arc<CudaContext> {
        &self.gpus[rank].ctx
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
