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
# matmul_kernel_sources in the states the passes before a tile pass leave,
# for the single-pass tests lit-tests/Passes/*-sources.test: the kernel only
# (each test writes its plan, in the same state, itself), bound for the plan
# below (@A unbound: the kernel's last argument, synco_buffer_A), then with
# its tiles marked and its loop over 'src' rotated (@Ag and @Bg consumed per
# source), then with the tiles' waits (only @Bg's: its flags imply @Ag's).
SOURCES_PLAN='chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<512x64xbf16>
  chunk.buffer @Ag : !chunk.buffer<512x64xbf16> bind(0)
  chunk.buffer @Bg : !chunk.buffer<128x512xbf16> bind(1)
  chunk.all_to_all @A into @Ag dim(0) chunks(1)
  chunk.all_gather @Bg dim(0) chunks(2) split(1)
  chunk.consume @Ag dim(0) tile(128) index("pid_m") source("src")
  chunk.consume @Bg dim(1) tile(128) index("pid_n") source("src")
}'
# A kernel in the state `passes` leave it for `plan`, printed without the
# plan (each single-pass test writes its plan, in the same state, itself).
kernel_state() { # input output plan passes
  printf '%s\n' "$3" | cat "lit-tests/Inputs/$1" - \
    | target/debug/synco-opt --mlir-print-debuginfo --mlir-print-op-generic --pass-pipeline="builtin.module($4)" 2>/dev/null \
    | awk '/^#map/ || /^"builtin.module"\(\) \(\{$/ || /^\}\) : \(\) -> \(\)/ {next}
           /^  "chunk.plan"/ {plan = 1} plan {if (/^  \}\)/) plan = 0; next} {sub(/^  /, ""); print}' \
      >"lit-tests/Inputs/$2"
}
sources_state() { # output passes
  kernel_state matmul_sources.generic.mlir "$1" "$SOURCES_PLAN" "$2"
}
sources_state matmul_sources.bound.generic.mlir chunk-expand-collectives,chunk-bind-kernel
sources_state matmul_sources.reordered.generic.mlir chunk-expand-collectives,chunk-bind-kernel,chunk-reorder-tiles
sources_state matmul_sources.waited.generic.mlir chunk-expand-collectives,chunk-bind-kernel,chunk-reorder-tiles,chunk-insert-waits
# The flash-attention forward kernel (examples/attention/flash_attn.py),
# its KV loop over `start_n` in blocks of 64, non-causal and causal, its
# pointers, strides and lengths multiples of 16 (vectorised loads).
ATTN_SIG='*bf16,*bf16,*bf16,*bf16,fp32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32'
attn_import() { # file kernel causal output
  target/debug/synco import "examples/attention/$1" --kernel "$2" --signature "$ATTN_SIG" \
    --constexpr HEAD_DIM=64 --constexpr BLOCK_M=64 --constexpr BLOCK_N=64 --constexpr CAUSAL="$3" \
    --divisible Q,K,V,Out,stride_qz,stride_qh,stride_qm,stride_kz,stride_kh,stride_kn,stride_vz,stride_vh,stride_vn,stride_oz,stride_oh,stride_om,N_CTX_Q,N_CTX_KV \
    | sed "s|$ROOT/||g" >"lit-tests/Inputs/$4"
}
attn_import flash_attn.py attn_fwd 0 attn_fwd.generic.mlir
attn_import flash_attn.py attn_fwd 1 attn_fwd_causal.generic.mlir
# attn_fwd in the states the passes before a tile pass leave, for the
# single-pass tests lit-tests/Passes/*-loop.test: bound for the plan below
# (K and V gathered in 2 chunks per rank, their blocks walked by the loop
# over `start_n`), then with that loop split by chunk.
ATTN_PLAN='chunk.plan @cp world_size(2) kernel(@attn_fwd) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  chunk.buffer @V : !chunk.buffer<1024x256xbf16> bind(2)
  chunk.all_gather @K dim(0) chunks(2) backend(copy_engine)
  chunk.all_gather @V dim(0) chunks(2) backend(copy_engine)
  chunk.consume @K dim(0) tile(64) loop("start_n")
  chunk.consume @V dim(0) tile(64)
}'
kernel_state attn_fwd.generic.mlir attn_fwd.bound.generic.mlir "$ATTN_PLAN" chunk-expand-collectives,chunk-bind-kernel
kernel_state attn_fwd.generic.mlir attn_fwd.reordered.generic.mlir "$ATTN_PLAN" chunk-expand-collectives,chunk-bind-kernel,chunk-reorder-tiles
# The same attention written with block pointers, a helper for the KV loop
# and causal attention in two stages (examples/attention/flash_attn_blocks.py),
# non-causal and causal; then the causal one bound for the plan below (K and
# V [1024 tokens, 2 heads x 64] gathered along the sequence in 2 chunks per
# rank, no loop named) and with its two loops split by chunk.
attn_import flash_attn_blocks.py attn_fwd_blocks 0 attn_fwd_blocks.generic.mlir
attn_import flash_attn_blocks.py attn_fwd_blocks 1 attn_fwd_blocks_causal.generic.mlir
BLOCKS_PLAN='chunk.plan @cp world_size(2) kernel(@attn_fwd_blocks) {
  chunk.buffer @K : !chunk.buffer<1024x128xbf16> bind(1)
  chunk.buffer @V : !chunk.buffer<1024x128xbf16> bind(2)
  chunk.all_gather @K dim(0) chunks(2) backend(copy_engine)
  chunk.all_gather @V dim(0) chunks(2) backend(copy_engine)
  chunk.consume @K dim(0) tile(64)
  chunk.consume @V dim(0) tile(64)
}'
kernel_state attn_fwd_blocks_causal.generic.mlir attn_fwd_blocks_causal.bound.generic.mlir "$BLOCKS_PLAN" chunk-expand-collectives,chunk-bind-kernel
kernel_state attn_fwd_blocks_causal.generic.mlir attn_fwd_blocks_causal.reordered.generic.mlir "$BLOCKS_PLAN" chunk-expand-collectives,chunk-bind-kernel,chunk-reorder-tiles
# The same attention moving its K and V pointers by start_n * stride
# (examples/attention/flash_attn_strided.py), non-causal.
attn_import flash_attn_strided.py attn_fwd_strided 0 attn_fwd_strided.generic.mlir
