"""Context-parallel attention with W ranks, one process per rank: Synco's
fused all-gather + attention against PyTorch, in one run.

    python benches/attention/bench.py --compile-only --world W --cache DIR   # any machine
    python benches/attention/bench.py --world W --cache DIR --out FILE.json  # the GPU machine

Each rank holds seq / W tokens of Q, K and V ([tokens, heads x head_dim],
batch 1, rank r the r-th slice) and computes attention of its queries over
the whole sequence (causal: up to its tokens). Per shape and mask, timed
the same way in the same run (CUDA events around 10 calls back to back
after a barrier, after about 300 ms of warm-up; the median of 15 samples;
the slowest rank's):

* `synco <algorithm> <backend> c<n>`: `synco.ops.AllGatherAttention`, K
  and V all-gathered inside the attention kernel (direct or ring; copy
  engine, ldst or tma; n chunks per rank), each rank's shard already in
  place; `synco ring_slots <backend> c1`: ring attention over a fixed
  pair of buffers (`slots=2`, the kernel once per ring step, each rank
  holding 3 blocks of K and V; copy engine or ldst);
* `attention alone`: the same attention kernel without a plan
  (`synco.kernels.attention`, Triton's JIT) over the gathered K and V,
  and `sdpa alone`: PyTorch's scaled_dot_product_attention (flash
  backend) over them;
* `all-gather alone`: NCCL all_gather_into_tensor of K and of V;
* `link`: the bytes a rank receives (K and V of its W - 1 peers) copied
  from the peers' symmetric heaps by the copy engine, one peer after
  another;
* `torch b2b`: the NCCL all-gathers, then SDPA (flash), back to back;
* `torch context_parallel allgather` / `alltoall`: PyTorch's ring
  attention (`torch.distributed.tensor.experimental.context_parallel`,
  each rotate method, load-balanced when causal) on every rank's Q, K
  and V, SDPA on the flash backend, grouped heads through `enable_gqa`
  where the ring takes it, else K and V repeated to every query head
  (`cp_kv_heads` in the results says which); what PyTorch refuses is
  recorded under `refused`.

Causal attention also runs in the load-balanced sharding, rank r holding
parts r and 2W - 1 - r of the sequence cut in 2W (its tokens are those two
parts; K and V gathered into sequence order):

* `synco <algorithm> <backend> c<n> zigzag`: `AllGatherAttention(zigzag=True)`
  (`synco.kernels.attention_zigzag`, `blocks(zigzag)`);
* `attention alone zigzag`: that kernel without a plan over the gathered
  K and V;
* `torch b2b zigzag`: the NCCL all-gathers, K and V put in sequence order,
  then SDPA (flash) on each of the rank's two parts.

The floor is max(best attention alone, link), the best of all the local
kernels above (for causal attention the balanced zigzag one, usually);
the overlap efficiency of a variant is floor / its time.

Ulysses (head-parallel) attention on the same shapes and data (each rank
computes heads / W of the heads over every token):

* `ulysses <backend> c<n>`: `synco.ops.UlyssesAttention`, Q, K and V
  re-sharded from tokens to heads by all-to-alls inside the attention
  kernel, each rank's tokens already in its symmetric heap; `in+out`: its
  output re-sharded back by tokens from the same kernel
  (`reshard_out=True`); `per-head`: Q, K and V in a chunk per head of
  each rank's tokens, each program waiting only for its head's
  (`per_head=True`);
* `ulysses attention alone`: the attention kernel over the rank's heads of
  every token, already re-sharded;
* `ulysses link`: the bytes a rank receives (its heads of Q, K and V from
  its W - 1 peers) copied from the peers' heaps by the copy engine;
* `ulysses a2a alone` and `torch ulysses b2b`: NCCL's all_to_all_single of
  Q, K and V from tokens to heads, alone and then SDPA (flash) back to
  back; `torch ulysses b2b in+out`: then the output's all_to_all_single
  back by tokens.

`ulysses floor` is max(ulysses attention alone, ulysses link) (`in+out`:
the link with the output's bytes too); the efficiency of a Ulysses
variant is that over its time.

The GEMMs around it, each fused with its all-to-all, once per shape
(without a mask), hidden = heads x head_dim:

* `proj out <backend> c<n>`: `synco.ops.AllToAllMatmul`, the output
  projection of every token of this rank's heads, re-sharded to this
  rank's tokens inside the GEMM's loop over k;
* `proj qkv <backend> c<n>`: `synco.ops.MatmulAllToAll`, a projection of
  this rank's tokens re-sharded into every token of this rank's heads as
  the GEMM's tiles finish each chunk of columns;
* `proj matmul alone` (torch), `proj link` (the bytes a rank receives, by
  the copy engine from the peers' heaps), and `torch proj out b2b` /
  `torch proj qkv b2b` (NCCL's all_to_all_single and the GEMM back to
  back); `proj_floor_ms` = max(matmul alone, link). Every Synco variant's output is checked
against SDPA's (relative error under 2e-2) before it is timed.

With fewer GPUs than ranks (ranks share GPUs: rank r on GPU r mod the
count), NCCL cannot run two ranks on one GPU: the process group is gloo,
the NCCL baselines are skipped and the times are not those of a W-GPU
machine (the run checks the script and the kernels); so is
`context_parallel`, which needs NCCL.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

import synco
from synco import kernels, ops

MODELS = {"llama3-8b": (32, 8, 128), "64-head": (64, 8, 128)}
SEQS = [16384, 32768, 131072]
#: (algorithm, backend, chunks per rank) of the Synco variants.
VARIANTS = [("direct", "copy_engine", 1), ("direct", "ldst", 1), ("direct", "tma", 1),
            ("ring", "copy_engine", 1), ("ring", "ldst", 1), ("ring", "tma", 1),
            ("direct", "copy_engine", 4), ("ring_slots", "copy_engine", 1),
            ("ring_slots", "ldst", 1)]
#: The Ulysses variants: (backend, chunks per rank, output re-sharded back,
#: a chunk per head).
ULYSSES_VARIANTS = [("copy_engine", 1, False, False), ("ldst", 1, False, False),
                    ("tma", 1, False, False), ("copy_engine", 1, True, False),
                    ("copy_engine", 1, False, True), ("ldst", 1, False, True)]
#: The zigzag variants (causal only): one chunk per part.
ZIGZAG_VARIANTS = [("direct", "copy_engine", 2), ("direct", "ldst", 2), ("direct", "tma", 2)]
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64}
NUM_WARPS, NUM_STAGES = 8, 3
PER_SAMPLE, SAMPLES, WARMUP_MS = 10, 15, 300.0  # (--per-sample, --samples)
TOLERANCE = 2e-2


def shapes(args):
    models = args.models.split(",")
    seqs = [int(s) for s in args.seqs.split(",")]
    for model in models:
        heads, kv_heads, head_dim = MODELS[model]
        for seq in seqs:
            for causal in (False, True):
                yield model, heads, kv_heads, head_dim, seq, causal


def options(world, kv_heads, head_dim, seq, causal, variant, cache, zigzag=False):
    algorithm, backend, chunks = variant
    slots = {"slots": 2} if algorithm == "ring_slots" else {}
    return dict(seq=seq, kv_heads=kv_heads, head_dim=head_dim, causal=causal, config=CONFIG,
                chunks=chunks, backend=backend, algorithm="ring" if slots else algorithm,
                zigzag=zigzag, num_warps=NUM_WARPS, num_stages=NUM_STAGES, cache_dir=cache,
                **slots)


def variants(causal):
    """(name, variant, zigzag) of every Synco variant of a shape."""
    yield from (("synco {} {} c{}".format(*v), v, False) for v in VARIANTS)
    if causal:
        yield from (("synco {} {} c{} zigzag".format(*v), v, True) for v in ZIGZAG_VARIANTS)


def ulysses_options(heads, kv_heads, head_dim, seq, causal, variant, cache):
    backend, chunks, reshard_out, per_head = variant
    return dict(seq=seq, heads=heads, kv_heads=kv_heads, head_dim=head_dim, causal=causal,
                config=CONFIG, chunks=chunks, backend=backend, reshard_out=reshard_out,
                per_head=per_head, num_warps=NUM_WARPS, num_stages=NUM_STAGES, cache_dir=cache)


#: The projections around Ulysses attention: (operator, backend, chunks).
PROJECTION_VARIANTS = [("out", "copy_engine", 1), ("out", "ldst", 1), ("out", "tma", 1),
                       ("qkv", "copy_engine", 1), ("qkv", "copy_engine", 2)]


def projection_options(heads, head_dim, seq, world, variant, cache):
    """The output projection (`out`: heads back to tokens inside the GEMM's
    loop over k, `AllToAllMatmul`) or a query projection (`qkv`: tokens
    into heads from the GEMM's tiles, `MatmulAllToAll`) of a hidden size
    of heads x head_dim, over this rank's seq / W tokens."""
    _, backend, chunks = variant
    hidden = heads * head_dim
    return dict(m=seq // world, k=hidden, n=hidden, chunks=chunks, backend=backend,
                num_warps=NUM_WARPS, num_stages=NUM_STAGES, cache_dir=cache)


def projection_op(variant):
    return ops.AllToAllMatmul if variant[0] == "out" else ops.MatmulAllToAll


def compile_all(args):
    for model, heads, kv_heads, head_dim, seq, causal in shapes(args):
        for variant in ULYSSES_VARIANTS:
            ops.UlyssesAttention.compile(args.world, **ulysses_options(
                heads, kv_heads, head_dim, seq, causal, variant, args.cache))
        if not causal:
            for variant in PROJECTION_VARIANTS:
                projection_op(variant).compile(args.world, **projection_options(
                    heads, head_dim, seq, args.world, variant, args.cache))
        for _, variant, zigzag in variants(causal):
            ops.AllGatherAttention.compile(
                args.world, **options(args.world, kv_heads, head_dim, seq, causal, variant,
                                      args.cache, zigzag))
        print(f"compiled W={args.world} {model} seq {seq} {'causal' if causal else 'full'}",
              flush=True)


def timed(fn):
    """The median ms per call (see the module doc); every rank runs the
    same number of warm-up batches."""
    began = time.perf_counter()
    for _ in range(PER_SAMPLE):
        fn()
    torch.cuda.synchronize()
    per_batch = max((time.perf_counter() - began) * 1e3, 1e-3)
    batches = torch.tensor([int(WARMUP_MS / per_batch) + 1], device="cuda")
    dist.all_reduce(batches, op=dist.ReduceOp.MAX)
    for _ in range(int(batches.item())):
        for _ in range(PER_SAMPLE):
            fn()
        torch.cuda.synchronize()
    times = []
    for _ in range(SAMPLES):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(PER_SAMPLE):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / PER_SAMPLE)
    return statistics.median(times)


