"""Whether a fused kernel's PTX holds the local kernel's load pipeline
once per chunk: `pipeline_copies.py PATTERN FUSED LOCAL CHUNKS` counts
PATTERN (a load instruction, `cp.async.cg.shared.global` or
`cp.async.bulk.tensor`) in both PTX files. A split loop whose CHUNKS
chunks are unrolled holds one pipelined loop per chunk, each with the
local loop's loads, and the loads outside the loop (a tensor descriptor's
Q) once: fused = outside + CHUNKS * per_loop, local = outside + per_loop.
Prints `CHUNKS chunk loops of per_loop, outside outside`; exits 1 where
no such split exists."""

import sys

pattern, fused, local, chunks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
f, l = (open(path).read().count(pattern) for path in (fused, local))
per_loop, rest = divmod(f - l, chunks - 1)
if rest or not 0 < per_loop <= l:
    print(f"{fused} holds {f} {pattern}: not {chunks} loops of the {l} of {local}")
    sys.exit(1)
print(f"{chunks} chunk loops of {per_loop}, {l - per_loop} outside")
