//! GPUs, symmetric heaps, launches and the watchdog.

use crate::{
    copies::{CopyPhase, bound},
    error::{Result, RuntimeError},
    heap::{Buffer, HeapLayout},
    kernel::{Arg, FusedKernel},
    timeline::{LaunchMarks, PendingCopy},
};
use cudarc::driver::{
    CudaContext,
    sys::{self, CUdeviceptr, CUevent, CUresult, CUstream},
};
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

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

    /// Starts one fused operation on every rank (see the crate docs).
    /// `args(rank)` gives the kernel's own arguments; `bindings` maps the
    /// plan's buffers to symmetric buffers, for the copy schedule and the
    /// `synco_buffer_<name>` arguments (the kernel's staging buffers come
    /// with it and need no binding).
    pub fn launch(
        &mut self,
        kernel: &FusedKernel,
        grid: (u32, u32, u32),
        args: &dyn Fn(usize) -> Vec<Arg>,
        bindings: &[(&str, Buffer)],
    ) -> Result<()> {
        let world = self.world_size();
        if let Some(fused) = &kernel.manifest.fused
            && fused.world_size as usize != world
        {
            return Err(RuntimeError::WorldSize {
                plan: fused.world_size,
                node: world,
            });
        }
        crate::kernel::check_persistent_grid(&kernel.manifest, grid)?;
        // Bindings and bound arguments, before any rank's work is issued.
        crate::bindings::check(&kernel.manifest, world, bindings, args, &|rank, buffer| {
            self.ptr(rank, buffer)
        })?;
        // Copy programs (ldst backend) come first: in front of a 1D grid,
        // or as a plane in front of a 2D one.
        let (copy_programs, copy_plane) = kernel
            .manifest
            .fused
            .as_ref()
            .map_or((0, false), |f| (f.copy_programs, f.copy_plane));
        let grid = if copy_plane {
            if copy_programs > grid.0 * grid.1 {
                return Err(RuntimeError::CopyPlane {
                    programs: copy_programs,
                    plane: grid.0 * grid.1,
                });
            }
            (grid.0, grid.1, grid.2 + 1)
        } else {
            (grid.0 + copy_programs, grid.1, grid.2)
        };
        // Programs that wait for other programs' tiles must all be resident:
        // a persistent kernel's with a fused reduction, and any kernel's
        // whose tiles wait for the tiles of another rank on the same GPU
        // (its waiting tiles could hold the SMs that rank needs).
        if let Some(fused) = &kernel.manifest.fused {
            let programs = grid.0 * grid.1 * grid.2;
            for (gpu, resident) in self.gpus.iter().zip(&kernel.resident) {
                let sharing = self.gpus.iter().filter(|g| g.device == gpu.device).count();
                if !fused.co_resident && (sharing < 2 || !fused.waits_for_tiles()) {
                    continue;
                }
                crate::kernel::check_co_resident(
                    &kernel.manifest.kernel,
                    gpu.device,
                    programs,
                    sharing as u32,
                    *resident,
                )?;
            }
        }
        // Epochs count this kernel's launches: its flags and counters see
        // every one of them (counters grow by a fixed amount per launch).
        let bindings: Vec<(&str, Buffer)> = bindings
            .iter()
            .copied()
            .chain(kernel.staging.iter().map(|(name, b)| (name.as_str(), *b)))
            .collect();
        let bindings = bindings.as_slice();
        let epoch = kernel.epochs.get() + 1;
        kernel.epochs.set(epoch);
        self.epoch = epoch;
        let programs = grid.0 as usize * grid.1 as usize * grid.2 as usize;
        self.drop_timeline()?;
        // Triton's global scratch (per program), grown for every rank before
        // any kernel of this launch is issued: cuMemFree waits for the
        // GPU's work, so freeing a rank's old scratch after a co-located
        // rank's kernel was issued would wait for that kernel, which waits
        // for this rank's (seen as a timeout with ranks sharing GPUs).
        let scratch_bytes = kernel.manifest.global_scratch.size as usize * programs;
        for rank in 0..world {
            if scratch_bytes > self.scratch[rank].1 {
                self.gpus[rank].bind()?;
                unsafe {
                    if self.scratch[rank].0 != 0 {
                        check(rank, "cuMemFree", sys::cuMemFree_v2(self.scratch[rank].0))?;
                    }
                    let mut p = 0;
                    check(
                        rank,
                        "cuMemAlloc",
                        sys::cuMemAlloc_v2(&mut p, scratch_bytes),
                    )?;
                    self.scratch[rank] = (p, scratch_bytes);
                }
            }
        }
        let mut spans = Vec::new();
        let mut marks = LaunchMarks::default();
        // Whether each kernel waits for its rank's previous reduction copies
        // (see `Gpu::copies_done`).
        let copies_ordered_by_streams = kernel
            .manifest
            .fused
            .as_ref()
            .is_some_and(synco_manifest::FusedPlan::copies_ordered_by_streams);
        // Every rank's start (its previous launch done) before any copy: a
        // pushed chunk overwrites rows that the destination's previous
        // kernel may still read.
        for rank in 0..world {
            let gpu = &self.gpus[rank];
            gpu.bind()?;
            unsafe {
                check(
                    rank,
                    "cuEventRecord",
                    sys::cuEventRecord(gpu.start, gpu.compute),
                )?;
            }
            if let Some(event) = self.timeline_event(rank, gpu.compute)? {
                marks.began.push(event);
            }
        }
        // Copies the kernel waits for (an all-gather's chunks) go to every
        // GPU before any kernel: issued after one, they timed out with
        // ranks sharing a GPU (likely copies the driver runs on SMs, queued
        // behind tiles that wait for them).
        if let Some(fused) = &kernel.manifest.fused {
            for rank in 0..world {
                self.gpus[rank].bind()?;
                self.enqueue_copies(
                    rank,
                    fused,
                    bindings,
                    epoch,
                    kernel.flags,
                    &mut spans,
                    CopyPhase::SideStream,
                )?;
            }
        }
        for rank in 0..world {
            let gpu = &self.gpus[rank];
            gpu.bind()?;
            let flags = self.ptr(rank, &kernel.flags);
            let abi = |name: &str| -> Option<Arg> {
                Some(match name {
                    "synco_rank" => Arg::I32(rank as i32),
                    "synco_world_size" => Arg::I32(world as i32),
                    "synco_heap_bases" => Arg::Ptr(gpu.heap_bases),
                    "synco_flags" => Arg::Ptr(flags),
                    "synco_epoch" => Arg::I32(epoch as i32),
                    "synco_errors" => Arg::Ptr(gpu.errors),
                    other => {
                        let buffer = other.strip_prefix("synco_buffer_")?;
                        Arg::Ptr(self.ptr(rank, &bound(bindings, buffer).ok()?))
                    }
                })
            };
            // Copies into this rank within its GPU (its own, or from a rank
            // sharing the GPU) go in front of its kernel, on its stream:
            // the driver may run them on SMs, which the kernel's tiles,
            // waiting for them, would hold.
            if let Some(fused) = &kernel.manifest.fused {
                self.enqueue_copies(
                    rank,
                    fused,
                    bindings,
                    epoch,
                    kernel.flags,
                    &mut spans,
                    CopyPhase::BeforeKernel,
                )?;
            }
            // The previous launch's reduction copies have read the rows this
            // kernel's tiles overwrite (partials, sums): the copy engine's
            // kernels count on it instead of flags.
            if copies_ordered_by_streams {
                unsafe {
                    check(
                        rank,
                        "cuStreamWaitEvent",
                        sys::cuStreamWaitEvent(gpu.compute, gpu.copies_done, 0),
                    )?;
                }
            }
            if let Some(event) = self.timeline_event(rank, gpu.compute)? {
                marks.kernel.push(event);
            }
            kernel.launch_on(
                rank,
                gpu.compute,
                grid,
                &args(rank),
                &abi,
                self.scratch[rank].0,
            )?;
        }
        // Then the copies that wait for the kernels' tiles (a reduction's
        // partials and sums, a gathered output's chunks), issued after every
        // rank's kernel so that no kernel waits for the host to issue them,
        // nor for another rank's (the copies wait for the tiles' flags on
        // the GPU)...
        if let Some(fused) = &kernel.manifest.fused {
            for rank in 0..world {
                self.gpus[rank].bind()?;
                self.enqueue_reduction_copies(
                    rank,
                    fused,
                    bindings,
                    epoch,
                    kernel.flags,
                    &mut spans,
                )?;
            }
        }
        // ...and each rank's completion, after every rank's copies (it may
        // wait for the events they record in this launch).
        for rank in 0..world {
            let gpu = &self.gpus[rank];
            gpu.bind()?;
            let g = rank;
            let flags = self.ptr(rank, &kernel.flags);
            // Copies into this rank that no kernel waits for (they set no
            // flag): the launch is done when their side streams are.
            let sources = kernel
                .manifest
                .fused
                .as_ref()
                .map(|f| f.sources_ordered_by_streams(rank))
                .unwrap_or_default();
            for source in sources {
                unsafe {
                    check(
                        g,
                        "cuStreamWaitEvent",
                        sys::cuStreamWaitEvent(gpu.compute, self.gpus[source].copies_done, 0),
                    )?;
                }
            }
            // Rows that peers' copy programs write here (a staged two-shot
            // all-reduce's sums): the launch is done when their counters
            // are complete.
            let completion = kernel
                .manifest
                .fused
                .as_ref()
                .and_then(|f| f.completion.get(rank));
            for &(flag, count) in completion.into_iter().flatten() {
                let target = (epoch as i64 * count) as u32;
                unsafe {
                    check(
                        g,
                        "cuStreamWaitValue32",
                        sys::cuStreamWaitValue32_v2(
                            gpu.compute,
                            flags + 4 * flag as u64,
                            target,
                            sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
                        ),
                    )?;
                }
            }
            if let Some(event) = self.timeline_event(rank, gpu.compute)? {
                marks.ended.push(event);
            }
            unsafe {
                check(g, "cuEventRecord", sys::cuEventRecord(gpu.end, gpu.compute))?;
                // The next launch's copies overwrite rows this kernel reads.
                check(
                    g,
                    "cuStreamWaitEvent",
                    sys::cuStreamWaitEvent(gpu.copy, gpu.end, 0),
                )?;
            }
        }
        self.timeline = spans;
        self.marks = marks;
        Ok(())
    }

    /// Waits (at most `deadline`) for every rank's last launch, then checks
    /// every rank's error buffer (see the crate docs).
    pub fn wait(&self, deadline: Duration) -> Result<()> {
        let started = Instant::now();
        for (rank, gpu) in self.gpus.iter().enumerate() {
            gpu.bind()?;
            for stream in [gpu.compute, gpu.copy] {
                loop {
                    let code = unsafe { sys::cuStreamQuery(stream) };
                    if code == CUresult::CUDA_SUCCESS {
                        break;
                    }
                    if code != CUresult::CUDA_ERROR_NOT_READY {
                        return Err(RuntimeError::Cuda {
                            call: "cuStreamQuery",
                            rank,
                            code,
                        });
                    }
                    if started.elapsed() > deadline {
                        return Err(RuntimeError::Hung {
                            rank,
                            epoch: self.epoch,
                            seconds: started.elapsed().as_secs_f64(),
                        });
                    }
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            let mut record = [0i32; 4];
            unsafe {
                check(
                    rank,
                    "cuMemcpyDtoH",
                    sys::cuMemcpyDtoH_v2(record.as_mut_ptr().cast(), gpu.errors, 16),
                )?;
            }
            if record[0] != 0 {
                return Err(RuntimeError::WaitTimedOut {
                    rank: record[1],
                    chunk: record[2],
                    epoch: record[3],
                });
            }
        }
        Ok(())
    }

    /// Milliseconds each rank's last launch took on its compute stream
    /// (after [`Node::wait`]; the launch must have recorded its timeline,
    /// see [`Node::record_timeline`]).
    pub fn elapsed_ms(&self) -> Result<Vec<f32>> {
        (0..self.world_size())
            .map(|rank| {
                let ended = *self.marks.ended.get(rank).ok_or(RuntimeError::NoTimeline)?;
                self.ms_since_start(rank, ended)
            })
            .collect()
    }

    /// Milliseconds from `rank`'s last launch's start to `event`, a timing
    /// event recorded on one of that rank's streams by the launch (which
    /// has completed) with the timeline on.
    pub(crate) fn ms_since_start(&self, rank: usize, event: CUevent) -> Result<f32> {
        let began = *self.marks.began.get(rank).ok_or(RuntimeError::NoTimeline)?;
        self.gpus[rank].bind()?;
        let mut ms = 0.0f32;
        // SAFETY: both events belong to this rank's context and were
        // recorded by a launch that has completed.
        unsafe {
            check(
                rank,
                "cuEventElapsedTime",
                sys::cuEventElapsedTime_v2(&mut ms, began, event),
            )?
        };
        Ok(ms)
    }

    /// Clears every rank's error buffer (after a reported error).
    pub fn clear_errors(&self) -> Result<()> {
        for (rank, gpu) in self.gpus.iter().enumerate() {
            gpu.bind()?;
            unsafe { check(rank, "cuMemsetD8", sys::cuMemsetD8_v2(gpu.errors, 0, 16))? };
        }
        Ok(())
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
