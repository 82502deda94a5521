//! The cost model: chunk sizes, and how many copy programs move them.
//!
//! A fused all-gather + GEMM with `n` chunks per rank on `W` ranks runs the
//! rank's own rows first, while the first peer chunk is in flight, then each
//! peer chunk as it arrives. With `T_chunk` the time to move one chunk and
//! `T_rows` the compute time of one chunk's rows:
//!
//! ```text
//!   T_chunk     = copy_latency + chunk bytes / link bandwidth + sync
//!   T_rows      = chunk rows * flops per row / GEMM rate + wait
//!   arrival(i)  = i * T_chunk                           i = 1 .. (W-1)*n
//!   start(i)    = max(arrival(i), finish(i-1))          finish(0) = n * T_rows (local rows)
//!   finish(i)   = start(i) + T_rows
//!   T_fused(n)  = finish((W-1)*n) + launch
//! ```
//!
//! (`wait` is what each chunk costs the compute side: its tiles' flag polls
//! and the loss of tile-order freedom.)
//!
//! Larger `n` shortens the exposed first chunk and the tail; each chunk
//! costs a synchronisation (`sync`) and, below a size, loses link bandwidth
//! (`T_chunk = latency + bytes / bandwidth`). Every constant lives in
//! [`Machine`]; [`Machine::H200_NVLINK`] holds values measured on the GPU
//! machines, and a JSON file of the same fields recalibrates it
//! ([`Machine::from_json`]).

use serde::{Deserialize, Serialize};

/// What the model knows about the machine. Times in microseconds, rates
/// in GB/s (10^9 bytes/s) and TFLOP/s.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Peer copy bandwidth of one link direction.
    pub link_gbps: f64,
    /// Fixed cost of one copy (issue + completion), in us.
    pub copy_latency_us: f64,
    /// Cost of one flag write and the waits on it, in us.
    pub sync_us: f64,
    /// Sustained dense bf16 GEMM rate of the local kernel.
    pub gemm_tflops: f64,
    /// Fixed overhead of a fused launch, in us.
    pub launch_us: f64,
    /// Compute-side cost of each chunk (flag polls, tile-order constraints), in us.
    pub wait_us: f64,
    /// Programs of a one-tile-per-program GEMM that run at once: one wave of
    /// tiles (one program per SM at 128x256 tiles). Default 132 (H200 SXM).
    #[serde(default = "h200_sms")]
    pub sms: u32,
    /// What one copy program of the fused kernel (`ldst`) moves over the
    /// link, in GB/s: what it keeps in flight over the link's latency.
    #[serde(default = "h200_sm_copy_gbps")]
    pub sm_copy_gbps: f64,
    /// The same for a `tma` copy program, where measured; else the
    /// model takes `sm_copy_gbps` (and says so).
    #[serde(default)]
    pub tma_copy_gbps: Option<f64>,
}

/// `sm_copy_gbps` of calibrations that do not give it: the H200's.
fn h200_sm_copy_gbps() -> f64 {
    Machine::H200_NVLINK.sm_copy_gbps
}

/// `sms` of calibrations that do not give it: the H200's.
fn h200_sms() -> u32 {
    Machine::H200_NVLINK.sms
}

impl Machine {
    /// 2 x H200 SXM over NVLink, fitted (least squares on relative error)
    /// to the chunk-count sweep measured at 6664b2f (fitted at 900e242,
    /// passes/docs/cost-model-calibration.md)
    /// (grouped GEMM, copy-engine backend, 9 shapes x up to 5 counts): peer
    /// copies at 370 GB/s (the copy-engine all-gather measured 369 GB/s in
    /// the same run), about 15 us per chunk on the transfer side, 1 us on the
    /// compute side. Refit with `benches/fused/calibrate.py` after changing
    /// the kernels or the runtime.
    pub const H200_NVLINK: Machine = Machine {
        link_gbps: 370.0,
        copy_latency_us: 5.0,
        sync_us: 10.0,
        gemm_tflops: 750.0,
        launch_us: 40.0,
        wait_us: 1.0,
        sms: 132,
        // 16 ldst programs pulled 308 GB/s over NVLink in 32 KiB steps
        // (passes/docs/copy-program-step.md, measured at 3932101).
        sm_copy_gbps: 308.0 / 16.0,
        // Not measured yet (benches/copy/rate.py).
        tma_copy_gbps: None,
    };

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// An all-gather + GEMM problem, seen from one rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllGatherGemm {
    pub world_size: u64,
    /// Rows of the gathered operand owned by each rank (M / W).
    pub rows_per_rank: u64,
    /// Bytes of one row of the gathered operand.
    pub row_bytes: u64,
    /// Floating-point operations per gathered row (2 * K * N for a GEMM).
    pub flops_per_row: f64,
}

