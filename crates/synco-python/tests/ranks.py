"""The Python path with one rank per process, checked against PyTorch.

    python ranks.py build --cache DIR --worlds 2,4     # compile (no GPU needed)
    python ranks.py check --cache DIR --world W        # W processes on the GPUs
    python ranks.py fault --cache DIR --fault killed   # or killed_replay, killed_slots, absent, withheld
    python ranks.py slow-reader --cache DIR --world W  # one check of `check` alone

`build` fills a compile cache with every fused kernel the checks use, so
that a GPU machine without the compiler runs them (synco.compile finds
them by the identity of the compiler that built them). `check` spawns W
processes (rank r on GPU r mod the GPU count; ranks sharing a GPU take
turns on it), each through `synco.Group` and `synco.ops`: all-gather +
GEMM on the copy engine, `ldst` and `tma`, direct and ring, GEMM +
reduce-scatter, and the one-shot and two-shot all-reduces (staged on
`tma` too), each twice on
fresh random data with
poisoned outputs, against the same product computed by PyTorch in fp32
from every rank's inputs; context-parallel attention (K and V gathered,
causal or not, on each transport) against PyTorch's attention over the
whole sequence, direct and ring, and in the zigzag sharding, in the
bundled kernel and in the two of examples/attention/ written otherwise; Ulysses
attention (Q, K and V re-sharded from tokens to heads by all-to-alls
fused into the kernel) against the same, each rank's heads; all-to-all +
GEMM (A re-sharded from columns to rows in the GEMM's loop over k) and
the Ulysses layer (attention in, projection out), and Ulysses attention
whose output goes back by tokens from the same kernel, and GEMM +
all-to-all (each in chunks, sent by the copy engine or pulled by the
copy programs); plans
imported from JAX's StableHLO
(W = 4) and a torch.fx layer fused by synco.fx (traced, and through
torch.compile), and the same layer written with the functional operators
through Inductor's CUDA graphs (`mode="reduce-overhead"`), against the unfused
layers (with W = 3 the re-sharding operators, whose heads do not divide,
are skipped); every GEMM operator and six attention variants captured in
CUDA graphs (`graphs`: warm-up, capture, two replays on fresh data, an
eager launch after); then launches the runtime must refuse before
any work, and the host time per call. `fault` runs 2 ranks of a GEMM +
reduce-scatter where rank 1 dies after a first launch (`killed`), after
a replay of the launch captured in a CUDA graph (`killed_replay`) or
after a first call of ring attention over two slots (`killed_slots`), stays
alive but never launches (`absent`), or launches in step but never sends
its partials (`withheld`): rank 0 must get the watchdog's error, naming
what it waited for, within its timeout. `slow-reader` runs one check of
`check` alone: peers overwrite their blocks of a gathered K and V right
after a launch in which rank 1 stalls before reading them (the launch
must hold the overwrites back). Prints one line per check and exits
non-zero if any failed.
"""

import argparse
import datetime
import faulthandler
import importlib.util
import os
import queue
import statistics
import sys
import time
import traceback
import zlib
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.fx.experimental.proxy_tensor import make_fx

import synco
import synco.fx
from synco import ops

# The attention kernels of examples/attention/ written the other usual ways.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "attention"))
import attention_styles  # noqa: E402

# Triton's TMA matmul tutorial's form: A, B and C as host tensor descriptors.
_gemm_examples = importlib.util.spec_from_file_location(
    "ag_gemm_matmul", Path(__file__).resolve().parents[3] / "examples" / "ag_gemm" / "matmul.py")
GEMM_EXAMPLES = importlib.util.module_from_spec(_gemm_examples)
_gemm_examples.loader.exec_module(GEMM_EXAMPLES)
HOST_DESCRIPTORS = {"kernel": GEMM_EXAMPLES.matmul_kernel_tma_host, "descriptors": True}
#: A, B and C through descriptors the kernel makes, C stored through its
#: own (rewritten as a store through pointers where the plan produces C).
KERNEL_DESCRIPTORS = {"kernel": GEMM_EXAMPLES.matmul_kernel_descriptors}

# Small shapes: every rank's programs fit on one GPU with the others'.
M_PER_RANK, K, N = 256, 512, 512
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 1}
OPS = [
    ("all_gather_matmul copy_engine", ops.AllGatherMatmul, {"backend": "copy_engine", "chunks": 2}),
    ("all_gather_matmul ldst", ops.AllGatherMatmul, {"backend": "ldst", "chunks": 2}),
    ("all_gather_matmul ring copy_engine", ops.AllGatherMatmul,
     {"backend": "copy_engine", "chunks": 2, "algorithm": "ring"}),
    ("all_gather_matmul ring ldst", ops.AllGatherMatmul,
     {"backend": "ldst", "chunks": 2, "algorithm": "ring"}),
    ("matmul_reduce_scatter", ops.MatmulReduceScatter, {"chunks": 2}),
    ("matmul_all_reduce one_shot", ops.MatmulAllReduce, {"algorithm": "one_shot", "chunks": 1}),
    ("matmul_all_reduce two_shot", ops.MatmulAllReduce, {"algorithm": "two_shot", "chunks": 2}),
    # backend(tma): the copy programs move every chunk with bulk tensor
    # copies (a reduction's partials and sums staged in the owners' buffers).
    ("all_gather_matmul tma", ops.AllGatherMatmul, {"backend": "tma", "chunks": 2}),
    ("all_gather_matmul ring tma", ops.AllGatherMatmul,
     {"backend": "tma", "chunks": 2, "algorithm": "ring"}),
    ("matmul_reduce_scatter tma", ops.MatmulReduceScatter, {"chunks": 2, "backend": "tma"}),
    ("matmul_all_reduce two_shot tma", ops.MatmulAllReduce,
     {"algorithm": "two_shot", "chunks": 2, "backend": "tma"}),
] + [(f"all_gather_matmul {backend} (host descriptors)", ops.AllGatherMatmul,
      {"backend": backend, "chunks": 2, **HOST_DESCRIPTORS})
     for backend in ("copy_engine", "ldst", "tma")] \
  + [(f"{name} (host descriptors)", cls, {**extra, **HOST_DESCRIPTORS})
     for name, cls, extra in (
         ("matmul_reduce_scatter", ops.MatmulReduceScatter, {"chunks": 2}),
         ("matmul_all_reduce two_shot", ops.MatmulAllReduce,
          {"algorithm": "two_shot", "chunks": 2}))] \
  + [(f"{name} (descriptors made in the kernel)", cls, {**extra, **KERNEL_DESCRIPTORS})
     for name, cls, extra in (
         ("matmul_reduce_scatter", ops.MatmulReduceScatter, {"chunks": 2}),
         ("matmul_reduce_scatter copy_engine", ops.MatmulReduceScatter,
          {"chunks": 2, "backend": "copy_engine"}),
         ("matmul_reduce_scatter tma", ops.MatmulReduceScatter, {"chunks": 2, "backend": "tma"}),
         ("matmul_all_reduce one_shot", ops.MatmulAllReduce,
          {"algorithm": "one_shot", "chunks": 1}),
         ("matmul_all_reduce two_shot", ops.MatmulAllReduce,
          {"algorithm": "two_shot", "chunks": 2}),
         ("all_gather_matmul ldst", ops.AllGatherMatmul, {"backend": "ldst", "chunks": 2}))]
TOLERANCE = 2e-2  # relative, bf16 outputs of fp32 sums
#: Seconds the parent waits for the ranks of a run.
WORKER_TIMEOUT = {"check": 480, "fault": 60, "slow-reader": 120}


# Plans imported from StableHLO that JAX exported for 4 devices
# (lit-tests/Inputs/stablehlo/export.py: M = 1024, K = 512, N = 1024 in all),
# with the operator's shape per rank.
STABLEHLO = Path(__file__).resolve().parents[3] / "lit-tests" / "Inputs" / "stablehlo"
IMPORTED_WORLD = 4
IMPORTED = [
    ("ag_matmul", ops.AllGatherMatmul, {"m": 1024, "k": 512, "n": 256}),
    ("matmul_rs", ops.MatmulReduceScatter, {"m": 1024, "k": 128, "n": 1024}),
    ("matmul_ar", ops.MatmulAllReduce, {"m": 1024, "k": 128, "n": 1024}),
]
# Ulysses attention imported from export.py's `ulysses` (the plan's query
# blocks of 128, the import's default): in and out, full attention.
IMPORTED_ULYSSES = (False, "copy_engine", 1)
IMPORTED_ULYSSES_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64}


# A tensor-parallel layer as torch.compile hands it to a backend (aten ops,
# functional collectives), fused by synco.fx into the functional operators
# (their default tiles, GROUP_M 8: whole swizzle groups per rank): 1024
# tokens per rank, hidden 256 (one column of tiles: 4 ranks on one GPU keep
# all their programs resident), ffn shard 512.
FX_TOKENS, FX_HIDDEN, FX_FFN = 1024, 256, 512


def fx_layer(group_name, world):
    functional = torch.ops._c10d_functional

    def layer(x, w_up, w_down):
        gathered = functional.wait_tensor(functional.all_gather_into_tensor(x, world, group_name))
        hidden = torch.relu(gathered @ w_up)
        return functional.wait_tensor(
            functional.reduce_scatter_tensor(hidden @ w_down, "sum", world, group_name))

    return layer


