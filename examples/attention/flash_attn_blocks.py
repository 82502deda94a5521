"""The same flash-attention forward as `flash_attn.py`, written the other
usual way (that of Triton's fused-attention tutorial): block pointers
advanced through the KV loop, the loop in a helper, and causal attention
in two stages, the blocks wholly below the diagonal without a mask, then
the diagonal band with one. Synco fuses it with the same plans: Triton
turns each advanced block pointer into an offset the loop carries in step
with its variable, which the passes read as the variable; the two stages
are two loops over K and V, each split by chunk.

* Q, O: [Z, H, N_CTX_Q, HEAD_DIM]; K, V: [Z, H_KV, N_CTX_KV, HEAD_DIM],
  bf16, the head dimension contiguous; query head h reads KV head
  h // (H / H_KV).
* Queries are the last N_CTX_Q positions of the sequence; N_CTX_KV -
  N_CTX_Q is a multiple of BLOCK_M (so the causal band starts at a block,
  as `tl.multiple_of` tells the passes).
* Grid: (N_CTX_Q // BLOCK_M, Z * H); BLOCK_M a multiple of BLOCK_N.
"""

import triton
import triton.language as tl


@triton.jit
def _kv_blocks(acc, l_i, m_i, q, k_blocks, v_blocks, lo, hi, offs_m, offs_n, qk_scale,
               BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    k_blocks = tl.advance(k_blocks, (0, lo))
    v_blocks = tl.advance(v_blocks, (lo, 0))
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_blocks)
        qk = tl.dot(q, k)
        if MASKED:
            qk = qk * qk_scale + tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_blocks)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        v_blocks = tl.advance(v_blocks, (BLOCK_N, 0))
        k_blocks = tl.advance(k_blocks, (0, BLOCK_N))
    return acc, l_i, m_i


@triton.jit
def attn_fwd_blocks(Q, K, V, Out, sm_scale,
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
    q_blocks = tl.make_block_ptr(Q + off_z * stride_qz + off_h * stride_qh, (N_CTX_Q, HEAD_DIM),
                                 (stride_qm, 1), (start_m * BLOCK_M, 0), (BLOCK_M, HEAD_DIM), (1, 0))
    k_blocks = tl.make_block_ptr(K + off_z * stride_kz + off_h_kv * stride_kh, (HEAD_DIM, N_CTX_KV),
                                 (1, stride_kn), (0, 0), (HEAD_DIM, BLOCK_N), (0, 1))
    v_blocks = tl.make_block_ptr(V + off_z * stride_vz + off_h_kv * stride_vh, (N_CTX_KV, HEAD_DIM),
                                 (stride_vn, 1), (0, 0), (BLOCK_N, HEAD_DIM), (1, 0))
    o_blocks = tl.make_block_ptr(Out + off_z * stride_oz + off_h * stride_oh, (N_CTX_Q, HEAD_DIM),
                                 (stride_om, 1), (start_m * BLOCK_M, 0), (BLOCK_M, HEAD_DIM), (1, 0))
    past = tl.multiple_of(N_CTX_KV - N_CTX_Q, BLOCK_M)
    offs_m = past + start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = tl.load(q_blocks)
    if CAUSAL:
        band = past + start_m * BLOCK_M
        acc, l_i, m_i = _kv_blocks(acc, l_i, m_i, q, k_blocks, v_blocks, 0, band, offs_m, offs_n,
                                   qk_scale, BLOCK_N, False)
        acc, l_i, m_i = _kv_blocks(acc, l_i, m_i, q, k_blocks, v_blocks, band, band + BLOCK_M,
                                   offs_m, offs_n, qk_scale, BLOCK_N, True)
    else:
        acc, l_i, m_i = _kv_blocks(acc, l_i, m_i, q, k_blocks, v_blocks, 0, N_CTX_KV, offs_m,
                                   offs_n, qk_scale, BLOCK_N, False)
    acc = acc / l_i[:, None]
    tl.store(o_blocks, acc.to(Out.type.element_ty))
