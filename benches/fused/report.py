"""Merges the benchmark outputs into <prefix>.json, a markdown table
(<prefix>.md) and a plot (<prefix>.png); prefix `results` for all-gather +
GEMM, `results_rs` for GEMM + reduce-scatter (--op rs), `results_ar` for
GEMM + one-shot all-reduce (--op ar; baseline: GEMM then NCCL all-reduce,
from the reduce-scatter run's PyTorch rows).

  python3 report.py [--op ag|rs|ar] --synco synco.json --torch torch.json [torch-2.json ...] \
      --machine gpus.txt --commit HASH --out-dir DIR

With several --torch files (PyTorch runs of the same call, e.g. before and
after Synco's), every baseline time is the fastest of the runs: PyTorch
times move by up to a third between runs here, and the fastest is the
conservative choice for Synco's speedups. Every run's times are kept in
the JSON (`*_runs`).

Definitions (all times measured in the same run):
  floor       = max(cuBLAS GEMM on the local operands, the communication
                alone): peer copies of the bytes each rank receives
                (all-gather) or sends (reduce-scatter);
  efficiency  = floor / Synco fused (auto chunk count);
  speedup     = baseline / Synco fused (auto).
"""

import argparse
import json
import math


def fastest_of(runs, op):
    """Per shape, each PyTorch time's minimum over `runs` (and every run's
    value under `<name>_runs`)."""
    rows = {}
    for run in runs:
        for r in run["results"]:
            if r.get("op", "ag") != op:
                continue
            row = rows.setdefault((r["m"], r["k"], r["n"]), {})
            for name, value in r.items():
                if name.startswith("torch_") and name.endswith("_ms"):
                    row.setdefault(f"{name}_runs", []).append(value)
                elif name not in row:
                    row[name] = value
    for row in rows.values():
        for name in [n for n in row if n.endswith("_ms_runs")]:
            values = [v for v in row[name] if v is not None]
            row[name[: -len("_runs")]] = min(values) if values else None
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--synco", required=True)
    ap.add_argument("--torch", required=True, nargs="+")
    ap.add_argument("--machine", default=None)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--op", choices=["ag", "rs", "rsg", "ar", "ar2", "arg"], default="ag")
    args = ap.parse_args()
    synco = [s for s in json.load(open(args.synco)) if s.get("op", "ag") == args.op]
    torch_runs = [json.load(open(path)) for path in args.torch]
    torch_data = torch_runs[0]
    # The all-reduce baseline (GEMM then NCCL all-reduce) is in the
    # reduce-scatter run's rows.
    all_reduce = args.op in ("ar", "ar2", "arg")
    torch_op = "rs" if all_reduce or args.op == "rsg" else args.op
    torch_rows = fastest_of(torch_runs, torch_op)
    if all_reduce:
        for r in torch_rows.values():
            r["torch_b2b_ms"] = r.get("torch_b2b_allreduce_ms")
            r.pop("torch_async_tp_ms", None)
    prefix = {"ag": "results", "rs": "results_rs", "rsg": "results_rsg", "ar": "results_ar", "ar2": "results_ar2",
              "arg": "results_arg"}[args.op]
    title = {"ag": "All-gather + GEMM", "rs": "GEMM + reduce-scatter",
             "rsg": "GEMM + reduce-scatter from gathered operands", "ar": "GEMM + all-reduce (one-shot)",
             "ar2": "GEMM + all-reduce (two-shot)", "arg": "GEMM + all-reduce from gathered operands"}[args.op]
    rows = []
    for shape in synco:
        key = (shape["m"], shape["k"], shape["n"])
        t = torch_rows.get(key, {})
        fused = [v for v in shape["variants"] if v["fused"] and v["ok"] and v["median_ms"]]
        local = {v["style"]: v["median_ms"] for v in shape["variants"] if not v["fused"] and v["median_ms"]}
        by_style = {}
        for v in fused:
            backend = v.get("backend", "copy_engine")
            if args.op == "ag":
                key = v["style"] if backend == "copy_engine" else f"{v['style']}+{backend}"
            else:
                # How the partials travel: SM push (ldst), SM pull, copy engine.
                transport = {"ldst": "push", "ldst_pull": "pull", "copy_engine": "copy_engine"}.get(backend, backend)
                key = f"{v['style']}+{transport}"
            by_style.setdefault(key, []).append(v)
        floor = max(shape["cublas_gemm_ms"], shape["comm_ms"])
        for style, variants in by_style.items():
            # (arg: chunks(auto) for both B and C, directory *_oauto.)
            is_auto = lambda v: v["auto"] and (args.op != "arg" or v["name"].endswith("_oauto"))
            auto = next((v for v in variants if is_auto(v)), None)
            # (arg: B's and C's chunk counts, "b/c".)
            count = lambda v: v["chunks"] if v.get("out_chunks") is None else f"{v['chunks']}/{v['out_chunks']}"
            sweep = {count(v): v["median_ms"] for v in variants if not v["auto"]}
            best_chunks = min(sweep, key=sweep.get) if sweep else None
            row = {
                "m": shape["m"], "k": shape["k"], "n_local": shape["n"], "world": shape["world"], "style": style,
                "cublas_gemm_ms": shape["cublas_gemm_ms"],
                "triton_local_gemm_ms": local.get(style.split("+")[0]),
                "comm_ms": shape["comm_ms"],
                "peer_copy_gbps": shape["comm_bytes_per_rank"] / shape["comm_ms"] / 1e6,
                "deterministic": all(v.get("deterministic") is not False for v in variants),
                "floor_ms": floor,
                "torch_b2b_ms": t.get("torch_b2b_ms"),
                "torch_async_tp_ms": t.get("torch_async_tp_ms"),
                "torch_gemm_ms": t.get("torch_gemm_ms"),
                "nccl_comm_ms": t.get("torch_allgather_ms", t.get("torch_reduce_scatter_ms")),
                "torch_b2b_allreduce_ms": t.get("torch_b2b_allreduce_ms"),
                "torch_b2b_ms_runs": t.get(
                    "torch_b2b_allreduce_ms_runs" if all_reduce else "torch_b2b_ms_runs"
                ),
                "synco_auto_ms": auto["median_ms"] if auto else None,
                "auto_chunks": count(auto) if auto else None,
                "sweep_ms": sweep,
                "best_chunks": best_chunks,
                "best_ms": sweep.get(best_chunks),
            }
            if row["synco_auto_ms"] is None and row["best_ms"] is not None:
                # No chunks(auto) variant (one-shot all-reduce): the
                # speedups use the sweep's best, marked in the table.
                row["synco_auto_ms"] = row["best_ms"]
                row["auto_chunks"] = f"best {best_chunks}"
            s = row["synco_auto_ms"]
            if s:
                row["efficiency"] = floor / s
                row["speedup_vs_b2b"] = row["torch_b2b_ms"] / s if row["torch_b2b_ms"] else None
                row["speedup_vs_async_tp"] = row["torch_async_tp_ms"] / s if row["torch_async_tp_ms"] else None
                row["auto_vs_best"] = s / row["best_ms"] if row["best_ms"] else None
            if row["triton_local_gemm_ms"]:
                row["triton_vs_cublas"] = row["cublas_gemm_ms"] / row["triton_local_gemm_ms"]
            rows.append(row)
    machine = open(args.machine).read() if args.machine else ""
    out = {"commit": args.commit, "machine": machine, "torch": torch_data.get("torch"),
           "nccl": torch_data.get("nccl"), "rows": rows}
    json.dump(out, open(f"{args.out_dir}/{prefix}.json", "w"), indent=1)

    f = lambda x, d=3: "-" if x is None else f"{x:.{d}f}"
    lines = [
        f"# {title}, W = {rows[0]['world'] if rows else '?'} (commit {args.commit})",
        "",
        "Times in ms (median over launches, slowest rank). floor = max(cuBLAS GEMM, peer copies of what a rank",
        "receives (all-gather) or sends (reduce-scatter)); eff = floor / Synco (auto); speedups are baseline / Synco (auto).",
        "",
        f"| M | K | {'N_local' if args.op == 'ag' else 'N'} | style | cuBLAS | Triton local | comm | floor | torch b2b | async-TP | Synco auto (n) | best (n) | eff | vs b2b | vs async-TP | Triton/cuBLAS | sweep n:ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        order = lambda kv: [int(x) for x in str(kv[0]).split("/")]
        sweep = " ".join(f"{n}:{ms:.3f}" for n, ms in sorted(r["sweep_ms"].items(), key=order))
        lines.append(
            f"| {r['m']} | {r['k']} | {r['n_local']} | {r['style']} | {f(r['cublas_gemm_ms'])} | {f(r['triton_local_gemm_ms'])} "
            f"| {f(r['comm_ms'])} | {f(r['floor_ms'])} | {f(r['torch_b2b_ms'])} | {f(r['torch_async_tp_ms'])} "
            f"| {f(r['synco_auto_ms'])} ({r['auto_chunks']}) | {f(r['best_ms'])} ({r['best_chunks']}) | {f(r.get('efficiency'), 2)} "
            f"| {f(r.get('speedup_vs_b2b'), 2)} | {f(r.get('speedup_vs_async_tp'), 2)} | {f(r.get('triton_vs_cublas'), 2)} | {sweep} |"
        )
    for style in sorted({r["style"] for r in rows}):
        rs = [r for r in rows if r["style"] == style and r.get("speedup_vs_b2b")]
        if not rs:
            continue
        geo = math.exp(sum(math.log(r["speedup_vs_b2b"]) for r in rs) / len(rs))
        beats = sum(1 for r in rs if r["speedup_vs_b2b"] > 1 and (r.get("speedup_vs_async_tp") or 2) > 1)
        lines += ["", f"**{style}**: geomean speedup over PyTorch back to back {geo:.2f}x over {len(rs)} shapes; "
                      f"faster than both PyTorch baselines on {beats} of {len(rs)}."]
    lines += ["", "Machine:", "```", machine.strip(), "```",
              f"PyTorch {torch_data.get('torch')}, NCCL {torch_data.get('nccl')}."]
    if len(torch_runs) > 1:
        lines += ["", f"PyTorch baselines: the fastest of {len(torch_runs)} runs in this call, per shape."]
    if args.op != "ag":
        det = all(r["deterministic"] for r in rows)
        lines += ["", f"Deterministic (second launch on the same inputs, same bits) on every checked variant: {det}."]
        ar = [r for r in rows if r["m"] == 1024 and r.get("torch_b2b_allreduce_ms")]
        if ar and args.op == "rs":
            # One entry per shape (rows repeat a shape once per style).
            per_shape = {f"{r['m']}x{r['k']}x{r['n_local']}": r["torch_b2b_allreduce_ms"] for r in ar}
            lines += ["", "PyTorch GEMM then NCCL all-reduce at M = 1024 (ms, for the all-reduce target): "
                      + ", ".join(f"{shape}: {ms:.3f}" for shape, ms in per_shape.items())]
    open(f"{args.out_dir}/{prefix}.md", "w").write("\n".join(lines) + "\n")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rs = [r for r in rows if r["style"] == rows[0]["style"]]
        labels = [f"{r['m']}x{r['k']}x{r['n_local']}" for r in rs]
        x = range(len(rs))
        fig, ax = plt.subplots(figsize=(12, 5))
        width = 0.2
        series = [("floor", "floor_ms"), ("torch b2b", "torch_b2b_ms"), ("async-TP", "torch_async_tp_ms"),
                  ("Synco (auto)", "synco_auto_ms")]
        for i, (name, key) in enumerate(series):
            ax.bar([xi + (i - 1.5) * width for xi in x], [(r[key] or 0) / r["floor_ms"] for r in rs], width, label=name)
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, rotation=30, ha="right")
        ax.set_ylabel("time / floor (lower is better)")
        ax.set_title(f"{title} on {rs[0]['world']} x H200 ({rs[0]['style']} kernel)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(f"{args.out_dir}/{prefix}.png", dpi=110)
    except Exception as exc:  # the table is the result; the plot is a view
        print(f"no plot: {exc}")


if __name__ == "__main__":
    main()
