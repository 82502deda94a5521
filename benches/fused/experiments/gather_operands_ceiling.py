"""Reduce-scatter by gathering operands instead of partials: what it could reach.

For GEMM + reduce-scatter with a small K_local, rank o's rows of the sum,
C_o = sum_r A_r[rows_o] @ B_r, can also be computed by o itself from the
peers' *operands*: each rank sends its A rows for o (M/W x K_local) and
its B_r (K_local x N) instead of a partial (M/W x N). At K_local = 1024,
N = 8192 on 2 ranks that is 20 MiB instead of 32 MiB at M = 4096 (24
against 64 at M = 8192), and the bytes exist at time 0, so the copy can
overlap the owner's product of its own operands. The FLOPs per rank are the
same (M/W rows x W K_local x N).

This script times, with cuBLAS and the copy engine only (no Synco), on two
GPUs at once (each rank sends to the other):

* ``partial``: the local partial GEMM (M x K_local x N), what the fused
  reduce-scatter computes;
* ``owner``: the owner's GEMM over the gathered K (M/W x W K_local x N);
* ``copy``: the peer operands' copy alone;
* ``overlapped``: the owner's own-K product while the copy runs on a side
  stream, then the peers' products accumulated (addmm) once it is in.

    python3 gather_operands_ceiling.py --out ceiling.json    # on nvidia-h200-x2
"""
import argparse
import ctypes
import json
import statistics

import torch

from nvlink_sm_probe import enable_peer_access  # the probe beside this script

CUDA = ctypes.CDLL("libcuda.so.1")


def peer_copy(dst, src, stream):
    """cuMemcpyAsync on `stream`: a peer copy ordered by that stream alone
    (Tensor.copy_ between GPUs also synchronises with both GPUs' current
    streams)."""
    assert dst.is_contiguous() and src.is_contiguous() and dst.nbytes == src.nbytes
    rc = CUDA.cuMemcpyAsync(ctypes.c_uint64(dst.data_ptr()), ctypes.c_uint64(src.data_ptr()),
                            ctypes.c_size_t(dst.nbytes), ctypes.c_void_p(stream.cuda_stream))
    assert rc == 0, f"cuMemcpyAsync: {rc}"


SHAPES = [(4096, 1024, 8192), (8192, 1024, 8192), (1024, 1024, 8192)]


def timed(fn, devices, reps=15, warmup=5, per_sample=10):
    """Median over reps of the slowest device's time per call (events on
    each device around `per_sample` calls back to back, as the benchmark
    times launches: the host's issue time overlaps the GPUs')."""
    for _ in range(warmup):
        fn()
    for d in devices:
        torch.cuda.synchronize(d)
    samples = []
    for _ in range(reps):
        pairs = []
        for d in devices:
            with torch.cuda.device(d):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                pairs.append((d, start, end))
        for _ in range(per_sample):
            fn()
        for d, _, end in pairs:
            with torch.cuda.device(d):
                end.record()
        for d in devices:
            torch.cuda.synchronize(d)
        samples.append(max(s.elapsed_time(e) for _, s, e in pairs) / per_sample)
    return statistics.median(samples)


