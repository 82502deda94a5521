"""What ring attention over a fixed pair of K/V buffers would cost the
attention kernel itself, on one GPU, before any of it is built.

Ring attention proper keeps two block-sized slots of K and V per rank: at
step s a rank computes on the block in one slot while the next block lands
in the other, and the block of step s + 2 may overwrite a slot only when
every reader of step s is done. A kernel whose programs each take one
query tile through all steps cannot do that (a program that has not
started yet still has to read step 0's block), so the kernel must go step
by step: persistent programs take every query tile through step s, keep
each tile's softmax state (m, l and the fp32 accumulator) in global memory
between steps, and meet at a barrier before step s + 1.

This experiment times that restructured kernel against the local one
(`examples/attention/flash_attn.py`, non-causal, the last of W ranks'
queries over the whole sequence), on the same random data, with no
communication: the cost of the steps themselves (reloading Q, spilling
and reloading the state, the per-step tail and barrier). `no barrier`
drops the barrier (not a valid kernel with slots; it separates the
barrier's share).

    python benches/attention/experiments/step_major.py --out FILE.json   # a GPU machine

Each variant is timed with CUDA events around 5 back-to-back launches,
after 300 ms of warm-up, the variants interleaved sample by sample; medians
of 15 samples. Outputs are checked against the local kernel's.
"""

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "attention"))
from flash_attn import attn_fwd  # noqa: E402
from timing import time_interleaved  # noqa: E402

MODELS = [("llama3-8b", 32, 8, 128), ("64-head", 64, 8, 128)]
SEQS = [16384, 32768]
WORLDS = [2, 4, 8]
BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = 128, 64, 8, 3


