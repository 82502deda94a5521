//! [`Node::launch`]: one fused operation on every rank this process
//! drives, in the order the crate docs give (checks, epoch, scratch,
//! starts, copies, kernels, reduction copies, completion). Ranks order
//! each other through the sync words (see `sync.rs`), whether they share
//! the process or not.

use super::steps::{STEP_STATE_PARAM, check_ring_step, ring_steps, scratch_layout};
use super::{Node, check};
use crate::{
    args::Arg,
    copies::{CopyPhase, bound},
    error::{Result, RuntimeError},
    heap::Buffer,
    kernel::FusedKernel,
    timeline::{LaunchMarks, PendingCopy},
};
use cudarc::driver::sys;

impl Node {
    /// Starts one fused operation on every rank (see the crate docs).
    /// `args(rank)` gives the kernel's own arguments; `bindings` maps the
    /// plan's buffers to symmetric buffers, for the copy schedule and the
    /// `synco_buffer_<name>` arguments (the kernel's staging buffers come
    /// with it and need no binding).
    /// A kernel that runs once per ring step (`FusedPlan::ring_steps`)
    /// launches once for each step, in a row.
    pub fn launch(
        &mut self,
        kernel: &FusedKernel,
        grid: (u32, u32, u32),
        args: &dyn Fn(usize) -> Vec<Arg>,
        bindings: &[(&str, Buffer)],
    ) -> Result<()> {
        let Some(ring) = ring_steps(kernel) else {
            self.ring_step = None;
            return self.launch_step(kernel, grid, args, bindings);
        };
        for step in 0..ring.steps {
            self.ring_step = Some(step);
            let launched = self.launch_step(kernel, grid, args, bindings);
            self.ring_step = None;
            launched?;
        }
        Ok(())
    }

