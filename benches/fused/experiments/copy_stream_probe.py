"""What a gather's copy stream costs per copy (no Synco code involved).

The reduce-scatter from gathered operands pushes, on each rank's copy
stream, the peer's A rows (4 MiB) and B (16 MiB) in column chunks, each
followed by the flag the kernel's tiles wait for (benches/fused/docs/limits.md,
passes/docs/split-first-wave.md). The side-stream timeline shows
6 + 3 us between one chunk's data and the next chunk's start, but its own
events inflate that. This probe times whole copy sequences with one event
at each end, both GPUs pushing to each other at once on created streams
(as the runtime does), to tell what each copy and each flag costs and
whether a second stream can hide the per-copy cost:

* one 20 MiB copy (the link's rate), A + B in 2 copies, in 5 copies of
  4 MiB (1D, and B's chunks as the runtime's 2D copies), with each chunk's
  flag set by `cuStreamWriteValue32` into the peer (the runtime) or by a
  4-byte copy, with B in 8 chunks;
* two streams: A and then B's chunks alternating between them, each
  copied as a head (3/4 or 7/8 of its rows) and a tail, each head waiting
  for the previous head, so one chunk's tail drains while the next one's
  head moves; and the chunks dealt round robin with no ordering;
* the same with a GEMM on each GPU's compute stream.

With --first, instead: the time until B's first 1, 2 or 4 chunks (of 4)
have landed with their flags, A copied first on the same stream (the
runtime) or on a second stream beside B's first chunk. (Prepared for an
A/B call that has not run yet; its folder, results/head-beside-not-run,
is in git history at 9598717 under benches/ag_gemm/.)

With --link, instead: one contiguous copy of 20, 64 or 256 MiB from GPU 0,
from GPU 1, and from both at once (the link's rate per direction, one way
and both ways).

    python3 copy_stream_probe.py --out probe.json      # on nvidia-h200-x2
    python3 copy_stream_probe.py --link --out link.json
    python3 copy_stream_probe.py --first --out first.json
"""
import argparse
import ctypes
import json
import statistics

from gather_operands_fused import Memcpy2D  # the scripts beside this one
from nvlink_sm_probe import enable_peer_access

