"""The table of an A/B call: variants timed on each side in turn, run by run.

Reads DIR/<set>-<side>-<run>.json (synco-bench --out of each set of
variants, each side, each run) and prints, per shape and variant, every
run's median time on each side and the overlap efficiency against the
median of all runs' floors (max of the cuBLAS local GEMM and the copy of
what a rank sends, as in report.py's tables, docs/floor.md). A '!' marks a time
whose variant failed its check.

    python3 ab_table.py DIR --sides old new --sets rsg arg ag --runs 2 \\
        [--labels "one stream" "A beside"]
"""
import argparse
import json
import os
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--sides", nargs="+", required=True, help="the file names' side tags, in column order")
    ap.add_argument("--sets", nargs="+", required=True, help="the file names' set tags")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--labels", nargs="+", help="column titles for the sides (default: the tags)")
    args = ap.parse_args()
    labels = args.labels or args.sides
    if len(labels) != len(args.sides):
        ap.error("--labels needs one title per side")
    rows, floors = {}, {}
    for name in args.sets:
        for side in args.sides:
            for run in range(1, args.runs + 1):
                path = os.path.join(args.dir, f"{name}-{side}-{run}.json")
                try:
                    with open(path) as f:
                        shapes = json.load(f)
                except (OSError, json.JSONDecodeError) as e:
                    print(f"ab_table.py: {path}: {e}", file=sys.stderr)
                    continue
                for shape in shapes:
                    floors.setdefault(shape["shape"], []).append(max(shape["cublas_gemm_ms"], shape["comm_ms"]))
                    for v in shape["variants"]:
                        cell = rows.setdefault((shape["shape"], v["name"]), {})
                        cell.setdefault(side, []).append((v["median_ms"], v.get("ok")))
    print(f"{'shape':24s} {'variant':24s} " + " ".join(f"{label + ' ms':>19s}" for label in labels)
          + "  efficiency (floor = median)")
    for (shape, name), per in sorted(rows.items()):
        floor = statistics.median(floors[shape])
        times = [" / ".join(f"{t:.4f}" + ("" if ok else "!") for t, ok in per.get(side, [])) for side in args.sides]
        eff = " | ".join(" / ".join(f"{floor / t:.3f}" for t, _ in per.get(side, [])) for side in args.sides)
        print(f"{shape:24s} {name:24s} " + " ".join(f"{t:>19s}" for t in times) + f"  {eff}")
    print("floor (median over the runs, ms):", {k: round(statistics.median(v), 4) for k, v in floors.items()})


if __name__ == "__main__":
    main()
