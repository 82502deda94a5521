"""The same flash-attention forward as `flash_attn.py`, written the way of
the tensor-descriptor form of Triton's fused-attention tutorial: the
kernel makes tensor descriptors of Q, K, V and the output
(`tl.make_tensor_descriptor`, so that bulk tensor copies move each block),
the KV loop is in a helper and reads K and V at an offset it carries
(`offsetkv_y += BLOCK_N`), and causal attention runs in two stages, the
blocks wholly below the diagonal without a mask, then the diagonal band
with one. Synco fuses it with the same plans: the carried offset starts
where the loop starts and grows by its step, so the passes read it as the
loop's variable, and a descriptor block of BLOCK_N rows at the variable is
the loop's tile.

* Q, O: [Z, H, N_CTX_Q, HEAD_DIM]; K, V: [Z, H_KV, N_CTX_KV, HEAD_DIM],
  bf16, the head dimension contiguous; query head h reads KV head
  h // (H / H_KV). Tensor descriptors need 16-byte aligned bases and row
  strides: HEAD_DIM and every stride multiples of 8 elements.
* Queries are the last N_CTX_Q positions of the sequence; N_CTX_KV -
  N_CTX_Q is a multiple of BLOCK_M.
* Grid: (N_CTX_Q // BLOCK_M, Z * H); BLOCK_M a multiple of BLOCK_N.
* Descriptors made in a kernel live in Triton's global scratch: run alone
  through Triton, it needs `triton.set_allocator`; Synco's runtime gives
  each program its scratch.
"""

import triton
import triton.language as tl


@triton.jit
def _kv_descriptor_blocks(acc, l_i, m_i, q, desc_k, desc_v, lo, hi, offs_m, offs_n, qk_scale,
                          BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    offsetkv_y = lo
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offsetkv_y, 0]).T
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
        v = desc_v.load([offsetkv_y, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        offsetkv_y += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def attn_fwd_desc(Q, K, V, Out, sm_scale,
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
    desc_q = tl.make_tensor_descriptor(Q + off_z * stride_qz + off_h * stride_qh,
                                       shape=[N_CTX_Q, HEAD_DIM], strides=[stride_qm, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K + off_z * stride_kz + off_h_kv * stride_kh,
                                       shape=[N_CTX_KV, HEAD_DIM], strides=[stride_kn, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V + off_z * stride_vz + off_h_kv * stride_vh,
                                       shape=[N_CTX_KV, HEAD_DIM], strides=[stride_vn, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out + off_z * stride_oz + off_h * stride_oh,
                                       shape=[N_CTX_Q, HEAD_DIM], strides=[stride_om, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    past = tl.multiple_of(N_CTX_KV - N_CTX_Q, BLOCK_M)
    offs_m = past + start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([start_m * BLOCK_M, 0])
    if CAUSAL:
        band = past + start_m * BLOCK_M
        acc, l_i, m_i = _kv_descriptor_blocks(acc, l_i, m_i, q, desc_k, desc_v, 0, band, offs_m,
                                              offs_n, qk_scale, BLOCK_N, False)
        acc, l_i, m_i = _kv_descriptor_blocks(acc, l_i, m_i, q, desc_k, desc_v, band,
                                              band + BLOCK_M, offs_m, offs_n, qk_scale, BLOCK_N,
                                              True)
    else:
        acc, l_i, m_i = _kv_descriptor_blocks(acc, l_i, m_i, q, desc_k, desc_v, 0, N_CTX_KV,
                                              offs_m, offs_n, qk_scale, BLOCK_N, False)
    acc = acc / l_i[:, None]
    desc_o.store([start_m * BLOCK_M, 0], acc.to(Out.type.element_ty))