def sdpa(q, k, v, heads, kv_heads, head_dim, causal, rank, tokens):
    """PyTorch's attention (flash backend) of this rank's queries over
    `k`, `v` (the whole sequence): causal, its queries are the last of the
    first (rank + 1) * tokens keys."""
    seq = k.shape[0] if not causal else (rank + 1) * tokens
    view = lambda x, n: x[:seq].view(-1, n, head_dim).transpose(0, 1)[None]  # noqa: E731
    qh = q.view(tokens, heads, head_dim).transpose(0, 1)[None]
    kh, vh = view(k, kv_heads), view(v, kv_heads)
    mask = causal_lower_right(tokens, seq) if causal else None
    backends = [SDPBackend.FLASH_ATTENTION] if FLASH_WORKS else list(SDPBackend)
    with sdpa_kernel(backends):
        out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, enable_gqa=True)
    return out[0].transpose(0, 1).reshape(tokens, heads * head_dim)


#: Whether SDPA's flash backend takes these calls (grouped heads, a
#: lower-right causal mask); set by `check_flash` on the first call.
FLASH_WORKS = True


def check_flash(*args):
    """SDPA's result, on its flash backend where it runs, else on whichever
    backend PyTorch picks (recorded in the results)."""
    global FLASH_WORKS
    try:
        return sdpa(*args)
    except RuntimeError:
        FLASH_WORKS = False
        return sdpa(*args)


