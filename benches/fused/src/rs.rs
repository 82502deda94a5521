//! GEMM + reduce-scatter (variants with `"op": "rs"`) and GEMM + all-reduce
//! (`"op": "ar"` one-shot, `"ar2"` two-shot: C is [M, N] on every rank, the
//! whole sum).
//!
//! Each rank holds A_r [M, K] and B_r [K, N] (K is the per-rank K) and
//! computes the partial P_r = A_r @ B_r [M, N]; rank r must end with rows
//! [r * M/W, (r + 1) * M/W) of sum_s P_s in C [M/W, N].
//!
//! * **check**: fresh random bf16 A_r and B_r on every rank, P and C poisoned
//!   with NaN, one fused launch, then C compared in fp32 with the cuBLAS
//!   reference sum_s A_s @ B_s (fp32 accumulation, computed on every rank
//!   from every rank's inputs); a second launch on the same inputs must give
//!   the same bits (the sum is in rank order). A local (unfused) variant is
//!   checked against its own partial.
//! * **time**: as for all-gather (samples of launches back to back, median
//!   of the slowest rank's time per launch).
//!
//! Per shape it also times cuBLAS's local GEMM and the peer copies of what
//! each rank sends in a reduce-scatter ((W - 1) blocks of M/W rows).
//!
//! `"op": "rsg"` is the same reduce-scatter computed from gathered operands
//! (`examples/gemm_rs/plan-gather.mlir`): the kernel is
//! `matmul_kernel_sources` over Ag [M, K] (block s: rank s's rows of this
//! rank, which the plan's all-to-all lands there from the plan buffer @A,
//! bound by name) and Bg [W K, N] (block s: rank s's B; the rank writes its
//! own B into block r, the all-gather brings the others), writing C [M/W,
//! N] directly. Same inputs, reference, check and baselines as `rs`; Ag and
//! the peers' blocks of Bg are poisoned before each checked launch.
//!
//! `"op": "arg"` is the all-reduce computed from gathered operands: the
//! `rsg` plan plus C [M, N] (bound, the kernel's output), whose rows each
//! rank computes and then all-gathers by column chunks as its tiles finish
//! them (`chunk-fuse-gathers`). Checked and timed as `ar2`: every rank's
//! whole C against the reference; the comparison's bytes are the two-shot
//! all-reduce's, so that its floor is the other all-reduces'.

use super::{
    Checked, Cli, Cublas, GemmArgs, Launch, ShapeResult, Variant, VariantResult, compare, dir_name,
    find_manifest, finish_variant, grid, random_bf16, time_baselines, user_args,
};
use anyhow::Result;
use std::{path::Path, path::PathBuf, time::Duration};
use synco_runtime::{Arg, Buffer, FusedKernel, Node};

struct RsProblem {
    a: Buffer,
    b: Buffer,
    /// The kernel's output: the partial.
    p: Buffer,
    /// The reduce-scatter's output block.
    c: Buffer,
    /// Scratch for the reference: another rank's A and B.
    a_tmp: Buffer,
    b_tmp: Buffer,
    /// fp32 [M, N]: sum over ranks of A_s @ B_s.
    reference: Buffer,
    /// fp32 [M, N]: this rank's own partial (for local variants).
    own: Buffer,
    /// `rsg`: the kernel's gathered operands Ag [M, K] and Bg [W K, N].
    gathered: Option<(Buffer, Buffer)>,
    m: usize,
    k: usize,
    n: usize,
}

impl RsProblem {
    /// `out_rows`: M / W for a reduce-scatter, M for an all-reduce.
    fn alloc(
        node: &mut Node,
        m: usize,
        k: usize,
        n: usize,
        out_rows: usize,
        gathered: bool,
    ) -> Result<RsProblem> {
        let world = node.world_size();
        let gathered = if gathered {
            Some((node.alloc(m * k * 2)?, node.alloc(world * k * n * 2)?))
        } else {
            None
        };
        Ok(RsProblem {
            gathered,
            a: node.alloc(m * k * 2)?,
            b: node.alloc(k * n * 2)?,
            p: node.alloc(m * n * 2)?,
            c: node.alloc(out_rows * n * 2)?,
            a_tmp: node.alloc(m * k * 2)?,
            b_tmp: node.alloc(k * n * 2)?,
            reference: node.alloc(m * n * 4)?,
            own: node.alloc(m * n * 4)?,
            m,
            k,
            n,
        })
    }

