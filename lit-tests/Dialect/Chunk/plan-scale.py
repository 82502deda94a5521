# Verifying a plan costs about its size, not its size squared: a plan of
# 12,000 all-gathers of 2 ranks in 2 chunks, written out as their 48,000
# transfers (what chunk-expand-collectives makes of them), and the same
# plan with its buffers declared after every transfer that names them. When
# every op looked its buffers up by a scan of the plan, a quarter of it
# (3,000 all-gathers) took 11 s; the whole, about 16 times that.
#
# RUN: %python %s
#
# The limit below is about 15 times what it takes on a 2-core machine.

import subprocess
import sys
import tempfile
import time

COLLECTIVES = 12000
SECONDS = 30


def transfers(i):
    lines = []
    for peer, mode, src in [(0, "local", "(r)"), (1, "push", "((r + 1) mod 2)")]:
        block = "r" if peer == 0 else "((r + 1) mod 2)"
        for chunk in range(2):
            offset = f"{block} * 128" + (" + 64" if chunk else "")
            region = f"<@A{i}[(r) -> ({offset}, 0)] [64, 64]>"
            lines.append(
                f"  chunk.transfer @A{i}_p{peer}_c{chunk} {mode} copy_engine from {region} on (r) -> {src} "
                f"to {region} on (r) -> (r) order({2 * peer + chunk}) collective(all_gather) "
                f'{{group = "all_gather_A{i}"}}'
            )
    return lines


def plan(buffers_last):
    buffers = [f"  chunk.buffer @A{i} : !chunk.buffer<256x64xbf16>" for i in range(COLLECTIVES)]
    body = [line for i in range(COLLECTIVES) for line in transfers(i)]
    ops = body + buffers if buffers_last else buffers + body
    return "\n".join(["chunk.plan @p world_size(2) {", *ops, "}"]) + "\n"


failures = 0
for buffers_last in [False, True]:
    name = "buffers after the transfers" if buffers_last else "buffers first"
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(plan(buffers_last))
        f.flush()
        start = time.monotonic()
        try:
            run = subprocess.run(["synco-opt", f.name, "-o", "/dev/null"], capture_output=True,
                                 text=True, timeout=SECONDS)
            ok, why = run.returncode == 0, run.stderr[-2000:]
        except subprocess.TimeoutExpired:
            ok, why = False, f"no answer in {SECONDS} s"
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {4 * COLLECTIVES} transfers ({time.monotonic() - start:.2f} s)")
    if not ok:
        print(why)
        failures += 1
sys.exit(1 if failures else 0)
