#!/usr/bin/env bash
# Compiles a correctness set for ranks sharing ONE GPU (the one-GPU device
# kind), W = 2 and 4, into build/bench/check-w2 and check-w4, for
#
#   device-run.sh check-shared      (synco-bench --check-only --gpus 1)
#
# Every operator and transport at one chunk count; the all-gather and the
# reductions in every kernel style. Shapes keep every rank's programs of a
# fused reduction resident at once on one GPU (W = 2: 32 programs per
# rank; W = 4: N = 512, 16 per rank) with 32 persistent programs per rank.
# The build takes about 6 minutes on 2 cores; 128 variants (32 of them
# tma), about 5.5 MB packed.
set -euo pipefail
B="$(dirname "${BASH_SOURCE[0]}")/build.sh"
for W in 2 4; do
  export OUT="build/bench/check-w$W"
  rm -rf "$OUT"
  if [ "$W" = 2 ]; then RS=1024,1024,1024 AR=512,1024,1024 COPIERS=2
  else RS=1024,1024,512 AR=512,1024,512 COPIERS=1; fi
  AG=1024,1024,1024
  c=(--world "$W" --styles "grid2d grouped persistent persistent_tma" --num-sms 32 --no-auto --no-local)
  "$B" "${c[@]}" --shapes "$AG" --chunks 2
  "$B" "${c[@]}" --shapes "$AG" --chunks 2 --backend ldst
  "$B" "${c[@]}" --shapes "$AG" --chunks 2 --backend ldst --written-out pull
  "$B" "${c[@]}" --shapes "$AG" --chunks 2 --algorithm ring
  "$B" "${c[@]}" --shapes "$AG" --chunks 2 --backend ldst --algorithm ring
  "$B" "${c[@]}" --op rs --shapes "$RS" --chunks 2
  "$B" "${c[@]}" --op rs --rs-mode copy_engine --shapes "$RS" --chunks 2
  "$B" "${c[@]}" --op rs --rs-mode stage --copy-programs "$COPIERS" --shapes "$RS" --chunks 2
  "$B" "${c[@]}" --op ar --shapes "$AR" --chunks 1
  "$B" "${c[@]}" --op ar2 --shapes "$RS" --chunks 2
  "$B" "${c[@]}" --op ar2 --rs-mode copy_engine --shapes "$RS" --chunks 2
  # backend(tma): the copy programs' bulk tensor copies.
  "$B" "${c[@]}" --shapes "$AG" --chunks 2 --backend tma
  "$B" "${c[@]}" --shapes "$AG" --chunks 2 --backend tma --algorithm ring
  "$B" "${c[@]}" --op rs --rs-mode tma --copy-programs "$COPIERS" --shapes "$RS" --chunks 2
  "$B" "${c[@]}" --op ar2 --rs-mode tma --copy-programs "$COPIERS" --shapes "$RS" --chunks 2
  # The gathered operators (style grouped only).
  "$B" --world "$W" --op rsg --shapes "$RS" --chunks 2
  "$B" --world "$W" --op arg --shapes "$RS" --chunks 2 --out-chunks 2
done
echo "variants: $(find build/bench/check-w2 build/bench/check-w4 -name variant.json | wc -l)"
