//! The watchdog ([`Node::wait`]), the launch's timing and the error
//! buffers.

use super::{Node, check};
use crate::error::{Result, RuntimeError};
use cudarc::driver::sys::{self, CUevent, CUresult};
use std::time::{Duration, Instant};

impl Node {
    /// Waits (at most `deadline`) for the last launch of every rank this
    /// process drives, then checks their error buffers (see the crate
    /// docs). A launch that timed out or never finished leaves the node
    /// failed: peers may still wait for it, so it launches nothing more.
    pub fn wait(&self, deadline: Duration) -> Result<()> {
        self.check_not_failed()?;
        let result = self.wait_for_streams(deadline);
        let failed_rank = match &result {
            Err(RuntimeError::Hung { rank, .. }) => Some(*rank),
            Err(RuntimeError::WaitTimedOut { rank, .. }) => Some(*rank as usize),
            _ => None,
        };
        if let (Some(rank), Err(e)) = (failed_rank, &result) {
            *self.failed.borrow_mut() = Some((rank, e.to_string()));
        }
        result
    }

    /// An error if an earlier [`Node::wait`] found a launch that timed out.
    pub(crate) fn check_not_failed(&self) -> Result<()> {
        match &*self.failed.borrow() {
            Some((rank, reason)) => Err(RuntimeError::Failed {
                rank: *rank,
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Each rank's streams done by the deadline, else `Hung`; a wait that
    /// timed out on the GPU is reported first either way (a rank whose
    /// peer never arrives has tiles that time out and a stream that still
    /// waits for the peer's signal).
    fn wait_for_streams(&self, deadline: Duration) -> Result<()> {
        let started = Instant::now();
        for gpu in &self.gpus {
            let rank = gpu.rank;
            gpu.bind()?;
            let mut drained = true;
            for stream in [gpu.compute, gpu.copy, gpu.signal] {
                drained = drained && self.drain(gpu, stream, started, deadline)?;
            }
            if let Some(e) = self.recorded_timeout(gpu)? {
                return Err(e);
            }
            if !drained {
                return Err(RuntimeError::Hung {
                    rank,
                    epoch: self.epoch,
                    seconds: started.elapsed().as_secs_f64(),
                });
            }
        }
        Ok(())
    }

    /// Whether `stream`, one of `gpu`'s, finished its work before
    /// `deadline` (from `started`); a wait its kernels recorded as timed
    /// out ends it early, as an error (every few milliseconds the error
    /// buffer is read: a stream behind a dead peer never drains).
    fn drain(
        &self,
        gpu: &super::Gpu,
        stream: sys::CUstream,
        started: Instant,
        deadline: Duration,
    ) -> Result<bool> {
        let rank = gpu.rank;
        for polls in 0u64.. {
            if polls % 100 == 99
                && let Some(e) = self.recorded_timeout(gpu)?
            {
                return Err(e);
            }
            let code = unsafe { sys::cuStreamQuery(stream) };
            if code == CUresult::CUDA_SUCCESS {
                return Ok(true);
            }
            if code != CUresult::CUDA_ERROR_NOT_READY {
                return Err(RuntimeError::Cuda {
                    call: "cuStreamQuery",
                    rank,
                    code,
                });
            }
            if started.elapsed() > deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        Ok(false)
    }

    /// The wait `gpu`'s kernels recorded as timed out, if any: read on its
    /// own stream, as the others may still wait (the caller's compute
    /// stream may be the legacy one, which a plain copy would queue
    /// behind).
    fn recorded_timeout(&self, gpu: &super::Gpu) -> Result<Option<RuntimeError>> {
        let mut record = [0i32; 4];
        unsafe {
            check(
                gpu.rank,
                "cuMemcpyDtoHAsync",
                sys::cuMemcpyDtoHAsync_v2(record.as_mut_ptr().cast(), gpu.errors, 16, gpu.watch),
            )?;
            check(gpu.rank, "cuStreamSynchronize", sys::cuStreamSynchronize(gpu.watch))?;
        }
        Ok((record[0] != 0).then_some(RuntimeError::WaitTimedOut {
            rank: record[1],
            chunk: record[2],
            epoch: record[3],
        }))
    }

    /// Milliseconds each rank's last launch took on its compute stream
    /// (after [`Node::wait`]; the launch must have recorded its timeline,
    /// see [`Node::record_timeline`]).
    pub fn elapsed_ms(&self) -> Result<Vec<f32>> {
        self.local_ranks()
            .zip(&self.marks.ended)
            .map(|(rank, &ended)| self.ms_since_start(rank, ended))
            .collect::<Result<Vec<_>>>()
            .and_then(|ms| {
                if ms.is_empty() {
                    Err(RuntimeError::NoTimeline)
                } else {
                    Ok(ms)
                }
            })
    }

    /// Milliseconds from `rank`'s last launch's start to `event`, a timing
    /// event recorded on one of that rank's streams by the launch (which
    /// has completed) with the timeline on.
    pub(crate) fn ms_since_start(&self, rank: usize, event: CUevent) -> Result<f32> {
        let index = rank - self.local_ranks().start;
        let began = *self.marks.began.get(index).ok_or(RuntimeError::NoTimeline)?;
        self.local(rank).bind()?;
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

    /// Clears the error buffer of every rank this process drives and the
    /// node's failed state, after a reported error, for a caller that knows
    /// every launch has drained (all ranks in this process, say, as a
    /// benchmark that goes on to its next variant).
    pub fn clear_errors(&self) -> Result<()> {
        self.failed.borrow_mut().take();
        for gpu in &self.gpus {
            gpu.bind()?;
            unsafe { check(gpu.rank, "cuMemsetD8", sys::cuMemsetD8_v2(gpu.errors, 0, 16))? };
        }
        Ok(())
    }
}