/// The prediction for one chunk count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub chunks_per_rank: u64,
    pub fused_us: f64,
    pub compute_us: f64,
    pub comm_us: f64,
}

impl Prediction {
    /// `max(compute, comm) / fused`: 1.0 is perfect overlap.
    pub fn overlap_efficiency(&self) -> f64 {
        self.compute_us.max(self.comm_us) / self.fused_us
    }
}

pub fn predict(machine: &Machine, problem: &AllGatherGemm, chunks_per_rank: u64) -> Prediction {
    let n = chunks_per_rank.max(1) as f64;
    let rows_per_chunk = problem.rows_per_rank as f64 / n;
    let chunk_bytes = rows_per_chunk * problem.row_bytes as f64;
    let t_chunk =
        machine.copy_latency_us + chunk_bytes / (machine.link_gbps * 1e3) + machine.sync_us;
    let t_rows =
        rows_per_chunk * problem.flops_per_row / (machine.gemm_tflops * 1e6) + machine.wait_us;
    let peer_chunks = (problem.world_size.saturating_sub(1) as f64 * n) as u64;
    let mut finish = n * t_rows; // the rank's own rows
    for i in 1..=peer_chunks {
        let arrival = i as f64 * t_chunk;
        finish = arrival.max(finish) + t_rows;
    }
    let compute = problem.world_size as f64 * n * t_rows;
    let comm = peer_chunks as f64 * t_chunk;
    Prediction {
        chunks_per_rank,
        fused_us: finish + machine.launch_us,
        compute_us: compute + machine.launch_us,
        comm_us: comm,
    }
}

/// Chunks of a gathered operand read per source (every tile reads every
/// rank's block, waiting for the chunk of the peer's block it reads; the
/// reduce-scatter from gathered operands): when the kernel's tile order
/// walks the chunked dimension last, the chunks arrive in the order the
/// waves of tiles need them, and each should feed about one wave of
/// `machine.sms` programs: fewer chunks make the first wave wait for more
/// bytes, more chunks cost more copies and flags. Of `candidates`, the count
/// whose chunks hold closest to one wave of `tiles` (ties: the fewer
/// chunks). Measured on 2 x H200 (passes/docs/gathered-chunks-per-wave.md): 4 chunks best
/// at 512 tiles, 8 at 1024.
pub fn chunks_per_wave(machine: &Machine, tiles: u64, candidates: &[u64]) -> Option<u64> {
    let wave = machine.sms.max(1) as f64;
    candidates
        .iter()
        .copied()
        .filter(|&n| n > 0)
        .min_by(|&a, &b| {
            let off = |n: u64| (tiles as f64 / n as f64 - wave).abs();
            off(a).total_cmp(&off(b)).then(a.cmp(&b))
        })
}

/// An output that the kernel's tiles produce and the copy engine sends to
/// every peer chunk by chunk as its tiles finish (an all-gather of the
/// kernel's output; the all-reduce from gathered operands).
#[derive(Clone, Copy, Debug)]
pub struct GatheredOutput {
    /// Ranks each chunk goes to (`W - 1`).
    pub peers: u64,
    /// Bytes of the rank's block of the output.
    pub block_bytes: u64,
    /// Floating-point operations of the kernel that produces the block.
    pub flops: f64,
}

/// Predicted time of a launch whose output goes out in `n` chunks: the
/// tiles finish chunk `i` at `(i + 1) / n` of the kernel (they walk the
/// chunked dimension last), and the copy stream, once the previous copies
/// are done, waits for the chunk's counter (`sync`, once per chunk: the
/// runtime's stream waits once for a counter its copies to several peers
/// share) and sends it to every peer, each copy costing `copy_latency +
/// chunk bytes / link bandwidth`:
///
/// ```text
///   ready(i) = (i + 1) / n * T_kernel
///   end(i)   = max(ready(i), end(i - 1)) + sync + peers * T_copy
///   T(n)     = max(T_kernel, end(n - 1)) + launch
/// ```
///
/// Few chunks leave the copies for after the kernel; many pay the
/// per-chunk costs many times. Measured on 2 x H200 (one peer;
/// passes/docs/gathered-output-chunks.md): 1 chunk best for a 8 MiB block, 2 for 32 MiB, 4 for 64
/// MiB. Not measured with more than one peer.
pub fn predict_gathered_output(machine: &Machine, output: &GatheredOutput, n: u64) -> f64 {
    let n = n.max(1);
    let kernel = output.flops / (machine.gemm_tflops * 1e6);
    let chunk_bytes = output.block_bytes as f64 / n as f64;
    let copy = machine.copy_latency_us + chunk_bytes / (machine.link_gbps * 1e3);
    let mut end: f64 = 0.0;
    for i in 0..n {
        let ready = (i + 1) as f64 / n as f64 * kernel;
        end = end.max(ready) + machine.sync_us + output.peers as f64 * copy;
    }
    kernel.max(end) + machine.launch_us
}

