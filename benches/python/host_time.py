"""The Python path's cost on the host, and its results against the
single-process runtime's, on the GPU machine.

    python benches/python/host_time.py --cache DIR --world W --out FILE.json
    python benches/python/host_time.py --cache DIR --world W --compile-only

Phase 1 spawns W processes (one rank each, rank r on GPU r mod the GPU
count), each through `synco.Group`, and for every operator below:

* runs it once on seeded random inputs (outputs poisoned first) and keeps
  what it computed;
* times, on the host, 300 calls of each of: the operator (`op(...)`: its
  shape checks, the argument checks and the runtime's launch),
  `Kernel.__call__` on the same tensors, and the native launch alone with
  its arguments already converted (the Rust runtime's `Node::launch`
  behind one PyO3 call), the three in turn. Each call only issues work;
  the ranks are drained (`Group.wait`) between calls, outside the timed
  region. Medians, after 20 warm-up rounds;
* times the Python layer alone, the native launch replaced by one that
  issues nothing: `op(...)`, `Kernel.__call__`, and the latter's parts
  (argument checks, the current stream's query). The difference of the
  first timings carries the driver's run-to-run spread; this one does
  not;
* then CUDA graphs: the wall time per call of 200 calls issued back to
  back (ranks drained before and after; median of 5 runs after one
  warm-up run) eagerly, then `op(...)` captured in a `torch.cuda.graph`
  and the host time of `graph.replay()` (median of 300, drained between),
  the same back-to-back time of replays, and of eager calls once the
  kernel replays (its launches then run between two barriers of every
  rank: crates/synco-runtime/docs/graph-capture.md). With ranks sharing
  one GPU and a small GEMM, this shows what the host costs a call, not
  what a multi-GPU job would gain.

Phase 2, in this process once the ranks are gone: the runtime's
single-process node (`Node.open_shared`: every rank in one process, as the
Rust benchmarks run) launches the same compiled kernels on the same
inputs, and every rank's output must be bit-identical to phase 1's.

Prints a table and writes the numbers to `--out`.
"""

import argparse
import cProfile
import datetime
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
import zlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import synco
from synco import _native, ops
from synco.runtime import Heap, LaunchArguments

M_PER_RANK, K, N = 256, 512, 512
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 1}
OPS = {
    "all_gather_matmul copy_engine": (ops.AllGatherMatmul, {"backend": "copy_engine", "chunks": 2}),
    "all_gather_matmul ldst": (ops.AllGatherMatmul, {"backend": "ldst", "chunks": 2}),
    "matmul_reduce_scatter": (ops.MatmulReduceScatter, {"chunks": 2}),
}
WARMUP, CALLS = 20, 300
#: Calls per back-to-back run, and runs (the first a warm-up).
BACK_TO_BACK, RUNS = 200, 6
HEAP_BYTES = 256 << 20


def options(world, extra, cache):
    return dict(m=M_PER_RANK * world, k=K, n=N, config=CONFIG, num_warps=4, num_stages=3,
                cache_dir=cache, **extra)


def inputs(name, rank, world):
    """Rank `rank`'s inputs of operator `name` (seeded, on the CPU)."""
    g = torch.Generator().manual_seed(zlib.crc32(f"{name} {rank}".encode()))
    rand = lambda *shape: torch.randn(shape, generator=g).to(torch.bfloat16)  # noqa: E731
    if OPS[name][0] is ops.AllGatherMatmul:
        return {"a_shard": rand(M_PER_RANK, K), "b": rand(K, N)}
    return {"a": rand(M_PER_RANK * world, K), "b": rand(K, N)}


def median_us(calls, drain):
    """Each of `calls`' median host time (us), the calls taken in turn so
    that all see the same conditions (other ranks' processes share the
    driver), `drain` after each, outside the timed region."""
    times = {name: [] for name in calls}
    for i in range(WARMUP + CALLS):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            elapsed = time.perf_counter() - start
            drain()
            if i >= WARMUP:
                times[name].append(elapsed)
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def profile(name, call, drain, show):
    """Where `call`'s host time goes (cProfile over CALLS calls, drains
    excluded): the top entries by own time, printed if `show` (every rank
    makes the calls: they are collective)."""
    profiler = cProfile.Profile()
    for _ in range(CALLS):
        profiler.enable()
        call()
        profiler.disable()
        drain()
    if show:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
        print(f"profile of {name}, {CALLS} calls:\n{out.getvalue()}", flush=True)


class _NoLaunch:
    """Stands in for a loaded kernel: takes a launch's arguments, issues
    nothing."""

    def launch(self, grid, values, bindings, stream):
        pass


