#!/usr/bin/env bash
# Builds, on this machine (no GPU needed), what tests/device-run.sh runs on
# a GPU machine without the compiler: the package's wheel (target/wheels,
# from tools/dev setup) and a compile cache of every fused kernel that
# ranks.py uses for 2, 3 and 4 ranks and the MLP example for 2 and 4,
# sharing one GPU,
# packed as build/pycache.tar.xz. Run from the repository root after
# `tools/dev setup`.
set -euo pipefail
PY=.venv/bin/python
export SYNCO_BIN="$PWD/target/release/synco"
[ -x "$SYNCO_BIN" ] || export SYNCO_BIN="$PWD/target/debug/synco"
rm -rf build/pycache
"$PY" crates/synco-python/tests/ranks.py build --cache build/pycache --worlds 2,3,4
for W in 2 4; do
  "$PY" examples/tp_mlp/mlp.py --compile-only --world "$W" --shared --cache build/pycache
done
tar cJf build/pycache.tar.xz -C build pycache
echo "build/pycache.tar.xz: $(du -h build/pycache.tar.xz | cut -f1), $(ls build/pycache | wc -l) entries"
