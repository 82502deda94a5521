"""Whether the fused attention kernel's KV loop could stay one loop.

`chunk-reorder-tiles` splits the user's KV loop by chunk: an outer loop
over the chunks in arrival order, the user's loop inside it clipped to the
chunk, and `chunk-insert-waits` waits for each peer chunk before its
clipped loop. Triton pipelines each clipped loop on its own, so every
chunk pays the pipeline's prologue and drain (`overhead.py`: +3 to +10%
over the local kernel at 16k and 32k, most of the goal of 2%).

This experiment times, on one GPU with every chunk already present:

* `local`: `examples/attention/flash_attn.py` over the whole sequence;
* `split`: the same kernel split as the passes split it (outer loop over
  chunks, own chunk first, a wait before each peer chunk);
* `split, own last`: the same with the own chunk last (the queries' rank
  is the last, so the chunks run in sequence order);
* `split, one chunk`: the split structure over a single chunk (the outer
  loop and the clipping, without any split);
* `split, unrolled`: the split with its loop over chunks unrolled
  (`tl.static_range`), each clipped loop at the kernel's top level;
* `one loop`: one loop over the rotated key blocks (own chunk first),
  which waits in the iteration that enters a peer chunk; the wait's result
  (always 0) is added to the blocks' key offsets, so that the loads of a
  chunk depend on its wait wherever the pipeliner places them.

The queries are the last of W ranks' (the rank whose causal tiles see
the most keys); the chunk count is one per rank.

    python benches/attention/experiments/one_loop.py --out FILE.json   # a GPU machine

Each variant is timed with CUDA events around 5 back-to-back launches,
after 300 ms of warm-up, the variants interleaved sample by sample;
medians of 15 samples. Outputs are checked against the local kernel's.
Without a GPU, `--ptx` prints what each variant's sm_90a PTX holds and
the SASS instructions per iteration of its KV loops.
"""

import argparse
import json
import sys
from pathlib import Path

import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "attention"))
from flash_attn import attn_fwd  # noqa: E402
from timing import time_interleaved  # noqa: E402

MODELS = [("llama3-8b", 32, 8, 128), ("64-head", 64, 8, 128)]
SEQS = [16384, 32768]
WORLDS = [2, 4, 8]
BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES = 128, 64, 8, 3

# A spin on a flag (acquire, system scope) until it reaches the epoch;
# returns 0, which the caller adds to the addresses the flag guards.
WAIT_ASM = tl.constexpr("""{
    .reg .pred %p;
    .reg .u32 %v;
    WAIT:
    ld.acquire.sys.global.u32 %v, [$1];
    setp.ge.s32 %p, %v, $2;
    @!%p bra WAIT;
    mov.u32 $0, 0;
}""")


@triton.jit
def wait_flag(flag, epoch):
    return tl.inline_asm_elementwise(WAIT_ASM, "=r,l,r", [flag, epoch], dtype=tl.int32,
                                     is_pure=False, pack=1)