def fx_layer_3d(group_name, world):
    """`fx_layer` on sequence-parallel activations [tokens / 2, 2, hidden]:
    views merge their leading dimensions before the up projection and
    split them again before the reduce-scatter."""
    functional = torch.ops._c10d_functional

    def layer(x, w_up, w_down):
        gathered = functional.wait_tensor(functional.all_gather_into_tensor(x, world, group_name))
        hidden = torch.relu(gathered.view(-1, FX_HIDDEN) @ w_up)
        out = (hidden @ w_down).view(world * FX_TOKENS // 2, 2, FX_HIDDEN)
        return functional.wait_tensor(
            functional.reduce_scatter_tensor(out, "sum", world, group_name))

    return layer


# Context-parallel attention: 256 tokens per rank, 4 query heads sharing 2
# key/value heads, head dim 64; blocks of 64 queries and 64 keys.
# Each: (causal, backend, algorithm, zigzag, chunks per rank). Zigzag: the
# load-balanced sharding, rank r holding parts r and 2W - 1 - r.
ATTENTION = [(causal, backend, algorithm, False, 2) for algorithm in ("direct", "ring")
             for causal in (False, True) for backend in ("copy_engine", "ldst")] \
    + [(causal, backend, "direct", True, 2) for causal in (True, False)
       for backend in ("copy_engine", "ldst")] \
    + [(True, "copy_engine", "direct", True, 4)] \
    + [(causal, "tma", algorithm, False, 2) for algorithm, causal in (("direct", True),
                                                                      ("ring", False))] \
    + [(True, "tma", "direct", True, 2)] \
    + [(causal, backend, "direct", False, 2, style) for style in attention_styles.STYLES
       for causal in (False, True) for backend in ("copy_engine", "ldst")
       if style not in ("tutorial", "tutorial_host")] \
    + [(False, backend, "direct", False, 2, style) for style in ("tutorial", "tutorial_host")
       for backend in ("copy_engine", "ldst", "tma")] \
    + [(causal, backend, "direct", False, 2, "descriptors", "bhsd")
       for causal, backend in ((False, "copy_engine"), (True, "ldst"), (False, "tma"))] \
    + [(causal, backend, algorithm, zigzag, 2, None, "bhsd")
       for causal, backend, algorithm, zigzag in (
           (False, "copy_engine", "direct", False), (True, "ldst", "direct", False),
           (False, "ldst", "ring", False), (True, "copy_engine", "direct", True),
           (True, "tma", "direct", False))]
# Ring attention over a fixed pair of buffers (algorithm "ring_slots":
# algorithm(ring) slots(2), one chunk per rank, the kernel once per step).
ATTENTION += [(causal, backend, "ring_slots", False, 1) for causal in (False, True)
              for backend in ("copy_engine", "ldst")]
#: The tutorial kernel, causal with contiguous shards: refused at launch.
TUTORIAL_CAUSAL = (True, "copy_engine", "direct", False, 2, "tutorial")
HEADS, KV_HEADS, HEAD_DIM, TOKENS = 4, 2, 64, 256


#: The attention variants `check_graphs` captures in CUDA graphs (each
#: backend, direct and ring, causal and not, zigzag, ring slots: a call of
#: W launches in the graph).
GRAPH_ATTENTION = [(False, "copy_engine", "direct", False, 2), (True, "ldst", "direct", False, 2),
                   (True, "copy_engine", "ring", False, 2), (False, "ldst", "ring", False, 2),
                   (True, "copy_engine", "direct", True, 2), (True, "tma", "direct", False, 2),
                   (True, "copy_engine", "ring_slots", False, 1),
                   (False, "ldst", "ring_slots", False, 1)]


def attention_variant(variant):
    """(causal, backend, algorithm, zigzag, chunks, style, layout) of an
    ATTENTION entry: the style of kernel (None: the bundled one) and the
    layout, "bshd" unless the entry or the style says otherwise."""
    causal, backend, algorithm, zigzag, chunks, *rest = variant
    style = rest[0] if rest else None
    layout = rest[1] if len(rest) > 1 else attention_styles.layout(style) if style else "bshd"
    return causal, backend, algorithm, zigzag, chunks, style, layout


def attention_options(world, variant, cache):
    causal, backend, algorithm, zigzag, chunks, style, layout = attention_variant(variant)
    kernel = attention_styles.kernel(style) if style else None
    slots = {"slots": 2} if algorithm == "ring_slots" else {}
    return dict(seq=TOKENS * world, kv_heads=KV_HEADS, head_dim=HEAD_DIM, causal=causal,
                config={"BLOCK_M": 64, "BLOCK_N": 64}, chunks=chunks, backend=backend,
                algorithm="ring" if slots else algorithm, zigzag=zigzag, layout=layout,
                kernel=kernel, **slots,
                descriptors=style in attention_styles.DESCRIPTORS, num_warps=4, num_stages=2,
                cache_dir=cache)


def attention_name(variant):
    causal, backend, algorithm, zigzag, chunks, style, layout = attention_variant(variant)
    return (f"attention {'causal' if causal else 'full'} {backend} {algorithm}"
            f"{' zigzag' if zigzag else ''}{f' chunks={chunks}' if chunks != 2 else ''}"
            f"{f' ({style} kernel)' if style else ''}{f' {layout}' if layout != 'bshd' else ''}")


# Ulysses attention: Q, K and V re-sharded from tokens to heads by
# all-to-alls fused into the kernel; 8 query heads sharing 4 key/value heads
# (each rank takes 8 / W and 4 / W). Each: (causal, backend, chunks).
ULYSSES = [(causal, backend, chunks) for causal in (False, True)
           for backend in ("copy_engine", "ldst") for chunks in (1, 2)] \
    + [(causal, "tma", chunks) for causal in (False, True) for chunks in (1, 2)]
# Ulysses attention with Q, K and V moved in a chunk per head of each
# rank's tokens (`per_head`): each program waits only for its head's.
# Each: (causal, backend[, style of kernel]).
ULYSSES_PER_HEAD = [(causal, backend) for causal in (False, True)
                    for backend in ("copy_engine", "ldst", "tma")] \
    + [(True, "copy_engine", style) for style in ("blocks", "descriptors", "rows")]
# The attention kernels of examples/attention written the other usual ways
# whose Q, K, V and output are [tokens, heads * head_dim], as the
# re-sharding operators hold them.
ULYSSES_STYLES = [style for style in attention_styles.STYLES
                  if attention_styles.layout(style) == "bshd"]
# With the output re-sharded back by tokens in the same kernel: (causal,
# backend of Q, K and V, chunks of each rank's output rows, the output's
# backend[, style of kernel: the bundled one without]).
ULYSSES_OUT = [(causal, backend, 1, "copy_engine") for causal in (False, True)
               for backend in ("copy_engine", "ldst")] \
    + [(True, "copy_engine", 2, "copy_engine"), (True, "ldst", 2, "ldst"),
       (False, "tma", 2, "tma")] \
    + [(True, "ldst", 2, "copy_engine", style) for style in ULYSSES_STYLES]
ULYSSES_HEADS, ULYSSES_KV_HEADS = 8, 4
# Attention + all-to-all alone (`reshard_in=False`): Q, K and V head-sharded
# already, the output re-sharded by tokens. Each: (causal, chunks of each
# rank's output rows, the output's backend[, style of kernel]).
ATTENTION_A2A = [(False, 1, "copy_engine"), (True, 2, "copy_engine"), (True, 2, "ldst"),
                 (False, 1, "ldst"), (True, 2, "tma")] \
    + [(False, 2, "ldst", style) for style in ULYSSES_STYLES]


def style_kernel(style=None):
    """The options that compile the kernel of `style` (none: the bundled
    kernel)."""
    return {"kernel": attention_styles.kernel(style)} if style else {}


def style_suffix(style=None):
    return f" ({style} kernel)" if style else ""


def reshards(world):
    """Whether the re-sharding operators' heads and columns divide among
    `world` ranks (not for 3)."""
    return ULYSSES_HEADS % world == 0 and ULYSSES_KV_HEADS % world == 0 and A2A_N % world == 0


def ulysses_options(world, variant, cache, reshard_out=False):
    causal, backend, chunks = variant
    return dict(seq=TOKENS * world, heads=ULYSSES_HEADS, kv_heads=ULYSSES_KV_HEADS,
                head_dim=HEAD_DIM, causal=causal, config={"BLOCK_M": 64, "BLOCK_N": 64},
                chunks=chunks, backend=backend, reshard_out=reshard_out, num_warps=4,
                num_stages=2, cache_dir=cache)


def attention_a2a_name(causal, out_chunks, out_backend, style=None):
    return (f"attention + all-to-all {'causal' if causal else 'full'} {out_backend} "
            f"out_chunks={out_chunks}{style_suffix(style)}")


def ulysses_name(variant):
    causal, backend, chunks = variant
    return f"ulysses {'causal' if causal else 'full'} {backend} chunks={chunks}"


# All-to-all + GEMM: A re-sharded from columns to rows, every token's
# heads (k = 8 heads x 64) times an output projection of n columns. Each:
# (backend, chunks per rank).
A2A_GEMM = [(backend, chunks) for backend in ("copy_engine", "ldst", "tma") for chunks in (1, 2)]
A2A_N = 512
#: GEMM + all-to-all + GEMM through the functional operators, with their
#: default tiles: tokens per rank, hidden, the re-sharded columns (whole
#: tiles of 256 per rank for W up to 4), the output projection's columns.
CHAIN = (TOKENS, 512, 1024, 512)


def gemm_a2a_options(cache, chunks=1, backend="copy_engine"):
    """GEMM + all-to-all: each rank's 256 tokens times a [512, 512] weight,
    re-sharded into every token of its 512 / W columns (column tiles of
    128: a tile within one rank's columns for W up to 4), sent in `chunks`
    chunks of each rank's columns."""
    return dict(m=TOKENS, k=ULYSSES_HEADS * HEAD_DIM, n=A2A_N, chunks=chunks, backend=backend,
                num_warps=4, num_stages=3,
                config={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 2},
                cache_dir=cache)


def gemm_a2a_variants(world):
    """The (backend, chunks) of GEMM + all-to-all checked with `world`
    ranks: the copy engine's sends, and the copy programs' pulls, at the
    chunk counts that cut each rank's columns into whole column tiles."""
    chunks = [c for c in (1, 2) if (A2A_N // world) % (c * 128) == 0]
    return [(b, c) for b in ("copy_engine", "ldst", "tma") for c in chunks
            if b == "copy_engine" or c == chunks[-1]]


def a2a_gemm_options(world, variant, cache):
    backend, chunks = variant
    return dict(m=TOKENS, k=ULYSSES_HEADS * HEAD_DIM, n=A2A_N, chunks=chunks, backend=backend,
                num_warps=4, num_stages=3, cache_dir=cache)


def own_rows(world, rank, zigzag):
    """The sequence positions a rank holds, in its order."""
    if not zigzag:
        return torch.arange(rank * TOKENS, (rank + 1) * TOKENS)
    part = TOKENS // 2
    return torch.cat([torch.arange(rank * part, (rank + 1) * part),
                      torch.arange((2 * world - 1 - rank) * part, (2 * world - rank) * part)])


def options(world, extra, cache):
    return dict(m=M_PER_RANK * world, k=K, n=N, config=CONFIG, num_warps=4, num_stages=3,
                cache_dir=cache, **extra)


def build(args):
    worlds = [int(w) for w in args.worlds.split(",")]
    if IMPORTED_WORLD in worlds:
        imported = Path(args.cache) / "imported"
        imported.mkdir(parents=True, exist_ok=True)
        for name, cls, shape in IMPORTED:
            plans = synco.import_plans(STABLEHLO / f"{name}.mlir")
            [(plan_name, plan)] = plans.items()
            (imported / f"{name}.mlir").write_text(plan)
            compiled = cls.compile(IMPORTED_WORLD, config=CONFIG, num_warps=4, num_stages=3,
                                   cache_dir=args.cache, plan=plan, **shape)
            print(f"built W={IMPORTED_WORLD} {plan_name} imported from {name}.mlir: "
                  f"{compiled.folder.name}")
        [(plan_name, plan)] = synco.import_plans(STABLEHLO / "ulysses.mlir").items()
        (imported / "ulysses.mlir").write_text(plan)
        compiled = ops.UlyssesAttention.compile(IMPORTED_WORLD, **{
            **ulysses_options(IMPORTED_WORLD, IMPORTED_ULYSSES, args.cache, reshard_out=True),
            "config": IMPORTED_ULYSSES_CONFIG, "plan": plan})
        print(f"built W={IMPORTED_WORLD} {plan_name} imported from ulysses.mlir: "
              f"{compiled.folder.name}")
    for world in worlds:
        for cls, shape in ((ops.AllGatherMatmul, (FX_HIDDEN, FX_FFN)),
                           (ops.MatmulReduceScatter, (FX_FFN, FX_HIDDEN))):
            compiled = cls.compile(world, m=FX_TOKENS * world, k=shape[0], n=shape[1],
                                   cache_dir=args.cache)
            print(f"built W={world} {cls.__name__} for the fx layer: {compiled.folder.name}")
        for name, cls, extra in OPS:
            start = time.perf_counter()
            compiled = cls.compile(world, **options(world, extra, args.cache))
            print(f"built W={world} {name}: {compiled.folder.name} "
                  f"({'cached' if compiled.cached else f'{time.perf_counter() - start:.1f} s'})")
        for variant in ATTENTION + [TUTORIAL_CAUSAL]:
            compiled = ops.AllGatherAttention.compile(
                world, **attention_options(world, variant, args.cache))
            print(f"built W={world} {attention_name(variant)}: {compiled.folder.name}")
        for causal in (False, True):
            # (What synco.ops.all_gather_sdpa compiles, with its defaults.)
            compiled = ops.AllGatherAttention.compile(
                world, seq=TOKENS * world, kv_heads=KV_HEADS, head_dim=HEAD_DIM, causal=causal,
                layout="bhsd", cache_dir=args.cache)
            print(f"built W={world} all_gather_sdpa {'causal' if causal else 'full'}: "
                  f"{compiled.folder.name}")
        if not reshards(world):
            print(f"W={world}: the re-sharding operators' heads do not divide; not built")
            continue
        for variant in ULYSSES:
            compiled = ops.UlyssesAttention.compile(world, **ulysses_options(world, variant,
                                                                             args.cache))
            print(f"built W={world} {ulysses_name(variant)}: {compiled.folder.name}")
        for causal, backend, *style in ULYSSES_PER_HEAD:
            compiled = ops.UlyssesAttention.compile(
                world, **ulysses_options(world, (causal, backend, 1), args.cache),
                per_head=True, **style_kernel(*style))
            print(f"built W={world} {ulysses_name((causal, backend, 1))} per head"
                  f"{style_suffix(*style)}: {compiled.folder.name}")
        for causal, backend, out_chunks, out_backend, *style in ULYSSES_OUT:
            compiled = ops.UlyssesAttention.compile(world, **ulysses_options(
                world, (causal, backend, 1), args.cache, reshard_out=True),
                out_chunks=out_chunks, out_backend=out_backend, **style_kernel(*style))
            print(f"built W={world} ulysses in and out {causal} {backend} out_chunks="
                  f"{out_chunks} out_backend={out_backend}{style_suffix(*style)}: "
                  f"{compiled.folder.name}")
        for causal, out_chunks, out_backend, *style in ATTENTION_A2A:
            compiled = ops.UlyssesAttention.compile(world, **ulysses_options(
                world, (causal, "copy_engine", 1), args.cache, reshard_out=True),
                out_chunks=out_chunks, out_backend=out_backend, reshard_in=False,
                **style_kernel(*style))
            print(f"built W={world} "
                  f"{attention_a2a_name(causal, out_chunks, out_backend, *style)}: "
                  f"{compiled.folder.name}")
        compiled = ops.UlyssesAttention.compile(
            world, seq=TOKENS * world, heads=ULYSSES_HEADS, kv_heads=ULYSSES_KV_HEADS,
            head_dim=HEAD_DIM, causal=True, reshard_in=False, reshard_out=True,
            cache_dir=args.cache)
        print(f"built W={world} functional attention_all_to_all: {compiled.folder.name}")
        # What the functional re-sharding operators compile, with their defaults.
        for reshard_out in (False, True):
            compiled = ops.UlyssesAttention.compile(
                world, seq=TOKENS * world, heads=ULYSSES_HEADS, kv_heads=ULYSSES_KV_HEADS,
                head_dim=HEAD_DIM, causal=True, reshard_out=reshard_out, cache_dir=args.cache)
            print(f"built W={world} functional ulysses_attention reshard_out={reshard_out}: "
                  f"{compiled.folder.name}")
        m, k, n, n2 = CHAIN
        compiled = ops.MatmulAllToAll.compile(world, m=m, k=k, n=n, cache_dir=args.cache)
        print(f"built W={world} functional matmul_all_to_all: {compiled.folder.name}")
        compiled = ops.AllToAllMatmul.compile(world, m=m, k=n, n=n2, cache_dir=args.cache)
        print(f"built W={world} functional all_to_all_matmul: {compiled.folder.name}")
        for variant in A2A_GEMM:
            compiled = ops.AllToAllMatmul.compile(world, **a2a_gemm_options(world, variant,
                                                                            args.cache))
            print(f"built W={world} all_to_all_matmul {variant}: {compiled.folder.name}")
        for backend, chunks in gemm_a2a_variants(world):
            compiled = ops.MatmulAllToAll.compile(world, **gemm_a2a_options(args.cache, chunks,
                                                                             backend))
            print(f"built W={world} matmul_all_to_all {backend} chunks={chunks}: "
                  f"{compiled.folder.name}")
        for backend in ("copy_engine", "ldst"):
            compiled = ops.MatmulAllToAll.compile(world, **gemm_a2a_options(args.cache, 1, backend),
                                                  **KERNEL_DESCRIPTORS)
            print(f"built W={world} matmul_all_to_all {backend} chunks=1 "
                  f"(descriptors made in the kernel): {compiled.folder.name}")


def rel_error(got, want):
    return ((got.float() - want).norm() / want.norm().clamp_min(1e-30)).item()


def inputs(seed, world, shapes):
    """Every rank's inputs, the same on every rank (seeded)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [[torch.randn(s, generator=g).to(torch.bfloat16) for s in shapes] for _ in range(world)]


def check_ops(group, cache, seed, report):
    w = group.world_size
    for name, cls, extra in OPS:
        check_gemm(group, name, cls, options(w, extra, cache), seed, report)


def check_imported(group, cache, seed, report):
    """The plans `build` imported from JAX's StableHLO (W = 4 only: the
    modules were exported for 4 devices), each fused into the operator's
    GEMM, against the unfused layer's result."""
    if group.world_size != IMPORTED_WORLD:
        return
    for name, cls, shape in IMPORTED:
        plan = (Path(cache) / "imported" / f"{name}.mlir").read_text()
        opts = dict(config=CONFIG, num_warps=4, num_stages=3, cache_dir=cache, plan=plan,
                    **shape, **({"algorithm": "two_shot"} if cls is ops.MatmulAllReduce else {}))
        check_gemm(group, f"imported {name}", cls, opts, seed, report)


def fx_reference(data, rank):
    """`rank`'s rows of the fx layer computed by PyTorch in fp32 from every
    rank's inputs `data` (the hidden activations rounded to bf16, as the
    fused all-gather + matmul stores them)."""
    gathered = torch.cat([d[0] for d in data]).float()
    total = sum(torch.relu((gathered @ up.float()).to(torch.bfloat16).float()) @ down.float()
                for _, up, down in data)
    return total[rank * FX_TOKENS:(rank + 1) * FX_TOKENS]


def check_fx(group, seed, report):
    """`fx_layer` traced at aten level (make_fx, fake tensors), its
    collectives fused by synco.fx, run on this rank's tensors against the
    layer computed by PyTorch in fp32 from every rank's inputs (the
    hidden activations rounded to bf16, as the fused all-gather + matmul
    stores them)."""
    w, r, dev = group.world_size, group.rank, group.device
    layer = fx_layer(group.process_group.group_name, w)
    shapes = [(FX_TOKENS, FX_HIDDEN), (FX_HIDDEN, FX_FFN), (FX_FFN, FX_HIDDEN)]
    gm = make_fx(layer, tracing_mode="fake")(
        *(torch.empty(s, dtype=torch.bfloat16) for s in shapes))
    fused = synco.fx.fuse_collectives(gm)
    report("fx: both collectives fused", [line.split()[0] for line in fused] == ["fused"] * 2,
           "; ".join(fused))
    for launch in range(2):
        data = inputs(seed + 7 + 1000 * launch, w, shapes)
        got = gm(*(t.to(dev) for t in data[r]))
        group.wait(60)
        err = rel_error(got.cpu(), fx_reference(data, r))
        report(f"fx layer (launch {launch + 1})", err < TOLERANCE, f"rel err {err:.2e}")
    # The same layer through torch.compile: Dynamo's graph (torch-level
    # ops) fused by synco.fx.backend.
    compiled = torch.compile(layer, backend=synco.fx.backend, fullgraph=True)
    data = inputs(seed + 11, w, shapes)
    got = compiled(*(t.to(dev) for t in data[r]))
    group.wait(60)
    err = rel_error(got.cpu(), fx_reference(data, r))
    report("fx layer under torch.compile (synco.fx.backend)", err < TOLERANCE,
           f"rel err {err:.2e}")
    # The same on [tokens / 2, 2, hidden] activations (views around the
    # products, moved outside the fused operators by synco.fx).
    gm = make_fx(fx_layer_3d(group.process_group.group_name, w), tracing_mode="fake")(
        torch.empty((FX_TOKENS // 2, 2, FX_HIDDEN), dtype=torch.bfloat16),
        *(torch.empty(s, dtype=torch.bfloat16) for s in shapes[1:]))
    fused = synco.fx.fuse_collectives(gm)
    report("fx 3-d: both collectives fused", [line.split()[0] for line in fused] == ["fused"] * 2,
           "; ".join(fused))
    data = inputs(seed + 13, w, shapes)
    x, up, down = (t.to(dev) for t in data[r])
    got = gm(x.view(FX_TOKENS // 2, 2, FX_HIDDEN), up, down)
    group.wait(60)
    err = rel_error(got.reshape(FX_TOKENS, FX_HIDDEN).cpu(), fx_reference(data, r))
    report("fx layer on 3-d activations", tuple(got.shape) == (FX_TOKENS // 2, 2, FX_HIDDEN)
           and err < TOLERANCE, f"shape {tuple(got.shape)}, rel err {err:.2e}")
    check_cuda_graphs(group, shapes, seed, report)


def check_cuda_graphs(group, shapes, seed, report):
    """The fx layer written with the functional operators, through
    Inductor with CUDA graphs (`mode="reduce-overhead"`): the fused
    operators are captured with the ReLU between them, no graph skipped.
    Three calls on fresh data (warm-up, capture, replay), each against
    PyTorch in fp32."""
    w, r, dev = group.world_size, group.rank, group.device
    name = group.process_group.group_name

    def layer(x, w_up, w_down):
        hidden = torch.relu(torch.ops.synco.all_gather_matmul(x, w_up, w, name))
        return torch.ops.synco.matmul_reduce_scatter(hidden, w_down, w, name)

    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(layer, mode="reduce-overhead", fullgraph=True)
    for call in range(3):
        data = inputs(seed + 13 + 1000 * call, w, shapes)
        try:
            got = compiled(*(t.to(dev) for t in data[r])).clone()
        except Exception as e:  # noqa: BLE001 (reported; the other checks go on)
            report("functional layer under torch.compile(mode='reduce-overhead')", False,
                   f"{type(e).__name__}: {str(e)[:400]}")
            return
        group.wait(60)
        err = rel_error(got.cpu(), fx_reference(data, r))
        report(f"functional layer under torch.compile(mode='reduce-overhead') (call {call + 1})",
               err < TOLERANCE, f"rel err {err:.2e}")
    # No graph skipped, and the fused operators' kernels were captured.
    counters = dict(torch._dynamo.utils.counters["inductor"])
    captured = [type(op).__name__ for key, op in ops._OPERATORS.items()
                if key[1] == name and op.kernel.replays]
    report("Inductor captured the layer with its fused operators",
           not any(k.startswith("cudagraph_skips") and v for k, v in counters.items())
           and {"AllGatherMatmul", "MatmulReduceScatter"} <= set(captured),
           f"captured {sorted(captured)}; inductor counters {counters}")


def graph_case(group, name, kernel, case, seed, report):
    """`case(seed)` sets an operator's static inputs to fresh random data,
    poisons its outputs and returns a function that runs it and one that
    gives (its output, PyTorch's in fp32). Run eagerly (the warm-up),
    captured in a CUDA graph, the graph replayed twice on fresh data, then
    eagerly again; each result checked."""
    def checked(label, launch, salt):
        call, result = case(seed + salt)
        got = launch(call)
        group.wait(60)
        got, want = result(got)
        err = rel_error(got.cpu(), want)
        report(f"{name} {label}", err < TOLERANCE and (salt == 0 or kernel.replays),
               f"rel err {err:.2e}, replays {kernel.replays}")

    checked("(eager warm-up)", lambda call: call(), 0)
    graph = torch.cuda.CUDAGraph()
    captured = {}
    try:
        call, _ = case(seed + 1)
        with torch.cuda.graph(graph):
            captured["out"] = call()
    except Exception as e:  # noqa: BLE001 (reported; the other checks go on)
        report(f"{name} captured in a CUDA graph", False, f"{type(e).__name__}: {str(e)[:400]}")
        torch.cuda.synchronize()
        return

    def replay(_call):
        graph.replay()
        return captured["out"]

    for replay_index in range(2):
        checked(f"(graph replay {replay_index + 1})", replay, 100 * (replay_index + 1))
    checked("(eager after the graph)", lambda call: call(), 300)


def check_capture_before_launch_refused(group, cache, report):
    """A kernel that never ran may not be captured (its first launch waits
    for the peers on the host): `LaunchError`, and the capture holds no
    work of it."""
    name, cls, extra = OPS[0]
    op = cls(group, **options(group.world_size, extra, cache))
    b = torch.zeros((op.k, op.n), dtype=torch.bfloat16, device=group.device)
    out = torch.empty((op.m, op.n), dtype=torch.bfloat16, device=group.device)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            op(b, out=out)
        report("refuses a capture before the kernel's first launch", False, "captured")
    except synco.LaunchError as e:
        report("refuses a capture before the kernel's first launch",
               "launch it once before the capture" in str(e), str(e))
    torch.cuda.synchronize()


def check_graphs(group, cache, seed, report):
    """Every GEMM operator and attention (causal and not, direct and ring,
    zigzag, each backend) in a CUDA graph (`torch.cuda.graph`): warmed up
    eagerly, captured, replayed twice on fresh random data copied into its
    static inputs with its outputs poisoned, then run eagerly again, each
    against PyTorch in fp32."""
    w, r, dev = group.world_size, group.rank, group.device
    bf16 = torch.bfloat16
    for name, cls, extra in OPS:
        opts = options(w, extra, cache)
        try:
            op = cls(group, **opts)
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(f"{name} in a CUDA graph", False, f"setup: {type(e).__name__}: {e}")
            continue
        m, k, n = opts["m"], opts["k"], opts["n"]
        rows = m // w
        if cls is ops.AllGatherMatmul:
            a, b = torch.empty((rows, k), dtype=bf16, device=dev), torch.empty((k, n), dtype=bf16,
                                                                                device=dev)
            out = torch.empty((m, n), dtype=bf16, device=dev)

            def case(s, a=a, b=b, out=out, op=op, rows=rows, k=k, n=n):
                data = inputs(s, w, [(rows, k)]) + inputs(s + 1, 1, [(k, n)])
                a.copy_(data[r][0])
                b.copy_(data[w][0])
                out.fill_(float("nan"))
                op.shard.fill_(float("nan"))
                want = torch.cat([d[0] for d in data[:w]]).float() @ data[w][0].float()
                return (lambda: op(b, a_shard=a, out=out)), (lambda got: (got, want))
        else:
            a, b = torch.empty((m, k), dtype=bf16, device=dev), torch.empty((k, n), dtype=bf16,
                                                                            device=dev)

            def case(s, a=a, b=b, op=op, cls=cls, rows=rows, m=m, k=k, n=n):
                data = inputs(s, w, [(m, k), (k, n)])
                a.copy_(data[r][0])
                b.copy_(data[r][1])
                op.result.fill_(float("nan"))
                op.partials.fill_(float("nan"))
                want = sum(x.float() @ y.float() for x, y in data)
                if cls is ops.MatmulReduceScatter:
                    want = want[r * rows:(r + 1) * rows]
                return (lambda: op(a, b)), (lambda got: (got, want))
        graph_case(group, f"{name} in a CUDA graph", op.kernel, case,
                   seed + zlib.crc32(name.encode()) % 997, report)
    seq = TOKENS * w
    for variant in GRAPH_ATTENTION:
        name = attention_name(variant)
        causal, _, _, zigzag, _, _, _ = attention_variant(variant)
        try:
            op = ops.AllGatherAttention(group, heads=HEADS, **attention_options(w, variant, cache))
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(f"{name} in a CUDA graph", False, f"setup: {type(e).__name__}: {e}")
            continue
        own = own_rows(w, r, zigzag)
        q_in, k_in, v_in = (torch.empty((TOKENS, h * HEAD_DIM), dtype=bf16, device=dev)
                            for h in (HEADS, KV_HEADS, KV_HEADS))
        out = torch.empty((TOKENS, HEADS * HEAD_DIM), dtype=bf16, device=dev)

        def case(s, op=op, q_in=q_in, k_in=k_in, v_in=v_in, out=out, own=own, causal=causal):
            g = torch.Generator(device="cpu").manual_seed(s)
            q, k, v = (torch.randn((seq, h * HEAD_DIM), generator=g).to(bf16)
                       for h in (HEADS, KV_HEADS, KV_HEADS))
            for given, whole in ((q_in, q), (k_in, k), (v_in, v)):
                given.copy_(whole[own])
            for buffer in (op.k, op.v, out):
                buffer.fill_(float("nan"))
            want = attention_reference(q, k, v, causal).reshape(seq, -1)[own]
            return ((lambda: op(q_in, k_shard=k_in, v_shard=v_in, out=out)),
                    (lambda got: (got, want)))
        graph_case(group, f"{name} in a CUDA graph", op.kernel, case,
                   seed + zlib.crc32(name.encode()) % 997, report)
    check_capture_before_launch_refused(group, cache, report)


def check_gemm(group, name, cls, opts, seed, report):
    """One GEMM operator (C = A @ B over opts' m x k x n), twice on fresh
    random data with poisoned outputs, against PyTorch in fp32."""
    w, r, dev = group.world_size, group.rank, group.device
    m, k, n = opts["m"], opts["k"], opts["n"]
    rows = m // w
    try:
        op = cls(group, **opts)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        report(name, False, f"setup: {type(e).__name__}: {e}")
        return
    for launch in range(2):
        s = seed + 1000 * launch + zlib.crc32(name.encode()) % 997
        if cls is ops.AllGatherMatmul:
            data = inputs(s, w, [(rows, k)]) + inputs(s + 1, 1, [(k, n)])
            shards, b = [d[0] for d in data[:w]], data[w][0].to(dev)
            want = torch.cat(shards).float() @ b.float().cpu()
            out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=dev)
            op.shard.fill_(float("nan"))
            got = op(b, a_shard=shards[r].to(dev), out=out)
        else:
            data = inputs(s, w, [(m, k), (k, n)])
            want = sum(a.float() @ b.float() for a, b in data)
            if cls is ops.MatmulReduceScatter:
                want = want[r * rows:(r + 1) * rows]
            op.result.fill_(float("nan"))
            op.partials.fill_(float("nan"))
            got = op(data[r][0].to(dev), data[r][1].to(dev))
        group.wait(60)
        err = rel_error(got.cpu(), want)
        report(f"{name} (launch {launch + 1})", err < TOLERANCE, f"rel err {err:.2e}")


def check_attention(group, cache, seed, report):
    """AllGatherAttention, causal or not, on each transport, in each layout,
    twice on fresh random data with the output and the gathered K and V
    poisoned, against PyTorch's attention over the whole sequence in fp32."""
    w, r, dev = group.world_size, group.rank, group.device
    seq = TOKENS * w
    for variant in ATTENTION:
        name = attention_name(variant)
        causal, _, _, zigzag, _, _, layout = attention_variant(variant)
        try:
            op = ops.AllGatherAttention(group, heads=HEADS,
                                        **attention_options(w, variant, cache))
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(name, False, f"setup: {type(e).__name__}: {e}")
            continue
        # bhsd: [heads, tokens, head_dim] of the [tokens, heads * head_dim] data.
        to_layout = ((lambda x: x) if layout == "bshd" else
                     (lambda x: x.view(x.shape[0], -1, HEAD_DIM).transpose(0, 1).contiguous()))
        from_layout = ((lambda x: x) if layout == "bshd" else
                       (lambda x: x.transpose(0, 1).reshape(x.shape[1], -1)))
        for launch in range(2):
            s = seed + 1000 * launch + zlib.crc32(name.encode()) % 997
            g = torch.Generator(device="cpu").manual_seed(s)
            q, k, v = (torch.randn((seq, h * HEAD_DIM), generator=g).to(torch.bfloat16)
                       for h in (HEADS, KV_HEADS, KV_HEADS))
            own = own_rows(w, r, zigzag)
            for buffer in (op.k, op.v):
                buffer.fill_(float("nan"))
            out = to_layout(torch.full((TOKENS, HEADS * HEAD_DIM), float("nan"),
                                       dtype=torch.bfloat16, device=dev))
            got = op(to_layout(q[own].to(dev)), k_shard=to_layout(k[own].to(dev)),
                     v_shard=to_layout(v[own].to(dev)), out=out)
            group.wait(60)
            want = attention_reference(q, k, v, causal).reshape(seq, -1)[own]
            err = rel_error(from_layout(got).cpu(), want)
            report(f"{name} (launch {launch + 1})", err < TOLERANCE, f"rel err {err:.2e}")
    check_tutorial_causal_refused(group, cache, report)
    check_heads_past_buffer_refused(group, cache, report)
    check_slow_reader(group, cache, seed, report)


def check_sdpa(group, seed, report):
    """synco.ops.all_gather_sdpa (the functional operator, SDPA's layout
    with batch 1), causal or not, against SDPA over the whole sequence."""
    w, r, dev = group.world_size, group.rank, group.device
    seq, own = TOKENS * w, slice(r * TOKENS, (r + 1) * TOKENS)
    for causal in (False, True):
        name = f"all_gather_sdpa {'causal' if causal else 'full'}"

        def launch(g, causal=causal):
            q, k, v = (torch.randn((1, h, seq, HEAD_DIM), generator=g).to(torch.bfloat16)
                       for h in (HEADS, KV_HEADS, KV_HEADS))
            for op in ops._OPERATORS.values():  # the gathered K and V of earlier calls
                if isinstance(op, ops.AllGatherAttention):
                    op.k.fill_(float("nan"))
                    op.v.fill_(float("nan"))
            got = synco.ops.all_gather_sdpa(q[:, :, own].to(dev), k[:, :, own].to(dev),
                                            v[:, :, own].to(dev), group, is_causal=causal)
            want = torch.nn.functional.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), is_causal=causal, enable_gqa=True)[:, :, own]
            return got, want

        try:
            check_twice(group, name, seed, report, launch)
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(name, False, f"{type(e).__name__}: {e}")


def check_tutorial_causal_refused(group, cache, report):
    """The tutorial kernel reads each head's rows at `head * N_CTX_KV`, so
    the plan fixes N_CTX_KV to the whole sequence; causal attention with
    contiguous shards passes a rank's own prefix there (the queries are
    the last N_CTX_Q of N_CTX_KV). Refused at launch, naming the argument,
    before any work is issued, on every rank but the last (whose prefix is
    the whole sequence: it does not launch, its peers would never come)."""
    variant = TUTORIAL_CAUSAL
    name = f"{attention_name(variant)} refused at launch"
    w, r, dev = group.world_size, group.rank, group.device
    op = ops.AllGatherAttention(group, heads=HEADS, **attention_options(w, variant, cache))
    if r == w - 1:
        return
    try:
        op(torch.zeros((HEADS, TOKENS, HEAD_DIM), dtype=torch.bfloat16, device=dev))
        refused = None
    except Exception as e:  # noqa: BLE001 - what was raised is the check
        refused = f"{type(e).__name__}: {e}"
    report(name, refused is not None and "N_CTX_KV" in refused, refused or "it launched")


#: A kernel whose programs each read one head's [tokens, head_dim] of K
#: and V through a descriptor made at the head's address (bhsd layout).
HEAD_OFFSETS = (False, "copy_engine", "direct", False, 2, "descriptors", "bhsd")


def check_heads_past_buffer_refused(group, cache, report):
    """A launch whose arguments make programs read heads the plan's K does
    not have (H_KV given as twice the KV heads: query head h then reads
    KV head h, up to HEADS - 1, of a buffer of KV_HEADS) is refused
    before any work is issued, naming a program and the buffer."""
    w, dev = group.world_size, group.device
    op = ops.AllGatherAttention(group, heads=HEADS,
                                **attention_options(w, HEAD_OFFSETS, cache))
    epoch = op.kernel.epoch
    q = torch.zeros((HEADS, TOKENS, HEAD_DIM), dtype=torch.bfloat16, device=dev)
    out = torch.empty_like(q)
    q_strides = op._strides(TOKENS, HEADS)
    kv_strides = op._strides(op.seq, KV_HEADS)
    try:
        op.kernel((TOKENS // op.config["BLOCK_M"], HEADS), q, op.k, op.v, out, 0.125,
                  *q_strides, *kv_strides, *kv_strides, *q_strides, HEADS, 2 * KV_HEADS,
                  TOKENS, op.seq)
        refused = None
    except synco.LaunchError as e:
        refused = str(e)
    report("refuses a launch whose heads go past the plan's K",
           refused is not None and "in @K is" in refused
           and "do not match the plan's buffer" in refused and op.kernel.epoch == epoch,
           refused or "it launched")


def check_slow_reader(group, cache, seed, report):
    """Rank 1 stalls on the host between signalling its start and issuing
    its work (`stall_issue`), while every other rank overwrites its own
    block of the gathered K and V with NaN right after its launch returns.
    With ranks sharing a GPU, rank 1's copies of those blocks run on its
    own stream after the stall: each rank's overwrite must wait for them
    (rank 1's output stays right), twice, on fresh random data."""
    w, r, dev = group.world_size, group.rank, group.device
    variant = ATTENTION[0]  # full, copy engine, direct
    name = f"{attention_name(variant)} with rank 1 stalled mid-launch"
    op = ops.AllGatherAttention(group, heads=HEADS, **attention_options(w, variant, cache))
    seq, own = TOKENS * w, slice(r * TOKENS, (r + 1) * TOKENS)
    if r == 1:
        group._node.inject_fault("stall_issue")
    try:
        for launch in range(2):
            g = torch.Generator(device="cpu").manual_seed(seed + 7919 * (launch + 1))
            q, k, v = (torch.randn((seq, h * HEAD_DIM), generator=g).to(torch.bfloat16)
                       for h in (HEADS, KV_HEADS, KV_HEADS))
            got = op(q[own].to(dev), k_shard=k[own].to(dev), v_shard=v[own].to(dev))
            if r != 1:
                op.k[own].fill_(float("nan"))
                op.v[own].fill_(float("nan"))
            group.wait(60)
            want = attention_reference(q, k, v, False).reshape(seq, -1)[own]
            err = rel_error(got.cpu(), want)
            report(f"{name} (launch {launch + 1})", err < TOLERANCE, f"rel err {err:.2e}")
    finally:
        group._node.inject_fault("none")


def check_ulysses(group, cache, seed, report):
    """UlyssesAttention on each transport and chunk count, causal or not,
    and with its output re-sharded back by tokens in the same kernel
    (`reshard_out`), twice each on fresh random data with the head-sharded
    buffers and the outputs poisoned, against PyTorch's attention over the
    whole sequence (fp32): this rank's heads of every token, or with
    `reshard_out` this rank's tokens of every head."""
    w, r, dev = group.world_size, group.rank, group.device
    if not reshards(w):
        print(f"rank {r}: skipped Ulysses attention: {ULYSSES_HEADS} heads do not divide by {w}")
        return
    seq, d = TOKENS * w, HEAD_DIM
    heads = ULYSSES_HEADS // w
    cases = [(variant, False, {}, "") for variant in ULYSSES] \
        + [((causal, backend, 1), True, {"out_chunks": out_chunks, "out_backend": out_backend,
                                         **style_kernel(*style)},
            ("" if out_chunks == 1 else f" out_chunks={out_chunks}")
            + ("" if out_backend == "copy_engine" else f" out_backend={out_backend}")
            + style_suffix(*style))
           for causal, backend, out_chunks, out_backend, *style in ULYSSES_OUT] \
        + [((causal, backend, 1), False, {"per_head": True, **style_kernel(*style)},
            " per head" + style_suffix(*style))
           for causal, backend, *style in ULYSSES_PER_HEAD]
    if w == IMPORTED_WORLD:
        plan = (Path(cache) / "imported" / "ulysses.mlir").read_text()
        cases.append((IMPORTED_ULYSSES, True, {"config": IMPORTED_ULYSSES_CONFIG, "plan": plan},
                      " imported from ulysses.mlir"))
    for variant, reshard_out, overrides, imported in cases:
        name = ulysses_name(variant) + (" in and out" if reshard_out else "") + imported
        try:
            op = ops.UlyssesAttention(group, **{**ulysses_options(w, variant, cache,
                                                                  reshard_out=reshard_out),
                                                **overrides})
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(name, False, f"setup: {type(e).__name__}: {e}")
            continue
        for launch in range(2):
            q, k, v = ulysses_inputs(seed, name, launch, seq)
            own = slice(r * TOKENS, (r + 1) * TOKENS)
            for buffer in (*op.by_heads.values(), *op.by_tokens.values()):
                buffer.fill_(float("nan"))
            out = None if reshard_out else torch.full((seq, heads * d), float("nan"),
                                                      dtype=torch.bfloat16, device=dev)
            got = op(q[own].to(dev), k[own].to(dev), v[own].to(dev), out=out)
            group.wait(60)
            want = attention_reference(q, k, v, variant[0])
            if reshard_out:
                want = want.reshape(seq, -1)[own]
            else:
                want = want[:, r * heads:(r + 1) * heads].reshape(seq, heads * d)
            err = rel_error(got.cpu(), want)
            report(f"{name} (launch {launch + 1})", err < TOLERANCE, f"rel err {err:.2e}")


def ulysses_inputs(seed, name, launch, seq):
    """Fresh random Q, K and V of check `name`'s launch: [seq, heads *
    head_dim], [seq, kv_heads * head_dim] twice, bf16, on the CPU."""
    g = torch.Generator(device="cpu").manual_seed(
        seed + 1000 * launch + zlib.crc32(name.encode()) % 997)
    return tuple(torch.randn((seq, h * HEAD_DIM), generator=g).to(torch.bfloat16)
                 for h in (ULYSSES_HEADS, ULYSSES_KV_HEADS, ULYSSES_KV_HEADS))


def attention_reference(q, k, v, causal):
    """SDPA over the whole sequence of q [seq, heads * d], k, v [seq,
    kv_heads * d] (fp32): [seq, heads, d]."""
    seq, d = q.shape[0], HEAD_DIM
    split = lambda x: x.float().view(seq, -1, d).transpose(0, 1)[None]  # noqa: E731
    return torch.nn.functional.scaled_dot_product_attention(
        split(q), split(k), split(v), is_causal=causal, enable_gqa=True)[0].transpose(0, 1)


def check_attention_all_to_all(group, cache, seed, report):
    """Attention + all-to-all alone (`UlyssesAttention(reshard_in=False)`)
    on each output transport and chunk count, causal or not, twice each on
    fresh random data with the outputs poisoned: from this rank's heads of
    every token, this rank's tokens of every head, against SDPA over the
    whole sequence (fp32)."""
    w, r, dev = group.world_size, group.rank, group.device
    if not reshards(w):
        print(f"rank {r}: skipped attention + all-to-all: {ULYSSES_HEADS} heads do not divide "
              f"by {w}")
        return
    seq, d = TOKENS * w, HEAD_DIM
    own = slice(r * TOKENS, (r + 1) * TOKENS)
    mine = lambda x, h: x[:, r * h // w * d:(r + 1) * h // w * d]  # noqa: E731
    for causal, out_chunks, out_backend, *style in ATTENTION_A2A:
        name = attention_a2a_name(causal, out_chunks, out_backend, *style)
        try:
            op = ops.UlyssesAttention(group, **ulysses_options(
                w, (causal, "copy_engine", 1), cache, reshard_out=True),
                out_chunks=out_chunks, out_backend=out_backend, reshard_in=False,
                **style_kernel(*style))
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(name, False, f"setup: {type(e).__name__}: {e}")
            continue
        for launch in range(2):
            q, k, v = ulysses_inputs(seed, name, launch, seq)
            for buffer in (*op.by_heads.values(), *op.by_tokens.values()):
                buffer.fill_(float("nan"))
            got = op(*(mine(x, h).contiguous().to(dev) for x, h in
                       ((q, ULYSSES_HEADS), (k, ULYSSES_KV_HEADS), (v, ULYSSES_KV_HEADS))))
            group.wait(60)
            want = attention_reference(q, k, v, causal).reshape(seq, -1)[own]
            err = rel_error(got.cpu(), want)
            report(f"{name} (launch {launch + 1})", err < TOLERANCE, f"rel err {err:.2e}")


def check_functional_reshards(group, seed, report):
    """The functional re-sharding operators (torch.ops.synco.*): GEMM +
    all-to-all + GEMM as two fused kernels (tokens to columns, then back
    inside the second GEMM), against this rank's tokens of the two
    products in fp32 (the first rounded to bf16, as it is stored); and
    Ulysses attention, by heads and re-sharded back, against SDPA."""
    w, r, dev = group.world_size, group.rank, group.device
    m, k, n, n2 = CHAIN

    def chain(g):
        a = torch.randn((m * w, k), generator=g).to(torch.bfloat16)
        w1 = (torch.randn((k, n), generator=g) / k ** 0.5).to(torch.bfloat16)
        w2 = (torch.randn((n, n2), generator=g) / n ** 0.5).to(torch.bfloat16)
        mine = a[r * m:(r + 1) * m]
        heads = synco.ops.matmul_all_to_all(mine.to(dev), w1.to(dev), group)
        got = synco.ops.all_to_all_matmul(heads, w2.to(dev), group)
        hidden = (mine.float() @ w1.float()).to(torch.bfloat16).float()
        return got, hidden @ w2.float()

    try:
        check_twice(group, "functional matmul_all_to_all then all_to_all_matmul", seed, report,
                    chain)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        report("functional matmul_all_to_all then all_to_all_matmul", False,
               f"{type(e).__name__}: {e}")
    seq, d = TOKENS * w, HEAD_DIM
    own = slice(r * TOKENS, (r + 1) * TOKENS)
    for reshard_out in (False, True):
        def attention(g, reshard_out=reshard_out):
            q, kk, v = (torch.randn((seq, h * d), generator=g).to(torch.bfloat16)
                        for h in (ULYSSES_HEADS, ULYSSES_KV_HEADS, ULYSSES_KV_HEADS))
            got = synco.ops.ulysses_attention(q[own].to(dev), kk[own].to(dev), v[own].to(dev),
                                              group, head_dim=d, causal=True,
                                              reshard_out=reshard_out)
            o = attention_reference(q, kk, v, True)
            if reshard_out:
                return got, o.reshape(seq, ULYSSES_HEADS * d)[own]
            mine = slice(r * ULYSSES_HEADS // w, (r + 1) * ULYSSES_HEADS // w)
            return got, o[:, mine].reshape(seq, ULYSSES_HEADS // w * d)

        name = f"functional ulysses_attention reshard_out={reshard_out}"
        try:
            check_twice(group, name, seed, report, attention)
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(name, False, f"{type(e).__name__}: {e}")

    def attention_back(g):
        q, kk, v = (torch.randn((seq, h * d), generator=g).to(torch.bfloat16)
                    for h in (ULYSSES_HEADS, ULYSSES_KV_HEADS, ULYSSES_KV_HEADS))
        heads = [x[:, r * h // w * d:(r + 1) * h // w * d].contiguous().to(dev)
                 for x, h in ((q, ULYSSES_HEADS), (kk, ULYSSES_KV_HEADS), (v, ULYSSES_KV_HEADS))]
        got = synco.ops.attention_all_to_all(*heads, group, head_dim=d, causal=True)
        return got, attention_reference(q, kk, v, True).reshape(seq, -1)[own]

    name = "functional attention_all_to_all"
    try:
        check_twice(group, name, seed, report, attention_back)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        report(name, False, f"{type(e).__name__}: {e}")


def check_all_to_all_matmul(group, cache, seed, report):
    """AllToAllMatmul on each transport and chunk count (twice, fresh random
    data, outputs and the re-sharded A poisoned) against PyTorch's product
    of this rank's tokens in fp32; then the Ulysses layer, attention in and
    out: UlyssesAttention writing straight into the projection's input."""
    w, r, dev = group.world_size, group.rank, group.device
    if not reshards(w):
        print(f"rank {r}: skipped the all-to-all GEMMs: {A2A_N} columns do not divide by {w}")
        return
    m, k, n = TOKENS, ULYSSES_HEADS * HEAD_DIM, A2A_N
    cols = slice(r * k // w, (r + 1) * k // w)
    for variant in A2A_GEMM:
        name = f"all_to_all_matmul {variant[0]} chunks={variant[1]}"
        try:
            op = ops.AllToAllMatmul(group, **a2a_gemm_options(w, variant, cache))
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            report(name, False, f"setup: {type(e).__name__}: {e}")
            continue
        def launch(g, op=op):
            x = torch.randn((m * w, k), generator=g).to(torch.bfloat16)
            b = torch.randn((k, n), generator=g).to(torch.bfloat16)
            op.by_rows.fill_(float("nan"))
            out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=dev)
            got = op(x[:, cols].contiguous().to(dev), b.to(dev), out=out)
            return got, x[r * m:(r + 1) * m].float() @ b.float()

        check_twice(group, name, seed, report, launch)
    # GEMM + all-to-all, into every token of this rank's columns.
    for backend, chunks in gemm_a2a_variants(w):
        check_gemm_all_to_all(group, cache, seed, report, chunks, backend)
    for backend in ("copy_engine", "ldst"):
        check_gemm_all_to_all(group, cache, seed, report, 1, backend, KERNEL_DESCRIPTORS)
    check_functional_reshards(group, seed, report)
    # The layer: Ulysses attention (tokens -> heads), then the output
    # projection (heads -> tokens), both fused, no copy in between.
    name = "ulysses layer copy_engine"
    try:
        attention = ops.UlyssesAttention(group, **ulysses_options(w, (True, "copy_engine", 1),
                                                                  cache))
        projection = ops.AllToAllMatmul(group, **a2a_gemm_options(w, ("copy_engine", 1), cache))
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        report(name, False, f"setup: {type(e).__name__}: {e}")
        return
    g = torch.Generator(device="cpu").manual_seed(seed + zlib.crc32(name.encode()) % 997)
    seq, d = m * w, HEAD_DIM
    q, kk, v = (torch.randn((seq, h * d), generator=g).to(torch.bfloat16)
                for h in (ULYSSES_HEADS, ULYSSES_KV_HEADS, ULYSSES_KV_HEADS))
    wo = (torch.randn((k, n), generator=g) / k ** 0.5).to(torch.bfloat16)
    own = slice(r * m, (r + 1) * m)
    projection.by_columns.fill_(float("nan"))
    attention(q[own].to(dev), kk[own].to(dev), v[own].to(dev), out=projection.by_columns)
    got = projection(projection.by_columns, wo.to(dev))
    group.wait(60)
    split = lambda x, h: x.float().view(seq, h, d).transpose(0, 1)[None]  # noqa: E731
    o = torch.nn.functional.scaled_dot_product_attention(
        split(q, ULYSSES_HEADS), split(kk, ULYSSES_KV_HEADS), split(v, ULYSSES_KV_HEADS),
        is_causal=True, enable_gqa=True)[0].transpose(0, 1).reshape(seq, k)
    want = o[own] @ wo.float()
    err = rel_error(got.cpu(), want)
    report(name, err < TOLERANCE, f"rel err {err:.2e}")


def check_twice(group, name, seed, report, launch):
    """Two launches of `name`, each on fresh random data drawn by
    `launch(generator)`, which poisons the outputs, launches, and returns
    (what the launch computed, PyTorch's fp32 result); each reported."""
    for index in range(2):
        g = torch.Generator(device="cpu").manual_seed(seed + 1000 * index
                                                      + zlib.crc32(name.encode()) % 997)
        got, want = launch(g)
        group.wait(60)
        err = rel_error(got.cpu(), want)
        report(f"{name} (launch {index + 1})", err < TOLERANCE, f"rel err {err:.2e}")


def check_gemm_all_to_all(group, cache, seed, report, chunks, backend, extra=None):
    """MatmulAllToAll moving each rank's columns in `chunks` chunks on
    `backend` (`extra`: other options, a kernel), twice on fresh random
    data with the re-sharded output poisoned, against PyTorch's product in
    fp32, this rank's columns of every token."""
    w, r, dev = group.world_size, group.rank, group.device
    m, k, n = TOKENS, ULYSSES_HEADS * HEAD_DIM, A2A_N
    name = f"matmul_all_to_all {backend} chunks={chunks}"
    if extra:
        name += " (descriptors made in the kernel)"
    try:
        op = ops.MatmulAllToAll(group, **gemm_a2a_options(cache, chunks, backend), **(extra or {}))
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        report(name, False, f"setup: {type(e).__name__}: {e}")
        return
    def launch(g):
        a = torch.randn((m * w, k), generator=g).to(torch.bfloat16)
        b = torch.randn((k, n), generator=g).to(torch.bfloat16)
        op.by_columns.fill_(float("nan"))
        got = op(a[r * m:(r + 1) * m].to(dev), b.to(dev))
        return got, (a.float() @ b.float())[:, r * n // w:(r + 1) * n // w]

    check_twice(group, name, seed, report, launch)


def check_refusals(group, cache, report):
    """Launches refused before any work, each naming what is wrong."""
    w, dev = group.world_size, group.device
    op = ops.AllGatherMatmul(group, **options(w, OPS[0][2], cache))
    b = torch.zeros((K, N), dtype=torch.bfloat16, device=dev)
    out = torch.empty((M_PER_RANK * w, N), dtype=torch.bfloat16, device=dev)
    # One launch first: later calls of an operator check its operands, not
    # its own buffers again (`_GemmOperator._launch`).
    op(b, out=out)
    group.wait(60)
    epoch = op.kernel.epoch
    not_symmetric = torch.empty_like(op.gathered)
    cases = [
        ("a tensor outside the heap", lambda: op.kernel(op.grid, not_symmetric, b, out,
                                                         *op_scalars(op)), "not symmetric"),
        ("a wrong dtype", lambda: op(b.float()), "torch.float32"),
        ("a CPU tensor", lambda: op.kernel(op.grid, op.gathered, b.cpu(), out, *op_scalars(op)),
         "cpu"),
        ("a wrong shape", lambda: op(b[:, :256]), "shape"),
        ("a transposed operand", lambda: op.kernel(op.grid, op.gathered, b.t(), out,
                                                   *op_scalars(op)), "contiguous"),
        ("a wrong M", lambda: op.kernel(op.grid, op.gathered, b, out, 2 * op.m, op.n, op.k,
                                        op.k, op.n, op.n), "compile for the shape"),
        ("an operand on the CPU", lambda: op(b.cpu(), out=out), "is on cpu"),
        ("a transposed operand (K = N)", lambda: op(b.t(), out=out), "not contiguous"),
        ("an output on the CPU", lambda: op(b, out=out.cpu()), "is on cpu"),
    ]
    for what, call, needle in cases:
        try:
            call()
            report(f"refuses {what}", False, "launched")
        except synco.LaunchError as e:
            report(f"refuses {what}", needle in str(e), str(e).splitlines()[0][:160])
    other_world = 2 if w != 2 else 4
    try:
        group.load(ops.AllGatherMatmul.compile(other_world, **options(other_world, OPS[0][2],
                                                                       cache)))
        report("refuses a plan for another world size", False, "loaded")
    except synco.LaunchError as e:
        report("refuses a plan for another world size", f"for {other_world} ranks" in str(e),
               str(e))
    report("refused launches issued nothing", op.kernel.epoch == epoch,
           f"epoch {epoch} -> {op.kernel.epoch}")


def op_scalars(op):
    return op.m, op.n, op.k, op.k, op.n, op.n


def host_time(group, cache, report):
    """Median host time of one call (issue only), over 200 calls."""
    w, dev = group.world_size, group.device
    op = ops.AllGatherMatmul(group, **options(w, OPS[0][2], cache))
    b = torch.randn((K, N), device=dev).to(torch.bfloat16)
    out = torch.empty((M_PER_RANK * w, N), dtype=torch.bfloat16, device=dev)
    times = []
    for _ in range(220):
        start = time.perf_counter()
        op(b, out=out)
        times.append(time.perf_counter() - start)
        group.wait(60)
    us = statistics.median(times[20:]) * 1e6
    kernel_us = []
    for _ in range(200):
        start = time.perf_counter()
        op.kernel(op.grid, op.gathered, b, out, *op_scalars(op))
        kernel_us.append(time.perf_counter() - start)
        group.wait(60)
    report("host time per call", True, f"AllGatherMatmul {us:.1f} us, Kernel.__call__ "
           f"{statistics.median(kernel_us[20:]) * 1e6:.1f} us (median of 200, issue only)")


#: What `check` runs, in order, by the name `--only` takes.
CHECKS = {
    "ops": check_ops,
    "imported": check_imported,
    "fx": lambda group, cache, seed, report: check_fx(group, seed, report),
    "attention": check_attention,
    "sdpa": lambda group, cache, seed, report: check_sdpa(group, seed, report),
    "ulysses": check_ulysses,
    "attention_all_to_all": check_attention_all_to_all,
    "all_to_all_matmul": check_all_to_all_matmul,
    "refusals": lambda group, cache, seed, report: check_refusals(group, cache, report),
    "graphs": check_graphs,
    "host_time": lambda group, cache, seed, report: host_time(group, cache, report),
}
#: The environment variable that carries `--only` to the ranks.
ONLY_ENV = "SYNCO_RANKS_ONLY"


def worker(rank, world, mode, cache, port, fault, results):
    # The functional operators (torch.ops.synco.*) compile into, or find
    # their kernels in, the default cache.
    os.environ["SYNCO_CACHE_DIR"] = os.path.abspath(cache)
    # A rank that hangs prints where, before the parent gives up on it.
    faulthandler.dump_traceback_later(WORKER_TIMEOUT[mode] - 10, exit=True)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    lines = []

    def report(name, ok, detail=""):
        lines.append((name, ok, detail))
        print(f"rank {rank}: {'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)

    try:
        group = synco.Group(heap_bytes=256 << 20,
                            peer_timeout=PEER_TIMEOUT if mode == "fault" else 10.0)
        seed = group._all_gather(int(time.time_ns() % 1_000_000_007) if rank == 0 else 0)[0]
        if mode == "check":
            only = [name for name in os.environ.get(ONLY_ENV, "").split(",") if name]
            for name, check in CHECKS.items():
                if not only or name in only:
                    check(group, cache, seed, report)
        elif mode == "slow-reader":
            check_slow_reader(group, cache, seed, report)
        else:
            fault_test(group, cache, fault, report)
    except Exception:  # noqa: BLE001 - any error fails the run
        report("no exception", False, traceback.format_exc())
    results.put((rank, lines))
    results.close()
    results.join_thread()
    sys.stdout.flush()
    os._exit(0)  # (a survivor's streams may still wait for the dead peer)


#: The faults on rank 1, and what rank 0's watchdog must name.
FAULTS = {
    # The process exits after a first launch together: rank 0's second
    # launch waits on its stream for rank 1's start (its kernel reaches
    # into rank 1's heap); the watchdog reports the stuck wait.
    "killed": "waiting for rank 1 to start the launch in epoch 2",
    # Alive, never launches: rank 0's first launch waits on the host for
    # rank 1's start and raises from the launch itself.
    "absent": "waiting for rank 1 to start the launch in epoch 1",
    # Launches in step (its signals) but issues neither copies nor kernel:
    # rank 0's tiles wait for rank 1's partials until they time out.
    "withheld": "rank 0 timed out waiting for chunk",
    # The process exits after the launch was captured in a CUDA graph and
    # replayed once together: rank 0's next replay waits on its stream at
    # the barrier every rank enters.
    "killed_replay": "waiting for rank 1 to enter the replayed launch in epoch 1",
    # Ring attention over two slots (2 launches a call): the process exits
    # after a first call together; rank 0's next call's first launch
    # pushes its block into rank 1's slot, which waits on its stream for
    # rank 1's start of that launch (epoch 3).
    "killed_slots": "waiting for rank 1 to start the launch in epoch 3",
}
PEER_TIMEOUT = 5.0


def fault_test(group, cache, fault, report):
    """Rank 1 fails as `fault` says; rank 0 must get `WatchdogError`
    within the peer timeout (the kernels' own 10 s for a chunk), naming
    what it waited for, and launch nothing after it."""
    if fault == "killed_slots":
        variant = (False, "copy_engine", "ring_slots", False, 1)
        op = ops.AllGatherAttention(group, heads=HEADS,
                                    **attention_options(group.world_size, variant, cache))
        q = torch.randn((TOKENS, HEADS * HEAD_DIM), device=group.device).to(torch.bfloat16)
        launch = lambda: op(q)  # noqa: E731
    else:
        [extra] = [extra for name, _, extra in OPS if name == "matmul_reduce_scatter"]
        op = ops.MatmulReduceScatter(group, **options(group.world_size, extra, cache))
        a = torch.randn((op.m, op.k), device=group.device).to(torch.bfloat16)
        b = torch.randn((op.k, op.n), device=group.device).to(torch.bfloat16)
        launch = lambda: op(a, b)  # noqa: E731
    if fault in ("killed", "killed_slots"):
        launch()
        group.wait(60)
    if fault == "killed_replay":
        op(a, b)
        group.wait(60)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            op(a, b)
        graph.replay()
        group.wait(60)
        launch = graph.replay
    torch.cuda.synchronize()
    dist.barrier()
    if group.rank == 1:
        if fault in ("killed", "killed_replay", "killed_slots"):
            os._exit(17)
        if fault == "absent":
            time.sleep(3 * PEER_TIMEOUT)
            report("peer stayed away", True)
            return
        group._node.inject_fault("withhold_work")
        op(a, b)
        try:
            group.wait(3 * PEER_TIMEOUT)
            outcome = "finished"
        except synco.WatchdogError as e:  # (it waits for rank 0's kernel, which times out)
            outcome = str(e)
        report("the withholding peer launched", True, outcome)
        return
    start = time.perf_counter()
    try:
        launch()
        group.wait(3 * PEER_TIMEOUT)
        report(f"watchdog after a {fault} peer", False, "the launch finished")
    except synco.WatchdogError as e:
        seconds = time.perf_counter() - start
        text = str(e)
        limit = (10.0 if fault == "withheld" else PEER_TIMEOUT) + 2.0
        report(f"watchdog after a {fault} peer", FAULTS[fault] in text and seconds < limit,
               f"after {seconds:.1f} s (limit {limit:.0f} s): {text}")
    try:
        (op(a, b) if fault == "killed_replay" else launch())
        report("no launch after the watchdog's error", False, "launched")
    except synco.WatchdogError as e:
        report("no launch after the watchdog's error", True, str(e)[:120])


def spawn(world, mode, cache, fault=None):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=worker, args=(r, world, mode, cache, port, fault, results))
             for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.time() + WORKER_TIMEOUT[mode]
    # Read the reports while the ranks run: a rank's process ends only once
    # its report is through the queue's pipe, so joining first would hang on
    # reports longer than the pipe holds (it did, with W = 4).
    got = {}
    while any(p.is_alive() for p in procs) and time.time() < deadline:
        try:
            rank, lines = results.get(timeout=1)
            got[rank] = lines
        except queue.Empty:
            pass
    for p in procs:
        p.join(max(1, deadline - time.time()))
    while not results.empty():
        rank, lines = results.get()
        got[rank] = lines
    failed = sum(1 for lines in got.values() for _, ok, _ in lines if not ok)
    expected = [0] if mode == "fault" else range(world)
    for rank in expected:
        if rank not in got:
            print(f"FAIL rank {rank} reported nothing (exit code {procs[rank].exitcode})")
            failed += 1
    for p in procs:
        if p.is_alive():
            p.kill()
    passed = sum(ok for lines in got.values() for _, ok, _ in lines)
    print(f"ranks.py {mode} W={world}{' ' + fault if fault else ''}: {passed} passed, "
          f"{failed} failed")
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["build", "check", "fault", "slow-reader"])
    parser.add_argument("--cache", required=True)
    parser.add_argument("--worlds", default="2,4")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--fault", choices=sorted(FAULTS), default="killed")
    parser.add_argument("--only", default="",
                        help="check: these checks only, comma-separated (of: "
                             + ", ".join(CHECKS) + ")")
    args = parser.parse_args()
    unknown = [name for name in args.only.split(",") if name and name not in CHECKS]
    if unknown:
        parser.error(f"--only: no check named {', '.join(unknown)}")
    os.environ[ONLY_ENV] = args.only
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if args.mode == "build":
        return build(args)
    if args.mode in ("check", "slow-reader"):
        sys.exit(1 if spawn(args.world, args.mode, args.cache) else 0)
    sys.exit(1 if spawn(2, "fault", args.cache, fault=args.fault) else 0)


if __name__ == "__main__":
    main()