    /// One launch of the kernel on every rank: the whole operation, or the
    /// ring step `self.ring_step` of it.
    fn launch_step(
        &mut self,
        kernel: &FusedKernel,
        grid: (u32, u32, u32),
        args: &dyn Fn(usize) -> Vec<Arg>,
        bindings: &[(&str, Buffer)],
    ) -> Result<()> {
        self.check_not_failed()?;
        if kernel.chunks_marked_present.get() {
            return Err(RuntimeError::NotAlone {
                kernel: kernel.manifest.kernel.clone(),
                reason: "its chunks were marked present (mark_chunks_present): it would wait for no peer; only launch_alone runs it",
            });
        }
        let grid = self.checked_grid(kernel, grid, args, bindings)?;
        let bindings = kernel.with_staging(bindings);
        let bindings = bindings.as_slice();
        let programs = grid.0 as usize * grid.1 as usize * grid.2 as usize;
        let scratch_bytes = scratch_layout(kernel, programs)?.total;
        // A launch captured in a CUDA graph, and every launch of the
        // kernel after it, replays (`docs/graph-capture.md`).
        let captured = self.capturing()?;
        if captured {
            self.check_capturable(kernel, scratch_bytes)?;
            kernel.replays.set(true);
        }
        self.captured = captured;
        let first_launch = kernel.epochs() == 0;
        // Epochs count this kernel's launches: its flags and counters see
        // every one of them (counters grow by a fixed amount per launch).
        // Launches that replay are all epoch 1, on zeroed words.
        let counted = kernel.next_epoch();
        // (Ring steps that replay are epochs 1 to W of their call: the
        // kernel tells its step from the epoch.)
        let epoch = match (kernel.replays(), self.ring_step) {
            (true, Some(step)) => step + 1,
            _ => counted,
        };
        self.epoch = epoch;
        check_ring_step(kernel, epoch, self.ring_step)?;
        // (A call of ring steps keeps every step's stream waits.)
        if self.ring_step.unwrap_or(0) == 0 {
            self.stream_waits.borrow_mut().clear();
        }
        self.ring_call = self.ring_step.is_some();
        self.drop_timeline()?;
        self.grow_scratch(scratch_bytes)?;
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
        for rank in self.local_ranks() {
            if kernel.replays() {
                self.enter_replayed_launch(rank, kernel, &mut marks)?;
            } else {
                self.start_launch(rank, kernel, epoch, &mut marks)?;
            }
        }
        if first_launch {
            for rank in self.local_ranks() {
                self.await_first_starts(rank, kernel, epoch)?;
            }
        }
        if self.fault == super::Fault::StallIssue {
            std::thread::sleep(super::STALLED_ISSUE);
        }
        // Copies the kernel waits for (an all-gather's chunks) go to every
        // GPU before any kernel: issued after one, they timed out with
        // ranks sharing a GPU (likely copies the driver runs on SMs, queued
        // behind tiles that wait for them).
        if let Some(fused) = self.work_of(kernel) {
            for rank in self.local_ranks() {
                self.local(rank).bind()?;
                self.enqueue_copies(
                    rank,
                    kernel,
                    fused,
                    bindings,
                    epoch,
                    &mut spans,
                    CopyPhase::SideStream,
                )?;
            }
        }
        for rank in self.local_ranks() {
            self.issue_kernel(
                rank,
                kernel,
                grid,
                &args(rank),
                bindings,
                epoch,
                copies_ordered_by_streams,
                &mut spans,
                &mut marks,
            )?;
        }
        // Then the copies that wait for the kernels' tiles (a reduction's
        // partials and sums, a gathered output's chunks), issued after every
        // rank's kernel so that no kernel waits for the host to issue them,
        // nor for another rank's (the copies wait for the tiles' flags on
        // the GPU)...
        if let Some(fused) = &kernel.manifest.fused {
            for rank in self.local_ranks() {
                let gpu = self.local(rank);
                gpu.bind()?;
                if self.issues_work() {
                    self.enqueue_reduction_copies(
                        rank, kernel, fused, bindings, epoch, &mut spans,
                    )?;
                }
                self.signal_copies_done(rank, kernel, epoch)?;
                if !kernel.sync.rank(rank).uses_copy_stream {
                    continue;
                }
                // The end of this launch's side-stream work on the rank:
                // its launch ends after it (its pushes have read what they
                // send), and its next kernel waits for it where the streams
                // keep the epochs apart.
                unsafe {
                    check(
                        rank,
                        "cuEventRecord",
                        sys::cuEventRecord(gpu.copies_done, gpu.copy),
                    )?;
                }
            }
        }
        // ...and each rank's completion, after every rank's copies (it may
        // wait for the signals they send in this launch).
        for rank in self.local_ranks() {
            self.end_launch(rank, kernel, epoch, &mut marks)?;
        }
        self.timeline = spans;
        self.marks = marks;
        Ok(())
    }

    /// The grid to launch (`grid` with the copy programs in front) once
    /// the launch checks out: the plan's ranks, a persistent kernel's
    /// programs, the bindings and bound arguments, and programs that must
    /// be resident at once.
    fn checked_grid(
        &self,
        kernel: &FusedKernel,
        grid: (u32, u32, u32),
        args: &dyn Fn(usize) -> Vec<Arg>,
        bindings: &[(&str, Buffer)],
    ) -> Result<(u32, u32, u32)> {
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
        // Every rank's arguments (count, types, values the kernel assumes
        // divisible), before any rank's work is issued.
        for rank in self.local_ranks() {
            crate::bindings::check_user_args(&kernel.manifest, rank, &args(rank))?;
        }
        // The values the kernel computes from its grid and arguments stay
        // within the plan's buffers (evaluated again only for a new grid
        // or new integer arguments).
        let bounded = kernel.manifest.fused.as_ref();
        if bounded.is_some_and(|f| !f.index_bounds.is_empty()) {
            let key = crate::args::bounds_key(&kernel.manifest, grid, self.local_ranks(), args)?;
            if kernel.bounds_checked_for.borrow().as_ref() != Some(&key) {
                for rank in self.local_ranks() {
                    let given = args(rank);
                    crate::bindings::check_index_bounds(&kernel.manifest, rank, grid, &given)?;
                }
                *kernel.bounds_checked_for.borrow_mut() = Some(key);
            }
        }
        // Bindings and bound arguments, before any rank's work is issued.
        crate::bindings::check(
            &kernel.manifest,
            self.local_ranks(),
            bindings,
            args,
            &|rank, buffer| self.ptr(rank, buffer),
        )?;
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
                let sharing = self.sharing(gpu.rank);
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
        Ok(grid)
    }

