"""How evenly causal context-parallel attention spreads over the ranks, on
one GPU: each rank's fused kernel launched alone with every chunk present,
for the contiguous sharding (rank r holds part r of the sequence cut in W)
and the zigzag one (parts r and 2W - 1 - r of 2W, `blocks(zigzag)`).

    python benches/attention/balance.py --compile-only --cache DIR   # any machine
    python benches/attention/balance.py --cache DIR --out FILE.json  # the GPU machine

On W GPUs the ranks run at once and a step lasts as long as its slowest
rank: the table gives each sharding's slowest rank and its ratio to the
ranks' mean (1.00 is a perfect balance). Contiguous causal attention gives
rank W - 1 about 2W / (W + 1) times the mean's work; zigzag gives every
rank the same. The kernels are `synco.ops.AllGatherAttention`'s (copy
engine, one chunk per part) for LLaMA-3-8B (32 query heads, 8 key/value
heads, head dim 128), batch 1. Inputs are random (bf16), every rank's
output is checked against PyTorch's SDPA over the whole sequence, and the
timing is overhead.py's (CUDA events around back-to-back launches, 300 ms
of warm-up, the variants interleaved sample by sample, medians of its
SAMPLES).

With every chunk present a zigzag kernel's programs take its present path
(four loops, passes/docs/zigzag-order.md). Its cost, as overhead.py's, is
the median ratio over samples taken in pairs with the local kernel it was
made from (`synco.kernels.attention_zigzag` compiled without a plan, over
the whole gathered K and V), per rank; `zigzag split` is the same kernel
without the present path (`present_path="none"`), what a program pays
that reads chunk by chunk.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import triton

import synco
from synco import ops

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import (CONFIG, NUM_STAGES, NUM_WARPS, TOLERANCE, _HeapBytes,  # noqa: E402
                      time_against_local, time_interleaved)

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
WORLDS = [2, 4]
SEQS = [16384, 32768, 131072]
SHARDINGS = {"contiguous": False, "zigzag": True}
#: The zigzag kernels timed against the local one: name -> present_path.
ZIGZAG_COSTS = {"zigzag": "arrival", "zigzag split": "none"}


def fused_kernel(world, seq, zigzag, cache, present_path="arrival"):
    return ops.AllGatherAttention.compile(
        world, seq=seq, kv_heads=KV_HEADS, head_dim=HEAD_DIM, causal=True, config=CONFIG,
        zigzag=zigzag, backend="copy_engine", present_path=present_path, num_warps=NUM_WARPS,
        num_stages=NUM_STAGES, cache_dir=cache)


def local_zigzag_kernel(cache):
    """`synco.kernels.attention_zigzag` without a plan: what the zigzag
    kernels were made from."""
    signature, divisible = ops.AllGatherAttention.signature(
        head_dim=HEAD_DIM, config=CONFIG, zigzag=True)
    return synco.compile(synco.kernels.attention_zigzag, signature=signature,
                         constexprs={"HEAD_DIM": HEAD_DIM, "CAUSAL": 1, **CONFIG},
                         divisible=divisible, num_warps=NUM_WARPS, num_stages=NUM_STAGES,
                         cache_dir=cache)


def own_positions(world, rank, tokens, zigzag):
    """The sequence positions of a rank's queries, in its order."""
    if not zigzag:
        return torch.arange(rank * tokens, (rank + 1) * tokens)
    part = tokens // 2
    return torch.cat([torch.arange(rank * part, (rank + 1) * part),
                      torch.arange((2 * world - 1 - rank) * part, (2 * world - rank) * part)])


def heap_bytes_for(seq):
    return 2 * 2 * seq * KV_HEADS * HEAD_DIM + (64 << 20)


