#!/usr/bin/env bash
# The multi-GPU runs of the Python path on a GPU machine (through the
# device tool), from the repository root, given the package's wheel
# (target/wheels) and a compile cache for W = the machine's GPU count
# (build/x<W>cache.tar.xz, from `benches/attention/build-cache.sh W`;
# CACHE=build/x<W>cache names it):
#
#   attention  benches/attention/bench.py on LLaMA-3-8B (16k, 32k tokens)
#              and the 64-head model (16k)
#   attention-128k  the same on LLaMA-3-8B at 128k tokens (5 samples of 2
#              calls: a call takes about a quarter of a second)
#   mlp        the tensor-parallel MLP example under torchrun
#   host       benches/python/host_time.py, a rank per GPU: host time per
#              call, bit-identity with the single-process runtime, and
#              calls back to back eagerly and replayed from CUDA graphs
#   overhead   benches/attention/overhead.py on one GPU (its README tables:
#              every style at 16k and 32k tokens, the bundled kernel at
#              128k with 11 samples; 6.5 minutes in all on an H100,
#              2026-12-06), from
#              build/ovhcache.tar.xz (`build-cache.sh overhead`)
#
# Logs and JSON under $OUT, packed into $OUT/results.tar.gz; one summary
# line per stage.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"
W="$(nvidia-smi -L | wc -l)"
CACHE="${CACHE:-build/x${W}cache}"
LIB="$(mktemp -d)"
python3 -m pip install -q --no-deps --target "$LIB" target/wheels/synco-*.whl
export PYTHONPATH="$LIB"
[ -f "$CACHE.tar.xz" ] && tar xJf "$CACHE.tar.xz" -C build
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$OUT/gpus.txt"
nvidia-smi topo -m >>"$OUT/gpus.txt"
status=0
stage() { # name, command...
  local name="$1"; shift
  timeout "${LIMIT:-280}" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || status=1
  echo "== $name: rc=$rc"
}
for stage in "$@"; do
  case "$stage" in
    attention)
      stage attention-llama python3 benches/attention/bench.py --world "$W" --cache "$CACHE" \
        --models llama3-8b --seqs 16384,32768 --out "$OUT/bench-llama3-8b-w$W.json"
      stage attention-64 python3 benches/attention/bench.py --world "$W" --cache "$CACHE" \
        --models 64-head --seqs 16384 --out "$OUT/bench-64-head-w$W.json"
      ;;
    attention-128k)
      stage attention-128k python3 benches/attention/bench.py --world "$W" --cache "$CACHE" \
        --models llama3-8b --seqs 131072 --samples 5 --per-sample 2 \
        --out "$OUT/bench-llama3-8b-128k-w$W.json"
      ;;
    mlp)
      stage mlp torchrun --nproc-per-node="$W" examples/tp_mlp/mlp.py --cache "$CACHE"
      tail -4 "$OUT/mlp.log"
      ;;
    host)
      stage host python3 benches/python/host_time.py --cache "$CACHE" --world "$W" \
        --out "$OUT/host_time-x$W.json"
      grep '^|' "$OUT/host.log"
      ;;
    overhead)
      tar xJf build/ovhcache.tar.xz -C build
      gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -o 'H[0-9]\+' | head -1 | tr H h)"
      LIMIT=300 stage overhead python3 benches/attention/overhead.py --cache build/ovhcache \
        --seqs 16384,32768 --styles bundled,blocks,strided,moved,descriptors,rows,tutorial \
        --out "$OUT/overhead-${gpu:-gpu}.json"
      LIMIT=330 stage overhead-128k python3 benches/attention/overhead.py --cache build/ovhcache \
        --seqs 131072 --samples 11 --out "$OUT/overhead-128k-${gpu:-gpu}.json"
      python3 benches/attention/overhead.py --table "$OUT"/overhead-*.json \
        | tee "$OUT/overhead-tables.md"
      ;;
    *) echo "usage: $0 attention|attention-128k|mlp|host|overhead..." >&2; exit 2 ;;
  esac
done
shopt -s nullglob
benches=("$OUT"/bench-*.json)
[ ${#benches[@]} = 0 ] || python3 - "${benches[@]}" <<'PY' || true
import json, sys
for path in sys.argv[1:]:
    for r in json.load(open(path))["rows"]:
        ms = r["ms"]
        synco = {k[6:]: round(v, 3) for k, v in ms.items() if k.startswith("synco")}
        print(r["model"], r["seq"], "causal" if r["causal"] else "full", "floor", round(r["floor_ms"], 3),
              "b2b", round(ms.get("torch b2b", float("nan")), 3), "sdpa", round(ms["sdpa alone"], 3),
              "attn", round(ms["attention alone"], 3), "link", round(ms["link"], 3),
              "ag", round(ms.get("all-gather alone", float("nan")), 3), synco, r.get("refused"))
PY
(cd "$OUT" && tar czf results.tar.gz --exclude=results.tar.gz ./*)
exit $status