    /// Triton's global scratch (per program), grown for every rank to
    /// `scratch_bytes` before any kernel of this launch is issued: cuMemFree
    /// waits for the GPU's work, so freeing a rank's old scratch after a
    /// co-located rank's kernel was issued would wait for that kernel,
    /// which waits for this rank's (seen as a timeout with ranks sharing
    /// GPUs).
    pub(super) fn grow_scratch(&mut self, scratch_bytes: usize) -> Result<()> {
        for (index, gpu) in self.gpus.iter().enumerate() {
            let (old, bytes) = self.scratch[index];
            if scratch_bytes > bytes {
                gpu.bind()?;
                unsafe {
                    if old != 0 {
                        check(gpu.rank, "cuMemFree", sys::cuMemFree_v2(old))?;
                    }
                    let mut p = 0;
                    check(
                        gpu.rank,
                        "cuMemAlloc",
                        sys::cuMemAlloc_v2(&mut p, scratch_bytes),
                    )?;
                    self.scratch[index] = (p, scratch_bytes);
                }
            }
        }
        Ok(())
    }

    /// `rank`'s end of a launch: it waits for its own side stream's copies,
    /// for what peers write into it that no kernel waits for, for the
    /// peers' kernels that reach into its heap or copy its rows, and for
    /// the last chunk each peer pushes into it, then records its end, after
    /// which its next launch's copies may overwrite what this kernel read
    /// (and the caller's stream may reuse every buffer of the launch).
    fn end_launch(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        epoch: u32,
        marks: &mut LaunchMarks,
    ) -> Result<()> {
        let gpu = self.local(rank);
        gpu.bind()?;
        let g = rank;
        let sync = kernel.sync.rank(rank);
        // This rank's side stream: its pushes have read what they send, and
        // its copies into itself that set no flag are there.
        if sync.uses_copy_stream {
            unsafe {
                check(
                    g,
                    "cuStreamWaitEvent",
                    sys::cuStreamWaitEvent(gpu.compute, gpu.copies_done, 0),
                )?;
            }
        }
        // Peers' copies into this rank that set no flag, and peers' kernels
        // that reach into its heap: their signals.
        for &source in &sync.waits_copies_done {
            self.wait_word(
                rank,
                gpu.compute,
                kernel,
                kernel.words.copies_done_by(source),
                epoch,
            )?;
        }
        for &peer in &sync.waits_kernel_done {
            self.wait_word(
                rank,
                gpu.compute,
                kernel,
                kernel.words.kernel_done_by(peer),
                epoch,
            )?;
        }
        // Peers' pushes into this rank, to the last: their chunks that no
        // tile waited for (past a causal bound) have landed too.
        for &flag in &sync.waits_last_arrivals {
            self.wait_word(rank, gpu.compute, kernel, flag, epoch)?;
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
            self.wait_word(rank, gpu.compute, kernel, flag as usize, target)?;
        }
        if kernel.replays() {
            self.leave_replayed_launch(rank, kernel)?;
        }
        if let Some(event) = self.timeline_event(rank, gpu.compute)? {
            marks.ended.push(event);
        }
        // (A launch that replays leaves the copy stream joined: its next
        // launch's copies wait for that launch's start barrier.)
        if !sync.uses_copy_stream || kernel.replays() {
            return Ok(());
        }
        unsafe {
            check(g, "cuEventRecord", sys::cuEventRecord(gpu.end, gpu.compute))?;
            // The next launch's copies overwrite rows this kernel reads.
            // (A kernel that leaves the copy stream alone needs no such
            // wait: another kernel's copies wait for their own launch's
            // start, after this end on the compute stream.)
            check(
                g,
                "cuStreamWaitEvent",
                sys::cuStreamWaitEvent(gpu.copy, gpu.end, 0),
            )?;
        }
        Ok(())
    }

