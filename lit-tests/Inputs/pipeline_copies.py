"""Whether a fused kernel's PTX holds the local kernel's load pipeline
LOOPS times: `pipeline_copies.py PATTERN FUSED LOCAL LOOPS` counts
PATTERN (a load instruction, `cp.async.cg.shared.global` or
`cp.async.bulk.tensor`) in both PTX files. A split loop holds one
pipelined loop per chunk where its chunks are unrolled, one where they
are not, and a present path two more; each has the local loop's loads,
and the loads outside the loop (a tensor descriptor's Q) come once:
fused = outside + LOOPS * per_loop, local = outside + per_loop.
Prints `LOOPS pipelined loops of per_loop, outside outside`; exits 1 where
the counts fit no such kernel."""

import sys

pattern, fused, local, loops = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
f, l = (open(path).read().count(pattern) for path in (fused, local))
per_loop, rest = divmod(f - l, loops - 1)
if rest or not 0 < per_loop <= l:
    print(f"{fused} holds {f} {pattern}: not {loops} loops of the {l} of {local}")
    sys.exit(1)
print(f"{loops} pipelined loops of {per_loop}, {l - per_loop} outside")
