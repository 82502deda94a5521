#!/usr/bin/env bash
# Compiles the issues' benchmark set for W ranks, with the choices Synco
# makes itself (chunks(auto), backend(auto)) beside each fixed transport,
# into build/bench, and packs it as build/bench.tar.xz for the device tool:
#
#   build-set.sh [--world W] [--ops "ag rs ar ar2 rsg arg"] [--styles "grouped persistent_tma"] [--keep]
#
# W defaults to 2 (the set's shapes split evenly for W = 2, 4 and 8; other
# W: build.sh --world W --shapes). For W > 2 the default shapes keep M and the 2-rank layer
# and give each rank 2/W of the weight (N_local for the all-gather, K_local
# for the reductions: build.sh --world). --keep adds to an existing
# build/bench (e.g. a correctness list built first) instead of starting
# afresh. --styles names the local GEMM kernels (build.sh --styles) that
# the all-gather, reduce-scatter and two-shot all-reduce are built with
# (default grouped; the one-shot all-reduce and the operators from
# gathered operands have one kernel each). Then, on a machine with W GPUs,
# one call:
#
#   benches/fused/device-run.sh torch-rs bench bench-rs bench-ar bench-ar2 bench-rsg bench-arg torch-rs
#
# (device-run.sh takes W from nvidia-smi: build for the machine's GPU
# count). What each op builds:
#
#   ag    all-gather + GEMM (build/bench/full): copy engine, SM
#         loads/stores and tma, chunks(auto), and the local GEMM
#   rs    GEMM + reduce-scatter (full-rs): backend(auto), copy engine, SM
#         push, tma (staged)
#   ar    one-shot all-reduce at M = 1024 (full-ar)
#   ar2   two-shot all-reduce (full-ar2): backend(auto), copy engine, SM
#         push, tma (staged)
#   rsg   reduce-scatter from gathered operands at K_local = 1024 (full-rsg)
#   arg   all-reduce from gathered operands at K_local = 1024 (full-arg)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
B="$ROOT/benches/fused/build.sh"
WORLD=2
OPS="ag rs ar ar2 rsg arg"
STYLES="grouped"
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --world) WORLD="$2"; shift 2 ;;
    --ops) OPS="$2"; shift 2 ;;
    --styles) STYLES="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "build-set.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$WORLD" in
  '' | *[!0-9]*) echo "build-set.sh: --world takes a number of ranks, not '$WORLD'" >&2; exit 2 ;;
esac
if [ "$WORLD" -lt 2 ] || [ "$WORLD" -gt 8 ]; then
  echo "build-set.sh: --world must be 2 to 8 (ranks of one NVLink node), not $WORLD" >&2
  exit 2
fi
# M = 1024, 4096 and 8192 in equal blocks, and 2/W of the 2-rank layer's
# N_local and K_local (1024, 4096, 7168, 8192, 14336) whole: W = 2, 4, 8.
case "$WORLD" in
  2 | 4 | 8) ;;
  *) echo "build-set.sh: the issues' shapes (M = 1024, 4096, 8192; 2/W of the 2-rank layer per rank) do not split evenly over $WORLD ranks: the set is built for W = 2, 4 or 8; build.sh --world $WORLD --shapes \"M,K,N ...\" builds others" >&2
     exit 2 ;;
esac
for op in $OPS; do
  case $op in
    ag | rs | ar | ar2 | rsg | arg) ;;
    *) echo "build-set.sh: unknown op '$op' (ag rs ar ar2 rsg arg)" >&2; exit 2 ;;
  esac
done
for style in $STYLES; do
  case $style in
    grid2d | grouped | persistent | persistent_tma) ;;
    *) echo "build-set.sh: unknown style '$style' (grid2d grouped persistent persistent_tma)" >&2; exit 2 ;;
  esac
done
[ -n "$STYLES" ] || { echo "build-set.sh: --styles names at least one style" >&2; exit 2; }
[ -x "$ROOT/target/release/synco" ] || {
  echo "build-set.sh: target/release/synco missing: cargo build --release -p synco -p synco-bench" >&2
  exit 1
}
cd "$ROOT"
[ "$KEEP" = 1 ] || rm -rf build/bench
w=(--world "$WORLD")
s=(--styles "$STYLES")
for op in $OPS; do
  case $op in
    ag)
      OUT=build/bench/full "$B" "${w[@]}" "${s[@]}" --chunks ""
      OUT=build/bench/full "$B" "${w[@]}" "${s[@]}" --backend ldst --chunks "" --no-local
      OUT=build/bench/full "$B" "${w[@]}" "${s[@]}" --backend tma --chunks "" --no-local ;;
    rs)
      OUT=build/bench/full-rs "$B" "${w[@]}" "${s[@]}" --op rs --rs-mode auto --chunks ""
      OUT=build/bench/full-rs "$B" "${w[@]}" "${s[@]}" --op rs --rs-mode copy_engine --chunks "" --no-local
      OUT=build/bench/full-rs "$B" "${w[@]}" "${s[@]}" --op rs --chunks "" --no-local
      OUT=build/bench/full-rs "$B" "${w[@]}" "${s[@]}" --op rs --rs-mode tma --chunks "" --no-local ;;
    ar)
      OUT=build/bench/full-ar "$B" "${w[@]}" --op ar --chunks "" --no-local ;;
    ar2)
      OUT=build/bench/full-ar2 "$B" "${w[@]}" "${s[@]}" --op ar2 --rs-mode auto --chunks ""
      OUT=build/bench/full-ar2 "$B" "${w[@]}" "${s[@]}" --op ar2 --rs-mode copy_engine --chunks "" --no-local
      OUT=build/bench/full-ar2 "$B" "${w[@]}" "${s[@]}" --op ar2 --chunks "" --no-local
      OUT=build/bench/full-ar2 "$B" "${w[@]}" "${s[@]}" --op ar2 --rs-mode tma --chunks "" --no-local ;;
    rsg)
      OUT=build/bench/full-rsg "$B" "${w[@]}" --op rsg --chunks "" ;;
    arg)
      OUT=build/bench/full-arg "$B" "${w[@]}" --op arg --chunks "" --out-chunks auto ;;
  esac
done
# Only the cubins, manifests and variant descriptions travel.
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
echo "build-set.sh: $(find build/bench -name variant.json | wc -l) variants for W = $WORLD in build/bench ($(du -h build/bench.tar.xz | cut -f1) packed)"
