# Builds this experiment's variants (two device calls: device-run.sh check
# check-shared, then device-run.sh tune): the repository's check sets
# (README, "Reproduce"), and the copy engine against SM copy programs
# moving the same staged chunks (chunk-fuse-reductions{mode=stage}, 8 or
# 16 programs) at K_local = 1024, chunk counts whose chunks hold whole
# swizzle groups (build.sh lowers GROUP_M for finer chunks); SM push for
# the two-shot all-reduce; the all-gather's copy programs (32 KiB steps)
# against the copy engine at N_local = 1024.
set -e
cd "$(git rev-parse --show-toplevel)"
B=benches/ag_gemm/build.sh
rm -rf build/bench
ALL="grid2d grouped persistent persistent_tma"
C=build/bench/check
OUT=$C $B --shapes "4096,4096,7168" --styles "$ALL" --chunks "1 2 4 8" --no-auto
OUT=$C $B --shapes "4096,4096,7168" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local --backend ldst
OUT=$C $B --op rs --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto
OUT=$C $B --op rs --rs-mode pull --shapes "4096,7168,4096" --styles "grouped persistent_tma" --chunks "1 2 4 8" --no-auto --no-local
OUT=$C $B --op rs --rs-mode copy_engine --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
OUT=$C $B --op rs --rs-mode stage --copy-programs 8 --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
OUT=$C $B --op ar --shapes "1024,7168,4096" --styles "$ALL" --chunks "1 2 4"
OUT=$C $B --op ar2 --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
OUT=$C $B --op ar2 --rs-mode copy_engine --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
OUT=$C $B --op ar2 --rs-mode stage --copy-programs 8 --shapes "4096,7168,4096" --styles "$ALL" --chunks "1 2 4 8" --no-auto --no-local
benches/ag_gemm/build-shared-check.sh 4
benches/ag_gemm/build-shared-check.sh 8
T=build/bench/tune
RS="4096,1024,8192 8192,1024,8192 1024,1024,8192"
OUT=$T/rs-ce $B --op rs --rs-mode copy_engine --shapes "$RS" --chunks "1 2 4 8" --styles "grouped persistent_tma" --no-auto
OUT=$T/rs-stage8 $B --op rs --rs-mode stage --copy-programs 8 --shapes "$RS" --chunks "1 2 4 8 16" --styles "grouped persistent_tma" --no-auto --no-local
OUT=$T/rs-stage16 $B --op rs --rs-mode stage --copy-programs 16 --shapes "4096,1024,8192 8192,1024,8192" --chunks "4 8 16" --styles grouped --no-auto --no-local
AR2="1024,1024,8192 4096,1024,8192"
OUT=$T/ar2-ce $B --op ar2 --rs-mode copy_engine --shapes "$AR2" --chunks "1 2 4" --styles grouped --no-auto --no-local
OUT=$T/ar2-push $B --op ar2 --rs-mode push --shapes "$AR2" --chunks "1 2" --styles grouped --no-auto --no-local
OUT=$T/ar2-stage8 $B --op ar2 --rs-mode stage --copy-programs 8 --shapes "$AR2" --chunks "1 2 4 8" --styles grouped --no-auto --no-local
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
ls -la build/bench.tar.xz
echo "variants: $(find build/bench -name variant.json | wc -l)"
