"""A LLaMA-style tensor-parallel MLP block, forward, through Synco's Python
API, checked against the same block in plain PyTorch and timed against it.

    torchrun --nproc-per-node=N examples/tp_mlp/mlp.py [--tokens T --hidden H --ffn F]

Sequence-parallel layout, as Megatron's: rank r holds tokens
[r T / N, (r + 1) T / N) of the input X [T, H], column shards of the
gate and up weights ([H, F / N] each) and a row shard of the down weight
([F / N, H]). The block:

    h = silu(all_gather(X) @ Wg) * (all_gather(X) @ Wu)     # [T, F / N]
    y = reduce_scatter(h @ Wd)                               # [T / N, H]

Synco runs it as two fused kernels: the all-gather of X fused into one
GEMM of both projections with SiLU * up in its epilogue (the kernel
`synco.kernels.gate_up_silu`, compiled with a plan from
`synco.plans.all_gather_matmul`), then the down GEMM with the
reduce-scatter fused (`synco.ops.MatmulReduceScatter`). The reference is
NCCL's `all_gather_into_tensor`, the matmuls and `reduce_scatter_tensor`.

Ranks that share a GPU (more processes than GPUs: rank r on GPU r mod the
GPU count) cannot use NCCL, so the reference's collectives go through gloo
on the CPU there, and their times say nothing; the default shape then
shrinks so that every rank's reduction tiles fit on the GPU together.

`--compile-only --world N` compiles both kernels into the cache (no GPU,
no process group), for a GPU machine without the compiler.
"""

import argparse
import datetime
import os
import statistics

import torch
import torch.distributed as dist
import torch.nn.functional as F

import synco
from synco import kernels, ops, plans

GATE_UP = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
DOWN = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
SMALL = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 1}


def compile_block(world, tokens, hidden, ffn, small, cache):
    """Both fused kernels of the block for `world` ranks (cached): the
    gate/up kernel, and the options of the down GEMM's operator (its
    kernel compiled into the cache too)."""
    shard = ffn // world
    gate_up_config = SMALL if small else GATE_UP
    gate_up = synco.compile(
        kernels.gate_up_silu, signature=["*bf16"] * 4 + ["i32"] * 6,
        plan=plans.all_gather_matmul(world_size=world, m=tokens, k=hidden, n=shard,
                                     block_m=gate_up_config["BLOCK_M"], c_arg=None),
        pipeline="synco-fuse", constexprs=gate_up_config, num_warps=8, num_stages=4,
        divisible=["a_ptr", "wg_ptr", "wu_ptr", "h_ptr", "M", "N", "K", "stride_am",
                   "stride_wk", "stride_hm"],
        cache_dir=cache)
    down = dict(m=tokens, k=shard, n=hidden, config=SMALL if small else DOWN,
                chunks=2 if small else "auto", num_warps=8, num_stages=4,
                cache_dir=cache)
    ops.MatmulReduceScatter.compile(world, **down)
    return gate_up, down


