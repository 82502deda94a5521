"""How SM-driven NVLink transfers behave on two GPUs (no Synco code involved).

Two questions the fused reductions raise (benches/fused/docs/limits.md,
passes/docs/ldst-reduction-modes.md):

1. *Where does a tile that pushes its partial to a peer stall?* Every
   program stores a 128x256 bf16 tile (64 KiB) into the peer's memory, then
   runs the publish sequence of `chunk.signal` (barrier, then a system-scope
   fence). `%globaltimer` before the stores, after they are issued (all
   warps, behind a barrier) and after the fence tells whether the time goes
   into issuing the stores (the link pushes back) or into the fence (stores
   issued, waiting for them to land). Only the second could be hidden by
   publishing a tile later, behind the next tile's compute.
2. *How fast do SM copy programs move data over NVLink?* `P` programs copy
   64 MiB from the peer (pull) or to it (push), `BLOCK` elements per step
   (the bytes each program has in flight), against the copy engine
   (`Tensor.copy_` between the GPUs).
3. *Do the two directions add up?* Both GPUs push 64 MiB to each other at
   once, by the copy engine (`cuMemcpyAsync` on each GPU's stream) or by
   SM copy programs, against one direction alone (`--both-ways`: this part
   only).

    python3 nvlink_sm_probe.py --out probe.json     # on nvidia-h200-x2
    python3 nvlink_sm_probe.py --both-ways --out both.json
    python3 nvlink_sm_probe.py --compile-only       # here: sm_90a compile
"""
import argparse
import json
import statistics
import sys

import triton
import triton.language as tl

TILE = 128 * 256  # elements of a 128x256 bf16 tile: 64 KiB


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                     is_pure=False, pack=1)


@triton.jit
def _fence_sys():
    tl.inline_asm_elementwise("fence.acq_rel.sys; mov.u32 $0, 0;", "=r", [], dtype=tl.int32,
                              is_pure=False, pack=1)


@triton.jit
def store_probe(dst, times, TILE: tl.constexpr):
    """Each program stores one tile (values made in registers) at dst."""
    pid = tl.program_id(0)
    offs = tl.arange(0, TILE)
    values = (offs + pid).to(tl.bfloat16)
    tl.debug_barrier()
    t0 = _now()
    tl.store(dst + pid * TILE + offs, values)
    tl.debug_barrier()
    t1 = _now()
    _fence_sys()
    tl.debug_barrier()
    t2 = _now()
    tl.store(times + pid * 3 + 0, t0)
    tl.store(times + pid * 3 + 1, t1)
    tl.store(times + pid * 3 + 2, t2)


