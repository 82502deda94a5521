#!/usr/bin/env bash
# Writes the tables and plots of one device call's benchmark results
# (report.py for every operator it timed), in place:
#
#   report-set.sh DIR COMMIT
#
# DIR holds what device-run.sh wrote (results.tar.gz is unpacked first if
# the JSON is not there yet): synco.json (all-gather), synco_rs.json,
# synco_ar.json, synco_ar2.json, synco_rsg.json, synco_arg.json, with
# torch.json (all-gather baselines) and torch_rs*.json (reduce-scatter and
# all-reduce baselines; the fastest run per shape is used) and gpus.txt.
# COMMIT is the commit the variants were built from. With reduction
# results, targets.py then scores issue 7's targets (targets.md).
set -euo pipefail
DIR="${1:?usage: report-set.sh DIR COMMIT}"
COMMIT="${2:?usage: report-set.sh DIR COMMIT}"
REPORT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/report.py"
cd "$DIR"
if [ -f results.tar.gz ] && ! ls synco*.json >/dev/null 2>&1; then
  tar -xzf results.tar.gz
fi
shopt -s nullglob
torch_rs=(torch_rs*.json)
reported=0
for op in ag rs ar ar2 rsg arg; do
  synco=synco_$op.json
  torch=("${torch_rs[@]}")
  if [ "$op" = ag ]; then
    synco=synco.json
    torch=(torch.json)
  fi
  [ -f "$synco" ] || continue
  if [ ${#torch[@]} -eq 0 ] || [ ! -f "${torch[0]}" ]; then
    echo "report-set.sh: $synco has no PyTorch baselines beside it (${torch[*]:-torch_rs*.json}): skipped" >&2
    continue
  fi
  python3 "$REPORT" --op "$op" --synco "$synco" --torch "${torch[@]}" --machine gpus.txt --commit "$COMMIT" --out-dir .
  reported=$((reported + 1))
done
if [ "$reported" = 0 ]; then
  echo "report-set.sh: no synco*.json with baselines in $DIR" >&2
  exit 1
fi
# Issue 7's targets, scored from the reduction tables (targets.md).
reductions=(results_rs*.json results_ar*.json)
if [ ${#reductions[@]} -gt 0 ]; then
  python3 "$(dirname "$REPORT")/targets.py" .
fi
