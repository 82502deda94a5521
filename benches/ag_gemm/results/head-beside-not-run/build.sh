#!/usr/bin/env bash
# The call run.sh makes (nvidia-h200-x2): four runtimes on the same cubins
# (this checkout's compiler):
#   build/ab/old-bench     the checkout's runtime
#   build/ab/beside-bench  + head-beside.diff (a gather's leading flagless
#                          copies on a second copy stream beside the first
#                          flagged copy)
#   build/ab/flags-bench   + copy-flags.diff (a gather's flags in a peer's
#                          memory set by a 4-byte copy of the epoch instead
#                          of cuStreamWriteValue32 on the peer's address)
#   build/ab/both-bench    + both.diff (the two together)
# carry ["build/ab", "build/bench.tar.xz"]
set -e
cd "$(git rev-parse --show-toplevel)"
D=benches/ag_gemm/results/head-beside-not-run
cargo build --release -p synco -p synco-bench-ag-gemm
mkdir -p build/ab && cp target/release/ag-gemm-bench build/ab/old-bench
for side in beside:head-beside flags:copy-flags both:both; do
  git apply "$D/${side#*:}.diff"
  cargo build --release -p synco-bench-ag-gemm && cp target/release/ag-gemm-bench "build/ab/${side%%:*}-bench"
  git apply -R "$D/${side#*:}.diff"
done
cargo build --release -p synco-bench-ag-gemm
rm -rf build/bench
B=benches/ag_gemm/build.sh
OUT=build/bench/ab/rsg $B --op rsg --shapes "4096,1024,8192 8192,1024,8192" --chunks "4 8" --no-local
OUT=build/bench/ab/arg $B --op arg --shapes "4096,1024,8192 8192,1024,8192" --chunks "" --no-local
OUT=build/bench/ab/ag $B --shapes "4096,8192,1024@128,128,64,8 8192,8192,1024@128,128,64,8" --chunks "1 2" --no-local --no-auto
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
