#!/usr/bin/env bash
# On the device (nvidia-h200-x2): how much sooner would a gather's pushes
# land if they waited only for their source's start, as with
# double-buffered destinations? build/db/ag-gemm-bench is the runtime of
# build.sh here: with SYNCO_EXPERIMENT_NO_DEST_WAIT set, the copy streams
# skip the wait for the destination's start (a race on the destination's
# buffers that the benchmark's unchanging inputs make harmless: every push
# writes what is already there). The same binary and cubins timed with and
# without it, in turn, twice (table in ab.txt).
set -u
R=$OUT; A=/tmp/ab; mkdir -p $A
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf build/bench && tar -xJf build/bench.tar.xz -C build
BIN=build/db/ag-gemm-bench
for i in 1 2; do
  for v in dest src; do
    for op in rsg ag; do
      if [ $v = src ]; then export SYNCO_EXPERIMENT_NO_DEST_WAIT=1; else unset SYNCO_EXPERIMENT_NO_DEST_WAIT; fi
      timeout 150 $BIN --variants build/bench/ab/$op --out $A/$op-$v-$i.json --iters 20 > $A/$op-$v-$i.log 2>&1
      echo "$op-$v-$i: $(grep -h "passed" $A/$op-$v-$i.log | tail -1)"
    done
  done
done
unset SYNCO_EXPERIMENT_NO_DEST_WAIT
python3 - "$A" <<'PY' | tee $A/ab.txt
import json, sys
d = sys.argv[1]
rows, floor = {}, {}
for op in ("rsg", "ag"):
    for v in ("dest", "src"):
        for i in (1, 2):
            for s in json.load(open(f"{d}/{op}-{v}-{i}.json")):
                floor.setdefault(s["shape"], []).append(max(s["cublas_gemm_ms"], s["comm_ms"]))
                for x in s["variants"]:
                    rows.setdefault((s["shape"], x["name"]), {}).setdefault(v, []).append(
                        (x["median_ms"], x.get("ok")))
print(f"{'shape':24s} {'variant':22s} {'wait for dest ms':>17s} {'source only ms':>17s}  efficiency (floor = median)")
for (shape, name), per in sorted(rows.items()):
    cell = lambda v: " / ".join(f"{t:.4f}" + ("" if ok else "!") for t, ok in per.get(v, []))
    fl = sorted(floor[shape])[len(floor[shape]) // 2]
    eff = " | ".join(" / ".join(f"{fl / t:.3f}" for t, _ in per.get(v, [])) for v in ("dest", "src"))
    print(f"{shape:24s} {name:22s} {cell('dest'):>17s} {cell('src'):>17s}  {eff}")
print("floor (median over the runs, ms):", {k: round(sorted(v)[len(v) // 2], 4) for k, v in floor.items()})
PY
tar czf $R/ab.tar.gz -C $A .
cp $A/ab.txt $R/
