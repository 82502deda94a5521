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
            Err(RuntimeError::PeerTimedOut { rank, .. }) => Some(*rank),
            Err(RuntimeError::WaitTimedOut { rank, .. }) => Some(*rank as usize),
            _ => None,
        };
        if let (Some(rank), Err(e)) = (failed_rank, &result) {
            self.fail(rank, e);
        }
        result
    }

    /// Leaves the node failed by `error` on `rank`: peers may still wait
    /// for it, so it launches nothing more.
    pub(crate) fn fail(&self, rank: usize, error: &RuntimeError) {
        *self.failed.borrow_mut() = Some((rank, error.to_string()));
    }

    /// The word at `word` (in `gpu`'s rank's heap), read on the watch
    /// stream, behind nothing else.
    pub(crate) fn read_word(&self, gpu: &super::Gpu, word: sys::CUdeviceptr) -> Result<u32> {
        let mut bytes = [0u8; 4];
        read_watched(gpu, word, &mut bytes)?;
        Ok(u32::from_ne_bytes(bytes))
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
    /// waits for the peer's signal), and a stream that waits at a peer's
    /// signal for longer than the peer timeout ends the wait early.
    fn wait_for_streams(&self, deadline: Duration) -> Result<()> {
        let started = Instant::now();
        for gpu in &self.gpus {
            let rank = gpu.rank;
            gpu.bind()?;
            let mut drained = true;
            let mut launch_seen = None;
            for stream in [gpu.compute, gpu.copy, gpu.signal] {
                drained =
                    drained && self.drain(gpu, stream, started, deadline, &mut launch_seen)?;
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
    /// out, or a stream wait stuck at a peer's signal, ends it early, as
    /// an error (every few milliseconds both are looked at: a stream
    /// behind a dead peer never drains). `launch_seen` is when the
    /// watchdog first saw the launch started on the rank.
    fn drain(
        &self,
        gpu: &super::Gpu,
        stream: sys::CUstream,
        started: Instant,
        deadline: Duration,
        launch_seen: &mut Option<Instant>,
    ) -> Result<bool> {
        let rank = gpu.rank;
        for polls in 0u64.. {
            if polls % 100 == 99 {
                if let Some(e) = self.recorded_timeout(gpu)? {
                    return Err(e);
                }
                if let Some(e) = self.stuck_stream_wait(gpu, launch_seen)? {
                    return Err(e);
                }
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

    /// The wait `gpu`'s kernels recorded as timed out, if any (read on the
    /// watch stream).
    fn recorded_timeout(&self, gpu: &super::Gpu) -> Result<Option<RuntimeError>> {
        let mut bytes = [0u8; 16];
        read_watched(gpu, gpu.errors, &mut bytes)?;
        let record: Vec<i32> = bytes
            .chunks_exact(4)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok((record[0] != 0).then_some(RuntimeError::WaitTimedOut {
            rank: record[1],
            chunk: record[2],
            epoch: record[3],
        }))
    }

    /// The first of the last launch's stream waits (a call of ring steps:
    /// of all its launches) on `gpu`'s rank whose
    /// word is still short of its value, once the launch has been seen
    /// started on the rank (its start event done, or, for a launch captured
    /// in a CUDA graph, the watchdog waiting) for longer than the peer
    /// timeout: the streams behind it wait for a peer that died, hung
    /// or never launched.
    fn stuck_stream_wait(
        &self,
        gpu: &super::Gpu,
        launch_seen: &mut Option<Instant>,
    ) -> Result<Option<RuntimeError>> {
        let rank = gpu.rank;
        // (A captured launch's start event belongs to its graph, and a
        // call of ring steps's last start event may be behind an earlier
        // step's stuck wait: the watchdog counts those from when it began
        // to wait.)
        if launch_seen.is_none() && (self.captured || self.ring_call) {
            *launch_seen = Some(Instant::now());
        }
        if launch_seen.is_none() {
            let code = unsafe { sys::cuEventQuery(gpu.start) };
            match code {
                CUresult::CUDA_SUCCESS => *launch_seen = Some(Instant::now()),
                CUresult::CUDA_ERROR_NOT_READY => return Ok(None),
                code => {
                    return Err(RuntimeError::Cuda {
                        call: "cuEventQuery",
                        rank,
                        code,
                    });
                }
            }
        }
        let waited = launch_seen.map_or(Duration::ZERO, |seen| seen.elapsed());
        if waited <= self.peer_timeout {
            return Ok(None);
        }
        let waits: Vec<_> = self
            .stream_waits
            .borrow()
            .iter()
            .filter(|w| w.rank == rank)
            .copied()
            .collect();
        for wait in waits {
            if self.read_word(gpu, wait.word)? < wait.value {
                return Ok(Some(RuntimeError::PeerTimedOut {
                    rank,
                    awaited: wait.awaited.to_string(),
                    epoch: wait.epoch,
                    seconds: waited.as_secs_f64(),
                }));
            }
        }
        Ok(None)
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
        let began = *self
            .marks
            .began
            .get(index)
            .ok_or(RuntimeError::NoTimeline)?;
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
            unsafe {
                check(
                    gpu.rank,
                    "cuMemsetD8",
                    sys::cuMemsetD8_v2(gpu.errors, 0, 16),
                )?
            };
        }
        Ok(())
    }
}

/// `out.len()` bytes from `src` (in `gpu`'s context), read on its watch
/// stream: behind nothing else, so it answers while the rank's other
/// streams wait (the caller's compute stream may be the legacy one, which a
/// plain copy would queue behind).
fn read_watched(gpu: &super::Gpu, src: sys::CUdeviceptr, out: &mut [u8]) -> Result<()> {
    unsafe {
        check(
            gpu.rank,
            "cuMemcpyDtoHAsync",
            sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), src, out.len(), gpu.watch),
        )?;
        check(
            gpu.rank,
            "cuStreamSynchronize",
            sys::cuStreamSynchronize(gpu.watch),
        )
    }
}
