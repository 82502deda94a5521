"""The flash-attention forward of `flash_attn.py` with K and V read through
one tensor descriptor each over the whole [tokens, heads * HEAD_DIM]
tensor (what `TensorDescriptor.from_tensor(k, [BLOCK_N, HEAD_DIM])` makes
on the host for this layout), each program reading its head's columns
at `off_h_kv * HEAD_DIM`, and the KV loop reading rows at an offset it
carries (`offsetkv_y += BLOCK_N`). Synco fuses it with the same plans as
the other styles: the descriptor's rows are the gathered sequence's, and
a block of BLOCK_N rows at the carried offset is the loop's tile.

* Q, O: [N_CTX_Q, H * HEAD_DIM]; K, V: [N_CTX_KV, H_KV * HEAD_DIM], bf16
  (batch 1), the head dimension contiguous; query head h reads KV head
  h // (H / H_KV). The row strides are multiples of 8 elements (16-byte
  aligned rows, as tensor descriptors need).
* Queries are the last N_CTX_Q positions of the sequence; N_CTX_KV -
  N_CTX_Q is a multiple of BLOCK_M.
* Grid: (N_CTX_Q // BLOCK_M, H); BLOCK_M a multiple of BLOCK_N. The
  stride arguments of the other styles are kept (the batch and head
  strides unused) so that every style takes the same arguments.
* Descriptors made in a kernel live in Triton's global scratch: run alone
  through Triton, it needs `triton.set_allocator`; Synco's runtime gives
  each program its scratch.
"""

import triton
import triton.language as tl


@triton.jit
def _kv_rows(acc, l_i, m_i, q, desc_k, desc_v, col, lo, hi, offs_m, offs_n, qk_scale,
             BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    offsetkv_y = lo
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offsetkv_y, col]).T
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
        v = desc_v.load([offsetkv_y, col])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        offsetkv_y += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def attn_fwd_desc_rows(Q, K, V, Out, sm_scale,
                       stride_qz, stride_qh, stride_qm,
                       stride_kz, stride_kh, stride_kn,
                       stride_vz, stride_vh, stride_vn,
                       stride_oz, stride_oh, stride_om,
                       H, H_KV, N_CTX_Q, N_CTX_KV,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1) % H
    off_h_kv = off_h // (H // H_KV)
    desc_q = tl.make_tensor_descriptor(Q, shape=[N_CTX_Q, H * HEAD_DIM], strides=[stride_qm, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[N_CTX_KV, H_KV * HEAD_DIM],
                                       strides=[stride_kn, 1], block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[N_CTX_KV, H_KV * HEAD_DIM],
                                       strides=[stride_vn, 1], block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[N_CTX_Q, H * HEAD_DIM],
                                       strides=[stride_om, 1], block_shape=[BLOCK_M, HEAD_DIM])
    col = off_h_kv * HEAD_DIM
    past = tl.multiple_of(N_CTX_KV - N_CTX_Q, BLOCK_M)
    offs_m = past + start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([start_m * BLOCK_M, off_h * HEAD_DIM])
    if CAUSAL:
        band = past + start_m * BLOCK_M
        acc, l_i, m_i = _kv_rows(acc, l_i, m_i, q, desc_k, desc_v, col, 0, band, offs_m, offs_n,
                                 qk_scale, BLOCK_N, False)
        acc, l_i, m_i = _kv_rows(acc, l_i, m_i, q, desc_k, desc_v, col, band, band + BLOCK_M,
                                 offs_m, offs_n, qk_scale, BLOCK_N, True)
    else:
        acc, l_i, m_i = _kv_rows(acc, l_i, m_i, q, desc_k, desc_v, col, 0, N_CTX_KV, offs_m,
                                 offs_n, qk_scale, BLOCK_N, False)
    acc = acc / l_i[:, None]
    desc_o.store([start_m * BLOCK_M, off_h * HEAD_DIM], acc.to(Out.type.element_ty))
