# Plans mutated against real kernels, against a model of what fits each.
# Three suites, each every combination of the bound argument, the element
# type, the dimension, the tile, the named index and how many tile ops
# there are (a few hundred plans each, not a sample):
#
#  * the tutorial's kernel (examples/tutorial/linear_gelu.py), masked, with
#    runtime strides: it loads X [M, K] (argument 0) in tiles of 128 rows at
#    rows = pid_m * 128, W (argument 1) in columns at pid_n, and only stores
#    Y (argument 3). The plan gathers X. It fits when it describes the
#    kernel's loads of X: argument 0, bf16, dim(0), tile(128), index pid_m
#    (named or found), consumed once.
#  * the grouped GEMM (examples/ag_gemm/matmul.py, matmul_kernel_grouped,
#    GROUP_M swizzle, no masks): the plan gathers A (argument 0), loaded in
#    128-row tiles at pid_m; C is argument 2. Fits as above.
#  * the same GEMM's reduce-scatter (synco-gemm-rs): the plan produces P,
#    stored by the kernel as C (argument 2) in 128-row tiles at pid_m. It
#    fits when it describes those stores: argument 2, bf16, dim(0),
#    tile(128), index pid_m (named or found), produced once.
#
# Every plan that fits must compile; every other one must be refused with
# an error at a source location (never a panic, never accepted: an accepted
# misfit compiles into a kernel that reads rows before they arrive, or
# signals rows before they are written).
#
# REQUIRES: triton
# RUN: %python %s %repo

import concurrent.futures
import itertools
import os
import re
import subprocess
import sys
import tempfile

LOCATED_ERROR = re.compile(r"^\S+:\d+:\d+: error: ", re.M)
GEMM_ARGS = [
    "--signature", "*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32",
    "--constexpr", "stride_ak=1", "--constexpr", "stride_bn=1", "--constexpr", "stride_cn=1",
    "--divisible", "a_ptr,b_ptr,c_ptr,M,N,K,stride_am,stride_bk,stride_cm",
    "--constexpr", "BLOCK_M=128", "--constexpr", "BLOCK_N=256", "--constexpr", "BLOCK_K=64",
    "--constexpr", "GROUP_M=8",
]
TUTORIAL_ARGS = [
    "--signature", "*bf16,*bf16,*fp32,*bf16,i32,i32,i32,i32,i32,i32",
    "--constexpr", "stride_xk=1", "--constexpr", "stride_wn=1", "--constexpr", "stride_yn=1",
    "--divisible", "x_ptr,w_ptr,bias_ptr,y_ptr,M,N,K,stride_xm,stride_wk,stride_ym",
    "--constexpr", "BLOCK_M=128", "--constexpr", "BLOCK_N=256", "--constexpr", "BLOCK_K=64",
]


def gather_plan(kernel, out, out_arg, shape):
    def plan(bind, element, dim, tile, index, count):
        named = f' index("{index}")' if index else ""
        lines = [
            f"chunk.plan @p world_size(2) kernel(@{kernel}) {{",
            f"  chunk.buffer @X : !chunk.buffer<8192x4096x{element}> bind({bind})",
            f"  chunk.buffer @{out} : !chunk.buffer<{shape}xbf16> bind({out_arg})" if bind != out_arg else "",
            "  chunk.all_gather @X dim(0) chunks(4) backend(copy_engine)",
        ]
        lines += [f"  chunk.consume @X dim({dim}) tile({tile}){named}"] * count
        return "\n".join([line for line in lines if line] + ["}"]) + "\n"
    return plan


def reduce_scatter_plan(bind, element, dim, tile, index, count):
    named = f' index("{index}")' if index else ""
    lines = [
        "chunk.plan @p world_size(2) kernel(@matmul_kernel_grouped) {",
        f"  chunk.buffer @P : !chunk.buffer<8192x4096x{element}> bind({bind})",
        f"  chunk.buffer @C : !chunk.buffer<4096x4096x{element}>",
    ]
    lines += [f"  chunk.produce @tiles{i} @P dim({dim}) tile({tile}){named}" for i in range(count)]
    lines += [f"  chunk.reduce_scatter @P into @C dim(0) chunks(4) backend(ldst)"]
    return "\n".join(lines + ["}"]) + "\n"


def fits_as(arg):
    def fits(bind, element, dim, tile, index, count):
        return (bind, element, dim, tile, count) == (arg, "bf16", 0, 128, 1) and index in (None, "pid_m")
    return fits


# (name, kernel file, kernel, import arguments, plan, fits, pipeline, binds)
SUITES = [
    ("tutorial, gathered X", "examples/tutorial/linear_gelu.py", "linear_gelu_kernel", TUTORIAL_ARGS,
     gather_plan("linear_gelu_kernel", "Y", 3, "8192x7168"), fits_as(0), "synco-fuse", [0, 1, 3]),
    ("grouped GEMM, gathered A", "examples/ag_gemm/matmul.py", "matmul_kernel_grouped", GEMM_ARGS,
     gather_plan("matmul_kernel_grouped", "C", 2, "8192x7168"), fits_as(0), "synco-ag-gemm", [0, 1, 2]),
    ("grouped GEMM, produced P", "examples/ag_gemm/matmul.py", "matmul_kernel_grouped", GEMM_ARGS,
     reduce_scatter_plan, fits_as(2), "synco-gemm-rs", [0, 1, 2]),
]


def run_suite(repo, scratch, suite):
    name, source, kernel_name, args, plan, fits, pipeline, binds = suite
    cases = list(itertools.product(binds, ["bf16", "f32"], [0, 1], [64, 128, 256],
                                   [None, "pid_m", "pid_n"], [0, 1, 2]))
    kernel = os.path.join(scratch, f"{kernel_name}.mlir")
    subprocess.run(["synco", "import", os.path.join(repo, source), "--kernel", kernel_name, *args,
                    "-o", kernel], check=True)

    def run(job):
        i, case = job
        path = os.path.join(scratch, f"{pipeline}-plan{i}.mlir")
        with open(path, "w") as f:
            f.write(plan(*case))
        return subprocess.run(
            ["synco", "compile", kernel, "--plan", path,
             f"--pass-pipeline=builtin.module({pipeline})", "--emit=mlir", "-o", os.devnull],
            capture_output=True, text=True, timeout=120)

    failures, accepted, refused = 0, 0, 0
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
                print(f"FAIL ({name}): {why}\n{plan(*case)}{done.stderr}")
    print(f"{name}: {len(cases)} plans: {accepted} that fit compiled, {refused} that do not were refused, "
          f"{failures} failures")
    return failures


def main():
    repo = sys.argv[1]
    with tempfile.TemporaryDirectory() as scratch:
        failures = sum(run_suite(repo, scratch, suite) for suite in SUITES)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
