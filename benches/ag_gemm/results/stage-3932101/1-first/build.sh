# The first call's variants (device-run.sh tune), built at 3932101 before
# build.sh lowered GROUP_M for fine chunks: chunks of fewer than 8 row
# tiles split the kernel's swizzle groups here (now refused).
set -e
cd "$(git rev-parse --show-toplevel)"
B=benches/ag_gemm/build.sh
T=build/bench/tune
rm -rf "$T"
RS="4096,1024,8192 8192,1024,8192 1024,1024,8192 4096,7168,4096"
OUT=$T/rs-ce $B --op rs --rs-mode copy_engine --shapes "$RS" --chunks "1 2 4" --styles "grouped persistent_tma" --no-auto
OUT=$T/rs-stage8 $B --op rs --rs-mode stage --copy-programs 8 --shapes "$RS" --chunks "2 4 8 16" --styles "grouped persistent_tma" --no-auto --no-local
OUT=$T/rs-stage16 $B --op rs --rs-mode stage --copy-programs 16 --shapes "4096,1024,8192 8192,1024,8192" --chunks "8 16" --styles "grouped persistent_tma" --no-auto --no-local
AR2="1024,1024,8192 4096,1024,8192 1024,7168,4096"
OUT=$T/ar2-ce $B --op ar2 --rs-mode copy_engine --shapes "$AR2" --chunks "1 2 4" --styles grouped --no-auto --no-local
OUT=$T/ar2-push $B --op ar2 --rs-mode push --shapes "$AR2" --chunks "1 2" --styles grouped --no-auto --no-local
OUT=$T/ar2-stage8 $B --op ar2 --rs-mode stage --copy-programs 8 --shapes "$AR2" --chunks "1 2 4 8" --styles grouped --no-auto --no-local
AG="4096,8192,1024@128,128,64,8 8192,8192,1024@128,128,64,8 1024,8192,1024@64,128,64,4"
OUT=$T/ag-ce $B --op ag --backend copy_engine --shapes "$AG" --chunks "1 2 4" --styles grouped --no-auto --no-local
OUT=$T/ag-ldst $B --op ag --backend ldst --shapes "$AG" --chunks "1 2 4" --styles grouped --no-auto --no-local
