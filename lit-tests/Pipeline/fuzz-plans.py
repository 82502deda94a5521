# The bundled plans, mutated, through their fusing pipelines: every number
# in a plan (shapes, dimensions, tiles, chunk counts, world sizes, bound
# arguments) replaced by each of a set of edge values (0, -1, small primes,
# i32 and i64 limits, past i64), and every line dropped or doubled. Each
# mutant runs `synco compile --plan ... --emit=mlir` on the kernel the
# example fuses, and must be accepted, or refused with an error at a source
# location, or refused with a clear `synco: error:` -- never a panic, a
# signal, an assertion, an unclear exit or a hang.
#
# REQUIRES: triton
# RUN: %python %s %repo
#
# It prints the counts per outcome; a bad outcome prints the mutant and its
# output and fails the test.

import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

EDGE_VALUES = [0, -1, 1, 3, 7, 2**31 - 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**64]
SECONDS = 120
LOCATED = re.compile(r"^\S+:\d+:\d+: error: ", re.M)
CLEAR = re.compile(r"^synco: error: \S", re.M)
CRASH = re.compile(r"panicked|PLEASE submit a bug report|Assertion|Segmentation|stack backtrace|Aborted")
# A number in a plan: not part of a name or an element type (bf16), but the
# dimensions of a shape (8192x4096).
NUMBER = re.compile(r"(?<![A-Za-z_@\d])\d+|(?<=\dx)\d+")

KERNEL_ARGS = [
    "--signature", "*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32",
    "--constexpr", "stride_ak=1", "--constexpr", "stride_bn=1", "--constexpr", "stride_cn=1",
    "--divisible", "a_ptr,b_ptr,c_ptr,M,N,K,stride_am,stride_bk,stride_cm",
    "--constexpr", "BLOCK_M=128", "--constexpr", "BLOCK_N=256", "--constexpr", "BLOCK_K=64",
]
KERNELS = {
    "grouped": ["--kernel", "matmul_kernel_grouped", *KERNEL_ARGS, "--constexpr", "GROUP_M=8"],
    "sources": ["--kernel", "matmul_kernel_sources", *KERNEL_ARGS, "--constexpr", "GROUP_M=32",
                "--constexpr", "SOURCES=2"],
}
# (plan, kernel, pipeline), as examples/run-example.sh fuses them.
EXAMPLES = [
    ("examples/ag_gemm/plan.mlir", "grouped", "synco-ag-gemm"),
    ("examples/gemm_rs/plan.mlir", "grouped", "synco-gemm-rs"),
    ("examples/gemm_rs/plan-all-reduce.mlir", "grouped", "synco-gemm-ar"),
    ("examples/gemm_rs/plan-gather.mlir", "sources", "synco-gemm-rs-gather"),
    ("examples/gemm_rs/plan-all-reduce-gather.mlir", "sources", "synco-gemm-ar-gather"),
]


def plan_text(repo, path):
    with open(os.path.join(repo, path)) as f:
        return "".join(line for line in f if not line.lstrip().startswith("//"))


def mutants(text):
    """(description, mutated text) for every mutation of `text`."""
    for match in NUMBER.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        for value in EDGE_VALUES:
            if str(value) != match.group():
                yield (f"line {line}: {match.group()} -> {value}",
                       text[: match.start()] + str(value) + text[match.end():])
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines) - 1):
        yield f"line {i + 1} dropped", "".join(lines[:i] + lines[i + 1:])
        yield f"line {i + 1} doubled", "".join(lines[: i + 1] + lines[i:])


def classify(run):
    if run is None:
        return "hang"
    if run.returncode < 0 or CRASH.search(run.stderr):
        return "crash"
    if run.returncode == 0:
        return "accepted"
    if run.returncode == 1 and LOCATED.search(run.stderr):
        return "refused with a location"
    if run.returncode == 1 and CLEAR.search(run.stderr):
        return "refused clearly, no location"
    return "unclear"


def run_case(kernel, pipeline, text, scratch, index):
    path = os.path.join(scratch, f"mutant{index}.mlir")
    with open(path, "w") as f:
        f.write(text)
    try:
        return subprocess.run(
            ["synco", "compile", kernel, "--plan", path, f"--pass-pipeline=builtin.module({pipeline})",
             "--emit=mlir", "-o", os.devnull],
            capture_output=True, text=True, timeout=SECONDS,
        )
    except subprocess.TimeoutExpired:
        return None


def main():
    repo = sys.argv[1]
    counts, bad = {}, 0
    with tempfile.TemporaryDirectory() as scratch:
        kernels = {}
        for name, args in KERNELS.items():
            kernels[name] = os.path.join(scratch, f"{name}.mlir")
            subprocess.run(["synco", "import", os.path.join(repo, "examples/ag_gemm/matmul.py"), *args,
                            "-o", kernels[name]], check=True)
        cases = [(plan, pipeline, kernels[kernel], what, text)
                 for plan, kernel, pipeline in EXAMPLES
                 for what, text in mutants(plan_text(repo, plan))]
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            runs = pool.map(lambda ic: run_case(ic[1][2], ic[1][1], ic[1][4], scratch, ic[0]),
                            enumerate(cases))
            for (plan, pipeline, _, what, text), run in zip(cases, runs):
                outcome = classify(run)
                counts[outcome] = counts.get(outcome, 0) + 1
                if outcome == "accepted":
                    print(f"accepted: {plan} {what}")
                if outcome in ("hang", "crash", "unclear"):
                    bad += 1
                    output = "no answer" if run is None else f"exit {run.returncode}\n{run.stderr[-3000:]}"
                    print(f"FAIL ({outcome}) {plan} {what} via {pipeline}:\n{text}{output}\n")
    print(f"{len(cases)} mutants: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    sys.exit(1 if bad else 0)


main()
