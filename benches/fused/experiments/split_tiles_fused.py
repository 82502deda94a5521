"""The reduce-scatter from gathered operands with its first wave split: a
hand-fused prototype on two GPUs (PyTorch + Triton + the copy engine, not
Synco), to measure whether the first wave's wait can be taken off the
critical path.

In `rsg` every tile multiplies its rank's own operands (ready at t = 0),
then waits for the peer's A rows and its chunk of the peer's B columns,
then multiplies those. The first wave (132 tiles) needs all of the peer's
A rows and its first B chunk (8 MiB at 4096x1024x8192) while its own
halves take about half a tile's time, so every SM idles until those bytes
have crossed: the fused kernel takes about the GEMM plus 20 us.

The split schedule runs EARLY tiles in two halves: programs
`[0, EARLY)` multiply the own operands of tiles `[0, EARLY)` and store the
fp32 accumulator in a scratch buffer (then release a per-tile flag);
programs `[EARLY, TILES)` are the other tiles, whole; programs
`[TILES, TILES + EARLY)` load a scratch accumulator (after its flag) and
add the peer's half. The copy engine sends A, then B's chunks in the order
the tiles need them: the chunks of the split tiles last. So the first
wave never waits, the second waits for A and the second B chunk only
after its own halves, and the split tiles' peer halves come at the end,
when their chunk has long arrived. The fp32 accumulator goes through
memory unchanged, so C is bit-identical to the unsplit kernel's (checked).

Variants, each rank's owner GEMM with the peer pushing (its side stream,
`cuMemcpy2DAsync` of row-major B's column chunks, `cuStreamWriteValue32`
for each chunk's flag, as Synco's runtime): `unsplit` (EARLY = 0, copies
A, B0, B1, ...), `split128`, `split132`, `split256` (EARLY tiles, their
chunks sent last). 128x256 tiles, 8 warps, 4 stages, GROUP_M = every row
tile, B in chunks of 2048 (4096 rows) / 1024 columns (8192 rows), A in one
chunk. Timing: `time_both_gpus` of `gather_operands_fused.py` (samples of
10 launches issued while both GPUs sleep), after 200 ms of launches; the
variants in turn, twice. Correctness: C against an fp32 reference, C and
the landing buffers poisoned first; C bit-identical to `unsplit`'s.

    python3 split_tiles_fused.py --out split.json     # on nvidia-h200-x2
    python3 split_tiles_fused.py --compile-only       # here: PTX checks
"""
import argparse
import ctypes
import json
import pathlib
import sys
import time

import triton
import triton.language as tl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gather_operands_fused import Memcpy2D, _mma_block, time_both_gpus  # noqa: E402
from local_gemm_kernels import _tile_of, compile_sm90  # noqa: E402  (Triton's GROUP_M swizzle)

BLOCK_M, BLOCK_N, BLOCK_K, WARPS, STAGES = 128, 256, 64, 8, 4