@triton.jit
def copy_blocks(src, dst, n_blocks, BLOCK: tl.constexpr):
    """Program pid copies blocks pid, pid + P, ... (BLOCK elements each)."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    for block in range(pid, n_blocks, programs):
        base = block.to(tl.int64) * BLOCK
        tl.store(dst + base + offs, tl.load(src + base + offs))


BLOCKS = [4096, 8192, 16384, 32768]
PROGRAMS = [8, 16, 32, 66, 132]
COPY_ELEMS = 32 * 1024 * 1024  # 64 MiB of bf16


def compile_only():
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    target = GPUTarget("cuda", 90, 32)
    aligned = [["tt.divisibility", 16]]  # what Triton's launcher specializes 16-byte aligned pointers to
    k = triton.compile(ASTSource(fn=store_probe, signature={"dst": "*bf16", "times": "*i64", "TILE": "constexpr"},
                                 constexprs={(2, ): TILE}, attrs={(0, ): aligned, (1, ): aligned}),
                       target=target, options={"num_warps": 8})
    ptx = k.asm["ptx"]
    assert "fence.acq_rel.sys" in ptx and ptx.count("%globaltimer") == 3, "probe asm missing"
    print(f"store_probe: st.global.v4 {ptx.count('st.global.v4')}, local {ptx.count('.local')}")
    for block in BLOCKS:
        k = triton.compile(ASTSource(fn=copy_blocks,
                                     signature={"src": "*bf16", "dst": "*bf16", "n_blocks": "i32", "BLOCK": "constexpr"},
                                     constexprs={(3, ): block}, attrs={(0, ): aligned, (1, ): aligned}),
                           target=target, options={"num_warps": 8})
        ptx = k.asm["ptx"]
        print(f"copy_blocks BLOCK={block}: ld.global.v4 {ptx.count('ld.global.v4')}, "
              f"st.global.v4 {ptx.count('st.global.v4')}, local {ptx.count('.local')}")
    return 0


def enable_peer_access():
    """Peer access both ways through the driver (Triton kernels read peer pointers)."""
    import ctypes
    import torch
    cuda = ctypes.CDLL("libcuda.so.1")
    ctxs = []
    for dev in range(2):
        with torch.cuda.device(dev):
            torch.empty(1, device=f"cuda:{dev}")  # makes the device's primary context current
            ctx = ctypes.c_void_p()
            assert cuda.cuCtxGetCurrent(ctypes.byref(ctx)) == 0 and ctx.value, "no current context"
            ctxs.append(ctx)
    for dev in range(2):
        with torch.cuda.device(dev):
            rc = cuda.cuCtxEnablePeerAccess(ctxs[1 - dev], 0)
            assert rc in (0, 704), f"cuCtxEnablePeerAccess: {rc}"  # 704: already enabled


def time_ms(fn, reps=20, warmup=5):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def both_ways(out):
    """Part 3: one direction against both at once."""
    import ctypes
    import torch
    enable_peer_access()
    cuda = ctypes.CDLL("libcuda.so.1")
    src = [torch.randn(COPY_ELEMS, device=f"cuda:{d}").to(torch.bfloat16) for d in range(2)]
    dst = [torch.empty_like(src[d]) for d in range(2)]  # dst[d] receives from the other GPU

    side = [torch.cuda.Stream(device=f"cuda:{d}") for d in range(2)]

    def engine(senders, pull=False, pieces=1, on_side=False):
        """Sender d's data into the other GPU, by the copy engine of d (a
        push) or of the receiver (`pull`), in `pieces` copies, on the
        current stream or a side stream created for it (`on_side`, as the
        runtime's copy streams)."""
        for d in senders:
            issuer = 1 - d if pull else d
            with torch.cuda.device(issuer):
                stream = side[issuer] if on_side else torch.cuda.current_stream()
                stream.wait_stream(torch.cuda.current_stream())
                step = src[d].nbytes // pieces
                for i in range(pieces):
                    rc = cuda.cuMemcpyAsync(ctypes.c_uint64(dst[1 - d].data_ptr() + i * step),
                                            ctypes.c_uint64(src[d].data_ptr() + i * step),
                                            ctypes.c_size_t(step), ctypes.c_void_p(stream.cuda_stream))
                    assert rc == 0, f"cuMemcpyAsync: {rc}"
                torch.cuda.current_stream().wait_stream(stream)

    def programs(senders, count=66, block=16384):
        for d in senders:
            with torch.cuda.device(d):
                copy_blocks[(count, )](src[d], dst[1 - d], COPY_ELEMS // block, BLOCK=block, num_warps=8)

    def timed(fn, reps=20, warmup=3):
        for _ in range(warmup):
            fn()
        for d in range(2):
            torch.cuda.synchronize(d)
        samples = []
        for _ in range(reps):
            events = []
            for d in range(2):
                with torch.cuda.device(d):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    events.append((d, start, end))
            fn()
            for d, _, end in events:
                with torch.cuda.device(d):
                    end.record()
            for d in range(2):
                torch.cuda.synchronize(d)
            samples.append(max(s.elapsed_time(e) for _, s, e in events))
        return statistics.median(samples)

    rows = []
    ways = (("copy engine", engine), ("copy engine, pull", lambda s: engine(s, pull=True)),
            ("copy engine, 4 MiB copies", lambda s: engine(s, pieces=16)),
            ("copy engine, side streams", lambda s: engine(s, on_side=True)),
            ("copy programs", programs), ("8 copy programs", lambda s: programs(s, count=8)),
            ("16 copy programs", lambda s: programs(s, count=16)))
    for name, fn in ways:
        for senders in ([0], [1], [0, 1]):
            for d in range(2):
                dst[d].fill_(float("nan"))
            ms = timed(lambda: fn(senders))
            for d in range(2):
                torch.cuda.synchronize(d)
            ok = all(torch.equal(dst[1 - d].cpu(), src[d].cpu()) for d in senders)
            row = {"engine": name, "senders": senders, "ms": ms, "gbps_per_direction": COPY_ELEMS * 2 / ms / 1e6,
                   "ok": ok}
            rows.append(row)
            print(f"{name:26} senders={senders}: {ms:.4f} ms, {row['gbps_per_direction']:.0f} GB/s per direction, "
                  f"ok={ok}", flush=True)
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "both_ways": rows}, f,
                  indent=1)


