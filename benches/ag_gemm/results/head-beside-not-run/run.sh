#!/usr/bin/env bash
# (Not run yet: NOT-RUN.txt.) On the device (nvidia-h200-x2): a gather's leading flagless copies (the
# gathered operators' A rows) on a second copy stream beside the first
# flagged copy (build/ab/new-bench) against one copy stream
# (build/ab/old-bench): the copy-stream probe's --first part, the new
# runtime's checks (--check-only: every variant, 8 launches back to back),
# then both timed in turn, twice, on the same cubins (table in ab.txt).
set -u
R=$OUT; A=/tmp/ab; mkdir -p $A
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf build/bench && tar -xJf build/bench.tar.xz -C build
timeout 120 python3 benches/ag_gemm/experiments/copy_stream_probe.py --first --reps 20 --out $R/first.json > $R/first.txt 2>&1
cat $R/first.txt
for set in rsg arg ag; do
  timeout 120 build/ab/new-bench --variants build/bench/ab/$set --check-only --out $A/check-$set.json > $A/check-$set.log 2>&1
  echo "check $set (new): $(grep -h "passed" $A/check-$set.log | tail -1)"
done
for i in 1 2; do
  for v in old new; do
    for set in rsg arg ag; do
      timeout 150 build/ab/$v-bench --variants build/bench/ab/$set --out $A/$set-$v-$i.json --iters 20 > $A/$set-$v-$i.log 2>&1
      echo "$set-$v-$i: $(grep -h "passed" $A/$set-$v-$i.log | tail -1)"
    done
  done
done
python3 - "$A" <<'PY' | tee $A/ab.txt
import json, sys
d = sys.argv[1]
rows, floor = {}, {}
for op in ("rsg", "arg", "ag"):
    for v in ("old", "new"):
        for i in (1, 2):
            for s in json.load(open(f"{d}/{op}-{v}-{i}.json")):
                floor.setdefault(s["shape"], []).append(max(s["cublas_gemm_ms"], s["comm_ms"]))
                for x in s["variants"]:
                    rows.setdefault((s["shape"], x["name"]), {}).setdefault(v, []).append(
                        (x["median_ms"], x.get("ok")))
print(f"{'shape':24s} {'variant':22s} {'one stream ms':>17s} {'A beside ms':>17s}  efficiency (floor = median)")
for (shape, name), per in sorted(rows.items()):
    cell = lambda v: " / ".join(f"{t:.4f}" + ("" if ok else "!") for t, ok in per.get(v, []))
    fl = sorted(floor[shape])[len(floor[shape]) // 2]
    eff = " | ".join(" / ".join(f"{fl / t:.3f}" for t, _ in per.get(v, [])) for v in ("old", "new"))
    print(f"{shape:24s} {name:22s} {cell('old'):>17s} {cell('new'):>17s}  {eff}")
print("floor (median over the runs, ms):", {k: round(sorted(v)[len(v) // 2], 4) for k, v in floor.items()})
PY
tar czf $R/ab.tar.gz -C $A .
cp $A/ab.txt $R/
