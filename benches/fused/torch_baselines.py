"""PyTorch baselines for all-gather + GEMM (`--op ag`, the default), one
process per GPU (NCCL):

* `torch_b2b`: NCCL all_gather_into_tensor, then torch.matmul (cuBLAS), back
  to back;
* `torch_async_tp`: torch.ops.symm_mem.fused_all_gather_matmul (async-TP);
* `torch_gemm`: torch.matmul on the already gathered A;
* `torch_allgather`: the NCCL all-gather alone.

and for GEMM + reduce-scatter (`--op rs`; A [M, K] and B [K, N] per rank):

* `torch_b2b`: torch.matmul, then NCCL reduce_scatter_tensor (sum);
* `torch_async_tp`: torch.ops.symm_mem.fused_matmul_reduce_scatter;
* `torch_gemm`: torch.matmul alone; `torch_reduce_scatter`: NCCL alone;
* `torch_b2b_allreduce`: torch.matmul, then NCCL all_reduce (the all-reduce
  baseline, for reference).

Each is timed per rank with CUDA events around 10 calls back to back, after
a barrier, on random bf16 data: warm-up, then the median over samples of the
time per call; the reported time is the slowest rank's median. Writes JSON.

Run on the GPU machine:  python3 torch_baselines.py --world 2 --out torch.json
"""

import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

RS_SHAPES = [(m, k, n) for m in (1024, 4096, 8192) for k, n in ((7168, 4096), (14336, 8192), (1024, 8192))]

SHAPES = [(1024, 4096, 7168), (1024, 8192, 14336), (1024, 8192, 1024),
          (4096, 4096, 7168), (4096, 8192, 14336), (4096, 8192, 1024),
          (8192, 4096, 7168), (8192, 8192, 14336), (8192, 8192, 1024)]


PER_SAMPLE = 10


def timed(fn, warmup, iters):
    """Median per-call time: `iters` samples of PER_SAMPLE calls back to back
    between CUDA events (after a barrier), as synco-bench times Synco, so
    Python's launch costs overlap the GPU work. `warmup` is (calls, ms): that
    many calls first, then batches of PER_SAMPLE calls for about that much
    wall time (counted from the first batch, which sizes the rest, so that
    set-up costs in the first calls do not shorten it), as synco-bench's
    --warmup / --warmup-ms: the GPUs' first tens of milliseconds under load
    run at higher clocks than they sustain. Every rank runs the same number
    of batches (the most any rank needs), so collectives stay matched."""
    calls, min_ms = warmup
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    # One batch timed after the first calls (which may include cuBLAS's or
    # NCCL's set-up), to size the rest of the warm-up.
    began = time.perf_counter()
    for _ in range(PER_SAMPLE):
        fn()
    torch.cuda.synchronize()
    per_batch_ms = max((time.perf_counter() - began) * 1e3, 1e-3)
    batches = torch.tensor([math.ceil(max(min_ms - per_batch_ms, 0.0) / per_batch_ms)], device="cuda")
    dist.all_reduce(batches, op=dist.ReduceOp.MAX)
    for _ in range(int(batches.item())):
        for _ in range(PER_SAMPLE):
            fn()
        torch.cuda.synchronize()
    times = []
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        dist.barrier()
        torch.cuda.synchronize()
        start.record()
        for _ in range(PER_SAMPLE):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / PER_SAMPLE)
    return statistics.median(times)


