#!/usr/bin/env bash
# (Not run yet: NOT-RUN.txt.) On the device (nvidia-h200-x2), after
# build.sh: the copy-stream probe's --first part, each changed runtime's
# checks (--check-only: every variant, 8 launches back to back), then the
# four runtimes timed in turn, twice, on the same cubins (table in ab.txt).
set -u
R=$OUT; A=/tmp/ab; mkdir -p $A
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf build/bench && tar -xJf build/bench.tar.xz -C build
SIDES="old beside flags both"
timeout 120 python3 benches/ag_gemm/experiments/copy_stream_probe.py --first --reps 20 --out $R/first.json > $R/first.txt 2>&1
cat $R/first.txt
for v in beside flags both; do
  for set in rsg arg ag; do
    timeout 120 build/ab/$v-bench --variants build/bench/ab/$set --check-only --out $A/check-$set-$v.json > $A/check-$set-$v.log 2>&1
    echo "check $set ($v): $(grep -h "passed" $A/check-$set-$v.log | tail -1)"
  done
done
for i in 1 2; do
  for v in $SIDES; do
    for set in rsg arg ag; do
      timeout 100 build/ab/$v-bench --variants build/bench/ab/$set --out $A/$set-$v-$i.json --iters 20 > $A/$set-$v-$i.log 2>&1
      echo "$set-$v-$i: $(grep -h "passed" $A/$set-$v-$i.log | tail -1)"
    done
  done
done
python3 benches/ag_gemm/ab_table.py $A --sides $SIDES --sets rsg arg ag \
  --labels "one stream" "A beside" "copy flags" "both" | tee $A/ab.txt
tar czf $R/ab.tar.gz -C $A .
cp $A/ab.txt $R/
