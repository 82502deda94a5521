#!/usr/bin/env bash
# What ran for this directory: one call on nvidia-h200-x2 (run.sh here,
# 68 s), carry ["build/db/ag-gemm-bench", "build/bench.tar.xz"]. The
# compiler is a47bdc8's; the bench binary has no-dest-wait.diff applied (an
# experiment, not in Synco).
set -e
cd "$(git rev-parse --show-toplevel)"
cargo build --release -p synco
git apply benches/ag_gemm/results/push-source-start/no-dest-wait.diff
cargo build --release -p synco-bench-ag-gemm
mkdir -p build/db && cp target/release/ag-gemm-bench build/db/
git apply -R benches/ag_gemm/results/push-source-start/no-dest-wait.diff
rm -rf build/bench
B=benches/ag_gemm/build.sh
OUT=build/bench/ab/rsg $B --op rsg --shapes "4096,1024,8192 8192,1024,8192" --chunks "4 8" --no-local
OUT=build/bench/ab/ag $B --shapes "4096,8192,1024@128,128,64,8 8192,8192,1024@128,128,64,8" --chunks "1 2 4" --no-local --no-auto
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
