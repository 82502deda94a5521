//! Timing on the GPUs: samples of back-to-back operations between CUDA
//! events on every rank, and the per-shape baselines (cuBLAS, peer copies).

use crate::{Cli, GemmArgs, blas::Cublas};
use anyhow::{Result, bail};
use cudarc::driver::sys as cu;
use synco_runtime::{Buffer, Node};

/// The median of `values` (the upper one of an even count; NaN if empty).
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// A CUDA driver call's result as an error naming the call.
pub(crate) fn cuda(call: &str, code: cu::CUresult) -> Result<()> {
    if code != cu::CUresult::CUDA_SUCCESS {
        bail!("{call} failed: {code:?}");
    }
    Ok(())
}

/// CUDA events on every rank's compute stream, for timing.
pub(crate) struct RankEvents {
    /// `(start, end)` per rank.
    events: Vec<(cu::CUevent, cu::CUevent)>,
}

impl RankEvents {
    fn new(node: &Node, ranks: usize) -> Result<RankEvents> {
        let mut events = Vec::new();
        for rank in 0..ranks {
            node.context(rank).bind_to_thread()?;
            let (mut start, mut end) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: plain driver calls on this rank's current context.
            unsafe {
                cuda("cuEventCreate", cu::cuEventCreate(&mut start, 0))?;
                cuda("cuEventCreate", cu::cuEventCreate(&mut end, 0))?;
            }
            events.push((start, end));
        }
        Ok(RankEvents { events })
    }

    fn record(&self, node: &Node, end: bool) -> Result<()> {
        for (rank, (s, e)) in self.events.iter().enumerate() {
            node.context(rank).bind_to_thread()?;
            let event = if end { *e } else { *s };
            // SAFETY: the event belongs to this rank's context.
            unsafe {
                cuda(
                    "cuEventRecord",
                    cu::cuEventRecord(event, node.compute_stream(rank)),
                )?
            };
        }
        Ok(())
    }

    /// The slowest rank's time between the two records.
    fn slowest_ms(&self, node: &Node) -> Result<f64> {
        let mut slowest = 0.0f64;
        for (rank, (s, e)) in self.events.iter().enumerate() {
            node.context(rank).bind_to_thread()?;
            let mut ms = 0.0f32;
            // SAFETY: both events were recorded on this rank's stream.
            unsafe {
                cuda("cuEventSynchronize", cu::cuEventSynchronize(*e))?;
                cuda(
                    "cuEventElapsedTime",
                    cu::cuEventElapsedTime_v2(&mut ms, *s, *e),
                )?;
            }
            slowest = slowest.max(ms as f64);
        }
        Ok(slowest)
    }
}

impl Drop for RankEvents {
    fn drop(&mut self) {
        for (s, e) in &self.events {
            // SAFETY: created by cuEventCreate, destroyed once.
            unsafe {
                cu::cuEventDestroy_v2(*s);
                cu::cuEventDestroy_v2(*e);
            }
        }
    }
}

/// How long [`time_ops`] runs an operation before its samples: at least
/// `launches` operations, then more, in batches of [`PER_SAMPLE`], until
/// `min_ms` of wall time have passed since the first. The GPUs here run
/// the first tens of milliseconds of full load at higher clocks than they
/// sustain (see `docs/sustained-clocks.md`), so every operation
/// and baseline is sampled after the same time under load.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Warmup {
    pub(crate) launches: usize,
    pub(crate) min_ms: f64,
}

/// Times `op` (one operation on the first `ranks` ranks, enqueued without
/// waiting): the `warmup`, then `samples` samples of `PER_SAMPLE`
/// operations back to back between events on every rank's compute stream,
/// so that host launch costs overlap the GPU work as in a real model step.
/// Returns the per-operation times of the samples (slowest rank); `sync`
/// waits for the operations (and reports device-side errors).
pub(crate) fn time_ops(
    node: &mut Node,
    ranks: usize,
    op: &mut dyn FnMut(&mut Node) -> Result<()>,
    sync: &dyn Fn(&Node) -> Result<()>,
    warmup: Warmup,
    samples: usize,
) -> Result<Timing> {
    let events = RankEvents::new(node, ranks)?;
    let warming = std::time::Instant::now();
    for _ in 0..warmup.launches {
        op(node)?;
    }
    sync(node)?;
    while warming.elapsed().as_secs_f64() * 1e3 < warmup.min_ms {
        for _ in 0..PER_SAMPLE {
            op(node)?;
        }
        sync(node)?;
    }
    let mut timing = Timing::default();
    for _ in 0..samples {
        events.record(node, false)?;
        let issued = std::time::Instant::now();
        for _ in 0..PER_SAMPLE {
            op(node)?;
        }
        timing
            .host_ms
            .push(issued.elapsed().as_secs_f64() * 1e3 / PER_SAMPLE as f64);
        events.record(node, true)?;
        sync(node)?;
        timing
            .gpu_ms
            .push(events.slowest_ms(node)? / PER_SAMPLE as f64);
    }
    Ok(timing)
}

