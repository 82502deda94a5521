"""Fits the chunk-size cost model (crates/synco-cost-model) to a benchmark's
chunk-count sweep, by grid search on the squared relative error, and prints
the constants as calibration JSON (chunk-select-chunk-size{calibration=...})
and how often the fitted model picks a count within 5% of the best.

  python3 calibrate.py SWEEP.json > calibration.json

SWEEP.json: a synco.json whose all-gather variants sweep the chunk count
(build.sh's default --chunks "1 2 4 8 16"). results/calibration.json and
Machine::H200_NVLINK were fitted to the sweep of 900e242
(passes/docs/cost-model-calibration.md).
"""

import collections
import itertools
import json
import sys


def predict(c, world, rows_per_rank, row_bytes, flops_per_row, n):
    rows = rows_per_rank / n
    t_chunk = c["copy_latency_us"] + rows * row_bytes / (c["link_gbps"] * 1e3) + c["sync_us"]
    t_rows = rows * flops_per_row / (c["gemm_tflops"] * 1e6) + c["wait_us"]
    finish = n * t_rows
    for i in range(1, (world - 1) * n + 1):
        finish = max(i * t_chunk, finish) + t_rows
    return finish + c["launch_us"]


def main():
    shapes = json.load(open(sys.argv[1]))
    data = []
    for s in shapes:
        w, m, k, n = s["world"], s["m"], s["k"], s["n"]
        for v in s["variants"]:
            if v["fused"] and not v["auto"] and v["median_ms"]:
                data.append(((w, m // w, k * 2, 2 * k * n, v["chunks"]), v["median_ms"] * 1000, s["shape"] + v["style"]))
    grid = {
        "link_gbps": [330, 350, 370, 394],
        "copy_latency_us": [2, 5, 10, 15],
        "sync_us": [0, 5, 10],
        "gemm_tflops": [600, 650, 700, 750],
        "launch_us": [10, 20, 30, 40],
        "wait_us": [0, 1, 2, 4],
    }
    best = None
    for values in itertools.product(*grid.values()):
        c = dict(zip(grid, values))
        err = sum((predict(c, *x) / y - 1) ** 2 for x, y, _ in data)
        if best is None or err < best[0]:
            best = (err, c)
    c = best[1]
    table = collections.defaultdict(dict)
    for x, y, key in data:
        table[key][x[4]] = (predict(c, *x), y)
    within = sum(1 for v in table.values() if v[min(v, key=lambda n: v[n][0])][1] <= 1.05 * min(t for _, t in v.values()))
    print(json.dumps(c))
    print(f"fit error {best[0]:.3f}; picks within 5% of the best on {within} of {len(table)} sweeps", file=sys.stderr)


if __name__ == "__main__":
    main()