A_ROWS, K, N = 2048, 1024, 8192  # the peer's A rows and B of 4096x1024x8192 on 2 ranks
ELEM = 2  # bf16
MEMORYTYPE_DEVICE = 2


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--link", action="store_true", help="time plain copies one way and both ways instead")
    parser.add_argument("--first", action="store_true",
                        help="time until the first chunks' flags, with A on the copy stream or beside chunk 0")
    args = parser.parse_args()

    import torch
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: CUresult {rc}")

    enable_peer_access()

    gen = torch.Generator(device="cpu").manual_seed(0)
    src_a = [torch.randn(A_ROWS, K, generator=gen).to(torch.bfloat16).to(f"cuda:{d}") for d in range(2)]
    src_b = [torch.randn(K, N, generator=gen).to(torch.bfloat16).to(f"cuda:{d}") for d in range(2)]
    dst_a = [torch.empty_like(src_a[d]) for d in range(2)]  # dst_x[d] receives from GPU 1 - d
    dst_b = [torch.empty_like(src_b[d]) for d in range(2)]
    flags = [torch.zeros(64, dtype=torch.int32, device=f"cuda:{d}") for d in range(2)]
    epoch_word = [torch.ones(1, dtype=torch.int32, device=f"cuda:{d}") for d in range(2)]
    streams = [[torch.cuda.Stream(device=f"cuda:{d}") for _ in range(2)] for d in range(2)]
    load_a = [torch.randn(4096, 1024, device=f"cuda:{d}").to(torch.bfloat16) for d in range(2)]
    load_b = [torch.randn(1024, 8192, device=f"cuda:{d}").to(torch.bfloat16) for d in range(2)]

    def copy_1d(dst, src, nbytes, stream):
        check(cuda.cuMemcpyAsync(ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(nbytes),
                                 ctypes.c_void_p(stream.cuda_stream)), "cuMemcpyAsync")

    def copy_b_columns(d, first_col, cols, first_row, rows, stream):
        """Columns [first_col, +cols) of rows [first_row, +rows) of GPU d's B into its peer."""
        p = Memcpy2D()
        p.srcMemoryType = p.dstMemoryType = MEMORYTYPE_DEVICE
        offset = (first_row * N + first_col) * ELEM
        p.srcDevice = src_b[d].data_ptr() + offset
        p.dstDevice = dst_b[1 - d].data_ptr() + offset
        p.srcPitch = p.dstPitch = N * ELEM
        p.WidthInBytes = cols * ELEM
        p.Height = rows
        check(cuda.cuMemcpy2DAsync_v2(ctypes.byref(p), ctypes.c_void_p(stream.cuda_stream)), "cuMemcpy2DAsync")

    def flag(d, index, stream, how):
        target = flags[1 - d].data_ptr() + 4 * index
        if how == "write_value":
            check(cuda.cuStreamWriteValue32_v2(ctypes.c_void_p(stream.cuda_stream), ctypes.c_uint64(target),
                                               ctypes.c_uint32(1), 0), "cuStreamWriteValue32")
        elif how == "copy":
            copy_1d(target, epoch_word[d].data_ptr(), 4, stream)

    def serial(d, chunks, layout, flags_by):
        s = streams[d][0]
        a_bytes = src_a[d].nbytes
        if layout == "one copy":  # A and B as if they were one buffer: the link's rate
            copy_1d(dst_b[1 - d].data_ptr(), src_b[d].data_ptr(), src_b[d].nbytes, s)
            copy_1d(dst_a[1 - d].data_ptr(), src_a[d].data_ptr(), a_bytes, s)
            return
        copy_1d(dst_a[1 - d].data_ptr(), src_a[d].data_ptr(), a_bytes, s)
        step = N // chunks
        for i in range(chunks):
            if layout == "1d":
                part = src_b[d].nbytes // chunks
                copy_1d(dst_b[1 - d].data_ptr() + i * part, src_b[d].data_ptr() + i * part, part, s)
            else:
                copy_b_columns(d, i * step, step, 0, K, s)
            if flags_by:
                flag(d, i, s, flags_by)

    def pipelined(d, chunks, head_rows, flags_by):
        """A, then B's chunks, alternating between the two streams, each as a head then a
        tail; each head waits for the previous head."""
        a_bytes = src_a[d].nbytes
        step = N // chunks
        # A: head and tail on stream 0 (split at the same fraction of its rows).
        s = streams[d][0]
        head = a_bytes * head_rows // K
        copy_1d(dst_a[1 - d].data_ptr(), src_a[d].data_ptr(), head, s)
        prev_head = torch.cuda.Event()
        prev_head.record(s)
        copy_1d(dst_a[1 - d].data_ptr() + head, src_a[d].data_ptr() + head, a_bytes - head, s)
        for i in range(chunks):
            s = streams[d][(i + 1) % 2]
            s.wait_event(prev_head)
            copy_b_columns(d, i * step, step, 0, head_rows, s)
            prev_head = torch.cuda.Event()
            prev_head.record(s)
            copy_b_columns(d, i * step, step, head_rows, K - head_rows, s)
            if flags_by:
                flag(d, i, s, flags_by)

    def round_robin(d, chunks, flags_by):
        a_bytes = src_a[d].nbytes
        step = N // chunks
        copy_1d(dst_a[1 - d].data_ptr(), src_a[d].data_ptr(), a_bytes, streams[d][0])
        for i in range(chunks):
            s = streams[d][(i + 1) % 2]
            copy_b_columns(d, i * step, step, 0, K, s)
            if flags_by:
                flag(d, i, s, flags_by)

    def head(d, upto, beside):
        """A and B's first `upto` of 4 chunks, each chunk's flag after it: on
        one stream (the runtime), or with A on the second stream beside B's
        first chunk (`beside`; that chunk's flag then also waits for A)."""
        a_bytes = src_a[d].nbytes
        step = N // 4
        s, other = streams[d]
        copy_1d(dst_a[1 - d].data_ptr(), src_a[d].data_ptr(), a_bytes, other if beside else s)
        if beside:
            a_done = torch.cuda.Event()
            a_done.record(other)
        for i in range(upto):
            copy_b_columns(d, i * step, step, 0, K, s)
            if beside and i == 0:
                s.wait_event(a_done)
            flag(d, i, s, "write_value")

    variants = [
        ("20 MiB in 2 copies (B, A)", lambda d: serial(d, 1, "one copy", None)),
        ("A + B: 2 copies", lambda d: serial(d, 1, "1d", None)),
        ("A + 4 chunks, 1D, no flags", lambda d: serial(d, 4, "1d", None)),
        ("A + 4 chunks, 2D, no flags", lambda d: serial(d, 4, "2d", None)),
        ("A + 4 chunks, 2D, write_value flags (runtime)", lambda d: serial(d, 4, "2d", "write_value")),
        ("A + 4 chunks, 2D, 4-byte copy flags", lambda d: serial(d, 4, "2d", "copy")),
        ("A + 8 chunks, 2D, write_value flags", lambda d: serial(d, 8, "2d", "write_value")),
        ("A + 2 chunks, 2D, write_value flags", lambda d: serial(d, 2, "2d", "write_value")),
        ("2 streams round robin, 4 chunks, flags", lambda d: round_robin(d, 4, "write_value")),
        ("2 streams pipelined 3/4, 4 chunks, flags", lambda d: pipelined(d, 4, 768, "write_value")),
        ("2 streams pipelined 7/8, 4 chunks, flags", lambda d: pipelined(d, 4, 896, "write_value")),
        ("2 streams pipelined 3/4, 8 chunks, flags", lambda d: pipelined(d, 8, 768, "write_value")),
    ]
    if args.first:
        variants = [(f"A + first {n} of 4 chunks, {'A beside chunk 0' if beside else 'one stream'}",
                     lambda d, n=n, beside=beside: head(d, n, beside), n * N // 4)
                    for n in (1, 2, 4) for beside in (False, True)]

    def timed(issue, load, senders=(0, 1)):
        samples = []
        for rep in range(args.reps + 5):
            for d in range(2):
                torch.cuda.synchronize(d)
            # Hold every stream of both GPUs behind a sleep until all is issued.
            for d in range(2):
                with torch.cuda.device(d):
                    torch.cuda._sleep(1_000_000)
                    gate = torch.cuda.Event()
                    gate.record(torch.cuda.current_stream())
                    for s in streams[d]:
                        s.wait_event(gate)
            events = []
            for d in senders:
                with torch.cuda.device(d):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record(streams[d][0])
                    issue(d)
                    streams[d][0].wait_stream(streams[d][1])
                    end.record(streams[d][0])
                    events.append((start, end))
                    if load:  # on the compute stream, beside the copies
                        for _ in range(3):
                            torch.matmul(load_a[d], load_b[d])
            for d in range(2):
                torch.cuda.synchronize(d)
            if rep >= 5:
                samples.append([s.elapsed_time(e) for s, e in events])
        return [statistics.median(x[i] for x in samples) for i in range(len(senders))]

    if args.link:
        rows = []
        for mib in (20, 64, 256):
            nbytes = mib * 2**20
            big_src = [torch.randint(0, 1 << 15, (nbytes // 2,), dtype=torch.int16, device=f"cuda:{d}")
                       for d in range(2)]
            big_dst = [torch.empty_like(big_src[d]) for d in range(2)]
            for senders in ((0, ), (1, ), (0, 1)):
                for d in range(2):
                    big_dst[d].fill_(-1)
                ms = timed(lambda d: copy_1d(big_dst[1 - d].data_ptr(), big_src[d].data_ptr(), nbytes,
                                             streams[d][0]), False, senders)
                ok = all(torch.equal(big_dst[1 - d].cpu(), big_src[d].cpu()) for d in senders)
                row = {"mib": mib, "senders": list(senders), "ms": ms, "ok": ok,
                       "gbps_per_direction": nbytes / max(ms) / 1e6}
                rows.append(row)
                print(f"{mib:4d} MiB from GPU {senders}: {' / '.join(f'{t:.4f}' for t in ms)} ms "
                      f"({row['gbps_per_direction']:.0f} GB/s per direction) ok={ok}", flush=True)
            del big_src, big_dst
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "link": rows}, f,
                      indent=1)
        return

    rows = []
    for load in (False, True):
        for name, issue, *cols in variants:
            cols = cols[0] if cols else N  # B's columns the variant copies
            for d in range(2):
                dst_a[d].fill_(float("nan"))
                dst_b[d].fill_(float("nan"))
            ms = timed(issue, load)
            ok = all(torch.equal(dst_a[1 - d].cpu(), src_a[d].cpu())
                     and torch.equal(dst_b[1 - d][:, :cols].cpu(), src_b[d][:, :cols].cpu()) for d in range(2))
            row = {"variant": name, "gemm_load": load, "ms_gpu0": ms[0], "ms_gpu1": ms[1], "ok": ok,
                   "gbps": (src_a[0].nbytes + cols * K * ELEM) / max(ms) / 1e6}
            rows.append(row)
            print(f"{'load' if load else 'idle'} {name:48} {ms[0]:.4f} / {ms[1]:.4f} ms "
                  f"({row['gbps']:.0f} GB/s per direction) ok={ok}", flush=True)
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
