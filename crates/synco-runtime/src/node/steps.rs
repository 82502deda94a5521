//! Kernels that run once per ring step (`FusedPlan::ring_steps`: a ring's
//! gathered blocks kept in two slots): which step a launch runs, and where
//! the programs keep their state between the steps' launches.

use crate::{
    error::{Result, RuntimeError},
    kernel::FusedKernel,
};

/// The ABI parameter of a kernel that runs once per ring step: its
/// programs' state between the steps' launches.
pub(super) const STEP_STATE_PARAM: &str = "synco_step_state";

/// The ring steps of a kernel that runs once per ring step.
pub(super) fn ring_steps(kernel: &FusedKernel) -> Option<synco_manifest::RingSteps> {
    kernel.manifest.fused.as_ref().and_then(|f| f.ring_steps)
}

/// A launch's scratch: Triton's global scratch for every program, then
/// (for a kernel that runs once per ring step) every program's state, at
/// `state_offset`.
pub(super) struct ScratchLayout {
    pub total: usize,
    pub state_offset: usize,
}

/// The scratch a launch of `programs` programs of `kernel` takes.
pub(super) fn scratch_layout(kernel: &FusedKernel, programs: usize) -> Result<ScratchLayout> {
    let too_large = || RuntimeError::NotLaunchable {
        kernel: kernel.manifest.kernel.clone(),
        reason: "its scratch for this grid would exceed the address space".into(),
    };
    let per_program = |bytes: u64| {
        usize::try_from(bytes)
            .ok()
            .and_then(|b| b.checked_mul(programs))
            .ok_or_else(too_large)
    };
    let triton = per_program(kernel.manifest.global_scratch.size)?;
    let Some(ring) = ring_steps(kernel) else {
        return Ok(ScratchLayout {
            total: triton,
            state_offset: triton,
        });
    };
    let state_offset = triton.checked_next_multiple_of(256).ok_or_else(too_large)?;
    let total = state_offset
        .checked_add(per_program(ring.state_bytes)?)
        .ok_or_else(too_large)?;
    Ok(ScratchLayout {
        total,
        state_offset,
    })
}

/// Refuses a launch of a kernel that runs once per ring step whose epoch
/// is not its step's (`(epoch - 1) mod steps`, what the kernel computes
/// its step from): a call stopped between its launches.
pub(super) fn check_ring_step(kernel: &FusedKernel, epoch: u32, step: Option<u32>) -> Result<()> {
    let (Some(ring), Some(step)) = (ring_steps(kernel), step) else {
        return Ok(());
    };
    if ring.steps == 0 || (epoch.wrapping_sub(1)) % ring.steps != step {
        return Err(RuntimeError::NotLaunchable {
            kernel: kernel.manifest.kernel.clone(),
            reason: format!(
                "it runs once per ring step, and its launch {epoch} would run step {} where step {step} is due: an earlier call stopped between its launches",
                epoch.wrapping_sub(1) % ring.steps.max(1)
            ),
        });
    }
    Ok(())
}
