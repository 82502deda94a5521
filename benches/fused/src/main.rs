//! `synco-bench`: correctness and timing of Synco's fused GEMM + collective
//! kernels (all-gather + GEMM here; the reductions in [`rs`]).
//!
//! Reads variants compiled by `benches/fused/build.sh` (one directory per
//! shape, one subdirectory per kernel style and chunk count, each with a
//! cubin, its manifest and `variant.json`), and for each:
//!
//! * **check**: fresh random bf16 A shards and B on every rank, C poisoned
//!   with NaN, one fused launch, then C compared in fp32 with cuBLAS on the
//!   gathered A: relative error ||C - ref|| / ||ref||, and no NaN;
//! * **time**: warm-up launches, then samples of 10 launches back to back
//!   between CUDA events on every rank (host launch costs overlap the GPU,
//!   as in a model step); the result is the median over samples of the
//!   slowest rank's time per launch. Baselines are timed the same way.
//!
//! Per shape it also times, in the same run, cuBLAS and the local Triton GEMM
//! on pre-gathered A and the copy-engine all-gather alone. Results are JSON.
//!
//! Shapes whose variants say `"op": "rs"` (`"ar"`) are GEMM +
//! reduce-scatter (all-reduce) problems instead (see [`rs`]).

use anyhow::{Context, Result, bail};
use clap::Parser;
use half::bf16;
use serde::{Deserialize, Serialize};
use std::{
    path::{Path, PathBuf},
    time::Duration,
};
use synco_runtime::{Arg, Buffer, FusedKernel, Node, RuntimeError};

mod blas;
mod diagnostics;
mod rs;
mod timing;

use blas::Cublas;
use diagnostics::{KernelTrace, Timeline, read_trace, record_timeline};
use timing::{Timing, Warmup, median, time_baselines, time_ops};

#[derive(Parser)]
#[command(about = "Check and time fused GEMM + collective variants")]
struct Cli {
    /// Directory of compiled variants (see build.sh).
    #[arg(long)]
    variants: PathBuf,
    /// Where to write the JSON results.
    #[arg(long)]
    out: PathBuf,
    /// Only check correctness (no timing).
    #[arg(long)]
    check_only: bool,
    /// Operations run before timing each variant or baseline (at least).
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Then more, until this much wall time has passed since the first
    /// (ms): every variant and baseline is sampled at the clocks the GPUs
    /// sustain under load, not in their first, faster milliseconds.
    #[arg(long, default_value_t = 200.0)]
    warmup_ms: f64,
    #[arg(long, default_value_t = 30)]
    iters: usize,
    /// Only shapes whose directory name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Instead of benchmarking: run the first fused variant with the chunks
    /// copied into rank 1 withheld, and check that the watchdog reports the rank,
    /// chunk and epoch that timed out (takes the kernel's wait timeout);
    /// before that, check that launches with a misplaced bound argument or a
    /// too small binding are refused without issuing anything.
    #[arg(long)]
    watchdog_test: bool,
    /// Seed of the random inputs (default: from the clock, so every run
    /// checks fresh data; the seed used is in the JSON).
    #[arg(long)]
    seed: Option<u64>,
    /// Run the ranks on this many GPUs, rank r on GPU r mod N (default:
    /// one GPU per rank). Fewer GPUs than ranks checks plans of more ranks
    /// than the machine has (with --check-only: ranks that share a GPU
    /// share its SMs, so their times mean nothing); every rank's kernel
    /// must then fit on its GPU beside the others (small shapes).
    #[arg(long)]
    gpus: Option<usize>,
    /// With --check-only: after the checks, launch each fused variant this
    /// many times back to back (no wait in between, as timing does) and
    /// require that they all finish: launches of ranks sharing a GPU, and
    /// copies of one launch behind the kernels of the previous one, must
    /// not deadlock. 0 skips it.
    #[arg(long, default_value_t = 8)]
    back_to_back: usize,
    /// After timing a fused variant, launch it once more recording when
    /// each side-stream copy started and ended (`timeline` in the JSON,
    /// rank 0's printed).
    #[arg(long)]
    timeline: bool,
    /// With --timeline: launch the variant this many times back to back
    /// first, without waiting, so that the recorded launch runs behind the
    /// previous one as in a timed run (its copies wait for that launch)
    /// instead of from an idle GPU. Its times still count from its own start.
    #[arg(long, default_value_t = 0)]
    timeline_after: usize,
}

