"""The same flash-attention forward as `flash_attn.py`, written in two more
usual ways, with the K and V pointers of the first block built once:

* `attn_fwd_strided` (FlashAttention's Triton kernels): each iteration of
  the KV loop reads at `k_ptrs + start_n * stride_kn`;
* `attn_fwd_moved` (Triton's early tutorials): each iteration reads at
  `k_ptrs` and then moves it, `k_ptrs += BLOCK_N * stride_kn`.

Synco fuses both with the same plans: the loop's variable times the row
stride, added to offsets that are a range times the same stride, walks
the rows `[start_n, start_n + BLOCK_N)`; a pointer moved by the loop's
step times a stride is that pointer at the start plus the variable times
the stride (`chunk-bind-kernel` rewrites it so).

* Q, O: [Z, H, N_CTX_Q, HEAD_DIM]; K, V: [Z, H_KV, N_CTX_KV, HEAD_DIM],
  bf16, the head dimension contiguous; query head h reads KV head
  h // (H / H_KV). Queries are the last N_CTX_Q positions of the sequence.
* Grid: (N_CTX_Q // BLOCK_M, Z * H).
"""

import triton
import triton.language as tl


@triton.jit
def attn_fwd_strided(Q, K, V, Out, sm_scale,
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
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + (offs_m[:, None] * stride_qm + offs_d[None, :])
    k_ptrs = K + off_z * stride_kz + off_h_kv * stride_kh + (offs_n[:, None] * stride_kn + offs_d[None, :])
    v_ptrs = V + off_z * stride_vz + off_h_kv * stride_vh + (offs_n[:, None] * stride_vn + offs_d[None, :])
    q = tl.load(q_ptrs)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    past = N_CTX_KV - N_CTX_Q
    end_n = past + (start_m + 1) * BLOCK_M if CAUSAL else N_CTX_KV
    for start_n in range(0, end_n, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_ptrs + start_n * stride_kn)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        if CAUSAL:
            qk = tl.where(past + offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * stride_vn)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + (offs_m[:, None] * stride_om + offs_d[None, :])
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty))


@triton.jit
def attn_fwd_moved(Q, K, V, Out, sm_scale,
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
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + (offs_m[:, None] * stride_qm + offs_d[None, :])
    k_ptrs = K + off_z * stride_kz + off_h_kv * stride_kh + (offs_n[:, None] * stride_kn + offs_d[None, :])
    v_ptrs = V + off_z * stride_vz + off_h_kv * stride_vh + (offs_n[:, None] * stride_vn + offs_d[None, :])
    q = tl.load(q_ptrs)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    past = N_CTX_KV - N_CTX_Q
    end_n = past + (start_m + 1) * BLOCK_M if CAUSAL else N_CTX_KV
    for start_n in range(0, end_n, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_ptrs)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        if CAUSAL:
            qk = tl.where(past + offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + (offs_m[:, None] * stride_om + offs_d[None, :])
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty))
