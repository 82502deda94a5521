"""What fusing the K/V all-gather costs the attention kernel itself, on one
GPU: the fused kernel with every chunk already present, against the local
kernel it was made from, on the same data.

    python benches/attention/overhead.py --compile-only --cache DIR   # any machine
    python benches/attention/overhead.py --cache DIR --out FILE.json  # the GPU machine

The fused kernel is `synco.ops.AllGatherAttention`'s for W = 4 ranks (K
and V gathered along the sequence by the copy engine; direct and ring in
1 and 4 chunks per rank): its loop over the keys and values is split
into W x chunks loops, one per chunk, taken in arrival order, each behind
a wait for its chunk; a program that finds every chunk present when it
starts (polls of the flags) runs the present path instead, the same
iterations without waits, in the split's order (one loop without a mask,
two causal; the ring brings the blocks in the direct order). Here the
runtime marks every chunk present (`mark_chunks_present`) and launches
the last rank's kernel alone (`launch_alone`: no copies, no peers), so
the direct and ring kernels take the present path, and the others'
waits pass at once. `split c1` is direct without the present path
(`present_path="none"`): what a program pays that reads chunk by
chunk; `rolled_split c1` is that split rolled, as it is beside a causal
kernel's present path (`present_split="auto"`): what a causal program
of `direct c1` pays that starts before its chunks arrive. `unrolled c1`
and `rolled c1` are direct with the split beside the present path
unrolled or rolled whatever the mask (`present_split`). The local kernel
is the same `synco.kernels.attention`, compiled without a plan, launched
the same way over the same rank's queries and the same gathered K and V.

`ring_slots c1` is ring attention over two slots (`slots=2`): alone,
with no copies, its steps read what its three blocks hold (steps 3 and
after read a slot again), so its output is checked against the local
kernel over those same keys; its time is for all W launches of a call,
against one launch of the local kernel over the whole sequence.

`--styles blocks,strided,moved` measures the same for the attention
kernels of examples/attention/ written the other usual ways
(`flash_attn_blocks.py`: block pointers, causal in two stages;
`flash_attn_strided.py`: pointers read at start_n * stride, or moved by
BLOCK_N * stride), each fused (direct, 1 chunk per rank) against itself
compiled without a plan; `--seqs` restricts the sequences.

The last rank's queries see the whole sequence, causal or not. Inputs are
random (bf16); the fused kernel's output is checked against the local
kernel's (their sums run in another order). Each variant is timed with
CUDA events around back-to-back launches on one stream (about 20 ms per
sample, after 300 ms of warm-up), each variant interleaved sample by
sample with its local kernel alone, the two taking turns to go first. A
variant's cost is the median over 21 samples of its time over the local
kernel's in the same sample; `local again`, the local kernel loaded and
timed a second time as if it were a variant, is the control: its cost is
the method's noise.
"""

import argparse
import datetime
import importlib.metadata
import json
import statistics
import sys
from pathlib import Path

import torch

import synco
from synco import kernels, ops

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "attention"))
import attention_styles  # noqa: E402

#: (name, query heads, key/value heads, head dim): the attention issue's
#: shapes, batch 1.
MODELS = [("llama3-8b", 32, 8, 128), ("64-head", 64, 8, 128)]
SEQS = [16384, 32768, 131072]
WORLD = 4
#: (algorithm, chunks per rank) of the fused variants; "ring_slots" is
#: ring attention over two slots (`slots=2`: the kernel once per ring step);
#: "split" is direct without the present path (`present_path="none"`): what
#: a program pays that finds a chunk missing and reads chunk by chunk;
#: "rolled_split" is split with the loop over the chunks rolled
#: (`max_unrolled_chunks=0`), as direct's split is beside a causal
#: kernel's present path; "unrolled" and "rolled" are direct with the
#: split beside the present path unrolled or rolled (`present_split`;
#: passes/docs/present-path.md).
FUSED = [("direct", 1), ("unrolled", 1), ("rolled", 1), ("split", 1), ("rolled_split", 1),
         ("direct", 4), ("ring", 1), ("ring", 4), ("ring_slots", 1)]
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64}
NUM_WARPS, NUM_STAGES = 8, 3
#: The bundled local kernel timed a second time, as if it were fused.
CONTROL = "local again"
SAMPLES, SAMPLE_MS, WARMUP_MS = 21, 20.0, 300.0
TOLERANCE = 1e-2


