"""How the attention experiments time their variants: each callable with
CUDA events around LAUNCHES back-to-back launches, after WARMUP_MS of
warm-up, the variants interleaved sample by sample; the median of SAMPLES
samples."""

import statistics

SAMPLES, LAUNCHES, WARMUP_MS = 15, 5, 300.0


def time_interleaved(launches):
    """Median ms per launch of each callable, sampled in turn."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for fn in launches.values():
        fn()
    torch.cuda.synchronize()
    warm = torch.cuda.Event(enable_timing=True)
    warm.record()
    while True:
        for fn in launches.values():
            fn()
        end.record()
        end.synchronize()
        if warm.elapsed_time(end) > WARMUP_MS:
            break
    samples = {name: [] for name in launches}
    for _ in range(SAMPLES):
        for name, fn in launches.items():
            start.record()
            for _ in range(LAUNCHES):
                fn()
            end.record()
            end.synchronize()
            samples[name].append(start.elapsed_time(end) / LAUNCHES)
    return {name: statistics.median(s) for name, s in samples.items()}