impl Cli {
    /// What every timed operation runs first (`--warmup`, `--warmup-ms`).
    fn warmup(&self) -> Warmup {
        Warmup {
            launches: self.warmup,
            min_ms: self.warmup_ms,
        }
    }

    /// Whether `world` ranks share GPUs (`--gpus` below `world`).
    fn shares_gpus(&self, world: usize) -> bool {
        self.gpus.is_some_and(|gpus| gpus < world)
    }

    /// Opens the node for `world` ranks (see `--gpus`).
    fn open_node(&self, world: usize, heap: usize) -> Result<Node> {
        let devices = self.gpus.unwrap_or(world).min(world);
        if devices < world && !self.check_only {
            bail!(
                "--gpus {devices} puts {world} ranks on {devices} GPUs: only correctness means something then; add --check-only"
            );
        }
        Ok(Node::open_shared(world, devices, heap)?)
    }
}

#[derive(Deserialize, Clone)]
struct Variant {
    /// `ag` (all-gather + GEMM, the default), `rs` (GEMM + reduce-scatter),
    /// `rsg` (the same from gathered operands), `ar` (GEMM + one-shot
    /// all-reduce), `ar2` (two-shot) or `arg` (all-reduce from gathered
    /// operands: rsg's rows of the sum, then all-gathered).
    #[serde(default = "all_gather")]
    op: String,
    style: String,
    #[serde(default = "copy_engine")]
    backend: String,
    chunks: Option<u32>,
    auto: bool,
    block_m: u32,
    block_n: u32,
    num_sms: Option<u32>,
    m: usize,
    k: usize,
    n: usize,
    world: usize,
    fused: bool,
    /// `arg`: the column chunks C's all-gather sends.
    #[serde(default)]
    out_chunks: Option<u32>,
}

fn all_gather() -> String {
    "ag".into()
}

fn copy_engine() -> String {
    "copy_engine".into()
}

#[derive(Serialize)]
struct VariantResult {
    name: String,
    style: String,
    backend: String,
    chunks: Option<u32>,
    /// `arg`: C's column chunks.
    #[serde(skip_serializing_if = "Option::is_none")]
    out_chunks: Option<u32>,
    auto: bool,
    fused: bool,
    rel_error: Option<f64>,
    nan: bool,
    ok: bool,
    /// The runtime refused the launch as the machine runs it, and rightly:
    /// ranks share a GPU (`--gpus`) and their programs, which wait for each
    /// other's tiles, do not all fit on it at once (`NotCoResident`). Not a
    /// failure; `error` says why.
    refused: bool,
    median_ms: Option<f64>,
    all_ms: Vec<f64>,
    /// Median host time to issue one launch (every rank's copies, waits and
    /// kernel) while timing.
    host_launch_ms: Option<f64>,
    /// GEMM + reduce-scatter: a second launch on the same inputs gave the
    /// same bits.
    deterministic: Option<bool>,
    error: Option<String>,
    /// With `--timeline`: one launch's side-stream copies and every rank's
    /// launch time.
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline: Option<Timeline>,
    /// A kernel built with `chunk-trace-tiles`: the tiles of the last timed
    /// launch.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<KernelTrace>,
}

#[derive(Serialize)]
struct ShapeResult {
    op: String,
    shape: String,
    m: usize,
    k: usize,
    n: usize,
    world: usize,
    seed: u64,
    /// cuBLAS's local GEMM on every rank at once (the slowest rank): the
    /// floor's GEMM.
    cublas_gemm_ms: f64,
    /// The same on rank 0 alone, the other GPUs idle.
    cublas_gemm_one_gpu_ms: f64,
    /// The communication alone: peer copies of `comm_bytes_per_rank` (what
    /// each rank receives in an all-gather, sends in a reduce-scatter).
    comm_ms: Option<f64>,
    comm_bytes_per_rank: usize,
    variants: Vec<VariantResult>,
}