#: The fused variants of the example kernels written otherwise.
STYLE_FUSED = [("direct", 1)]


def style_kernel(style):
    """`synco.kernels.attention` (`bundled`), or an example kernel."""
    return kernels.attention if style == "bundled" else attention_styles.kernel(style)


def descriptors(style):
    """Whether `style`'s kernel takes host tensor descriptors."""
    return style in attention_styles.DESCRIPTORS


def local_kernel(style, head_dim, causal, cache):
    """The attention kernel without a plan (what the fused one came from)."""
    signature, divisible = ops.AllGatherAttention.signature(
        head_dim=head_dim, config=CONFIG, descriptors=descriptors(style))
    return synco.compile(style_kernel(style), signature=signature,
                         constexprs={"HEAD_DIM": head_dim, "CAUSAL": int(causal), **CONFIG},
                         divisible=divisible, num_warps=NUM_WARPS, num_stages=NUM_STAGES,
                         cache_dir=cache)


def style_layout(style):
    """The layout of `style`'s tensors ("bshd" or "bhsd")."""
    return "bshd" if style == "bundled" else attention_styles.layout(style)


#: The compile options of each fused variant that is not a plain
#: algorithm (see FUSED).
VARIANT_OPTIONS = {
    "split": {"algorithm": "direct", "present_path": "none"},
    "rolled_split": {"algorithm": "direct", "present_path": "none", "max_unrolled_chunks": 0},
    "unrolled": {"algorithm": "direct", "present_split": "unrolled"},
    "rolled": {"algorithm": "direct", "present_split": "rolled"},
    "ring_slots": {"algorithm": "ring", "slots": 2},
}


def fused_kernel(style, seq, heads_kv, head_dim, causal, algorithm, chunks, cache):
    options = VARIANT_OPTIONS.get(algorithm, {"algorithm": algorithm})
    return ops.AllGatherAttention.compile(
        WORLD, seq=seq, kv_heads=heads_kv, head_dim=head_dim, causal=causal, config=CONFIG,
        chunks=chunks, backend="copy_engine", **options,
        kernel=style_kernel(style), layout=style_layout(style), descriptors=descriptors(style),
        num_warps=NUM_WARPS, num_stages=NUM_STAGES, cache_dir=cache)


def slot_blocks(rank):
    """The blocks a rank holds (own, slot 0, slot 1) when its ring-slots
    kernel runs alone, every flag set and no copy made: the blocks of
    steps 0, 2 and 1. Step s >= 3 reads slot s mod 2 again, so the kernel
    sees block (rank + s) mod W's keys replaced by those of the step that
    last filled that slot."""
    return [ring_step_block(rank, 0), ring_step_block(rank, 2), ring_step_block(rank, 1)]


def ring_step_block(rank, step):
    """The block a ring-slots kernel reads at `step`: the ring brings each
    rank its neighbour r + 1's blocks (plan/slots.rs)."""
    return (rank + step) % WORLD


def slot_sequence(rank):
    """Which block's keys the ring-slots kernel reads at each position of
    the sequence when it runs alone (see `slot_blocks`)."""
    filled = {1: ring_step_block(rank, 1), 0: ring_step_block(rank, 2)}
    seen = [None] * WORLD
    for s in range(WORLD):
        block = ring_step_block(rank, s)
        seen[block] = block if s < 3 else filled[s % 2]
    return seen


def variant_kernels(style, seq, heads_kv, head_dim, causal, cache):
    """Name -> compiled kernel of each variant of `style`: its local kernel
    and its fused ones (the bundled kernel's named as before)."""
    prefix = "" if style == "bundled" else f"{style} "
    found = {f"{prefix}local": local_kernel(style, head_dim, causal, cache)}
    if style == "bundled":
        # The control: the local kernel again, loaded and timed as a
        # variant of its own; its cost is the method's noise.
        found[CONTROL] = found["local"]
    for algorithm, chunks in FUSED if style == "bundled" else STYLE_FUSED:
        found[f"{prefix}{algorithm} c{chunks}"] = fused_kernel(
            style, seq, heads_kv, head_dim, causal, algorithm, chunks, cache)
    return found


