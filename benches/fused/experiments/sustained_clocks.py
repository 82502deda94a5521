"""How a local GEMM's time changes over the first second of full load, on
one GPU with the others idle and on every GPU at once (what the fused
operators and their baselines run in), with nvidia-smi's clocks, power and
clock-event reasons sampled meanwhile.

    python3 sustained_clocks.py --out clocks.json    # on the GPU machine

For each shape (M,K,N: torch.matmul of random bf16 [M, K] @ [K, N]), after
an idle pause: `--seconds` of samples of 10 back-to-back products between
CUDA events on GPU 0 alone, a pause, then the same on every GPU at once
(each GPU's products issued in turn from this one thread, so all run
concurrently). Writes every sample's time (ms per product, and its start
in seconds from the script's start) and the nvidia-smi log; prints the
median of the first 50 ms and of the last half of each run.
"""

import argparse
import json
import statistics
import subprocess
import time

import torch

PER_SAMPLE = 10
FIELDS = "timestamp,index,clocks.sm,power.draw,temperature.gpu"
REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")


def start_smi(path):
    """nvidia-smi sampling every 20 ms into `path` (CSV), or None. Tries the
    current name of the clock-event-reasons field, then the older one."""
    for reason in REASONS:
        out = open(path, "w")
        proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={FIELDS},{reason}", "--format=csv", "-lms", "20"],
                                stdout=out, stderr=subprocess.STDOUT)
        time.sleep(0.5)
        if proc.poll() is None:
            return proc
        out.close()
    return None


def run(devices, operands, seconds, t0):
    """Samples until `seconds` have passed: per device, (start s, ms per product)."""
    events = {d: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for d in devices}
    samples = {d: [] for d in devices}
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        at = time.perf_counter() - t0
        for d in devices:
            with torch.cuda.device(d):
                events[d][0].record()
        for _ in range(PER_SAMPLE):
            for d in devices:
                a, b = operands[d]
                torch.matmul(a, b)
        for d in devices:
            with torch.cuda.device(d):
                events[d][1].record()
        for d in devices:
            events[d][1].synchronize()
            samples[d].append((at, events[d][0].elapsed_time(events[d][1]) / PER_SAMPLE))
    return samples


def summary(series):
    """Median of the samples in the first 50 ms, and of the last half."""
    first = [ms for at, ms in series if at - series[0][0] < 0.05]
    last = [ms for _, ms in series[len(series) // 2:]]
    return statistics.median(first), statistics.median(last)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="8192,7168,4096;4096,7168,4096;8192,14336,8192;4096,1024,8192")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--pause", type=float, default=2.0, help="idle seconds before each run")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    gpus = list(range(torch.cuda.device_count()))
    smi = start_smi(args.out.replace(".json", "-smi.csv"))
    t0 = time.perf_counter()
    results = []
    for shape in args.shapes.split(";"):
        m, k, n = (int(x) for x in shape.split(","))
        operands = {}
        for d in gpus:
            gen = torch.Generator(device=f"cuda:{d}").manual_seed(d)
            operands[d] = (torch.randn(m, k, device=f"cuda:{d}", dtype=torch.bfloat16, generator=gen),
                           torch.randn(k, n, device=f"cuda:{d}", dtype=torch.bfloat16, generator=gen))
        for d in gpus:
            a, b = operands[d]
            torch.matmul(a, b)  # cuBLAS handle and heuristics before the pause
            torch.cuda.synchronize(d)
        row = {"m": m, "k": k, "n": n}
        for label, devices in (("gpu0_alone", [0]), ("all_gpus", gpus)):
            time.sleep(args.pause)
            series = run(devices, operands, args.seconds, t0)
            row[label] = {str(d): s for d, s in series.items()}
            for d, s in series.items():
                first, last = summary(s)
                print(f"{m}x{k}x{n} {label:10s} gpu {d}: first 50 ms {first:.3f} ms, last half {last:.3f} ms "
                      f"({last / first:.3f}x), {len(s)} samples", flush=True)
        results.append(row)
        del operands
        torch.cuda.empty_cache()
    if smi is not None:
        smi.terminate()
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "gpus": len(gpus), "torch": torch.__version__,
                   "per_sample": PER_SAMPLE, "results": results}, f)


if __name__ == "__main__":
    main()
