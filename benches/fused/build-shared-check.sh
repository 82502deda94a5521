#!/usr/bin/env bash
# Compiles correctness variants for W ranks that will share the GPUs of a
# smaller machine (device-run.sh check-shared; synco-bench --gpus N), into
# $OUT (default build/bench/check-w<W>):
#
#   build-shared-check.sh W          (W = 3 to 8)
#
# Every operation, transport and kernel style, for the chunk counts the
# shapes allow. Ranks on one GPU run side by side, and a fused reduction's
# tiles wait for other ranks' tiles, so all ranks' programs of a GPU must be
# resident at once: on 2 GPUs (ceil(W / 2) ranks each) the shapes keep at
# most 132 programs of 128x256 tiles per GPU (one per SM), copy programs
# included, and the persistent style runs 32 programs per rank. Every
# shape's M is a multiple of W: blocks of 512 rows (W <= 4) or 256 rows
# (W > 4) per rank, so W = 3, 5, 6 and 7 check the blocks, chunks and flag
# layouts of world sizes that are not powers of two.
set -euo pipefail
W="${1:?usage: build-shared-check.sh W (3 to 8)}"
B="$(dirname "${BASH_SOURCE[0]}")/build.sh"
export OUT="${OUT:-build/bench/check-w$W}"
case "$W" in
  # Reductions: 4 row tiles per rank's block, N = 1024 (4 column tiles):
  # 16 W programs per rank (W = 4: 64, two ranks per GPU: 128). One-shot
  # all-reduce: M = 256 W, 8 W programs. Staged reductions add copy
  # programs in front of each rank's grid: 2 per rank keeps two ranks'
  # programs within 132 SMs.
  3|4) AG="$((512 * W)),1024,1024" RS="$((512 * W)),1024,1024" AR="$((256 * W)),1024,1024"
       CHUNKS="1 2 4" AR_CHUNKS="1 2" COPIERS=2 ;;
  # 2 row tiles per block, N = 512: 4 W programs per rank (W = 8: 32, four
  # ranks per GPU with a copy program each: 132); one-shot: M = 128 W.
  5|6|7|8) AG="$((256 * W)),1024,1024" RS="$((256 * W)),1024,512" AR="$((128 * W)),1024,512"
       CHUNKS="1 2" AR_CHUNKS="1" COPIERS=1 ;;
  *) echo "build-shared-check.sh: W must be 3 to 8 (ranks sharing 2 GPUs), not $W" >&2; exit 2 ;;
esac
common=(--world "$W" --styles "grid2d grouped persistent persistent_tma" --num-sms 32 --no-auto --no-local)
"$B" "${common[@]}" --shapes "$AG" --chunks "$CHUNKS"
"$B" "${common[@]}" --shapes "$AG" --chunks "$CHUNKS" --backend ldst
# The same all-gather written out as transfers, with rank maps the
# expansion does not write ((r - k) mod W; chunks written from the source's
# side).
"$B" "${common[@]}" --shapes "$AG" --chunks "$CHUNKS" --backend ldst --written-out pull
"$B" "${common[@]}" --shapes "$AG" --chunks "$CHUNKS" --written-out pull
"$B" "${common[@]}" --shapes "$AG" --chunks "$CHUNKS" --written-out push
"$B" "${common[@]}" --op rs --shapes "$RS" --chunks "$CHUNKS"
"$B" "${common[@]}" --op rs --rs-mode copy_engine --shapes "$RS" --chunks "$CHUNKS"
"$B" "${common[@]}" --op ar --shapes "$AR" --chunks "$AR_CHUNKS"
"$B" "${common[@]}" --op ar2 --shapes "$RS" --chunks "$CHUNKS"
"$B" "${common[@]}" --op ar2 --rs-mode copy_engine --shapes "$RS" --chunks "$CHUNKS"
"$B" "${common[@]}" --op rs --rs-mode stage --copy-programs "$COPIERS" --shapes "$RS" --chunks "$CHUNKS"
"$B" "${common[@]}" --op ar2 --rs-mode stage --copy-programs "$COPIERS" --shapes "$RS" --chunks "$CHUNKS"
# The reduce-scatter from gathered operands (style grouped only).
"$B" --world "$W" --op rsg --shapes "$RS" --chunks "$CHUNKS"
# The all-reduce from gathered operands: rsg, then C's column chunks to
# every peer (style grouped only; N = 1024 or 512 holds 4 or 2 tiles).
"$B" --world "$W" --op arg --shapes "$RS" --chunks "$CHUNKS" --out-chunks "1 2"