def python_only(op, full, args, buffers, device):
    """The Python layer's own time per call (us, medians), measured with
    the native launch replaced by one that issues nothing (so without the
    driver's time, which varies from run to run far more than the Python
    layer costs): `op(...)`, `Kernel.__call__`, and the parts of the
    latter: the argument checks (`LaunchArguments`) and the current
    stream's query."""
    native, op.kernel._kernel = op.kernel._kernel, _NoLaunch()
    try:
        return {f"{name}_python": us for name, us in median_us({
            "operator": full,
            "kernel_call": lambda: op.kernel(op.grid, *args, buffers=buffers),
            "arguments": lambda: op.kernel.arguments(args, buffers),
            "stream_query": lambda: torch._C._cuda_getCurrentRawStream(device.index),
        }, lambda: None).items()}
    finally:
        op.kernel._kernel = native


def back_to_back_us(call, group):
    """Wall time per call (us) of BACK_TO_BACK calls issued back to back,
    every rank drained and in step before, drained after; the median of
    the runs after the first."""
    runs = []
    for _ in range(RUNS):
        group.wait(60)
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(BACK_TO_BACK):
            call()
        group.wait(60)
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - start) / BACK_TO_BACK)
    return statistics.median(runs[1:]) * 1e6


def graph_times(op, full, drain, group):
    """`op(...)` eagerly and in a CUDA graph (see the module's docs): the
    back-to-back time per call eagerly, the host time of a replay, the
    back-to-back time of replays and of eager calls once the kernel
    replays (us)."""
    eager = back_to_back_us(full, group)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        full()
    replay_host = median_us({"replay": graph.replay}, drain)["replay"]
    return {"back_to_back_eager": eager, "graph_replay": replay_host,
            "back_to_back_replayed": back_to_back_us(graph.replay, group),
            "back_to_back_eager_replaying": back_to_back_us(full, group),
            "replays": op.kernel.replays}


def worker(rank, world, cache, port, folder, profiled):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    group = synco.Group(heap_bytes=HEAP_BYTES)
    dev = group.device
    times = {}
    for name, (cls, extra) in OPS.items():
        op = cls(group, **options(world, extra, cache))
        data = {k: v.to(dev) for k, v in inputs(name, rank, world).items()}
        if cls is ops.AllGatherMatmul:
            op.shard.copy_(data["a_shard"])
            out = torch.full((op.m, op.n), float("nan"), dtype=torch.bfloat16, device=dev)
            full = lambda: op(data["b"], out=out)  # noqa: E731
            args = (op.gathered, data["b"], out, op.m, op.n, op.k, op.k, op.n, op.n)
            buffers = None
        else:
            op.partials.fill_(float("nan"))
            op.result.fill_(float("nan"))
            out = op.result
            full = lambda: op(data["a"], data["b"])  # noqa: E731
            args = (data["a"], data["b"], op.partials, op.m, op.n, op.k, op.k, op.n, op.n)
            buffers = {"C": op.result}
        full()
        group.wait(60)
        torch.save(out.cpu(), os.path.join(folder, f"{name}-{rank}.pt"))
        values, bindings = op.kernel.arguments(args, buffers)
        stream = torch.cuda.current_stream(dev).cuda_stream
        grid = tuple(op.grid) + (1,) * (3 - len(op.grid))
        drain = lambda: group.wait(60)  # noqa: E731
        if profiled:
            profile(name, full, drain, show=rank == 0)
        times[name] = median_us({
            "operator": full,
            "kernel_call": lambda: op.kernel(op.grid, *args, buffers=buffers),
            "native_launch": lambda: op.kernel._kernel.launch(grid, values, bindings, stream),
        }, drain)
        times[name].update(python_only(op, full, args, buffers, dev))
        times[name].update(graph_times(op, full, drain, group))
    gathered = [None] * world
    dist.all_gather_object(gathered, times)
    if rank == 0:
        with open(os.path.join(folder, "times.json"), "w") as f:
            json.dump(gathered, f)
    dist.barrier()
    dist.destroy_process_group()


class _HeapBytes:
    """Bytes at `address` on `device` as a CUDA array."""

    def __init__(self, address, nbytes, device):
        self.device = device
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                         "strides": None, "data": (address, False)}