    fn gemm(&self) -> GemmArgs {
        GemmArgs {
            a: self.a,
            b: self.b,
            c: self.p,
            m: self.m,
            n: self.n,
            k: self.k,
        }
    }

    /// Fresh random inputs on every rank, and every rank's fp32 references.
    fn prepare(&self, node: &Node, cublas: &[Cublas], seed: u64) -> Result<()> {
        let world = node.world_size();
        let (m, k, n) = (self.m, self.k, self.n);
        let inputs: Vec<(Vec<u8>, Vec<u8>)> = (0..world)
            .map(|s| {
                (
                    random_bf16(m * k, seed + 2 * s as u64),
                    random_bf16(k * n, seed + 2 * s as u64 + 1),
                )
            })
            .collect();
        for (rank, (a, b)) in inputs.iter().enumerate() {
            node.write(rank, &self.a, 0, a)?;
            node.write(rank, &self.b, 0, b)?;
            if let Some((_, bg)) = &self.gathered {
                node.write(rank, bg, rank * k * n * 2, b)?;
            }
        }
        for (rank, handle) in cublas.iter().enumerate().take(world) {
            node.context(rank).bind_to_thread()?;
            handle.gemm_beta(
                node.ptr(rank, &self.a),
                node.ptr(rank, &self.b),
                node.ptr(rank, &self.own),
                m,
                n,
                k,
                false,
                0.0,
            )?;
            for (s, (a, b)) in inputs.iter().enumerate() {
                // The compute stream does not order itself after these
                // copies, nor these copies after the previous GEMM.
                node.synchronize(rank)?;
                node.write(rank, &self.a_tmp, 0, a)?;
                node.write(rank, &self.b_tmp, 0, b)?;
                handle.gemm_beta(
                    node.ptr(rank, &self.a_tmp),
                    node.ptr(rank, &self.b_tmp),
                    node.ptr(rank, &self.reference),
                    m,
                    n,
                    k,
                    false,
                    if s == 0 { 0.0 } else { 1.0 },
                )?;
            }
            node.synchronize(rank)?;
        }
        Ok(())
    }

    fn poison(&self, node: &Node) -> Result<()> {
        let world = node.world_size();
        for rank in 0..world {
            node.fill(rank, &self.p, 0xFF)?;
            node.fill(rank, &self.c, 0xFF)?;
            if let Some((ag, bg)) = &self.gathered {
                node.fill(rank, ag, 0xFF)?;
                let block = self.k * self.n * 2;
                let nan = vec![0xFF; block];
                for s in (0..world).filter(|s| *s != rank) {
                    node.write(rank, bg, s * block, &nan)?;
                }
            }
        }
        node.synchronize_all()?;
        Ok(())
    }
}

