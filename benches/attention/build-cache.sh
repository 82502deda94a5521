#!/usr/bin/env bash
# Builds, on this machine (no GPU needed), what device-run.sh runs on a
# multi-GPU machine without the compiler: the compile cache of every
# kernel of bench.py (all shapes, or SEQS / MODELS) and of the MLP example
# for W ranks on W GPUs, packed as build/x<W>cache.tar.xz. Run from the
# repository root after `tools/dev setup`:
#
#   benches/attention/build-cache.sh 2      # then, on nvidia-h200-x2:
#   CACHE=build/x2cache benches/attention/device-run.sh attention attention-128k mlp
#
# `build-cache.sh overhead` builds instead build/ovhcache.tar.xz, the
# kernels of overhead.py's README tables (every style at 16k and 32k
# tokens, the bundled kernel at 128k), for `device-run.sh overhead` on
# the one-GPU kind.
set -euo pipefail
W="${1:?usage: build-cache.sh WORLD|overhead}"
PY=.venv/bin/python
export SYNCO_BIN="$PWD/target/release/synco"
[ -x "$SYNCO_BIN" ] || export SYNCO_BIN="$PWD/target/debug/synco"
if [ "$W" = overhead ]; then
  CACHE=build/ovhcache
  rm -rf "$CACHE"
  "$PY" benches/attention/overhead.py --compile-only --cache "$CACHE" --seqs 16384,32768 \
    --styles bundled,blocks,strided,moved,descriptors,rows,tutorial
  "$PY" benches/attention/overhead.py --compile-only --cache "$CACHE" --seqs 131072
  tar cJf "$CACHE.tar.xz" -C build "$(basename "$CACHE")"
  echo "$CACHE.tar.xz: $(du -h "$CACHE.tar.xz" | cut -f1), $(ls "$CACHE" | wc -l) entries"
  exit 0
fi
CACHE="build/x${W}cache"
rm -rf "$CACHE"
"$PY" benches/attention/bench.py --compile-only --world "$W" --cache "$CACHE" \
  --models "${MODELS:-llama3-8b,64-head}" --seqs "${SEQS:-16384,32768,131072}"
"$PY" examples/tp_mlp/mlp.py --compile-only --world "$W" --cache "$CACHE"
"$PY" benches/python/host_time.py --compile-only --world "$W" --cache "$CACHE"
tar cJf "$CACHE.tar.xz" -C build "$(basename "$CACHE")"
echo "$CACHE.tar.xz: $(du -h "$CACHE.tar.xz" | cut -f1), $(ls "$CACHE" | wc -l) entries"