def cases(seqs):
    for model, heads, heads_kv, head_dim in MODELS:
        for seq in seqs:
            for causal in (False, True):
                yield model, heads, heads_kv, head_dim, seq, causal


def compile_all(cache, styles, seqs):
    for model, _, heads_kv, head_dim, seq, causal in cases(seqs):
        for style in styles:
            variant_kernels(style, seq, heads_kv, head_dim, causal, cache)
        print(f"compiled {model} seq {seq} {'causal' if causal else 'full'}", flush=True)


class _HeapBytes:
    """Bytes at `address` on `device` as a CUDA array."""

    def __init__(self, address, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                         "strides": None, "data": (address, False)}


def time_against_local(launches, local_of):
    """Each variant timed in turn with its local kernel alone
    (`time_interleaved`): name -> its samples (a local kernel's, of every
    pairing), and each variant's cost, the median over the samples of its
    time over the local kernel's in the same sample. (Timed with many
    variants in one round, an identical copy of the local kernel measured
    up to 2% slower than it, varying with its place in the round.)"""
    samples = {local: [] for local in set(local_of.values())}
    cost = {}
    for name, local in local_of.items():
        pair = time_interleaved({local: launches[local], name: launches[name]})
        samples[local] += pair[local]
        samples[name] = pair[name]
        cost[name] = statistics.median(t / l - 1 for t, l in zip(pair[name], pair[local]))
    return samples, cost


def time_interleaved(launches):
    """ms per launch of each of `launches` (name -> callable), one list of
    SAMPLES samples each, taken in turn: sample s starts at the s-th
    variant (mod their count)."""
    stream = torch.cuda.current_stream()
    per_sample = {}
    for name, launch in launches.items():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        launch()
        start.record(stream)
        launch()
        end.record(stream)
        end.synchronize()
        once = max(start.elapsed_time(end), 1e-3)
        per_sample[name] = max(1, round(SAMPLE_MS / once))
        for _ in range(max(1, round(WARMUP_MS / once))):
            launch()
    torch.cuda.synchronize()
    times = {name: [] for name in launches}
    names = list(launches)
    for s in range(SAMPLES):
        for name in names[s % len(names):] + names[:s % len(names)]:
            launch = launches[name]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            for _ in range(per_sample[name]):
                launch()
            end.record(stream)
            end.synchronize()
            times[name].append(start.elapsed_time(end) / per_sample[name])
    return times