def rs_rows(rank, world, shapes, warmup, iters, group):
    """GEMM + reduce-scatter (and + all-reduce) rows of this rank."""
    fused = getattr(torch.ops.symm_mem, "fused_matmul_reduce_scatter", None)
    for m, k, n in shapes:
        torch.manual_seed(4321 + rank)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        partial = torch.matmul(a, b)
        out = torch.empty(m // world, n, device="cuda", dtype=torch.bfloat16)
        row = {"op": "rs", "m": m, "k": k, "n": n, "world": world}
        row["torch_gemm_ms"] = timed(lambda: torch.matmul(a, b), warmup, iters)
        row["torch_reduce_scatter_ms"] = timed(lambda: dist.reduce_scatter_tensor(out, partial), warmup, iters)

        def b2b():
            dist.reduce_scatter_tensor(out, torch.matmul(a, b))

        def b2b_allreduce():
            dist.all_reduce(torch.matmul(a, b))

        row["torch_b2b_ms"] = timed(b2b, warmup, iters)
        row["torch_b2b_allreduce_ms"] = timed(b2b_allreduce, warmup, iters)
        if fused is not None:
            try:
                row["torch_async_tp_ms"] = timed(
                    lambda: fused(a, b, "sum", scatter_dim=0, group_name=group.group_name), warmup, iters)
            except Exception as exc:
                row["torch_async_tp_error"] = str(exc)[:300]
        yield row


def worker(rank, world, shapes, warmup, iters, port, out, op="ag"):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    group = dist.group.WORLD
    async_tp = None
    try:
        from torch.distributed._symmetric_memory import enable_symm_mem_for_group

        enable_symm_mem_for_group(group.group_name)
        async_tp = torch.ops.symm_mem.fused_all_gather_matmul
    except Exception as exc:  # report, keep the other baselines
        if rank == 0:
            print(f"async-TP unavailable: {exc}", flush=True)
    results = []
    rows = ag_rows(rank, world, shapes, warmup, iters, group, async_tp) if op == "ag" else \
        rs_rows(rank, world, shapes, warmup, iters, group)
    for row in rows:
        # The slowest rank's median.
        gathered = [None] * world
        dist.all_gather_object(gathered, row)
        if rank == 0:
            merged = dict(row)
            for key in [k for k in row if k.endswith("_ms")]:
                merged[key] = max(r[key] for r in gathered if key in r)
            results.append(merged)
            print(json.dumps(merged), flush=True)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                       "device": torch.cuda.get_device_name(0), "warmup": {"calls": warmup[0], "ms": warmup[1]},
                       "results": results}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def ag_rows(rank, world, shapes, warmup, iters, group, async_tp):
    """All-gather + GEMM rows of this rank."""
    for m, k, n in shapes:
        torch.manual_seed(1234 + rank)
        a_local = torch.randn(m // world, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        a_full = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
        dist.all_gather_into_tensor(a_full, a_local)
        row = {"op": "ag", "m": m, "k": k, "n": n, "world": world}
        row["torch_gemm_ms"] = timed(lambda: torch.matmul(a_full, b), warmup, iters)
        row["torch_allgather_ms"] = timed(lambda: dist.all_gather_into_tensor(a_full, a_local), warmup, iters)

        def b2b():
            dist.all_gather_into_tensor(a_full, a_local)
            return torch.matmul(a_full, b)

        row["torch_b2b_ms"] = timed(b2b, warmup, iters)
        if async_tp is not None:
            try:
                row["torch_async_tp_ms"] = timed(
                    lambda: async_tp(a_local, [b], gather_dim=0, group_name=group.group_name), warmup, iters)
            except Exception as exc:
                row["torch_async_tp_error"] = str(exc)[:300]
        yield row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, default=torch.cuda.device_count())
    parser.add_argument("--warmup", type=int, default=5, help="calls before timing each baseline (at least)")
    parser.add_argument("--warmup-ms", type=float, default=200.0,
                        help="... and more, until this much wall time has passed (synco-bench's --warmup-ms)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--out", required=True)
    parser.add_argument("--shapes", default=None, help="M,K,N;M,K,N (N per rank for ag, K per rank for rs)")
    parser.add_argument("--op", choices=["ag", "rs"], default="ag")
    args = parser.parse_args()
    shapes = SHAPES if args.op == "ag" else RS_SHAPES
    # The default shapes are the 2-rank ones: on W ranks each rank holds 2/W
    # of the weight (N_local for all-gather, K_local for reduce-scatter), as
    # build.sh scales them.
    if args.op == "ag":
        shapes = [(m, k, n * 2 // args.world) for m, k, n in shapes]
    else:
        shapes = [(m, k * 2 // args.world, n) for m, k, n in shapes]
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes.split(";")]
    port = 29511 if args.op == "ag" else 29512
    mp.spawn(worker, args=(args.world, shapes, (args.warmup, args.warmup_ms), args.iters, port, args.out, args.op), nprocs=args.world)


if __name__ == "__main__":
    main()