/// Checks and times every variant of one GEMM + reduce-scatter shape.
pub(crate) fn run_shape(
    node: &mut Node,
    cublas: &[Cublas],
    shape_dir: &Path,
    variant_dirs: &[PathBuf],
    cli: &Cli,
    seed: u64,
) -> Result<ShapeResult> {
    let v0: Variant = serde_json::from_str(&std::fs::read_to_string(
        variant_dirs[0].join("variant.json"),
    )?)?;
    let (m, k, n, world) = (v0.m, v0.k, v0.n, v0.world);
    let all_reduce = matches!(v0.op.as_str(), "ar" | "ar2" | "arg");
    let gathered = matches!(v0.op.as_str(), "rsg" | "arg");
    let p = RsProblem::alloc(
        node,
        m,
        k,
        n,
        if all_reduce { m } else { m / world },
        gathered,
    )?;
    p.prepare(node, cublas, seed)?;
    // What each rank sends: its partial of every other rank's block (and,
    // two-shot, its block of the sum to every other rank: twice that), or,
    // one-shot, its whole partial to every other rank.
    let block_bytes = match v0.op.as_str() {
        "ar" => m * n * 2,
        "ar2" | "arg" => 2 * (m / world) * n * 2,
        _ => m / world * n * 2,
    };
    let at = |peer: usize| if all_reduce { 0 } else { peer * block_bytes };
    let baselines = time_baselines(node, cublas, &p.gemm(), p.p, &at, block_bytes, cli)?;
    let mut variants = Vec::new();
    for dir in variant_dirs {
        let v: Variant = serde_json::from_str(&std::fs::read_to_string(dir.join("variant.json"))?)?;
        let result = run_variant(node, &p, dir, &v, cli, all_reduce).unwrap_or_else(|e| {
            VariantResult::from_error(dir, &v, e, cli.shares_gpus(node.world_size()))
        });
        eprintln!(
            "{:<28} {:<22} ok={} err={:.2e} det={:?} median={:.3} ms host={:.3} ms {}",
            dir_name(shape_dir),
            result.name,
            result.status(),
            result.rel_error.unwrap_or(f64::NAN),
            result.deterministic,
            result.median_ms.unwrap_or(f64::NAN),
            result.host_launch_ms.unwrap_or(f64::NAN),
            result.error.as_deref().unwrap_or("")
        );
        let _ = node.clear_errors();
        variants.push(result);
    }
    Ok(ShapeResult {
        op: v0.op.clone(),
        shape: dir_name(shape_dir),
        m,
        k,
        n,
        world,
        seed,
        cublas_gemm_ms: baselines.gemm_ms,
        cublas_gemm_one_gpu_ms: baselines.gemm_one_gpu_ms,
        comm_ms: Some(baselines.copy_ms),
        comm_bytes_per_rank: (world - 1) * block_bytes,
        variants,
    })
}

fn run_variant(
    node: &mut Node,
    p: &RsProblem,
    dir: &Path,
    v: &Variant,
    cli: &Cli,
    all_reduce: bool,
) -> Result<VariantResult> {
    let manifest = find_manifest(dir)?;
    let kernel = FusedKernel::load(node, &manifest)?;
    let world = node.world_size();
    let (bindings, gemm) = match &p.gathered {
        Some((ag, bg)) => {
            if !v.fused {
                anyhow::bail!("a reduce-scatter of gathered operands has no local variant");
            }
            let gemm = GemmArgs {
                a: *ag,
                b: *bg,
                c: p.c,
                m: p.m / world,
                n: p.n,
                k: p.k,
            };
            let mut bindings = vec![("A", p.a), ("Ag", *ag), ("Bg", *bg)];
            if all_reduce {
                // The kernel's output, all-gathered by the plan.
                bindings.push(("C", p.c));
            }
            (bindings, gemm)
        }
        None => (vec![("P", p.p), ("C", p.c)], p.gemm()),
    };
    let bindings = bindings.as_slice();
    let g = grid(v);
    let args: Vec<Vec<Arg>> = (0..world)
        .map(|rank| user_args(node, &gemm, rank, &kernel))
        .collect::<Result<_>>()?;
    let run_once = |node: &mut Node| -> Result<()> {
        node.launch(&kernel, g, &|rank| args[rank].clone(), bindings)?;
        node.wait(Duration::from_secs(60))?;
        Ok(())
    };
    p.poison(node)?;
    run_once(node)?;
    let block = p.m / world;
    let mut checked = Checked::default();
    let mut first_outputs = Vec::new();
    for rank in 0..world {
        let (out, reference) = if v.fused && all_reduce {
            (node.read(rank, &p.c)?, node.read(rank, &p.reference)?)
        } else if v.fused {
            let reference = node.read(rank, &p.reference)?;
            let rows = rank * block * p.n * 4..(rank + 1) * block * p.n * 4;
            (node.read(rank, &p.c)?, reference[rows].to_vec())
        } else {
            (node.read(rank, &p.p)?, node.read(rank, &p.own)?)
        };
        // bf16 partials rounded once more after the sum: still the bf16
        // range, the same bound.
        checked.add(compare(&out, &reference));
        first_outputs.push(out);
    }
    checked.deterministic = if v.fused && checked.ok {
        p.poison(node)?;
        run_once(node)?;
        let same = (0..world).try_fold(true, |same, rank| -> Result<bool> {
            Ok(same && node.read(rank, &p.c)? == first_outputs[rank])
        })?;
        checked.ok &= same;
        Some(same)
    } else {
        None
    };
    let launch = Launch {
        kernel,
        grid: g,
        args: &args,
        bindings,
    };
    finish_variant(node, launch, dir, v, cli, checked)
}
