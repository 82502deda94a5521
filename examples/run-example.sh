#!/usr/bin/env bash
# The README's main job: compile the bundled all-gather + GEMM example into
# one fused kernel. Run through `tools/dev example`, which sets everything up.
#
#  1. synco-opt parses and verifies the chunk plan (examples/ag_gemm/plan.mlir);
#  2. synco import turns the local Triton GEMM (matmul.py, GROUP_M swizzle)
#     into generic MLIR, specialised as Triton's JIT would;
#  3. synco compile fuses the plan into it (synco-ag-gemm pipeline) and takes
#     it through Triton to sm_90a PTX and a cubin, with the launch manifest
#     (ABI arguments and the copy-engine schedule) the runtime loads;
#  4. the same GEMM with a reduce-scatter plan (examples/gemm_rs/plan.mlir,
#     synco-gemm-rs): tiles push partials to their owner and count per
#     chunk; owners reduce in the tile epilogue;
#  5. the reduce-scatter computed from gathered operands instead
#     (examples/gemm_rs/plan-gather.mlir, synco-gemm-rs-gather) on the GEMM
#     summed over source ranks (matmul_kernel_sources);
#  6. the all-reduce computed the same way (plan-all-reduce-gather.mlir,
#     synco-gemm-ar-gather): each rank's rows of the sum go to the peer in
#     column chunks as the tiles finish them.
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
echo "== 2. import: matmul_kernel_grouped from $EX/matmul.py =="
"$BIN/synco" import "$EX/matmul.py" --kernel matmul_kernel_grouped \
  --signature '*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32' \
  --constexpr stride_ak=1 --constexpr stride_bn=1 --constexpr stride_cn=1 \
  --divisible a_ptr,b_ptr,c_ptr,M,N,K,stride_am,stride_bk,stride_cm \
  --constexpr BLOCK_M=128 --constexpr BLOCK_N=256 --constexpr BLOCK_K=64 --constexpr GROUP_M=8 \
  -o "$OUT/matmul.mlir"
"$BIN/synco-opt" "$OUT/matmul.mlir" -o /dev/null \
  --pass-pipeline='builtin.module(synco-kernel-summary)'

echo
echo "== 3. fuse and compile: plan + kernel -> synco-ag-gemm -> TTGIR -> PTX -> cubin (sm_90a) =="
"$BIN/synco" compile "$OUT/matmul.mlir" --plan "$EX/plan.mlir" \
  --pass-pipeline='builtin.module(synco-ag-gemm)' \
  --emit=cubin --num-warps 8 --num-stages 4 --out-dir "$OUT/fused"
ls -l "$OUT/fused"
PTX="$OUT/fused/matmul_kernel_grouped.ptx"
echo "in the PTX: $(grep -c 'wgmma.mma_async' "$PTX") wgmma, $(grep -c 'ld.acquire.sys.global' "$PTX") acquire/sys flag spin, $(grep -c 'globaltimer' "$PTX") timeout clock reads"
echo "kernel parameters (manifest): $(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(", ".join(p["name"] for p in m["params"]))' "$OUT/fused/matmul_kernel_grouped.json")"
echo "copy-engine schedule (manifest): $(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fused"]; print(f["world_size"], "ranks,", f["num_flags"], "chunk flags, copies driven by each rank:", [len(c) for c in f["copies"]])' "$OUT/fused/matmul_kernel_grouped.json")"

echo
echo "== 4. the same GEMM with a reduce-scatter plan (examples/gemm_rs/plan.mlir) -> synco-gemm-rs -> cubin =="
"$BIN/synco" compile "$OUT/matmul.mlir" --plan "$ROOT/examples/gemm_rs/plan.mlir" \
  --pass-pipeline='builtin.module(synco-gemm-rs)' \
  --emit=cubin --num-warps 8 --num-stages 4 --out-dir "$OUT/fused-rs"
PTX="$OUT/fused-rs/matmul_kernel_grouped.ptx"
echo "in the PTX: $(grep -c 'wgmma.mma_async' "$PTX") wgmma, $(grep -c 'atom.global.sys.release.add' "$PTX") release/sys counter arrivals, $(grep -c 'ld.acquire.sys.global' "$PTX") acquire/sys counter spins"
echo "kernel parameters (manifest): $(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(", ".join(p["name"] for p in m["params"] if p["role"] == "synco"))' "$OUT/fused-rs/matmul_kernel_grouped.json") (Synco's)"

echo
echo "== 5. the reduce-scatter from gathered operands (examples/gemm_rs/plan-gather.mlir) -> synco-gemm-rs-gather -> cubin =="
"$BIN/synco" import "$EX/matmul.py" --kernel matmul_kernel_sources \
  --signature '*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32' \
  --constexpr stride_ak=1 --constexpr stride_bn=1 --constexpr stride_cn=1 \
  --divisible a_ptr,b_ptr,c_ptr,M,N,K,stride_am,stride_bk,stride_cm \
  --constexpr BLOCK_M=128 --constexpr BLOCK_N=256 --constexpr BLOCK_K=64 --constexpr GROUP_M=32 \
  --constexpr SOURCES=2 -o "$OUT/matmul_sources.mlir"
"$BIN/synco" compile "$OUT/matmul_sources.mlir" --plan "$ROOT/examples/gemm_rs/plan-gather.mlir" \
  --pass-pipeline='builtin.module(synco-gemm-rs-gather)' \
  --emit=cubin --num-warps 8 --num-stages 4 --out-dir "$OUT/fused-rs-gather"
PTX="$OUT/fused-rs-gather/matmul_kernel_sources.ptx"
echo "in the PTX: $(grep -c 'wgmma.mma_async' "$PTX") wgmma, $(grep -c 'ld.acquire.sys.global' "$PTX") acquire/sys flag spins (peer B columns; the peer A rows, pushed before them, need none)"
echo "copy-engine schedule (manifest): $(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fused"]; print(f["num_flags"], "chunk flags; rank 0 copies:", ", ".join(c["name"] + (" (before the kernel)" if c["before_kernel"] else " -> rank %d" % c["dst_rank"]) for c in f["copies"][0]))' "$OUT/fused-rs-gather/matmul_kernel_sources.json")"

echo
echo "== 6. the all-reduce from gathered operands (examples/gemm_rs/plan-all-reduce-gather.mlir) -> synco-gemm-ar-gather -> cubin =="
"$BIN/synco" compile "$OUT/matmul_sources.mlir" --plan "$ROOT/examples/gemm_rs/plan-all-reduce-gather.mlir" \
  --pass-pipeline='builtin.module(synco-gemm-ar-gather)' \
  --emit=cubin --num-warps 8 --num-stages 4 --out-dir "$OUT/fused-ar-gather"
PTX="$OUT/fused-ar-gather/matmul_kernel_sources.ptx"
echo "in the PTX: $(grep -c 'wgmma.mma_async' "$PTX") wgmma, $(grep -c 'ld.acquire.sys.global' "$PTX") acquire/sys flag spins, $(grep -c 'atom.global.sys.release.add' "$PTX") release/sys chunk counts"
echo "side-stream copies of C (manifest): $(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fused"]; print("; ".join("rank %d: " % r + ", ".join("%d rows x %d B -> rank %d" % (c["rows"]["count"], c["bytes"], c["owner"]) for c in cs) for r, cs in enumerate(f["reduction_copies"])))' "$OUT/fused-ar-gather/matmul_kernel_sources.json")"
