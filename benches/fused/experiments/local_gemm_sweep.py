"""Local GEMM sweep: every candidate kernel x config against cuBLAS on the
local shapes of the reduce-scatter / all-reduce benchmark (A [M, K_local],
B [K_local, N]), one GPU, one call.

    python3 local_gemm_sweep.py --out sweep.json          # on the GPU machine
    python3 local_gemm_sweep.py --compile-only            # here: sm_90a compile

Kernels: `ptr_grouped` / `ptr_persistent` (the pointer GEMMs of
examples/ag_gemm/matmul.py) and the TMA candidates of local_gemm_kernels.py
(whose `persistent_tma` stores C through a descriptor, where the examples'
`matmul_kernel_persistent_tma` stores through pointers). Each variant is
checked first (random bf16 inputs, output poisoned with NaN, relative
Frobenius error against torch.matmul in fp32 < 2e-2), then timed: 10
launches captured in a CUDA graph, 5 warm-up replays, median over 15
replays of the time per launch (synco-bench launches on streams instead;
compare the kernels here with one another). cuBLAS (torch.matmul) is timed
the same way in the same run. Writes JSON and prints a table (time in ms,
and cuBLAS time / variant time).
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "ag_gemm"))

import triton  # noqa: E402

import local_gemm_kernels as cand  # noqa: E402
import matmul as base  # noqa: E402

SHAPES = [(m, k, n) for m in (1024, 4096, 8192) for k, n in ((7168, 4096), (14336, 8192), (1024, 8192))]
NUM_SMS = 132
PER_SAMPLE = 10

# name, kernel, (BLOCK_M, BLOCK_N, BLOCK_K), warps, stages, extra constexprs
VARIANTS = []
for bm, bn, w, s in ((128, 256, 8, 4), (128, 256, 8, 3), (128, 128, 4, 4), (128, 128, 8, 4)):
    VARIANTS.append((f"ptr_grouped {bm}x{bn} w{w} s{s}", "ptr_grouped", (bm, bn, 64), w, s, {"GROUP_M": 8}))
VARIANTS.append(("ptr_persistent 128x256 w8 s4", "ptr_persistent", (128, 256, 64), 8, 4,
                 {"GROUP_M": 8, "NUM_SMS": NUM_SMS}))
for bm, bn, w, s in ((128, 256, 8, 3), (128, 256, 8, 4), (128, 128, 4, 4), (128, 128, 8, 4), (128, 128, 8, 5)):
    VARIANTS.append((f"tma_grouped {bm}x{bn} w{w} s{s}", "tma_grouped", (bm, bn, 64), w, s,
                     {"GROUP_M": 8, "C_DESC": False}))
for bm, bn, w, s in ((128, 256, 8, 3), (128, 128, 8, 4)):
    VARIANTS.append((f"tma_grouped_cdesc {bm}x{bn} w{w} s{s}", "tma_grouped", (bm, bn, 64), w, s,
                     {"GROUP_M": 8, "C_DESC": True}))
# WARP_SPEC=True gives the same PTX as False on sm_90 with Triton 3.6
# (compared once): automatic warp specialisation is Blackwell-only there.
for bm, bn, w, s in ((128, 256, 8, 3), (128, 128, 8, 4), (128, 128, 4, 4)):
    VARIANTS.append((f"tma_persistent {bm}x{bn} w{w} s{s}", "tma_persistent",
                     (bm, bn, 64), w, s, {"GROUP_M": 8, "NUM_SMS": NUM_SMS, "WARP_SPEC": False}))

KERNELS = {
    "ptr_grouped": base.matmul_kernel_grouped,
    "ptr_persistent": base.matmul_kernel_persistent,
    "tma_grouped": cand.grouped_tma,
    "tma_persistent": cand.persistent_tma,
}


def is_ptr(kind):
    return kind.startswith("ptr_")


def programs(kind, m, n, blocks):
    if kind.endswith("persistent"):
        return min(NUM_SMS, (m // blocks[0]) * (n // blocks[1]))
    return (m // blocks[0]) * (n // blocks[1])


def launch(kind, a, b, c, blocks, warps, stages, extra):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = blocks
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps, num_stages=stages, **extra)
    grid = (programs(kind, m, n, blocks),)
    if is_ptr(kind):
        KERNELS[kind][grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), **meta)
    else:
        KERNELS[kind][grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), **meta)


def compile_only():
    """Compile every variant for sm_90a on this (GPU-less) machine."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    target = GPUTarget("cuda", 90, 32)
    failed = 0
    for name, kind, (bm, bn, bk), warps, stages, extra in VARIANTS:
        fn = KERNELS[kind]
        sig, constexprs, attrs = {}, {}, {}
        meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, **extra)
        for i, arg in enumerate(fn.arg_names):
            if arg in meta:
                sig[arg] = "constexpr"
                constexprs[(i,)] = meta[arg]
            elif arg.endswith("_ptr"):
                sig[arg] = "*bf16"
                attrs[(i,)] = [["tt.divisibility", 16]]
            elif arg in ("stride_ak", "stride_bn", "stride_cn"):
                sig[arg] = "constexpr"
                constexprs[(i,)] = 1
            else:
                sig[arg] = "i32"
                attrs[(i,)] = [["tt.divisibility", 16]]
        try:
            kernel = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                                    target=target, options={"num_warps": warps, "num_stages": stages})
            md = kernel.metadata
            ptx = kernel.asm["ptx"]
            print(f"ok   {name:40s} smem={md.shared:6d} warps={md.num_warps} scratch={md.global_scratch_size}"
                  f" tma_loads={ptx.count('cp.async.bulk.tensor')} wgmma={ptx.count('wgmma.mma_async')}"
                  f" setmaxnreg={ptx.count('setmaxnreg')}")
        except Exception as e:  # report and go on: the sweep shows which compile
            failed += 1
            print(f"FAIL {name:40s} {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return failed


def time_graph(fn, warm_ms=0.0):
    """Median over 15 replays of a CUDA graph of PER_SAMPLE launches of
    `fn`, in ms per launch, and the samples; first 5 replays, then more
    until `warm_ms` have passed (the clocks of a busy GPU)."""
    import time

    import torch
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(PER_SAMPLE):
            fn()
    t0 = time.perf_counter()
    while True:
        for _ in range(5):
            graph.replay()
        torch.cuda.synchronize()
        if (time.perf_counter() - t0) * 1e3 >= warm_ms:
            break
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(15):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / PER_SAMPLE)
    return statistics.median(times), times