def agreed(ok):
    """Whether every rank says `ok` (a collective)."""
    flag = torch.tensor([0 if ok else 1], device="cuda")
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return flag.item() == 0


def peer_view(group, tensor, peer):
    """`tensor` (in this rank's symmetric heap) as it lies in `peer`'s."""
    offset = group.offset_of(tensor)
    nbytes = tensor.numel() * tensor.element_size()
    array = type("PeerBytes", (), {"__cuda_array_interface__": {
        "shape": (nbytes,), "typestr": "|u1", "version": 3, "strides": None,
        "data": (group._bases[peer] + offset, False)}})()
    return torch.as_tensor(array, device=group.device).view(tensor.dtype).view(tensor.shape)


def run_shape(group, nccl, cache, model, heads, kv_heads, head_dim, seq, causal):
    w, r, dev = group.world_size, group.rank, group.device
    tokens, kv_cols, q_cols = seq // w, kv_heads * head_dim, heads * head_dim
    own = slice(r * tokens, (r + 1) * tokens)
    g = torch.Generator(device=dev).manual_seed(1000 * r + seq + causal)
    rand = lambda *s: torch.randn(s, generator=g, device=dev, dtype=torch.bfloat16)  # noqa: E731
    q, k_shard, v_shard = rand(tokens, q_cols), rand(tokens, kv_cols), rand(tokens, kv_cols)
    row = {"model": model, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
           "seq": seq, "causal": causal, "world": w, "ms": {}, "rel_err": {}}
    # Every rank's K and V, gathered (the references' input).
    k_all = torch.empty((seq, kv_cols), device=dev, dtype=torch.bfloat16)
    v_all = torch.empty_like(k_all)
    gather = (dist.all_gather_into_tensor if nccl else _gather_via_objects)
    gather(k_all, k_shard)
    gather(v_all, v_shard)
    want = check_flash(q, k_all, v_all, heads, kv_heads, head_dim, causal, r, tokens).float()
    row["sdpa_backend"] = "flash" if FLASH_WORKS else "any"
    scale = head_dim ** -0.5
    n_kv = (r + 1) * tokens if causal else seq
    row["refused"] = {}
    # The zigzag sharding: the same shards are this rank's parts r and
    # 2W - 1 - r; K and V in sequence order, and the reference.
    part = tokens // 2
    zig = zigzag_positions(w, tokens)
    k_seq, v_seq = torch.empty_like(k_all), torch.empty_like(v_all)
    k_seq[zig], v_seq[zig] = k_all, v_all
    want_zigzag = torch.cat([
        sdpa(q[:part], k_seq, v_seq, heads, kv_heads, head_dim, True, r, part),
        sdpa(q[part:], k_seq, v_seq, heads, kv_heads, head_dim, True, 2 * w - 1 - r, part),
    ]).float() if causal else None
    for name, variant, zigzag in variants(causal):
        group.reset_heap()
        op = ops.AllGatherAttention(group, heads=heads, **options(w, kv_heads, head_dim, seq,
                                                                  causal, variant, cache, zigzag))
        start = 0
        for own_rows in op.own:  # this rank's shard, in place before the timing
            n = own_rows.stop - own_rows.start
            op.k[own_rows].copy_(k_shard[start:start + n])
            op.v[own_rows].copy_(v_shard[start:start + n])
            start += n
        out = torch.full_like(q, float("nan"))
        expected = want_zigzag if zigzag else want
        try:
            op(q, out=out)
            group.wait(120)
            row["rel_err"][name] = ((out.float() - expected).norm() / expected.norm()).item()
        except synco.LaunchError as e:  # e.g. ranks sharing a GPU that cannot hold them
            row["refused"][name] = str(e)
        if agreed(row["rel_err"].get(name, 1.0) < TOLERANCE):
            row["ms"][name] = timed(lambda op=op, out=out: op(q, out=out))
            group.wait(120)
        op.kernel._kernel.unload()
    grid = (tokens // CONFIG["BLOCK_M"], heads)
    local = torch.empty_like(q)
    row["ms"]["attention alone"] = timed(lambda: kernels.attention[grid](
        q, k_all, v_all, local, scale, tokens * q_cols, head_dim, q_cols, seq * kv_cols,
        head_dim, kv_cols, seq * kv_cols, head_dim, kv_cols, tokens * q_cols, head_dim, q_cols,
        heads, kv_heads, tokens, n_kv, HEAD_DIM=head_dim, CAUSAL=int(causal), num_warps=NUM_WARPS,
        num_stages=NUM_STAGES, **CONFIG))
    row["ms"]["sdpa alone"] = timed(
        lambda: sdpa(q, k_all, v_all, heads, kv_heads, head_dim, causal, r, tokens))
    if causal:
        row["ms"]["attention alone zigzag"] = timed(lambda: kernels.attention_zigzag[grid](
            q, k_seq, v_seq, local, scale, tokens * q_cols, head_dim, q_cols, seq * kv_cols,
            head_dim, kv_cols, seq * kv_cols, head_dim, kv_cols, tokens * q_cols, head_dim,
            q_cols, heads, kv_heads, tokens, seq, r, HEAD_DIM=head_dim, CAUSAL=1,
            num_warps=NUM_WARPS, num_stages=NUM_STAGES, **CONFIG))
    # The link: this rank's peers' K and V blocks, copied from their heaps.
    group.reset_heap()
    k_sym, v_sym = group.empty((seq, kv_cols), torch.bfloat16), group.empty((seq, kv_cols),
                                                                             torch.bfloat16)
    peers = [(p, slice(p * tokens, (p + 1) * tokens)) for p in range(w) if p != r]

    def link():
        for p, rows in peers:
            for sym in (k_sym, v_sym):
                sym[rows].copy_(peer_view(group, sym, p)[rows], non_blocking=True)

    row["ms"]["link"] = timed(link)
    if nccl:
        k_out, v_out = torch.empty_like(k_all), torch.empty_like(v_all)

        def all_gather():
            dist.all_gather_into_tensor(k_out, k_shard)
            dist.all_gather_into_tensor(v_out, v_shard)

        row["ms"]["all-gather alone"] = timed(all_gather)

        def b2b():
            all_gather()
            return sdpa(q, k_out, v_out, heads, kv_heads, head_dim, causal, r, tokens)

        row["ms"]["torch b2b"] = timed(b2b)
        if causal:
            k_in_order, v_in_order = torch.empty_like(k_all), torch.empty_like(v_all)

            def b2b_zigzag():
                all_gather()
                k_in_order[zig], v_in_order[zig] = k_out, v_out
                return torch.cat([
                    sdpa(q[:part], k_in_order, v_in_order, heads, kv_heads, head_dim, True, r,
                         part),
                    sdpa(q[part:], k_in_order, v_in_order, heads, kv_heads, head_dim, True,
                         2 * w - 1 - r, part)])

            row["ms"]["torch b2b zigzag"] = timed(b2b_zigzag)
        q_all = torch.empty((seq, q_cols), device=dev, dtype=torch.bfloat16)
        dist.all_gather_into_tensor(q_all, q)
        run_context_parallel(row, (q_all, k_all, v_all), (heads, kv_heads, head_dim, causal))
    run_ulysses(row, group, nccl, cache, (q, k_shard, v_shard, k_all, v_all, want),
                (heads, kv_heads, head_dim, seq, causal))
    if not causal:
        run_projections(row, group, nccl, cache, (heads, head_dim, seq))
    return row


def run_projections(row, group, nccl, cache, shape):
    """The GEMMs around Ulysses attention, each fused with its all-to-all,
    into `row`: `proj out <backend> c<n>` (`AllToAllMatmul`: every token of
    this rank's heads re-sharded to this rank's tokens of every head inside
    the output projection's loop over k) and `proj qkv <backend> c<n>`
    (`MatmulAllToAll`: a projection of this rank's tokens re-sharded into
    every token of this rank's heads from the GEMM's tiles); checked
    against PyTorch in fp32 first. Baselines in the same run: the GEMM
    alone (torch), the link (the bytes a rank receives, from the peers'
    heaps by the copy engine), and NCCL's all_to_all_single and the GEMM
    back to back (`torch proj out b2b`, `torch proj qkv b2b`)."""
    heads, head_dim, seq = shape
    w, r, dev = group.world_size, group.rank, group.device
    tokens, hidden = seq // w, heads * head_dim
    cols = hidden // w
    g = torch.Generator(device=dev).manual_seed(7 * seq + r)
    rand = lambda *s: torch.randn(s, generator=g, device=dev, dtype=torch.bfloat16)  # noqa: E731
    by_heads = rand(seq, cols)  # every token of this rank's heads (attention's output)
    x = rand(tokens, hidden)  # this rank's tokens (the projection's input)
    # The weight is every rank's (replicated, as a projection's is).
    same = torch.Generator(device=dev).manual_seed(7 * seq)
    weight = torch.randn((hidden, hidden), generator=same, device=dev,
                         dtype=torch.bfloat16) / hidden ** 0.5
    every = torch.empty((w * seq, cols), device=dev, dtype=torch.bfloat16)
    gather = (dist.all_gather_into_tensor if nccl else _gather_via_objects)
    gather(every, by_heads)
    every = every.view(w, seq, cols)
    # This rank's tokens of every rank's heads, and its reference outputs.
    mine = every[:, r * tokens:(r + 1) * tokens].transpose(0, 1).reshape(tokens, hidden)
    want = {"out": (mine.float() @ weight.float())}
    xs = torch.empty((seq, hidden), device=dev, dtype=torch.bfloat16)
    gather(xs, x)
    want["qkv"] = (xs.float() @ weight.float())[:, r * cols:(r + 1) * cols]
    for variant in PROJECTION_VARIANTS:
        kind, backend, chunks = variant
        name = f"proj {kind} {backend} c{chunks}"
        group.reset_heap()
        try:
            op = projection_op(variant)(group, **projection_options(heads, head_dim, seq, w,
                                                                     variant, cache))
            call = (lambda op=op: op(by_heads, weight)) if kind == "out" else \
                (lambda op=op: op(x, weight))
            got = call()
            group.wait(120)
            row["rel_err"][name] = ((got.float() - want[kind]).norm()
                                    / want[kind].norm()).item()
        except synco.LaunchError as e:
            row["refused"][name] = str(e)
            call = None
        if agreed(row["rel_err"].get(name, 1.0) < TOLERANCE):
            row["ms"][name] = timed(call)
            group.wait(120)
        if call is not None:
            op.kernel._kernel.unload()
    row["ms"]["proj matmul alone"] = timed(lambda: x @ weight)
    group.reset_heap()
    sym = group.empty((w, tokens * cols), torch.bfloat16)

    def link():
        for p in range(w):
            if p != r:
                sym[p].copy_(peer_view(group, sym, p)[r], non_blocking=True)

    row["ms"]["proj link"] = timed(link)
    if nccl:
        def out_b2b():
            back = torch.empty_like(by_heads)
            dist.all_to_all_single(back, by_heads)
            a = back.view(w, tokens, cols).transpose(0, 1).reshape(tokens, hidden)
            return a @ weight

        def qkv_b2b():
            c = x @ weight
            send = c.view(tokens, w, cols).transpose(0, 1).contiguous()
            out = torch.empty((seq, cols), device=dev, dtype=torch.bfloat16)
            dist.all_to_all_single(out, send)
            return out

        row["ms"]["torch proj out b2b"] = timed(out_b2b)
        row["ms"]["torch proj qkv b2b"] = timed(qkv_b2b)


def run_context_parallel(row, data, shape):
    """PyTorch's ring attention (`context_parallel`, each rotate method)
    on the same data, into `row`: every rank's Q, K and V as [1, heads,
    seq, head_dim] buffers that the context shards in place along the
    sequence (causal: load-balanced, PyTorch's default), then SDPA, which
    the context runs as ring attention. Grouped heads through SDPA's
    `enable_gqa` where the ring accepts it, else K and V repeated to every
    query head (recorded: 4x the bytes for LLaMA-3-8B). What PyTorch
    refuses is recorded, not fatal."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel
    from torch.distributed.tensor.experimental._attention import _cp_options, set_rotate_method

    (q_all, k_all, v_all), (heads, kv_heads, head_dim, causal) = data, shape
    mesh = init_device_mesh("cuda", (dist.get_world_size(),))
    as_heads = lambda x, n: x.view(-1, n, head_dim).transpose(0, 1)[None].contiguous()  # noqa: E731
    _cp_options.enable_load_balance = causal  # (PyTorch refuses it without a mask)
    for method in ("allgather", "alltoall"):
        name = f"torch context_parallel {method}"
        for gqa in (True, False):
            qh = as_heads(q_all, heads)
            kh, vh = as_heads(k_all, kv_heads), as_heads(v_all, kv_heads)
            if not gqa:
                kh = kh.repeat_interleave(heads // kv_heads, dim=1)
                vh = vh.repeat_interleave(heads // kv_heads, dim=1)
            try:
                set_rotate_method(method)
                with context_parallel(mesh, buffers=[qh, kh, vh], buffer_seq_dims=[2, 2, 2]), \
                        sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    call = lambda: F.scaled_dot_product_attention(  # noqa: E731
                        qh, kh, vh, is_causal=causal, enable_gqa=gqa)
                    call()
                    if not agreed(True):
                        continue
                    row["ms"][name] = timed(call)
                row.setdefault("cp_kv_heads", {})[name] = kv_heads if gqa else heads
                break
            except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                row["refused"][f"{name}{' gqa' if gqa else ''}"] = f"{type(e).__name__}: {e}"[:300]
                agreed(False)


def run_ulysses(row, group, nccl, cache, data, shape):
    """Ulysses attention's variants and baselines, into `row` (see the
    module doc): this rank's tokens `q`, `k_shard`, `v_shard`; every
    rank's K and V gathered; `by_tokens`, the attention of this rank's
    tokens over every head (what `in+out` returns)."""
    (q, k_shard, v_shard, k_all, v_all, by_tokens), (heads, kv_heads, head_dim, seq, causal) = \
        data, shape
    w, r, dev = group.world_size, group.rank, group.device
    tokens, d = seq // w, head_dim
    hl, kvl = heads // w, kv_heads // w
    q_all = torch.empty((seq, heads * d), device=dev, dtype=torch.bfloat16)
    (dist.all_gather_into_tensor if nccl else _gather_via_objects)(q_all, q)
    mine = lambda x, n: x[:, r * n * d:(r + 1) * n * d].contiguous()  # noqa: E731
    q_h, k_h, v_h = mine(q_all, hl), mine(k_all, kvl), mine(v_all, kvl)
    heads_of = lambda x, n: x.view(seq, n, d).transpose(0, 1)[None]  # noqa: E731
    backends = [SDPBackend.FLASH_ATTENTION] if FLASH_WORKS else list(SDPBackend)

    def sdpa_heads(qh, kh, vh):
        with sdpa_kernel(backends):
            out = F.scaled_dot_product_attention(heads_of(qh, hl), heads_of(kh, kvl),
                                                 heads_of(vh, kvl), is_causal=causal,
                                                 enable_gqa=True)
        return out[0].transpose(0, 1).reshape(seq, hl * d)

    want = sdpa_heads(q_h, k_h, v_h).float()
    for variant in ULYSSES_VARIANTS:
        backend, chunks, reshard_out, per_head = variant
        name = (f"ulysses {backend} " + ("per-head" if per_head else f"c{chunks}")
                + (" in+out" if reshard_out else ""))
        group.reset_heap()
        op = ops.UlyssesAttention(group, **ulysses_options(heads, kv_heads, head_dim, seq,
                                                           causal, variant, cache))
        for key, given in (("Q", q), ("K", k_shard), ("V", v_shard)):
            op.sharded[key].copy_(given)
        held = (op.sharded["Q"], op.sharded["K"], op.sharded["V"])
        out = None if reshard_out else torch.full((seq, hl * d), float("nan"), device=dev,
                                                  dtype=torch.bfloat16)
        expected = by_tokens if reshard_out else want
        try:
            got = op(*held, out=out)
            group.wait(120)
            row["rel_err"][name] = ((got.float() - expected).norm() / expected.norm()).item()
        except synco.LaunchError as e:
            row["refused"][name] = str(e)
        if agreed(row["rel_err"].get(name, 1.0) < TOLERANCE):
            row["ms"][name] = timed(lambda op=op, out=out: op(*held, out=out))
            group.wait(120)
        op.kernel._kernel.unload()
    grid = (seq // CONFIG["BLOCK_M"], hl)
    local = torch.empty_like(q_h)
    row["ms"]["ulysses attention alone"] = timed(lambda: kernels.attention[grid](
        q_h, k_h, v_h, local, d ** -0.5, seq * hl * d, d, hl * d, seq * kvl * d, d, kvl * d,
        seq * kvl * d, d, kvl * d, seq * hl * d, d, hl * d, hl, kvl, seq, seq, HEAD_DIM=d,
        CAUSAL=int(causal), num_warps=NUM_WARPS, num_stages=NUM_STAGES, **CONFIG))
    # The link: from each peer, its tokens of this rank's heads of Q, K, V
    # (in+out: and its heads of this rank's tokens of the output).
    for key, per_peer in (("ulysses link", tokens * (hl + 2 * kvl) * d),
                          ("ulysses link in+out", tokens * (2 * hl + 2 * kvl) * d)):
        group.reset_heap()
        sym = group.empty((w, per_peer), torch.bfloat16)

        def link(sym=sym):
            for p in range(w):
                if p != r:
                    sym[p].copy_(peer_view(group, sym, p)[r], non_blocking=True)

        row["ms"][key] = timed(link)
    if nccl:
        def to_heads(x, n):
            """all_to_all_single from tokens to heads: [S/W, W * n * d]
            into [S, n * d], rank s's tokens from rank s."""
            out = torch.empty((seq, n * d), device=dev, dtype=x.dtype)
            send = x.view(tokens, w, n * d).transpose(0, 1).contiguous()
            dist.all_to_all_single(out, send)
            return out

        def a2a():
            return to_heads(q, hl), to_heads(k_shard, kvl), to_heads(v_shard, kvl)

        def to_tokens(o):
            """all_to_all_single back: [S, hl * d] into [S/W, H * d]."""
            back = torch.empty_like(o)
            dist.all_to_all_single(back, o)
            return back.view(w, tokens, hl * d).transpose(0, 1).reshape(tokens, w * hl * d)

        row["ms"]["ulysses a2a alone"] = timed(a2a)
        row["ms"]["torch ulysses b2b"] = timed(lambda: sdpa_heads(*a2a()))
        row["ms"]["torch ulysses b2b in+out"] = timed(lambda: to_tokens(sdpa_heads(*a2a())))