class FusedBlock:
    """The block as Synco's two fused kernels."""

    def __init__(self, group, tokens, hidden, ffn, small, cache):
        gate_up, down = compile_block(group.world_size, tokens, hidden, ffn, small, cache)
        self.group, self.tokens, self.hidden = group, tokens, hidden
        self.shard = ffn // group.world_size
        self.gate_up = group.load(gate_up)
        config = SMALL if small else GATE_UP
        self.grid = (tokens // config["BLOCK_M"] * (self.shard // config["BLOCK_N"]),)
        #: The gathered input (symmetric); `x` is this rank's tokens of it.
        self.x_gathered = group.empty((tokens, hidden), torch.bfloat16)
        rows = tokens // group.world_size
        self.x = self.x_gathered[group.rank * rows:(group.rank + 1) * rows]
        self.h = torch.empty((tokens, self.shard), dtype=torch.bfloat16, device=group.device)
        self.down = ops.MatmulReduceScatter(group, **down)

    def __call__(self, wg, wu, wd):
        """y for the tokens in `x` (write them there, or copy)."""
        self.gate_up_silu(wg, wu)
        return self.down(self.h, wd)

    def gate_up_silu(self, wg, wu):
        """The first fused kernel alone: h = silu(all_gather(x) @ wg) * (... @ wu)."""
        t, h, f = self.tokens, self.hidden, self.shard
        self.gate_up(self.grid, self.x_gathered, wg, wu, self.h, t, f, h, h, f, f)


class TorchBlock:
    """The same block in plain PyTorch: NCCL collectives and matmuls (gloo
    on the CPU when ranks share a GPU)."""

    def __init__(self, tokens, hidden, world, device, gloo_group):
        self.gloo = gloo_group
        self.gathered = torch.empty((tokens, hidden), dtype=torch.bfloat16, device=device)
        self.y = torch.empty((tokens // world, hidden), dtype=torch.bfloat16, device=device)

    def __call__(self, x, wg, wu, wd):
        if self.gloo is None:
            dist.all_gather_into_tensor(self.gathered, x)
        else:
            self.gathered.copy_(_gloo_all_gather(x, self.gloo))
        hidden = F.silu(self.gathered @ wg) * (self.gathered @ wu)
        partial = hidden @ wd
        if self.gloo is None:
            dist.reduce_scatter_tensor(self.y, partial)
        else:
            self.y.copy_(_gloo_reduce_scatter(partial, self.gloo))
        return self.y


def _gloo_all_gather(x, group):
    parts = [torch.empty_like(x, device="cpu") for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, x.cpu(), group=group)
    return torch.cat(parts)


def _gloo_reduce_scatter(partial, group):
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    total = partial.float().cpu()
    dist.all_reduce(total, group=group)
    rows = total.shape[0] // world
    return total[rank * rows:(rank + 1) * rows].to(torch.bfloat16)


def time_ms(fn, warmup=5, reps=20):
    """Median milliseconds per call over `reps` calls between CUDA events,
    every rank in step (a barrier before each)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--hidden", type=int)
    parser.add_argument("--ffn", type=int)
    parser.add_argument("--cache", default=None)
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--world", type=int, help="with --compile-only: the ranks")
    parser.add_argument("--shared", action="store_true",
                        help="with --compile-only: for ranks sharing a GPU (the small shape)")
    args = parser.parse_args()
    if args.compile_only:
        small = args.shared
        shape = _shape(args, small, args.world)
        compile_block(args.world, *shape, small, args.cache)
        print(f"compiled the block for {args.world} ranks, tokens x hidden x ffn = {shape}")
        return
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    gpus = torch.cuda.device_count()
    shared = world > gpus
    torch.cuda.set_device(rank % gpus)
    device = torch.device("cuda", rank % gpus)
    timeout = datetime.timedelta(seconds=300)
    if shared:
        dist.init_process_group("gloo", timeout=timeout)
        gloo = dist.group.WORLD
    else:
        dist.init_process_group("nccl", device_id=device, timeout=timeout)
        gloo = None
    tokens, hidden, ffn = _shape(args, shared, world)
    group = synco.Group(heap_bytes=_heap_bytes(tokens, hidden, ffn, world))
    fused = FusedBlock(group, tokens, hidden, ffn, shared, args.cache)
    reference = TorchBlock(tokens, hidden, world, device, gloo)

    # Weights and this rank's tokens: fresh random data, every rank its own.
    gen = torch.Generator(device=device).manual_seed(torch.seed() + rank)
    scale = hidden ** -0.5
    wg, wu = (torch.randn((hidden, ffn // world), generator=gen, device=device) * scale
              for _ in range(2))
    wg, wu = wg.to(torch.bfloat16), wu.to(torch.bfloat16)
    wd = (torch.randn((ffn // world, hidden), generator=gen, device=device)
          * (ffn ** -0.5)).to(torch.bfloat16)
    x = torch.randn((tokens // world, hidden), generator=gen, device=device).to(torch.bfloat16)

    fused.x.copy_(x)
    fused.down.result.fill_(float("nan"))
    y = fused(wg, wu, wd).clone()
    group.wait(120)
    want = reference(x, wg, wu, wd).float()
    err = ((y.float() - want).norm() / want.norm()).item()
    errors = [None] * world
    dist.all_gather_object(errors, err)
    ok = all(e < 2e-2 for e in errors)

    fused_ms = time_ms(lambda: fused(wg, wu, wd))
    group.wait(120)
    torch_ms = time_ms(lambda: reference(x, wg, wu, wd))
    # Where the time goes: each fused kernel alone, and the matmuls alone
    # on the gathered input (no communication).
    gathered = reference.gathered
    parts = {
        "synco gate/up + all-gather": time_ms(lambda: fused.gate_up_silu(wg, wu)),
        "synco down + reduce-scatter": time_ms(lambda: fused.down(fused.h, wd)),
        "torch gate/up matmuls": time_ms(lambda: F.silu(gathered @ wg) * (gathered @ wu)),
        "torch down matmul": time_ms(lambda: fused.h @ wd),
    }
    group.wait(120)
    all_parts = [None] * world
    dist.all_gather_object(all_parts, parts)
    times = [None] * world
    dist.all_gather_object(times, (fused_ms, torch_ms))
    if rank == 0:
        print(f"TP MLP block, {world} ranks on {gpus} GPU(s), tokens {tokens}, hidden {hidden}, "
              f"ffn {ffn} (bf16)")
        print(f"  check against plain PyTorch: {'ok' if ok else 'FAILED'} "
              f"(relative error per rank: {', '.join(f'{e:.1e}' for e in errors)})")
        slowest = max(t[0] for t in times), max(t[1] for t in times)
        print(f"  synco fused:   {slowest[0]:.3f} ms (slowest rank, median of 20)")
        how = "gloo on the CPU: ranks share a GPU, times not comparable" if shared else "NCCL"
        print(f"  plain PyTorch: {slowest[1]:.3f} ms ({how})")
        if not shared:
            print(f"  speed-up:      {slowest[1] / slowest[0]:.2f}x")
        for name in parts:
            print(f"  {name}: {max(p[name] for p in all_parts):.3f} ms")
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(1)


def _shape(args, small, world):
    default = (256 * world, 512, 512 * world) if small else (8192, 4096, 14336)
    return tuple(given or d for given, d in zip((args.tokens, args.hidden, args.ffn), default))


def _heap_bytes(tokens, hidden, ffn, world):
    """The gathered X, the down GEMM's partials and result, and room for
    the kernels' flags and staging."""
    needed = 2 * (tokens * hidden + tokens * hidden + tokens * hidden // world)
    return needed + needed // 2 + (64 << 20)


if __name__ == "__main__":
    main()
