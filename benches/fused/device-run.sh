#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository
# root, with the carried synco-bench binary and build/bench variants:
#
#   benches/fused/device-run.sh STAGE...
#
#   check      correctness of every variant in build/bench/check (all-gather
#              and reduce-scatter, every style, backend and chunk count),
#              then the watchdog test
#   check-shared  correctness of build/bench/check-w*/ (variants built for
#              more ranks than the machine has GPUs: ranks share the GPUs,
#              rank r on GPU r mod the GPU count; small shapes, no timing)
#   bench      the all-gather benchmark (build/bench/full) + PyTorch baselines
#   bench-rs   the reduce-scatter benchmark (build/bench/full-rs) + PyTorch
#              (reduce-scatter and all-reduce baselines)
#   bench-rsg  the reduce-scatter from gathered operands (build/bench/full-rsg),
#              and the PyTorch baselines unless bench-rs ran them
#   bench-ar   the one-shot all-reduce benchmark (build/bench/full-ar), and
#              the PyTorch baselines unless bench-rs ran them
#   bench-ar2  the two-shot all-reduce benchmark (build/bench/full-ar2)
#   bench-arg  the all-reduce from gathered operands (build/bench/full-arg)
#   torch-rs   the PyTorch reduce-scatter / all-reduce baselines alone
#   tune       local/fused timing of build/bench/tune/*
#   timeline   like tune, for build/bench/timeline/*, with each fused
#              variant's side-stream copies timed (--timeline)
#   trace      like tune, for build/bench/trace/*: variants built with
#              build.sh --trace also record every tile (experiments/
#              trace_summary.py reads the JSON)
#   clocks     experiments/sustained_clocks.py: cuBLAS GEMMs over their
#              first second of load, one GPU alone and all at once, with
#              nvidia-smi's clocks and power (clocks.json, clocks-smi.csv)
#
# Stages run in the order given, each under a time limit (LIMIT seconds,
# default 280; BENCH names the synco-bench binary, default
# target/release/synco-bench, e.g. another runtime's for an A/B); results go to
# $OUT/results.tar.gz (JSON and logs; the device tool brings back only a
# few files) and $OUT/summary.txt, which is also printed last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"
# The world size is the machine's GPU count unless W is set; the variants in
# build/bench must have been built for it (build.sh --world W).
W="${W:-$(nvidia-smi -L | wc -l)}"
LIMIT="${LIMIT:-280}"
mkdir -p "$OUT"
# The variants may come packed (build/bench.tar.xz: compiled variants
# compress about 20x, and the device tool carries at most 64 MiB). The
# package replaces any build/bench left on the machine by an earlier call.
if [ -f build/bench.tar.xz ]; then
  rm -rf build/bench
  tar -xJf build/bench.tar.xz -C build
