#!/usr/bin/env bash
# Regenerates the generic GEMM inputs from examples/ag_gemm/matmul.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SIG='*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32,i32,i32,i32'
BLOCKS=(--constexpr BLOCK_M=128 --constexpr BLOCK_N=128 --constexpr BLOCK_K=64)
import() { # kernel output extra-constexprs...
  local kernel=$1 out=$2; shift 2
  target/debug/synco import examples/ag_gemm/matmul.py --kernel "$kernel" --signature "$SIG" \
    "${BLOCKS[@]}" "$@" | sed "s|$ROOT/||g" >"lit-tests/Inputs/$out"
}
import matmul_kernel matmul.generic.mlir
import matmul_kernel_grouped matmul_grouped.generic.mlir --constexpr GROUP_M=8
import matmul_kernel_persistent matmul_persistent.generic.mlir --constexpr GROUP_M=8 --constexpr NUM_SMS=132
# TMA descriptors need the unit strides as the constant 1.
SIG='*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32'
import matmul_kernel_persistent_tma matmul_persistent_tma.generic.mlir --constexpr GROUP_M=8 --constexpr NUM_SMS=132 \
  --constexpr stride_ak=1 --constexpr stride_bn=1 --constexpr stride_cn=1
# A GEMM summed over SOURCES row blocks of A and B (K gathered from every rank).
SIG='*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32,i32,i32,i32'
import matmul_kernel_sources matmul_sources.generic.mlir --constexpr GROUP_M=2 --constexpr SOURCES=2
