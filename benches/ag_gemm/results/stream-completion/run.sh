#!/usr/bin/env bash
# On the device: the runtime's unit tests, the old and new copy-engine
# all-reduces timed in turn (old, new, old, new), then the correctness list.
set -u
R=$OUT; A=/tmp/ab-results; mkdir -p $A
build/testbin/synco_runtime_tests --nocapture > $A/runtime-unit-tests.txt 2>&1
tail -1 $A/runtime-unit-tests.txt
if [ -f build/bench.tar.xz ]; then rm -rf build/bench; tar -xJf build/bench.tar.xz -C build; rm -f build/bench.tar.xz; fi
for i in 1 2; do
  for op in ar2 arg; do
    build/ab/old-bench --variants build/bench/ab-old/$op --out $A/old-$op-$i.json --iters 20 > $A/old-$op-$i.log 2>&1
    target/release/ag-gemm-bench --variants build/bench/ab-new/$op --out $A/new-$op-$i.json --iters 20 > $A/new-$op-$i.log 2>&1
    grep -h "passed" $A/old-$op-$i.log $A/new-$op-$i.log | tr '\n' ' '; echo
  done
done
tar czf $R/ab.tar.gz -C $A .
OUT=$R/check LIMIT=240 bash benches/ag_gemm/device-run.sh check check-shared > /dev/null 2>&1
cat $R/check/summary.txt
