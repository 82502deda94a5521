"""Reduce-scatter by gathering operands, fused by hand: what Synco would reach.

`gather_operands_ceiling.py` timed the operand gather as three host-ordered
operations (own product, copy, then the peer's product). This script fuses
it the way Synco would, written directly in Triton and driven from PyTorch
(no Synco passes), to measure whether the compiler work pays before it is
done. On two GPUs, each rank o computes its rows of the sum,

    C_o = A_o[rows_o] @ B_o + A_p[rows_o] @ B_p          (p: the peer),

in one launch of `owner_gemm`: every tile first multiplies its rank's own
operands (in place at t = 0), then waits for the two chunks of the peer's
operands it reads (the chunk of A_p[rows_o] holding its rows, the chunk of
B_p's columns holding its columns; flags set by the copy engine), then
multiplies those into the same fp32 accumulator, and stores bf16 C. The
copy engine pulls the peer's chunks on a side stream (A first, then B's
column chunks in order, `cuMemcpy2DAsync` for the strided column blocks),
and `cuStreamWriteValue32` sets each chunk's flag to the launch's epoch:
the copy-engine all-gather of Synco's runtime, with 2D chunks.

Tiles go column-block-major by default (GROUP_M = every row tile), the
order the B chunks arrive in. Variants: chunk counts of A and B, GROUP_M.
Also timed in the same process: the fused kernel with the flags already
set (its compute alone), the local partial GEMM in Triton and cuBLAS (the
reduce-scatter's floor term), the copy alone, and cuBLAS over the gathered
operands. Correctness: every variant's C against an fp32 reference, the
output poisoned (NaN) before the checked launch.

    python3 gather_operands_fused.py --out fused.json     # on nvidia-h200-x2
    python3 gather_operands_fused.py --compile-only       # here: PTX checks
"""
import argparse
import ctypes
import json
import pathlib
import statistics
import sys

import triton
import triton.language as tl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from local_gemm_kernels import _tile_of, compile_sm90  # noqa: E402  (Triton's GROUP_M swizzle)

BLOCK_M, BLOCK_N, BLOCK_K, WARPS, STAGES = 128, 256, 64, 8, 4


