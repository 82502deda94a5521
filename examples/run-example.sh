#!/usr/bin/env bash
# The README's main job, on the bundled all-gather + GEMM example. Run
# through `tools/dev example`, which sets everything up first.
#
#  1. synco-opt parses and verifies the chunk plan (examples/ag_gemm/plan.mlir);
#  2. synco import turns the local Triton GEMM (matmul.py) into generic MLIR;
#  3. synco compile takes it through Triton to sm_90a PTX and a cubin, with
#     the launch manifest the runtime loads.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/target/debug"
EX="$ROOT/examples/ag_gemm"
OUT="${SYNCO_OUT:-$ROOT/build/example}"
mkdir -p "$OUT"

echo "== 1. plan: $EX/plan.mlir (parsed and verified by synco-opt) =="
"$BIN/synco-opt" "$EX/plan.mlir" -o "$OUT/plan.mlir"
cat "$OUT/plan.mlir"

echo
echo "== 2. import: matmul_kernel from $EX/matmul.py =="
"$BIN/synco" import "$EX/matmul.py" --kernel matmul_kernel \
  --signature '*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32,i32,i32,i32' \
  --constexpr BLOCK_M=128 --constexpr BLOCK_N=128 --constexpr BLOCK_K=64 \
  -o "$OUT/matmul.mlir"
"$BIN/synco-opt" "$OUT/matmul.mlir" -o /dev/null \
  --pass-pipeline='builtin.module(synco-kernel-summary)'

echo
echo "== 3. compile: generic TTIR -> TTGIR -> LLIR -> PTX -> cubin (sm_90a) =="
"$BIN/synco" compile "$OUT/matmul.mlir" --emit=cubin --num-warps 8 --out-dir "$OUT/matmul"
ls -l "$OUT/matmul"
echo "wgmma instructions in the PTX: $(grep -c 'wgmma.mma_async' "$OUT/matmul/matmul_kernel.ptx")"
