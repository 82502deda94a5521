#!/usr/bin/env bash
# What ran for this directory (commit b0f0572 + the script, nothing to
# build): one call on nvidia-h200-x2 (24 s):
#   cd benches/ag_gemm/experiments && python3 split_tiles_fused.py --out $OUT/split.json
# Here, without a GPU, the PTX checks:
#   .venv/bin/python benches/ag_gemm/experiments/split_tiles_fused.py --compile-only
exit 0
