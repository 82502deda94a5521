"""Where the SMs' time goes in a traced fused kernel.

Reads synco-bench JSON files of variants built with `build.sh --trace`
(chunk-trace-tiles: every tile's begin, first wait begin, last wait end,
last signal and end, per rank) and prints, per variant and rank, how the
SM-time of the launch splits into phases:

  compute   begin -> first wait (or signal, or end): the K loop and the
            epilogue up to its first synchronisation
  wait      first wait begin -> last wait end (chunk.wait spinning)
  publish   last wait end -> last signal: loads of peers' partials, sums,
            stores (remote ones included) and the fence before the signal
  rest      last signal (with none, the last wait's end) -> end: an
            all-gather tile's K loop, which follows its wait, is here
  idle      SM-time in the span with no tile on the SM

`span` is the rank's first tile begin to its last tile end (GPU clock,
%globaltimer); the kernel's launch overhead and the host's side stream are
outside it. With --svg DIR, one Gantt chart per variant (a row per SM,
ranks side by side). With --programs, the tiles are also summed up per
range of program ids along the grid's x axis (e.g. a first wave, or the
programs a split kernel appends): when they began and ended (us after the
rank's first tile began), their median duration and time to the first
wait, and how many waited longer than 1 us.

  python3 trace_summary.py trace.json [more.json] [--svg DIR] [--programs 0:128,128:512,512:]
"""

import argparse
import json
import os
import statistics

# Columns of a traced tile (see synco-bench's TileRow).
TILE, SM, PX, PY, BEGIN, WAIT_BEGIN, WAIT_END, SIGNAL, END = range(9)
PHASES = ["compute", "wait", "publish", "rest"]
COLOURS = {"compute": "#4c72b0", "wait": "#c44e52", "publish": "#dd8452", "rest": "#8c8c8c"}


def phases(row, free_at=0):
    """The tile's (phase, start, end) intervals in ns, in order; its
    compute starts once the SM's previous tile ended (`free_at`: a
    persistent kernel's pipeline starts the next tile's loads early)."""
    begin, end = max(row[BEGIN], free_at), row[END]
    if end < 0:
        return []
    marks = [begin]
    if row[WAIT_BEGIN] >= 0 and row[WAIT_END] >= 0:
        marks += [row[WAIT_BEGIN], row[WAIT_END]]
    else:
        first = row[SIGNAL] if row[SIGNAL] >= 0 else end
        marks += [first, first]
    marks += [row[SIGNAL] if row[SIGNAL] >= marks[-1] else marks[-1], end]
    marks = [max(m, begin) for m in marks]
    return [(p, a, b) for p, a, b in zip(PHASES, marks, marks[1:])]


def by_sm(rows):
    """(row, its phases) for every finished tile, each SM's in order."""
    out, free = [], {}
    for row in sorted((r for r in rows if r[END] >= 0), key=lambda r: (r[SM], r[BEGIN])):
        out.append((row, phases(row, free.get(row[SM], 0))))
        free[row[SM]] = row[END]
    return out


def summarise(rows):
    done = [r for r in rows if r[END] >= 0]
    sms = {r[SM] for r in done}
    span = max(r[END] for r in done) - min(r[BEGIN] for r in done)
    totals = dict.fromkeys(PHASES, 0)
    tiles = by_sm(rows)
    for _, intervals in tiles:
        for phase, a, b in intervals:
            totals[phase] += b - a
    sm_time = max(1, span * len(sms))
    waits = [r[WAIT_END] - r[WAIT_BEGIN] for r in done if r[WAIT_BEGIN] >= 0 and r[WAIT_END] >= 0]
    return {
        "tiles": len(done),
        "unfinished": len(rows) - len(done),
        "sms": len(sms),
        "span_us": span / 1e3,
        "share": {p: totals[p] / sm_time for p in PHASES},
        "idle": 1 - sum(totals.values()) / sm_time,
        "compute_median_us": statistics.median(
            [b - a for _, intervals in tiles for p, a, b in intervals if p == "compute"]
        )
        / 1e3,
        "publish_median_us": statistics.median(
            [b - a for _, intervals in tiles for p, a, b in intervals if p == "publish"]
        )
        / 1e3,
        "waits": len(waits),
        "wait_median_us": statistics.median(waits) / 1e3 if waits else 0.0,
        "wait_max_us": max(waits) / 1e3 if waits else 0.0,
        "last_wait_end_us": max((r[WAIT_END] for r in done), default=-1) / 1e3,
    }


def parse_ranges(spec):
    """`lo:hi,...` (either end may be left out) as [(text, lo, hi or None)]."""
    ranges = []
    for part in spec.split(","):
        lo, colon, hi = part.partition(":")
        try:
            if not colon:
                raise ValueError
            ranges.append((part, int(lo or 0), int(hi) if hi else None))
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{part}' is not a range lo:hi of program ids") from None
    return ranges


