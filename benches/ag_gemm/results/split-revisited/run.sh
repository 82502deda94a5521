#!/usr/bin/env bash
# On the device (nvidia-h200-x2), for calls 2 and 3 of build.sh here:
# the tile traces of build/bench/trace/*, then the sets build/bench/ab-$v
# for v in $VARIANTS timed in turn, twice, by the same ag-gemm-bench
# (table in ab.txt; efficiency against the median of the six runs' floors).
set -u
VARIANTS=${VARIANTS:-unsplit split1 split2}
R=$OUT; A=/tmp/ab; mkdir -p $A
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BIN=${BENCH:-target/release/ag-gemm-bench}
OUT=$R/trace BENCH=$BIN LIMIT=100 bash benches/ag_gemm/device-run.sh trace > /dev/null 2>&1
cat $R/trace/summary.txt
for i in 1 2; do
  for v in $VARIANTS; do
    timeout 150 $BIN --variants build/bench/ab-$v --out $A/$v-$i.json --iters 20 > $A/$v-$i.log 2>&1
    echo "$v-$i: $(grep -h "passed" $A/$v-$i.log | tail -1)"
  done
done
python3 - "$A" "$VARIANTS" <<'PY' | tee $A/ab.txt
import json, sys
d = sys.argv[1]
rows, floor = {}, {}
vs = tuple(sys.argv[2].split())
for v in vs:
    for i in (1, 2):
        for s in json.load(open(f"{d}/{v}-{i}.json")):
            floor.setdefault(s["shape"], []).append(max(s["cublas_gemm_ms"], s["comm_ms"]))
            for x in s["variants"]:
                rows.setdefault((s["shape"], x["name"]), {}).setdefault(v, []).append(
                    (x["median_ms"], x.get("ok"), x.get("deterministic")))
print(f"{'shape':24s} {'variant':14s} " + " ".join(f"{v + ' ms':>17s}" for v in vs) + "  efficiency (floor = median)")
for (shape, name), per in sorted(rows.items()):
    cell = lambda v: " / ".join(f"{t:.4f}" + ("" if ok and det is not False else "!") for t, ok, det in per.get(v, []))
    fl = sorted(floor[shape])[len(floor[shape]) // 2]
    eff = " | ".join(" / ".join(f"{fl / t:.3f}" for t, _, _ in per.get(v, [])) for v in vs)
    print(f"{shape:24s} {name:14s} " + " ".join(f"{cell(v):>17s}" for v in vs) + f"  {eff}")
print("floor (median over the 6 runs, ms):", {k: round(sorted(v)[len(v) // 2], 4) for k, v in floor.items()})
PY
tar czf $R/ab.tar.gz -C $A .
cp $A/ab.txt $R/