/// The candidate with the lowest [`predict_gathered_output`] (ties within
/// [`TIE_TOLERANCE`]: the fewer chunks), with every prediction in us.
pub fn choose_gathered_output(
    machine: &Machine,
    output: &GatheredOutput,
    candidates: &[u64],
) -> Option<(u64, Vec<(u64, f64)>)> {
    let predictions: Vec<(u64, f64)> = candidates
        .iter()
        .map(|&n| (n, predict_gathered_output(machine, output, n)))
        .collect();
    let best = fewest_within_tolerance(predictions.iter().copied())?;
    Some((best, predictions))
}

/// Of `(chunks, predicted us)` pairs, the fewest chunks whose prediction is
/// within [`TIE_TOLERANCE`] of the lowest.
fn fewest_within_tolerance(predictions: impl Iterator<Item = (u64, f64)> + Clone) -> Option<u64> {
    let best_time = predictions
        .clone()
        .map(|(_, us)| us)
        .fold(f64::INFINITY, f64::min);
    predictions
        .filter(|&(_, us)| us <= best_time * (1.0 + TIE_TOLERANCE))
        .map(|(n, _)| n)
        .min()
}

/// Predictions within this fraction of the best count as ties.
pub const TIE_TOLERANCE: f64 = 0.005;

/// The smallest candidate whose predicted time is within
/// [`TIE_TOLERANCE`] of the lowest (fewer chunks cost fewer
/// synchronisations the model may underestimate), with every prediction.
pub fn choose(
    machine: &Machine,
    problem: &AllGatherGemm,
    candidates: &[u64],
) -> Option<(u64, Vec<Prediction>)> {
    let predictions: Vec<Prediction> = candidates
        .iter()
        .map(|&n| predict(machine, problem, n))
        .collect();
    let best =
        fewest_within_tolerance(predictions.iter().map(|p| (p.chunks_per_rank, p.fused_us)))?;
    Some((best, predictions))
}

/// The copy programs' time to move `bytes` with `programs` of them, in
/// us: a copy's fixed cost, then the bytes at what the programs keep in
/// flight (`per_program_gbps` each), at most the link's rate.
pub fn predict_sm_copy(machine: &Machine, bytes: u64, programs: u64, per_program_gbps: f64) -> f64 {
    let rate = (programs.max(1) as f64 * per_program_gbps).min(machine.link_gbps);
    machine.copy_latency_us + bytes as f64 / (rate * 1e3)
}

