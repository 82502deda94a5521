#!/usr/bin/env bash
# The Python path on a GPU machine (through the device tool), from the
# repository root, given the package's wheel (target/wheels) and a compile
# cache built here (build/pycache.tar.xz, from tests/ranks.py build and
# examples/tp_mlp/mlp.py --compile-only; tests/build-cache.sh makes both):
# the checks of ranks.py with 2, 3 and 4 processes, its fault tests, the MLP
# example under torchrun, and benches/python/host_time.py (host time per
# call, and results against the single-process runtime).
# Prints one summary line per stage; exits non-zero if any failed.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
LIB="$(mktemp -d)"
"$PY" -m pip install -q --no-deps --target "$LIB" target/wheels/synco-*.whl
export PYTHONPATH="$LIB" SYNCO_CACHE_DIR="$PWD/build/pycache"
tar xJf build/pycache.tar.xz -C build
status=0
stage() { # name, command...
  local name="$1"; shift
  local log="${OUT:-/tmp}/$name.log"
  timeout "${LIMIT:-300}" "$@" >"$log" 2>&1
  local rc=$?
  [ $rc = 0 ] || status=1
  echo "== $name: rc=$rc: $(grep -E 'passed|check against|synco fused|plain PyTorch|speed-up|bit-identical' "$log" | tr '\n' ' ')"
}
for W in ${CHECK_WORLDS:-2 3 4}; do
  stage "check-w$W" "$PY" crates/synco-python/tests/ranks.py check --cache build/pycache --world "$W"
done
for F in killed killed_replay absent withheld; do
  stage "fault-$F" "$PY" crates/synco-python/tests/ranks.py fault --cache build/pycache --fault "$F"
done
for W in ${WORLDS:-2 4}; do
  stage "mlp-w$W" torchrun --nproc-per-node="$W" examples/tp_mlp/mlp.py --cache build/pycache
done
for W in ${WORLDS:-2 4}; do
  stage "host-time-w$W" "$PY" benches/python/host_time.py --cache build/pycache --world "$W" \
    --out "${OUT:-/tmp}/host_time-w$W.json"
  grep '^|' "${OUT:-/tmp}/host-time-w$W.log"
done
exit $status