def program_ranges(rows, ranges):
    """One line per range of `ranges` (`parse_ranges`) of the tiles whose
    program id along x lies in it."""
    t0 = min(r[BEGIN] for r in rows)
    us = lambda ns: ns / 1e3
    lines = []
    for part, lo, hi in ranges:
        tiles = [r for r in rows if r[END] >= 0 and r[PX] >= lo and (hi is None or r[PX] < hi)]
        if not tiles:
            lines.append(f"programs {part}: none")
            continue
        waits = [r[WAIT_END] - r[WAIT_BEGIN] for r in tiles if r[WAIT_BEGIN] >= 0 and r[WAIT_END] >= 0]
        to_wait = [(r[WAIT_BEGIN] if r[WAIT_BEGIN] >= 0 else r[END]) - r[BEGIN] for r in tiles]
        lines.append(
            f"programs {part}: {len(tiles)} tiles, began {us(min(r[BEGIN] for r in tiles) - t0):.1f} to "
            f"{us(max(r[BEGIN] for r in tiles) - t0):.1f}, ended {us(min(r[END] for r in tiles) - t0):.1f} to "
            f"{us(max(r[END] for r in tiles) - t0):.1f}; median {us(statistics.median(r[END] - r[BEGIN] for r in tiles)):.1f}"
            f" us each, {us(statistics.median(to_wait)):.1f} to the first wait; "
            f"{sum(1 for w in waits if w > 1000)} waited over 1 us"
            + (f" (median {us(statistics.median(waits)):.1f}, longest {us(max(waits)):.1f})" if waits else "")
        )
    return lines


def svg(name, ranks, path):
    width, row_h, gap = 900, 3, 30
    span = max(max(r[END] for r in rows if r[END] >= 0) for rows in ranks if rows)
    sms = sorted({r[SM] for rows in ranks for r in rows})
    sm_row = {sm: i for i, sm in enumerate(sms)}
    height = len(sms) * row_h
    parts = []
    for k, rows in enumerate(ranks):
        x0 = k * (width + gap)
        parts.append(f'<text x="{x0}" y="12" font-size="12">{name}: rank {k} ({span / 1e3:.1f} us)</text>')
        for row, intervals in by_sm(rows):
            y = 20 + sm_row[row[SM]] * row_h
            for phase, a, b in intervals:
                if b > a:
                    parts.append(
                        f'<rect x="{x0 + a / span * width:.2f}" y="{y}" width="{(b - a) / span * width:.2f}" '
                        f'height="{row_h - 0.5}" fill="{COLOURS[phase]}"/>'
                    )
    legend_y = height + 40
    for i, phase in enumerate(PHASES):
        parts.append(f'<rect x="{i * 90}" y="{legend_y}" width="10" height="10" fill="{COLOURS[phase]}"/>')
        parts.append(f'<text x="{i * 90 + 14}" y="{legend_y + 9}" font-size="11">{phase}</text>')
    total_w = len(ranks) * (width + gap)
    with open(path, "w") as f:
        f.write(
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{legend_y + 20}">'
            + "".join(parts)
            + "</svg>\n"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--svg", help="write a Gantt chart per variant into this directory")
    ap.add_argument("--programs", type=parse_ranges,
                    help="comma-separated ranges lo:hi of program ids to sum up apart")
    args = ap.parse_args()
    for path in args.json:
        with open(path) as f:
            shapes = json.load(f)
        for shape in shapes:
            for v in shape["variants"]:
                if not v.get("trace"):
                    continue
                name = f'{shape["shape"]}/{v["name"]}'
                median = v.get("median_ms")
                print(f"{name}: median {median:.3f} ms" if median else name)
                if isinstance(v["trace"], list):  # before the bench recorded t0_ns
                    ranks = v["trace"]
                else:
                    ranks, t0 = v["trace"]["tiles"], v["trace"]["t0_ns"]
                    print(f"  rank starts (GPU clocks, ns after rank 0's): {[t - t0[0] for t in t0]}")
                for rank, rows in enumerate(ranks):
                    if not rows:
                        continue
                    s = summarise(rows)
                    share = " ".join(f"{p} {s['share'][p]:.0%}" for p in PHASES)
                    print(
                        f"  rank {rank}: {s['tiles']} tiles on {s['sms']} SMs in {s['span_us']:.1f} us: "
                        f"{share} idle {s['idle']:.0%}; median compute {s['compute_median_us']:.1f} us, "
                        f"publish {s['publish_median_us']:.1f} us; "
                        + (
                            f"{s['waits']} waits, median {s['wait_median_us']:.1f} us, longest {s['wait_max_us']:.1f} us; "
                            f"last wait ends at {s['last_wait_end_us']:.1f} us"
                            if s["waits"]
                            else "no waits"
                        )
                        + (f"; {s['unfinished']} tiles never ended" if s["unfinished"] else "")
                    )
                    if args.programs:
                        for line in program_ranges(rows, args.programs):
                            print(f"    {line}")
                if args.svg:
                    os.makedirs(args.svg, exist_ok=True)
                    out = os.path.join(args.svg, name.replace("/", "__") + ".svg")
                    svg(name, ranks, out)


if __name__ == "__main__":
    main()
