#!/usr/bin/env bash
# Compiles the correctness list: every operator, kernel style, backend,
# transport and chunk count on one shape each (build/bench/check), and the
# variants for W = 3 to 8 ranks that share the GPUs of a 2-GPU machine
# (build/bench/check-w3 ... check-w8; build-shared-check.sh). Then, on the GPU
# machine, `device-run.sh check check-shared` checks every variant against
# cuBLAS, relaunches it (bit-identical results), launches it back to back
# and runs the watchdog test.
#
#   build-check.sh            (about 17 minutes on a 2-core machine)
#
# It adds to build/bench (build-set.sh --keep adds the timed set after it);
# pack with build-set.sh, or:
#   find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
#   (cd build && tar -cJf bench.tar.xz bench)
set -euo pipefail
case "${1:-}" in
  -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
  "") ;;
  *) echo "build-check.sh: takes no arguments (see --help)" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
B=benches/fused/build.sh
ALL="grid2d grouped persistent persistent_tma"
export OUT=build/bench/check
$B --shapes "4096,4096,7168" --styles "$ALL" --chunks "1 2 4 8" --no-auto
$B --shapes "4096,4096,7168" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local --backend ldst
# Written out as transfers ((r - k) mod W, pushes from the source's side).
$B --shapes "4096,4096,7168" --styles "grouped persistent" --chunks "1 4" --no-auto --no-local --backend ldst --written-out pull
$B --shapes "4096,4096,7168" --styles "grouped persistent" --chunks "1 4" --no-auto --no-local --written-out pull
$B --shapes "4096,4096,7168" --styles "grouped persistent" --chunks "1 4" --no-auto --no-local --written-out push
$B --op rs --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto
$B --op rs --rs-mode pull --shapes "4096,7168,4096" --styles "grouped persistent_tma" --chunks "1 2 4 8" --no-auto --no-local
$B --op rs --rs-mode copy_engine --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
$B --op rs --rs-mode stage --copy-programs 8 --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
$B --op ar --shapes "1024,7168,4096" --styles "$ALL" --chunks "1 2 4"
$B --op ar2 --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
$B --op ar2 --rs-mode copy_engine --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
$B --op ar2 --rs-mode stage --copy-programs 8 --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
$B --op rsg --shapes "4096,1024,8192" --chunks "2 4 8"
$B --op arg --shapes "4096,1024,8192" --chunks "4 8" --out-chunks "1 2 4"
unset OUT
for w in 3 4 5 6 7 8; do
  benches/fused/build-shared-check.sh "$w"
done
echo "build-check.sh: $(find build/bench/check build/bench/check-w? -name variant.json | wc -l) variants in build/bench/check*"