/// xorshift64*: fast, seedable random bf16 in [-1, 1).
fn random_bf16(count: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(count * 2);
    for _ in 0..count {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let x = ((r >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
        out.extend_from_slice(&bf16::from_f32(x).to_bits().to_le_bytes());
    }
    out
}

struct Problem {
    a: Buffer,
    /// The gathered A, written from the host: what the reference reads.
    a_ref: Buffer,
    b: Buffer,
    c: Buffer,
    reference: Buffer,
    m: usize,
    k: usize,
    n: usize,
}

/// The launch manifest in a variant directory (the JSON that is not
/// `variant.json`).
fn find_manifest(dir: &Path) -> Result<PathBuf> {
    std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().is_some_and(|n| n != "variant.json")
        })
        .with_context(|| format!("no launch manifest in {}", dir.display()))
}

impl Problem {
    /// Symmetric buffers for an M x K x N problem (`reference` is fp32).
    fn alloc(node: &mut Node, m: usize, k: usize, n: usize) -> Result<Problem> {
        Ok(Problem {
            a: node.alloc(m * k * 2)?,
            a_ref: node.alloc(m * k * 2)?,
            b: node.alloc(k * n * 2)?,
            c: node.alloc(m * n * 2)?,
            reference: node.alloc(m * n * 4)?,
            m,
            k,
            n,
        })
    }
}

impl VariantResult {
    /// A variant whose check or timing stopped at `error`: refused when
    /// `sharing` (ranks share GPUs) and the runtime said the programs cannot
    /// all be resident, failed otherwise.
    fn from_error(dir: &Path, v: &Variant, error: anyhow::Error, sharing: bool) -> VariantResult {
        let refused = sharing
            && error.chain().any(|cause| {
                matches!(
                    cause.downcast_ref::<RuntimeError>(),
                    Some(RuntimeError::NotCoResident { .. })
                )
            });
        VariantResult {
            refused,
            ..VariantResult::failed(dir, v, format!("{error:#}"))
        }
    }

    /// `ok=` in the log: `true`, `false` or `refused`.
    fn status(&self) -> &'static str {
        match (self.ok, self.refused) {
            (true, _) => "true",
            (false, true) => "refused",
            (false, false) => "false",
        }
    }

    fn failed(dir: &Path, v: &Variant, error: String) -> VariantResult {
        VariantResult {
            name: dir_name(dir),
            style: v.style.clone(),
            backend: v.backend.clone(),
            chunks: v.chunks,
            out_chunks: v.out_chunks,
            auto: v.auto,
            fused: v.fused,
            rel_error: None,
            nan: false,
            ok: false,
            refused: false,
            median_ms: None,
            all_ms: vec![],
            host_launch_ms: None,
            deterministic: None,
            error: Some(error),
            timeline: None,
            trace: None,
        }
    }
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn grid(v: &Variant) -> (u32, u32, u32) {
    // A reduce-scatter of gathered operands computes the rank's M/W rows.
    let rows = if v.op == "rsg" || v.op == "arg" {
        v.m / v.world
    } else {
        v.m
    };
    let tm = (rows as u32).div_ceil(v.block_m);
    let tn = (v.n as u32).div_ceil(v.block_n);
    match v.style.as_str() {
        "grid2d" => (tm, tn, 1),
        "grouped" => (tm * tn, 1, 1),
        // persistent, persistent_tma: the NUM_SMS programs the tile loop
        // strides by (programs past the last tile find none; the runtime
        // refuses a fused kernel launched with another count)
        _ => (v.num_sms.unwrap_or(132), 1, 1),
    }
}

/// The buffers and sizes of one GEMM launch: C[M, N] = A[M, K] @ B[K, N].
struct GemmArgs {
    a: Buffer,
    b: Buffer,
    c: Buffer,
    m: usize,
    n: usize,
    k: usize,
}

impl Problem {
    fn gemm(&self) -> GemmArgs {
        GemmArgs {
            a: self.a,
            b: self.b,
            c: self.c,
            m: self.m,
            n: self.n,
            k: self.k,
        }
    }
}

