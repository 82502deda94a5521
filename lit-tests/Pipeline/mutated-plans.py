# Plans mutated against a real kernel, against a model of what fits it.
# The kernel is the tutorial's (examples/tutorial/linear_gelu.py): it loads
# X [M, K] (argument 0) in tiles of 128 rows at rows = pid_m * 128, W
# (argument 1) in columns at pid_n, and only stores Y (argument 3). The
# plan gathers X; each case changes the bound argument, the tile, the
# dimension, the named index, the element type, and whether X is consumed
# once, twice or not at all. A plan fits when it describes the kernel's
# loads of the buffer it gathers: X, bf16, dim(0), tile(128), index pid_m
# (named or found), consumed once. Every plan that fits must compile; every
# other one must be refused with an error at a source location (never a
# panic, never accepted: an accepted misfit compiles into a kernel that reads
# rows before they arrive).
#
# REQUIRES: triton
# RUN: %python %s %repo
#
# The cases are every combination (a few hundred), not a sample.

import concurrent.futures
import itertools
import os
import re
import subprocess
import sys
import tempfile

LOCATED_ERROR = re.compile(r"^\S+:\d+:\d+: error: ", re.M)
IMPORT = [
    "--kernel", "linear_gelu_kernel",
    "--signature", "*bf16,*bf16,*fp32,*bf16,i32,i32,i32,i32,i32,i32",
    "--constexpr", "stride_xk=1", "--constexpr", "stride_wn=1", "--constexpr", "stride_yn=1",
    "--divisible", "x_ptr,w_ptr,bias_ptr,y_ptr,M,N,K,stride_xm,stride_wk,stride_ym",
    "--constexpr", "BLOCK_M=128", "--constexpr", "BLOCK_N=256", "--constexpr", "BLOCK_K=64",
]


def plan(bind, element, dim, tile, index, consumes):
    named = f' index("{index}")' if index else ""
    lines = [
        "chunk.plan @p world_size(2) kernel(@linear_gelu_kernel) {",
        f"  chunk.buffer @X : !chunk.buffer<8192x4096x{element}> bind({bind})",
        "  chunk.all_gather @X dim(0) chunks(4) backend(copy_engine)",
    ]
    lines += [f"  chunk.consume @X dim({dim}) tile({tile}){named}"] * consumes
    return "\n".join(lines + ["}"]) + "\n"


def fits(bind, element, dim, tile, index, consumes):
    return (bind, element, dim, tile, consumes) == (0, "bf16", 0, 128, 1) and index in (None, "pid_m")


def main():
    repo = sys.argv[1]
    cases = list(itertools.product([0, 1, 3], ["bf16", "f32"], [0, 1], [64, 128, 256],
                                   [None, "pid_m", "pid_n"], [0, 1, 2]))
    failures, accepted, refused = 0, 0, 0
    with tempfile.TemporaryDirectory() as scratch:
        kernel = os.path.join(scratch, "kernel.mlir")
        subprocess.run(["synco", "import", os.path.join(repo, "examples/tutorial/linear_gelu.py"),
                        *IMPORT, "-o", kernel], check=True)

        def run(job):
            i, case = job
            path = os.path.join(scratch, f"plan{i}.mlir")
            with open(path, "w") as f:
                f.write(plan(*case))
            return subprocess.run(
                ["synco", "compile", kernel, "--plan", path,
                 "--pass-pipeline=builtin.module(synco-fuse)", "--emit=mlir", "-o", os.devnull],
                capture_output=True, text=True, timeout=120)

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for case, done in zip(cases, pool.map(run, enumerate(cases))):
                if fits(*case):
                    accepted += done.returncode == 0
                    why = None if done.returncode == 0 else f"a plan that fits: exit code {done.returncode}"
                else:
                    ok = done.returncode == 1 and "panicked" not in done.stderr and LOCATED_ERROR.search(done.stderr)
                    refused += bool(ok)
                    why = None if ok else f"a plan that does not fit: exit code {done.returncode}, not a located error"
                if why:
                    failures += 1
                    print(f"FAIL: {why}\n{plan(*case)}{done.stderr}")
    print(f"{len(cases)} plans: {accepted} that fit compiled, {refused} that do not were refused, {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