/// The number of copy programs for `bytes` per launch, of `candidates`:
/// the fewest whose predicted time ([`predict_sm_copy`]) is within
/// [`TIE_TOLERANCE`] of the best. A copy program holds its SM only while
/// it copies, so below the link's rate more programs cost the kernel the
/// same SM time and finish sooner; beyond it they only take SMs. With every
/// prediction in us.
pub fn choose_copy_programs(
    machine: &Machine,
    bytes: u64,
    per_program_gbps: f64,
    candidates: &[u64],
) -> Option<(u64, Vec<(u64, f64)>)> {
    let predictions: Vec<(u64, f64)> = candidates
        .iter()
        .map(|&p| (p, predict_sm_copy(machine, bytes, p, per_program_gbps)))
        .collect();
    let best = fewest_within_tolerance(predictions.iter().copied())?;
    Some((best, predictions))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(m: u64, k: u64, n: u64) -> AllGatherGemm {
        AllGatherGemm {
            world_size: 2,
            rows_per_rank: m / 2,
            row_bytes: k * 2,
            flops_per_row: 2.0 * k as f64 * n as f64,
        }
    }

    #[test]
    fn gathered_output_chunks_follow_the_measured_best() {
        // The all-reduce from gathered operands on 2 x H200, K_local = 1024,
        // N = 8192: each rank's block of C is M/2 rows; its kernel does
        // 2 * M/2 * N * 2048 flops. Measured best: 1, 2 and 4 chunks
        // at 1dd54e0 (passes/docs/gathered-output-chunks.md).
        let m = Machine::H200_NVLINK;
        for (rows, best) in [(512u64, 1u64), (2048, 2), (4096, 4)] {
            let output = GatheredOutput {
                peers: 1,
                block_bytes: rows * 8192 * 2,
                flops: 2.0 * rows as f64 * 8192.0 * 2048.0,
            };
            let (chosen, _) = choose_gathered_output(&m, &output, &[1, 2, 4, 8, 16]).unwrap();
            assert_eq!(chosen, best, "{rows} rows");
        }
    }

    #[test]
    fn a_chunk_sent_to_several_peers_waits_for_its_counter_once() {
        // No compute to hide behind: the copies alone, one counter wait per
        // chunk and one copy per peer (the runtime waits once per counter).
        let m = Machine::H200_NVLINK;
        let output = GatheredOutput {
            peers: 3,
            block_bytes: 37_000_000,
            flops: 0.0,
        };
        let copy = m.copy_latency_us + 37_000_000.0 / 2.0 / (m.link_gbps * 1e3);
        let expected = 2.0 * (m.sync_us + 3.0 * copy) + m.launch_us;
        let predicted = predict_gathered_output(&m, &output, 2);
        assert!(
            (predicted - expected).abs() < 1e-9,
            "{predicted} against {expected}"
        );
    }

    #[test]
    fn more_chunks_hide_more_of_the_first_transfer() {
        // Transfer-bound (N = 1024): a second chunk lets the peer rows'
        // tiles start before the whole block has arrived.
        let m = Machine::H200_NVLINK;
        let p = problem(8192, 8192, 1024);
        assert!(predict(&m, &p, 2).fused_us < predict(&m, &p, 1).fused_us);
    }

    #[test]
    fn compute_bound_problems_keep_one_chunk() {
        let m = Machine::H200_NVLINK;
        let (best, _) = choose(&m, &problem(8192, 8192, 14336), &[1, 2, 4, 8, 16]).unwrap();
        assert_eq!(best, 1);
    }

    #[test]
    fn sync_cost_bounds_the_chunk_count() {
        // A tiny problem: every extra chunk costs more than it hides.
        let m = Machine::H200_NVLINK;
        let p = problem(1024, 1024, 1024);
        let (best, predictions) = choose(&m, &p, &[1, 2, 4, 8, 16]).unwrap();
        assert_eq!(predictions.len(), 5);
        assert!(best <= 2, "best {best}");
    }

    #[test]
    fn the_fused_time_is_never_below_the_floor() {
        let m = Machine::H200_NVLINK;
        for (mm, k, n) in [(1024, 4096, 7168), (8192, 8192, 14336), (4096, 8192, 1024)] {
            for c in [1, 2, 4, 8, 16] {
                let pr = predict(&m, &problem(mm, k, n), c);
                assert!(pr.fused_us >= pr.compute_us.max(pr.comm_us) - 1e-9);
                assert!(pr.overlap_efficiency() <= 1.0 + 1e-9);
            }
        }
    }

    #[test]
    fn copy_programs_reach_the_link_and_no_further() {
        let m = Machine::H200_NVLINK;
        let candidates: Vec<u64> = (1..=66).collect();
        let (p, predictions) =
            choose_copy_programs(&m, 64 << 20, m.sm_copy_gbps, &candidates).unwrap();
        // 370 GB/s of link at 19.25 GB/s per program: 20 programs.
        assert_eq!(p, 20);
        assert_eq!(predictions.len(), 66);
        let at = |n: u64| predictions[n as usize - 1].1;
        assert!(at(8) > 2.0 * at(20));
        assert!((at(32) - at(20)).abs() < 1e-9);
        // Fewer candidates: the largest below the link.
        let (p, _) = choose_copy_programs(&m, 64 << 20, m.sm_copy_gbps, &[4, 8, 16]).unwrap();
        assert_eq!(p, 16);
    }

    #[test]
    fn calibration_from_json() {
        let m = Machine::from_json(
            r#"{"link_gbps": 300, "copy_latency_us": 3, "sync_us": 1, "gemm_tflops": 600, "launch_us": 4, "wait_us": 1}"#,
        )
        .unwrap();
        assert_eq!(m.link_gbps, 300.0);
        // Calibrations written before `sms` existed keep the H200's.
        assert_eq!(m.sms, 132);
        assert_eq!(m.sm_copy_gbps, Machine::H200_NVLINK.sm_copy_gbps);
        assert_eq!(m.tma_copy_gbps, None);
        assert!(Machine::from_json("{}").is_err());
    }

    #[test]
    fn gathered_chunks_feed_one_wave_each() {
        let m = Machine::H200_NVLINK;
        let counts = [1, 2, 4, 8, 16];
        // The measured best counts: 4096x1024x8192 (512 tiles of 128x256
        // per owner) and 8192x1024x8192 (1024 tiles).
        assert_eq!(chunks_per_wave(&m, 512, &counts), Some(4));
        assert_eq!(chunks_per_wave(&m, 1024, &counts), Some(8));
        // Less than a wave: one chunk.
        assert_eq!(chunks_per_wave(&m, 128, &counts), Some(1));
        // Only the counts that split the block.
        assert_eq!(chunks_per_wave(&m, 1024, &[1, 2]), Some(2));
        assert_eq!(chunks_per_wave(&m, 1024, &[]), None);
    }
}