def run_case(node, heap_bytes, world, seq, cache):
    tokens, kv_cols, q_cols = seq // world, KV_HEADS * HEAD_DIM, HEADS * HEAD_DIM
    node.reset_heap()
    device = torch.device("cuda", 0)
    offsets = [node.alloc(2 * seq * kv_cols) for _ in range(2)]
    g = torch.Generator(device=device).manual_seed(seq + world)
    q_all = torch.randn((seq, q_cols), generator=g, device=device, dtype=torch.bfloat16)
    k_all, v_all = (torch.randn((seq, kv_cols), generator=g, device=device, dtype=torch.bfloat16)
                    for _ in range(2))
    heads = lambda x, n: x.view(seq, n, HEAD_DIM).transpose(0, 1)[None]  # noqa: E731
    want = torch.nn.functional.scaled_dot_product_attention(
        heads(q_all, HEADS), heads(k_all, KV_HEADS), heads(v_all, KV_HEADS), is_causal=True,
        enable_gqa=True)[0].transpose(0, 1).reshape(seq, q_cols).float()
    stream = torch.cuda.current_stream().cuda_stream
    grid = (tokens // CONFIG["BLOCK_M"], HEADS, 1)
    launches, outs, loaded = {}, {}, []
    variants = {sharding: (zigzag, fused_kernel(world, seq, zigzag, cache))
                for sharding, zigzag in SHARDINGS.items()}
    variants["zigzag split"] = (True, fused_kernel(world, seq, True, cache,
                                                   ZIGZAG_COSTS["zigzag split"]))
    variants["zigzag local"] = (True, local_zigzag_kernel(cache))
    for sharding, (zigzag, compiled) in variants.items():
        kernel = node.load(str(compiled.manifest.path))
        loaded.append(kernel)
        for rank in range(world):
            base = node.heap_base(rank)
            heap = synco.runtime.Heap(base, heap_bytes)
            k, v = (torch.as_tensor(_HeapBytes(base + off, 2 * seq * kv_cols), device=device)
                    .view(torch.bfloat16).view(seq, kv_cols) for off in offsets)
            k.copy_(k_all)
            v.copy_(v_all)
            own = own_positions(world, rank, tokens, zigzag).to(device)
            q = q_all[own].contiguous()
            out = torch.full((tokens, q_cols), float("nan"), device=device, dtype=torch.bfloat16)
            n_kv = seq if zigzag else (rank + 1) * tokens
            scalars = [HEAD_DIM ** -0.5, tokens * q_cols, HEAD_DIM, q_cols, seq * kv_cols,
                       HEAD_DIM, kv_cols, seq * kv_cols, HEAD_DIM, kv_cols, tokens * q_cols,
                       HEAD_DIM, q_cols, HEADS, KV_HEADS, tokens, n_kv] + ([rank] if zigzag else [])
            values, bindings = synco.runtime.LaunchArguments(compiled.manifest, device, heap)(
                [q, k, v, out, *scalars])
            kernel.mark_chunks_present(rank)
            name = f"{sharding} r{rank}"
            launches[name] = (lambda kernel=kernel, rank=rank, values=values, bindings=bindings:
                              kernel.launch_alone(rank, grid, values, bindings, stream))
            launches[name]()
            outs[name] = (out, own)
    torch.cuda.synchronize()
    errors = {name: ((out.float() - want[own]).norm() / want[own].norm()).item()
              for name, (out, own) in outs.items()}
    samples = time_interleaved({name: launch for name, launch in launches.items()
                                if name.rsplit(" ", 1)[0] in SHARDINGS})
    ms = {name: statistics.median(times) for name, times in samples.items()}
    costs = {name: [] for name in ZIGZAG_COSTS}
    for r in range(world):
        local = f"zigzag local r{r}"
        _, cost = time_against_local(
            {name: launches[name] for name in [local, *(f"{z} r{r}" for z in ZIGZAG_COSTS)]},
            {f"{z} r{r}": local for z in ZIGZAG_COSTS})
        for name in ZIGZAG_COSTS:
            costs[name].append(cost[f"{name} r{r}"])
    for kernel in loaded:
        kernel.unload()
    summary = {}
    for sharding in SHARDINGS:
        per_rank = [ms[f"{sharding} r{r}"] for r in range(world)]
        mean = sum(per_rank) / world
        summary[sharding] = {"per_rank_ms": per_rank, "slowest_ms": max(per_rank),
                             "slowest_over_mean": max(per_rank) / mean}
    return {"model": "llama3-8b", "heads": HEADS, "kv_heads": KV_HEADS, "head_dim": HEAD_DIM,
            "seq": seq, "world": world, "causal": True, "shardings": summary,
            "zigzag_cost_vs_local": costs,
            "rel_err_vs_sdpa": errors, "ok": all(e < TOLERANCE for e in errors.values())}


def markdown_table(rows):
    """The README's table of `rows` (a run's JSON rows)."""
    pct = lambda costs: " / ".join(f"{100 * c:+.1f}%" for c in costs)  # noqa: E731
    per_rank = lambda ms: " / ".join(f"{t:.2f}" for t in ms)  # noqa: E731
    lines = ["| W | seq | contiguous, per rank | slowest | zigzag, per rank | slowest "
             "| slowest rank, contiguous / zigzag | zigzag over its local kernel, per rank "
             "| zigzag split alone, per rank | max rel err |",
             "|---" * 10 + "|"]
    for row in rows:
        s, costs = row["shardings"], row.get("zigzag_cost_vs_local", {})
        contiguous, zigzag = s["contiguous"], s["zigzag"]
        lines.append(
            f"| {row['world']} | {row['seq'] // 1024}k | {per_rank(contiguous['per_rank_ms'])} "
            f"| {contiguous['slowest_ms']:.3f} ({contiguous['slowest_over_mean']:.2f}) "
            f"| {per_rank(zigzag['per_rank_ms'])} "
            f"| {zigzag['slowest_ms']:.3f} ({zigzag['slowest_over_mean']:.2f}) "
            f"| {contiguous['slowest_ms'] / zigzag['slowest_ms']:.2f}x "
            f"| {pct(costs.get('zigzag', []))} | {pct(costs.get('zigzag split', []))} "
            f"| {max(row['rel_err_vs_sdpa'].values()):.1e} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", metavar="FILE", help="print the README's table of a run")
    parser.add_argument("--cache")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--seqs", default=",".join(map(str, SEQS)))
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.table:
        print(markdown_table(json.loads(Path(args.table).read_text())["rows"]))
        return 0
    if not args.cache:
        parser.error("--cache is required to compile or run")
    seqs = [int(s) for s in args.seqs.split(",")]
    if args.compile_only:
        for world in WORLDS:
            for seq in seqs:
                for zigzag in SHARDINGS.values():
                    fused_kernel(world, seq, zigzag, args.cache)
                fused_kernel(world, seq, True, args.cache, ZIGZAG_COSTS["zigzag split"])
                print(f"compiled W={world} seq {seq}", flush=True)
        local_zigzag_kernel(args.cache)
        return 0
    rows = []
    for world in WORLDS:
        heap_bytes = heap_bytes_for(max(seqs))
        node = synco._native.Node.open_shared(world, 1, heap_bytes)
        for seq in seqs:
            row = run_case(node, heap_bytes, world, seq, args.cache)
            rows.append(row)
            s = row["shardings"]
            cells = "  ".join(
                f"{name} slowest {s[name]['slowest_ms']:.3f} ms ({s[name]['slowest_over_mean']:.2f}"
                f" x mean)" for name in SHARDINGS)
            gain = s["contiguous"]["slowest_ms"] / s["zigzag"]["slowest_ms"]
            costs = "  ".join(f"{name} " + " / ".join(f"{100 * c:+.1f}%" for c in per_rank)
                              for name, per_rank in row["zigzag_cost_vs_local"].items())
            print(f"W={world} seq {seq:6}  {cells}  zigzag {gain:.2f}x faster  {costs}  "
                  f"err {max(row['rel_err_vs_sdpa'].values()):.1e}{'' if row['ok'] else '  FAIL'}",
                  flush=True)
    result = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "triton": triton.__version__, "date": time.strftime("%Y-%m-%d"), "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
