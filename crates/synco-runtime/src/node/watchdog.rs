//! The watchdog ([`Node::wait`]), the launch's timing and the error
//! buffers.

use super::{Node, check};
use crate::error::{Result, RuntimeError};
use cudarc::driver::sys::{self, CUevent, CUresult};
use std::time::{Duration, Instant};

impl Node {
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
