# A staged reduction lists a copy per chunk, source and owner for the
# runtime (or the copy programs): a reduce-scatter of 1024 ranks in 2
# chunks, written out as its 2,048 transfers (each rank-mapped), would list
# 2,095,104. chunk-fuse-reductions{mode=stage} refuses it at its first
# transfer before listing any; it used to build the list until the machine
# ran out of memory.
#
# RUN: %python %s %S/fuse-reductions-stage.mlir

import re
import subprocess
import sys
import tempfile

W = 1024
SECONDS = 120


def kernel(stage_test):
    """The tt.func of the first case of fuse-reductions-stage.mlir."""
    text = open(stage_test).read()
    first = text[text.index('  "tt.func"'):text.index("// -----")]
    return first.rstrip().removesuffix("}").rstrip()


def transfer(k, c, order):
    mode, src = ("local copy_engine", "(d0)") if k == 0 else ("pull ldst", f"((d0 + {k}) mod {W})")
    rows = f"d0 * 256 + {128 * c}" if c else "d0 * 256"
    return (f"    chunk.transfer @C_p{k}_c{c} {mode} from <@P[(d0) -> ({rows}, 0)] [128, 64]> on (d0) -> {src} "
            f"to <@C[(d0) -> ({128 * c}, 0)] [128, 64]> on (d0) -> (d0) order({order}) after [@tiles] "
            f'reduce(sum) collective(reduce_scatter) {{group = "reduce_scatter_C"}}')


transfers = [transfer(k, c, 2 * k + c) for k in range(W) for c in range(2)]
module = "\n".join([
    "module {",
    f"  chunk.plan @p world_size({W}) {{",
    f"    chunk.buffer @P : !chunk.buffer<{256 * W}x64xbf16> bind(0)",
    "    chunk.buffer @C : !chunk.buffer<256x64xbf16>",
    "    chunk.produce @tiles @P dim(0) tile(128)",
    *transfers,
    "  }",
    kernel(sys.argv[1]),
    "}",
]) + "\n"

with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
    f.write(module)
    f.flush()
    try:
        run = subprocess.run(
            ["synco-opt", f.name, "-o", "/dev/null",
             "--pass-pipeline=builtin.module(chunk-fuse-reductions{mode=stage})"],
            capture_output=True, text=True, timeout=SECONDS)
        status, stderr = run.returncode, run.stderr
    except subprocess.TimeoutExpired:
        status, stderr = None, f"no answer in {SECONDS} s"

expected = (r":6:5: error: chunk-fuse-reductions: the staged reduction of @P records 2095104 copies "
            r"\(2 chunks per rank, 1024 ranks\): more than 1048576 per-rank copies")
if status == 1 and re.search(expected, stderr):
    print(f"ok   refused at the first transfer: {len(transfers)} transfers on {W} ranks")
    sys.exit(0)
print(f"FAIL exit {status}, expected the located refusal; stderr:\n{stderr[-2000:]}")
sys.exit(1)