def single_process(world, cache, folder):
    """Phase 2: every rank in this process; returns the outputs that differ."""
    gpus = min(torch.cuda.device_count(), world)
    node = _native.Node.open_shared(world, gpus, HEAP_BYTES)
    bases = [node.heap_base(r) for r in range(world)]
    devices = [torch.device("cuda", r % gpus) for r in range(world)]

    def symmetric(shape):
        nbytes = 2 * shape[0] * shape[1]
        offset = node.alloc(nbytes)
        return [torch.as_tensor(_HeapBytes(bases[r] + offset, nbytes, devices[r]),
                                device=devices[r]).view(torch.bfloat16).view(shape)
                for r in range(world)]

    differ = []
    for name, (cls, extra) in OPS.items():
        node.reset_heap()
        compiled = cls.compile(world, **options(world, extra, cache))
        kernel = node.load(str(compiled.manifest.path))
        m = M_PER_RANK * world
        data = [{k: v.to(devices[r]) for k, v in inputs(name, r, world).items()}
                for r in range(world)]
        if cls is ops.AllGatherMatmul:
            gathered = symmetric((m, K))
            outs = [torch.full((m, N), float("nan"), dtype=torch.bfloat16, device=devices[r])
                    for r in range(world)]
            for r in range(world):
                gathered[r][r * M_PER_RANK:(r + 1) * M_PER_RANK].copy_(data[r]["a_shard"])
            args = [(gathered[r], data[r]["b"], outs[r]) for r in range(world)]
            buffers = [None] * world
        else:
            partials, outs = symmetric((m, N)), symmetric((M_PER_RANK, N))
            for r in range(world):
                partials[r].fill_(float("nan"))
                outs[r].fill_(float("nan"))
            args = [(data[r]["a"], data[r]["b"], partials[r]) for r in range(world)]
            buffers = [{"C": outs[r]} for r in range(world)]
        launches = [LaunchArguments(compiled.manifest, devices[r], Heap(bases[r], HEAP_BYTES))(
            list(args[r]) + [m, N, K, K, N, N], buffers[r]) for r in range(world)]
        torch.cuda.synchronize()
        grid = (-(-m // CONFIG["BLOCK_M"]) * -(-N // CONFIG["BLOCK_N"]), 1, 1)
        kernel.launch_ranks(grid, [values for values, _ in launches], launches[0][1])
        node.wait(60)
        for r in range(world):
            got = outs[r].cpu()
            want = torch.load(os.path.join(folder, f"{name}-{r}.pt"))
            if not torch.equal(got.view(torch.int16), want.view(torch.int16)):
                differ.append(f"{name} rank {r}")
        kernel.unload()
    return differ


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--out")
    parser.add_argument("--compile-only", action="store_true",
                        help="compile the operators' kernels into --cache for --world ranks "
                             "(no GPU), then stop")
    parser.add_argument("--profile", action="store_true",
                        help="also print rank 0's cProfile of each operator's calls")
    args = parser.parse_args()
    if args.compile_only:
        for name, (cls, extra) in OPS.items():
            compiled = cls.compile(args.world, **options(args.world, extra, args.cache))
            print(f"compiled {name} for {args.world} ranks: {compiled.folder.name}")
        return
    if not args.out:
        parser.error("--out is required (unless --compile-only)")
    folder = tempfile.mkdtemp(prefix="synco-host-time-")
    ctx = mp.get_context("spawn")
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=worker,
                         args=(r, args.world, args.cache, port, folder, args.profile))
             for r in range(args.world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    if any(p.exitcode != 0 for p in procs):
        sys.exit(f"a rank failed: exit codes {[p.exitcode for p in procs]}")
    with open(os.path.join(folder, "times.json")) as f:
        per_rank = json.load(f)
    differ = single_process(args.world, args.cache, folder)
    rows = []
    print(f"host time per call, us (median of {CALLS}; W = {args.world} processes, "
          f"{torch.cuda.get_device_name()})")
    print("| operator | op(...) | Kernel.__call__ | native launch | op - native | "
          "Python alone: op(...) | Kernel.__call__ | argument checks | stream query |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in OPS:
        t = {k: max(r[name][k] for r in per_rank) for k in per_rank[0][name]}
        share = t["operator"] - t["native_launch"]
        rows.append({**t, "name": name, "python_us": share})
        print(f"| {name} | {t['operator']:.1f} | {t['kernel_call']:.1f} | "
              f"{t['native_launch']:.1f} | {share:.1f} | {t['operator_python']:.1f} | "
              f"{t['kernel_call_python']:.1f} | {t['arguments_python']:.1f} | "
              f"{t['stream_query_python']:.1f} |")
    print(f"\nCUDA graphs, us per call ({BACK_TO_BACK} calls back to back, median of "
          f"{RUNS - 1} runs; replay: host time, median of {CALLS})")
    print("| operator | eager, back to back | graph.replay() on the host | replays, back to back | "
          "eager once replaying, back to back |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['name']} | {row['back_to_back_eager']:.1f} | "
              f"{row['graph_replay']:.1f} | {row['back_to_back_replayed']:.1f} | "
              f"{row['back_to_back_eager_replaying']:.1f} |")
    print(f"bit-identical to the single-process runtime: "
          f"{'yes' if not differ else 'NO: ' + ', '.join(differ)} "
          f"({len(OPS) * args.world} outputs)")
    with open(args.out, "w") as f:
        json.dump({"world": args.world, "gpu": torch.cuda.get_device_name(), "calls": CALLS,
                   "torch": torch.__version__, "host_us": rows, "per_rank": per_rank,
                   "differ": differ}, f, indent=1)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
