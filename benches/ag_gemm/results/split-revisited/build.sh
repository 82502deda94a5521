#!/usr/bin/env bash
# What ran for this directory: three calls on nvidia-h200-x2 with the
# reverted pass chunk-split-first-wave put back (git revert 31278c0 on
# b673d1b) and the ag-gemm-bench of that tree (its runtime appends the
# split programs), each call built here as below, packed, and run with
#   carry ["build/split/ag-gemm-bench", "build/bench.tar.xz"]
# 1-old-pass: the pass as at 60443c5 (the parked accumulator loaded before
#   the loop in every program, masked), traced only:
#     BENCH=build/split/ag-gemm-bench LIMIT=100 benches/ag_gemm/device-run.sh trace
#   trace/unsplit, split1, split2: --split-chunks 0 / 1 / 2, B in 4 chunks.
# 2-add-after: the appended programs start from zero and add the parked
#   half after the peers' loop (patches/add-after.diff with patches/
#   builder.diff, but with the scratch pointers built once before the
#   loop): BENCH=build/split/ag-gemm-bench bash run.sh (VARIANTS
#   "unsplit split1 split2": ab-split1 = --split-chunks auto).
# 3-add-after-and-dot: "add" = patches/add-after.diff (the pointers built
#   where used), "dot" = patches/dot-trick.diff (the parked half loaded
#   before the loop in the appended programs' branch and passed through a
#   tt.dot of zeros to give it the MMA layout there):
#   VARIANTS="unsplit add dot" BENCH=build/split/ag-gemm-bench bash run.sh
set -e
cd "$(git rev-parse --show-toplevel)"
git revert --no-commit 31278c0   # puts chunk-split-first-wave back
# git apply benches/ag_gemm/results/split-revisited/patches/builder.diff
# git apply benches/ag_gemm/results/split-revisited/patches/add-after.diff   # or dot-trick.diff
cargo build --release -p synco -p synco-opt -p synco-bench-ag-gemm
B=benches/ag_gemm/build.sh
S="4096,1024,8192 8192,1024,8192"
rm -rf build/bench
for v in unsplit:0 split1:auto; do   # call 3: ab-add / ab-dot from the two patched trees
  OUT=build/bench/ab-${v%%:*} $B --op rsg --shapes "$S" --chunks "4 8" --no-local --split-chunks ${v#*:}
  OUT=build/bench/trace/${v%%:*} $B --op rsg --shapes 4096,1024,8192 --chunks 4 --no-local --no-auto \
    --split-chunks "$([ ${v#*:} = auto ] && echo 1 || echo 0)" --trace
done
mkdir -p build/split && cp target/release/ag-gemm-bench build/split/
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
