# What ran for this directory: the copy-engine two-shot all-reduce (9
# shapes, chunks(auto)) and the all-reduce from gathered operands (B in 4
# chunks and auto, C in 2, 4 and auto) compiled and run before (ab/old-*:
# the compiler and runtime of b9e53dd, where the sums' and the gathered
# output's copies set flags the launch waits for, and the gathered output's
# tiles wait for the copy engine's `copied` flag) and after this change
# (ab/new-*: those copies set no flag, each launch ends after its peers'
# side streams, the gathered output's epochs are ordered by the streams),
# timed in turn old, new, old, new in one device call on nvidia-h200-x2
# (run.sh, with build/ab/old-bench the old ag-gemm-bench), then the
# correctness list and the shared checks with the new ones (check/) and the
# runtime crate's unit tests on the GPUs.
set -e
cd "$(git rev-parse --show-toplevel)"
B=benches/ag_gemm/build.sh
S="1024,1024,8192 1024,7168,4096 1024,14336,8192 4096,1024,8192 4096,7168,4096 4096,14336,8192 8192,1024,8192 8192,7168,4096 8192,14336,8192"
# at b9e53dd (before): cargo build --release -p synco -p synco-bench-ag-gemm, then
#   mkdir -p build/ab && cp target/release/ag-gemm-bench build/ab/old-bench
#   OUT=build/bench/ab-old/ar2 $B --op ar2 --rs-mode copy_engine --shapes "$S" --chunks "" --no-local
#   OUT=build/bench/ab-old/arg $B --op arg --chunks "4" --out-chunks "2 4 auto"
# after:
cargo build --release -p synco -p synco-bench-ag-gemm
OUT=build/bench/ab-new/ar2 $B --op ar2 --rs-mode copy_engine --shapes "$S" --chunks "" --no-local
OUT=build/bench/ab-new/arg $B --op arg --chunks "4" --out-chunks "2 4 auto"
# the correctness list and the shared checks, and the runtime's test binary
# (as in results/head-check-b9e53dd/build.sh)
benches/ag_gemm/build-check.sh
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