/// The kernel's own arguments, by parameter name (parameters specialised
/// away at import, such as unit strides, are not in the manifest).
fn user_args(node: &Node, p: &GemmArgs, rank: usize, kernel: &FusedKernel) -> Result<Vec<Arg>> {
    let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
    kernel
        .manifest
        .params
        .iter()
        .filter(|param| param.role == synco_manifest::ParamRole::User)
        .map(|param| {
            Ok(match param.name.as_str() {
                "a_ptr" => Arg::Ptr(node.ptr(rank, &p.a)),
                "b_ptr" => Arg::Ptr(node.ptr(rank, &p.b)),
                "c_ptr" => Arg::Ptr(node.ptr(rank, &p.c)),
                "M" => Arg::I32(m),
                "N" => Arg::I32(n),
                "K" | "stride_am" => Arg::I32(k),
                "stride_ak" | "stride_bn" | "stride_cn" => Arg::I32(1),
                "stride_bk" | "stride_cm" => Arg::I32(n),
                other => bail!("unknown GEMM parameter '{other}'"),
            })
        })
        .collect()
}

fn fill_inputs(node: &Node, p: &Problem, seed: u64, gathered: bool) -> Result<()> {
    let world = node.world_size();
    let block = p.m / world;
    for rank in 0..world {
        // Rank r's own block of A (and, for local runs, every block).
        for owner in 0..world {
            let shard = random_bf16(block * p.k, seed + owner as u64);
            node.write(rank, &p.a_ref, owner * block * p.k * 2, &shard)?;
            if owner == rank || gathered {
                node.write(rank, &p.a, owner * block * p.k * 2, &shard)?;
            } else {
                // Rows the gather must bring: poison, so a missing chunk shows.
                let poison = vec![0xFFu8; block * p.k * 2];
                node.write(rank, &p.a, owner * block * p.k * 2, &poison)?;
            }
        }
        node.write(
            rank,
            &p.b,
            0,
            &random_bf16(p.k * p.n, seed + 1000 + rank as u64),
        )?;
        node.fill(rank, &p.c, 0xFF)?;
    }
    Ok(())
}

/// Relative error of bf16 `c` against fp32 `reference`, and whether any
/// element of `c` is NaN.
fn compare(c: &[u8], reference: &[u8]) -> (f64, bool) {
    let mut diff = 0.0f64;
    let mut norm = 0.0f64;
    let mut nan = false;
    for (cb, rb) in c.chunks_exact(2).zip(reference.chunks_exact(4)) {
        let x = bf16::from_bits(u16::from_le_bytes([cb[0], cb[1]])).to_f32() as f64;
        let r = f32::from_le_bytes([rb[0], rb[1], rb[2], rb[3]]) as f64;
        if x.is_nan() {
            nan = true;
        }
        diff += (x - r) * (x - r);
        norm += r * r;
    }
    ((diff / norm.max(1e-30)).sqrt(), nan)
}

fn run_variant(
    node: &mut Node,
    cublas: &[Cublas],
    p: &Problem,
    dir: &Path,
    v: &Variant,
    cli: &Cli,
    seed: u64,
) -> Result<VariantResult> {
    let manifest = find_manifest(dir)?;
    let kernel = FusedKernel::load(node, &manifest)?;
    let world = node.world_size();
    let bindings = [("A", p.a), ("C", p.c), ("B", p.b)];
    let g = grid(v);
    // Correctness, on fresh data.
    fill_inputs(node, p, seed, !v.fused)?;
    node.synchronize_all()?;
    let args: Vec<Vec<Arg>> = (0..world)
        .map(|rank| user_args(node, &p.gemm(), rank, &kernel))
        .collect::<Result<_>>()?;
    node.launch(&kernel, g, &|rank| args[rank].clone(), &bindings)?;
    node.wait(Duration::from_secs(60))?;
    let mut checked = Checked::default();
    for (rank, handle) in cublas.iter().enumerate().take(world) {
        node.context(rank).bind_to_thread()?;
        handle.gemm(
            node.ptr(rank, &p.a_ref),
            node.ptr(rank, &p.b),
            node.ptr(rank, &p.reference),
            p.m,
            p.n,
            p.k,
            false,
        )?;
        let c = node.read(rank, &p.c)?;
        let r = node.read(rank, &p.reference)?;
        checked.add(compare(&c, &r));
    }
    let launch = Launch {
        kernel,
        grid: g,
        args: &args,
        bindings: &bindings,
    };
    finish_variant(node, launch, dir, v, cli, checked)
}

/// One fused operation's launch on every rank (the variant's kernel,
/// unloaded once the variant is done).
struct Launch<'a> {
    kernel: FusedKernel,
    grid: (u32, u32, u32),
    /// The kernel's own arguments, per rank.
    args: &'a [Vec<Arg>],
    bindings: &'a [(&'a str, Buffer)],
}

