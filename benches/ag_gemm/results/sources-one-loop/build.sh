#!/usr/bin/env bash
# What ran for this directory (commit b0f0572 + the script, nothing to
# build): two calls on nvidia-h200 (one GPU). The first timed out after
# 400 s with no output: the gate's spin was evaluated for iterations past
# the loop's end (Triton's pipeliner computes their addresses, with their
# loads masked off), where it read a flag that is never set; the script
# now skips those iterations and gives up after 0.1 s. The second:
#   python3 benches/ag_gemm/experiments/flat_sources_sweep.py --out $OUT/flat.json   (21 s)
# rerun-refactored/: the same, a third call, after flat_sources_sweep.py
# moved to local_gemm_sweep.time_graph(fn, warm_ms) (the same warm-up).
# Here, without a GPU, the PTX checks:
#   .venv/bin/python benches/ag_gemm/experiments/flat_sources_sweep.py --compile-only --out /tmp/flat
exit 0
