//! Runs `lit-tests/Inputs/scale_kernel.py` (compiled for signature
//! `*fp32,*fp32,fp32,fp16,bf16,i64,i1`, BLOCK = 256) on GPU 0 with a
//! scalar of each kind, and checks `y[i] = +-(x[i] * alpha + beta + gamma)`
//! for `i < n` and that the rows past `n` keep their poison:
//!
//!     cargo run --release -p synco-runtime --example scalar_args -- <kernel>.json
//!
//! Prints one line per case and exits non-zero on any mismatch.

use std::{path::PathBuf, process::ExitCode, time::Duration};
use synco_runtime::{Arg, FusedKernel, Node, half};

const ROWS: usize = 1024;
const BLOCK: usize = 256;

fn main() -> ExitCode {
    let Some(manifest) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: scalar_args <scale_kernel.json>");
        return ExitCode::from(2);
    };
    match run(&manifest) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("scalar_args: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(manifest: &std::path::Path) -> Result<bool, synco_runtime::RuntimeError> {
    let mut node = Node::open(1, 64 << 20)?;
    let kernel = FusedKernel::load(&mut node, manifest)?;
    let x = node.alloc(ROWS * 4)?;
    let y = node.alloc(ROWS * 4)?;
    let xs: Vec<f32> = (0..ROWS).map(|i| (i as f32 - 300.0) / 64.0).collect();
    node.write(0, &x, 0, &bytes(&xs))?;
    let mut all = true;
    // (alpha, beta, gamma, n, flag): every value exact in its type.
    for (alpha, beta, gamma, n, flag) in [
        (0.375f32, -1.5f32, 2.25f32, 1000i64, false),
        (-3.0, 0.125, -0.5, 777, true),
        (1.0, 0.0, 0.0, 1, false),
    ] {
        node.fill(0, &y, 0xff)?; // NaN poison
        let args = [
            Arg::Ptr(node.ptr(0, &x)),
            Arg::Ptr(node.ptr(0, &y)),
            Arg::F32(alpha),
            Arg::F16(half::f16::from_f32(beta)),
            Arg::BF16(half::bf16::from_f32(gamma)),
            Arg::I64(n),
            Arg::I1(flag),
        ];
        let grid = (ROWS.div_ceil(BLOCK) as u32, 1, 1);
        node.launch(&kernel, grid, &|_| args.to_vec(), &[])?;
        node.wait(Duration::from_secs(10))?;
        let ys = floats(&node.read(0, &y)?);
        let sign = if flag { -1.0 } else { 1.0 };
        let wrong = (0..ROWS)
            .filter(|&i| {
                if (i as i64) < n {
                    ys[i] != sign * (xs[i] * alpha + beta + gamma)
                } else {
                    !ys[i].is_nan()
                }
            })
            .count();
        println!(
            "{} alpha={alpha} beta(fp16)={beta} gamma(bf16)={gamma} n(i64)={n} flag(i1)={flag}: {wrong} of {ROWS} rows wrong",
            if wrong == 0 { "ok  " } else { "FAIL" }
        );
        all &= wrong == 0;
    }
    node.unload(kernel)?;
    Ok(all)
}

fn bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
