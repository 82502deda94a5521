//! A launch seen from the streams: when each rank's kernel could start
//! and each side-stream copy ran (`Node::record_timeline`, a diagnostic).

use crate::{
    error::Result,
    node::{Node, check},
};
use cudarc::driver::sys::{self, CUevent, CUstream};

/// The last launch seen from the streams (see [`Node::record_timeline`]).
#[derive(Clone, Debug, Default)]
pub struct LaunchTimeline {
    /// Per rank, when the kernel could start: the compute stream reached it
    /// (an all-gather's copies and the kernels of lower ranks are issued
    /// before it, so on an idle GPU this is later than the launch's start).
    pub kernel_start_ms: Vec<f32>,
    pub copies: Vec<CopySpan>,
}

/// The timing events a launch records on the compute stream of every rank
/// this process drives with the timeline on, in rank order: at its start (the rank's previous work
/// done), just before its kernel, and at its end.
#[derive(Default)]
pub(crate) struct LaunchMarks {
    pub(crate) began: Vec<CUevent>,
    pub(crate) kernel: Vec<CUevent>,
    pub(crate) ended: Vec<CUevent>,
}

/// A side-stream copy of the last launch, between CUDA events.
pub(crate) struct PendingCopy {
    rank: usize,
    what: String,
    bytes: u64,
    start: CUevent,
    data_end: CUevent,
    end: CUevent,
}

/// When one side-stream copy of the last launch ran (see
/// [`Node::record_timeline`]), in milliseconds after the launch started on
/// its rank: `start` once the waits before it were satisfied (the chunk's
/// tiles done, the owner done with the previous epoch's), `data_end` once
/// its bytes were copied, `end` once its flag was written too.
#[derive(Clone, Debug)]
pub struct CopySpan {
    pub rank: usize,
    /// Source, destination and owner, e.g. `P -> P_staging on rank 1`.
    pub what: String,
    pub bytes: u64,
    pub start_ms: f32,
    pub data_end_ms: f32,
    pub end_ms: f32,
}

impl Node {
    /// While `on`, every launch records timing events around each of its
    /// side-stream copies and, on each rank's compute stream, at its start,
    /// before its kernel and at its end, for [`Node::timeline`] and
    /// [`Node::elapsed_ms`] (a diagnostic: three events per copy and three
    /// per rank, created at every launch; off by default, as events that
    /// keep time cost the GPU more than the synchronisation events a launch
    /// records anyway).
    pub fn record_timeline(&mut self, on: bool) -> Result<()> {
        self.timeline_on = on;
        if !on {
            self.drop_timeline()?;
        }
        Ok(())
    }

    /// When the last launch's kernels could start and its side-stream
    /// copies ran, rank by rank, in milliseconds after the launch started
    /// on that rank (call [`Node::wait`] first; empty unless
    /// [`Node::record_timeline`] was on).
    pub fn timeline(&self) -> Result<LaunchTimeline> {
        let since_start = |rank: usize, event: CUevent| self.ms_since_start(rank, event);
        let copies = self
            .timeline
            .iter()
            .map(|copy| {
                Ok(CopySpan {
                    rank: copy.rank,
                    what: copy.what.clone(),
                    bytes: copy.bytes,
                    start_ms: since_start(copy.rank, copy.start)?,
                    data_end_ms: since_start(copy.rank, copy.data_end)?,
                    end_ms: since_start(copy.rank, copy.end)?,
                })
            })
            .collect::<Result<_>>()?;
        let kernel_start_ms = self
            .marks
            .kernel
            .iter()
            .zip(self.local_ranks())
            .map(|(&event, rank)| since_start(rank, event))
            .collect::<Result<_>>()?;
        Ok(LaunchTimeline {
            kernel_start_ms,
            copies,
        })
    }

    /// Destroys the events of the last launch's timeline.
    pub(crate) fn drop_timeline(&mut self) -> Result<()> {
        let marks = std::mem::take(&mut self.marks);
        for events in [marks.began, marks.kernel, marks.ended] {
            for (event, rank) in events.into_iter().zip(self.local_ranks()) {
                self.local(rank).bind()?;
                // SAFETY: an event this node created (as below).
                unsafe { check(rank, "cuEventDestroy", sys::cuEventDestroy_v2(event))? };
            }
        }
        for copy in std::mem::take(&mut self.timeline) {
            self.local(copy.rank).bind()?;
            // SAFETY: events this node created; a launch that recorded them
            // may still run: CUDA releases them once it is done.
            for event in [copy.start, copy.data_end, copy.end] {
                unsafe { check(copy.rank, "cuEventDestroy", sys::cuEventDestroy_v2(event))? };
            }
        }
        Ok(())
    }

    /// With the timeline on, records a side-stream copy of `bytes` whose
    /// start and data events were recorded (`events`), ending now.
    pub(crate) fn close_span(
        &self,
        spans: &mut Vec<PendingCopy>,
        rank: usize,
        events: [Option<CUevent>; 2],
        bytes: u64,
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        if let ([Some(start), Some(data_end)], Some(end)) = (events, self.side_stream_event(rank)?)
        {
            spans.push(PendingCopy {
                rank,
                what: what(),
                bytes,
                start,
                data_end,
                end,
            });
        }
        Ok(())
    }

    /// With the timeline on, an event recorded now on `rank`'s side stream.
    pub(crate) fn side_stream_event(&self, rank: usize) -> Result<Option<CUevent>> {
        self.timeline_event(rank, self.local(rank).copy)
    }

    /// With the timeline on, an event recorded now on `stream`, one of
    /// `rank`'s streams.
    pub(crate) fn timeline_event(&self, rank: usize, stream: CUstream) -> Result<Option<CUevent>> {
        if !self.timeline_on {
            return Ok(None);
        }
        let mut event = std::ptr::null_mut();
        // SAFETY: plain event creation and recording on this rank's
        // context (bound by the caller).
        unsafe {
            check(rank, "cuEventCreate", sys::cuEventCreate(&mut event, 0))?;
            check(rank, "cuEventRecord", sys::cuEventRecord(event, stream))?;
        }
        Ok(Some(event))
    }
}
