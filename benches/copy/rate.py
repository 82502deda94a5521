"""Copy throughput of the kernel's copy programs, per program, `ldst`
against `tma`, between two ranks' heaps on one GPU.

    python benches/copy/rate.py --compile-only --cache DIR    # here, no GPU
    python benches/copy/rate.py --cache DIR --out results/    # on the GPU

Two ranks share one GPU in one process (the runtime's single-process
node, as the Rust benchmarks run), so both ranks' copies are device-local:
an upper bound on what the same programs move over NVLink, and the place
to compare the two ways of copying. Each rank holds `ROWS` rows of
`COLS` bf16 (128 MiB); the plan all-gathers them (`chunks(8)` per rank,
16 MiB each) into a kernel whose tiles only read the first 64 columns of
their rows once their chunk is in (`first_columns` below): the launch's
time is the copy programs' time to bring the peer's 128 MiB, plus a
launch. For each backend and copy-program count `P`, each rank's `P`
programs copy concurrently with the other rank's `P`.

Per variant: launches until 200 ms of warm-up have passed, then the
median over `REPEATS` rounds of `BATCH` back-to-back launches (the host
issues ahead, so its cost hides behind the GPU's). Then the peer's rows
are poisoned, the kernel launched once more, and both ranks' gathered
buffers and outputs compared with the shards on fresh random data. In
the same run, `torch`'s device-to-device copy of the same bytes, the
GPU's copy rate with every SM, as the ceiling.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

import synco
from synco import _native
from synco.runtime import Heap, LaunchArguments

WORLD = 2
ROWS, COLS = 8192, 8192  # per rank: 128 MiB of bf16
CHUNKS = 8
TILE_ROWS, TILE_COLS = 128, 64
BACKENDS = ("ldst", "tma")
PROGRAMS = (1, 2, 4, 8, 16, 32, 66)
HEAP_BYTES = 320 << 20
WARMUP_S, REPEATS, BATCH = 0.2, 15, 4


@triton.jit
def first_columns(a_ptr, out_ptr, K, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Copies the first COLS columns of program pid's ROWS rows of A."""
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    x = tl.load(a_ptr + rows[:, None] * K + cols[None, :])
    tl.store(out_ptr + rows[:, None] * COLS + cols[None, :], x)


def plan(backend):
    m = ROWS * WORLD
    return (f"chunk.plan @copy world_size({WORLD}) {{\n"
            f"  chunk.buffer @A : !chunk.buffer<{m}x{COLS}xbf16> bind(0)\n"
            f"  chunk.all_gather @A dim(0) chunks({CHUNKS}) backend({backend})\n"
            f"  chunk.consume @A dim(0) tile({TILE_ROWS})\n"
            "}\n")


def compile_variant(backend, programs, cache):
    return synco.compile(first_columns, signature="*bf16,*bf16,i32", plan=plan(backend),
                         pipeline=f"synco-fuse{{copy-programs={programs}}}",
                         constexprs={"ROWS": TILE_ROWS, "COLS": TILE_COLS},
                         divisible=("a_ptr", "out_ptr", "K"), num_warps=4, cache_dir=cache)


class _HeapBytes:
    """Bytes at `address` on `device` as a CUDA array."""

    def __init__(self, address, nbytes, device):
        self.device = device
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                         "strides": None, "data": (address, False)}


def median_launch_seconds(node, kernel, grid, values, bindings):
    """The median time of one launch of every rank (see the module doc)."""
    start = time.perf_counter()
    while time.perf_counter() - start < WARMUP_S:
        kernel.launch_ranks(grid, values, bindings)
        node.wait(60)
    rounds = []
    for _ in range(REPEATS):
        begin = time.perf_counter()
        for _ in range(BATCH):
            kernel.launch_ranks(grid, values, bindings)
        node.wait(60)
        rounds.append((time.perf_counter() - begin) / BATCH)
    return statistics.median(rounds)


def torch_copy_seconds(device, nbytes):
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    start = time.perf_counter()
    while time.perf_counter() - start < WARMUP_S:
        dst.copy_(src)
    torch.cuda.synchronize()
    events = []
    for _ in range(REPEATS):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(BATCH):
            dst.copy_(src)
        end.record()
        events.append((begin, end))
    torch.cuda.synchronize()
    return statistics.median(b.elapsed_time(e) / 1e3 / BATCH for b, e in events)