def run_case(node, heap_bytes, cache, styles, model, heads, heads_kv, head_dim, seq, causal):
    rank = WORLD - 1
    tokens, kv_cols, q_cols = seq // WORLD, heads_kv * head_dim, heads * head_dim
    node.reset_heap()
    base = node.heap_base(rank)
    device = torch.device("cuda", 0)

    def in_heap(rows, cols):
        nbytes = 2 * rows * cols
        offset = node.alloc(nbytes)
        tensor = torch.as_tensor(_HeapBytes(base + offset, nbytes), device=device)
        return tensor.view(torch.bfloat16).view(rows, cols)

    # K and V [seq, kv_heads * head_dim]: in the heap where a style reads
    # them so (bshd); else only the data the bhsd copies are made from.
    bshd = any(style_layout(s) == "bshd" for s in styles)
    k, v = ((in_heap(seq, kv_cols) if bshd else
             torch.empty((seq, kv_cols), device=device, dtype=torch.bfloat16)) for _ in range(2))
    g = torch.Generator(device=device).manual_seed(seq + heads + causal)
    for t in (k, v):
        t.copy_(torch.randn(t.shape, generator=g, device=device, dtype=torch.bfloat16))
    q = torch.randn((tokens, q_cols), generator=g, device=device, dtype=torch.bfloat16)
    n_kv = seq  # the last rank's queries see every key, causal or not
    # The same data in each layout: [tokens, heads * head_dim] (bshd), or
    # [heads, tokens, head_dim] (bhsd), the heap's K and V copied.
    by_heads = lambda x: x.view(x.shape[0], -1, head_dim).transpose(0, 1)  # noqa: E731
    tensors = {"bshd": (q, k, v)}
    if any(style_layout(s) == "bhsd" for s in styles):
        k_h, v_h = (in_heap(seq * heads_kv, head_dim).view(heads_kv, seq, head_dim)
                    for _ in range(2))
        k_h.copy_(by_heads(k))
        v_h.copy_(by_heads(v))
        tensors["bhsd"] = (by_heads(q).contiguous(), k_h, v_h)
    def scalars_of(layout):
        q_strides = ops.attention_strides(layout, tokens, heads, head_dim)
        kv_strides = ops.attention_strides(layout, seq, heads_kv, head_dim)
        return [head_dim ** -0.5, *q_strides, *kv_strides, *kv_strides, *q_strides, heads,
                heads_kv, tokens, n_kv]

    scalars = {layout: scalars_of(layout) for layout in ("bshd", "bhsd")}
    grid = (tokens // CONFIG["BLOCK_M"], heads, 1)
    stream = torch.cuda.current_stream().cuda_stream
    heap = synco.runtime.Heap(base, heap_bytes)
    outs, launches = {}, {}
    # Each variant, and the local kernel it is compared with.
    variants, local_of, layout_of = {}, {}, {}
    for style in styles:
        found = variant_kernels(style, seq, heads_kv, head_dim, causal, cache)
        local = next(iter(found))
        variants.update(found)
        local_of.update({name: local for name in found if name != local})
        layout_of.update({name: style_layout(style) for name in found})
    loaded = []
    block = lambda x, b: x[b * tokens:(b + 1) * tokens]  # noqa: E731
    # Ring attention over two slots holds 3 blocks; alone, it reads what
    # `slot_sequence` says, which its own local reference reads too.
    held = {}
    if any(name.endswith("ring_slots c1") for name in variants):
        for t in (k, v):
            h = in_heap(3 * tokens, kv_cols)
            for place, b in enumerate(slot_blocks(rank)):
                block(h, place).copy_(block(t, b))
            held[id(t)] = (h, torch.cat([block(t, b) for b in slot_sequence(rank)]))
    references = {}
    for name, compiled in variants.items():
        kernel = node.load(str(compiled.manifest.path))
        loaded.append(kernel)
        kernel.mark_chunks_present(rank)
        layout = layout_of[name]
        q_in, k_in, v_in = tensors[layout]
        if name.endswith("ring_slots c1"):
            (k_in, k_seen), (v_in, v_seen) = held[id(k_in)], held[id(v_in)]
            references[name] = (k_seen, v_seen)
        out = torch.full_like(q_in, float("nan"))
        values, bindings = synco.runtime.LaunchArguments(compiled.manifest, device, heap)(
            [q_in, k_in, v_in, out, *scalars[layout]])
        launch = (lambda kernel=kernel, values=values, bindings=bindings:
                  kernel.launch_alone(rank, grid, values, bindings, stream))
        launch()
        outs[name], launches[name] = out, launch
    # The local kernel over what each ring-slots kernel read alone.
    expected = dict(outs)
    for name, (k_seen, v_seen) in references.items():
        local = loaded[list(variants).index(local_of[name])]
        expected[name] = torch.full_like(q, float("nan"))
        values, bindings = synco.runtime.LaunchArguments(
            variants[local_of[name]].manifest, device, heap)(
            [q, k_seen, v_seen, expected[name], *scalars["bshd"]])
        local.launch_alone(rank, grid, values, bindings, stream)
    torch.cuda.synchronize()
    reference = {name: expected[name if name in references else local]
                 for name, local in local_of.items()}
    errors = {name: ((outs[name].float() - want.float()).norm() / want.float().norm()).item()
              for name, want in reference.items()}
    samples, cost = time_against_local(launches, local_of)
    ms = {name: statistics.median(t) for name, t in samples.items()}
    for kernel in loaded:
        kernel.unload()
    return {"model": model, "heads": heads, "kv_heads": heads_kv, "head_dim": head_dim,
            "seq": seq, "causal": causal, "world": WORLD,
            "tokens_per_rank": tokens, "ms": ms, "cost_vs_local": cost, "samples_ms": samples,
            "local_of": local_of, "rel_err_vs_local": errors,
            "ok": all(e < TOLERANCE for e in errors.values())}


def markdown_tables(rows):
    """The README's tables: each fused variant's cost over the local
    kernel, by shape; then each other style's local / fused ms (cost)."""
    mask = lambda r: "causal" if r["causal"] else "full"  # noqa: E731
    shape = lambda r: f"| {r['model']} | {r['seq'] // 1024}k | {mask(r)} |"  # noqa: E731
    rows = sorted(rows, key=lambda r: ([m for m, *_ in MODELS].index(r["model"]), r["seq"],
                                       r["causal"]))
    fused = [CONTROL] + [f"{a} c{c}" for a, c in FUSED]
    lines = ["| model | seq | mask | local ms | " + " | ".join(fused) + " |",
             "|---|---|---|---|" + "---|" * len(fused)]
    lines += [f"{shape(r)} {r['ms']['local']:.3f} | "
              + " | ".join(f"{r['cost_vs_local'][v]:+.1%}" if v in r["cost_vs_local"] else "-"
                           for v in fused) + " |"
              for r in rows if "local" in r["ms"]]
    styles = [s for s in attention_styles.STYLES
              if any(f"{s} local" in r["ms"] for r in rows)]
    if styles:
        lines += ["", "| model | seq | mask | " + " | ".join(styles) + " |",
                  "|---|---|---|" + "---|" * len(styles)]
        for r in rows:
            cells = [f"{r['ms'][f'{s} local']:.3f} / {r['ms'][f'{s} direct c1']:.3f} "
                     f"({r['cost_vs_local'][f'{s} direct c1']:+.1%})"
                     if f"{s} local" in r["ms"] else "-" for s in styles]
            if any(c != "-" for c in cells):
                lines.append(f"{shape(r)} " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    global SAMPLES  # --samples sets it for time_interleaved
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--table", nargs="+", metavar="RESULTS",
                        help="print the README's tables from these --out files, and stop")
    parser.add_argument("--styles", default="bundled",
                        help="comma-separated: bundled, "
                             f"{', '.join(attention_styles.STYLES)} (default: bundled)")
    parser.add_argument("--seqs", default=",".join(map(str, SEQS)))
    parser.add_argument("--samples", type=int, default=SAMPLES,
                        help=f"samples per variant (default {SAMPLES})")
    args = parser.parse_args()
    if args.table:
        print(markdown_tables([row for path in args.table for row in json.load(open(path))["rows"]]))
        return 0
    if not args.cache:
        parser.error("--cache is required to compile or run")
    styles = args.styles.split(",")
    seqs = [int(s) for s in args.seqs.split(",")]
    SAMPLES = args.samples
    if args.compile_only:
        compile_all(args.cache, styles, seqs)
        return 0
    largest = max(seqs)
    # K and V, in each layout a style reads.
    layouts = len({style_layout(s) for s in styles})
    # (And the ring-slots kernels' 3 blocks of K and of V.)
    heap = (layouts + 1) * 2 * 2 * largest * max(h_kv * d for _, _, h_kv, d in MODELS) \
        + (64 << 20)
    node = synco._native.Node.open_shared(WORLD, 1, heap)
    rows, failed = [], 0
    for case in cases(seqs):
        row = run_case(node, heap, args.cache, styles, *case)
        rows.append(row)
        failed += not row["ok"]
        ms = row["ms"]
        cost = row["cost_vs_local"]
        cells = [f"{name} {t:.3f} ms" + (f" ({cost[name]:+.1%})" if name in cost else "")
                 for name, t in ms.items()]
        print(f"{row['model']:10} seq {row['seq']:6} {'causal' if row['causal'] else 'full  '} "
              f"{'  '.join(cells)}  err {max(row['rel_err_vs_local'].values()):.1e}"
              f"{'' if row['ok'] else '  FAIL'}", flush=True)
    result = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "triton": importlib.metadata.version("triton"),
              "date": datetime.date.today().isoformat(), "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print(f"overhead.py: {len(rows) - failed} correct, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
