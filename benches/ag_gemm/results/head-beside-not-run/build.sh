#!/usr/bin/env bash
# The call run.sh makes (nvidia-h200-x2): build/ab/old-bench is the runtime
# of 6d1b0f3, build/ab/new-bench the same with head-beside.diff (a
# gather's leading flagless copies on a second copy stream beside the
# first flagged copy); the cubins are 6d1b0f3's compiler's.
# carry ["build/ab/old-bench", "build/ab/new-bench", "build/bench.tar.xz"]
set -e
cd "$(git rev-parse --show-toplevel)"
cargo build --release -p synco -p synco-bench-ag-gemm
mkdir -p build/ab && cp target/release/ag-gemm-bench build/ab/old-bench
git apply benches/ag_gemm/results/head-beside-not-run/head-beside.diff
cargo build --release -p synco-bench-ag-gemm && cp target/release/ag-gemm-bench build/ab/new-bench
git apply -R benches/ag_gemm/results/head-beside-not-run/head-beside.diff
rm -rf build/bench
B=benches/ag_gemm/build.sh
OUT=build/bench/ab/rsg $B --op rsg --shapes "4096,1024,8192 8192,1024,8192" --chunks "4 8" --no-local
OUT=build/bench/ab/arg $B --op arg --shapes "4096,1024,8192 8192,1024,8192" --chunks "" --no-local
OUT=build/bench/ab/ag $B --shapes "4096,8192,1024@128,128,64,8 8192,8192,1024@128,128,64,8" --chunks "1 2" --no-local --no-auto
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