fi
echo "variants: $(find build/bench -name variant.json | wc -l) in build/bench" | tee "$OUT/variants.txt"
BENCH="${BENCH:-target/release/synco-bench}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpus.txt"
nvidia-smi topo -m >>"$OUT/gpus.txt"
summary="$OUT/summary.txt"
: >"$summary"
run() { # name log command...
  local name=$1 log=$2; shift 2
  local start=$SECONDS
  timeout "$LIMIT" "$@" >"$log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc, $((SECONDS - start)) s: $(grep -E 'passed|watchdog:' "$log" | tail -2 | tr '\n' ' ')" | tee -a "$summary"
}
# The PyTorch reduce-scatter and all-reduce baselines: torch_rs.json, then
# torch_rs-2.json, ... for each later run in the call (report.py takes the
# fastest of them).
torch_rs() {
  local n=1 out="$OUT/torch_rs.json"
  while [ -f "$out" ]; do n=$((n + 1)); out="$OUT/torch_rs-$n.json"; done
  run "torch-rs $n" "${out%.json}.log" python3 benches/fused/torch_baselines.py --op rs --world "$W" --out "$out"
}
for stage in "$@"; do
  case "$stage" in
    check)
      run check "$OUT/check.log" $BENCH --variants build/bench/check --out "$OUT/check.json" --check-only
      run watchdog "$OUT/watchdog.log" $BENCH --variants build/bench/check --watchdog-test --out /dev/null
      ;;
    check-shared)
      for dir in build/bench/check-w*; do
        run "check $(basename "$dir")" "$OUT/$(basename "$dir").log" \
          $BENCH --variants "$dir" --out "$OUT/$(basename "$dir").json" --check-only --gpus "$(nvidia-smi -L | wc -l)"
      done
      ;;
    bench)
      run bench "$OUT/synco.log" $BENCH --variants build/bench/full --out "$OUT/synco.json" --iters 15
      run torch "$OUT/torch.log" python3 benches/fused/torch_baselines.py --world "$W" --out "$OUT/torch.json"
      ;;
    bench-rs)
      run bench-rs "$OUT/synco_rs.log" $BENCH --variants build/bench/full-rs --out "$OUT/synco_rs.json" --iters 15
      torch_rs
      ;;
    bench-rsg)
      run bench-rsg "$OUT/synco_rsg.log" $BENCH --variants build/bench/full-rsg --out "$OUT/synco_rsg.json" --iters 15
      [ -f "$OUT/torch_rs.json" ] || torch_rs
      ;;
    bench-ar)
      run bench-ar "$OUT/synco_ar.log" $BENCH --variants build/bench/full-ar --out "$OUT/synco_ar.json" --iters 15
      # The all-reduce baselines, unless bench-rs ran them in this call.
      [ -f "$OUT/torch_rs.json" ] || torch_rs
      ;;
    torch-rs)
      # The reduce-scatter and all-reduce baselines alone (for bench-ar2
      # without bench-rs or bench-ar in the same call, or one more run of
      # them: before and after Synco's).
      torch_rs
      ;;
    bench-ar2)
      run bench-ar2 "$OUT/synco_ar2.log" $BENCH --variants build/bench/full-ar2 --out "$OUT/synco_ar2.json" --iters 15
      ;;
    bench-arg)
      run bench-arg "$OUT/synco_arg.log" $BENCH --variants build/bench/full-arg --out "$OUT/synco_arg.json" --iters 15
      ;;
    tune)
      for cfg in build/bench/tune/*; do
        run "tune $(basename "$cfg")" "$OUT/tune_$(basename "$cfg").log" \
          $BENCH --variants "$cfg" --out "$OUT/tune_$(basename "$cfg").json" --iters 20
      done
      ;;
    timeline)
      for cfg in build/bench/timeline/*; do
        run "timeline $(basename "$cfg")" "$OUT/timeline_$(basename "$cfg").log" \
          $BENCH --variants "$cfg" --out "$OUT/timeline_$(basename "$cfg").json" --iters 15 --timeline
      done
      ;;
    trace)
      for cfg in build/bench/trace/*; do
        run "trace $(basename "$cfg")" "$OUT/trace_$(basename "$cfg").log" \
          $BENCH --variants "$cfg" --out "$OUT/trace_$(basename "$cfg").json" --iters 15
      done
      ;;
    clocks)
      run clocks "$OUT/clocks.log" python3 benches/fused/experiments/sustained_clocks.py --out "$OUT/clocks.json"
      ;;
    *)
      echo "usage: $0 check|check-shared|bench|bench-rs|bench-rsg|bench-ar|bench-ar2|bench-arg|torch-rs|tune|timeline|trace|clocks..." >&2
      exit 2
      ;;
  esac
done
echo "---- failures"
grep -h "ok=false" "$OUT"/*.log | cut -c1-220 | head -20
# The device tool brings back a few files only: everything else in one.
(cd "$OUT" && tar czf results.tar.gz --exclude=results.tar.gz --exclude=summary.txt ./* && \
  find . -type f ! -name results.tar.gz ! -name summary.txt -delete)
cat "$summary"