@triton.jit
def _wait_flag(flag, epoch):
    """Spin until *flag >= epoch (acquire, system scope)."""
    seen = tl.inline_asm_elementwise("ld.acquire.sys.global.u32 $0, [$1];", "=r,l", [flag],
                                     dtype=tl.int32, is_pure=False, pack=1)
    while seen < epoch:
        seen = tl.inline_asm_elementwise("ld.acquire.sys.global.u32 $0, [$1];", "=r,l", [flag],
                                         dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _mma_block(acc, a_ptrs, b_ptrs, K, stride_ak, stride_bk, BLOCK_K: tl.constexpr):
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def owner_gemm(a_own, b_own, a_peer, b_peer, c, flags, epoch, rows, N, K,
               A_CHUNK_ROWS: tl.constexpr, B_CHUNK_COLS: tl.constexpr, A_CHUNKS: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_M: tl.constexpr, BLOCKED_B: tl.constexpr):
    """C[rows, N] = a_own[rows, K] @ b_own[K, N] + a_peer @ b_peer; the
    peer's operands are read only after their chunks' flags reach epoch.
    BLOCKED_B: both B are stored chunk by chunk, [N / B_CHUNK_COLS, K,
    B_CHUNK_COLS] (each chunk contiguous), instead of row-major [K, N]."""
    pid_m, pid_n = _tile_of(tl.program_id(0), rows, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_off = offs_m[:, None] * K + offs_k[None, :]
    if BLOCKED_B:
        chunk = (pid_n * BLOCK_N) // B_CHUNK_COLS
        b_off = chunk * K * B_CHUNK_COLS + offs_k[:, None] * B_CHUNK_COLS + (offs_n % B_CHUNK_COLS)[None, :]
        stride_bk = B_CHUNK_COLS
    else:
        b_off = offs_k[:, None] * N + offs_n[None, :]
        stride_bk = N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc = _mma_block(acc, a_own + a_off, b_own + b_off, K, 1, stride_bk, BLOCK_K)
    _wait_flag(flags + (pid_m * BLOCK_M) // A_CHUNK_ROWS, epoch)
    _wait_flag(flags + A_CHUNKS + (pid_n * BLOCK_N) // B_CHUNK_COLS, epoch)
    acc = _mma_block(acc, a_peer + a_off, b_peer + b_off, K, 1, stride_bk, BLOCK_K)
    c_ptrs = c + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(tl.bfloat16))


SIGNATURE = {"a_own": "*bf16", "b_own": "*bf16", "a_peer": "*bf16", "b_peer": "*bf16", "c": "*bf16",
             "flags": "*i32", "epoch": "i32", "rows": "i32", "N": "i32", "K": "i32"}


def compile_only():
    """Compiles one variant for sm_90a and checks the PTX: wgmma, the
    acquire loads of the waits, two pipelined K loops (async copies)."""
    constexprs = {"A_CHUNK_ROWS": 512, "B_CHUNK_COLS": 1024, "A_CHUNKS": 4, "BLOCK_M": BLOCK_M,
                  "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": 16, "BLOCKED_B": True}
    aligned = ("a_own", "b_own", "a_peer", "b_peer", "c", "flags", "rows", "N", "K")
    kernel = compile_sm90(owner_gemm, SIGNATURE, constexprs, aligned, WARPS, STAGES)
    ptx = kernel.asm["ptx"]
    checks = {"wgmma": ptx.count("wgmma.mma_async"), "ld.acquire.sys": ptx.count("ld.acquire.sys"),
              "cp.async": ptx.count("cp.async.cg"), "local": ptx.count(".local")}
    print("owner_gemm PTX:", checks)
    assert checks["wgmma"] > 0 and checks["ld.acquire.sys"] >= 2 and checks["cp.async"] > 0, checks
    assert checks["local"] == 0, "spills"
    return 0


class Memcpy2D(ctypes.Structure):
    """CUDA_MEMCPY2D (cuda.h)."""
    _fields_ = [("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t),
                ("srcMemoryType", ctypes.c_int), ("srcHost", ctypes.c_void_p),
                ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p),
                ("srcPitch", ctypes.c_size_t),
                ("dstXInBytes", ctypes.c_size_t), ("dstY", ctypes.c_size_t),
                ("dstMemoryType", ctypes.c_int), ("dstHost", ctypes.c_void_p),
                ("dstDevice", ctypes.c_uint64), ("dstArray", ctypes.c_void_p),
                ("dstPitch", ctypes.c_size_t),
                ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t)]


def time_both_gpus(fn, mains, done, reps=15, per_sample=10, warmup=3):
    """Median over reps of the slower GPU's time per launch of `fn` (which
    launches on both GPUs), `per_sample` launches back to back. Each sample
    is issued while both GPUs sleep (torch.cuda._sleep on the main streams
    `mains[d]`; `done[d]` is set to the sample's start event, which the side
    streams wait for), so the host's issue time is not measured."""
    import time

    import torch
    devices = range(len(mains))
    for _ in range(warmup):
        fn()
    for d in devices:
        torch.cuda.synchronize(d)
    samples, issue = [], []
    for _ in range(reps):
        pairs = []
        for d in devices:
            with torch.cuda.device(d), torch.cuda.stream(mains[d]):
                torch.cuda._sleep(20_000_000)  # about 10 ms
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                done[d] = start
                pairs.append((d, start, end))
        t0 = time.perf_counter()
        for _ in range(per_sample):
            fn()
        issue.append((time.perf_counter() - t0) * 1e3)
        for d, _, end in pairs:
            with torch.cuda.device(d):
                end.record(mains[d])
        for d in devices:
            torch.cuda.synchronize(d)
        samples.append(max(s.elapsed_time(e) for _, s, e in pairs) / per_sample)
    assert statistics.median(issue) < 8.0, f"the host took {statistics.median(issue):.1f} ms to issue"
    return statistics.median(samples)


def run(out, shapes):

    import torch
    from nvlink_sm_probe import enable_peer_access  # the probe beside this script
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "examples" / "ag_gemm"))
    from matmul import matmul_kernel_grouped  # the benchmark's grouped local GEMM

    cuda = ctypes.CDLL("libcuda.so.1")
    CU_MEMORYTYPE_DEVICE = 2

    def check(rc, what):
        assert rc == 0, f"{what}: CUDA error {rc}"

    def copy_1d(dst, src, elems, stream):
        check(cuda.cuMemcpyAsync(ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(elems * 2),
                                 ctypes.c_void_p(stream.cuda_stream)), "cuMemcpyAsync")

    def copy_2d(dst, src, width_elems, height, dst_pitch, src_pitch, stream):
        """Rows of width_elems bf16 from src to dst (pitches in elements)."""
        p = Memcpy2D(srcMemoryType=CU_MEMORYTYPE_DEVICE, srcDevice=src, srcPitch=src_pitch * 2,
                     dstMemoryType=CU_MEMORYTYPE_DEVICE, dstDevice=dst, dstPitch=dst_pitch * 2,
                     WidthInBytes=width_elems * 2, Height=height)
        check(cuda.cuMemcpy2DAsync_v2(ctypes.byref(p), ctypes.c_void_p(stream.cuda_stream)),
              "cuMemcpy2DAsync")

    def write_flag(addr, value, stream):
        check(cuda.cuStreamWriteValue32_v2(ctypes.c_void_p(stream.cuda_stream), ctypes.c_uint64(addr),
                                           ctypes.c_uint32(value), ctypes.c_uint(0)),
              "cuStreamWriteValue32")

    world, devices = 2, [0, 1]
    enable_peer_access()
    results = []
    for m, k, n in shapes:
        rows = m // world
        ranks = []
        for d in devices:
            with torch.cuda.device(d):
                g = torch.Generator(device=f"cuda:{d}").manual_seed(4321 + d)
                b = torch.randn(k, n, device=f"cuda:{d}", generator=g).to(torch.bfloat16)
                ranks.append({
                    "a": torch.randn(m, k, device=f"cuda:{d}", generator=g).to(torch.bfloat16),
                    "b": b,
                    "b_rows": b,  # the layout in use (row-major or chunk-blocked)
                    "partial": torch.empty(m, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "c": torch.empty(rows, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "a_peer": torch.empty(rows, k, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "b_peer": torch.empty(k, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "flags": torch.zeros(64, device=f"cuda:{d}", dtype=torch.int32),
                    "side": torch.cuda.Stream(device=f"cuda:{d}"),
                    "main": torch.cuda.Stream(device=f"cuda:{d}"),
                })
        refs = [sum(r["a"][o * rows:(o + 1) * rows].float().to(f"cuda:{o}") @ r["b"].float().to(f"cuda:{o}")
                    for r in ranks) for o in devices]
        row = {"m": m, "k_local": k, "n": n, "world": world, "variants": []}
        done = [None, None]  # each rank's last kernel: the next pull must follow it
        state = {"epoch": 0}

        def timed(fn):
            return time_both_gpus(fn, [r["main"] for r in ranks], done)

        def partial_cublas():
            for d, r in zip(devices, ranks):
                with torch.cuda.device(d), torch.cuda.stream(r["main"]):
                    torch.matmul(r["a"], r["b"], out=r["partial"])

        def partial_triton():
            for d, r in zip(devices, ranks):
                with torch.cuda.device(d), torch.cuda.stream(r["main"]):
                    grid = ((m // BLOCK_M) * (n // BLOCK_N), )
                    matmul_kernel_grouped[grid](r["a"], r["b"], r["partial"], m, n, k, k, 1, n, 1, n, 1,
                                                BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8,
                                                num_warps=WARPS, num_stages=STAGES)
        row["partial_cublas_ms"] = timed(partial_cublas)
        row["partial_triton_ms"] = timed(partial_triton)

        def use_layout(b_chunks, blocked):
            cols = n // b_chunks
            for r in ranks:
                if blocked:  # [chunks, K, cols], each chunk contiguous
                    r["b_rows"] = r["b"].view(k, b_chunks, cols).permute(1, 0, 2).contiguous()
                else:
                    r["b_rows"] = r["b"]

        def launch(a_chunks, b_chunks, group_m, blocked, push=False, with_flags=True, copies=True, kernel=True):
            """One fused launch on both ranks. The peer's chunks are pulled by
            the owner's copy engine (its side stream) or pushed by the
            peer's (push); each chunk's flag is set after it by a stream
            write (on the peer's memory when pushing)."""
            state["epoch"] += 1
            epoch = state["epoch"]
            a_rows, b_cols = rows // a_chunks, n // b_chunks
            for o in devices if copies else []:
                p = 1 - o
                r, peer = ranks[o], ranks[p]
                mover = peer if push else r
                with torch.cuda.device(mover["side"].device):
                    side = mover["side"]
                    if done[o] is not None:
                        side.wait_event(done[o])  # the owner's previous launch read a_peer / b_peer
                    flags = r["flags"].data_ptr()
                    src_a = peer["a"][o * rows:(o + 1) * rows].data_ptr()
                    for i in range(a_chunks):
                        copy_1d(r["a_peer"].data_ptr() + i * a_rows * k * 2, src_a + i * a_rows * k * 2,
                                a_rows * k, side)
                        if with_flags:
                            write_flag(flags + 4 * i, epoch, side)
                    for j in range(b_chunks):
                        if blocked:
                            copy_1d(r["b_peer"].data_ptr() + j * k * b_cols * 2,
                                    peer["b_rows"].data_ptr() + j * k * b_cols * 2, k * b_cols, side)
                        else:
                            copy_2d(r["b_peer"].data_ptr() + j * b_cols * 2, peer["b_rows"].data_ptr() + j * b_cols * 2,
                                    b_cols, k, n, n, side)
                        if with_flags:
                            write_flag(flags + 4 * (a_chunks + j), epoch, side)
                if not kernel:  # the copy alone: the timing events are on the owner's main stream
                    r["main"].wait_stream(side)
            for o in devices if kernel else []:
                r = ranks[o]
                with torch.cuda.device(o), torch.cuda.stream(r["main"]):
                    grid = ((rows // BLOCK_M) * (n // BLOCK_N), )
                    owner_gemm[grid](r["a"][o * rows:(o + 1) * rows], r["b_rows"], r["a_peer"], r["b_peer"],
                                     r["c"], r["flags"], epoch, rows, n, k,
                                     A_CHUNK_ROWS=a_rows, B_CHUNK_COLS=b_cols, A_CHUNKS=a_chunks,
                                     BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=group_m,
                                     BLOCKED_B=blocked, num_warps=WARPS, num_stages=STAGES)
                    ev = torch.cuda.Event()
                    ev.record(r["main"])
                    done[o] = ev

        def check_variant(*variant):
            for o in devices:
                for name in ("c", "a_peer", "b_peer"):
                    ranks[o][name].fill_(float("nan"))
            for d in devices:
                torch.cuda.synchronize(d)
            launch(*variant)
            errs = []
            for o in devices:
                torch.cuda.synchronize(o)
                errs.append(float((ranks[o]["c"].float() - refs[o]).norm() / refs[o].norm()))
            return max(errs)

        all_m = rows // BLOCK_M
        # The copies alone (chunks: A 1 + B 8 unless said): what a chunk's flag costs, pull against push.
        use_layout(8, True)
        copy_cases = {"pull": dict(), "pull_no_flags": dict(with_flags=False),
                      "pull_2_chunks_no_flags": dict(with_flags=False, b_chunks=1),
                      "push": dict(push=True), "push_no_flags": dict(push=True, with_flags=False),
                      "push_2_chunks_no_flags": dict(push=True, with_flags=False, b_chunks=1)}
        row["copy_ms"] = {}
        for name, case in copy_cases.items():
            b_chunks = case.pop("b_chunks", 8)
            use_layout(b_chunks, True)
            row["copy_ms"][name] = timed(lambda: launch(1, b_chunks, all_m, True, kernel=False, **case))
        for d in devices:
            torch.cuda.synchronize(d)
        # The fused kernel with its flags already past every epoch: its compute alone.
        for blocked in (False, True):
            use_layout(8, blocked)
            for o in devices:
                ranks[o]["flags"].fill_(1 << 30)
            row[f"compute_only_{'blocked' if blocked else 'rows'}_ms"] = timed(
                lambda: launch(1, 8, all_m, blocked, copies=False))
            for d in devices:
                torch.cuda.synchronize(d)
                ranks[d]["flags"].zero_()
            state["epoch"] = 0
        variants = [(1, b, all_m, True, push) for push in (False, True) for b in (2, 4, 8, 16)]
        variants += [(1, 4, all_m, False, True), (2, 4, all_m, True, True), (1, 4, 8, True, True)]
        for variant in variants:
            a_chunks, b_chunks, group_m, blocked, push = variant
            use_layout(b_chunks, blocked)
            err = check_variant(*variant)
            ms = timed(lambda: launch(*variant))
            err_after = check_variant(*variant)
            v = {"a_chunks": a_chunks, "b_chunks": b_chunks, "group_m": group_m, "blocked_b": blocked,
                 "push": push, "ms": ms, "rel_error": err, "rel_error_after": err_after}
            row["variants"].append(v)
            print(f"{m}x{k}x{n} {'push' if push else 'pull'} B {'blocked' if blocked else 'rows   '} "
                  f"A chunks {a_chunks} B chunks {b_chunks:2d} GROUP_M {group_m:2d}: {ms:.4f} ms "
                  f"(rel. error {err:.2e}, after timing {err_after:.2e})", flush=True)
        best = min(row["variants"], key=lambda v: v["ms"])
        row["best"] = best
        copies = ", ".join(f"{name} {ms:.4f}" for name, ms in row["copy_ms"].items())
        print(f"{m}x{k}x{n}: partial GEMM cuBLAS {row['partial_cublas_ms']:.4f} Triton {row['partial_triton_ms']:.4f}; "
              f"copies alone: {copies}; fused compute alone {row['compute_only_rows_ms']:.4f} (rows) "
              f"{row['compute_only_blocked_ms']:.4f} (blocked); fused best {best['ms']:.4f} "
              f"(push {best['push']}, A {best['a_chunks']}, B {best['b_chunks']}, GROUP_M {best['group_m']}, "
              f"blocked {best['blocked_b']})", flush=True)
        results.append(row)
        ranks.clear()  # frees this shape's tensors before the next
        torch.cuda.empty_cache()
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "triton": triton.__version__, "results": results}, f, indent=1)
    bad = [v for r in results for v in r["variants"]
           if not (v["rel_error"] < 1e-2 and v["rel_error_after"] < 1e-2)]
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="gather_operands_fused.json")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--shapes", default="4096,1024,8192 8192,1024,8192")
    args = p.parse_args()
    if args.compile_only:
        return compile_only()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes.split()]
    return run(args.out, shapes)


if __name__ == "__main__":
    raise SystemExit(main())
