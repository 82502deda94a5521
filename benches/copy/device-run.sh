#!/usr/bin/env bash
# benches/copy/rate.py on a GPU machine (through the device tool), from the
# repository root, given the package's wheel (target/wheels) and the
# compiled variants (build/ratecache.tar.xz, from
# `benches/copy/build-cache.sh`). Writes rate.json, rate.md and the log
# under $OUT/copy.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"
LIB="$(mktemp -d)"
python3 -m pip install -q --no-deps --target "$LIB" target/wheels/synco-*.whl
export PYTHONPATH="$LIB"
tar xJf build/ratecache.tar.xz -C build
mkdir -p "$OUT/copy"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >"$OUT/copy/gpus.txt"
timeout "${LIMIT:-240}" python3 benches/copy/rate.py --cache build/ratecache --out "$OUT/copy" \
  2>&1 | tee "$OUT/copy/rate.log"