def run(out):
    import torch
    assert torch.cuda.device_count() >= 2, "needs two GPUs"
    enable_peer_access()
    torch.cuda.set_device(0)
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__}
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    # 1. Where a pushing tile stalls.
    probes = []
    for where in ("peer", "local"):
        for programs in (sms, sms // 2, 2 * sms):
            dst = torch.empty(programs * TILE, dtype=torch.bfloat16, device="cuda:1" if where == "peer" else "cuda:0")
            times = torch.zeros(programs * 3, dtype=torch.int64, device="cuda:0")
            runs = []
            for rep in range(12):
                dst.fill_(float("nan"))
                torch.cuda.synchronize(1)
                store_probe[(programs, )](dst, times, TILE=TILE, num_warps=8)
                torch.cuda.synchronize(0)
                t = times.view(programs, 3).cpu()
                issue = (t[:, 1] - t[:, 0]).float() / 1e3
                fence = (t[:, 2] - t[:, 1]).float() / 1e3
                span = float(t[:, 2].max() - t[:, 0].min()) / 1e3
                if rep >= 2:
                    runs.append({"issue_us_median": float(issue.median()), "issue_us_max": float(issue.max()),
                                 "fence_us_median": float(fence.median()), "fence_us_max": float(fence.max()),
                                 "span_us": span})
            expect = ((torch.arange(TILE, device=dst.device)[None, :] +
                       torch.arange(programs, device=dst.device)[:, None]).to(torch.bfloat16)).flatten()
            ok = bool(torch.equal(dst, expect))
            row = {"dst": where, "programs": programs, "bytes": programs * TILE * 2, "ok": ok}
            for key in runs[0]:
                row[key] = statistics.median(r[key] for r in runs)
            probes.append(row)
            print(f"store probe dst={where:5} programs={programs:3}: issue {row['issue_us_median']:6.2f} us "
                  f"(max {row['issue_us_max']:6.2f}), fence {row['fence_us_median']:6.2f} us "
                  f"(max {row['fence_us_max']:6.2f}), span {row['span_us']:6.2f} us, ok={ok}", flush=True)
    result["store_probe"] = probes

    # 2. Copy bandwidth.
    src0 = torch.randn(COPY_ELEMS, device="cuda:0").to(torch.bfloat16)
    src1 = torch.randn(COPY_ELEMS, device="cuda:1").to(torch.bfloat16)
    dst0 = torch.empty_like(src0)
    dst1 = torch.empty_like(src1)
    nbytes = COPY_ELEMS * 2
    copies = []
    ms = time_ms(lambda: dst0.copy_(src1, non_blocking=True))
    assert torch.equal(dst0, src1.to("cuda:0"))
    copies.append({"engine": "copy_engine", "dir": "pull", "ms": ms, "gbps": nbytes / ms / 1e6})
    print(f"copy engine pull: {ms:.4f} ms, {nbytes / ms / 1e6:.0f} GB/s", flush=True)
    for direction, (src, dst) in (("pull", (src1, dst0)), ("push", (src0, dst1))):
        for block in BLOCKS:
            for programs in PROGRAMS:
                dst.fill_(float("nan"))
                fn = lambda: copy_blocks[(programs, )](src, dst, COPY_ELEMS // block, BLOCK=block, num_warps=8)
                ms = time_ms(fn)
                torch.cuda.synchronize(0)
                torch.cuda.synchronize(1)
                ok = bool(torch.equal(dst.cpu(), src.cpu()))
                row = {"engine": "sm", "dir": direction, "block": block, "programs": programs, "ms": ms,
                       "gbps": nbytes / ms / 1e6, "ok": ok}
                copies.append(row)
                print(f"sm {direction} BLOCK={block:5} P={programs:3}: {ms:.4f} ms, {row['gbps']:5.0f} GB/s, "
                      f"{row['gbps'] / programs:5.1f} GB/s per program, ok={ok}", flush=True)
    result["copies"] = copies
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="nvlink_sm_probe.json")
    p.add_argument("--compile-only", action="store_true", help="compile the kernels for sm_90a, no GPU")
    p.add_argument("--both-ways", action="store_true", help="only part 3: one direction against both at once")
    args = p.parse_args()
    if args.compile_only:
        sys.exit(compile_only())
    sys.exit(both_ways(args.out) if args.both_ways else run(args.out))


if __name__ == "__main__":
    main()
