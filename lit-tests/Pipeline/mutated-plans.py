# Bad plans are refused with an error at a source location, never with a
# panic, a crash or a hang. Each base plan below compiles through its named
# pipeline (to MLIR, no Triton); every mutation of it (one number replaced,
# one keyword swapped, one op dropped or repeated) must either compile too or
# fail with exit code 1 and at least one `file:line:col: error:` line.
#
# RUN: %python %s %inputs
#
# With --random N --depth D --seed S it compiles N plans instead, each made
# by D mutations in a row from a base (seeded: the same plans every run).
# RUN: %python %s %inputs --random 600 --depth 3 --seed 1
#
# The single mutations found no failure when written; chains of 2 and 3
# (about 54000 plans, with world sizes up to 2^31) found a plan of 2^31
# ranks that aborted allocating 48 GiB and one-shot all-reduces of 256 to
# 1024 ranks that ran for minutes, now refused (world_size at most 1024,
# chunk-expand-collectives' limit on per-rank copies). A mutation that
# fails prints its plan and what synco said.

import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

# kernel (in lit-tests/Inputs, BLOCK 128x128x64), pipeline, plan
BASES = [
    ("matmul_grouped.generic.mlir", "synco-ag-gemm", """\
chunk.plan @ag_gemm world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<8192x7168xbf16> bind(2)
  chunk.all_gather @A dim(0) chunks(4) backend(copy_engine)
  chunk.consume @A dim(0) tile(128) index("pid_m")
}
"""),
    ("matmul_grouped.generic.mlir", "synco-gemm-rs", """\
chunk.plan @gemm_rs world_size(2) {
  chunk.buffer @P : !chunk.buffer<8192x4096xbf16> bind(2)
  chunk.buffer @C : !chunk.buffer<4096x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128) index("pid_m")
  chunk.reduce_scatter @P into @C dim(0) chunks(4) backend(copy_engine)
}
"""),
    ("matmul_grouped.generic.mlir", "synco-gemm-ar", """\
chunk.plan @gemm_ar world_size(2) {
  chunk.buffer @P : !chunk.buffer<8192x4096xbf16> bind(2)
  chunk.buffer @C : !chunk.buffer<8192x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128) index("pid_m")
  chunk.all_reduce @P into @C dim(0) chunks(4) backend(ldst) algorithm(two_shot)
}
"""),
    ("matmul.generic.mlir", "synco-gemm-ar", """\
chunk.plan @gemm_ar world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x4096xbf16> bind(2)
  chunk.buffer @C : !chunk.buffer<1024x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128) index("pid_m")
  chunk.all_reduce @P into @C dim(0) chunks(4) backend(ldst) algorithm(one_shot)
}
"""),
    ("matmul_grouped.generic.mlir", "synco-ag-gemm", """\
chunk.plan @ag_gemm4 world_size(4) {
  chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(2) backend(ldst)
  chunk.consume @A dim(0) tile(128) index("pid_m")
}
"""),
    # Written out as transfers, with the plan's own rank maps: mutations
    # reach the maps' numbers (a rotation by -1, a floordiv, offsets).
    ("matmul_grouped.generic.mlir", "synco-ag-gemm", """\
chunk.plan @ag_ring world_size(4) {
  chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
  chunk.transfer @own local copy_engine from <@A[(r) -> (r * 2048, 0)] [2048, 4096]> on (r) -> (r) to <@A[(r) -> (r * 2048, 0)] [2048, 4096]> on (r) -> (r) order(0)
  chunk.transfer @left pull ldst from <@A[(r) -> (((r - 1) mod 4) * 2048, 0)] [2048, 4096]> on (r) -> ((r - 1) mod 4) to <@A[(r) -> (((r - 1) mod 4) * 2048, 0)] [2048, 4096]> on (r) -> (r) order(1)
  chunk.transfer @across pull ldst from <@A[(r) -> (r * 2048 + 4096 - (r floordiv 2) * 8192, 0)] [2048, 4096]> on (r) -> ((r + 2) mod 4) to <@A[(r) -> (((r + 2) mod 4) * 2048, 0)] [2048, 4096]> on (r) -> (r) order(2)
  chunk.transfer @right pull ldst from <@A[(r) -> (((r + 1) mod 4) * 2048, 0)] [2048, 4096]> on (r) -> ((r + 1) mod 4) to <@A[(r) -> (((r + 1) mod 4) * 2048, 0)] [2048, 4096]> on (r) -> (r) order(3)
  chunk.consume @A dim(0) tile(128) index("pid_m")
}
"""),
    ("matmul_sources.generic.mlir", "synco-gemm-rs-gather", """\
chunk.plan @gemm_rs_gather world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x1024xbf16>
  chunk.buffer @Ag : !chunk.buffer<8192x1024xbf16> bind(0)
  chunk.buffer @Bg : !chunk.buffer<2048x8192xbf16> bind(1)
  chunk.all_to_all @A into @Ag dim(0) chunks(1)
  chunk.all_gather @Bg dim(0) chunks(4) split(1)
  chunk.consume @Ag dim(0) tile(128) index("pid_m") source("src")
  chunk.consume @Bg dim(1) tile(128) index("pid_n") source("src")
}
"""),
    ("matmul_sources.generic.mlir", "synco-gemm-ar-gather", """\
chunk.plan @gemm_ar_gather world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x1024xbf16>
  chunk.buffer @Ag : !chunk.buffer<8192x1024xbf16> bind(0)
  chunk.buffer @Bg : !chunk.buffer<2048x8192xbf16> bind(1)
  chunk.buffer @C : !chunk.buffer<8192x8192xbf16> bind(2)
  chunk.all_to_all @A into @Ag dim(0) chunks(1)
  chunk.all_gather @Bg dim(0) chunks(4) split(1)
  chunk.consume @Ag dim(0) tile(128) index("pid_m") source("src")
  chunk.consume @Bg dim(1) tile(128) index("pid_n") source("src")
  chunk.produce @tiles @C dim(1) tile(128) index("pid_n")
  chunk.all_gather @C dim(0) chunks(2) split(1)
}
"""),
]

