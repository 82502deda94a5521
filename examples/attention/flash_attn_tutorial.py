"""The flash-attention forward the way Triton's fused-attention tutorial
writes it for Hopper: Q, K, V and the output in the [batch, heads,
tokens, HEAD_DIM] layout (BHSD), each read through one tensor descriptor
over all of its rows as a 2-D [batch * heads * tokens, HEAD_DIM] view; a
program's head starts at row `offset_y = off_z * (N * H) + off_h * N`,
the KV loop (`tl.range`) reads K and V at offsets it carries from
`offset_y + lo`, and causal attention runs in stages (`STAGE` 3: the
blocks below the diagonal, then the diagonal band with a mask; 1: every
block, no mask). The changes for context parallelism: queries and keys
have their own lengths (`N_CTX_Q` queries, the last of the `N_CTX_KV`
positions), and grouped-query heads (query head h reads KV head h // (H /
H_KV)).

Synco fuses it with a plan whose K and V are [Z * H_KV, N_CTX_KV,
HEAD_DIM] buffers all-gathered along dim(1), the sequence: the carried
offsets are `offset_y` plus the loop's variable, `offset_y` a whole
number of heads (a multiple of N_CTX_KV, which the plan fixes), so each
block of BLOCK_N rows is the loop's tile within its head.

* bf16, HEAD_DIM a multiple of 8 (tensor descriptors need 16-byte aligned
  rows); N_CTX_KV - N_CTX_Q a multiple of BLOCK_M, both lengths multiples
  of BLOCK_M; BLOCK_M a multiple of BLOCK_N.
* Grid: (N_CTX_Q // BLOCK_M, Z * H). The tutorial's `Z` is the grid's
  second extent over H here, and its `STAGE` comes from `CAUSAL`, so that
  the kernel takes the arguments of the other styles (their strides
  unused: the layout is fixed) and the checks launch every style alike.
* Descriptors made in a kernel live in Triton's global scratch: run alone
  through Triton, it needs `triton.set_allocator`; Synco's runtime gives
  each program its scratch.

`attn_fwd_tutorial_host` is the same kernel as the tutorial runs it on
Hopper: Q, K, V and the output come as host tensor descriptors (Triton's
`TensorDescriptor`, each followed by the shape and strides Triton passes
with it). Synco's runtime encodes their tensor maps; `synco.ops.
AllGatherAttention(..., descriptors=True)` makes each over its tensor's
rows, K's and V's over the gathered sequence.
"""

import triton
import triton.language as tl


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, past, qk_scale,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                    offs_m, offs_n, N_CTX_KV):
    # STAGE 1: the blocks wholly below the diagonal; 2: the diagonal band;
    # 3: every block (non-causal).
    if STAGE == 1:
        lo, hi = 0, past + start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = past + start_m * BLOCK_M, past + (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX_KV
    offsetk_y = offset_y + lo
    offsetv_y = offset_y + lo
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offsetk_y, 0]).T
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offsetv_y, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        offsetk_y += BLOCK_N
        offsetv_y += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def attn_fwd_tutorial(Q, K, V, Out, sm_scale,
                      stride_qz, stride_qh, stride_qm,
                      stride_kz, stride_kh, stride_kn,
                      stride_vz, stride_vh, stride_vn,
                      stride_oz, stride_oh, stride_om,
                      H, H_KV, N_CTX_Q, N_CTX_KV,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr):
    STAGE: tl.constexpr = 3 if CAUSAL else 1
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    Z = tl.num_programs(1) // H
    off_z = off_hz // H
    off_h = off_hz % H
    off_h_kv = off_h // (H // H_KV)
    q_rows = Z * H * N_CTX_Q
    kv_rows = Z * H_KV * N_CTX_KV
    desc_q = tl.make_tensor_descriptor(Q, shape=[q_rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[kv_rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[kv_rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[q_rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    offset_q = off_z * (N_CTX_Q * H) + off_h * N_CTX_Q
    offset_kv = off_z * (N_CTX_KV * H_KV) + off_h_kv * N_CTX_KV
    qo_offset_y = offset_q + start_m * BLOCK_M
    past = tl.multiple_of(N_CTX_KV - N_CTX_Q, BLOCK_M)
    offs_m = past + start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([qo_offset_y, 0])
    # Stage 1 (causal) or 3 (not): the blocks no mask touches.
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_kv, start_m,
                                        past, qk_scale, BLOCK_M, BLOCK_N, 4 - STAGE, offs_m,
                                        offs_n, N_CTX_KV)
    # Stage 2: the diagonal band, masked.
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_kv, start_m,
                                        past, qk_scale, BLOCK_M, BLOCK_N, 2, offs_m, offs_n,
                                        N_CTX_KV)
    acc = acc / l_i[:, None]
    desc_o.store([qo_offset_y, 0], acc.to(Out.type.element_ty))


@triton.jit
def attn_fwd_tutorial_host(desc_q, desc_k, desc_v, desc_o, sm_scale,
                           stride_qz, stride_qh, stride_qm,
                           stride_kz, stride_kh, stride_kn,
                           stride_vz, stride_vh, stride_vn,
                           stride_oz, stride_oh, stride_om,
                           H, H_KV, N_CTX_Q, N_CTX_KV,
                           HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           CAUSAL: tl.constexpr):
    """`attn_fwd_tutorial` as the tutorial runs it on Hopper: Q, K, V and
    the output come as host-made tensor descriptors (Triton's
    `TensorDescriptor`: a 2-D [Z * H * N, HEAD_DIM] view of each tensor,
    blocks of [BLOCK_M or BLOCK_N, HEAD_DIM]) instead of pointers."""
    STAGE: tl.constexpr = 3 if CAUSAL else 1
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    off_h_kv = off_h // (H // H_KV)
    offset_q = off_z * (N_CTX_Q * H) + off_h * N_CTX_Q
    offset_kv = off_z * (N_CTX_KV * H_KV) + off_h_kv * N_CTX_KV
    qo_offset_y = offset_q + start_m * BLOCK_M
    past = tl.multiple_of(N_CTX_KV - N_CTX_Q, BLOCK_M)
    offs_m = past + start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([qo_offset_y, 0])
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_kv, start_m,
                                        past, qk_scale, BLOCK_M, BLOCK_N, 4 - STAGE, offs_m,
                                        offs_n, N_CTX_KV)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_kv, start_m,
                                        past, qk_scale, BLOCK_M, BLOCK_N, 2, offs_m, offs_n,
                                        N_CTX_KV)
    acc = acc / l_i[:, None]
    desc_o.store([qo_offset_y, 0], acc.to(desc_o.dtype))