def run(cache):
    node = _native.Node.open_shared(WORLD, 1, HEAP_BYTES)
    device = torch.device("cuda", 0)
    bases = [node.heap_base(r) for r in range(WORLD)]
    m = ROWS * WORLD
    nbytes = 2 * m * COLS
    offset = node.alloc(nbytes)
    gathered = [torch.as_tensor(_HeapBytes(bases[r] + offset, nbytes, device), device=device)
                .view(torch.bfloat16).view(m, COLS) for r in range(WORLD)]
    outs = [torch.empty((m, TILE_COLS), dtype=torch.bfloat16, device=device)
            for _ in range(WORLD)]
    peer_bytes = (WORLD - 1) * ROWS * COLS * 2
    rows = []
    for backend in BACKENDS:
        for programs in PROGRAMS:
            compiled = compile_variant(backend, programs, cache)
            kernel = node.load(str(compiled.manifest.path))
            shards = [torch.randn((ROWS, COLS), device=device).to(torch.bfloat16)
                      for _ in range(WORLD)]
            for r in range(WORLD):
                gathered[r][r * ROWS:(r + 1) * ROWS].copy_(shards[r])
            launches = [LaunchArguments(compiled.manifest, device, Heap(bases[r], HEAP_BYTES))(
                [gathered[r], outs[r], COLS]) for r in range(WORLD)]
            values = [v for v, _ in launches]
            bindings = launches[0][1]
            grid = (m // TILE_ROWS, 1, 1)
            torch.cuda.synchronize()
            seconds = median_launch_seconds(node, kernel, grid, values, bindings)
            # Correctness on the last launch: peers' rows poisoned first.
            for r in range(WORLD):
                for s in range(WORLD):
                    if s != r:
                        gathered[r][s * ROWS:(s + 1) * ROWS].fill_(float("nan"))
                outs[r].fill_(float("nan"))
            torch.cuda.synchronize()
            kernel.launch_ranks(grid, values, bindings)
            node.wait(60)
            whole = torch.cat(shards)
            correct = all(torch.equal(gathered[r], whole)
                          and torch.equal(outs[r], whole[:, :TILE_COLS]) for r in range(WORLD))
            kernel.unload()
            row = {"backend": backend, "copy_programs": programs, "launch_us": seconds * 1e6,
                   "gb_per_s_per_rank": peer_bytes / seconds / 1e9,
                   "gb_per_s_per_program": peer_bytes / seconds / programs / 1e9,
                   "correct": correct,
                   "shared_mem_bytes": json.loads(
                       Path(compiled.manifest.path).read_text())["shared_mem_bytes"]}
            rows.append(row)
            print(f"{backend:5} P={programs:3}: {row['launch_us']:9.1f} us  "
                  f"{row['gb_per_s_per_rank']:7.1f} GB/s per rank  "
                  f"{row['gb_per_s_per_program']:6.1f} GB/s per program  "
                  f"{'correct' if correct else 'WRONG'}", flush=True)
    ceiling = torch_copy_seconds(device, peer_bytes)
    print(f"torch device copy of {peer_bytes >> 20} MiB: {ceiling * 1e6:.1f} us, "
          f"{peer_bytes / ceiling / 1e9:.1f} GB/s (every SM)")
    return rows, {"torch_copy_us": ceiling * 1e6, "gb_per_s": peer_bytes / ceiling / 1e9}


def table(rows, ceiling):
    lines = ["| copy programs P | " + " | ".join(
                 f"{b}: GB/s per rank (per program)" for b in BACKENDS) + " |",
             "|---:|" + "---:|" * len(BACKENDS)]
    for programs in PROGRAMS:
        cells = []
        for backend in BACKENDS:
            [row] = [r for r in rows if r["backend"] == backend and r["copy_programs"] == programs]
            cells.append(f"{row['gb_per_s_per_rank']:.0f} ({row['gb_per_s_per_program']:.1f})"
                         + ("" if row["correct"] else " WRONG"))
        lines.append(f"| {programs} | " + " | ".join(cells) + " |")
    lines.append(f"\ntorch's device-to-device copy of the same bytes (every SM): "
                 f"{ceiling['gb_per_s']:.0f} GB/s.")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--out", help="folder for rate.json and rate.md")
    args = parser.parse_args()
    if args.compile_only:
        for backend in BACKENDS:
            for programs in PROGRAMS:
                compiled = compile_variant(backend, programs, args.cache)
                print(f"built {backend} P={programs}: {compiled.folder.name}")
        return 0
    rows, ceiling = run(args.cache)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or os.environ.get("SYNCO_COMMIT", "")
        meta = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                "triton": triton.__version__, "commit": commit,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "rows_per_rank": ROWS, "cols": COLS, "chunks_per_rank": CHUNKS}
        (out / "rate.json").write_text(json.dumps({"meta": meta, "rows": rows,
                                                   "ceiling": ceiling}, indent=2) + "\n")
        (out / "rate.md").write_text(table(rows, ceiling))
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
