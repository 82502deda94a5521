#!/usr/bin/env bash
# On the device (nvidia-h200-x2), after build.sh: every decode-size variant
# of build/dt (128x256 and 128x128 tiles; reduce-scatter and two-shot
# all-reduce, copy engine and SM push, 1 to 4 chunks and chunks(auto), local
# GEMMs alone) timed twice, the sets in turn; then the traced reduce-scatters.
# Predicted before the call: the copy-engine reduce-scatter with 128x128
# tiles and 2 chunks about 0.050 ms against 0.055 with 128x256 tiles and
# 1 chunk (its first chunk of partials done after one wave of half-size
# tiles, about 8 us instead of 15), still short of the 0.044 ms that
# efficiency 0.7 needs; 4 chunks no better than 2 (both in the first wave).
set -u
R=$OUT; A=/tmp/dt; mkdir -p $A
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf build/dt && tar -xJf build/dt.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpus.txt
SETS="rs-ce rs-push ar2-ce ar2-push"
for i in 1 2; do
  for set in $SETS; do
    for t in 256 128; do
      timeout 150 target/release/ag-gemm-bench --variants build/dt/$set-$t --out $A/$set-$t-$i.json --iters 20 > $A/$set-$t-$i.log 2>&1
      echo "$set-$t-$i: rc $? $(grep -h "passed" $A/$set-$t-$i.log | tail -1)"
    done
  done
done
for t in 256 128; do
  timeout 120 target/release/ag-gemm-bench --variants build/dt/trace/rs-ce-$t --out $A/trace-rs-ce-$t.json --iters 20 > $A/trace-rs-ce-$t.log 2>&1
  echo "trace-rs-ce-$t: rc $? $(grep -h "passed" $A/trace-rs-ce-$t.log | tail -1)"
done
python3 benches/ag_gemm/ab_table.py $A --sides 256 128 --sets $SETS --labels "128x256 tiles" "128x128 tiles" | tee $A/ab.txt
tar czf $R/dt.tar.gz -C $A .
cp $A/ab.txt $R/
