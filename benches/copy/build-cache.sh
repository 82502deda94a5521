#!/usr/bin/env bash
# Compiles, on this machine (no GPU needed), the variants of
# benches/copy/rate.py (ldst and tma, each copy-program count) into
# build/ratecache, packed as build/ratecache.tar.xz for device-run.sh. Run
# from the repository root after `tools/dev setup` and a release build.
set -euo pipefail
export SYNCO_BIN="$PWD/target/release/synco"
rm -rf build/ratecache
.venv/bin/python benches/copy/rate.py --compile-only --cache build/ratecache
tar cJf build/ratecache.tar.xz -C build ratecache
echo "build/ratecache.tar.xz: $(du -h build/ratecache.tar.xz | cut -f1)"