NUMBERS = ["0", "3", "-1", "2147483648", "99999999999999999999"]
KEYWORDS = {
    "copy_engine": ["ldst", "auto", "tma"],
    "ldst": ["copy_engine"],
    "two_shot": ["one_shot"],
    "bf16": ["f16", "f32"],
    '"pid_m"': ['"pid_n"', '"nope"'],
    '"pid_n"': ['"pid_m"'],
    '"src"': ['"pid_m"'],
    "dim(0)": ["dim(1)"],
    "dim(1)": ["dim(0)", "dim(2)"],
    "bind(0)": ["bind(1)", "bind(9)"],
    "bind(2)": ["bind(0)"],
    "split(1)": ["split(0)"],
    "@tiles": ["@other"],
    # Rank maps (the written-out base).
    " mod ": [" floordiv ", " ceildiv "],
    " - ": [" + "],
    " + ": [" - "],
    "(r) -> (r)": ["(r) -> ((r + 1) mod 4)"],
}
LOCATED_ERROR = re.compile(r"^\S+:\d+:\d+: error: ", re.M)


def mutations(plan):
    """(description, mutated plan) for every single mutation of `plan`."""
    body = plan.index("{")
    for m in re.finditer(r"(?<![\w@])\d+(?!\w)", plan):
        for value in NUMBERS:
            if value != m.group():
                yield f"{m.group()} -> {value} at {m.start()}", plan[: m.start()] + value + plan[m.end():]
    for word, replacements in KEYWORDS.items():
        for m in re.finditer(re.escape(word), plan):
            if m.start() < body:
                continue
            for value in replacements:
                yield f"{word} -> {value} at {m.start()}", plan[: m.start()] + value + plan[m.end():]
    lines = plan.splitlines(keepends=True)
    for i, line in enumerate(lines[1:-1], start=1):
        yield f"line {i + 1} dropped", "".join(lines[:i] + lines[i + 1:])
        yield f"line {i + 1} repeated", "".join(lines[: i + 1] + [line] + lines[i + 1:])


def compile_plan(inputs, scratch, kernel, pipeline, plan, name):
    path = os.path.join(scratch, f"{name}.mlir")
    with open(path, "w") as f:
        f.write(plan)
    try:
        done = subprocess.run(
            ["synco", "compile", os.path.join(inputs, kernel), "--plan", path,
             f"--pass-pipeline=builtin.module({pipeline})", "--emit=mlir",
             "-o", os.path.join(scratch, f"{name}.out.mlir")],
            capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "no answer within 120 s"
    return done.returncode, done.stderr


def random_chains(plan, count, depth, rng):
    """`count` (description, plan) pairs, each `depth` mutations in a row."""
    for _ in range(count):
        mutated, steps = plan, []
        for _ in range(depth):
            choices = list(mutations(mutated))
            if not choices:
                break
            what, mutated = rng.choice(choices)
            steps.append(what)
        yield "; ".join(steps), mutated


def main():
    parser = argparse.ArgumentParser(description="Compile mutated plans; every one must compile or fail cleanly.")
    parser.add_argument("inputs", help="lit-tests/Inputs")
    parser.add_argument("--random", type=int, metavar="N", help="N random chains of mutations instead of all single ones")
    parser.add_argument("--depth", type=int, default=2, help="mutations per random chain")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    failures = 0
    runs = 0
    with tempfile.TemporaryDirectory() as scratch, \
            concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for b, (kernel, pipeline, plan) in enumerate(BASES):
            code, stderr = compile_plan(args.inputs, scratch, kernel, pipeline, plan, f"base{b}")
            if code != 0:
                print(f"FAIL: the base plan of {pipeline} does not compile:\n{plan}{stderr}")
                failures += 1
                continue
            if args.random:
                cases = list(random_chains(plan, args.random // len(BASES), args.depth, rng))
            else:
                cases = list(mutations(plan))
            answers = pool.map(
                lambda job: compile_plan(args.inputs, scratch, kernel, pipeline, job[1][1], f"m{b}_{job[0]}"),
                enumerate(cases))
            for (what, mutated), (code, stderr) in zip(cases, answers):
                runs += 1
                if code == 0:
                    continue
                if code == 1 and "panicked" not in stderr and LOCATED_ERROR.search(stderr):
                    continue
                failures += 1
                print(f"FAIL: {pipeline}, {what}: exit code {code}\n{mutated}{stderr}")
    print(f"{runs} mutated plans, {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
