#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository
# root, with the carried ag-gemm-bench binary and build/bench variants:
#
#   benches/ag_gemm/device-run.sh check     correctness of every variant in build/bench/check
#   benches/ag_gemm/device-run.sh tune      local/fused timing of build/bench/tune/*
#   benches/ag_gemm/device-run.sh bench     the full benchmark (build/bench/full) + PyTorch baselines
#
# Results go to $OUT (the device tool brings them back).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT="${OUT:-/tmp/out}"
# The world size is the machine's GPU count unless W is set; the variants in
# build/bench must have been built for it (build.sh --world W).
W="${W:-$(nvidia-smi -L | wc -l)}"
mkdir -p "$OUT"
BENCH=target/release/ag-gemm-bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpus.txt"
nvidia-smi topo -m | tee -a "$OUT/gpus.txt"
case "${1:-}" in
  check)
    $BENCH --variants build/bench/check --out "$OUT/check.json" --check-only 2>&1 | tee "$OUT/check.log"
    ;;
  tune)
    for cfg in build/bench/tune/*; do
      name=$(basename "$cfg")
      echo "== $name"
      $BENCH --variants "$cfg" --out "$OUT/tune_$name.json" --iters 20 2>&1 | tee -a "$OUT/tune.log"
    done
    ;;
  bench)
    $BENCH --variants build/bench/full --out "$OUT/synco.json" --iters 30 2>&1 | tee "$OUT/synco.log"
    PYTHONUNBUFFERED=1 python3 benches/ag_gemm/torch_baselines.py --world "$W" --out "$OUT/torch.json" 2>&1 | tee "$OUT/torch.log"
    ;;
  *)
    echo "usage: $0 check|tune|bench" >&2
    exit 2
    ;;
esac
