# All-gather plans written out as transfers, generated at random, against a
# model of what they mean. Each plan gathers A [W * 512, 256] in chunks of S
# rows (S = 128, 256 or 512), on the copy engine, ldst or tma, as pulls
# from rank (r - k) mod W (maps spelled either way) or as pushes written
# from the source's side (which the copy programs of ldst and tma cannot
# do), in a random order;
# some plans then get one change: a chunk split into two transfers, two
# chunks merged into one, a transfer dropped or repeated.
#
# A model (`valid`) says which plans can be carried out as written: every
# transfer writes one whole chunk of one size, and on every rank every chunk
# of every other rank's block is written exactly once (a split or merge that
# leaves all chunks one size is just another chunk count). Such a plan must
# compile, and (on the copy engine) its host schedule must do what the plan
# says: on every rank, every such chunk is copied from its owner into the
# same place by exactly one copy, driven by the source (push) or the
# destination (pull), which sets the flag that chunk's tiles wait for. Any
# other plan must be refused with an error at a source location (its flags
# would be set early, late or never).
#
# RUN: %python %s %inputs --plans 150 --seed 3
#
# (Run with more plans and other seeds when chunk-lower-transfers changes:
# --plans 1500 --seed 5 found no disagreement when written.)

import argparse
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import tempfile

K = 256
BLOCK = 512
LOCATED_ERROR = re.compile(r"^\S+:\d+:\d+: error: ", re.M)


def transfer(world, backend, mode, spell, k, first, rows):
    """One transfer of rows [first, first + rows) of every rank's block,
    between ranks k apart: (plan text, [(src, dst, first row, rows)])."""
    if mode == "pull":
        peer = f"(r - {k}) mod {world}" if spell == 0 else f"(r + {world - k}) mod {world}"
        box = f"<@A[(r) -> (({peer}) * {BLOCK} + {first}, 0)] [{rows}, {K}]>"
        text = f"pull {backend} from {box} on (r) -> ({peer}) to {box} on (r) -> (r)"
        sources = [((d - k) % world, d) for d in range(world)]
    else:
        box = f"<@A[(r) -> (r * {BLOCK} + {first}, 0)] [{rows}, {K}]>"
        text = f"push {backend} from {box} on (r) -> (r) to {box} on (r) -> ((r + {k}) mod {world})"
        sources = [(s, (s + k) % world) for s in range(world)]
    return text, [(s, d, s * BLOCK + first, rows) for s, d in sources]