@triton.jit
def kv_block(q, k_base, v_base, start_n, offs_m, offs_n, offs_d, past, m_i, l_i, acc,
             qk_scale, stride_kn, stride_vn, CAUSAL: tl.constexpr):
    k = tl.load(k_base + (start_n + offs_n)[:, None] * stride_kn + offs_d[None, :])
    qk = tl.dot(q, tl.trans(k))
    if CAUSAL:
        visible = (offs_m[:, None] + past) >= (start_n + offs_n[None, :])
        qk = tl.where(visible, qk * qk_scale, -1.0e6)
    else:
        qk = qk * qk_scale
    m_ij = tl.maximum(m_i, tl.max(qk, 1))
    p = tl.math.exp2(qk - m_ij[:, None])
    alpha = tl.math.exp2(m_i - m_ij)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    v = tl.load(v_base + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
    acc = tl.dot(p.to(tl.bfloat16), v, acc)
    return m_ij, l_i, acc


@triton.jit
def clipped_chunk(chunk, hi, q, k_base, v_base, Flags, epoch, offs_m, offs_n, offs_d, past,
                  m_i, l_i, acc, qk_scale, stride_kn, stride_vn, OWN, CHUNK,
                  BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """The KV loop clipped to chunk `chunk`, after its wait (none for the
    own chunk), as the passes split it."""
    lo = chunk * CHUNK
    end = tl.minimum(hi, lo + CHUNK)
    if (lo < end) and (chunk != OWN):
        wait_flag(Flags + chunk, epoch)
    for start_n in range(lo, end, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        m_i, l_i, acc = kv_block(q, k_base, v_base, start_n, offs_m, offs_n, offs_d, past,
                                 m_i, l_i, acc, qk_scale, stride_kn, stride_vn, CAUSAL)
    return m_i, l_i, acc


@triton.jit
def attn_chunked(Q, K, V, Out, Flags, epoch, sm_scale, stride_qm, stride_kn, stride_vn, stride_om,
                 H, H_KV, N_CTX_Q, N_CTX_KV, OWN, CHUNK,
                 HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 CAUSAL: tl.constexpr, ONE_LOOP: tl.constexpr, CHUNKS: tl.constexpr,
                 OWN_LAST: tl.constexpr, UNROLLED: tl.constexpr = False):
    """Token-major Q/K/V/Out ([tokens, heads * HEAD_DIM]); K and V in
    CHUNKS chunks of CHUNK rows, chunk OWN this rank's, Flags[c] >= epoch
    once chunk c is in place. Split: the own chunk first (as the passes
    order it) or last (OWN_LAST)."""
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    off_h_kv = off_h // (H // H_KV)
    k_base = K + off_h_kv * HEAD_DIM
    v_base = V + off_h_kv * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off_h * HEAD_DIM + offs_m[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    past = N_CTX_KV - N_CTX_Q
    if CAUSAL:
        hi = past + (start_m + 1) * BLOCK_M
    else:
        hi = N_CTX_KV
    if ONE_LOOP:
        # Own chunk first, then on through the sequence, wrapping at hi.
        rotation = OWN * CHUNK
        for j in range(0, hi, BLOCK_N):
            start_n = j + rotation
            start_n = tl.where(start_n >= hi, start_n - hi, start_n)
            chunk = start_n // CHUNK
            token = 0
            if (start_n % CHUNK == 0) and (chunk != OWN):
                token = wait_flag(Flags + chunk, epoch)
            start_n = tl.multiple_of(start_n + token, BLOCK_N)
            m_i, l_i, acc = kv_block(q, k_base, v_base, start_n, offs_m, offs_n, offs_d, past,
                                     m_i, l_i, acc, qk_scale, stride_kn, stride_vn, CAUSAL)
    elif UNROLLED:
        for step in tl.static_range(CHUNKS):
            m_i, l_i, acc = clipped_chunk((OWN + OWN_LAST + step) % CHUNKS, hi, q, k_base, v_base,
                                          Flags, epoch, offs_m, offs_n, offs_d, past, m_i, l_i, acc,
                                          qk_scale, stride_kn, stride_vn, OWN, CHUNK, BLOCK_N,
                                          CAUSAL)
    else:
        for step in range(CHUNKS):
            m_i, l_i, acc = clipped_chunk((OWN + OWN_LAST + step) % CHUNKS, hi, q, k_base, v_base,
                                          Flags, epoch, offs_m, offs_n, offs_d, past, m_i, l_i, acc,
                                          qk_scale, stride_kn, stride_vn, OWN, CHUNK, BLOCK_N,
                                          CAUSAL)
    acc = acc / l_i[:, None]
    tl.store(Out + off_h * HEAD_DIM + offs_m[:, None] * stride_om + offs_d[None, :],
             acc.to(Out.dtype.element_ty))


#: name: (ONE_LOOP, OWN_LAST, whether the W ranks' blocks are one chunk
#: (the split loop's structure without its splits), UNROLLED).
VARIANTS = {"split": (0, 0, False, False), "split, own last": (0, 1, False, False),
            "split, one chunk": (0, 0, True, False), "split, unrolled": (0, 0, False, True),
            "one loop": (1, 0, False, False)}


def loop_bodies(cubin):
    """Instructions in each loop body of a cubin's SASS (from a label to
    the branch back to it), by Triton's bundled nvdisasm."""
    import re
    import subprocess
    import tempfile

    from triton.backends.nvidia.compiler import get_ptxas

    nvdisasm = Path(get_ptxas(90).path).with_name("nvdisasm")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([str(nvdisasm), "-c", f.name], capture_output=True, text=True,
                              check=True).stdout.splitlines()
    labels, bodies = {}, []
    for n, line in enumerate(sass):
        if m := re.match(r"^(\.L_x_\d+):", line):
            labels[m.group(1)] = n
        elif (m := re.search(r"BRA\s+`?\(?(\.L_x_\d+)", line)) and labels.get(m.group(1), n) < n:
            body = sass[labels[m.group(1)]:n + 1]
            bodies.append(sum(1 for b in body if re.match(r"^\s*/\*[0-9a-f]+\*/", b)))
    return bodies


def ptx_summary():
    """Without a GPU: each variant's sm_90a PTX (cp.async, wgmma, spins)
    and the instructions per iteration of its KV loops (SASS, loops of
    more than 100 instructions)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    def compile_summary(fn, types, constexprs, divisible):
        signature = {name: t for name, t in zip(fn.arg_names, types)}
        # What the launcher specializes at run time: pointers, strides
        # and lengths divisible by 16.
        attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in divisible}
        compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs),
                                  target=GPUTarget("cuda", 90, 32),
                                  options={"num_warps": NUM_WARPS, "num_stages": NUM_STAGES})
        ptx = compiled.asm["ptx"]
        loops = [n for n in loop_bodies(compiled.asm["cubin"]) if n > 100]
        return (f"cp.async {ptx.count('cp.async.cg.shared.global')}, "
                f"wgmma {ptx.count('wgmma.mma_async')}, spins {ptx.count('ld.acquire.sys')}, "
                f"KV loop bodies {loops} instructions")

    for causal in (0, 1):
        local = compile_summary(
            attn_fwd, ["*bf16"] * 4 + ["fp32"] + ["i32"] * 16 + ["constexpr"] * 4,
            {"HEAD_DIM": 128, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "CAUSAL": causal},
            ["Q", "K", "V", "Out", "stride_qz", "stride_qh", "stride_qm", "stride_kz", "stride_kh",
             "stride_kn", "stride_vz", "stride_vh", "stride_vn", "stride_oz", "stride_oh",
             "stride_om", "N_CTX_Q", "N_CTX_KV"])
        print(f"{'local':16} causal={causal}: {local}")
        for name, (one_loop, own_last, _, unrolled) in VARIANTS.items():
            summary = compile_summary(
                attn_chunked, ["*bf16"] * 4 + ["*i32", "i32", "fp32"] + ["i32"] * 10
                + ["constexpr"] * 8,
                {"HEAD_DIM": 128, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "CAUSAL": causal,
                 "ONE_LOOP": one_loop, "CHUNKS": 4, "OWN_LAST": own_last, "UNROLLED": unrolled},
                ["Q", "K", "V", "Out", "stride_qm", "stride_kn", "stride_vn", "stride_om",
                 "N_CTX_Q", "N_CTX_KV", "CHUNK"])
            print(f"{name:16} causal={causal}: {summary}")


def run_case(model, heads, heads_kv, head_dim, seq, world, causal):
    import torch

    device = torch.device("cuda")
    tokens = seq // world
    own = world - 1
    q = torch.randn(tokens, heads * head_dim, device=device, dtype=torch.bfloat16)
    k = torch.randn(seq, heads_kv * head_dim, device=device, dtype=torch.bfloat16)
    v = torch.randn(seq, heads_kv * head_dim, device=device, dtype=torch.bfloat16)
    flags = torch.ones(world, device=device, dtype=torch.int32)
    sm_scale = head_dim ** -0.5
    outs = {name: torch.full_like(q, float("nan")) for name in ("local", *VARIANTS)}
    grid = (tokens // BLOCK_M, heads)

    def local():
        attn_fwd[grid](
            q, k, v, outs["local"], sm_scale,
            0, head_dim, q.stride(0), 0, head_dim, k.stride(0), 0, head_dim, v.stride(0),
            0, head_dim, q.stride(0), heads, heads_kv, tokens, seq,
            HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
            num_warps=NUM_WARPS, num_stages=NUM_STAGES)

    def chunked(name, one_loop, own_last, one_chunk, unrolled):
        chunks = 1 if one_chunk else world

        def launch():
            attn_chunked[grid](
                q, k, v, outs[name], flags, 1, sm_scale,
                q.stride(0), k.stride(0), v.stride(0), q.stride(0),
                heads, heads_kv, tokens, seq, own % chunks, seq // chunks,
                HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
                ONE_LOOP=one_loop, CHUNKS=chunks, OWN_LAST=own_last,
                UNROLLED=unrolled, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
        return launch

    launches = {"local": local, **{name: chunked(name, *v) for name, v in VARIANTS.items()}}
    for fn in launches.values():
        fn()
    torch.cuda.synchronize()
    reference = outs["local"].float()
    errors = {name: ((out.float() - reference).norm() / reference.norm()).item()
              for name, out in outs.items() if name != "local"}
    ms = time_interleaved(launches)
    return {"model": model, "heads": heads, "kv_heads": heads_kv, "head_dim": head_dim,
            "seq": seq, "world": world, "causal": bool(causal), "tokens_per_rank": tokens,
            "ms": ms, "rel_err_vs_local": errors, "ok": all(e < 1e-2 for e in errors.values())}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    parser.add_argument("--ptx", action="store_true", help="print the PTX summary (no GPU needed)")
    parser.add_argument("--models", default=",".join(m[0] for m in MODELS))
    parser.add_argument("--seqs", default=",".join(map(str, SEQS)))
    parser.add_argument("--worlds", default=",".join(map(str, WORLDS)))
    args = parser.parse_args()
    if args.ptx:
        ptx_summary()
        return 0
    import torch

    rows, failed = [], 0
    for model, heads, heads_kv, head_dim in MODELS:
        if model not in args.models.split(","):
            continue
        for seq in map(int, args.seqs.split(",")):
            for world in map(int, args.worlds.split(",")):
                for causal in (0, 1):
                    row = run_case(model, heads, heads_kv, head_dim, seq, world, causal)
                    rows.append(row)
                    failed += not row["ok"]
                    ms = row["ms"]
                    print(f"{model:10} seq {seq:6} W {world} {'causal' if causal else 'full  '}: "
                          f"local {ms['local']:.3f} ms, "
                          + ", ".join(f"{name} {ms[name]:.3f} ({ms[name] / ms['local'] - 1:+.1%})"
                                      for name in VARIANTS)
                          + f"  err {max(row['rel_err_vs_local'].values()):.1e}"
                          + ("" if row["ok"] else "  FAIL"), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "triton": triton.__version__, "rows": rows}, f, indent=1)
    print(f"{len(rows) - failed} of {len(rows)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