    /// `rank`'s kernel, on its compute stream: after the copies into it
    /// that stay within its GPU (and, where the streams keep the epochs
    /// apart, its previous launch's reduction copies), with the user's
    /// arguments `args` and the ABI's.
    #[allow(clippy::too_many_arguments)]
    fn issue_kernel(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        grid: (u32, u32, u32),
        args: &[Arg],
        bindings: &[(&str, Buffer)],
        epoch: u32,
        copies_ordered_by_streams: bool,
        spans: &mut Vec<PendingCopy>,
        marks: &mut LaunchMarks,
    ) -> Result<()> {
        let gpu = self.local(rank);
        gpu.bind()?;
        let programs = grid.0 as usize * grid.1 as usize * grid.2 as usize;
        let scratch = self.scratch[rank - self.local_ranks().start].0;
        let state = scratch + scratch_layout(kernel, programs)?.state_offset as u64;
        let abi = |name: &str| match name {
            STEP_STATE_PARAM => Some(Arg::Ptr(state)),
            _ => self.abi_arg(rank, kernel, epoch, bindings, name),
        };
        // The kernel, and the copies in front of it, start once the peers
        // they read or write have started (their previous work is done).
        // (A launch that replays has waited for every peer's start.)
        let sync = kernel.sync.rank(rank);
        for &peer in kernel.start_waits(&sync.kernel_waits_start) {
            self.wait_word(
                rank,
                gpu.compute,
                kernel,
                kernel.words.started_by(peer),
                epoch,
            )?;
        }
        // Copies into this rank within its GPU (its own, or from a rank
        // sharing the GPU) go in front of its kernel, on its stream:
        // the driver may run them on SMs, which the kernel's tiles,
        // waiting for them, would hold.
        if let Some(fused) = self.work_of(kernel) {
            self.enqueue_copies(
                rank,
                kernel,
                fused,
                bindings,
                epoch,
                spans,
                CopyPhase::BeforeKernel,
            )?;
        }
        // The previous launch's reduction copies have read the rows this
        // kernel's tiles overwrite (partials, sums): the copy engine's
        // kernels count on it instead of flags. (The previous launch's end
        // waited for them already; a launch that replays leaves out the
        // wait, whose event a capture may not have recorded.)
        if copies_ordered_by_streams && !kernel.replays() {
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
        if self.issues_work() {
            kernel.launch_on(rank, gpu.compute, grid, args, &abi, scratch)?;
        }
        self.signal_kernel_done(rank, kernel, epoch)
    }

    /// The value of the fused kernel's ABI parameter `name` on `rank` for
    /// `epoch` (`synco_rank`, `synco_flags`, a bound `synco_buffer_<name>`,
    /// ...), or `None` for a name that is not one.
    pub(super) fn abi_arg(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        epoch: u32,
        bindings: &[(&str, Buffer)],
        name: &str,
    ) -> Option<Arg> {
        let gpu = self.local(rank);
        Some(match name {
            "synco_rank" => Arg::I32(rank as i32),
            "synco_world_size" => Arg::I32(self.world_size() as i32),
            "synco_heap_bases" => Arg::Ptr(gpu.heap_bases),
            "synco_flags" => Arg::Ptr(self.ptr(rank, &kernel.flags)),
            "synco_epoch" => Arg::I32(epoch as i32),
            "synco_errors" => Arg::Ptr(gpu.errors),
            other => {
                let buffer = other.strip_prefix("synco_buffer_")?;
                Arg::Ptr(self.ptr(rank, &bound(bindings, buffer).ok()?))
            }
        })
    }

    /// Whether launches issue their copies and kernels (all but a node
    /// with [`super::Fault::WithholdWork`] injected).
    fn issues_work(&self) -> bool {
        self.fault != super::Fault::WithholdWork
    }

    /// `kernel`'s fused plan, where its launches issue their copies (see
    /// [`Node::issues_work`]).
    fn work_of<'k>(&self, kernel: &'k FusedKernel) -> Option<&'k synco_manifest::FusedPlan> {
        kernel
            .manifest
            .fused
            .as_ref()
            .filter(|_| self.issues_work())
    }

    /// After `rank`'s kernel, from its signal stream: the epoch in the
    /// `kernel_done_by` word of every peer whose heap the kernel reaches
    /// into (their launches end after it).
    fn signal_kernel_done(&self, rank: usize, kernel: &FusedKernel, epoch: u32) -> Result<()> {
        let peers = &kernel.sync.rank(rank).signals_kernel_done;
        if peers.is_empty() {
            return Ok(());
        }
        let gpu = self.local(rank);
        unsafe {
            check(
                rank,
                "cuEventRecord",
                sys::cuEventRecord(gpu.kernel_done, gpu.compute),
            )?;
            check(
                rank,
                "cuStreamWaitEvent",
                sys::cuStreamWaitEvent(gpu.signal, gpu.kernel_done, 0),
            )?;
        }
        // (The start signal wrote the epoch into the signal word already,
        // on this stream, where it signalled anyone.)
        let written = !kernel.replays() && !kernel.sync.rank(rank).signals_start.is_empty();
        let epoch = (!written).then_some(epoch);
        self.send_epoch(
            rank,
            gpu.signal,
            kernel,
            kernel.words.signal_epoch(),
            epoch,
            peers,
            &|w| w.kernel_done_by(rank),
        )
    }

    /// `rank`'s start of a launch: an event on its compute stream (its
    /// previous work done) for its own streams, and the epoch in the
    /// `started_by` word of every peer that waits for it, sent from the
    /// signal stream.
    fn start_launch(
        &self,
        rank: usize,
        kernel: &FusedKernel,
        epoch: u32,
        marks: &mut LaunchMarks,
    ) -> Result<()> {
        let gpu = self.local(rank);
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
        let peers = &kernel.sync.rank(rank).signals_start;
        if peers.is_empty() {
            return Ok(());
        }
        unsafe {
            check(
                rank,
                "cuStreamWaitEvent",
                sys::cuStreamWaitEvent(gpu.signal, gpu.start, 0),
            )?;
        }
        self.send_epoch(
            rank,
            gpu.signal,
            kernel,
            kernel.words.signal_epoch(),
            Some(epoch),
            peers,
            &|w| w.started_by(rank),
        )
    }

    /// The first launch of a kernel on a node waits on the host, before
    /// issuing anything that waits for peers, until every peer `rank`'s
    /// streams wait for has started (at most the peer timeout): a kernel's
    /// first `cuLaunchKernel`, queued behind a stream wait for a peer that
    /// never starts, did not return (seen on an H200 with driver 580, with
    /// the function loaded and with CUDA's eager module loading too; a
    /// later launch behind the same wait returned at once).
    fn await_first_starts(&self, rank: usize, kernel: &FusedKernel, epoch: u32) -> Result<()> {
        let mut peers: Vec<usize> = kernel.sync.rank(rank).waits_start().collect();
        peers.sort_unstable();
        peers.dedup();
        let gpu = self.local(rank);
        let began = std::time::Instant::now();
        for peer in peers {
            let index = kernel.words.started_by(peer);
            let word = self.ptr(rank, &kernel.flags) + 4 * index as u64;
            while self.read_word(gpu, word)? < epoch {
                if began.elapsed() > self.peer_timeout {
                    let error = RuntimeError::PeerTimedOut {
                        rank,
                        awaited: kernel.words.awaited(index).to_string(),
                        epoch,
                        seconds: began.elapsed().as_secs_f64(),
                    };
                    self.fail(rank, &error);
                    return Err(error);
                }
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
        Ok(())
    }

    /// After `rank`'s reduction copies, on its copy stream: the epoch in
    /// the `copies_done_by` word of every peer whose launch ends after
    /// them.
    fn signal_copies_done(&self, rank: usize, kernel: &FusedKernel, epoch: u32) -> Result<()> {
        let peers = &kernel.sync.rank(rank).signals_copies_done;
        if peers.is_empty() {
            return Ok(());
        }
        let gpu = self.local(rank);
        // (Its epoch word is zeroed as a launch that replays starts.)
        if kernel.replays() {
            self.wait_peers_entered(rank, gpu.copy)?;
        }
        self.send_epoch(
            rank,
            gpu.copy,
            kernel,
            kernel.words.copy_epoch(),
            Some(epoch),
            peers,
            &|w| w.copies_done_by(rank),
        )
    }

    /// On `stream` of `rank`: `epoch` into its word `source` (unless
    /// `epoch` is `None`: the stream wrote it already in this launch), then
    /// copied into the word `word(..)` of each of `peers`' flags.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_epoch(
        &self,
        rank: usize,
        stream: sys::CUstream,
        kernel: &FusedKernel,
        source: usize,
        epoch: Option<u32>,
        peers: &[usize],
        word: &dyn Fn(&crate::sync::SyncWords) -> usize,
    ) -> Result<()> {
        let source = self.ptr(rank, &kernel.flags) + 4 * source as u64;
        let target = 4 * word(&kernel.words) as u64;
        unsafe {
            if let Some(epoch) = epoch {
                check(
                    rank,
                    "cuStreamWriteValue32",
                    sys::cuStreamWriteValue32_v2(stream, source, epoch, 0),
                )?;
            }
            for &peer in peers {
                check(
                    rank,
                    "cuMemcpyAsync",
                    sys::cuMemcpyAsync(self.ptr(peer, &kernel.flags) + target, source, 4, stream),
                )?;
            }
        }
        Ok(())
    }

    /// `stream` (one of `rank`'s) waits until `rank`'s word `index` of
    /// `kernel`'s flags (a flag, a counter or a sync word) reaches `value`.
    pub(crate) fn wait_word(
        &self,
        rank: usize,
        stream: sys::CUstream,
        kernel: &FusedKernel,
        index: usize,
        value: u32,
    ) -> Result<()> {
        let word = self.ptr(rank, &kernel.flags) + 4 * index as u64;
        self.stream_wait(rank, stream, word, value, kernel.words.awaited(index))
    }

    /// Makes `rank`'s `stream` wait for flag `flag` of rank `owner` to
    /// reach `value` (a chunk `rank` forwards once it arrived at `owner`).
    pub(crate) fn wait_peer_flag(
        &self,
        rank: usize,
        stream: sys::CUstream,
        kernel: &FusedKernel,
        owner: usize,
        flag: usize,
        value: u32,
    ) -> Result<()> {
        let word = self.ptr(owner, &kernel.flags) + 4 * flag as u64;
        let awaited = crate::sync::Awaited::PeerFlag { owner, flag };
        self.stream_wait(rank, stream, word, value, awaited)
    }

    /// Makes `rank`'s `stream` wait for `word` to reach `value`, recorded
    /// for the watchdog as a wait for `awaited`.
    fn stream_wait(
        &self,
        rank: usize,
        stream: sys::CUstream,
        word: sys::CUdeviceptr,
        value: u32,
        awaited: crate::sync::Awaited,
    ) -> Result<()> {
        self.stream_waits.borrow_mut().push(super::StreamWait {
            rank,
            word,
            value,
            awaited,
            epoch: self.epoch,
        });
        unsafe {
            check(
                rank,
                "cuStreamWaitValue32",
                sys::cuStreamWaitValue32_v2(
                    stream,
                    word,
                    value,
                    sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
                ),
            )
        }
    }
}
