# How many copy programs a staged reduce-scatter wants (device-run.sh tune):
# 16 copy programs beat 8 at K_local = 1024 in results/stage-3932101 although
# they take more SMs from the GEMM; this sweeps 16 to 48 against the copy
# engine in the same call.
set -e
cd "$(git rev-parse --show-toplevel)"
B=benches/ag_gemm/build.sh
T=build/bench/tune
rm -rf build/bench
RS="4096,1024,8192 8192,1024,8192"
OUT=$T/rs-ce $B --op rs --rs-mode copy_engine --shapes "$RS" --chunks "2 4 8" --styles grouped --no-auto --no-local
for c in 16 24 32 48; do
  OUT=$T/rs-stage$c $B --op rs --rs-mode stage --copy-programs $c --shapes "$RS" --chunks "4 8" --styles grouped --no-auto --no-local
done
find build/bench \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f bench.tar.xz && tar -cJf bench.tar.xz bench)
echo "variants: $(find build/bench -name variant.json | wc -l)"