def zigzag_positions(world, tokens):
    """Where each row of the gathered zigzag shards (rank by rank, each its
    parts o and 2W - 1 - o) lies in the sequence."""
    part = tokens // 2
    return torch.cat([torch.cat([torch.arange(o * part, (o + 1) * part),
                                 torch.arange((2 * world - 1 - o) * part, (2 * world - o) * part)])
                      for o in range(world)]).cuda()


def _gather_via_objects(out, shard):
    """all_gather_into_tensor for gloo (ranks sharing GPUs: no NCCL)."""
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, shard.cpu())
    out.copy_(torch.cat(parts).to(out.device))


def worker(rank, args, port, gpus):
    global SAMPLES, PER_SAMPLE
    SAMPLES, PER_SAMPLE = args.samples, args.per_sample
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank % gpus)
    nccl = gpus >= args.world
    dist.init_process_group("nccl" if nccl else "gloo", rank=rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=600),
                            **({"device_id": torch.device("cuda", rank)} if nccl else {}))
    biggest = max(int(s) for s in args.seqs.split(","))
    kv = max(MODELS[m][1] * MODELS[m][2] for m in args.models.split(","))
    # Ulysses: every rank's tokens and its heads of every token, of Q, K, V
    # and (in+out) of the output.
    qkv = max((2 * MODELS[m][0] + 2 * MODELS[m][1]) * MODELS[m][2]
              for m in args.models.split(","))
    heap = max(2 * 2 * biggest * kv, 2 * 2 * biggest * qkv // args.world)
    group = synco.Group(heap_bytes=heap + (64 << 20), peer_timeout=60.0)
    rows = []
    for shape in shapes(args):
        row = run_shape(group, nccl, args.cache, *shape)
        gathered = [None] * args.world
        dist.all_gather_object(gathered, row)
        merged = dict(row, ms={k: max(g["ms"].get(k, float("nan")) for g in gathered)
                               for k in row["ms"]},
                      rel_err={k: max(g["rel_err"].get(k, float("nan")) for g in gathered)
                               for k in row["rel_err"]})
        best = min(t for k, t in merged["ms"].items() if k.startswith(("attention alone",
                                                                         "sdpa alone")))
        merged["floor_ms"] = max(best, merged["ms"]["link"])
        merged["efficiency"] = {k: merged["floor_ms"] / t for k, t in merged["ms"].items()
                                if k.startswith("synco")}
        alone = merged["ms"]["ulysses attention alone"]
        merged["ulysses_floor_ms"] = max(alone, merged["ms"]["ulysses link"])
        merged["ulysses_in_out_floor_ms"] = max(alone, merged["ms"]["ulysses link in+out"])
        merged["efficiency"].update({
            k: (merged["ulysses_in_out_floor_ms"] if k.endswith("in+out")
                else merged["ulysses_floor_ms"]) / t
            for k, t in merged["ms"].items()
            if k.startswith("ulysses ") and k.split()[1] in ("copy_engine", "ldst", "tma")})
        if "proj matmul alone" in merged["ms"]:
            merged["proj_floor_ms"] = max(merged["ms"]["proj matmul alone"],
                                          merged["ms"]["proj link"])
            merged["efficiency"].update({k: merged["proj_floor_ms"] / t
                                         for k, t in merged["ms"].items()
                                         if k.startswith("proj ") and k.split()[1] in
                                         ("out", "qkv")})
        rows.append(merged)
        if rank == 0:
            print(json.dumps(merged), flush=True)
    if rank == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump({"gpus": gpus, "world": args.world, "shared_gpus": not nccl,
                       "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seqs", default=",".join(map(str, SEQS)))
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--samples", type=int, default=SAMPLES,
                        help="timed samples per variant (median taken)")
    parser.add_argument("--per-sample", type=int, default=PER_SAMPLE,
                        help="calls back to back per sample")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.compile_only:
        compile_all(args)
        return 0
    gpus = torch.cuda.device_count()
    port = 29500 + os.getpid() % 1000
    mp.start_processes(worker, args=(args, port, gpus), nprocs=args.world, start_method="spawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
