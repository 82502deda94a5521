# The plan verifier's coverage check on many boxes in buffers of 3 to 8
# dimensions. The boxes are random k-d partitions (each box split in two
# along a random dimension at a random point, until there are n), so every
# box adds its own edge: a grid of the boxes' cut points has about
# (n / d)^d cells (400 boxes in 5-D: 3 x 10^9, 256 in 8-D: 10^12). Each partition must
# verify in seconds; the same partition with one box dropped, one box grown
# into its neighbour, or one reduction source missing a box must be
# refused at the op that is wrong; and a grid of boxes whose extents meet
# in too many pairs along every dimension is refused at its limit (2^26
# compared pairs, about a second), with a location, never verified for
# minutes.
#
# RUN: %python %s
#
# Every case is checked here; a failure prints the case and synco-opt's
# output and exits 1.

import itertools
import random
import subprocess
import sys
import tempfile
import time

SECONDS = 30  # a case that takes longer fails (the largest takes about 3 s)


def partition(shape, count, rng):
    """`count` disjoint boxes (offsets, sizes) that exactly cover `shape`."""
    boxes = [([0] * len(shape), list(shape))]
    while len(boxes) < count:
        splittable = [i for i, (_, s) in enumerate(boxes) if max(s) > 1]
        offsets, sizes = boxes.pop(rng.choice(splittable))
        dim = rng.choice([d for d, s in enumerate(sizes) if s > 1])
        cut = rng.randrange(1, sizes[dim])
        low, high = list(sizes), list(sizes)
        low[dim], high[dim] = cut, sizes[dim] - cut
        upper = list(offsets)
        upper[dim] += cut
        boxes += [(offsets, low), (upper, high)]
    return boxes


def region(buffer, offsets, sizes):
    return (
        f"#chunk.region<@{buffer}[(r) -> ({', '.join(map(str, offsets))})] "
        f"[{', '.join(map(str, sizes))}]>"
    )


def gather_plan(shape, boxes):
    ty = "x".join(map(str, shape)) + "xf32"
    lines = [
        "chunk.plan @p world_size(1) {",
        f"  chunk.buffer @S : !chunk.buffer<{ty}>",
        f"  chunk.buffer @B : !chunk.buffer<{ty}>",
    ]
    for i, (offsets, sizes) in enumerate(boxes):
        lines.append(
            f"  chunk.transfer @t{i} local copy_engine from "
            f"{region('S', offsets, sizes)} on (r) -> (r) to "
            f"{region('B', offsets, sizes)} on (r) -> (r) "
            f'order({i}) {{group = "g"}}'
        )
    return "\n".join(lines + ["}"]) + "\n"


def reduction_plan(shape, boxes, skip):
    """Two ranks reduce into rank r's @C: every box from both sources,
    except box `skip` from the peer (None: nothing skipped)."""
    ty = "x".join(map(str, shape)) + "xf32"
    lines = [
        "chunk.plan @p world_size(2) {",
        f"  chunk.buffer @P : !chunk.buffer<{ty}>",
        f"  chunk.buffer @C : !chunk.buffer<{ty}>",
    ]
    for i, (offsets, sizes) in enumerate(boxes):
        for name, kind, src in [("own", "local", "(r)"), ("peer", "pull", "((r + 1) mod 2)")]:
            if name == "peer" and i == skip:
                continue
            lines.append(
                f"  chunk.transfer @{name}{i} {kind} copy_engine from "
                f"{region('P', offsets, sizes)} on (r) -> {src} to "
                f"{region('C', offsets, sizes)} on (r) -> (r) "
                f'order({i}) reduce(sum) {{group = "rs"}}'
            )
    return "\n".join(lines + ["}"]) + "\n"


def hypercube_plan(dims):
    """A 2 x 2 x ... grid of unit boxes in a buffer of `dims` dimensions
    (2^dims transfers): each box's extent meets half of the others' along
    every dimension, so a sweep compares about 2^(2 dims - 2) pairs."""
    shape = [2] * dims
    return gather_plan(
        shape, [(list(o), [1] * dims) for o in itertools.product([0, 1], repeat=dims)]
    )


failures = 0


def check(name, text, expect_error=None):
    """Runs the verifier on `text`; `expect_error`: a substring of the
    located error it must give (None: it must verify)."""
    global failures
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(text)
        f.flush()
        start = time.monotonic()
        try:
            run = subprocess.run(
                ["synco-opt", f.name], capture_output=True, text=True, timeout=SECONDS
            )
        except subprocess.TimeoutExpired:
            print(f"FAIL {name}: no answer in {SECONDS} s")
            failures += 1
            return
        seconds = time.monotonic() - start
    located = f"{f.name}:" in run.stderr and ": error: " in run.stderr
    if expect_error is None:
        ok = run.returncode == 0
    else:
        ok = run.returncode == 1 and located and expect_error in run.stderr
    print(f"{'ok  ' if ok else 'FAIL'} {name} ({seconds:.2f} s)")
    if not ok:
        failures += 1
        print(run.stderr[-2000:])


rng = random.Random(31)
for shape, count in [
    ([1 << 16, 1 << 16, 1 << 12], 700),
    ([1 << 12] * 4, 500),
    ([1 << 10] * 5, 400),
    ([1 << 8] * 6, 300),
    ([1 << 6] * 8, 100),
    ([1 << 6] * 8, 256),
]:
    boxes = partition(shape, count, rng)
    label = f"{len(shape)}-D, {count} boxes"
    check(f"{label}: exact partition", gather_plan(shape, boxes))
    check(
        f"{label}: one box dropped",
        gather_plan(shape, boxes[:-1]),
        'group "g" leave part of @B unwritten on rank 0',
    )
    # Grow a box by one along a dimension where it does not end at the
    # buffer's edge: it now overlaps the box next to it.
    victim = next(
        i
        for i, (o, s) in enumerate(boxes)
        if any(o[d] + s[d] < shape[d] for d in range(len(shape)))
    )
    offsets, sizes = boxes[victim]
    grown = list(sizes)
    dim = next(d for d in range(len(shape)) if offsets[d] + sizes[d] < shape[d])
    grown[dim] += 1
    overlapping = boxes[:victim] + [(offsets, grown)] + boxes[victim + 1 :]
    check(
        f"{label}: one box grown into its neighbour",
        gather_plan(shape, overlapping),
        "already writes: group \"g\" must write each element exactly once",
    )

boxes = partition([512, 256, 128], 300, rng)
check("reduction, 3-D, 300 boxes per source", reduction_plan([512, 256, 128], boxes, None))
check(
    "reduction, 3-D, the peer misses one box",
    reduction_plan([512, 256, 128], boxes, 17),
    'gets no contribution from rank 1 for some elements',
)
check("a 13-D hypercube of 8192 boxes (2^24 pairs): verifies", hypercube_plan(13))
check(
    "a 15-D hypercube of 32768 boxes (2^28 pairs): refused at the limit",
    hypercube_plan(15),
    'the coverage check of group "g" on rank 0 stopped at its limit of 67108864',
)

sys.exit(1 if failures else 0)