/// What a variant's correctness check found.
#[derive(Default)]
struct Checked {
    worst: f64,
    nan: bool,
    ok: bool,
    deterministic: Option<bool>,
}

impl Checked {
    /// Adds one rank's comparison (see [`compare`]): the worst error so
    /// far (NaN stays NaN; f64::max would drop it), and any NaN output.
    fn add(&mut self, (err, has_nan): (f64, bool)) {
        self.worst = if err.is_nan() || self.worst.is_nan() {
            f64::NAN
        } else {
            self.worst.max(err)
        };
        self.nan |= has_nan;
        // bf16 operands with fp32 accumulation land between 1e-3 and 1e-2.
        self.ok = !self.nan && self.worst.is_finite() && self.worst < 2e-2;
    }
}

/// Times a variant whose check passed (unless `--check-only`), unloads its
/// kernel (its flags and staging buffers go back to the heap for the next
/// variant) and reports it.
fn finish_variant(
    node: &mut Node,
    launch: Launch,
    dir: &Path,
    v: &Variant,
    cli: &Cli,
    checked: Checked,
) -> Result<VariantResult> {
    let mut timing = Timing::default();
    let mut checked = checked;
    let mut error = None;
    if cli.check_only && checked.ok && v.fused && cli.back_to_back > 0 {
        let mut launches = || -> Result<()> {
            for _ in 0..cli.back_to_back {
                node.launch(
                    &launch.kernel,
                    launch.grid,
                    &|rank| launch.args[rank].clone(),
                    launch.bindings,
                )?;
            }
            Ok(node.wait(Duration::from_secs(60))?)
        };
        if let Err(e) = launches() {
            checked.ok = false;
            error = Some(format!("{} launches back to back: {e:#}", cli.back_to_back));
        }
    }
    if !cli.check_only && checked.ok {
        // A traced kernel: records no launch writes stay 0 (unused).
        node.clear_trace(&launch.kernel)?;
        timing = time_ops(
            node,
            node.world_size(),
            &mut |nd| {
                Ok(nd.launch(
                    &launch.kernel,
                    launch.grid,
                    &|rank| launch.args[rank].clone(),
                    launch.bindings,
                )?)
            },
            &|nd| Ok(nd.wait(Duration::from_secs(60))?),
            cli.warmup(),
            cli.iters,
        )?;
    }
    // Before --timeline's extra launch, which would overwrite the records.
    let trace = match launch.kernel.trace_buffer() {
        Some(_) if !timing.gpu_ms.is_empty() => Some(read_trace(node, &launch, &dir_name(dir))?),
        _ => None,
    };
    let timeline = if cli.timeline && v.fused && checked.ok {
        let timeline = record_timeline(node, &launch, cli.timeline_after)?;
        let rank0: Vec<String> = timeline
            .copies
            .iter()
            .filter(|c| c.rank == 0)
            .map(|c| format!("{:.3}-{:.3}-{:.3}", c.start_ms, c.data_end_ms, c.end_ms))
            .collect();
        eprintln!(
            "timeline {}: rank 0: kernel from {:.3}, launch done {:.3} ms; copies (start-data-flag ms): {}",
            dir_name(dir),
            timeline
                .kernel_start_ms
                .first()
                .copied()
                .unwrap_or(f32::NAN),
            timeline.launch_ms.first().copied().unwrap_or(f32::NAN),
            rank0.join(" ")
        );
        Some(timeline)
    } else {
        None
    };
    node.unload(launch.kernel)?;
    Ok(VariantResult {
        name: dir_name(dir),
        style: v.style.clone(),
        backend: v.backend.clone(),
        chunks: v.chunks,
        out_chunks: v.out_chunks,
        auto: v.auto,
        fused: v.fused,
        rel_error: Some(checked.worst),
        nan: checked.nan,
        ok: checked.ok,
        refused: false,
        median_ms: (!timing.gpu_ms.is_empty()).then(|| median(&timing.gpu_ms)),
        host_launch_ms: (!timing.host_ms.is_empty()).then(|| median(&timing.host_ms)),
        all_ms: timing.gpu_ms,
        deterministic: checked.deterministic,
        error,
        timeline,
        trace,
    })
}

