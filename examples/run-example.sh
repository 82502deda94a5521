#!/usr/bin/env bash
# The README's main job: run synco-opt on the bundled all-gather + GEMM
# example. Run through `tools/dev example`, which sets everything up first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OPT="$ROOT/target/debug/synco-opt"
EX="$ROOT/examples/ag_gemm"
OUT="${SYNCO_OUT:-$ROOT/build/example}"
mkdir -p "$OUT"

echo "== plan: $EX/plan.mlir (parsed and verified) =="
"$OPT" "$EX/plan.mlir" -o "$OUT/plan.mlir"
cat "$OUT/plan.mlir"

echo
echo "== kernel: Triton GEMM in generic form, summarised by synco-kernel-summary =="
"$OPT" "$ROOT/lit-tests/Inputs/matmul.generic.mlir" \
  --pass-pipeline='builtin.module(canonicalize,cse,synco-kernel-summary)' \
  --mlir-print-op-generic --mlir-print-debuginfo -o "$OUT/matmul.mlir"
echo
echo "wrote $OUT/plan.mlir and $OUT/matmul.mlir"
