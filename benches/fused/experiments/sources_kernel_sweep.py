"""The owner's GEMM of the reduce-scatter from gathered operands, alone on
one GPU: which kernel multiplies the gathered operands fastest?

The fused `rsg` operator (examples/gemm_rs/plan-gather.mlir) runs
`matmul_kernel_sources` (examples/ag_gemm/matmul.py): C[R, N] = sum over
SOURCES blocks s of Ag[s R : (s+1) R, :] @ Bg[s K : (s+1) K, :], one K loop
per source block (the fused kernel waits for a peer's chunks between them),
GROUP_M = every row tile (tiles go column block by column block, the order
B's column chunks arrive in). Here, with nothing to wait for, it is timed
against:

* `tma_sources`: the same loops with A and B moved by the tensor memory
  accelerator (device-side descriptors over Ag and Bg), one program per tile;
* `tma_sources_persistent`: the same, one program per SM looping over tiles;
* `ptr_one_loop`: `matmul_kernel_grouped` over the same product written as
  one K loop (A's source blocks side by side along K): what splitting the
  K loop by source costs;
* cuBLAS on that one-loop product (torch.matmul).

Shapes: the owner's product at 4096x1024x8192 and 8192x1024x8192 on 2 ranks
(R = 2048 / 4096 rows, K = 1024 per source, N = 8192, 2 sources). Each
variant is checked first (random bf16 inputs, output poisoned with NaN,
relative Frobenius error against fp32 < 2e-2), then timed: 10 launches in
a CUDA graph, 5 warm-up replays, median over 15 replays of the time per
launch, every variant and cuBLAS in the same run.

    python3 sources_kernel_sweep.py --out sources.json     # on the GPU machine
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ag_gemm"))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import matmul as base  # noqa: E402
from local_gemm_kernels import _tile_of  # noqa: E402  (Triton's GROUP_M swizzle)
from local_gemm_sweep import time_graph  # noqa: E402  (CUDA graphs of PER_SAMPLE launches)

SOURCES = 2
SHAPES = [(2048, 1024, 8192), (4096, 1024, 8192)]  # rows R, K per source, N
NUM_SMS = 132


@triton.jit
def _sources_tile(a_desc, b_desc, off_m, off_n, M, K, SOURCES: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for src in range(0, SOURCES):
        for k in range(0, K, BLOCK_K):
            a = a_desc.load([src * M + off_m, k])
            b = b_desc.load([src * K + k, off_n])
            acc = tl.dot(a, b, acc)
    return acc.to(tl.bfloat16)


@triton.jit
def tma_sources(a_ptr, b_ptr, c_ptr, M, N, K,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, SOURCES: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[SOURCES * M, K], strides=[K, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[SOURCES * K, N], strides=[N, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    c = _sources_tile(a_desc, b_desc, off_m, off_n, M, K, SOURCES, BLOCK_M, BLOCK_N, BLOCK_K)
    offs_m = off_m + tl.arange(0, BLOCK_M)
    offs_n = off_n + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], c)


@triton.jit
def tma_sources_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, SOURCES: tl.constexpr, NUM_SMS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[SOURCES * M, K], strides=[K, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[SOURCES * K, N], strides=[N, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in range(tl.program_id(0), num_tiles, NUM_SMS):
        pid_m, pid_n = _tile_of(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        c_desc.store([off_m, off_n],
                     _sources_tile(a_desc, b_desc, off_m, off_n, M, K, SOURCES, BLOCK_M, BLOCK_N, BLOCK_K))


def variants(rows):
    """name, kind, (BLOCK_M, BLOCK_N), warps, stages, GROUP_M."""
    every_row = rows // 128
    out = []
    for bn, w, s in ((256, 8, 4), (256, 8, 3), (128, 8, 4), (128, 4, 4)):
        out.append((f"ptr_sources 128x{bn} w{w} s{s}", "ptr_sources", (128, bn), w, s, every_row))
    for bn, w, s in ((256, 8, 4), (256, 8, 3), (128, 8, 4), (128, 4, 4)):
        out.append((f"tma_sources 128x{bn} w{w} s{s}", "tma_sources", (128, bn), w, s, every_row))
    for bn, w, s in ((256, 8, 3), (128, 8, 4)):
        out.append((f"tma_sources_persistent 128x{bn} w{w} s{s}", "tma_persistent", (128, bn), w, s, every_row))
    out.append(("ptr_one_loop 128x256 w8 s4", "ptr_one_loop", (128, 256), 8, 4, every_row))
    out.append(("ptr_one_loop 128x256 w8 s4 G8", "ptr_one_loop", (128, 256), 8, 4, 8))
    return out


def launch(kind, ag, bg, a_cat, b_cat, c, blocks, warps, stages, group):
    rows, n = c.shape
    k = ag.shape[1]
    bm, bn = blocks
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=64, GROUP_M=group, num_warps=warps, num_stages=stages)
    tiles = (rows // bm) * (n // bn)
    if kind == "ptr_sources":
        base.matmul_kernel_sources[(tiles,)](ag, bg, c, rows, n, k, k, 1, n, 1, n, 1, SOURCES=SOURCES, **meta)
    elif kind == "tma_sources":
        tma_sources[(tiles,)](ag, bg, c, rows, n, k, SOURCES=SOURCES, **meta)
    elif kind == "tma_persistent":
        tma_sources_persistent[(min(NUM_SMS, tiles),)](ag, bg, c, rows, n, k, SOURCES=SOURCES,
                                                       NUM_SMS=NUM_SMS, **meta)
    elif kind == "ptr_one_loop":
        kk = a_cat.shape[1]
        base.matmul_kernel_grouped[(tiles,)](a_cat, b_cat, c, rows, n, kk, kk, 1, n, 1, n, 1, **meta)
    else:
        raise ValueError(kind)


def run(out):
    import torch
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    results = []
    for rows, k, n in SHAPES:
        ag = torch.randn(SOURCES * rows, k, device="cuda", dtype=torch.bfloat16)
        bg = torch.randn(SOURCES * k, n, device="cuda", dtype=torch.bfloat16)
        # The same product as one K loop: source blocks side by side along K.
        a_cat = torch.cat([ag[s * rows:(s + 1) * rows] for s in range(SOURCES)], dim=1).contiguous()
        b_cat = bg
        ref = a_cat.float() @ b_cat.float()
        c = torch.empty(rows, n, device="cuda", dtype=torch.bfloat16)
        cublas_ms, cublas_samples = time_graph(lambda: torch.matmul(a_cat, b_cat, out=c))
        row = {"rows": rows, "K": k, "N": n, "sources": SOURCES, "cublas_ms": cublas_ms,
               "cublas_samples": cublas_samples, "variants": {}}
        for name, kind, blocks, warps, stages, group in variants(rows):
            entry = {"group_m": group}
            try:
                c.fill_(float("nan"))
                launch(kind, ag, bg, a_cat, b_cat, c, blocks, warps, stages, group)
                torch.cuda.synchronize()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                entry["rel_err"] = err
                entry["ok"] = bool(err < 2e-2) and not torch.isnan(c).any().item()
                if entry["ok"]:
                    entry["ms"], entry["samples"] = time_graph(
                        lambda: launch(kind, ag, bg, a_cat, b_cat, c, blocks, warps, stages, group))
            except Exception as e:  # a config that does not compile or launch
                entry.update(ok=False, error=f"{type(e).__name__}: {str(e)[:300]}")
            row["variants"][name] = entry
        results.append(row)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    with open(out, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    print(f"{'variant':44s}" + "".join(("R=%d" % r["rows"]).rjust(18) for r in results))
    print(f"{'cuBLAS (one loop) ms':44s}" + "".join(f"{r['cublas_ms']:18.4f}" for r in results))
    for name, *_ in variants(SHAPES[0][0]):
        cells = []
        for r in results:
            v = r["variants"].get(name, {})
            cells.append(f"{v['ms']:.4f} ({r['cublas_ms'] / v['ms']:.2f})" if v.get("ok")
                         else "FAIL " + str(v.get("error", v.get("rel_err")))[:60])
        print(f"{name:44s}" + "".join(c.rjust(18) for c in cells))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="sources_kernel_sweep.json")
    run(p.parse_args().out)


if __name__ == "__main__":
    main()
