# What ran for this directory (the runtime of the commit that added it:
# Node::set_copy_streams, bench flag --copy-streams; reverted in the next
# commit), one device call on nvidia-h200-x2: the same variants timed with
# the gathers' pushes on 1, 2, 3, 1 and 2 side streams per rank (s1, s2,
# s3, s1b, s2b; s3's files did not come back: the device tool's file
# count), each run device-run.sh tune:
#   R=$OUT; for run in s1:1 s2:2 s3:3 s1b:1 s2b:2; do n=${run#*:}; d=${run%:*};
#     OUT=$R/$d BENCH="target/release/ag-gemm-bench --copy-streams $n" \
#     LIMIT=150 bash benches/ag_gemm/device-run.sh tune; done
set -e
cd "$(git rev-parse --show-toplevel)"
cargo build --release -p synco -p synco-bench-ag-gemm
B=benches/ag_gemm/build.sh
T=build/bench/tune
S="4096,1024,8192 8192,1024,8192"
rm -rf build/bench
OUT=$T/1-rsg $B --op rsg --shapes "$S" --chunks "2 4 8"
OUT=$T/2-arg $B --op arg --shapes "$S" --chunks "4 8" --out-chunks "2 4"
OUT=$T/3-ag-ce $B --shapes "4096,8192,1024@128,128,64,8 8192,8192,1024@128,128,64,8" --backend copy_engine --chunks "2 4 8" --no-local
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
