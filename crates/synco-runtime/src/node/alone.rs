//! [`Node::launch_alone`]: one rank's fused kernel by itself, every chunk
//! it waits for marked present beforehand ([`Node::mark_chunks_present`]):
//! what the fusion costs the kernel (waits that pass at once, the chunk
//! order, the split loops), measured without peers or copies. For
//! benchmarks: the peers' rows hold whatever the buffers held.

use super::{Node, check};
use crate::{
    args::Arg,
    error::{Result, RuntimeError},
    heap::Buffer,
    kernel::FusedKernel,
};
use cudarc::driver::sys;

impl Node {
    /// Sets every chunk flag of `kernel` on `rank` to `i32::MAX`, so that
    /// each of its waits passes at once in every later epoch. The kernel
    /// then runs only through [`Node::launch_alone`] (a launch with peers
    /// refuses it): load it again for that. Refuses kernels with copy
    /// programs (`ldst`), whose programs would copy and count regardless.
    pub fn mark_chunks_present(&self, rank: usize, kernel: &FusedKernel) -> Result<()> {
        let Some(fused) = alone_plan(kernel)? else {
            return Ok(());
        };
        let gpu = self.gpu(rank)?;
        gpu.bind()?;
        let flags = self.ptr(rank, &kernel.flags);
        unsafe {
            check(
                rank,
                "cuMemsetD32",
                sys::cuMemsetD32_v2(flags, i32::MAX as u32, fused.num_flags.max(0) as usize),
            )?;
        }
        kernel.chunks_marked_present.set(true);
        Ok(())
    }

    /// Launches `kernel` on `rank`'s compute stream alone, over `grid`,
    /// with `args` and `bindings` as [`Node::launch`] takes them: no
    /// copies, no waits for peers, no signals. Its chunks must have been
    /// marked present ([`Node::mark_chunks_present`]). A kernel without a
    /// plan (the local kernel to compare with) runs the same way.
    pub fn launch_alone(
        &mut self,
        kernel: &FusedKernel,
        rank: usize,
        grid: (u32, u32, u32),
        args: &[Arg],
        bindings: &[(&str, Buffer)],
    ) -> Result<()> {
        self.check_not_failed()?;
        if alone_plan(kernel)?.is_some() && !kernel.chunks_marked_present.get() {
            return Err(RuntimeError::NotAlone {
                kernel: kernel.manifest.kernel.clone(),
                reason: "launched alone before mark_chunks_present: its waits would never pass",
            });
        }
        crate::kernel::check_persistent_grid(&kernel.manifest, grid)?;
        crate::bindings::check_user_args(&kernel.manifest, rank, args)?;
        crate::bindings::check_index_bounds(&kernel.manifest, rank, grid, args)?;
        let bindings = kernel.with_staging(bindings);
        let programs = grid.0 as usize * grid.1 as usize * grid.2 as usize;
        let layout = super::steps::scratch_layout(kernel, programs)?;
        self.grow_scratch(layout.total)?;
        // A kernel that runs once per ring step runs every step, in a row.
        let ring = super::steps::ring_steps(kernel);
        for step in 0..ring.map_or(1, |r| r.steps) {
            let epoch = kernel.next_epoch();
            super::steps::check_ring_step(kernel, epoch, ring.map(|_| step))?;
            let gpu = self.gpu(rank)?;
            gpu.bind()?;
            let scratch = self.scratch[rank - self.local_ranks().start].0;
            let state = scratch + layout.state_offset as u64;
            let abi = |name: &str| match name {
                super::steps::STEP_STATE_PARAM => Some(Arg::Ptr(state)),
                _ => self.abi_arg(rank, kernel, epoch, &bindings, name),
            };
            kernel.launch_on(rank, gpu.compute, grid, args, &abi, scratch)?;
        }
        Ok(())
    }
}

/// The fused plan of a kernel that can run alone (`None`: a kernel
/// without a plan): one whose chunks the copy engine moves (no copy
/// programs).
fn alone_plan(kernel: &FusedKernel) -> Result<Option<&synco_manifest::FusedPlan>> {
    let Some(fused) = kernel.manifest.fused.as_ref() else {
        return Ok(None);
    };
    if fused.copy_programs > 0 {
        return Err(RuntimeError::NotAlone {
            kernel: kernel.manifest.kernel.clone(),
            reason: "its copy programs (ldst) copy and count regardless of the flags: only kernels whose chunks the copy engine moves run alone",
        });
    }
    Ok(Some(fused))
}