def run(out):
    world = 2
    devices = [0, 1]
    enable_peer_access()
    results = []
    for m, k, n in SHAPES:
        rows = m // world
        ranks = []
        for d in devices:
            with torch.cuda.device(d):
                g = torch.Generator(device=f"cuda:{d}").manual_seed(1234 + d)
                a = torch.randn(m, k, device=f"cuda:{d}", generator=g).to(torch.bfloat16)
                b = torch.randn(k, n, device=f"cuda:{d}", generator=g).to(torch.bfloat16)
                ranks.append({
                    "a": a, "b": b,
                    "c": torch.empty(m, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "out": torch.empty(rows, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    # The peer's operands land here.
                    "a_peer": torch.empty(rows, k, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "b_peer": torch.empty(k, n, device=f"cuda:{d}", dtype=torch.bfloat16),
                    "side": torch.cuda.Stream(device=f"cuda:{d}"),
                })

        def partial():
            for d, r in zip(devices, ranks):
                with torch.cuda.device(d):
                    torch.matmul(r["a"], r["b"], out=r["c"])

        a_cat = [torch.cat([r["a"][o * rows:(o + 1) * rows].to(f"cuda:{o}") for r in ranks], dim=1)
                 for o in devices]
        b_cat = [torch.cat([r["b"].to(f"cuda:{o}") for r in ranks], dim=0) for o in devices]

        def owner():
            for o in devices:
                with torch.cuda.device(o):
                    torch.matmul(a_cat[o], b_cat[o], out=ranks[o]["out"])

        # Each rank pushes its operands to the other on its own stream (as
        # Synco's runtime pushes reduction copies). Everything runs on
        # streams created here: copies in opposite directions on the two
        # GPUs' default streams serialise (nvlink_sm_probe.py --both-ways).
        def copy():
            for p in devices:
                o = 1 - p
                with torch.cuda.device(p):
                    stream = torch.cuda.current_stream()
                    peer_copy(ranks[o]["a_peer"], ranks[p]["a"][o * rows:(o + 1) * rows], stream)
                    peer_copy(ranks[o]["b_peer"], ranks[p]["b"], stream)

        # Each rank pushes its operands on a side stream (after the owner's
        # previous sum read them: an event on the owner), computes its own
        # product meanwhile, then adds the peer's once they are in.
        done = [torch.cuda.Event() for _ in devices]
        arrived = [torch.cuda.Event() for _ in devices]

        def overlapped():
            for p in devices:
                o = 1 - p
                with torch.cuda.device(p):
                    side = ranks[p]["side"]
                    side.wait_event(done[o])
                    peer_copy(ranks[o]["a_peer"], ranks[p]["a"][o * rows:(o + 1) * rows], side)
                    peer_copy(ranks[o]["b_peer"], ranks[p]["b"], side)
                    arrived[o].record(side)
            for o in devices:
                r = ranks[o]
                with torch.cuda.device(o):
                    torch.matmul(r["a"][o * rows:(o + 1) * rows], r["b"], out=r["out"])
                    torch.cuda.current_stream().wait_event(arrived[o])
                    torch.addmm(r["out"], r["a_peer"], r["b_peer"], out=r["out"])
                    done[o].record()

        row = {"m": m, "k_local": k, "n": n, "world": world,
               "sent_bytes": (rows * k + k * n) * 2, "partial_bytes": rows * n * 2}
        def copy_one_way():
            with torch.cuda.device(1):
                stream = torch.cuda.current_stream()
                peer_copy(ranks[0]["a_peer"], ranks[1]["a"][0:rows], stream)
                peer_copy(ranks[0]["b_peer"], ranks[1]["b"], stream)

        main = [torch.cuda.Stream(device=f"cuda:{d}") for d in devices]
        for name, fn in (("partial", partial), ("owner", owner), ("copy", copy),
                         ("copy_one_way", copy_one_way), ("overlapped", overlapped)):
            with torch.cuda.stream(main[0]), torch.cuda.stream(main[1]):
                row[f"{name}_ms"] = timed(fn, devices)
        # The overlapped result against the sum of partials, in fp32.
        with torch.cuda.stream(main[0]), torch.cuda.stream(main[1]):
            overlapped()
        for o in devices:
            torch.cuda.synchronize(o)
        ref = sum((r["a"][0:rows].float().to("cuda:0") @ r["b"].float().to("cuda:0")) for r in ranks)
        got = ranks[0]["out"].float()
        row["rel_error"] = float((got - ref).norm() / ref.norm())
        results.append(row)
        print(f"{m}x{k}x{n}: partial GEMM {row['partial_ms']:.4f} ms, owner GEMM {row['owner_ms']:.4f}, "
              f"copy of {row['sent_bytes'] >> 20} MiB {row['copy_ms']:.4f} (one way alone {row['copy_one_way_ms']:.4f}), "
              f"overlapped {row['overlapped_ms']:.4f} "
              f"(rel. error {row['rel_error']:.2e})", flush=True)
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "results": results}, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="gather_operands_ceiling.json")
    run(p.parse_args().out)


if __name__ == "__main__":
    main()
