"""A flash-attention forward kernel as people write it for one GPU (the
shape of Triton's fused-attention tutorial): each program takes BLOCK_M
queries of one (batch, head) and loops over the keys and values in blocks
of BLOCK_N, with the softmax kept online in fp32.

    O[z, h] = softmax(Q[z, h] @ K[z, h_kv]^T * sm_scale) @ V[z, h_kv]

* Q, O: [Z, H, N_CTX_Q, HEAD_DIM]; K, V: [Z, H_KV, N_CTX_KV, HEAD_DIM],
  bf16, the head dimension contiguous. Grouped-query heads: query head h
  reads key/value head h // (H / H_KV).
* `sm_scale` is a float argument (1 / sqrt(HEAD_DIM) usually).
* CAUSAL: query i sees keys j <= i + (N_CTX_KV - N_CTX_Q) (the queries are
  the last N_CTX_Q positions of the sequence, as in FlashAttention); the
  KV loop stops at the last block a program's queries can see.
* Grid: (cdiv(N_CTX_Q, BLOCK_M), Z * H). N_CTX_Q and N_CTX_KV are
  multiples of BLOCK_M and BLOCK_N.
"""

import triton
import triton.language as tl


@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale,
             stride_qz, stride_qh, stride_qm,
             stride_kz, stride_kh, stride_kn,
             stride_vz, stride_vh, stride_vn,
             stride_oz, stride_oh, stride_om,
             H, H_KV, N_CTX_Q, N_CTX_KV,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    off_h_kv = off_h // (H // H_KV)
    q_base = Q + off_z * stride_qz + off_h * stride_qh
    k_base = K + off_z * stride_kz + off_h_kv * stride_kh
    v_base = V + off_z * stride_vz + off_h_kv * stride_vh
    o_base = Out + off_z * stride_oz + off_h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :])

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1 / ln(2): exp2 below
    # Queries are the last N_CTX_Q positions: query i is at i + past.
    past = N_CTX_KV - N_CTX_Q
    if CAUSAL:
        hi = past + (start_m + 1) * BLOCK_M
    else:
        hi = N_CTX_KV
    for start_n in range(0, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
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
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(Out.dtype.element_ty))
