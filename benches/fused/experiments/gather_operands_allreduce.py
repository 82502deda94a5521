"""All-reduce from gathered operands, fused by hand: is it worth building?

At K_local = 1024 the reduce-scatter from gathered operands (`rsg`,
gather_operands_fused.py, then Synco's `synco-gemm-rs-gather`) beats the
exchange of partials by 18% to 19%. An all-reduce leaves every rank the
whole sum C = A_0 @ B_0 + A_1 @ B_1 [M, N]: each rank o computes its rows
of C from gathered operands, as `rsg` does, and sends those rows to its
peer. Per direction that is M/2 x K (A rows) + K x N (B) + M/2 x N (C rows)
against 2 x M/2 x N for the two-shot exchange of partials (20 + 32 MiB
against 64 at 4096x1024x8192). This script measures, on two GPUs, how
close a fused version gets, written directly in Triton and driven from
PyTorch (no Synco passes), before any compiler work:

* `owner_gemm_ar` is `owner_gemm` (gather_operands_fused.py: own operands
  first, then the peer's chunks behind their flags) storing into its rows
  of the full C; with C_CHUNKS > 0 each tile then counts itself done in its
  column chunk's counter (a CTA barrier, then a release atomic at system
  scope);
* each rank's copy engine pushes its operands to the peer (A rows in one
  chunk, B in column chunks, each followed by a `cuStreamWriteValue32`
  flag), then, for every column chunk of its C rows, waits for the chunk's
  counter (`cuStreamWaitValue32`), pushes the chunk into the peer's C
  (`cuMemcpy2DAsync`) and sets the peer's flag; the peer's launch ends
  when all its flags are set (stream waits after its kernel);
* `after_kernel`: the same, but the C rows go in one copy after the kernel
  (no counters): the sequential composition;
* `rsg_only`: no C push (the reduce-scatter from gathered operands).

Tiles go column block by column block (GROUP_M = every row tile), the
order B's chunks arrive in and C's column chunks complete in. Every
variant is checked (both ranks' whole C against an fp32 reference, C and
the landing buffers poisoned with NaN) before and after its timing.
Samples are issued while both GPUs sleep, so the host's issue time is
not measured (as in gather_operands_fused.py).

    python3 gather_operands_allreduce.py --out allreduce.json   # on nvidia-h200-x2
    python3 gather_operands_allreduce.py --compile-only         # here: PTX checks
"""
import argparse
import ctypes
import json
import pathlib
import sys

import triton
import triton.language as tl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gather_operands_fused import (BLOCK_K, BLOCK_M, BLOCK_N, STAGES, WARPS, Memcpy2D,  # noqa: E402
                                   _mma_block, _wait_flag, time_both_gpus)
from local_gemm_kernels import _tile_of, compile_sm90  # noqa: E402  (Triton's GROUP_M swizzle)


