#!/usr/bin/env bash
# Builds the variants run.sh times (nvidia-h200-x2): the decode-size
# reductions at 1024x1024x8192 with 128x128 tiles, whose chunks of the
# peers' rows then finish one wave apart, against the default 128x256
# tiles (both peers' chunks in the first wave).
# carry ["build/dt.tar.xz", "target/release/ag-gemm-bench"]
set -e
cd "$(git rev-parse --show-toplevel)"
cargo build --release -p synco -p synco-bench-ag-gemm
rm -rf build/dt
B=benches/ag_gemm/build.sh
S=1024,1024,8192
T=$S@128,128,64,8
ST="grouped persistent_tma"
# build.sh names shape directories without their tiles: one OUT per tiles.
for t in 256:$S 128:$T; do
  n=${t%%:*} shape=${t#*:}
  OUT=build/dt/rs-ce-$n $B --op rs --rs-mode copy_engine --styles "$ST" --shapes "$shape" --chunks "1 2 4"
  OUT=build/dt/rs-push-$n $B --op rs --styles grouped --shapes "$shape" --chunks "1 2" --no-auto --no-local
  OUT=build/dt/ar2-ce-$n $B --op ar2 --rs-mode copy_engine --styles "$ST" --shapes "$shape" --chunks "1 2 4" --no-local
  OUT=build/dt/ar2-push-$n $B --op ar2 --styles grouped --shapes "$shape" --chunks "1 2" --no-local
  # The same copy-engine reduce-scatters with every tile traced.
  OUT=build/dt/trace/rs-ce-$n $B --op rs --rs-mode copy_engine --styles grouped --shapes "$shape" --chunks "1 2" --no-auto --no-local --trace
done
find build/dt \( -name '*.ll' -o -name '*.ttgir' -o -name '*.ttir' -o -name '*.ptx' \) -delete
(cd build && rm -f dt.tar.xz && tar -cJf dt.tar.xz dt)
find build/dt -name variant.json | wc -l
