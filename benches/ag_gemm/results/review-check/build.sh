# What ran for this directory: after the review's runtime change (a rank's
# side stream writes the epoch word only when one of its copies sets an
# arrival flag from it), the runtime crate's unit tests on the GPUs and the
# reductions' and gathers' copy-engine paths of the correctness list, with
# the W = 4 shared checks, in one device call on nvidia-h200-x2:
#   device-run.sh check check-shared
set -e
cd "$(git rev-parse --show-toplevel)"
cargo build --release -p synco -p synco-bench-ag-gemm
B=benches/ag_gemm/build.sh
rm -rf build/bench
OUT=build/bench/check $B --op arg --shapes "4096,1024,8192" --chunks "4 8" --out-chunks "1 2 4"
OUT=build/bench/check $B --op ar2 --rs-mode copy_engine --shapes "4096,7168,4096" --styles "grouped persistent_tma" --chunks "1 2" --no-auto --no-local
OUT=build/bench/check $B --op rs --rs-mode copy_engine --shapes "4096,7168,4096" --styles "grouped" --chunks "1 2" --no-auto --no-local
OUT=build/bench/check $B --op rsg --shapes "4096,1024,8192" --chunks "4"
OUT=build/bench/check $B --shapes "4096,4096,7168" --styles grouped --chunks "2" --no-auto --no-local
benches/ag_gemm/build-shared-check.sh 4
