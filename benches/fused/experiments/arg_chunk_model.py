"""Could one model pick both chunk counts of the all-reduce from gathered
operands? (CPU only: it reads a recorded sweep.)

In the `arg` operator (examples/gemm_rs/plan-all-reduce-gather.mlir) one
copy stream per rank pushes, in order: the peer's A rows, B in n_B column
chunks, then C (the rank's rows of the sum) in n_C column chunks, each C
chunk once the kernel's tiles have finished it. `chunks(auto)` picks n_B
from the tile count alone (one chunk per wave, `chunks_per_wave`) and n_C
from `predict_gathered_output`; the sweep at 5ebbed4 (its JSON in
data/arg-sweep-5ebbed4) measured every pair (n_B in 1, 2, 4, 8; n_C in 1,
2, 4) twice at 4096x1024x8192 and 8192x1024x8192 on 2 x H200.

The model here simulates both together, wave by wave: a wave of `sms`
tiles (column-block-major, as the kernel runs them) multiplies the rank's
own K block first, then waits for A and for the B chunks of its columns,
then multiplies the peers' blocks; the stream copies A, B's chunks, then
each C chunk after max(its previous copy, the wave that finishes the
chunk). Each copy costs a fixed time plus bytes over the link. It fits its
constants (per input copy, per output copy, launch, link, GEMM rate) to
the 24 measurements by grid search, prints predicted against measured, and
the pair it picks with the fitted constants and with the calibrated H200
ones (`synco_cost_model::Machine::H200_NVLINK`), and what a second copy
stream for C would save (the same model with the link shared between the
streams; printed where it saves anything).

    python3 benches/fused/experiments/arg_chunk_model.py
"""

import itertools
import json
import math
from pathlib import Path

SWEEP = Path(__file__).resolve().parent / "data" / "arg-sweep-5ebbed4"
N, K_LOCAL, WORLD, TILE_M, TILE_N = 8192, 1024, 2, 128, 256
BYTES = 2  # bf16


def measured():
    """{(M, n_B, n_C): median ms, averaged over runs a and b}."""
    runs = {}
    for run in ("a", "b"):
        for shape in json.loads((SWEEP / run / "tune_1-arg.json").read_text()):
            for v in shape["variants"]:
                name = v["name"]  # grouped_c<n_B>_o<n_C>
                if "_auto_" in name:
                    continue
                n_b, n_c = name.removeprefix("grouped_c").split("_o")
                key = (shape["m"], int(n_b), int(n_c))
                runs.setdefault(key, []).append(v["median_ms"])
    return {k: sum(v) / len(v) for k, v in runs.items()}


def predict_us(m, n_b, n_c, c_in, c_out, launch, gbps, tflops, sms=132, two_streams=False):
    """One launch in us. Each copy's fixed cost runs on its stream, its
    bytes through the one link, in the order the copies reach it: with one
    stream, one copy after another; with `two_streams`, C's copies on a
    stream of their own."""
    rows = m // WORLD
    kernel = 2 * rows * N * K_LOCAL * WORLD / (tflops * 1e6)
    rate = gbps * 1e3
    link = 0.0

    def copy(ready, fixed, nbytes):
        nonlocal link
        link = max(ready + fixed, link) + nbytes / rate
        return link

    stream = a_in = copy(0.0, c_in, rows * K_LOCAL * BYTES * (WORLD - 1))
    b_in = []
    for _ in range(n_b):
        stream = copy(stream, c_in, K_LOCAL * N * BYTES * (WORLD - 1) / n_b)
        b_in.append(stream)
    row_tiles, col_tiles = rows // TILE_M, N // TILE_N
    tiles = row_tiles * col_tiles
    wave = kernel * sms / tiles
    end, wave_ends = 0.0, []
    for w in range(math.ceil(tiles / sms)):
        first, last = w * sms, min(tiles, (w + 1) * sms)
        needs = max(b_in[(t // row_tiles) * n_b // col_tiles] for t in range(first, last))
        end = max(end + wave / WORLD, max(a_in, needs)) + wave * (WORLD - 1) / WORLD
        wave_ends.append((last, end))
    out = 0.0 if two_streams else stream
    for i in range(n_c):
        last_tile = (i + 1) * tiles // n_c - 1
        ready = next(e for last, e in wave_ends if last_tile < last)
        out = copy(max(out, ready), c_out, rows * N * BYTES * (WORLD - 1) / n_c)
    return max(end, out) + launch


def main():
    data = measured()
    grid = itertools.product([2, 3, 4, 5, 6, 8], [2, 3, 4, 5, 6, 8, 10], [10, 20, 30, 40],
                             [330, 350, 370, 390, 410], [650, 700, 750, 800])

    def error(consts):
        return sum((predict_us(*k, *consts) / 1e3 / v - 1) ** 2 for k, v in data.items())

    fitted = min(grid, key=error)
    rms = math.sqrt(error(fitted) / len(data))
    print(f"fitted: per input copy {fitted[0]} us, per output copy {fitted[1]} us, launch "
          f"{fitted[2]} us, link {fitted[3]} GB/s, GEMM {fitted[4]} TFLOP/s; rms error {rms:.1%}")
    # copy_latency_us + sync_us per copy (a flag, or the wait on a counter)
    h200 = (5 + 10, 5 + 10, 40, 370, 750)
    for m in sorted({k[0] for k in data}):
        print(f"\n{m}x{K_LOCAL}x{N}: n_B n_C  measured  fitted  (ms)")
        for (mm, n_b, n_c), v in sorted(data.items()):
            if mm == m:
                print(f"  {n_b} {n_c}  {v:.4f}  {predict_us(m, n_b, n_c, *fitted) / 1e3:.4f}")
        best = min((v, k[1], k[2]) for k, v in data.items() if k[0] == m)
        for label, consts in (("fitted", fitted), ("H200 constants", h200)):
            pick = min(((predict_us(m, b, c, *consts), b, c) for b in (1, 2, 4, 8) for c in (1, 2, 4)))
            print(f"  pick with {label}: n_B {pick[1]}, n_C {pick[2]}: measured "
                  f"{data[(m, pick[1], pick[2])]:.4f} (best {best[0]:.4f} at {best[1]}, {best[2]})")
        for n_b, n_c in sorted({(b, c) for mm, b, c in data if mm == m}):
            one = predict_us(m, n_b, n_c, *fitted)
            two = predict_us(m, n_b, n_c, *fitted, two_streams=True)
            if two < one - 0.05:
                print(f"  C on a second copy stream, n_B {n_b}, n_C {n_c}: {two:.1f} us against {one:.1f}")


if __name__ == "__main__":
    main()
