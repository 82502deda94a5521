"""A kernel whose loop over the keys carries a scalar and a vector, not an
attention's tensors (Pipeline/ring-slots-carried-ptx.test): each program
writes the mean over the sequence of K's rows, per column, and how many
blocks it read. K: [N_CTX_KV, D] bf16; Out: [programs, D] fp32; Blocks:
[programs] i32."""

import triton
import triton.language as tl


@triton.jit
def kv_mean(K, Out, Blocks, N_CTX_KV, D: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    total = tl.zeros([D], dtype=tl.float32)
    blocks = 0
    for start_n in range(0, N_CTX_KV, BLOCK_N):
        k = tl.load(K + (start_n + offs_n)[:, None] * D + offs_d[None, :])
        total += tl.sum(k.to(tl.float32), 0)
        blocks += 1
    tl.store(Out + pid * D + offs_d, total / N_CTX_KV)
    tl.store(Blocks + pid, blocks)
