"""Issue 7's targets, scored from one device call's tables.

Reads the results_*.json that report.py wrote in DIR (reduce-scatter: rs
and rsg; all-reduce: ar2, ar and arg) and writes DIR/targets.md (also
printed): per shape, Synco's own choice (style `grouped+auto`: the
`backend(auto)`, `chunks(auto)` plan of the partial exchange) and the
fastest Synco plan of the call (any transport, one-shot, or computed from
gathered operands), each with its efficiency (the floor over its time, as
in the tables) and its speedup over the baselines; then each target of the
issue, met or not, shape by shape:

* faster than every baseline on every shape (Synco's own choice: PyTorch
  back to back and async-TP for the reduce-scatter, GEMM then NCCL
  all-reduce for the all-reduce);
* efficiency >= 0.85 where M >= 4096 and >= 0.7 elsewhere (the fastest
  plan);
* the decode-size all-reduce (M = 1024) >= 1.3x faster than GEMM then NCCL
  all-reduce (the fastest plan).

    python3 benches/fused/targets.py DIR
"""

import argparse
import json
import sys
from pathlib import Path

OPERATORS = {
    "reduce-scatter": ["rs", "rsg"],
    "all-reduce": ["ar2", "ar", "arg"],
}
AUTO_STYLE = "grouped+auto"


def rows_of(directory, op):
    path = directory / f"results_{op}.json"
    if not path.exists():
        return []
    return [dict(row, op=op) for row in json.loads(path.read_text())["rows"]]


def time_of(row):
    times = [t for t in (row.get("synco_auto_ms"), row.get("best_ms")) if t is not None]
    return min(times) if times else None


def efficiency_target(m):
    return 0.85 if m >= 4096 else 0.7


def score(directory):
    lines = []
    for operator, ops in OPERATORS.items():
        rows = [r for op in ops for r in rows_of(directory, op) if time_of(r) is not None]
        if not rows:
            continue
        shapes = sorted({(r["m"], r["k"], r["n_local"]) for r in rows})
        lines += [f"## {operator}", "",
                  "| shape | own choice (ms) | eff | vs back to back | vs async-TP | fastest plan (ms) | eff | vs back to back |",
                  "|---|---|---|---|---|---|---|---|"]
        faster, efficient, decode = [], [], []
        for shape in shapes:
            of_shape = [r for r in rows if (r["m"], r["k"], r["n_local"]) == shape]
            best = min(of_shape, key=time_of)
            own = next((r for r in of_shape if r["op"] == ops[0] and r["style"] == AUTO_STYLE), None)
            name = "x".join(map(str, shape))
            b2b = best["torch_b2b_ms"]
            cells = ["-"] * 4
            if own is not None:
                atp = own.get("torch_async_tp_ms")
                beats = time_of(own) < b2b and (atp is None or time_of(own) < atp)
                faster.append((name, beats))
                cells = [f"{time_of(own):.3f}", f"{own['efficiency']:.2f}", f"{b2b / time_of(own):.2f}x",
                         f"{atp / time_of(own):.2f}x" if atp else "-"]
            efficient.append((name, best["efficiency"] >= efficiency_target(shape[0])))
            if operator == "all-reduce" and shape[0] == 1024:
                decode.append((name, b2b / time_of(best) >= 1.3))
            label = f"{best['op']} {best['style']}"
            lines.append(f"| {name} | " + " | ".join(cells)
                         + f" | {time_of(best):.3f} ({label}) | {best['efficiency']:.2f} | {b2b / time_of(best):.2f}x |")
        lines.append("")

        def verdict(title, results):
            if not results:
                return
            met = [n for n, ok in results if ok]
            missed = [n for n, ok in results if not ok]
            tail = f"; missed: {', '.join(missed)}" if missed else ""
            lines.append(f"* {title}: met on {len(met)} of {len(results)}{tail}")

        verdict("own choice faster than every baseline", faster)
        verdict("fastest plan's efficiency >= 0.85 (M >= 4096) / 0.7", efficient)
        if decode:
            verdict("decode all-reduce >= 1.3x over GEMM then NCCL all-reduce", decode)
        lines.append("")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="a directory report.py wrote results_*.json into")
    args = parser.parse_args()
    lines = score(args.dir)
    if not lines:
        sys.exit(f"targets.py: no results_rs.json, results_ar2.json, ... in {args.dir}")
    text = "\n".join([f"# Issue 7's targets ({args.dir.resolve().name})", ""] + lines)
    (args.dir / "targets.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
