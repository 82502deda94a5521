"""Copy throughput of the kernel's copy programs, per program, `ldst`
against `tma`, between two ranks' heaps.

    python benches/copy/rate.py --compile-only --cache DIR    # here, no GPU
    python benches/copy/rate.py --cache DIR --out results/    # on the GPU

Two ranks in one process (the runtime's single-process node, as the Rust
benchmarks run), rank r on GPU r mod the GPU count. On one GPU both
ranks' copies are device-local: an upper bound on what the same programs
move over NVLink, and the place to compare the two ways of copying; on
two, they cross the link, and the rate per program (1 to 4 programs, where
they do not fill the link) is the cost model's constant, printed as
calibration JSON. Each rank holds `ROWS` rows of `COLS` bf16 (128 MiB);
the plan all-gathers them (`chunks(8)` per rank, 16 MiB each) into a
kernel whose tiles only read the first 64 columns of their rows once their
chunk is in (`copy_kernels.first_columns`): the launch's time is the copy
programs' time to bring the peer's 128 MiB, plus a launch. For each
backend and copy-program count `P`, each rank's `P` programs copy
concurrently with the other rank's `P`.

Per variant: launches until 200 ms of warm-up have passed, then the
median over `REPEATS` rounds of `BATCH` back-to-back launches (the host
issues ahead, so its cost hides behind the GPU's). Then the peer's rows
are poisoned, the kernel launched once more, and both ranks' gathered
buffers and outputs compared with the shards on fresh random data. In
the same run, torch's copy of the same bytes (device-to-device on one GPU,
peer-to-peer by the copy engine on two) as the ceiling.
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

import synco
from synco import _native
from synco.runtime import Heap, LaunchArguments

sys.path.insert(0, str(Path(__file__).resolve().parent))
from copy_kernels import first_columns  # noqa: E402  (the kernel, beside this script)

WORLD = 2
ROWS, COLS = 8192, 8192  # per rank: 128 MiB of bf16
CHUNKS = 8
TILE_ROWS, TILE_COLS = 128, 64
BACKENDS = ("ldst", "tma")
PROGRAMS = (1, 2, 4, 8, 16, 32, 66)
HEAP_BYTES = 320 << 20
WARMUP_S, REPEATS, BATCH = 0.2, 15, 4


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


def torch_copy_seconds(devices, nbytes):
    """torch's copy of `nbytes` from the last device to the first (a peer
    copy by the copy engine across GPUs; with one, a device copy)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=devices[-1])
    dst = torch.empty(nbytes, dtype=torch.uint8, device=devices[0])
    start = time.perf_counter()
    while time.perf_counter() - start < WARMUP_S:
        dst.copy_(src)
    torch.cuda.synchronize(devices[0])
    events = []
    for _ in range(REPEATS):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(BATCH):
            dst.copy_(src)
        end.record()
        events.append((begin, end))
    torch.cuda.synchronize(devices[0])
    return statistics.median(b.elapsed_time(e) / 1e3 / BATCH for b, e in events)


class Ranks:
    """Every rank of the runtime's single-process node (rank r on GPU r mod
    the GPU count), with its gathered buffer (symmetric) and output."""

    def __init__(self):
        self.gpus = min(torch.cuda.device_count(), WORLD)
        self.node = _native.Node.open_shared(WORLD, self.gpus, HEAP_BYTES)
        self.devices = [torch.device("cuda", r % self.gpus) for r in range(WORLD)]
        self.bases = [self.node.heap_base(r) for r in range(WORLD)]
        self.m = ROWS * WORLD
        nbytes = 2 * self.m * COLS
        offset = self.node.alloc(nbytes)
        self.gathered = [
            torch.as_tensor(_HeapBytes(self.bases[r] + offset, nbytes, self.devices[r]),
                            device=self.devices[r]).view(torch.bfloat16).view(self.m, COLS)
            for r in range(WORLD)]
        self.outs = [torch.empty((self.m, TILE_COLS), dtype=torch.bfloat16, device=d)
                     for d in self.devices]

    def synchronize(self):
        for d in set(self.devices):
            torch.cuda.synchronize(d)


