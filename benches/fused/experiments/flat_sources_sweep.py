"""The owner's GEMM of the reduce-scatter from gathered operands with its two
source blocks in one K loop, alone on one GPU, at sustained clocks.

`matmul_kernel_sources` (what `rsg` runs) has one K loop per source block,
so Triton's software pipeline drains and refills between the own block and
the peer's; `sources_kernel_sweep.py` put that at 3% to 4%
(`ptr_one_loop`). A fused kernel cannot simply write one loop: its wait
for the peer's chunk must come before the first load of the peer's block,
and the pipeliner issues loads `num_stages - 1` iterations ahead of their
use. Here the wait is made a *gate*: an inline-asm spin that returns 0
once the flag has reached the epoch, added to the load addresses of the
iteration that starts a new source block. The loads depend on the gate
through their addresses, so wherever the pipeliner puts them, the spin
runs first (and its acquire orders them after the flag); iterations of
the own block skip the spin.

Variants (128x256 tiles, 8 warps, BLOCK_K 64, GROUP_M = every row tile,
the rsg configuration), all timed with the flags already set:

* `sources`: `matmul_kernel_sources`, two K loops (today's kernel);
* `one_loop`: `matmul_kernel_grouped` over the same product with A's
  source blocks side by side along K (no gate possible, the ceiling);
* `flat`: one loop over (source, k), addresses from the iteration index;
* `flat_gate`: `flat` with the gate;
* `sources_blocked` / `flat_gate_blocked`: B stored chunk by chunk
  (`[SOURCES, N / 2048, K, 2048]`, the gathered layout a copy engine
  would write contiguously) instead of row-major `[SOURCES K, N]`;
* cuBLAS over the one-loop product, and the reduce-scatter's floor GEMM
  (cuBLAS, a rank's local partial `[M, K_local] @ [K_local, N]`).

Every variant is checked first (random bf16, output poisoned with NaN,
relative Frobenius error against fp32 < 2e-2). Timing: the whole list
twice, each variant after 200 ms of its own launches under load (the
clocks of a busy GPU), then CUDA graphs of 10 launches, median of 15.

    python3 flat_sources_sweep.py --out flat.json            # on the GPU machine
    python3 flat_sources_sweep.py --compile-only --out DIR   # here: TTGIR/PTX
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
from local_gemm_kernels import _tile_of, compile_sm90  # noqa: E402  (Triton's GROUP_M swizzle)
from local_gemm_sweep import time_graph  # noqa: E402  (CUDA graphs, warmed for warm_ms)

SOURCES = 2
SHAPES = [(2048, 1024, 8192), (4096, 1024, 8192)]  # rows R, K per source, N
CHUNK_COLS = 2048
BM, BN, BK, WARPS, STAGES = 128, 256, 64, 8, 4

# $0 = 0 once *$1 >= $2, or after 0.1 s (the experiment must not hang the
# machine; the flags are set anyway); no load at all when $3 == 0.
GATE_PTX = tl.constexpr("{\n\t.reg .pred %g_p;\n\t.reg .u32 %g_v;\n\t.reg .u64 %g_t0, %g_t;\n\t"
                        "mov.u32 $0, 0;\n\tsetp.eq.u32 %g_p, $3, 0;\n\t@%g_p bra G_DONE;\n\t"
                        "mov.u64 %g_t0, %globaltimer;\n"
                        "G_SPIN:\n\tld.acquire.sys.global.u32 %g_v, [$1];\n\t"
                        "setp.ge.u32 %g_p, %g_v, $2;\n\t@%g_p bra G_DONE;\n\t"
                        "mov.u64 %g_t, %globaltimer;\n\tsub.u64 %g_t, %g_t, %g_t0;\n\t"
                        "setp.lt.u64 %g_p, %g_t, 100000000;\n\t@%g_p bra G_SPIN;\n"
                        "G_DONE:\n\t}")


@triton.jit
def flat_sources(a_ptr, b_ptr, c_ptr, flags, epoch, M, N, K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr, SOURCES: tl.constexpr, GATE: tl.constexpr,
                 BLOCKED_B: tl.constexpr, CHUNK_COLS: tl.constexpr):
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_off = offs_m[:, None] * K + offs_k[None, :]
    if BLOCKED_B:
        chunk = (pid_n * BLOCK_N) // CHUNK_COLS
        b_row = CHUNK_COLS
        b_off = chunk * K * CHUNK_COLS + offs_k[:, None] * CHUNK_COLS + (offs_n % CHUNK_COLS)[None, :]
    else:
        b_row = N
        b_off = offs_k[:, None] * N + offs_n[None, :]
    iters = K // BLOCK_K
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for it in range(0, SOURCES * iters):
        src = it // iters
        k = (it - src * iters) * BLOCK_K
        a_base = src * M * K + k
        b_base = src * K * N + k * b_row
        if GATE:
            # The pipeliner computes addresses of iterations past the
            # loop's end (their loads masked off): those must not wait.
            need = ((k == 0) & (src > 0) & (src < SOURCES)).to(tl.int32)
            gate = tl.inline_asm_elementwise(GATE_PTX, "=r,l,r,r", [flags + src, epoch, need],
                                             dtype=tl.int32, is_pure=True, pack=1)
            # Times 64 elements: the addresses keep their known alignment
            # (vectorised, asynchronous loads); the gate is 0 anyway.
            a_base += gate * 64
            b_base += gate * 64
        a = tl.load(a_ptr + a_base + a_off)
        b = tl.load(b_ptr + b_base + b_off)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16))


@triton.jit
def sources_blocked(a_ptr, b_ptr, c_ptr, M, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, SOURCES: tl.constexpr, CHUNK_COLS: tl.constexpr):
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    chunk = (pid_n * BLOCK_N) // CHUNK_COLS
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for src in range(0, SOURCES):
        a_ptrs = a_ptr + (src * M + offs_m)[:, None] * K + offs_k[None, :]
        b_ptrs = (b_ptr + src * K * N + chunk * K * CHUNK_COLS
                  + offs_k[:, None] * CHUNK_COLS + (offs_n % CHUNK_COLS)[None, :])
        for k in range(0, K, BLOCK_K):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * CHUNK_COLS
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16))


VARIANTS = ["sources", "one_loop", "flat", "flat_gate", "sources_blocked", "flat_gate_blocked"]


def launch(kind, ops, c, group):
    rows, n = c.shape
    k = ops["ag"].shape[1]
    meta = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=group, num_warps=WARPS, num_stages=STAGES)
    grid = ((rows // BM) * (n // BN),)
    if kind == "sources":
        base.matmul_kernel_sources[grid](ops["ag"], ops["bg"], c, rows, n, k, k, 1, n, 1, n, 1,
                                         SOURCES=SOURCES, **meta)
    elif kind == "one_loop":
        kk = ops["a_cat"].shape[1]
        base.matmul_kernel_grouped[grid](ops["a_cat"], ops["bg"], c, rows, n, kk, kk, 1, n, 1, n, 1, **meta)
    elif kind in ("flat", "flat_gate", "flat_gate_blocked"):
        blocked = kind.endswith("blocked")
        flat_sources[grid](ops["ag"], ops["bg_blocked"] if blocked else ops["bg"], c, ops["flags"], 1,
                           rows, n, k, SOURCES=SOURCES, GATE=kind != "flat", BLOCKED_B=blocked,
                           CHUNK_COLS=CHUNK_COLS, **meta)
    elif kind == "sources_blocked":
        sources_blocked[grid](ops["ag"], ops["bg_blocked"], c, rows, n, k, SOURCES=SOURCES,
                              CHUNK_COLS=CHUNK_COLS, **meta)
    else:
        raise ValueError(kind)


def blocked(bg, k, n):
    """[SOURCES K, N] row-major -> [SOURCES, N / CHUNK_COLS, K, CHUNK_COLS]."""
    return bg.view(SOURCES, k, n // CHUNK_COLS, CHUNK_COLS).permute(0, 2, 1, 3).contiguous()


def run(out, rounds, warm_ms):
    import torch
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    results = []
    for rows, k, n in SHAPES:
        ag = torch.randn(SOURCES * rows, k, device="cuda", dtype=torch.bfloat16)
        bg = torch.randn(SOURCES * k, n, device="cuda", dtype=torch.bfloat16)
        ops = {"ag": ag, "bg": bg, "bg_blocked": blocked(bg, k, n),
               "a_cat": torch.cat([ag[s * rows:(s + 1) * rows] for s in range(SOURCES)], dim=1).contiguous(),
               "flags": torch.ones(SOURCES, device="cuda", dtype=torch.int32)}
        ref = ops["a_cat"].float() @ bg.float()
        c = torch.empty(rows, n, device="cuda", dtype=torch.bfloat16)
        group = rows // BM
        # The floor's GEMM: a rank's local partial, M = W rows x K_local x N.
        a_loc = torch.randn(SOURCES * rows, k, device="cuda", dtype=torch.bfloat16)
        b_loc = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        c_loc = torch.empty(SOURCES * rows, n, device="cuda", dtype=torch.bfloat16)
        row = {"rows": rows, "K": k, "N": n, "sources": SOURCES, "variants": {}, "rounds": []}
        for name in VARIANTS:
            c.fill_(float("nan"))
            try:
                launch(name, ops, c, group)
                torch.cuda.synchronize()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                ok = bool(err < 2e-2) and not torch.isnan(c).any().item()
                row["variants"][name] = {"rel_err": err, "ok": ok}
                print(f"R={rows} {name}: rel. error {err:.2e}, ok {ok}", flush=True)
            except Exception as e:  # a variant that does not compile or launch
                row["variants"][name] = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        for _ in range(rounds):
            times = {"cublas_one_loop": time_graph(lambda: torch.matmul(ops["a_cat"], bg, out=c), warm_ms)[0],
                     "cublas_floor": time_graph(lambda: torch.matmul(a_loc, b_loc, out=c_loc), warm_ms)[0]}
            for name in VARIANTS:
                if row["variants"][name]["ok"]:
                    times[name] = time_graph(lambda: launch(name, ops, c, group), warm_ms)[0]
            print(f"R={rows}", {k: round(v, 4) for k, v in times.items()}, flush=True)
            row["rounds"].append(times)
        results.append(row)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "warm_ms": warm_ms}
    with open(out, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    for r in results:
        print(f"R={r['rows']} K={r['K']}x{SOURCES} N={r['N']}")
        for name in ["cublas_floor", "cublas_one_loop"] + VARIANTS:
            v = r["variants"].get(name, {"ok": True})
            cells = " / ".join(f"{t[name]:.4f}" for t in r["rounds"] if name in t)
            status = "" if v.get("ok") else "FAIL " + str(v.get("error", v.get("rel_err")))[:80]
            print(f"  {name:20s} {cells} {status}")


def compile_only(out_dir):
    """TTGIR and PTX of the flat kernels for sm_90, without a GPU."""
    os.makedirs(out_dir, exist_ok=True)
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "flags": "*i32", "epoch": "i32",
           "M": "i32", "N": "i32", "K": "i32"}
    for gate, blocked_b in ((False, False), (True, False), (True, True)):
        consts = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": 16, "SOURCES": SOURCES,
                  "GATE": gate, "BLOCKED_B": blocked_b, "CHUNK_COLS": CHUNK_COLS}
        k = compile_sm90(flat_sources, sig, consts, ("a_ptr", "b_ptr", "c_ptr", "flags", "M", "N", "K"),
                         WARPS, STAGES)
        name = f"flat_gate{int(gate)}_blocked{int(blocked_b)}"
        for ext in ("ttgir", "ptx"):
            with open(os.path.join(out_dir, f"{name}.{ext}"), "w") as f:
                f.write(k.asm[ext])
        print(name, "async copies:", k.asm["ttgir"].count("async_copy_global_to_local"),
              "cp.async:", k.asm["ptx"].count("cp.async.cg"), "wgmma:", k.asm["ptx"].count("wgmma.mma_async"),
              "acquire:", k.asm["ptx"].count("ld.acquire.sys"), "local:", k.asm["ptx"].count(".local"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="flat_sources_sweep.json")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--warm-ms", type=float, default=200.0)
    p.add_argument("--compile-only", action="store_true")
    args = p.parse_args()
    if args.compile_only:
        compile_only(args.out)
    else:
        run(args.out, args.rounds, args.warm_ms)


if __name__ == "__main__":
    main()