def generate(rng):
    """(plan text, mode, world, defect or None, [(name, text, copies)])."""
    world = rng.choice([2, 3, 4])
    rows = rng.choice([128, 256, 512])
    backend = rng.choice(["copy_engine", "copy_engine", "ldst", "tma"])
    mode = rng.choice(["pull", "push"])
    spell = rng.choice([0, 1])

    def make(name, k, first, n):
        return (name, *transfer(world, backend, mode, spell, k, first, n))

    transfers = [make(f"A_k{k}_c{c}", k, c * rows, rows)
                 for k in range(1, world) for c in range(BLOCK // rows)]
    defect = rng.choice([None, None, "split", "merge", "drop", "repeat"])
    i = rng.randrange(len(transfers))
    name = transfers[i][0]
    k, c = (int(x) for x in name[len("A_k"):].split("_c"))
    if defect == "split" and rows > 128:
        at = 128 * rng.randrange(1, rows // 128)
        transfers[i:i + 1] = [make(f"{name}_a", k, c * rows, at),
                              make(f"{name}_b", k, c * rows + at, rows - at)]
    elif defect == "merge" and c + 1 < BLOCK // rows:
        transfers = [t for t in transfers if t[0] not in (name, f"A_k{k}_c{c + 1}")]
        transfers.insert(min(i, len(transfers)), make(f"{name}_2", k, c * rows, 2 * rows))
    elif defect == "drop":
        del transfers[i]
    elif defect == "repeat":
        transfers.insert(rng.randrange(len(transfers) + 1), (f"{name}_again", *transfers[i][1:]))
    else:
        defect = None  # a chunk of one tile cannot be split, nor the last merged
    rng.shuffle(transfers)
    lines = [f"chunk.plan @ag world_size({world}) {{",
             f"  chunk.buffer @A : !chunk.buffer<{world * BLOCK}x{K}xbf16> bind(0)",
             f"  chunk.buffer @C : !chunk.buffer<{world * BLOCK}x{K}xbf16> bind(2)"]
    for order, (name, text, _) in enumerate(transfers):
        lines.append(f"  chunk.transfer @{name} {text} order({order})")
    lines.append('  chunk.consume @A dim(0) tile(128) index("pid_m")')
    lines.append("}")
    return "\n".join(lines) + "\n", backend, mode, world, defect, transfers


def valid(world, backend, mode, transfers):
    """Whether the plan can be carried out as written: tiles wait for one
    flag per chunk, so every transfer must write one whole chunk of one size
    (which is then the chunk size), and on every rank every chunk of every
    other rank's block must be written exactly once."""
    if backend in ("ldst", "tma") and mode == "push":
        return False  # copy programs load into their own rank's buffer
    sizes = {n for _, _, copies in transfers for _, _, _, n in copies}
    if len(sizes) != 1:
        return False
    [size] = sizes
    if BLOCK % size:
        return False
    written = {}
    for _, _, copies in transfers:
        for _, dst, first, n in copies:
            if first % size:
                return False
            written[(dst, first)] = written.get((dst, first), 0) + 1
    return all(written.get((d, first), 0) == 1
               for d in range(world) for first in range(0, world * BLOCK, size)
               if first // BLOCK != d)


def schedule_of(mlir):
    """The host schedule that chunk-lower-transfers left on the module (a
    dictionary attribute: `key = value`, integers `N : i64`, integer lists
    `array<i64: ...>`, strings without quotes or escapes inside), as JSON."""
    start = mlir.find("chunk.host_schedule = {")
    if start < 0:
        return None
    text, depth = mlir[start + len("chunk.host_schedule = "):], 0
    for end, c in enumerate(text):
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth == 0:
            break
    text = re.sub(r"array<i64: ([^>]*)>", r"[\1]", text[:end + 1])
    text = re.sub(r"array<i64>", "[]", text).replace(" : i64", "")
    return json.loads(re.sub(r"([{,] *)([a-z_]+) = ", r'\1"\2": ', text))


def check_schedule(schedule, mode, world, transfers):
    """Why the schedule does not do what the plan says, or None."""
    [chunks] = schedule["chunks"]
    per_chunk = chunks["rows_per_chunk"]
    base = chunks["flag_base"]
    wanted = {}
    for name, _, copies in transfers:
        for src, dst, first, n in copies:
            wanted[(name, dst)] = (src, first, n)
    seen = {}
    for driver, copies in enumerate(schedule["copies"]):
        for copy in copies:
            name, dst, src = copy["name"], copy["dst_rank"], copy["src_rank"]
            expected_driver = src if mode == "push" else dst
            if driver != expected_driver:
                return f"{name} to rank {dst} is on rank {driver}'s list, not {expected_driver}'s"
            if (name, dst) not in wanted:
                return f"{name} to rank {dst}: no such copy in the plan"
            w_src, first, n = wanted.pop((name, dst))
            span = (copy["rows"] - 1) * copy["dst_pitch"] + copy["row_elems"]
            if (src, copy["src_offset"], copy["dst_offset"], span) != (w_src, first * K, first * K, n * K):
                return f"{name} to rank {dst} copies {copy}, the plan says rows {first}..{first + n} from rank {w_src}"
            flag = copy.get("flag")  # absent: the copy sets no flag
            if flag is None:
                return f"{name} to rank {dst} sets no flag"
            chunk = flag - base
            if (first, n) != (chunk * per_chunk, per_chunk):
                return f"{name} to rank {dst} sets the flag of chunk {chunk} but copies rows {first}..{first + n}"
            if (dst, flag) in seen:
                return f"{name} and {seen[(dst, flag)]} both set flag {flag} on rank {dst}"
            seen[(dst, flag)] = name
    if wanted:
        return f"copies of the plan missing from the schedule: {sorted(wanted)[:3]}"
    for d in range(world):
        for chunk in range(world * BLOCK // per_chunk):
            owner = chunk * per_chunk // BLOCK
            if owner != d and (d, base + chunk) not in seen:
                return f"no copy sets chunk {chunk}'s flag on rank {d}"
    return None


def run(inputs, scratch, index, plan, backend):
    """The full pipeline's exit code and diagnostics, and the host schedule
    that chunk-lower-transfers makes of the plan alone (synco compile keeps
    it for the launch manifest, which needs a cubin; the copy engine's
    schedule does not depend on the kernel). ldst and tma copies are code in
    the kernel, which the GPU checks run (`build.sh --written-out`)."""
    path = os.path.join(scratch, f"plan{index}.mlir")
    with open(path, "w") as f:
        f.write(plan)
    done = subprocess.run(
        ["synco", "compile", os.path.join(inputs, "matmul_grouped.generic.mlir"), "--plan", path,
         "--pass-pipeline=builtin.module(synco-ag-gemm)", "--emit=mlir", "-o", os.devnull],
        capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or backend in ("ldst", "tma"):
        return done.returncode, done.stderr, None
    lowered = subprocess.run(
        ["synco-opt", path, "--pass-pipeline=builtin.module(chunk-lower-transfers)"],
        capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr + lowered.stderr, schedule_of(lowered.stdout)


def main():
    parser = argparse.ArgumentParser(description="Random written-out all-gathers against a model of them.")
    parser.add_argument("inputs", help="lit-tests/Inputs")
    parser.add_argument("--plans", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cases = [generate(rng) for _ in range(args.plans)]
    failures = 0
    counts = {}
    with tempfile.TemporaryDirectory() as scratch, \
            concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        answers = pool.map(lambda job: run(args.inputs, scratch, job[0], job[1][0], job[1][1]), enumerate(cases))
        for (plan, backend, mode, world, defect, transfers), (code, stderr, schedule) in zip(cases, answers):
            label = f"{backend} {defect or 'whole'}, {'valid' if valid(world, backend, mode, transfers) else 'refused'}"
            counts[label] = counts.get(label, 0) + 1
            if valid(world, backend, mode, transfers):
                why = f"a plan that can be carried out: exit code {code}" if code != 0 else None
                if why is None and backend == "copy_engine":
                    why = "no schedule" if schedule is None else check_schedule(schedule, mode, world, transfers)
            else:
                refused = code == 1 and "panicked" not in stderr and LOCATED_ERROR.search(stderr)
                why = None if refused else f"a plan with a {defect} transfer that cannot be carried out: exit code {code}, not a located error"
            if why:
                failures += 1
                print(f"FAIL: {why}\n{plan}{stderr}")
    summary = "; ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    print(f"{len(cases)} plans ({summary}), {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