def measure(ranks, backend, programs, cache):
    """One variant's row: its median launch time, rates and correctness."""
    compiled = compile_variant(backend, programs, cache)
    kernel = ranks.node.load(str(compiled.manifest.path))
    shards = [torch.randn((ROWS, COLS)).to(torch.bfloat16) for _ in range(WORLD)]
    for r in range(WORLD):
        ranks.gathered[r][r * ROWS:(r + 1) * ROWS].copy_(shards[r])
    launches = [LaunchArguments(compiled.manifest, ranks.devices[r],
                                Heap(ranks.bases[r], HEAP_BYTES))(
        [ranks.gathered[r], ranks.outs[r], COLS]) for r in range(WORLD)]
    values, bindings = [v for v, _ in launches], launches[0][1]
    grid = (ranks.m // TILE_ROWS, 1, 1)
    ranks.synchronize()
    seconds = median_launch_seconds(ranks.node, kernel, grid, values, bindings)
    # Correctness on the last launch: peers' rows poisoned first.
    for r in range(WORLD):
        for s in range(WORLD):
            if s != r:
                ranks.gathered[r][s * ROWS:(s + 1) * ROWS].fill_(float("nan"))
        ranks.outs[r].fill_(float("nan"))
    ranks.synchronize()
    kernel.launch_ranks(grid, values, bindings)
    ranks.node.wait(60)
    whole = torch.cat(shards)
    correct = all(torch.equal(ranks.gathered[r].cpu(), whole)
                  and torch.equal(ranks.outs[r].cpu(), whole[:, :TILE_COLS])
                  for r in range(WORLD))
    kernel.unload()
    peer_bytes = (WORLD - 1) * ROWS * COLS * 2
    return {"backend": backend, "copy_programs": programs, "launch_us": seconds * 1e6,
            "gb_per_s_per_rank": peer_bytes / seconds / 1e9,
            "gb_per_s_per_program": peer_bytes / seconds / programs / 1e9,
            "correct": correct,
            "shared_mem_bytes": json.loads(
                Path(compiled.manifest.path).read_text())["shared_mem_bytes"]}


def per_program_rates(rows):
    """Each backend's rate per copy program where programs do not yet fill
    the link (the median over 1, 2 and 4 programs): the cost model's
    `sm_copy_gbps` / `tma_copy_gbps` when measured across GPUs."""
    return {b: statistics.median(r["gb_per_s_per_program"] for r in rows
                                 if r["backend"] == b and r["copy_programs"] <= 4)
            for b in BACKENDS}


def run(cache):
    ranks = Ranks()
    rows = []
    for backend in BACKENDS:
        for programs in PROGRAMS:
            row = measure(ranks, backend, programs, cache)
            rows.append(row)
            print(f"{backend:5} P={programs:3}: {row['launch_us']:9.1f} us  "
                  f"{row['gb_per_s_per_rank']:7.1f} GB/s per rank  "
                  f"{row['gb_per_s_per_program']:6.1f} GB/s per program  "
                  f"{'correct' if row['correct'] else 'WRONG'}", flush=True)
    peer_bytes = (WORLD - 1) * ROWS * COLS * 2
    ceiling = torch_copy_seconds(ranks.devices, peer_bytes)
    link = "peer" if ranks.gpus == WORLD else "device-local"
    print(f"torch {link} copy of {peer_bytes >> 20} MiB: {ceiling * 1e6:.1f} us, "
          f"{peer_bytes / ceiling / 1e9:.1f} GB/s")
    rates = per_program_rates(rows)
    if link == "peer":
        print("calibration (the cost model's Machine):",
              json.dumps({"sm_copy_gbps": round(rates["ldst"], 2),
                          "tma_copy_gbps": round(rates["tma"], 2)}))
    return rows, {"link": link, "torch_copy_us": ceiling * 1e6,
                  "gb_per_s": peer_bytes / ceiling / 1e9, "per_program_gbps": rates}


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
    lines.append(f"\n{ceiling['link']}: torch's copy of the same bytes "
                 f"{ceiling['gb_per_s']:.0f} GB/s; per program where programs do not fill the "
                 "link (1 to 4): " + ", ".join(f"{b} {g:.1f} GB/s"
                                               for b, g in ceiling["per_program_gbps"].items())
                 + ".")
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
        meta = {"gpu": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(),
                "torch": torch.__version__,
                "triton": triton.__version__, "commit": commit,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "rows_per_rank": ROWS, "cols": COLS, "chunks_per_rank": CHUNKS}
        (out / "rate.json").write_text(json.dumps({"meta": meta, "rows": rows,
                                                   "ceiling": ceiling}, indent=2) + "\n")
        (out / "rate.md").write_text(table(rows, ceiling))
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