def run(out):
    import torch
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    results = []
    for m, k, n in SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        ref = (a.float() @ b.float())
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        cublas_ms, _ = time_graph(lambda: torch.matmul(a, b, out=c))
        row = {"M": m, "K": k, "N": n, "cublas_ms": cublas_ms, "variants": {}}
        for name, kind, blocks, warps, stages, extra in VARIANTS:
            entry = {}
            try:
                c.fill_(float("nan"))
                launch(kind, a, b, c, blocks, warps, stages, extra)
                torch.cuda.synchronize()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                entry["rel_err"] = err
                entry["ok"] = bool(err < 2e-2) and not torch.isnan(c).any().item()
                if entry["ok"]:
                    entry["ms"], entry["samples"] = time_graph(
                        lambda: launch(kind, a, b, c, blocks, warps, stages, extra))
            except Exception as e:  # a config that does not compile or launch
                entry = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
            row["variants"][name] = entry
        results.append(row)
        best = min(((v["ms"], nm) for nm, v in row["variants"].items() if v.get("ok")), default=(None, "-"))
        print(f"{m}x{k}x{n}: cuBLAS {cublas_ms:.4f}, best {best[1]} {best[0]}", flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    with open(out, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    # table: variant rows, shape columns, cuBLAS / variant
    print(f"\n{'variant':40s}" + "".join(f" {m}x{k}x{n:<5d}"[:17].rjust(17) for m, k, n in SHAPES))
    print(f"{'cuBLAS ms':40s}" + "".join(f"{r['cublas_ms']:17.4f}" for r in results))
    for name, *_ in VARIANTS:
        cells = []
        for r in results:
            v = r["variants"][name]
            cells.append(f"{v['ms']:.4f} {r['cublas_ms'] / v['ms']:.2f}" if v.get("ok") else "FAIL")
        print(f"{name:40s}" + "".join(c.rjust(17) for c in cells))
    bad = [(r["M"], nm, v) for r in results for nm, v in r["variants"].items() if not v.get("ok")]
    for m, nm, v in bad[:20]:
        print("failed:", m, nm, v.get("error") or v.get("rel_err"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="local_gemm_sweep.json")
    p.add_argument("--compile-only", action="store_true", help="compile every variant for sm_90a, no GPU")
    args = p.parse_args()
    if args.compile_only:
        sys.exit(1 if compile_only() else 0)
    run(args.out)


if __name__ == "__main__":
    main()