/// Withholds the chunks copied into rank 1: its tiles must time out, and the runtime must
/// say so (rank 1, one of its chunks, this epoch), not hang. First, two launches with bad
/// bindings must be refused without issuing anything.
fn watchdog_test(cli: &Cli) -> Result<()> {
    // The first fused all-gather on the copy engine, in name order.
    let mut candidates = Vec::new();
    for shape in std::fs::read_dir(&cli.variants)?.filter_map(|e| e.ok().map(|e| e.path())) {
        if shape.is_dir() {
            candidates.extend(std::fs::read_dir(&shape)?.filter_map(|e| e.ok().map(|e| e.path())));
        }
    }
    candidates.sort();
    let (dir, v) = candidates
        .into_iter()
        .filter_map(|dir| {
            let text = std::fs::read_to_string(dir.join("variant.json")).ok()?;
            let v: Variant = serde_json::from_str(&text).ok()?;
            (v.op == "ag" && v.backend == "copy_engine" && v.fused && v.chunks.is_some())
                .then_some((dir, v))
        })
        .next()
        .context("no fused all-gather variant on the copy engine")?;
    let mut node = cli.open_node(v.world, 4 << 30)?;
    let p = Problem::alloc(&mut node, v.m, v.k, v.n)?;
    let manifest = find_manifest(&dir)?;
    let mut kernel = FusedKernel::load(&mut node, &manifest)?;
    // Withhold every chunk copied into rank 1 (pushed by its peers or
    // pulled by itself): rank 1's tiles must time out.
    if let Some(fused) = kernel.manifest.fused.as_mut() {
        for copies in fused.copies.iter_mut() {
            copies.retain(|copy| copy.dst_rank != 1);
        }
    }
    fill_inputs(&node, &p, 5, false)?;
    node.synchronize_all()?;
    let args: Vec<Vec<Arg>> = (0..v.world)
        .map(|rank| user_args(&node, &p.gemm(), rank, &kernel))
        .collect::<Result<_>>()?;
    let bindings = [("A", p.a), ("B", p.b), ("C", p.c)];
    // Launches the runtime must refuse before issuing anything: rank 1's
    // A argument pointing at C, and A bound to a buffer too small for it.
    // (Had either issued work or advanced the epoch, the timeout below
    // would not be epoch 1's.)
    let c_on_rank_1 = Arg::Ptr(node.ptr(1, &p.c));
    let misplaced = |rank: usize| {
        let mut a = args[rank].clone();
        if rank == 1 {
            a[0] = c_on_rank_1;
        }
        a
    };
    let refused_pointer = node.launch(&kernel, grid(&v), &misplaced, &bindings);
    let small = node.alloc(1024)?;
    let refused_size = node.launch(
        &kernel,
        grid(&v),
        &|rank| args[rank].clone(),
        &[("A", small), ("B", p.b), ("C", p.c)],
    );
    match (&refused_pointer, &refused_size) {
        (
            Err(synco_runtime::RuntimeError::ArgNotBuffer(refused)),
            Err(synco_runtime::RuntimeError::BufferTooSmall { .. }),
        ) if refused.rank == 1 && refused.index == 0 => {
            for e in [refused_pointer, refused_size]
                .into_iter()
                .filter_map(Result::err)
            {
                println!("bindings: refused: {e}");
            }
        }
        _ => {
            println!(
                "bindings: expected a misplaced argument and a short buffer to be refused, got {refused_pointer:?} and {refused_size:?}"
            );
            println!("synco-bench: 0 passed, 1 failed");
            std::process::exit(1);
        }
    }
    let started = std::time::Instant::now();
    node.launch(&kernel, grid(&v), &|rank| args[rank].clone(), &bindings)?;
    match node.wait(Duration::from_secs(60)) {
        Err(
            e @ synco_runtime::RuntimeError::WaitTimedOut {
                rank: 1, epoch: 1, ..
            },
        ) => {
            println!(
                "watchdog: reported after {:.1} s: {e}",
                started.elapsed().as_secs_f64()
            );
            println!("synco-bench: 1 passed, 0 failed");
            Ok(())
        }
        other => {
            println!("watchdog: expected a timeout of rank 1 in epoch 1, got {other:?}");
            println!("synco-bench: 0 passed, 1 failed");
            std::process::exit(1);
        }
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if cli.watchdog_test {
        return watchdog_test(&cli);
    }
    let mut shapes: Vec<PathBuf> = std::fs::read_dir(&cli.variants)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter(|p| {
            cli.filter
                .as_ref()
                .is_none_or(|f| p.to_string_lossy().contains(f.as_str()))
        })
        .collect();
    shapes.sort();
    let seed = cli.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    eprintln!("seed {seed}");
    let mut results = Vec::new();
    let mut node: Option<Node> = None;
    let mut handles: Vec<Cublas> = Vec::new();
    for shape_dir in shapes {
        let mut variant_dirs: Vec<PathBuf> = std::fs::read_dir(&shape_dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("variant.json").exists())
            .collect();
        variant_dirs.sort();
        let Some(first) = variant_dirs.first() else {
            continue;
        };
        let v0: Variant =
            serde_json::from_str(&std::fs::read_to_string(first.join("variant.json"))?)?;
        let (m, k, n, world) = (v0.m, v0.k, v0.n, v0.world);
        let seed = seed + results.len() as u64 * 1000;
        if node.as_ref().is_none_or(|nd| nd.world_size() != world) {
            let heap = 4 << 30;
            let nd = cli.open_node(world, heap)?;
            handles = (0..world)
                .map(|r| {
                    nd.context(r).bind_to_thread().ok();
                    Cublas::new(nd.compute_stream(r))
                })
                .collect::<Result<_>>()?;
            node = Some(nd);
        }
        let nd = node.as_mut().context("node")?;
        nd.reset_heap();
        if matches!(v0.op.as_str(), "rs" | "rsg" | "ar" | "ar2" | "arg") {
            let shape = rs::run_shape(nd, &handles, &shape_dir, &variant_dirs, &cli, seed)?;
            results.push(shape);
            std::fs::write(&cli.out, serde_json::to_string_pretty(&results)?)?;
            continue;
        }
        let p = Problem::alloc(nd, m, k, n)?;
        // Baselines of this run: cuBLAS on gathered A, and the gather alone.
        fill_inputs(nd, &p, seed, true)?;
        nd.synchronize_all()?;
        let block_bytes = m / world * k * 2;
        // What rank 0 receives: every peer's block of A, into its place.
        let at = |peer: usize| peer * block_bytes;
        let baselines = time_baselines(nd, &handles, &p.gemm(), p.a, &at, block_bytes, &cli)?;
        let mut variants = Vec::new();
        for (i, dir) in variant_dirs.iter().enumerate() {
            let v: Variant =
                serde_json::from_str(&std::fs::read_to_string(dir.join("variant.json"))?)?;
            let result = run_variant(nd, &handles, &p, dir, &v, &cli, seed + 1 + i as u64)
                .unwrap_or_else(|e| VariantResult::from_error(dir, &v, e, cli.shares_gpus(world)));
            eprintln!(
                "{:<28} {:<22} ok={} err={:.2e} median={:.3} ms host={:.3} ms {}",
                shape_dir.file_name().unwrap_or_default().to_string_lossy(),
                result.name,
                result.status(),
                result.rel_error.unwrap_or(f64::NAN),
                result.median_ms.unwrap_or(f64::NAN),
                result.host_launch_ms.unwrap_or(f64::NAN),
                result.error.as_deref().unwrap_or("")
            );
            let _ = nd.clear_errors();
            variants.push(result);
        }
        results.push(ShapeResult {
            op: "ag".into(),
            seed,
            shape: shape_dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            m,
            k,
            n,
            world,
            cublas_gemm_ms: baselines.gemm_ms,
            cublas_gemm_one_gpu_ms: baselines.gemm_one_gpu_ms,
            comm_ms: Some(baselines.copy_ms),
            comm_bytes_per_rank: (world - 1) * block_bytes,
            variants,
        });
        std::fs::write(&cli.out, serde_json::to_string_pretty(&results)?)?;
    }
    let variants = || results.iter().flat_map(|s| &s.variants);
    let passed = variants().filter(|v| v.ok).count();
    let refused = variants().filter(|v| v.refused).count();
    let failed = variants().count() - passed - refused;
    if refused > 0 {
        println!(
            "synco-bench: {passed} passed, {refused} refused (ranks sharing a GPU: programs that cannot all be resident), {failed} failed"
        );
    } else {
        println!("synco-bench: {passed} passed, {failed} failed");
    }
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