@triton.jit
def _wait(flag, epoch):
    """Spin until *flag >= epoch (acquire, system scope); gives up after
    0.1 s so that a broken variant cannot hang the machine (its C is then
    wrong and the check says so)."""
    tl.inline_asm_elementwise(
        "{\n\t.reg .pred %w_p;\n\t.reg .u32 %w_v;\n\t.reg .u64 %w_t0, %w_t;\n\t"
        "mov.u64 %w_t0, %globaltimer;\n"
        "W_SPIN:\n\tld.acquire.sys.global.u32 %w_v, [$1];\n\t"
        "setp.ge.u32 %w_p, %w_v, $2;\n\t@%w_p bra W_DONE;\n\t"
        "mov.u64 %w_t, %globaltimer;\n\tsub.u64 %w_t, %w_t, %w_t0;\n\t"
        "setp.lt.u64 %w_p, %w_t, 100000000;\n\t@%w_p bra W_SPIN;\n"
        "W_DONE:\n\tmov.u32 $0, %w_v;\n\t}",
        "=r,l,r", [flag, epoch], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def split_owner_gemm(a_own, b_own, a_peer, b_peer, c, scratch, flags, epoch, rows, N, K, EARLY,
                     B_CHUNK_COLS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C[rows, N] = a_own @ b_own + a_peer @ b_peer (row-major, K each).
    flags: [0] A, [1 + j] B's column chunk j, [64 + t] tile t's scratch."""
    pid = tl.program_id(0)
    tiles = (rows // BLOCK_M) * (N // BLOCK_N)
    own_half_only = pid < EARLY
    peer_half_only = pid >= tiles
    tile = tl.where(peer_half_only, pid - tiles, pid)
    pid_m, pid_n = _tile_of(tile, rows, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_off = offs_m[:, None] * K + offs_k[None, :]
    b_off = offs_k[:, None] * N + offs_n[None, :]
    s_ptrs = (scratch + tile.to(tl.int64) * (BLOCK_M * BLOCK_N)
              + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if peer_half_only:
        _wait(flags + 64 + tile, epoch)
        acc = tl.load(s_ptrs)
    else:
        acc = _mma_block(acc, a_own + a_off, b_own + b_off, K, 1, N, BLOCK_K)
    if own_half_only:
        tl.store(s_ptrs, acc)
        tl.debug_barrier()
        tl.atomic_xchg(flags + 64 + tile, epoch, sem="release", scope="gpu")
    else:
        _wait(flags, epoch)
        _wait(flags + 1 + (pid_n * BLOCK_N) // B_CHUNK_COLS, epoch)
        acc = _mma_block(acc, a_peer + a_off, b_peer + b_off, K, 1, N, BLOCK_K)
        tl.store(c + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16))


SIGNATURE = {"a_own": "*bf16", "b_own": "*bf16", "a_peer": "*bf16", "b_peer": "*bf16", "c": "*bf16",
             "scratch": "*fp32", "flags": "*i32", "epoch": "i32", "rows": "i32", "N": "i32", "K": "i32",
             "EARLY": "i32"}


def compile_only():
    """sm_90 PTX of the kernel: wgmma, two pipelined K loops, the waits, no spills."""
    constexprs = {"B_CHUNK_COLS": 2048, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K,
                  "GROUP_M": 16}
    aligned = ("a_own", "b_own", "a_peer", "b_peer", "c", "scratch", "flags", "rows", "N", "K")
    kernel = compile_sm90(split_owner_gemm, SIGNATURE, constexprs, aligned, WARPS, STAGES)
    ptx = kernel.asm["ptx"]
    checks = {"wgmma": ptx.count("wgmma.mma_async"), "ld.acquire.sys": ptx.count("ld.acquire.sys"),
              "cp.async": ptx.count("cp.async.cg"), "release": ptx.count("atom.global.gpu.release.exch"),
              "local": ptx.count(".local")}
    print("split_owner_gemm PTX:", checks)
    assert checks["wgmma"] > 0 and checks["ld.acquire.sys"] >= 3 and checks["cp.async"] > 0, checks
    assert checks["release"] > 0 and checks["local"] == 0, checks
    return 0


def chunk_order(early, tiles_per_chunk, chunks):
    """B's chunks in the order the tiles wait for them: the split tiles'
    chunks (needed only at the end) last. With EARLY not a multiple of a
    chunk's tiles (`split132`: 4 tiles of chunk 1) this also sends a chunk
    that whole tiles of the second wave need last: that variant measures
    the wrong order, not the split."""
    split = sorted({t // tiles_per_chunk for t in range(early)})
    return [j for j in range(chunks) if j not in split] + split


def run(out, shapes, warm_ms):
    import torch
    from nvlink_sm_probe import enable_peer_access

    cuda = ctypes.CDLL("libcuda.so.1")

    def check(rc, what):
        assert rc == 0, f"{what}: CUDA error {rc}"

    world, devices = 2, [0, 1]
    enable_peer_access()
    results = []
    for m, k, n, b_chunks in shapes:
        rows = m // world
        tiles = (rows // BLOCK_M) * (n // BLOCK_N)
        b_cols = n // b_chunks
        tiles_per_chunk = tiles // b_chunks
        ranks = []
        for d in devices:
            with torch.cuda.device(d):
                g = torch.Generator(device=f"cuda:{d}").manual_seed(int(time.time()) + d)
                ranks.append({
                    "a": torch.randn(m, k, device=f"cuda:{d}", generator=g).to(torch.bfloat16),
                    "b": torch.randn(k, n, device=f"cuda:{d}", generator=g).to(torch.bfloat16),
                    "c": torch.empty(rows, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "a_peer": torch.empty(rows, k, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "b_peer": torch.empty(k, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "scratch": torch.empty(256 * BLOCK_M * BLOCK_N, device=f"cuda:{d}", dtype=torch.float32),
                    "flags": torch.zeros(64 + tiles, device=f"cuda:{d}", dtype=torch.int32),
                    "side": torch.cuda.Stream(device=f"cuda:{d}"),
                    "main": torch.cuda.Stream(device=f"cuda:{d}"),
                })
        refs = [sum(r["a"][o * rows:(o + 1) * rows].float().to(f"cuda:{o}") @ r["b"].float().to(f"cuda:{o}")
                    for r in ranks) for o in devices]
        done = [None, None]  # each rank's last kernel: the next push into it must follow it
        state = {"epoch": 0}

        def launch(early):
            state["epoch"] += 1
            epoch = state["epoch"]
            order = chunk_order(early, tiles_per_chunk, b_chunks)
            for o in devices:
                r, peer = ranks[o], ranks[1 - o]
                with torch.cuda.device(peer["side"].device):
                    side = peer["side"]
                    if done[o] is not None:
                        side.wait_event(done[o])
                    flags = r["flags"].data_ptr()
                    src_a = peer["a"][o * rows:(o + 1) * rows].data_ptr()
                    check(cuda.cuMemcpyAsync(ctypes.c_uint64(r["a_peer"].data_ptr()), ctypes.c_uint64(src_a),
                                             ctypes.c_size_t(rows * k * 2), ctypes.c_void_p(side.cuda_stream)),
                          "cuMemcpyAsync")
                    check(cuda.cuStreamWriteValue32_v2(ctypes.c_void_p(side.cuda_stream), ctypes.c_uint64(flags),
                                                       ctypes.c_uint32(epoch), ctypes.c_uint(0)), "write")
                    for j in order:
                        p = Memcpy2D(srcMemoryType=2, srcDevice=peer["b"].data_ptr() + j * b_cols * 2,
                                     srcPitch=n * 2, dstMemoryType=2,
                                     dstDevice=r["b_peer"].data_ptr() + j * b_cols * 2, dstPitch=n * 2,
                                     WidthInBytes=b_cols * 2, Height=k)
                        check(cuda.cuMemcpy2DAsync_v2(ctypes.byref(p), ctypes.c_void_p(side.cuda_stream)), "2D")
                        check(cuda.cuStreamWriteValue32_v2(ctypes.c_void_p(side.cuda_stream),
                                                           ctypes.c_uint64(flags + 4 * (1 + j)),
                                                           ctypes.c_uint32(epoch), ctypes.c_uint(0)), "write")
            for o in devices:
                r = ranks[o]
                with torch.cuda.device(o), torch.cuda.stream(r["main"]):
                    split_owner_gemm[(tiles + early, )](
                        r["a"][o * rows:(o + 1) * rows], r["b"], r["a_peer"], r["b_peer"], r["c"],
                        r["scratch"], r["flags"], epoch, rows, n, k, early, B_CHUNK_COLS=b_cols,
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=rows // BLOCK_M,
                        num_warps=WARPS, num_stages=STAGES)
                    ev = torch.cuda.Event()
                    ev.record(r["main"])
                    done[o] = ev

        def checked(early):
            for o in devices:
                for name in ("c", "a_peer", "b_peer"):
                    ranks[o][name].fill_(float("nan"))
            for d in devices:
                torch.cuda.synchronize(d)
            launch(early)
            errs, cs = [], []
            for o in devices:
                torch.cuda.synchronize(o)
                c = ranks[o]["c"]
                errs.append(float((c.float() - refs[o]).norm() / refs[o].norm()) if not c.isnan().any() else 1.0)
                cs.append(c.clone())
            return max(errs), cs

        variants = {"unsplit": 0, "split128": 128, "split132": 132, "split256": 256}
        row = {"m": m, "k_local": k, "n": n, "world": world, "b_chunks": b_chunks, "variants": {}}
        _, unsplit_c = checked(0)
        for name, early in variants.items():
            err, cs = checked(early)
            same = all(torch.equal(x, y) for x, y in zip(cs, unsplit_c))
            row["variants"][name] = {"early": early, "order": chunk_order(early, tiles_per_chunk, b_chunks),
                                     "rel_error": err, "bit_identical_to_unsplit": same, "ms": []}
            print(f"{m}x{k}x{n} {name}: rel. error {err:.2e}, bit-identical to unsplit: {same}", flush=True)
        for _ in range(2):
            for name, early in variants.items():
                t0 = time.perf_counter()
                while (time.perf_counter() - t0) * 1e3 < warm_ms:
                    launch(early)
                ms = time_both_gpus(lambda: launch(early), [r["main"] for r in ranks], done)
                row["variants"][name]["ms"].append(ms)
                print(f"{m}x{k}x{n} {name}: {ms:.4f} ms", flush=True)
        for name, early in variants.items():
            err, _ = checked(early)
            row["variants"][name]["rel_error_after"] = err
        results.append(row)
        ranks.clear()
        torch.cuda.empty_cache()
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "triton": triton.__version__, "warm_ms": warm_ms, "results": results}, f, indent=1)
    bad = [v for r in results for v in r["variants"].values()
           if not (v["rel_error"] < 2e-2 and v["rel_error_after"] < 2e-2 and v["bit_identical_to_unsplit"])]
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="split_tiles_fused.json")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--warm-ms", type=float, default=200.0)
    p.add_argument("--shapes", default="4096,1024,8192,4 8192,1024,8192,8",
                   help="M,K_local,N,B chunks ...")
    args = p.parse_args()
    if args.compile_only:
        return compile_only()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes.split()]
    return run(args.out, shapes, args.warm_ms)


if __name__ == "__main__":
    raise SystemExit(main())