@triton.jit
def attn_step_major(Q, K, V, Out, Acc, Stats, Barrier, barrier_base, sm_scale,
                    stride_qm, stride_kn, stride_vn, stride_om,
                    H, H_KV, N_CTX_Q, N_CTX_KV, RANK,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    WORLD: tl.constexpr, BARRIER: tl.constexpr):
    """Non-causal attention of N_CTX_Q queries (token-major, [tokens, heads
    * HEAD_DIM]) over W blocks of keys, block (RANK - s) mod W at step s,
    persistent programs over (head, query tile), the softmax state of each
    tile in Acc [tiles, BLOCK_M, HEAD_DIM] and Stats [tiles, 2, BLOCK_M]
    between steps."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    tiles_m = N_CTX_Q // BLOCK_M
    tiles = tiles_m * H
    block = N_CTX_KV // WORLD
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = tl.arange(0, BLOCK_M)
    qk_scale = sm_scale * 1.44269504
    for step in tl.static_range(WORLD):
        lo = ((RANK - step + WORLD) % WORLD) * block
        for tile in range(pid, tiles, programs):
            off_h = tile // tiles_m
            start_m = tile % tiles_m
            off_h_kv = off_h // (H // H_KV)
            offs_m = start_m * BLOCK_M + rows
            q = tl.load(Q + off_h * HEAD_DIM + offs_m[:, None] * stride_qm + offs_d[None, :])
            acc_ptrs = Acc + tile * BLOCK_M * HEAD_DIM + rows[:, None] * HEAD_DIM + offs_d[None, :]
            stat_ptrs = Stats + tile * 2 * BLOCK_M + rows
            if step == 0:
                m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
                l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
                acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
            else:
                m_i = tl.load(stat_ptrs)
                l_i = tl.load(stat_ptrs + BLOCK_M)
                acc = tl.load(acc_ptrs)
            k_base = K + off_h_kv * HEAD_DIM
            v_base = V + off_h_kv * HEAD_DIM
            for start_n in range(lo, lo + block, BLOCK_N):
                start_n = tl.multiple_of(start_n, BLOCK_N)
                k = tl.load(k_base + (start_n + offs_n)[:, None] * stride_kn + offs_d[None, :])
                qk = tl.dot(q, tl.trans(k)) * qk_scale
                m_ij = tl.maximum(m_i, tl.max(qk, 1))
                p = tl.math.exp2(qk - m_ij[:, None])
                alpha = tl.math.exp2(m_i - m_ij)
                l_i = l_i * alpha + tl.sum(p, 1)
                acc = acc * alpha[:, None]
                v = tl.load(v_base + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
                acc = tl.dot(p.to(tl.bfloat16), v, acc)
                m_i = m_ij
            if step == WORLD - 1:
                out = acc / l_i[:, None]
                tl.store(Out + off_h * HEAD_DIM + offs_m[:, None] * stride_om + offs_d[None, :],
                         out.to(Out.dtype.element_ty))
            else:
                tl.store(stat_ptrs, m_i)
                tl.store(stat_ptrs + BLOCK_M, l_i)
                tl.store(acc_ptrs, acc)
        if BARRIER and step < WORLD - 1:
            # Every program done with step s before any starts step s + 1
            # (with slots: before the block of step s + 2 may land).
            tl.debug_barrier()
            tl.atomic_add(Barrier, 1, sem="release")
            target = barrier_base + programs * (step + 1)
            seen = tl.atomic_add(Barrier, 0, sem="acquire")
            while seen < target:
                seen = tl.atomic_add(Barrier, 0, sem="acquire")


def run_case(model, heads, heads_kv, head_dim, seq, world):
    device = torch.device("cuda")
    tokens = seq // world
    rank = world - 1
    q = torch.randn(tokens, heads * head_dim, device=device, dtype=torch.bfloat16)
    k = torch.randn(seq, heads_kv * head_dim, device=device, dtype=torch.bfloat16)
    v = torch.randn(seq, heads_kv * head_dim, device=device, dtype=torch.bfloat16)
    sm_scale = head_dim ** -0.5
    outs = {name: torch.full_like(q, float("nan")) for name in ("local", "step-major", "no barrier")}
    tiles = tokens // BLOCK_M * heads
    acc = torch.empty(tiles, BLOCK_M, head_dim, device=device, dtype=torch.float32)
    stats = torch.empty(tiles, 2, BLOCK_M, device=device, dtype=torch.float32)
    barrier = torch.zeros(1, device=device, dtype=torch.int32)
    programs = torch.cuda.get_device_properties(device).multi_processor_count
    launched = [0]

    def local():
        attn_fwd[(tokens // BLOCK_M, heads)](
            q, k, v, outs["local"], sm_scale,
            0, head_dim, q.stride(0), 0, head_dim, k.stride(0), 0, head_dim, v.stride(0),
            0, head_dim, q.stride(0), heads, heads_kv, tokens, seq,
            HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=0,
            num_warps=NUM_WARPS, num_stages=NUM_STAGES)

    def step_major(name, with_barrier):
        def launch():
            base = launched[0] * programs * (world - 1)
            if with_barrier:
                launched[0] += 1
            attn_step_major[(programs,)](
                q, k, v, outs[name], acc, stats, barrier, base, sm_scale,
                q.stride(0), k.stride(0), v.stride(0), q.stride(0),
                heads, heads_kv, tokens, seq, rank,
                HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, WORLD=world,
                BARRIER=with_barrier, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
        return launch

    launches = {"local": local, "step-major": step_major("step-major", True),
                "no barrier": step_major("no barrier", False)}
    for fn in launches.values():
        fn()
    torch.cuda.synchronize()
    reference = outs["local"].float()
    errors = {name: ((out.float() - reference).norm() / reference.norm()).item()
              for name, out in outs.items() if name != "local"}
    ms = time_interleaved(launches)
    return {"model": model, "heads": heads, "kv_heads": heads_kv, "head_dim": head_dim,
            "seq": seq, "world": world, "tokens_per_rank": tokens, "programs": programs,
            "tiles": tiles, "ms": ms, "rel_err_vs_local": errors,
            "ok": all(e < 1e-2 for e in errors.values())}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    parser.add_argument("--seqs", default=",".join(map(str, SEQS)))
    parser.add_argument("--worlds", default=",".join(map(str, WORLDS)))
    args = parser.parse_args()
    rows, failed = [], 0
    for model, heads, heads_kv, head_dim in MODELS:
        for seq in map(int, args.seqs.split(",")):
            for world in map(int, args.worlds.split(",")):
                row = run_case(model, heads, heads_kv, head_dim, seq, world)
                rows.append(row)
                failed += not row["ok"]
                ms = row["ms"]
                print(f"{model:10} seq {seq:6} W {world}: local {ms['local']:.3f} ms, step-major "
                      f"{ms['step-major']:.3f} ({ms['step-major'] / ms['local'] - 1:+.1%}), "
                      f"no barrier {ms['no barrier']:.3f} ({ms['no barrier'] / ms['local'] - 1:+.1%})"
                      f"  err {max(row['rel_err_vs_local'].values()):.1e}"
                      f"{'' if row['ok'] else '  FAIL'}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "triton": triton.__version__, "rows": rows}, f, indent=1)
    print(f"{len(rows) - failed} of {len(rows)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