@triton.jit
def owner_gemm_ar(a_own, b_own, a_peer, b_peer, c, flags, counters, epoch, rows, N, K,
                  B_CHUNK_COLS: tl.constexpr, C_CHUNK_COLS: tl.constexpr, COUNT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    """c[rows, N] (row stride N) = a_own @ b_own + a_peer @ b_peer; the
    peer's A rows wait for flags[0], its B columns for flags[1 + chunk].
    COUNT: then add 1 to counters[column chunk of C] (release, system
    scope) once the tile's stores are done."""
    pid_m, pid_n = _tile_of(tl.program_id(0), rows, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_off = offs_m[:, None] * K + offs_k[None, :]
    b_off = offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc = _mma_block(acc, a_own + a_off, b_own + b_off, K, 1, N, BLOCK_K)
    _wait_flag(flags, epoch)
    _wait_flag(flags + 1 + (pid_n * BLOCK_N) // B_CHUNK_COLS, epoch)
    acc = _mma_block(acc, a_peer + a_off, b_peer + b_off, K, 1, N, BLOCK_K)
    tl.store(c + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16))
    if COUNT:
        tl.debug_barrier()
        tl.atomic_add(counters + (pid_n * BLOCK_N) // C_CHUNK_COLS, 1, sem="release", scope="sys")


SIGNATURE = {"a_own": "*bf16", "b_own": "*bf16", "a_peer": "*bf16", "b_peer": "*bf16", "c": "*bf16",
             "flags": "*i32", "counters": "*i32", "epoch": "i32", "rows": "i32", "N": "i32", "K": "i32"}


def compile_only():
    """Compiles the counting variant for sm_90a and checks the PTX: wgmma,
    the acquire loads of the two waits, the release atomic, a barrier."""
    constexprs = {"B_CHUNK_COLS": 2048, "C_CHUNK_COLS": 2048, "COUNT": True, "BLOCK_M": BLOCK_M,
                  "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": 16}
    aligned = ("a_own", "b_own", "a_peer", "b_peer", "c", "flags", "counters", "rows", "N", "K")
    kernel = compile_sm90(owner_gemm_ar, SIGNATURE, constexprs, aligned, WARPS, STAGES)
    ptx = kernel.asm["ptx"]
    checks = {"wgmma": ptx.count("wgmma.mma_async"), "ld.acquire.sys": ptx.count("ld.acquire.sys"),
              "atom.release.sys": ptx.count("atom.global.sys.release.add") + ptx.count("atom.release.sys"),
              "bar.sync": ptx.count("bar.sync"), "local": ptx.count(".local")}
    print("owner_gemm_ar PTX:", checks)
    assert checks["wgmma"] > 0 and checks["ld.acquire.sys"] >= 2, checks
    assert checks["atom.release.sys"] >= 1 and checks["bar.sync"] >= 1, checks
    assert checks["local"] == 0, "spills"
    return 0


def run(out, shapes):
    import torch
    from nvlink_sm_probe import enable_peer_access  # the probe beside this script

    cuda = ctypes.CDLL("libcuda.so.1")
    CU_MEMORYTYPE_DEVICE = 2
    WAIT_GEQ = 0

    def check(rc, what):
        assert rc == 0, f"{what}: CUDA error {rc}"

    def stream_of(s):
        return ctypes.c_void_p(s.cuda_stream)

    def copy_1d(dst, src, elems, stream):
        check(cuda.cuMemcpyAsync(ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(elems * 2),
                                 stream_of(stream)), "cuMemcpyAsync")

    def copy_2d(dst, src, width_elems, height, pitch_elems, stream):
        p = Memcpy2D(srcMemoryType=CU_MEMORYTYPE_DEVICE, srcDevice=src, srcPitch=pitch_elems * 2,
                     dstMemoryType=CU_MEMORYTYPE_DEVICE, dstDevice=dst, dstPitch=pitch_elems * 2,
                     WidthInBytes=width_elems * 2, Height=height)
        check(cuda.cuMemcpy2DAsync_v2(ctypes.byref(p), stream_of(stream)), "cuMemcpy2DAsync")

    def write_flag(addr, value, stream):
        check(cuda.cuStreamWriteValue32_v2(stream_of(stream), ctypes.c_uint64(addr), ctypes.c_uint32(value),
                                           ctypes.c_uint(0)), "cuStreamWriteValue32")

    def wait_value(addr, value, stream):
        check(cuda.cuStreamWaitValue32_v2(stream_of(stream), ctypes.c_uint64(addr), ctypes.c_uint32(value),
                                          ctypes.c_uint(WAIT_GEQ)), "cuStreamWaitValue32")

    world, devices = 2, [0, 1]
    enable_peer_access()
    results = []
    for m, k, n in shapes:
        rows = m // world
        ranks = []
        for d in devices:
            with torch.cuda.device(d):
                g = torch.Generator(device=f"cuda:{d}").manual_seed(9876 + d)
                ranks.append({
                    "a": torch.randn(m, k, device=f"cuda:{d}", generator=g).to(torch.bfloat16),
                    "b": torch.randn(k, n, device=f"cuda:{d}", generator=g).to(torch.bfloat16),
                    "c": torch.empty(m, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "a_peer": torch.empty(rows, k, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "b_peer": torch.empty(k, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    # flags: [0] A rows, [1 + j] B chunk j, [64 + j] C chunk j from the peer
                    "flags": torch.zeros(128, device=f"cuda:{d}", dtype=torch.int32),
                    "counters": torch.zeros(64, device=f"cuda:{d}", dtype=torch.int32),
                    "side": torch.cuda.Stream(device=f"cuda:{d}"),
                    "main": torch.cuda.Stream(device=f"cuda:{d}"),
                })
        with torch.cuda.device(0):
            ref = sum(r["a"].float().to("cuda:0") @ r["b"].float().to("cuda:0") for r in ranks)
        refs = [ref.to(f"cuda:{d}") for d in devices]
        del ref
        row = {"m": m, "k_local": k, "n": n, "world": world, "variants": []}
        state = {"epoch": 0, "counted": 0}
        done = [None, None]  # each rank's last launch (its kernel and the C it waited for)

        def timed(fn):
            return time_both_gpus(fn, [r["main"] for r in ranks], done)

        def launch(b_chunks, c_mode, c_chunks):
            """One all-reduce (c_mode 'chunks' or 'after_kernel') or
            reduce-scatter ('none') on both ranks."""
            state["epoch"] += 1
            epoch = state["epoch"]
            count = c_mode == "chunks"
            if count:
                state["counted"] += 1
            b_cols, c_cols = n // b_chunks, n // max(c_chunks, 1)
            tiles_per_c_chunk = (rows // BLOCK_M) * (c_cols // BLOCK_N)
            # Operands: rank o pushes A_o[rows_p] and B_o into the peer p.
            for o in devices:
                p = 1 - o
                r, peer = ranks[o], ranks[p]
                with torch.cuda.device(o):
                    side = r["side"]
                    if done[p] is not None:
                        side.wait_event(done[p])  # the peer's previous launch read a_peer / b_peer
                    pflags = peer["flags"].data_ptr()
                    copy_1d(peer["a_peer"].data_ptr(), r["a"][p * rows:(p + 1) * rows].data_ptr(), rows * k, side)
                    write_flag(pflags, epoch, side)
                    for j in range(b_chunks):
                        copy_2d(peer["b_peer"].data_ptr() + j * b_cols * 2, r["b"].data_ptr() + j * b_cols * 2,
                                b_cols, k, n, side)
                        write_flag(pflags + 4 * (1 + j), epoch, side)
            for o in devices:
                r = ranks[o]
                with torch.cuda.device(o), torch.cuda.stream(r["main"]):
                    grid = ((rows // BLOCK_M) * (n // BLOCK_N), )
                    owner_gemm_ar[grid](r["a"][o * rows:(o + 1) * rows], r["b"], r["a_peer"], r["b_peer"],
                                        r["c"][o * rows:(o + 1) * rows], r["flags"], r["counters"], epoch, rows, n, k,
                                        B_CHUNK_COLS=b_cols, C_CHUNK_COLS=c_cols, COUNT=count,
                                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=rows // BLOCK_M,
                                        num_warps=WARPS, num_stages=STAGES)
                    kernel_done = torch.cuda.Event()
                    kernel_done.record(r["main"])
                    r["kernel_done"] = kernel_done
            # C rows: rank o pushes C_o[rows_o] into the peer's C.
            for o in devices if c_mode != "none" else []:
                p = 1 - o
                r, peer = ranks[o], ranks[p]
                with torch.cuda.device(o):
                    side = r["side"]
                    src = r["c"].data_ptr() + o * rows * n * 2
                    dst = peer["c"].data_ptr() + o * rows * n * 2
                    pflags = peer["flags"].data_ptr()
                    if c_mode == "after_kernel":
                        side.wait_event(r["kernel_done"])
                        copy_1d(dst, src, rows * n, side)
                        write_flag(pflags + 4 * 64, epoch, side)
                    else:
                        for j in range(c_chunks):
                            wait_value(r["counters"].data_ptr() + 4 * j, state["counted"] * tiles_per_c_chunk, side)
                            copy_2d(dst + j * c_cols * 2, src + j * c_cols * 2, c_cols, rows, n, side)
                            write_flag(pflags + 4 * (64 + j), epoch, side)
            # Each rank's launch ends once the peer's C rows are in.
            for o in devices:
                r = ranks[o]
                with torch.cuda.device(o), torch.cuda.stream(r["main"]):
                    waits = {"none": 0, "after_kernel": 1, "chunks": c_chunks}[c_mode]
                    for j in range(waits):
                        wait_value(r["flags"].data_ptr() + 4 * (64 + j), epoch, r["main"])
                    ev = torch.cuda.Event()
                    ev.record(r["main"])
                    done[o] = ev

        def check_variant(b_chunks, c_mode, c_chunks):
            for r in ranks:
                for name in ("c", "a_peer", "b_peer"):
                    r[name].fill_(float("nan"))
            for d in devices:
                torch.cuda.synchronize(d)
            launch(b_chunks, c_mode, c_chunks)
            errs = []
            for o in devices:
                torch.cuda.synchronize(o)
                c = ranks[o]["c"] if c_mode != "none" else ranks[o]["c"][o * rows:(o + 1) * rows]
                want = refs[o] if c_mode != "none" else refs[o][o * rows:(o + 1) * rows]
                errs.append(float((c.float() - want).norm() / want.norm()))
            return max(errs)

        b_choices = (4, 8)
        variants = [(b, "none", 0) for b in b_choices] + [(b, "after_kernel", 1) for b in b_choices]
        variants += [(b, "chunks", c) for b in b_choices for c in (2, 4, 8, 16)]
        for variant in variants:
            b_chunks, c_mode, c_chunks = variant
            if c_mode == "chunks":  # counters restart with each chunking
                for r in ranks:
                    r["counters"].zero_()
                state["counted"] = 0
            err = check_variant(*variant)
            ms = timed(lambda: launch(*variant))
            err_after = check_variant(*variant)
            v = {"b_chunks": b_chunks, "c_mode": c_mode, "c_chunks": c_chunks, "ms": ms,
                 "rel_error": err, "rel_error_after": err_after}
            row["variants"].append(v)
            print(f"{m}x{k}x{n} B chunks {b_chunks} C {c_mode:12s} {c_chunks:2d}: {ms:.4f} ms "
                  f"(rel. error {err:.2e}, after timing {err_after:.2e})", flush=True)
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
    p.add_argument("--out", default="gather_operands_allreduce.json")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--shapes", default="4096,1024,8192 8192,1024,8192")
    args = p.parse_args()
    if args.compile_only:
        return compile_only()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes.split()]
    return run(args.out, shapes)


if __name__ == "__main__":
    raise SystemExit(main())