/// Samples of [`time_ops`], per launch: between the events on the GPUs
/// (the result), and on the host, issuing the launches (if that is not
/// well below the GPU time, the host paces the GPUs).
#[derive(Default)]
pub(crate) struct Timing {
    pub(crate) gpu_ms: Vec<f64>,
    pub(crate) host_ms: Vec<f64>,
}

/// A shape's baselines (median ms per operation).
pub(crate) struct Baselines {
    /// cuBLAS on every rank at once, each on its own operands (the slowest
    /// rank): the local GEMM under the load the fused operators run in.
    pub(crate) gemm_ms: f64,
    /// The same GEMM on rank 0 alone, the other GPUs idle (the floor's
    /// GEMM before the sustained-clock change; kept for comparison).
    pub(crate) gemm_one_gpu_ms: f64,
    /// Peer copies into rank 0 (the communication alone).
    pub(crate) copy_ms: f64,
}

/// The baselines of a shape: cuBLAS on `gemm` (bf16 out) on every rank with
/// its own handle in `cublas`, and on rank 0 alone; and peer copies of
/// `bytes` from every peer's `buffer` at byte offset `at(peer)` into the
/// same place on rank 0.
pub(crate) fn time_baselines(
    node: &mut Node,
    cublas: &[Cublas],
    gemm: &GemmArgs,
    buffer: Buffer,
    at: &dyn Fn(usize) -> usize,
    bytes: usize,
    cli: &Cli,
) -> Result<Baselines> {
    let world = node.world_size();
    let gemm_on = |nd: &Node, rank: usize| -> Result<()> {
        nd.context(rank).bind_to_thread()?;
        cublas[rank].gemm(
            nd.ptr(rank, &gemm.a),
            nd.ptr(rank, &gemm.b),
            nd.ptr(rank, &gemm.c),
            gemm.m,
            gemm.n,
            gemm.k,
            true,
        )
    };
    let sync_all = |nd: &Node| -> Result<()> { Ok(nd.synchronize_all()?) };
    let every_rank = time_ops(
        node,
        world,
        &mut |nd| (0..world).try_for_each(|rank| gemm_on(nd, rank)),
        &sync_all,
        cli.warmup(),
        cli.iters,
    )?;
    let gemm_one_gpu_ms = event_time(node, 0, |nd: &Node| gemm_on(nd, 0), cli)?;
    let copy_ms = event_time(
        node,
        0,
        |nd: &Node| {
            for peer in 1..nd.world_size() {
                let offset = at(peer) as u64;
                let src = nd.ptr(peer, &buffer) + offset;
                let dst = nd.ptr(0, &buffer) + offset;
                // SAFETY: both ranges lie in symmetric buffers of this size.
                unsafe {
                    cuda(
                        "cuMemcpyAsync",
                        cu::cuMemcpyAsync(dst, src, bytes, nd.compute_stream(0)),
                    )?
                };
            }
            Ok(())
        },
        cli,
    )?;
    Ok(Baselines {
        gemm_ms: median(&every_rank.gpu_ms),
        gemm_one_gpu_ms,
        copy_ms,
    })
}

/// Operations per timing sample (see [`time_ops`]).
pub(crate) const PER_SAMPLE: usize = 10;

/// Median per-call time of `f` (work enqueued on `rank`'s compute stream).
pub(crate) fn event_time(
    node: &mut Node,
    rank: usize,
    f: impl Fn(&Node) -> Result<()>,
    cli: &Cli,
) -> Result<f64> {
    node.context(rank).bind_to_thread()?;
    let sync = |nd: &Node| -> Result<()> { Ok(nd.synchronize(rank)?) };
    let timing = time_ops(
        node,
        rank + 1,
        &mut |nd| f(nd),
        &sync,
        cli.warmup(),
        cli.iters,
    )?;
    Ok(median(&timing.gpu_ms))
}
